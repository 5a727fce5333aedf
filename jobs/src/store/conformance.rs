//! One conformance suite every [`Store`] backend runs: the same calls, the same answers.
//! A new backend is done when it passes here (each test is instantiated per backend by
//! the `conformance!` macro at the bottom).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::{Beat, Claimed, DueScan, FileStore, Flight, MemoryStore, Owner, Store};
use crate::due::{Decision, ScanOptions};
use crate::fields::Layout;
use crate::job::{Context, Job, JobState};
use crate::ledger::{RunEnd, RunStatus};
use crate::lifecycle::JobError;
use crate::outbox::{NewOutboxItem, OutboxState};
use crate::output::OutputDocument;
use crate::spend::Spend;

/// Processes of one host sharing one backend's data.
#[async_trait::async_trait]
trait Backend: Sync {
    async fn process(&self, pid: u32) -> Box<dyn Store>;
    /// The process `pid` of this host, whose store handle this was, died.
    async fn kill(&self, process: Box<dyn Store>, pid: u32);
    /// "Now" by the backend's clock (a database keeps its own).
    fn now(&self) -> DateTime<Utc> {
        at("2026-11-23T10:00:05Z")
    }
    /// Whether a process with free run slots is handed occurrences another live process
    /// claimed and has not started (a store several hosts share).
    fn shares_work(&self) -> bool {
        false
    }
}

struct Files {
    dir: tempfile::TempDir,
    dead: Arc<Mutex<HashSet<i64>>>,
}

