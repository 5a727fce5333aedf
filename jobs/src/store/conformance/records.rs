//! The conformance of jobs and the claims on their occurrences
//! ([`JobRecords`](crate::store::JobRecords)): every backend gives the same answers.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::Duration;
use serde_json::json;

use crate::ledger::output::OutputDocument;
use crate::ledger::{RunEnd, RunRequest, RunStatus};
use crate::lifecycle::JobError;
use crate::model::due::Decision;
use crate::model::fields::Layout;
use crate::model::job::JobState;
use crate::store::Claimed;

use super::{at, ctx, hourly, iso, job, scan, scan_with_slots, Backend};

async fn jobs_keep_every_field_through_row_operations(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    let later = c.now + Duration::hours(1);
    let before = store.change_mark().await;
    store
        .insert_job(&c, hourly("aaaaaaaaaaaa", later))
        .await
        .unwrap();
    store
        .insert_job(&c, hourly("bbbbbbbbbbbb", later))
        .await
        .unwrap();
    assert_ne!(store.change_mark().await, before, "a change moves the mark");
    let changed = store
        .update_job(
            &c,
            "aaaaaaaaaaaa",
            Box::new(|job| {
                job.set_name("renamed");
                Ok(())
            }),
        )
        .await
        .unwrap();
    assert_eq!(changed.name(), "renamed");
    let stored = store.get_job(&c, "aaaaaaaaaaaa").await.unwrap().unwrap();
    assert_eq!(stored.name(), "renamed");
    assert_eq!(stored.get("x_unknown"), Some(&json!({"kept": true})));
    // A failing change writes nothing; an unknown id is NotFound.
    let refused = store
        .update_job(
            &c,
            "aaaaaaaaaaaa",
            Box::new(|job| {
                job.set_name("never");
                Err(JobError::Invalid("no".into()))
            }),
        )
        .await;
    assert!(matches!(refused, Err(JobError::Invalid(_))));
    assert_eq!(
        store
            .get_job(&c, "aaaaaaaaaaaa")
            .await
            .unwrap()
            .unwrap()
            .name(),
        "renamed"
    );
    assert!(matches!(
        store
            .update_job(&c, "cccccccccccc", Box::new(|_| Ok(())))
            .await,
        Err(JobError::NotFound(_))
    ));
    let ids = HashSet::from(["bbbbbbbbbbbb".to_string()]);
    store
        .update_jobs(&c, ids, Box::new(|job| job.set_prompt("batched")))
        .await
        .unwrap();
    let view = store.load_view(&c, &["id", "name"]).await.unwrap();
    assert_eq!(view.len(), 2);
    assert_eq!(view[0].name(), "renamed");
    let all = store.load_jobs(&c).await.unwrap();
    assert_eq!(all[1].prompt(), "batched");
    // Every key in the order it was written; what healing added comes after.
    let keys: Vec<&str> = all[1].record().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "name",
            "prompt",
            "schedule",
            "repeat",
            "enabled",
            "state",
            "next_run_at",
            "x_unknown",
            "schedule_display"
        ]
    );
    assert_eq!(
        store.remove_job(&c, "aaaaaaaaaaaa").await.unwrap().id(),
        "aaaaaaaaaaaa"
    );
    assert!(matches!(
        store.remove_job(&c, "aaaaaaaaaaaa").await,
        Err(JobError::NotFound(_))
    ));
    assert_eq!(store.load_jobs(&c).await.unwrap().len(), 1);
}

