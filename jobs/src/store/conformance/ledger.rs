//! The conformance of the run ledger and what runs spent ([`RunLedger`](crate::store::RunLedger)):
//! every backend gives the same answers.

use std::collections::HashSet;

use chrono::Duration;

use crate::ledger::spend::Spend;
use crate::ledger::{CancelTarget, RunEnd, RunRequest, RunStatus, QUEUED, QUEUED_SUPERSEDED};
use crate::model::overlap::Overlap;
use crate::store::Claimed;

use super::{ctx, hourly, scan, Backend};

async fn runs_of_dead_processes_become_interrupted(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    one.insert_job(&c, hourly("aaaaaaaaaaaa", c.now - Duration::seconds(5)))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).await.unwrap();
    let Claimed::Run { run } = pass.occurrences[0].claimed else {
        panic!("not claimed");
    };
    let asked = RunRequest {
        prompt: Some("check the feeds".into()),
        model: Some("model-b".into()),
        replay_of: None,
    };
    assert!(one.start_run(run, c.now, &asked).await.unwrap());
    // The start notes what the run is asked with, for a replay of it.
    assert_eq!(
        two.run_request(run).await.unwrap(),
        Some(("aaaaaaaaaaaa".to_string(), asked))
    );
    assert_eq!(
        two.interrupt_dead_runs(c.now, false).await.unwrap(),
        0,
        "1 is alive"
    );
    backend.kill(one, 1).await;
    assert_eq!(two.interrupt_dead_runs(c.now, false).await.unwrap(), 1);
    assert_eq!(
        two.recent_runs(None, 1).await.unwrap()[0].status,
        RunStatus::Interrupted
    );
}

async fn the_latest_run_of_each_job_reads_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let now = backend.now();
    assert!(store.latest_runs(None).await.unwrap().is_empty());
    let first = store.claim_manual("aaaaaaaaaaaa", now).await.unwrap();
    store
        .finish_run(first, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    let second = store
        .claim_manual("aaaaaaaaaaaa", now + Duration::seconds(1))
        .await
        .unwrap();
    let other = store.claim_manual("bbbbbbbbbbbb", now).await.unwrap();
    let latest = store.latest_runs(None).await.unwrap();
    assert_eq!(latest.len(), 2);
    assert_eq!(latest["aaaaaaaaaaaa"].id, second);
    assert_eq!(latest["aaaaaaaaaaaa"].status, RunStatus::Running);
    assert_eq!(latest["bbbbbbbbbbbb"].id, other);
    let only = store
        .latest_runs(Some(&["bbbbbbbbbbbb".to_string()]))
        .await
        .unwrap();
    assert_eq!(only.keys().collect::<Vec<_>>(), ["bbbbbbbbbbbb"]);
}

