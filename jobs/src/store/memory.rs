//! A store that keeps everything in memory, with the same rules as the file store (one
//! claim per occurrence, the outbox's never-twice states, healed jobs on every change):
//! what the scheduler's unit tests run against. Nothing survives the process.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};

use super::{
    claim_planned, BatchChange, Beat, ChangeMark, ClaimRequest, DuePass, DueScan, Flight,
    Heartbeat, JobChange, Owner, Store, StoreError, StoreInfo,
};
use crate::due::{earliest_next_run, plan_pass, prune_completed_one_shots};
use crate::estop::GlobalPause;
use crate::incident::{self, Incident, IncidentState, NewIncident, Transition};
use crate::job::{Context, Job};
use crate::ledger::{ledger_time, RunEnd, RunRow, RunStatus};
use crate::lifecycle::JobError;
use crate::notepad::{self, Note};
use crate::outbox::{retry_delay, NewOutboxItem, OutboxItem, OutboxState};
use crate::output::OutputDocument;
use crate::spend::Spend;

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
    /// hears from its hosts): [`Store::backlog_mark`] changes.
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
                            && r.status == RunStatus::Running.as_str()
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
                && r.status == RunStatus::Running.as_str()
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
            status: claim.status.as_str().to_string(),
            scheduled_at: claim.scheduled_at.map(ledger_time),
            started_at: Some(ledger_time(claim.started_at)),
            finished_at: None,
            error: claim.error.map(str::to_string),
            delivery: None,
            prompt_tokens: None,
            completion_tokens: None,
            cost_usd: None,
            model: None,
        });
        Some(id)
    }

    fn delivery(&mut self, id: i64) -> Option<&mut Delivery> {
        self.deliveries.iter_mut().find(|d| d.item.id == id)
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn load_jobs(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        Ok(self.lock().jobs.clone())
    }

    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        let mut inner = self.lock();
        inner.heal_all(ctx);
        inner.jobs.push(job);
        inner.changes += 1;
        Ok(())
    }

    async fn update_job(
        &self,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let mut inner = self.lock();
        let Some(index) = inner.jobs.iter().position(|j| j.id() == id) else {
            return Err(JobError::NotFound(id.to_string()));
        };
        let mut job = inner.jobs[index].clone();
        job.heal(ctx);
        change(&mut job)?;
        inner.heal_all(ctx);
        inner.jobs[index] = job.clone();
        inner.changes += 1;
        Ok(job)
    }

    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        for job in inner.jobs.iter_mut().filter(|j| ids.contains(j.id())) {
            job.heal(ctx);
            change(job);
        }
        inner.changes += 1;
        Ok(())
    }

    async fn remove_job(&self, _ctx: &Context, id: &str) -> Result<Job, JobError> {
        let mut inner = self.lock();
        let index = inner
            .jobs
            .iter()
            .position(|j| j.id() == id)
            .ok_or_else(|| JobError::NotFound(id.to_string()))?;
        inner.outputs.remove(id);
        inner.monitor_snapshots.remove(id);
        inner.notes.remove(id);
        inner.changes += 1;
        Ok(inner.jobs.remove(index))
    }

    async fn change_mark(&self) -> ChangeMark {
        ChangeMark(self.lock().changes)
    }

    fn backlog_mark(&self) -> ChangeMark {
        ChangeMark(self.lock().backlog)
    }

    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let pass = self.decide_and_claim(ctx, scan);
        let after = self.lock().after_pass.take();
        if let Some(change) = after {
            change().await;
        }
        pass
    }

    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let mut inner = self.lock();
        if inner.is_running(job_id, &self.owner.host) {
            return Err(JobError::Running(job_id.to_string()));
        }
        let occurrence = super::manual_occurrence(job_id, now);
        let claim = super::manual_claim(job_id, &occurrence, now);
        inner.insert_run(&self.owner, &claim).ok_or_else(|| {
            JobError::Invalid("a manual run was started at the same millisecond; try again".into())
        })
    }

    async fn start_run(&self, run: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let now = ledger_time(now);
        if let Some(row) = inner.runs.iter_mut().find(|r| r.id == run) {
            if row.status == "running" && row.started_at.as_ref().is_some_and(|at| *at < now) {
                row.started_at = Some(now);
            }
        }
        Ok(true)
    }

    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(row) = inner.runs.iter_mut().find(|r| r.id == run) {
            row.status = status.as_str().to_string();
            row.finished_at = Some(ledger_time(now));
            row.error = end.error.clone();
            row.delivery = end.delivery.clone();
            row.prompt_tokens = end.prompt_tokens;
            row.completion_tokens = end.completion_tokens;
            row.cost_usd = end.cost_usd;
            row.model = end.model.clone();
        }
        if let Some(output) = &end.output {
            inner.run_outputs.insert(run, output.clone());
        }
        Ok(())
    }

    async fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let own = i64::from(self.owner.pid);
        let stale: Vec<usize> = (0..inner.runs.len())
            .filter(|&i| {
                let r = &inner.runs[i];
                r.status == RunStatus::Running.as_str()
                    && r.host.as_deref() == Some(self.owner.host.as_str())
                    && ((except_own && r.pid == Some(own)) || !inner.alive(r.pid))
            })
            .collect();
        for &i in &stale {
            let row = &mut inner.runs[i];
            row.status = RunStatus::Interrupted.as_str().to_string();
            row.finished_at = Some(ledger_time(now));
            row.error
                .get_or_insert_with(|| "the process running it stopped before it finished".into());
        }
        Ok(stale.len())
    }

    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        Ok(self
            .lock()
            .runs
            .iter()
            .rev()
            .filter(|r| job_id.is_none_or(|id| r.job_id == id))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn latest_runs(&self) -> Result<HashMap<String, RunRow>, StoreError> {
        let mut latest = HashMap::new();
        for run in self.lock().runs.iter().rev() {
            latest
                .entry(run.job_id.clone())
                .or_insert_with(|| run.clone());
        }
        Ok(latest)
    }

    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let mut inner = self.lock();
        let taken = inner
            .deliveries
            .iter()
            .any(|d| d.item.occurrence == item.occurrence && d.item.target == item.target);
        if taken {
            return Ok(None);
        }
        let id = inner.deliveries.last().map_or(1, |d| d.item.id + 1);
        inner.deliveries.push(Delivery {
            item: OutboxItem {
                id,
                occurrence: item.occurrence.to_string(),
                target: item.target.to_string(),
                job_id: item.job_id.to_string(),
                run_at: Some(item.run_at.to_string()),
                payload: item.payload.to_string(),
                sent_parts: item.sent_parts,
                attempts: 1,
                expires_at: item.expires_at,
                last_error: Some(item.error.to_string()).filter(|e| !e.is_empty()),
            },
            state: if claimed {
                OutboxState::Sending
            } else {
                OutboxState::Pending
            },
            next_attempt_at: item.first_retry,
            created_at: item.now,
            claimed_pid: claimed.then_some(self.owner.pid),
            in_flight: false,
        });
        Ok(claimed.then_some(id))
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let mut inner = self.lock();
        let mut claimed = Vec::new();
        for d in inner.deliveries.iter_mut() {
            if d.state != OutboxState::Pending {
                continue;
            }
            if d.item.expires_at <= now {
                d.state = OutboxState::Expired;
            } else if d.next_attempt_at <= now && claimed.len() < limit {
                d.state = OutboxState::Sending;
                d.item.attempts += 1;
                d.claimed_pid = Some(self.owner.pid);
                d.in_flight = false;
                claimed.push(d.item.clone());
            }
        }
        Ok(claimed)
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        if let Some(d) = self.lock().delivery(id) {
            match flight {
                Flight::Out => d.in_flight = true,
                Flight::Back { delivered } => {
                    d.in_flight = false;
                    d.item.sent_parts += i64::from(delivered);
                }
            }
        }
        Ok(())
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        let mut inner = self.lock();
        let dead = inner.dead.clone();
        let (mut released, mut closed) = (0, 0);
        for d in inner.deliveries.iter_mut() {
            let orphan = d.state == OutboxState::Sending
                && d.claimed_pid.is_some_and(|pid| dead.contains(&pid));
            if !orphan {
                continue;
            }
            if d.in_flight {
                d.state = OutboxState::Failed;
                d.item.last_error = Some(
                    "outcome unknown: the process sending it died while a request was out; not resent, to never post twice".into(),
                );
                closed += 1;
            } else {
                d.state = OutboxState::Pending;
                d.next_attempt_at = now;
                released += 1;
            }
        }
        Ok((released, closed))
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        if let Some(d) = self.lock().delivery(id) {
            d.state = state;
            d.item.sent_parts = sent_parts;
            if let Some(error) = error {
                d.item.last_error = Some(error.to_string());
            }
            d.next_attempt_at = now + retry_delay(d.item.attempts - 1);
        }
        Ok(())
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| d.item.occurrence == occurrence)
            .filter(|d| matches!(d.state, OutboxState::Pending | OutboxState::Sending))
            .count())
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| matches!(d.state, OutboxState::Pending | OutboxState::Sending))
            .count())
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| d.state == OutboxState::Pending)
            .map(|d| d.next_attempt_at)
            .min())
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .find(|d| d.item.occurrence == occurrence && d.item.target == target)
            .map(|d| d.state.as_str().to_string()))
    }

    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        Ok(crate::spend::sum_rows(&self.lock().runs, since))
    }

    async fn claim_budget_notice(
        &self,
        window: &str,
        _now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.lock().budget_notices.insert(window.to_string()))
    }

    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let spend_since = crate::ledger::ledger_time(spend_since);
        let mut inner = self.lock();
        inner.deliveries.retain(|d| {
            matches!(d.state, OutboxState::Pending | OutboxState::Sending) || d.created_at >= before
        });
        let mut kept: BTreeMap<String, usize> = BTreeMap::new();
        let mut keep = vec![true; inner.runs.len()];
        for (i, row) in inner.runs.iter().enumerate().rev() {
            if row.status == RunStatus::Running.as_str() {
                continue;
            }
            let n = kept.entry(row.job_id.clone()).or_default();
            *n += 1;
            let spent = row.prompt_tokens.is_some() || row.cost_usd.is_some();
            let counted = spent && row.finished_at.as_deref() >= Some(spend_since.as_str());
            keep[i] = *n <= keep_runs || counted;
        }
        let mut flags = keep.into_iter();
        inner.runs.retain(|_| flags.next().unwrap_or(true));
        Ok(())
    }

    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        if !crate::job::is_safe_id(doc.job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{}' is not a safe file name",
                doc.job_id
            )));
        }
        let mut inner = self.lock();
        let documents = inner.outputs.entry(doc.job_id.to_string()).or_default();
        let stamp = doc.file_stem();
        let mut name = format!("{stamp}.md");
        let mut n = 1;
        while documents.contains_key(&name) {
            name = format!("{stamp}-{n}.md");
            n += 1;
        }
        documents.insert(name.clone(), doc.render());
        while documents.len() > keep.max(1) {
            documents.pop_first();
        }
        Ok(format!("memory:{}/{name}", doc.job_id))
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .outputs
            .get(job_id)
            .and_then(|docs| docs.values().next_back().cloned()))
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        Ok(self
            .lock()
            .outputs
            .get(job_id)
            .map(|docs| docs.values().rev().take(limit).cloned().collect())
            .unwrap_or_default())
    }

    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.lock().monitor_snapshots.get(job_id).cloned())
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        self.lock()
            .monitor_snapshots
            .insert(job_id.to_string(), output.to_string());
        Ok(())
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        let inner = self.lock();
        let Some(row) = inner.runs.iter().find(|r| r.id == run) else {
            return Ok(None);
        };
        let text = inner.run_outputs.get(&row.id).and_then(|location| {
            let (job, name) = location.strip_prefix("memory:")?.split_once('/')?;
            inner.outputs.get(job)?.get(name).cloned()
        });
        Ok(Some(text))
    }

    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        let mut inner = self.lock();
        let incident = incident::upserted(inner.incidents.get(&new.id), new);
        inner.incidents.insert(new.id.clone(), incident.clone());
        Ok(incident)
    }

    async fn move_incident(&self, id: &str, to: Transition, at: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let moved = inner
            .incidents
            .get(id)
            .and_then(|current| incident::moved(current, to, at));
        Ok(moved
            .map(|incident| inner.incidents.insert(id.to_string(), incident))
            .is_some())
    }

    async fn resolve_incidents(&self, job_id: &str, at: &str) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let mut n = 0;
        for current in inner.incidents.values_mut().filter(|i| i.job_id == job_id) {
            if let Some(resolved) = incident::moved(current, Transition::Recovered, at) {
                *current = resolved;
                n += 1;
            }
        }
        Ok(n)
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        let mut incidents: Vec<Incident> = self
            .lock()
            .incidents
            .values()
            .filter(|i| state.is_none_or(|s| i.state == s.as_str()))
            .cloned()
            .collect();
        incident::sort_newest_first(&mut incidents);
        Ok(incidents)
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        let inner = self.lock();
        let notes = inner.notes.get(job_id).into_iter().flat_map(|n| n.values());
        Ok(notes.cloned().collect())
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let notes = inner.notes.entry(note.job_id.clone()).or_default();
        let others = notes
            .values()
            .filter(|n| n.key != note.key)
            .map(Note::bytes)
            .sum();
        notepad::check(note, others).map_err(|e| StoreError::Refused(e.to_string()))?;
        notes.insert(note.key.clone(), note.clone());
        Ok(())
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let removed = inner.notes.get_mut(job_id).and_then(|n| n.remove(key));
        Ok(removed.is_some())
    }

    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        Ok(self.lock().pause.clone())
    }

    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        Ok(std::mem::replace(&mut inner.pause, pause.cloned()).is_some())
    }

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let heartbeat = &mut inner.heartbeat;
        match beat {
            Beat::Started { pid } => heartbeat.pid = Some(i64::from(*pid)),
            Beat::Alive(at) => {
                heartbeat.seen = true;
                heartbeat.alive_at = Some(*at);
            }
            Beat::PassSucceeded(at) => heartbeat.last_success = Some(*at),
            Beat::PassFailed(at, why) => heartbeat.last_error = Some((*at, why.clone())),
            Beat::Stopped => heartbeat.alive_at = None,
        }
        Ok(())
    }

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        Ok(self.lock().heartbeat.clone())
    }

    async fn describe(&self) -> Result<StoreInfo, StoreError> {
        Ok(StoreInfo {
            backend: "memory",
            location: "memory".into(),
            schema_version: None,
        })
    }
}