async fn a_due_occurrence_is_claimed_once_across_processes(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let due = c.now - Duration::seconds(5);
    one.insert_job(&c, hourly("aaaaaaaaaaaa", due))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).await.unwrap();
    assert!(pass.ran);
    assert_eq!(pass.occurrences.len(), 1);
    let Claimed::Run { run } = pass.occurrences[0].claimed else {
        panic!("not claimed: {:?}", pass.occurrences[0].claimed);
    };
    let next = pass.next_wake.unwrap();
    assert!(
        (next - (due + Duration::hours(1))).num_seconds().abs() <= 1,
        "{next}"
    );
    // The schedule moved before anything ran: neither process finds it due again (two
    // has no free run slot, so it is not handed the claim either).
    assert!(two
        .claim_due(&c, &scan_with_slots(&running, 0))
        .await
        .unwrap()
        .occurrences
        .is_empty());
    assert!(one
        .claim_due(&c, &scan(&running))
        .await
        .unwrap()
        .occurrences
        .is_empty());
    assert!(one
        .start_run(run, c.now, &RunRequest::default())
        .await
        .unwrap());
    let rows = two.recent_runs(None, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, RunStatus::Running);
    assert_eq!(
        rows[0].occurrence,
        format!(
            "aaaaaaaaaaaa@{}",
            due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    );
    assert_eq!(rows[0].pid, Some(1));
    let doc = OutputDocument {
        job_id: "aaaaaaaaaaaa",
        job_name: "job",
        schedule: "every 60m",
        run_time: c.now,
        zone: chrono_tz::UTC,
        prompt: "p",
        result: Ok("the answer"),
        gate: None,
    };
    let saved = one.save_output(&doc, 5).await.unwrap();
    let end = RunEnd {
        output: Some(saved),
        ..RunEnd::default()
    };
    one.finish_run(run, RunStatus::Ok, c.now, &end)
        .await
        .unwrap();
    assert_eq!(
        two.recent_runs(None, 10).await.unwrap()[0].status,
        RunStatus::Ok
    );
    // Any process finds the run's document by the run.
    let document = two.run_output(run).await.unwrap().unwrap().unwrap();
    assert!(document.contains("the answer"), "{document}");
    assert_eq!(two.run_output(run + 1000).await.unwrap(), None);
}

async fn an_occurrence_of_a_running_job_is_recorded_skipped(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    store
        .insert_job(&c, hourly("aaaaaaaaaaaa", c.now - Duration::seconds(5)))
        .await
        .unwrap();
    let running = HashSet::from(["aaaaaaaaaaaa".to_string()]);
    let pass = store.claim_due(&c, &scan(&running)).await.unwrap();
    assert_eq!(
        pass.occurrences[0].claimed,
        Claimed::Recorded {
            status: RunStatus::Skipped,
            reason: "skipped (still running)".into()
        }
    );
    // A manual run waits for a run another live process has going.
    let manual = store.claim_manual("aaaaaaaaaaaa", c.now).await.unwrap();
    assert!(store.claim_manual("aaaaaaaaaaaa", c.now).await.is_err());
    store
        .finish_run(manual, RunStatus::Ok, c.now, &RunEnd::default())
        .await
        .unwrap();
    assert!(store
        .claim_manual("aaaaaaaaaaaa", c.now + Duration::seconds(1))
        .await
        .is_ok());
}

async fn a_missed_one_shot_is_settled_and_a_broken_schedule_marked(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    let past = c.now - Duration::minutes(30);
    let once = json!({"kind": "once", "run_at": iso(past), "display": "once"});
    store
        .insert_job(&c, job("aaaaaaaaaaaa", once, past))
        .await
        .unwrap();
    let broken = json!({"kind": "cron", "expr": "99 * * * *", "display": "99 * * * *"});
    store
        .insert_job(&c, job("bbbbbbbbbbbb", broken, past))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = store.claim_due(&c, &scan(&running)).await.unwrap();
    let decided: Vec<(&str, &Decision, &Claimed)> = pass
        .occurrences
        .iter()
        .map(|o| (o.job.id(), &o.decision, &o.claimed))
        .collect();
    assert!(matches!(
        decided[0],
        (
            "aaaaaaaaaaaa",
            Decision::Missed { .. },
            Claimed::Recorded {
                status: RunStatus::Missed,
                ..
            }
        )
    ));
    assert!(matches!(
        decided[1],
        ("bbbbbbbbbbbb", Decision::Broken { .. }, Claimed::Settled)
    ));
    let missed = store.get_job(&c, "aaaaaaaaaaaa").await.unwrap().unwrap();
    assert_eq!(missed.state(), JobState::Completed);
    let broken = store.get_job(&c, "bbbbbbbbbbbb").await.unwrap().unwrap();
    assert_eq!(broken.state(), JobState::Error);
}

fn runs_of(pass: &crate::store::DuePass) -> Vec<i64> {
    pass.occurrences
        .iter()
        .filter_map(|o| match o.claimed {
            Claimed::Run { run } => Some(run),
            _ => None,
        })
        .collect()
}