async fn spend_is_summed_for_every_process_and_a_budget_notice_goes_once(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let spent = |model: &str, cost: Option<f64>| RunEnd {
        prompt_tokens: Some(100),
        completion_tokens: Some(50),
        cost_usd: cost,
        model: Some(model.to_string()),
        ..RunEnd::default()
    };
    let ends = [
        spent("m", Some(0.25)),
        spent("m", Some(0.5)),
        spent("local", None),
        RunEnd::default(),
    ];
    for (n, end) in ends.iter().enumerate() {
        let store = if n % 2 == 0 { &one } else { &two };
        let at = c.now + Duration::seconds(n as i64);
        let run = store.claim_manual("aaaaaaaaaaaa", at).await.unwrap();
        store.finish_run(run, RunStatus::Ok, at, end).await.unwrap();
    }
    let spend = two.spend_since(c.now - Duration::hours(1)).await.unwrap();
    let sum = |model: &str, runs: i64, cost_usd, unpriced_runs| Spend {
        job_id: "aaaaaaaaaaaa".into(),
        model: Some(model.into()),
        runs,
        prompt_tokens: 100 * runs,
        completion_tokens: 50 * runs,
        cost_usd,
        unpriced_runs,
    };
    assert_eq!(
        spend,
        [sum("local", 1, None, 1), sum("m", 2, Some(0.75), 0)]
    );
    let rows = one.recent_runs(None, 10).await.unwrap();
    assert_eq!(rows[3].cost_usd, Some(0.25));
    assert_eq!(rows[3].model.as_deref(), Some("m"));
    assert!(one
        .spend_since(c.now + Duration::hours(1))
        .await
        .unwrap()
        .is_empty());
    // Rows that spent outlive the per-job row limit inside the spend window (each
    // process trims the jobs it added runs for).
    two.prune_history(c.now, 0, c.now - Duration::hours(1))
        .await
        .unwrap();
    one.prune_history(c.now, 0, c.now - Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(one.recent_runs(None, 10).await.unwrap().len(), 3);
    assert!(one
        .claim_budget_notice("day:2026-03-01", c.now)
        .await
        .unwrap());
    assert!(!two
        .claim_budget_notice("day:2026-03-01", c.now)
        .await
        .unwrap());
    assert!(two
        .claim_budget_notice("day:2026-03-02", c.now)
        .await
        .unwrap());
}

/// A chained occurrence is claimed once, by one process of all, and waits while its
/// job runs anywhere; a finished run reads back by id and takes a redelivery's outcome.
async fn a_chained_run_is_claimed_once_and_a_run_takes_its_redelivery(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    let occurrence = crate::model::chain::occurrence("bbbbbbbbbbbb", 7);
    let manual = one.claim_manual("bbbbbbbbbbbb", now).await.unwrap();
    assert_eq!(
        two.claim_chained("bbbbbbbbbbbb", &occurrence, now)
            .await
            .unwrap(),
        None,
        "the job is running on process 1"
    );
    one.finish_run(manual, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    let run = two
        .claim_chained("bbbbbbbbbbbb", &occurrence, now)
        .await
        .unwrap()
        .expect("claimed");
    let end = RunEnd {
        delivery: Some("local".into()),
        ..RunEnd::default()
    };
    two.finish_run(run, RunStatus::Ok, now, &end).await.unwrap();
    assert_eq!(
        one.claim_chained("bbbbbbbbbbbb", &occurrence, now)
            .await
            .unwrap(),
        None,
        "never twice"
    );
    let row = one.run(run).await.unwrap().expect("the run reads back");
    assert_eq!(
        (
            row.occurrence.as_str(),
            row.source.as_str(),
            row.status.as_str()
        ),
        (occurrence.as_str(), "chain", "ok")
    );
    one.set_run_delivery(run, "sent: telegram:1").await.unwrap();
    let row = two.run(run).await.unwrap().expect("the run reads back");
    assert_eq!(row.delivery.as_deref(), Some("sent: telegram:1"));
    assert_eq!(row.status, RunStatus::Ok);
    assert!(one.run(run + 1000).await.unwrap().is_none());
}

/// A backfilled occurrence is claimed once, by any process, and an occurrence the
/// scheduler fired is never backfilled.
async fn a_backfilled_occurrence_is_claimed_once_and_never_after_a_fire(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let day_ago = c.now - Duration::days(1);
    let run = one
        .claim_backfill("aaaaaaaaaaaa", day_ago, c.now)
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(
        two.claim_backfill("aaaaaaaaaaaa", day_ago, c.now)
            .await
            .unwrap(),
        None,
        "the same occurrence again, from another process"
    );
    let row = two.recent_runs(Some("aaaaaaaaaaaa"), 5).await.unwrap();
    assert_eq!(row.len(), 1);
    assert_eq!(
        (row[0].id, row[0].source.as_str(), row[0].status.as_str()),
        (run, "backfill", "running")
    );
    assert!(one
        .claim_backfill("aaaaaaaaaaaa", day_ago + Duration::hours(1), c.now)
        .await
        .unwrap()
        .is_some());
    // An occurrence the scheduler fired (its key is the job id and due instant).
    let due = c.now - Duration::seconds(5);
    one.insert_job(&c, hourly("bbbbbbbbbbbb", due))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).await.unwrap();
    assert!(matches!(pass.occurrences[0].claimed, Claimed::Run { .. }));
    assert_eq!(
        two.claim_backfill("bbbbbbbbbbbb", due, c.now)
            .await
            .unwrap(),
        None
    );
}

async fn a_cancel_request_marks_running_runs_for_every_process_to_see(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    assert!(two
        .request_cancel(CancelTarget::Job("aaaaaaaaaaaa"), now)
        .await
        .unwrap()
        .is_empty());
    let done = one.claim_manual("aaaaaaaaaaaa", now).await.unwrap();
    one.finish_run(done, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    let running = one
        .claim_manual("aaaaaaaaaaaa", now + Duration::seconds(1))
        .await
        .unwrap();
    let other = one.claim_manual("bbbbbbbbbbbb", now).await.unwrap();
    assert!(one
        .cancels_requested(&[running, other])
        .await
        .unwrap()
        .is_empty());
    // A finished run is not asked; by job, only its running run; by run id, that one.
    assert!(two
        .request_cancel(CancelTarget::Run(done), now)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        two.request_cancel(CancelTarget::Job("aaaaaaaaaaaa"), now)
            .await
            .unwrap(),
        [running]
    );
    assert_eq!(
        one.cancels_requested(&[running, other]).await.unwrap(),
        [running]
    );
    assert_eq!(
        two.request_cancel(CancelTarget::Run(other), now)
            .await
            .unwrap(),
        [other]
    );
    let mut asked = one
        .cancels_requested(&[other, running, 999_999])
        .await
        .unwrap();
    asked.sort_unstable();
    assert_eq!(asked, [running, other]);
    assert!(one.cancels_requested(&[]).await.unwrap().is_empty());
    one.finish_run(running, RunStatus::Cancelled, now, &RunEnd::default())
        .await
        .unwrap();
    assert_eq!(
        two.recent_runs(Some("aaaaaaaaaaaa"), 1).await.unwrap()[0].status,
        RunStatus::Cancelled
    );
}

async fn what_a_run_was_asked_reads_back_and_a_replay_says_what_it_repeats(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    assert_eq!(two.run_request(12345).await.unwrap(), None);
    let first = one.claim_manual("aaaaaaaaaaaa", now).await.unwrap();
    assert_eq!(
        two.run_request(first).await.unwrap(),
        Some(("aaaaaaaaaaaa".to_string(), RunRequest::default())),
        "a run noted nothing yet"
    );
    let asked = RunRequest {
        prompt: Some("Check\n\n## Run Context\nonly red".into()),
        model: Some("m".into()),
        replay_of: None,
    };
    one.note_run_request(first, &asked).await.unwrap();
    one.finish_run(first, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    assert_eq!(
        two.run_request(first).await.unwrap(),
        Some(("aaaaaaaaaaaa".to_string(), asked.clone()))
    );
    let replay = two
        .claim_manual("aaaaaaaaaaaa", now + Duration::seconds(1))
        .await
        .unwrap();
    let again = RunRequest {
        replay_of: Some(first),
        ..asked
    };
    two.note_run_request(replay, &again).await.unwrap();
    let rows = one.recent_runs(Some("aaaaaaaaaaaa"), 2).await.unwrap();
    assert_eq!(
        (rows[0].source.as_str(), rows[0].replay_of),
        ("replay", Some(first))
    );
    assert_eq!(
        (rows[1].source.as_str(), rows[1].replay_of),
        ("manual", None)
    );
}

async fn a_queued_occurrence_is_taken_once_and_only_the_newest_runs(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let mut job = hourly("aaaaaaaaaaaa", c.now - Duration::seconds(5));
    job.set_overlap(Some(Overlap::Queue));
    one.insert_job(&c, job).await.unwrap();
    let running = one.claim_manual("aaaaaaaaaaaa", c.now).await.unwrap();
    assert_eq!(
        two.take_queued("aaaaaaaaaaaa", running, c.now)
            .await
            .unwrap(),
        None
    );
    // Two passes while it runs, two occurrences due: each is recorded queued.
    let busy = HashSet::from(["aaaaaaaaaaaa".to_string()]);
    for seconds in [5, 3] {
        let due = c.now - Duration::seconds(seconds);
        let ids = HashSet::from(["aaaaaaaaaaaa".to_string()]);
        let set_due = Box::new(move |job: &mut crate::model::job::Job| {
            job.set_next_run_at(Some(due), chrono_tz::UTC);
        });
        two.update_jobs(&c, ids, set_due).await.unwrap();
        let pass = two.claim_due(&c, &scan(&busy)).await.unwrap();
        assert!(
            matches!(&pass.occurrences[0].claimed, Claimed::Recorded { status: RunStatus::Skipped, reason } if reason == QUEUED),
            "{:?}",
            pass.occurrences[0].claimed
        );
    }
    one.finish_run(running, RunStatus::Ok, c.now, &RunEnd::default())
        .await
        .unwrap();
    let (taken, _) = one
        .take_queued("aaaaaaaaaaaa", running, c.now)
        .await
        .unwrap()
        .expect("the newest queued occurrence");
    assert_eq!(
        two.take_queued("aaaaaaaaaaaa", running, c.now)
            .await
            .unwrap(),
        None,
        "taken once"
    );
    let rows = two.recent_runs(Some("aaaaaaaaaaaa"), 3).await.unwrap();
    assert_eq!(rows[0].id, taken);
    assert_eq!(rows[0].status, RunStatus::Running);
    assert_eq!(rows[0].error, None);
    assert_eq!(rows[1].status, RunStatus::Skipped);
    assert_eq!(rows[1].error.as_deref(), Some(QUEUED_SUPERSEDED));
}

conformance!(
    a_cancel_request_marks_running_runs_for_every_process_to_see,
    what_a_run_was_asked_reads_back_and_a_replay_says_what_it_repeats,
    a_queued_occurrence_is_taken_once_and_only_the_newest_runs,
    a_chained_run_is_claimed_once_and_a_run_takes_its_redelivery,
    a_backfilled_occurrence_is_claimed_once_and_never_after_a_fire,
    runs_of_dead_processes_become_interrupted,
    the_latest_run_of_each_job_reads_back,
    spend_is_summed_for_every_process_and_a_budget_notice_goes_once,
);
