//! A store that keeps everything in memory, with the same rules as the file store (one
//! claim per occurrence, the outbox's never-twice states, healed jobs on every change):
//! what the scheduler's unit tests run against. Nothing survives the process.
//!
//! This file holds the shared state every handle of the store reaches; each room of
//! [`crate::store::Store`] is its own file (`records.rs`, `ledger.rs`, `outbox.rs`,
//! `outputs.rs`, `notes.rs`, `control.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};

use super::{claim_planned, ClaimRequest, DuePass, DueScan, Heartbeat, Owner, StoreError};
use crate::ledger::incident::Incident;
use crate::ledger::notepad::Note;
use crate::ledger::outbox::{OutboxItem, OutboxState};
use crate::ledger::{ledger_time, RunRow, RunStatus};
use crate::model::due::{earliest_next_run, plan_pass, prune_completed_one_shots};
use crate::model::job::{Context, Job};
use crate::store::estop::GlobalPause;

mod control;
mod ledger;
mod notes;
mod outbox;
mod outputs;
mod records;

/// One outbox row.
#[derive(Debug, Clone)]
struct Delivery {
    item: OutboxItem,
    state: OutboxState,
    next_attempt_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
    claimed_pid: Option<u32>,
    in_flight: bool,
}

#[derive(Default)]
struct Inner {
    jobs: Vec<Job>,
    changes: u64,
    /// Bumped by [`MemoryStore::note_backlog`].
    backlog: u64,
    runs: Vec<RunRow>,
    deliveries: Vec<Delivery>,
    /// Documents per job, keyed by their file name (which sorts by run time).
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// Monitor snapshots per job.
    monitor_snapshots: HashMap<String, String>,
    heartbeat: Heartbeat,
    /// Pids of this host that count as dead (a test "kills" a process by adding it).
    dead: HashSet<u32>,
    /// True while a test holds the pass, as another scheduler holding `.tick.lock` would.
    pass_held: bool,
    /// Where each run saved its document.
    run_outputs: BTreeMap<i64, String>,
    /// Run once, just after the next pass has decided (see [`MemoryStore::after_next_pass`]).
    after_pass: Option<AfterPass>,
    incidents: BTreeMap<String, Incident>,
    /// Notepad entries by job, then key.
    notes: BTreeMap<String, BTreeMap<String, Note>>,
    pause: Option<GlobalPause>,
    /// The windows whose budget notice was claimed.
    budget_notices: HashSet<String>,
    /// Runs asked to stop.
    cancels: HashSet<i64>,
    /// What each run was asked with.
    requests: HashMap<i64, crate::ledger::RunRequest>,
}

/// A test's change to the store, made while a pass is deciding.
type AfterPass =
    Box<dyn FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send>;

/// Everything in memory, for tests. Claims are stamped with `owner`.
pub struct MemoryStore {
    owner: Owner,
    /// All state, shared by the handles of [`MemoryStore::as_process`]; every call
    /// takes it once, so each call is atomic.
    inner: Arc<Mutex<Inner>>,
}

impl MemoryStore {
    pub fn new(owner: Owner) -> MemoryStore {
        MemoryStore {
            owner,
            inner: Arc::new(Mutex::new(Inner::default())),
        }
    }

    /// Another process on the same data (a second daemon, the next one after a crash).
    pub fn as_process(&self, pid: u32) -> MemoryStore {
        MemoryStore {
            owner: Owner {
                host: self.owner.host.clone(),
                pid,
            },
            inner: Arc::clone(&self.inner),
        }
    }

    /// Another process says it holds claims it cannot start yet (what a shared store
    /// hears from its hosts): [`backlog_mark`](crate::store::JobRecords::backlog_mark) changes.
    pub fn note_backlog(&self) {
        self.lock().backlog += 1;
    }

    /// Marks a pid of this host dead: its running runs and deliveries become orphans.
    pub fn kill(&self, pid: u32) {
        self.lock().dead.insert(pid);
    }

    /// Makes passes find the store busy, as when another scheduler holds the pass.
    pub fn hold_pass(&self, held: bool) {
        self.lock().pass_held = held;
    }

    /// Runs `change` once, just after the next pass has read and decided, as when another
    /// process writes the store while a pass is deciding.
    pub fn after_next_pass<F>(&self, change: impl FnOnce() -> F + Send + 'static)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.lock().after_pass = Some(Box::new(move || Box::pin(change())));
    }

    /// The pass itself: decide what is due, move schedules forward, claim.
    fn decide_and_claim(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let mut inner = self.lock();
        if inner.pass_held {
            return Ok(DuePass::default());
        }
        inner.heal_all(ctx);
        let before = inner.jobs.len();
        let planned = plan_pass(&mut inner.jobs, ctx, scan.options);
        prune_completed_one_shots(&mut inner.jobs, ctx, scan.completed_retention);
        if !planned.is_empty() || inner.jobs.len() != before {
            inner.changes += 1;
        }
        let next_wake = earliest_next_run(&inner.jobs, ctx, scan.options.run_claim_ttl);
        let host = self.owner.host.clone();
        let inner = &mut *inner;
        let occurrences = {
            let runs_view = inner.runs.clone();
            let dead = inner.dead.clone();
            claim_planned(
                planned,
                ctx,
                scan,
                &mut |job_id| {
                    runs_view.iter().any(|r| {
                        r.job_id == job_id
                            && r.status == RunStatus::Running
                            && (r.host.as_deref() != Some(host.as_str())
                                || r.pid
                                    .and_then(|p| u32::try_from(p).ok())
                                    .is_some_and(|p| !dead.contains(&p)))
                    })
                },
                &mut |claim| Ok(inner.insert_run(&self.owner, claim)),
            )
        };
        Ok(DuePass::decided(occurrences, next_wake))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn alive(&self, pid: Option<i64>) -> bool {
        pid.and_then(|p| u32::try_from(p).ok())
            .is_some_and(|p| !self.dead.contains(&p))
    }

    fn heal_all(&mut self, ctx: &Context) {
        for job in &mut self.jobs {
            job.heal(ctx);
        }
    }

    fn is_running(&self, job_id: &str, host: &str) -> bool {
        self.runs.iter().any(|r| {
            r.job_id == job_id
                && r.status == RunStatus::Running
                && (r.host.as_deref() != Some(host) || self.alive(r.pid))
        })
    }

    fn insert_run(&mut self, owner: &Owner, claim: &ClaimRequest<'_>) -> Option<i64> {
        if self.runs.iter().any(|r| r.occurrence == claim.occurrence) {
            return None;
        }
        let id = self.runs.last().map_or(1, |r| r.id + 1);
        self.runs.push(RunRow {
            id,
            job_id: claim.job_id.to_string(),
            occurrence: claim.occurrence.to_string(),
            source: claim.source.as_str().to_string(),
            pid: Some(i64::from(owner.pid)),
            host: Some(owner.host.clone()),
            status: claim.status.clone(),
            scheduled_at: claim.scheduled_at.map(ledger_time),
            started_at: Some(ledger_time(claim.started_at)),
            finished_at: None,
            error: claim.error.map(str::to_string),
            delivery: None,
            prompt_tokens: None,
            completion_tokens: None,
            cost_usd: None,
            model: None,
            replay_of: None,
        });
        Some(id)
    }

    fn delivery(&mut self, id: i64) -> Option<&mut Delivery> {
        self.deliveries.iter_mut().find(|d| d.item.id == id)
    }
}