async fn a_claimed_occurrence_is_started_by_exactly_one_process(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let due = c.now - Duration::seconds(5);
    for id in ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"] {
        one.insert_job(&c, hourly(id, due)).await.unwrap();
    }
    let running = HashSet::new();
    // One claims all three though it can start only one now.
    let claimed = runs_of(
        &one.claim_due(&c, &scan_with_slots(&running, 1))
            .await
            .unwrap(),
    );
    assert_eq!(claimed.len(), 3);
    let second = two
        .claim_due(&c, &scan_with_slots(&running, 2))
        .await
        .unwrap();
    let handed = runs_of(&second);
    if backend.shares_work() {
        // Two had two free slots: it is handed the two one would have started last,
        // and one still holds an unstarted claim.
        let mut sorted = handed.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [claimed[1], claimed[2]]);
        assert!(second.backlog);
        let rows = two.recent_runs(None, 10).await.unwrap();
        let pid = |run: i64| rows.iter().find(|r| r.id == run).and_then(|r| r.pid);
        assert_eq!(pid(claimed[0]), Some(1));
        assert_eq!(pid(claimed[1]), Some(2));
    } else {
        assert!(handed.is_empty() && !second.backlog);
    }
    // Whatever the split, each occurrence starts in one process only: the owner's
    // start is refused for a claim handed on, the new holder's goes ahead.
    for run in &claimed {
        let by_one = one
            .start_run(*run, c.now, &RunRequest::default())
            .await
            .unwrap();
        let by_two = handed.contains(run)
            && two
                .start_run(*run, c.now, &RunRequest::default())
                .await
                .unwrap();
        assert!(by_one != by_two, "run {run}: one {by_one}, two {by_two}");
    }
    // Started runs are nobody's to take; nothing waits any more.
    let third = backend.process(3).await;
    let last = third
        .claim_due(&c, &scan_with_slots(&running, 5))
        .await
        .unwrap();
    assert!(runs_of(&last).is_empty() && !last.backlog);
    let rows = third.recent_runs(None, 10).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|r| r.status == RunStatus::Running),
        "{rows:?}"
    );
}

async fn an_occurrence_already_in_the_ledger_is_taken_beside_new_claims(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    let due = c.now - Duration::seconds(5);
    store
        .insert_job(&c, hourly("aaaaaaaaaaaa", due))
        .await
        .unwrap();
    let running = HashSet::new();
    let [first] = runs_of(&store.claim_due(&c, &scan(&running)).await.unwrap())[..] else {
        panic!("not claimed");
    };
    assert!(store
        .start_run(first, c.now, &RunRequest::default())
        .await
        .unwrap());
    store
        .finish_run(first, RunStatus::Ok, c.now, &RunEnd::default())
        .await
        .unwrap();
    // The same occurrence due again (its schedule put back), beside a new job: one pass
    // claims the new one and leaves the recorded one alone.
    store
        .update_job(
            &c,
            "aaaaaaaaaaaa",
            Box::new(move |job| {
                job.set_next_run_at(Some(due), chrono_tz::UTC);
                Ok(())
            }),
        )
        .await
        .unwrap();
    store
        .insert_job(&c, hourly("bbbbbbbbbbbb", due))
        .await
        .unwrap();
    let pass = store.claim_due(&c, &scan(&running)).await.unwrap();
    let claimed: Vec<(&str, &Claimed)> = pass
        .occurrences
        .iter()
        .map(|o| (o.job.id(), &o.claimed))
        .collect();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    assert!(
        claimed.contains(&("aaaaaaaaaaaa", &Claimed::Taken)),
        "{claimed:?}"
    );
    assert!(
        claimed
            .iter()
            .any(|(id, c)| *id == "bbbbbbbbbbbb" && matches!(c, Claimed::Run { .. })),
        "{claimed:?}"
    );
    assert_eq!(store.recent_runs(None, 10).await.unwrap().len(), 2);
}

/// Gathers the ids and states of the summaries a listing hands out.
#[derive(Default)]
struct Summaries(Vec<(String, JobState)>);

impl crate::store::SummarySink for Summaries {
    fn summary(&mut self, job: &crate::jsonjobs::listing::JobSummary<'_>) {
        self.0.push((job.id.to_string(), job.state));
    }

    fn restart(&mut self) {
        self.0.clear();
    }
}

