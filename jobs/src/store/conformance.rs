//! One conformance suite every [`Store`] backend runs: the same calls, the same answers.
//! A new backend is done when it passes here (each test is instantiated per backend by
//! the `conformance!` macro at the bottom).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::{Beat, Claimed, DueScan, FileStore, Flight, MemoryStore, Owner, Store};
use crate::due::{Decision, ScanOptions};
use crate::job::{Context, Job, JobState};
use crate::ledger::{RunEnd, RunStatus};
use crate::lifecycle::JobError;
use crate::outbox::{NewOutboxItem, OutboxState};
use crate::output::OutputDocument;

/// Processes of one host sharing one backend's data.
trait Backend {
    fn process(&self, pid: u32) -> Box<dyn Store>;
    /// The process `pid` of this host died.
    fn kill(&self, pid: u32);
}

struct Files {
    dir: tempfile::TempDir,
    dead: Arc<Mutex<HashSet<i64>>>,
}

impl Backend for Files {
    fn process(&self, pid: u32) -> Box<dyn Store> {
        let dead = Arc::clone(&self.dead);
        Box::new(FileStore::new(
            self.dir.path().join("cron"),
            Owner {
                host: "host".into(),
                pid,
            },
            Arc::new(move |pid| !dead.lock().unwrap().contains(&pid)),
        ))
    }

    fn kill(&self, pid: u32) {
        self.dead.lock().unwrap().insert(i64::from(pid));
    }
}

fn files() -> Files {
    Files {
        dir: tempfile::tempdir().unwrap(),
        dead: Arc::default(),
    }
}

struct Memory(MemoryStore);

impl Backend for Memory {
    fn process(&self, pid: u32) -> Box<dyn Store> {
        Box::new(self.0.as_process(pid))
    }

    fn kill(&self, pid: u32) {
        self.0.kill(pid);
    }
}

fn memory() -> Memory {
    Memory(MemoryStore::new(Owner {
        host: "host".into(),
        pid: 1,
    }))
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn ctx(now: &str) -> Context {
    Context {
        now: at(now),
        zone: chrono_tz::UTC,
        legacy_zone: chrono_tz::UTC,
    }
}

fn job(id: &str, schedule: serde_json::Value, next: &str) -> Job {
    let record = json!({
        "id": id, "name": format!("job {id}"), "prompt": "p", "schedule": schedule,
        "repeat": {"times": null, "completed": 0}, "enabled": true, "state": "scheduled",
        "next_run_at": next, "x_unknown": {"kept": true},
    });
    Job::from_record(serde_json::from_value(record).unwrap())
}

fn hourly(id: &str) -> Job {
    job(
        id,
        json!({"kind": "interval", "minutes": 60, "display": "every 60m"}),
        "2026-11-23T10:00:00+00:00",
    )
}

fn scan<'a>(running: &'a HashSet<String>) -> DueScan<'a> {
    DueScan {
        options: ScanOptions {
            catch_up_missed: true,
            claim_owner: "host:1",
            run_claim_ttl: Duration::minutes(30),
        },
        completed_retention: Duration::days(7),
        running_here: running,
    }
}

fn jobs_keep_every_field_through_row_operations(backend: &dyn Backend) {
    let store = backend.process(1);
    let c = ctx("2026-11-23T09:00:00Z");
    let before = store.change_mark();
    store.insert_job(&c, hourly("aaaaaaaaaaaa")).unwrap();
    store.insert_job(&c, hourly("bbbbbbbbbbbb")).unwrap();
    assert_ne!(store.change_mark(), before, "a change moves the mark");
    let changed = store
        .update_job(&c, "aaaaaaaaaaaa", &mut |job| {
            job.set_name("renamed");
            Ok(())
        })
        .unwrap();
    assert_eq!(changed.name(), "renamed");
    let stored = store.get_job(&c, "aaaaaaaaaaaa").unwrap().unwrap();
    assert_eq!(stored.name(), "renamed");
    assert_eq!(stored.get("x_unknown"), Some(&json!({"kept": true})));
    // A failing change writes nothing; an unknown id is NotFound.
    let refused = store.update_job(&c, "aaaaaaaaaaaa", &mut |job| {
        job.set_name("never");
        Err(JobError::Invalid("no".into()))
    });
    assert!(matches!(refused, Err(JobError::Invalid(_))));
    assert_eq!(
        store.get_job(&c, "aaaaaaaaaaaa").unwrap().unwrap().name(),
        "renamed"
    );
    assert!(matches!(
        store.update_job(&c, "cccccccccccc", &mut |_| Ok(())),
        Err(JobError::NotFound(_))
    ));
    let ids = HashSet::from(["bbbbbbbbbbbb"]);
    store
        .update_jobs(&c, &ids, &mut |job| job.set_prompt("batched"))
        .unwrap();
    let view = store.load_view(&c, &["id", "name"]).unwrap();
    assert_eq!(view.len(), 2);
    assert_eq!(view[0].name(), "renamed");
    let all = store.load_jobs(&c).unwrap();
    assert_eq!(all[1].prompt(), "batched");
    assert_eq!(
        store.remove_job(&c, "aaaaaaaaaaaa").unwrap().id(),
        "aaaaaaaaaaaa"
    );
    assert!(matches!(
        store.remove_job(&c, "aaaaaaaaaaaa"),
        Err(JobError::NotFound(_))
    ));
    assert_eq!(store.load_jobs(&c).unwrap().len(), 1);
}