#[async_trait::async_trait]
impl Backend for Files {
    async fn process(&self, pid: u32) -> Box<dyn Store> {
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

    async fn kill(&self, process: Box<dyn Store>, pid: u32) {
        drop(process);
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

#[async_trait::async_trait]
impl Backend for Memory {
    async fn process(&self, pid: u32) -> Box<dyn Store> {
        Box::new(self.0.as_process(pid))
    }

    async fn kill(&self, process: Box<dyn Store>, pid: u32) {
        drop(process);
        self.0.kill(pid);
    }
}

fn memory() -> Memory {
    Memory(MemoryStore::new(Owner {
        host: "host".into(),
        pid: 1,
    }))
}

/// A fresh database on the test cluster (started once per test process, removed when it
/// exits: `scripts/postgres/test-cluster.sh`).
struct Postgres {
    url: String,
}

#[async_trait::async_trait]
impl Backend for Postgres {
    async fn process(&self, pid: u32) -> Box<dyn Store> {
        let owner = Owner {
            host: "host".into(),
            pid,
        };
        Box::new(super::PgStore::connect(&self.url, owner).await.unwrap())
    }

    /// A process that is gone holds no lease.
    async fn kill(&self, process: Box<dyn Store>, _pid: u32) {
        process.close().await;
    }

    fn shares_work(&self) -> bool {
        true
    }

    fn now(&self) -> DateTime<Utc> {
        let now = std::process::Command::new("psql")
            .args([
                self.url.as_str(),
                "-Atc",
                "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
            ])
            .output()
            .unwrap();
        at(String::from_utf8(now.stdout).unwrap().trim())
    }
}

fn postgres() -> Postgres {
    static CLUSTER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let base = CLUSTER.get_or_init(|| {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/postgres/test-cluster.sh"
        );
        let out = std::process::Command::new("bash")
            .args([script, &std::process::id().to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    });
    let name = format!("t{:016x}", rand::random::<u64>());
    let created = std::process::Command::new("psql")
        .args([base.as_str(), "-qc", &format!("CREATE DATABASE {name}")])
        .status()
        .unwrap();
    assert!(created.success());
    Postgres {
        url: base.replacen("/postgres?", &format!("/{name}?"), 1),
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn ctx(now: DateTime<Utc>) -> Context {
    Context {
        now,
        zone: chrono_tz::UTC,
        legacy_zone: chrono_tz::UTC,
    }
}

fn iso(t: DateTime<Utc>) -> String {
    schedules::format_instant(t, chrono_tz::UTC)
}

fn job(id: &str, schedule: serde_json::Value, next: DateTime<Utc>) -> Job {
    let record = json!({
        "id": id, "name": format!("job {id}"), "prompt": "p", "schedule": schedule,
        "repeat": {"times": null, "completed": 0}, "enabled": true, "state": "scheduled",
        "next_run_at": iso(next), "x_unknown": {"kept": true},
    });
    Job::from_record(serde_json::from_value(record).unwrap())
}

/// An hourly job due at `next`.
fn hourly(id: &str, next: DateTime<Utc>) -> Job {
    job(
        id,
        json!({"kind": "interval", "minutes": 60, "display": "every 60m"}),
        next,
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
        free_slots: None,
    }
}

/// [`scan`] by a process with `free` run slots.
fn scan_with_slots(running: &HashSet<String>, free: usize) -> DueScan<'_> {
    DueScan {
        free_slots: Some(free),
        ..scan(running)
    }
}

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
    assert!(one.start_run(run, c.now).await.unwrap());
    let rows = two.recent_runs(None, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, "running");
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
    assert_eq!(two.recent_runs(None, 10).await.unwrap()[0].status, "ok");
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
    assert!(one.start_run(run, c.now).await.unwrap());
    assert_eq!(
        two.interrupt_dead_runs(c.now, false).await.unwrap(),
        0,
        "1 is alive"
    );
    backend.kill(one, 1).await;
    assert_eq!(two.interrupt_dead_runs(c.now, false).await.unwrap(), 1);
    assert_eq!(
        two.recent_runs(None, 1).await.unwrap()[0].status,
        "interrupted"
    );
}

fn runs_of(pass: &super::DuePass) -> Vec<i64> {
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
        let by_one = one.start_run(*run, c.now).await.unwrap();
        let by_two = handed.contains(run) && two.start_run(*run, c.now).await.unwrap();
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
    assert!(rows.iter().all(|r| r.status == "running"), "{rows:?}");
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
    assert!(store.start_run(first, c.now).await.unwrap());
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

async fn a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    let given_back = one
        .keep_delivery(&item("a@1", now), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        one.keep_delivery(&item("a@1", now), true).await.unwrap(),
        None
    );
    let unknown = one
        .keep_delivery(&item("a@2", now), true)
        .await
        .unwrap()
        .unwrap();
    one.flight(unknown, Flight::Out).await.unwrap();
    assert_eq!(one.open_deliveries("a@1").await.unwrap(), 1);
    backend.kill(one, 1).await;
    assert_eq!(two.release_orphan_deliveries(now).await.unwrap(), (1, 1));
    assert_eq!(
        two.delivery_state("a@2", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("failed")
    );
    assert_eq!(two.next_delivery_due().await.unwrap(), Some(now));
    let claimed = two.claim_deliveries(now, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, given_back);
    assert!(
        two.claim_deliveries(now, 10).await.unwrap().is_empty(),
        "claimed once"
    );
    two.finish_delivery(given_back, OutboxState::Sent, now, 1, None)
        .await
        .unwrap();
    assert_eq!(two.open_deliveries("a@1").await.unwrap(), 0);
    assert_eq!(
        two.delivery_state("a@1", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("sent")
    );
    // A pending one waits for its retry time and expires when its window closes.
    two.keep_delivery(&item("a@3", now), false).await.unwrap();
    assert!(two.claim_deliveries(now, 10).await.unwrap().is_empty());
    assert_eq!(
        two.claim_deliveries(now + Duration::seconds(30), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    two.keep_delivery(&item("a@4", now), false).await.unwrap();
    assert!(two
        .claim_deliveries(now + Duration::hours(7), 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        two.delivery_state("a@4", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("expired")
    );
}

async fn the_latest_run_of_each_job_and_the_outbox_depth_read_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let now = backend.now();
    assert!(store.latest_runs().await.unwrap().is_empty());
    assert_eq!(store.outbox_depth().await.unwrap(), 0);
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
    let latest = store.latest_runs().await.unwrap();
    assert_eq!(latest.len(), 2);
    assert_eq!(latest["aaaaaaaaaaaa"].id, second);
    assert_eq!(latest["aaaaaaaaaaaa"].status, "running");
    assert_eq!(latest["bbbbbbbbbbbb"].id, other);
    let sending = store
        .keep_delivery(&item("a@1", now), true)
        .await
        .unwrap()
        .unwrap();
    store.keep_delivery(&item("a@2", now), false).await.unwrap();
    assert_eq!(store.outbox_depth().await.unwrap(), 2);
    store
        .finish_delivery(sending, OutboxState::Sent, now, 1, None)
        .await
        .unwrap();
    assert_eq!(store.outbox_depth().await.unwrap(), 1);
}

async fn outputs_keep_the_newest_and_heartbeats_read_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let t0 = backend.now();
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
            gate: None,
        };
        store.save_output(&doc, 2).await.unwrap();
    }
    store
        .save_monitor_snapshot("aaaaaaaaaaaa", "v1\nv2")
        .await
        .unwrap();
    let latest = store.latest_output("aaaaaaaaaaaa").await.unwrap().unwrap();
    assert!(latest.contains("answer 2"), "{latest}");
    let recent = store.recent_outputs("aaaaaaaaaaaa", 5).await.unwrap();
    assert_eq!(recent.len(), 2, "the snapshot is not a document");
    assert!(recent[0].contains("answer 2") && recent[1].contains("answer 1"));
    let more = format!("answer {}", 3);
    let doc = OutputDocument {
        job_id: "aaaaaaaaaaaa",
        job_name: "report",
        schedule: "every 60m",
        run_time: t0 + Duration::minutes(3),
        zone: chrono_tz::UTC,
        prompt: "p",
        result: Ok(&more),
        gate: None,
    };
    store.save_output(&doc, 1).await.unwrap();
    let snapshot = async |id| store.monitor_snapshot(id).await.unwrap();
    assert_eq!(
        snapshot("aaaaaaaaaaaa").await.as_deref(),
        Some("v1\nv2"),
        "pruning documents keeps the snapshot"
    );
    store
        .save_monitor_snapshot("aaaaaaaaaaaa", "v3")
        .await
        .unwrap();
    assert_eq!(snapshot("aaaaaaaaaaaa").await.as_deref(), Some("v3"));
    assert_eq!(snapshot("bbbbbbbbbbbb").await, None);
    assert_eq!(store.latest_output("bbbbbbbbbbbb").await.unwrap(), None);
    assert!(!store.heartbeat().await.unwrap().seen);
    store.beat(&Beat::Started { pid: 1 }).await.unwrap();
    store.beat(&Beat::Alive(t0)).await.unwrap();
    store
        .beat(&Beat::PassFailed(t0, "boom".into()))
        .await
        .unwrap();
    let beat = store.heartbeat().await.unwrap();
    assert!(beat.seen && beat.alive_at.is_some(), "{beat:?}");
    assert_eq!(beat.last_error.map(|(_, why)| why).as_deref(), Some("boom"));
    store.beat(&Beat::Stopped).await.unwrap();
    let beat = store.heartbeat().await.unwrap();
    assert!(beat.seen && beat.alive_at.is_none(), "{beat:?}");
}

/// Gathers the ids and states of the summaries a listing hands out.
#[derive(Default)]
struct Summaries(Vec<(String, JobState)>);

impl super::SummarySink for Summaries {
    fn summary(&mut self, job: &crate::listing::JobSummary<'_>) {
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
                job.pause("2026-11-23T10:00:00+00:00", None);
                Ok(())
            }),
        )
        .await
        .unwrap();
    let sink = Arc::new(Mutex::new(Summaries::default()));
    super::list_summaries(&*store, &c, sink.clone())
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
    let extra = super::ExtraField {
        key: "latest_execution",
        write: Arc::new(|job: &super::ListedJob<'_>, out: &mut Vec<u8>| {
            out.extend_from_slice(format!("\"run of {}\"", job.id).as_bytes())
        }),
    };
    let keep: super::Keep = Arc::new(|job: super::Listed| job.enabled);
    let out = super::list_normalized(&*store, &c, keep, vec![extra], b"[".to_vec())
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

async fn failures_group_into_incidents_that_every_process_sees(backend: &dyn Backend) {
    use crate::incident::{IncidentState, NewIncident, Transition};
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let failure = |at: &str| NewIncident::of("aaaaaaaaaaaa", "HTTP 500 after 3s", None, at.into());
    let first = one
        .record_incident(&failure("2026-11-23T10:00:00+00:00"))
        .await
        .unwrap();
    assert_eq!(first.state(), Some(IncidentState::Detected));
    assert!(one
        .move_incident(&first.id, Transition::Alerted, "2026-11-23T10:00:01+00:00")
        .await
        .unwrap());
    let again = two
        .record_incident(&NewIncident::of(
            "aaaaaaaaaaaa",
            "HTTP 500 after 9s",
            Some("/o.md"),
            "2026-11-23T11:00:00+00:00".into(),
        ))
        .await
        .unwrap();
    assert_eq!(again.id, first.id, "the same error is the same incident");
    assert_eq!(again.state(), Some(IncidentState::Alerted));
    assert_eq!(
        again.alerted_at.as_deref(),
        Some("2026-11-23T10:00:01+00:00")
    );
    assert_eq!(
        (again.first_seen_at.as_str(), again.last_seen_at.as_str()),
        ("2026-11-23T10:00:00+00:00", "2026-11-23T11:00:00+00:00")
    );
    assert_eq!(again.output_file.as_deref(), Some("/o.md"));
    let other = one
        .record_incident(&NewIncident::of(
            "bbbbbbbbbbbb",
            "script exited 3",
            None,
            "2026-11-23T09:00:00+00:00".into(),
        ))
        .await
        .unwrap();
    let listed: Vec<String> = two
        .incidents(None)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(
        listed,
        vec![first.id.clone(), other.id.clone()],
        "newest activity first"
    );
    assert_eq!(
        two.resolve_incidents("aaaaaaaaaaaa", "2026-11-23T12:00:00+00:00")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        two.resolve_incidents("aaaaaaaaaaaa", "2026-11-23T12:00:00+00:00")
            .await
            .unwrap(),
        0
    );
    let reopened = one
        .record_incident(&failure("2026-11-23T13:00:00+00:00"))
        .await
        .unwrap();
    assert_eq!(reopened.state(), Some(IncidentState::Detected));
    assert_eq!(reopened.alerted_at, None);
    assert!(two
        .move_incident(&first.id, Transition::Acked, "2026-11-23T13:30:00+00:00")
        .await
        .unwrap());
    assert!(!one
        .move_incident(&first.id, Transition::Alerted, "2026-11-23T14:00:00+00:00")
        .await
        .unwrap());
    assert!(!one
        .move_incident("nosuch_000000000000", Transition::Acked, "x")
        .await
        .unwrap());
    let closed = one.incidents(Some(IncidentState::Closed)).await.unwrap();
    assert_eq!(closed.len(), 1);
    assert_eq!(
        closed[0].acked_at.as_deref(),
        Some("2026-11-23T13:30:00+00:00")
    );
    assert_eq!(
        one.record_incident(&failure("2026-11-23T15:00:00+00:00"))
            .await
            .unwrap()
            .state(),
        Some(IncidentState::Closed)
    );
    assert_eq!(
        one.incidents(Some(IncidentState::Detected))
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn notepads_keep_their_limits_and_go_with_their_job(backend: &dyn Backend) {
    use crate::notepad::{Note, MAX_VALUE_BYTES};
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    one.insert_job(&c, hourly("aaaaaaaaaaaa", c.now))
        .await
        .unwrap();
    let note = |key: &str, value: &str| Note {
        job_id: "aaaaaaaaaaaa".into(),
        key: key.into(),
        value: value.into(),
        updated_at: "2026-11-23T10:00:00+00:00".into(),
    };
    assert!(one.notes("aaaaaaaaaaaa").await.unwrap().is_empty());
    one.set_note(&note("cursor", "41")).await.unwrap();
    one.set_note(&note("cursor", "42")).await.unwrap();
    one.set_note(&note("a", "first")).await.unwrap();
    let keys: Vec<(String, String)> = two
        .notes("aaaaaaaaaaaa")
        .await
        .unwrap()
        .into_iter()
        .map(|n| (n.key, n.value))
        .collect();
    assert_eq!(
        keys,
        vec![("a".into(), "first".into()), ("cursor".into(), "42".into())]
    );
    let big = "x".repeat(MAX_VALUE_BYTES);
    for key in ["b1", "b2", "b3"] {
        one.set_note(&note(key, &big)).await.unwrap();
    }
    let full = one.set_note(&note("b4", &big)).await;
    assert!(
        matches!(full, Err(super::StoreError::Refused(ref m)) if m.contains("notepad full")),
        "{full:?}"
    );
    assert!(matches!(
        one.set_note(&note("k", &"x".repeat(MAX_VALUE_BYTES + 1)))
            .await,
        Err(super::StoreError::Refused(_))
    ));
    assert_eq!(
        two.notes("aaaaaaaaaaaa").await.unwrap().len(),
        5,
        "a refused write changes nothing"
    );
    assert!(two.delete_note("aaaaaaaaaaaa", "b1").await.unwrap());
    assert!(!two.delete_note("aaaaaaaaaaaa", "b1").await.unwrap());
    one.set_note(&Note {
        job_id: "bbbbbbbbbbbb".into(),
        ..note("kept", "yes")
    })
    .await
    .unwrap();
    two.remove_job(&c, "aaaaaaaaaaaa").await.unwrap();
    assert!(one.notes("aaaaaaaaaaaa").await.unwrap().is_empty());
    assert_eq!(one.notes("bbbbbbbbbbbb").await.unwrap().len(), 1);
}

async fn the_global_pause_holds_every_process(backend: &dyn Backend) {
    use crate::estop::GlobalPause;
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    assert_eq!(two.global_pause().await.unwrap(), None);
    let pause = GlobalPause {
        engaged_at: Some("2026-11-23T10:00:00+00:00".into()),
        reason: Some("deploy".into()),
    };
    assert!(!one.set_global_pause(Some(&pause)).await.unwrap());
    assert!(one.set_global_pause(Some(&pause)).await.unwrap());
    assert_eq!(two.global_pause().await.unwrap(), Some(pause));
    assert!(two.set_global_pause(None).await.unwrap());
    assert!(!two.set_global_pause(None).await.unwrap());
    assert_eq!(one.global_pause().await.unwrap(), None);
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

// On a runtime of several threads, as the daemon runs them: the file store then does its
// work on the blocking threads (on one thread it works in place, as a CLI verb does).
macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod file_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&super::files()).await; } )*
        }
        mod memory_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&super::memory()).await; } )*
        }
        mod postgres_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&super::postgres()).await; } )*
        }
    };
}

conformance!(
    jobs_keep_every_field_through_row_operations,
    a_due_occurrence_is_claimed_once_across_processes,
    an_occurrence_of_a_running_job_is_recorded_skipped,
    a_missed_one_shot_is_settled_and_a_broken_schedule_marked,
    runs_of_dead_processes_become_interrupted,
    a_claimed_occurrence_is_started_by_exactly_one_process,
    an_occurrence_already_in_the_ledger_is_taken_beside_new_claims,
    a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice,
    outputs_keep_the_newest_and_heartbeats_read_back,
    the_latest_run_of_each_job_and_the_outbox_depth_read_back,
    listings_give_every_job_in_store_order,
    failures_group_into_incidents_that_every_process_sees,
    notepads_keep_their_limits_and_go_with_their_job,
    the_global_pause_holds_every_process,
    spend_is_summed_for_every_process_and_a_budget_notice_goes_once,
    the_layout_follows_the_stored_records,
);
