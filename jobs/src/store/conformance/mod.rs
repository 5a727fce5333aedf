//! One conformance suite every [`Store`] backend runs: the same calls, the same answers.
//! A new backend is done when it passes here (each test is instantiated per backend by
//! the `conformance!` macro below). One module per room of the store, named after it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::{DueScan, FileStore, MemoryStore, Owner, Store};
use crate::model::due::ScanOptions;
use crate::model::job::{Context, Job};

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
            catch_up_spread: Duration::zero(),
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

// On a runtime of several threads, as the daemon runs them: the file store then does its
// work on the blocking threads (on one thread it works in place, as a CLI verb does).
macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod file_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&crate::store::conformance::files()).await; } )*
        }
        mod memory_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&crate::store::conformance::memory()).await; } )*
        }
        mod postgres_store {
            $( #[tokio::test(flavor = "multi_thread")] async fn $test() { super::$test(&crate::store::conformance::postgres()).await; } )*
        }
    };
}

mod control;
mod ledger;
mod notes;
mod outbox;
mod outputs;
mod records;