fn a_due_occurrence_is_claimed_once_across_processes(backend: &dyn Backend) {
    let (one, two) = (backend.process(1), backend.process(2));
    let c = ctx("2026-11-23T10:00:05Z");
    one.insert_job(&c, hourly("aaaaaaaaaaaa")).unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).unwrap();
    assert!(pass.ran);
    assert_eq!(pass.occurrences.len(), 1);
    assert!(matches!(pass.occurrences[0].claimed, Claimed::Run { .. }));
    assert_eq!(pass.next_wake, Some(at("2026-11-23T11:00:00Z")));
    // The schedule moved before anything ran: neither process finds it due again.
    assert!(two
        .claim_due(&c, &scan(&running))
        .unwrap()
        .occurrences
        .is_empty());
    assert!(one
        .claim_due(&c, &scan(&running))
        .unwrap()
        .occurrences
        .is_empty());
    let rows = two.recent_runs(None, 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, "running");
    assert_eq!(rows[0].occurrence, "aaaaaaaaaaaa@2026-11-23T10:00:00Z");
    assert_eq!(rows[0].pid, Some(1));
}

fn an_occurrence_of_a_running_job_is_recorded_skipped(backend: &dyn Backend) {
    let store = backend.process(1);
    let c = ctx("2026-11-23T10:00:05Z");
    store.insert_job(&c, hourly("aaaaaaaaaaaa")).unwrap();
    let running = HashSet::from(["aaaaaaaaaaaa".to_string()]);
    let pass = store.claim_due(&c, &scan(&running)).unwrap();
    assert_eq!(
        pass.occurrences[0].claimed,
        Claimed::Recorded {
            status: RunStatus::Skipped,
            reason: "skipped (still running)".into()
        }
    );
    // A manual run waits for a run another live process has going.
    let manual = store.claim_manual("aaaaaaaaaaaa", c.now).unwrap();
    assert!(store.claim_manual("aaaaaaaaaaaa", c.now).is_err());
    store
        .finish_run(manual, RunStatus::Ok, c.now, &RunEnd::default())
        .unwrap();
    assert!(store
        .claim_manual("aaaaaaaaaaaa", c.now + Duration::seconds(1))
        .is_ok());
}

fn a_missed_one_shot_is_settled_and_a_broken_schedule_marked(backend: &dyn Backend) {
    let store = backend.process(1);
    let c = ctx("2026-11-23T10:30:00Z");
    let once = json!({"kind": "once", "run_at": "2026-11-23T10:00:00+00:00", "display": "once"});
    store
        .insert_job(&c, job("aaaaaaaaaaaa", once, "2026-11-23T10:00:00+00:00"))
        .unwrap();
    let broken = json!({"kind": "cron", "expr": "99 * * * *", "display": "99 * * * *"});
    store
        .insert_job(&c, job("bbbbbbbbbbbb", broken, "2026-11-23T10:00:00+00:00"))
        .unwrap();
    let running = HashSet::new();
    let pass = store.claim_due(&c, &scan(&running)).unwrap();
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
    let missed = store.get_job(&c, "aaaaaaaaaaaa").unwrap().unwrap();
    assert_eq!(missed.state(), JobState::Completed);
    let broken = store.get_job(&c, "bbbbbbbbbbbb").unwrap().unwrap();
    assert_eq!(broken.state(), JobState::Error);
}

fn runs_of_dead_processes_become_interrupted(backend: &dyn Backend) {
    let (one, two) = (backend.process(1), backend.process(2));
    let c = ctx("2026-11-23T10:00:05Z");
    one.insert_job(&c, hourly("aaaaaaaaaaaa")).unwrap();
    let running = HashSet::new();
    one.claim_due(&c, &scan(&running)).unwrap();
    assert_eq!(
        two.interrupt_dead_runs(c.now, false).unwrap(),
        0,
        "1 is alive"
    );
    backend.kill(1);
    assert_eq!(two.interrupt_dead_runs(c.now, false).unwrap(), 1);
    assert_eq!(two.recent_runs(None, 1).unwrap()[0].status, "interrupted");
}