async fn listings_give_every_job_in_store_order(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    let later = c.now + Duration::hours(1);
    for id in ["bbbbbbbbbbbb", "aaaaaaaaaaaa", "cccccccccccc"] {
        store.insert_job(&c, hourly(id, later)).await.unwrap();
    }
    store
        .update_job(
            &c,
            "aaaaaaaaaaaa",
            Box::new(|job| {
                job.pause(at("2026-11-23T10:00:00Z"), chrono_tz::UTC, None);
                Ok(())
            }),
        )
        .await
        .unwrap();
    let sink = Arc::new(Mutex::new(Summaries::default()));
    crate::store::list_summaries(&*store, &c, sink.clone())
        .await
        .unwrap();
    assert_eq!(
        sink.lock().unwrap().0,
        [
            ("bbbbbbbbbbbb".to_string(), JobState::Scheduled),
            ("aaaaaaaaaaaa".to_string(), JobState::Paused),
            ("cccccccccccc".to_string(), JobState::Scheduled),
        ]
    );
    // `list --json`'s items: the kept jobs, normalized, each with the extra field.
    let extra = crate::store::ExtraField {
        key: "latest_execution",
        write: Arc::new(|job: &crate::store::ListedJob<'_>, out: &mut Vec<u8>| {
            out.extend_from_slice(format!("\"run of {}\"", job.id).as_bytes())
        }),
    };
    let keep: crate::store::Keep = Arc::new(|job: crate::store::Listed| job.enabled);
    let out = crate::store::list_normalized(&*store, &c, keep, vec![extra], b"[".to_vec())
        .await
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&[out, b"]".to_vec()].concat()).unwrap();
    let mut expected = Vec::new();
    for job in store.load_jobs(&c).await.unwrap() {
        if job.id() == "aaaaaaaaaaaa" {
            continue;
        }
        let mut record = job.normalized(&c).into_record();
        let id = record["id"].as_str().unwrap().to_string();
        record.insert("latest_execution".into(), json!(format!("run of {id}")));
        expected.push(serde_json::Value::Object(record));
    }
    assert_eq!(listed, serde_json::Value::Array(expected));
}

/// A page of the listing: store order, completed jobs left out unless asked, a state
/// or a piece of the id or name as filters, and the count of all that match.
async fn a_page_of_jobs_is_counted_and_cut_in_store_order(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let c = ctx(backend.now());
    let later = c.now + Duration::hours(1);
    let ids = [
        "eeeeeeeeeeee",
        "dddddddddddd",
        "cccccccccccc",
        "bbbbbbbbbbbb",
        "aaaaaaaaaaaa",
    ];
    for id in ids {
        store.insert_job(&c, hourly(id, later)).await.unwrap();
    }
    store
        .update_job(
            &c,
            "cccccccccccc",
            Box::new(|job| {
                job.set("state", json!("completed"));
                Ok(())
            }),
        )
        .await
        .unwrap();
    store
        .update_job(
            &c,
            "bbbbbbbbbbbb",
            Box::new(|job| {
                job.set_name("Morning REPORT");
                job.pause(at("2026-11-23T10:00:00Z"), chrono_tz::UTC, None);
                Ok(())
            }),
        )
        .await
        .unwrap();
    let page = |query: crate::store::PageQuery| {
        let store = &store;
        async move {
            let page = store.job_page(&c, &query).await.unwrap();
            let ids: Vec<String> = page.jobs.iter().map(|j| j.id().to_string()).collect();
            (ids, page.total)
        }
    };
    let query = |offset, limit| crate::store::PageQuery {
        offset,
        limit,
        ..Default::default()
    };
    assert_eq!(
        page(query(0, 2)).await,
        (vec!["eeeeeeeeeeee".into(), "dddddddddddd".into()], 4)
    );
    assert_eq!(
        page(query(2, 2)).await,
        (vec!["bbbbbbbbbbbb".into(), "aaaaaaaaaaaa".into()], 4)
    );
    assert_eq!(page(query(4, 2)).await, (vec![], 4));
    assert_eq!(page(query(0, 0)).await, (vec![], 4));
    let all = crate::store::PageQuery {
        completed: true,
        ..query(1, 2)
    };
    assert_eq!(
        page(all).await,
        (vec!["dddddddddddd".into(), "cccccccccccc".into()], 5)
    );
    let paused = crate::store::PageQuery {
        states: vec![JobState::Paused],
        ..query(0, 10)
    };
    assert_eq!(page(paused).await, (vec!["bbbbbbbbbbbb".into()], 1));
    let completed = crate::store::PageQuery {
        completed: true,
        states: vec![JobState::Completed],
        ..query(0, 0)
    };
    assert_eq!(page(completed).await, (vec![], 1));
    for text in ["report", "BBBB"] {
        let search = crate::store::PageQuery {
            search: Some(text.into()),
            ..query(0, 10)
        };
        assert_eq!(
            page(search).await,
            (vec!["bbbbbbbbbbbb".into()], 1),
            "{text}"
        );
    }
    // Removed jobs leave the count.
    store.remove_job(&c, "eeeeeeeeeeee").await.unwrap();
    store.remove_job(&c, "cccccccccccc").await.unwrap();
    assert_eq!(page(query(0, 1)).await, (vec!["dddddddddddd".into()], 3));
    assert_eq!(
        page(crate::store::PageQuery::count_all()).await,
        (vec![], 3)
    );
}