fn item<'a>(occurrence: &'a str, now: DateTime<Utc>) -> NewOutboxItem<'a> {
    NewOutboxItem {
        occurrence,
        target: "telegram:42",
        job_id: "aaaaaaaaaaaa",
        run_at: "2026-11-23T10:00:00+00:00",
        payload: "{}",
        sent_parts: 0,
        error: "",
        now,
        first_retry: now + Duration::seconds(30),
        expires_at: now + Duration::hours(6),
    }
}

fn a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice(backend: &dyn Backend) {
    let (one, two) = (backend.process(1), backend.process(2));
    let now = at("2026-11-23T10:00:00Z");
    let given_back = one.keep_delivery(&item("a@1", now), true).unwrap().unwrap();
    assert_eq!(one.keep_delivery(&item("a@1", now), true).unwrap(), None);
    let unknown = one.keep_delivery(&item("a@2", now), true).unwrap().unwrap();
    one.flight(unknown, Flight::Out).unwrap();
    assert_eq!(one.open_deliveries("a@1").unwrap(), 1);
    backend.kill(1);
    assert_eq!(two.release_orphan_deliveries(now).unwrap(), (1, 1));
    assert_eq!(
        two.delivery_state("a@2", "telegram:42").unwrap().as_deref(),
        Some("failed")
    );
    assert_eq!(two.next_delivery_due().unwrap(), Some(now));
    let claimed = two.claim_deliveries(now, 10).unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, given_back);
    assert!(
        two.claim_deliveries(now, 10).unwrap().is_empty(),
        "claimed once"
    );
    two.finish_delivery(given_back, OutboxState::Sent, now, 1, None)
        .unwrap();
    assert_eq!(two.open_deliveries("a@1").unwrap(), 0);
    assert_eq!(
        two.delivery_state("a@1", "telegram:42").unwrap().as_deref(),
        Some("sent")
    );
    // A pending one waits for its retry time and expires when its window closes.
    two.keep_delivery(&item("a@3", now), false).unwrap();
    assert!(two.claim_deliveries(now, 10).unwrap().is_empty());
    assert_eq!(
        two.claim_deliveries(now + Duration::seconds(30), 10)
            .unwrap()
            .len(),
        1
    );
    two.keep_delivery(&item("a@4", now), false).unwrap();
    assert!(two
        .claim_deliveries(now + Duration::hours(7), 10)
        .unwrap()
        .is_empty());
    assert_eq!(
        two.delivery_state("a@4", "telegram:42").unwrap().as_deref(),
        Some("expired")
    );
}

fn outputs_keep_the_newest_and_heartbeats_read_back(backend: &dyn Backend) {
    let store = backend.process(1);
    let t0 = at("2026-11-23T10:00:00Z");
    for n in 0..3 {
        let response = format!("answer {n}");
        let doc = OutputDocument {
            job_id: "aaaaaaaaaaaa",
            job_name: "report",
            schedule: "every 60m",
            run_time: t0 + Duration::minutes(n),
            zone: chrono_tz::UTC,
            prompt: "p",
            result: Ok(&response),
        };
        store.save_output(&doc, 2).unwrap();
    }
    let latest = store.latest_output("aaaaaaaaaaaa").unwrap().unwrap();
    assert!(latest.contains("answer 2"), "{latest}");
    assert_eq!(store.latest_output("bbbbbbbbbbbb").unwrap(), None);
    assert!(!store.heartbeat().unwrap().seen);
    store.beat(&Beat::Started { pid: 7 }).unwrap();
    store.beat(&Beat::Alive(t0)).unwrap();
    store.beat(&Beat::PassFailed(t0, "boom".into())).unwrap();
    let beat = store.heartbeat().unwrap();
    assert_eq!(
        (beat.seen, beat.alive_at, beat.pid),
        (true, Some(t0), Some(7))
    );
    assert_eq!(beat.last_error, Some((t0, "boom".to_string())));
    store.beat(&Beat::Stopped).unwrap();
    let beat = store.heartbeat().unwrap();
    assert!(beat.seen && beat.alive_at.is_none());
}

macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod file_store {
            $( #[test] fn $test() { super::$test(&super::files()); } )*
        }
        mod memory_store {
            $( #[test] fn $test() { super::$test(&super::memory()); } )*
        }
    };
}

conformance!(
    jobs_keep_every_field_through_row_operations,
    a_due_occurrence_is_claimed_once_across_processes,
    an_occurrence_of_a_running_job_is_recorded_skipped,
    a_missed_one_shot_is_settled_and_a_broken_schedule_marked,
    runs_of_dead_processes_become_interrupted,
    a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice,
    outputs_keep_the_newest_and_heartbeats_read_back,
);