/// A new job is written in the layout of the stored records, as every process of the
/// store finds them now: 0.22's for an empty store, 0.19's once a record carries
/// `provider_snapshot`, 0.22's again once one carries `monitor_state` (even null).
async fn the_layout_follows_the_stored_records(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let later = c.now + Duration::hours(1);
    assert_eq!(one.layout(&c).await.unwrap(), Layout::Hermes022);
    let mut old = hourly("aaaaaaaaaaaa", later);
    old.set("provider_snapshot", json!("openrouter"));
    one.insert_job(&c, old).await.unwrap();
    assert_eq!(one.layout(&c).await.unwrap(), Layout::Hermes019);
    assert_eq!(two.layout(&c).await.unwrap(), Layout::Hermes019);
    two.insert_job(&c, hourly("bbbbbbbbbbbb", later))
        .await
        .unwrap();
    assert_eq!(one.layout(&c).await.unwrap(), Layout::Hermes019);
    two.update_job(
        &c,
        "bbbbbbbbbbbb",
        Box::new(|job| {
            job.set("monitor_state", serde_json::Value::Null);
            Ok(())
        }),
    )
    .await
    .unwrap();
    assert_eq!(one.layout(&c).await.unwrap(), Layout::Hermes022);
    one.remove_job(&c, "bbbbbbbbbbbb").await.unwrap();
    assert_eq!(two.layout(&c).await.unwrap(), Layout::Hermes019);
    assert_eq!(one.layout(&c).await.unwrap(), Layout::Hermes019);
}

/// A `last_status` this build does not know (written by a newer Hermes) survives a write
/// of another field unchanged, reads as itself and lists as itself.
async fn an_unknown_last_status_survives_a_write(backend: &dyn Backend) {
    #[derive(Default)]
    struct Statuses(Vec<Option<RunStatus>>);
    impl crate::store::SummarySink for Statuses {
        fn summary(&mut self, job: &crate::jsonjobs::listing::JobSummary<'_>) {
            self.0.push(job.last_status.clone());
        }
        fn restart(&mut self) {
            self.0.clear();
        }
    }
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let mut newer = hourly("aaaaaaaaaaaa", c.now + Duration::hours(1));
    newer.set("last_status", json!("quarantined"));
    one.insert_job(&c, newer).await.unwrap();
    one.update_job(
        &c,
        "aaaaaaaaaaaa",
        Box::new(|job| {
            job.set_name("renamed");
            Ok(())
        }),
    )
    .await
    .unwrap();
    let read = two.get_job(&c, "aaaaaaaaaaaa").await.unwrap().unwrap();
    assert_eq!(read.name(), "renamed");
    assert_eq!(read.get("last_status"), Some(&json!("quarantined")));
    assert_eq!(
        read.last_status(),
        Some(RunStatus::Other("quarantined".into()))
    );
    let sink = Arc::new(Mutex::new(Statuses::default()));
    crate::store::list_summaries(&*two, &c, sink.clone())
        .await
        .unwrap();
    assert_eq!(
        sink.lock().unwrap().0,
        [Some(RunStatus::Other("quarantined".into()))]
    );
    // A run of ours then writes its own status, as its text.
    two.update_job(
        &c,
        "aaaaaaaaaaaa",
        Box::new(|job| {
            job.record_outcome(&RunStatus::DeliveryFailed, None, Some("HTTP 502"));
            Ok(())
        }),
    )
    .await
    .unwrap();
    let read = one.get_job(&c, "aaaaaaaaaaaa").await.unwrap().unwrap();
    assert_eq!(read.get("last_status"), Some(&json!("delivery_failed")));
    assert_eq!(read.last_status(), Some(RunStatus::DeliveryFailed));
}

conformance!(
    an_unknown_last_status_survives_a_write,
    jobs_keep_every_field_through_row_operations,
    listings_give_every_job_in_store_order,
    a_page_of_jobs_is_counted_and_cut_in_store_order,
    the_layout_follows_the_stored_records,
    a_due_occurrence_is_claimed_once_across_processes,
    an_occurrence_of_a_running_job_is_recorded_skipped,
    a_missed_one_shot_is_settled_and_a_broken_schedule_marked,
    a_claimed_occurrence_is_started_by_exactly_one_process,
    an_occurrence_already_in_the_ledger_is_taken_beside_new_claims,
);
