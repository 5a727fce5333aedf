//! The scheduler: one pass (scan, claim, dispatch) and the execution of one run (run,
//! save, deliver, record), shared by `daemon`, `tick` and `run`. Exactly-once comes from
//! two guards taken before anything runs: the job's `next_run_at` moves forward under
//! the store lock, and the occurrence key is claimed in the ledger.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use jobs::due::{
    earliest_next_run, mark_completed, plan_pass, run_claim_owner, run_claim_ttl, Decision,
    ScanOptions,
};
use jobs::ledger::{occurrence_key, Claim, Ledger, RunEnd, RunSource, RunStatus};
use jobs::outbox::{NewOutboxItem, Outbox, OutboxItem, OutboxState};
use jobs::output::{save_missed_note, save_output, OutputDocument};
use jobs::{Context, Job, JobState, JobStore, JsonFileStore};

use crate::delivery::{self, Delivered, RunDelivery};
use crate::error::CliError;
use crate::home::{system_zone, Home};
use crate::process::{host_name, pid_alive};
use crate::redact::Redactor;
use crate::runner::{Activity, RunEnv, RunOutcome, RunResult, Runner};
use crate::settings::CronSettings;

/// What one finished run looked like, for logs and `hermes cron run`.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub job_id: String,
    pub job_name: String,
    pub occurrence: String,
    pub status: RunStatus,
    pub error: Option<String>,
    pub output_path: Option<PathBuf>,
    pub response: Option<String>,
    /// What delivery did ("local", "silent", "sent to telegram:…", or the failure).
    pub delivery: Option<String>,
}

/// A claimed occurrence waiting to be run, or a claimed outbox delivery waiting to be
/// retried: [`PendingRun::run`] carries it out.
pub struct PendingRun(PendingWork);

enum PendingWork {
    Run {
        job: Job,
        scheduled_at: DateTime<Utc>,
        row_id: i64,
        settings: CronSettings,
    },
    Redeliver(OutboxItem),
}

impl PendingRun {
    pub async fn run(self, scheduler: Arc<Scheduler>) -> RunReport {
        match self.0 {
            PendingWork::Run {
                job,
                scheduled_at,
                row_id,
                settings,
            } => {
                scheduler
                    .execute(
                        job,
                        Some(scheduled_at),
                        row_id,
                        RunSource::Scheduler,
                        settings,
                    )
                    .await
            }
            PendingWork::Redeliver(item) => scheduler.redeliver(item).await,
        }
    }
}

/// Outbox deliveries retried per pass, at most.
const OUTBOX_PER_PASS: usize = 50;

/// What one pass did.
pub struct PassReport {
    /// Runs claimed by this pass, to be spawned by the caller.
    pub pending: Vec<PendingRun>,
    /// The earliest next run among runnable jobs after the pass.
    pub next_wake: Option<DateTime<Utc>>,
    /// False when another scheduler held `.tick.lock`.
    pub ran: bool,
}

/// What a finished run changes in its job's record (SPEC §5.6).
struct StoreRecord {
    job_id: String,
    last_run_at: String,
    last_status: &'static str,
    error: Option<String>,
    delivery_error: Option<String>,
    source: RunSource,
}

impl StoreRecord {
    fn apply(&self, stored: &mut Job, ctx: &Context) {
        // The run is over: no scheduler needs to keep off the job any more.
        if stored
            .get("run_claim")
            .is_some_and(|claim| !claim.is_null())
        {
            stored.set("run_claim", Value::Null);
        }
        stored.set("last_run_at", json!(self.last_run_at));
        stored.set("last_status", json!(self.last_status));
        stored.set("last_error", json!(self.error));
        stored.set("last_delivery_error", json!(self.delivery_error));
        let streak = stored
            .get("failure_streak")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let streak = if self.error.is_some() { streak + 1 } else { 0 };
        stored.set("failure_streak", json!(streak));
        if self.source == RunSource::Scheduler {
            let repeat = stored.repeat();
            let used_up = repeat.times.is_some_and(|t| repeat.completed >= t);
            let one_shot = stored.schedule(ctx).is_ok_and(|s| !s.is_recurring());
            if (used_up || one_shot) && stored.state() != JobState::Paused {
                mark_completed(stored);
            }
        }
    }
}

/// How often a running one-shot's `run_claim` is refreshed (Python Hermes: every minute).
const RUN_CLAIM_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(60);

pub struct Scheduler {
    home: Home,
    /// Finished runs waiting to be written to jobs.json, and the right to write them.
    /// Runs that end together share one locked rewrite of the store instead of one each.
    records: Mutex<Vec<StoreRecord>>,
    flushing: Mutex<()>,
    store: JsonFileStore,
    ledger: Mutex<Ledger>,
    /// Deliveries that failed and are retried on later passes (same database).
    outbox: Arc<Mutex<Outbox>>,
    runner: Arc<dyn Runner>,
    host: String,
    /// The `run_claim.by` this process stamps on the one-shots it dispatches.
    claim_owner: String,
    running: Mutex<HashSet<String>>,
    permits: Option<Arc<Semaphore>>,
}

/// A fresh [`Context`] and settings: config.yaml is re-read on every pass and run.
fn load_context(home: &Home) -> Result<(Context, CronSettings), CliError> {
    let (ctx, config) = crate::home::load_context(home)?;
    Ok((ctx, CronSettings::from_config(&config)))
}

fn lock_poisoned<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs a blocking closure (file locks, SQLite) off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CliError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CliError::internal(format!("background task failed: {e}")))
}

impl Scheduler {
    pub fn open(home: Home, runner: Arc<dyn Runner>) -> Result<Arc<Scheduler>, CliError> {
        let cron_dir = home.cron_dir();
        std::fs::create_dir_all(&cron_dir).map_err(|e| {
            CliError::internal(format!("cannot create {}: {e}", cron_dir.display()))
        })?;
        let ledger = Ledger::open(&cron_dir.join("executions.db"))
            .map_err(|e| CliError::internal(e.to_string()))?;
        let outbox = Outbox::open(&cron_dir.join("executions.db"))
            .map_err(|e| CliError::internal(e.to_string()))?;
        let (_, settings) = load_context(&home)?;
        let store = JsonFileStore::new(&cron_dir);
        Ok(Arc::new(Scheduler {
            home,
            records: Mutex::new(Vec::new()),
            flushing: Mutex::new(()),
            store,
            ledger: Mutex::new(ledger),
            outbox: Arc::new(Mutex::new(outbox)),
            runner,
            host: host_name(),
            claim_owner: run_claim_owner(
                std::env::var("HERMES_MACHINE_ID").ok().as_deref(),
                &host_name(),
                std::process::id(),
            ),
            running: Mutex::new(HashSet::new()),
            permits: settings.max_parallel.map(|n| Arc::new(Semaphore::new(n))),
        }))
    }

    pub fn cron_dir(&self) -> PathBuf {
        self.home.cron_dir()
    }

    /// Marks ledger rows left `running` by dead processes of this host as interrupted.
    pub fn recover_interrupted(&self) -> Result<usize, CliError> {
        let ledger = lock_poisoned(&self.ledger);
        ledger
            .mark_interrupted(&self.host, Utc::now(), &pid_alive)
            .map_err(|e| CliError::internal(e.to_string()))
    }

    /// One scheduler pass. Returns at once when another scheduler holds `.tick.lock`.
    pub async fn pass(self: &Arc<Self>) -> Result<PassReport, CliError> {
        let this = Arc::clone(self);
        let planned = blocking(move || this.scan()).await??;
        let Some((tick_lock, planned, next_wake, settings)) = planned else {
            return Ok(PassReport {
                pending: Vec::new(),
                next_wake: None,
                ran: false,
            });
        };
        let (planned, redeliveries) = planned;
        let pending = planned
            .into_iter()
            .map(|(job, scheduled_at, row_id)| {
                PendingRun(PendingWork::Run {
                    job,
                    scheduled_at,
                    row_id,
                    settings: settings.clone(),
                })
            })
            .chain(
                redeliveries
                    .into_iter()
                    .map(|item| PendingRun(PendingWork::Redeliver(item))),
            )
            .collect();
        drop(tick_lock);
        Ok(PassReport {
            pending,
            next_wake,
            ran: true,
        })
    }

    /// The blocking half of a pass: tick lock, due scan under the store lock, ledger claims.
    #[allow(clippy::type_complexity)]
    fn scan(
        &self,
    ) -> Result<
        Option<(
            File,
            (Vec<(Job, DateTime<Utc>, i64)>, Vec<OutboxItem>),
            Option<DateTime<Utc>>,
            CronSettings,
        )>,
        CliError,
    > {
        let cron_dir = self.cron_dir();
        let lock_path = cron_dir.join(".tick.lock");
        let tick_lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| CliError::internal(format!("cannot open {}: {e}", lock_path.display())))?;
        match fs4::FileExt::try_lock(&tick_lock) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => return Ok(None),
            Err(fs4::TryLockError::Error(e)) => {
                return Err(CliError::internal(format!(
                    "cannot lock {}: {e}",
                    lock_path.display()
                )))
            }
        }
        let (ctx, settings) = load_context(&self.home)?;
        let options = ScanOptions {
            catch_up_missed: settings.catch_up_missed,
            claim_owner: &self.claim_owner,
            run_claim_ttl: run_claim_ttl(settings.inactivity_timeout.map(|t| t.as_secs())),
        };
        let mut planned = Vec::new();
        let retention = chrono::Duration::days(settings.completed_retention_days.max(0));
        // Most passes find nothing to do: decide that on an unlocked snapshot, so an idle
        // scheduler never takes the store lock nor rewrites jobs.json.
        let mut probe = self.store.load_scheduling_view(&ctx)?;
        let before = probe.len();
        let candidates: HashSet<String> = plan_pass(&mut probe, &ctx, options)
            .into_iter()
            .map(|p| p.job.id().to_string())
            .collect();
        prune_completed_one_shots(&mut probe, &ctx, retention);
        let mut next_wake = earliest_next_run(&probe, &ctx, options.run_claim_ttl);
        if probe.len() != before {
            // Pruning removes records: the whole store is rewritten.
            self.store.update_jobs(&ctx, &mut |jobs| {
                planned = plan_pass(jobs, &ctx, options);
                prune_completed_one_shots(jobs, &ctx, retention);
                next_wake = earliest_next_run(jobs, &ctx, options.run_claim_ttl);
                Ok(())
            })?;
        } else if !candidates.is_empty() {
            // The jobs the snapshot found due are decided again on fresh records under
            // the lock; every other record is left as it is. A job that became due in
            // between is the next pass's, which the wake-up below brings at once.
            let others: Vec<Job> = std::mem::take(&mut probe)
                .into_iter()
                .filter(|job| !candidates.contains(job.id()))
                .collect();
            let others_wake = earliest_next_run(&others, &ctx, options.run_claim_ttl);
            drop(others);
            let ids: HashSet<&str> = candidates.iter().map(String::as_str).collect();
            let mut fresh_wake = None;
            self.store.update_jobs_by_id(&ctx, &ids, &mut |jobs| {
                planned = plan_pass(jobs, &ctx, options);
                fresh_wake = earliest_next_run(jobs, &ctx, options.run_claim_ttl);
                Ok(())
            })?;
            next_wake = [others_wake, fresh_wake].into_iter().flatten().min();
        }
        let ledger = lock_poisoned(&self.ledger);
        let pid = std::process::id();
        let mut to_run = Vec::new();
        for item in planned {
            let job = item.job;
            let zone = job.zone(&ctx);
            let (scheduled_at, status, error) = match item.decision {
                Decision::Fire { scheduled_at, .. } => {
                    let busy = lock_poisoned(&self.running).contains(job.id())
                        || ledger
                            .is_running(job.id(), &self.host, &pid_alive)
                            .unwrap_or(false);
                    if busy {
                        (
                            scheduled_at,
                            RunStatus::Skipped,
                            Some("skipped (still running)".to_string()),
                        )
                    } else {
                        (scheduled_at, RunStatus::Running, None)
                    }
                }
                Decision::Missed { scheduled_at } => {
                    let when = schedules::format_instant(scheduled_at, zone);
                    if let Err(e) = save_missed_note(
                        &cron_dir.join("output"),
                        job.id(),
                        job.name(),
                        &when,
                        ctx.now,
                        zone,
                        settings.output_retention,
                    ) {
                        tracing::warn!(job = job.id(), "cannot write the missed note: {e}");
                    }
                    (
                        scheduled_at,
                        RunStatus::Missed,
                        Some(format!(
                            "missed: due at {when}, the scheduler was not running"
                        )),
                    )
                }
                Decision::SkippedLate { scheduled_at } => (
                    scheduled_at,
                    RunStatus::Skipped,
                    Some("skipped: late and catch-up is off".to_string()),
                ),
                Decision::Completed { scheduled_at } => {
                    tracing::info!(
                        job = job.id(),
                        scheduled = %scheduled_at,
                        "one-shot dispatched before by a run that never recorded its end; marked completed, not run again"
                    );
                    continue;
                }
                Decision::Broken { reason } => {
                    tracing::error!(job = job.id(), "cannot schedule job: {reason}");
                    continue;
                }
            };
            let occurrence = occurrence_key(job.id(), scheduled_at);
            let claim = Claim {
                job_id: job.id(),
                occurrence: &occurrence,
                source: RunSource::Scheduler,
                status,
                scheduled_at: Some(scheduled_at),
                started_at: ctx.now,
                pid,
                host: &self.host,
                error: error.as_deref(),
            };
            match ledger.claim(&claim) {
                Ok(Some(row)) if status == RunStatus::Running => {
                    lock_poisoned(&self.running).insert(job.id().to_string());
                    to_run.push((job, scheduled_at, row));
                }
                Ok(Some(_)) => {
                    tracing::info!(job = job.id(), %occurrence, outcome = status.as_str(), "{}", error.unwrap_or_default())
                }
                Ok(None) => {
                    tracing::info!(job = job.id(), %occurrence, "occurrence already in the ledger; not running it again")
                }
                Err(e) => {
                    tracing::error!(job = job.id(), %occurrence, "cannot claim occurrence, not running it: {e}")
                }
            }
        }
        if let Err(e) = ledger.prune(1000) {
            tracing::warn!("cannot prune the ledger: {e}");
        }
        drop(ledger);
        // Failed deliveries whose next attempt is due; claiming one marks it `sending`,
        // so no other scheduler sends it too.
        let outbox = lock_poisoned(&self.outbox);
        match outbox.release_orphans(&self.host, &pid_alive, ctx.now) {
            Ok((0, 0)) => {}
            Ok((released, closed)) => tracing::warn!(
                released,
                closed,
                "outbox rows left by a dead process: given back when nothing was in flight, closed as unknown when a request was"
            ),
            Err(e) => tracing::error!("cannot check the outbox for rows of dead processes: {e}"),
        }
        let redeliveries = outbox
            .claim_due(ctx.now, OUTBOX_PER_PASS, &self.host, pid)
            .unwrap_or_else(|e| {
                tracing::error!("cannot read the delivery outbox: {e}");
                Vec::new()
            });
        if let Ok(Some(due)) = outbox.earliest_due() {
            next_wake = Some(next_wake.map_or(due, |wake| wake.min(due)));
        }
        let _ = outbox.prune(ctx.now - chrono::Duration::days(7));
        drop(outbox);
        Ok(Some((
            tick_lock,
            (to_run, redeliveries),
            next_wake,
            settings,
        )))
    }

    /// Claims a manual run of a job (`hermes cron run`): its own occurrence key, the
    /// schedule untouched.
    pub fn claim_manual(&self, job: &Job, now: DateTime<Utc>) -> Result<i64, CliError> {
        if lock_poisoned(&self.running).contains(job.id()) {
            return Err(CliError::user(format!(
                "Job {} is already running",
                job.id()
            )));
        }
        let ledger = lock_poisoned(&self.ledger);
        if ledger
            .is_running(job.id(), &self.host, &pid_alive)
            .unwrap_or(false)
        {
            return Err(CliError::user(format!(
                "Job {} is already running; wait for it to finish",
                job.id()
            )));
        }
        let occurrence = format!("{}@manual-{}", job.id(), jobs::ledger::ledger_time(now));
        let claim = Claim {
            job_id: job.id(),
            occurrence: &occurrence,
            source: RunSource::Manual,
            status: RunStatus::Running,
            scheduled_at: None,
            started_at: now,
            pid: std::process::id(),
            host: &self.host,
            error: None,
        };
        let row = ledger
            .claim(&claim)
            .map_err(|e| CliError::internal(e.to_string()))?
            .ok_or_else(|| {
                CliError::user("a manual run was started at the same millisecond; try again")
            })?;
        lock_poisoned(&self.running).insert(job.id().to_string());
        Ok(row)
    }

    pub fn context(&self) -> Result<(Context, CronSettings), CliError> {
        load_context(&self.home)
    }

    /// Runs one claimed occurrence to the end: run, save, deliver, record.
    pub async fn execute(
        self: Arc<Self>,
        job: Job,
        scheduled_at: Option<DateTime<Utc>>,
        row_id: i64,
        source: RunSource,
        settings: CronSettings,
    ) -> RunReport {
        let _permit = match (&self.permits, source) {
            (Some(permits), RunSource::Scheduler) => Arc::clone(permits).acquire_owned().await.ok(),
            _ => None,
        };
        let started = Utc::now();
        let clock = Instant::now();
        let occurrence = scheduled_at.map_or_else(
            || format!("{}@manual", job.id()),
            |at| occurrence_key(job.id(), at),
        );
        let env = RunEnv {
            home: self.home.root.clone(),
            settings: settings.clone(),
            activity: Activity::new(),
        };
        let heartbeat = (source == RunSource::Scheduler && job.is_one_shot()).then(|| {
            let this = Arc::clone(&self);
            let id = job.id().to_string();
            tokio::spawn(async move { this.keep_run_claim_fresh(id).await })
        });
        let outcome = run_watched(self.runner.as_ref(), &job, &env).await;
        if let Some(heartbeat) = heartbeat {
            heartbeat.abort();
        }
        let report = {
            let this = Arc::clone(&self);
            let job = job.clone();
            let occurrence_key = occurrence.clone();
            blocking(move || {
                this.record(
                    &job,
                    &occurrence_key,
                    row_id,
                    source,
                    started,
                    outcome,
                    &settings,
                )
            })
            .await
            .unwrap_or_else(|e| RunReport {
                job_id: String::new(),
                job_name: String::new(),
                occurrence: occurrence.clone(),
                status: RunStatus::Error,
                error: Some(e.to_string()),
                output_path: None,
                response: None,
                delivery: None,
            })
        };
        lock_poisoned(&self.running).remove(job.id());
        tracing::info!(
            job = job.id(),
            occurrence = %occurrence,
            outcome = report.status.as_str(),
            duration_ms = clock.elapsed().as_millis() as u64,
            error = report.error.as_deref().unwrap_or(""),
            "run finished"
        );
        report
    }

    /// Save the output document, deliver, and record the run in the store and ledger.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        job: &Job,
        occurrence: &str,
        row_id: i64,
        source: RunSource,
        started: DateTime<Utc>,
        outcome: RunOutcome,
        settings: &CronSettings,
    ) -> RunReport {
        let (ctx, _) = load_context(&self.home).unwrap_or_else(|_| {
            (
                Context {
                    now: Utc::now(),
                    zone: system_zone(),
                    legacy_zone: system_zone(),
                },
                settings.clone(),
            )
        });
        let zone = job.zone(&ctx);
        let (result_text, error) = match &outcome.result {
            RunResult::Reply(text) if text.trim().is_empty() => (
                Err("Agent completed but produced empty response".to_string()),
                Some("Agent completed but produced empty response".to_string()),
            ),
            RunResult::Reply(text) | RunResult::Silent(text) => (Ok(text.clone()), None),
            RunResult::Failed(error) => (Err(error.clone()), Some(error.clone())),
        };
        // Secrets never reach the output document, the recorded error or a chat (§9).
        let redactor = Redactor::for_home(&self.home.root);
        let result_text = result_text
            .map(|text| redactor.redact(&text))
            .map_err(|e| redactor.redact(&e));
        let error = error.map(|e| redactor.redact(&e));
        let prompt = redactor.redact(&outcome.prompt);
        let schedule_display = job
            .schedule(&ctx)
            .map(|s| s.display().to_string())
            .unwrap_or_default();
        let doc = OutputDocument {
            job_id: job.id(),
            job_name: job.name(),
            schedule: &schedule_display,
            run_time: started,
            zone,
            prompt: &prompt,
            result: result_text.as_deref().map_err(String::as_str),
        };
        let output_path = match save_output(
            &self.cron_dir().join("output"),
            &doc,
            settings.output_retention,
        ) {
            Ok(path) => Some(path),
            Err(e) => {
                tracing::error!(job = job.id(), "cannot save the output document: {e}");
                None
            }
        };
        let delivered = match (&result_text, &outcome.result) {
            (Ok(_), RunResult::Silent(_)) => Delivered::Silent,
            (Ok(text), _) => Delivered::Reply(text),
            (Err(e), _) => Delivered::Failed(e),
        };
        let streak = job
            .get("failure_streak")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let last_run_at = schedules::format_instant(started, zone);
        // A manual run's occurrence is not unique across runs; its ledger row is.
        let key = match source {
            RunSource::Scheduler => occurrence.to_string(),
            RunSource::Manual => format!("{occurrence}#{row_id}"),
        };
        let expires = ctx.now
            + chrono::Duration::from_std(settings.delivery_retry)
                .unwrap_or(chrono::Duration::hours(6));
        // Each destination gets its outbox row before its first request (write-ahead):
        // if this process dies while delivering, a later pass sends what did not go
        // out, and never resends what may have.
        let track =
            |target: &str, payload: &str| -> Option<(i64, delivery::http::FlightRecorder)> {
                let item = NewOutboxItem {
                    occurrence: &key,
                    target,
                    job_id: job.id(),
                    run_at: &last_run_at,
                    payload,
                    sent_parts: 0,
                    error: "",
                    now: ctx.now,
                    first_retry: ctx.now + jobs::outbox::retry_delay(0),
                    expires_at: expires,
                };
                let row = lock_poisoned(&self.outbox)
                    .enqueue_claimed(&item, &self.host, std::process::id())
                    .map_err(|e| {
                        tracing::error!(
                            job = job.id(),
                            "cannot keep the delivery in the outbox: {e}"
                        )
                    })
                    .ok()
                    .flatten()?;
                Some((row, self.flight_recorder(row)))
            };
        let delivery = block_on(delivery::deliver_run(RunDelivery {
            home: &self.home.root,
            job,
            scheduled_at: scheduled_instant(occurrence).unwrap_or(started),
            result: delivered,
            failure_streak: if error.is_some() { streak + 1 } else { 0 },
            wrap_response: settings.wrap_response,
            track: Some(&track),
        }));
        if !delivery.settled.is_empty() {
            let outbox = lock_poisoned(&self.outbox);
            for settled in &delivery.settled {
                let state = match settled.outcome {
                    delivery::SettledAs::Sent => OutboxState::Sent,
                    delivery::SettledAs::Retry => OutboxState::Pending,
                    delivery::SettledAs::Failed => OutboxState::Failed,
                };
                let finished = outbox.finish(
                    settled.row,
                    state,
                    ctx.now,
                    settled.sent_parts,
                    settled.error.as_deref(),
                );
                if let Err(e) = finished {
                    tracing::error!(
                        job = job.id(),
                        "cannot record the delivery in the outbox: {e}"
                    );
                }
            }
        }
        if !delivery.retry_later.is_empty() {
            let outbox = lock_poisoned(&self.outbox);
            for pending in &delivery.retry_later {
                let item = NewOutboxItem {
                    occurrence: &key,
                    target: &pending.target,
                    job_id: job.id(),
                    run_at: &last_run_at,
                    payload: &pending.payload,
                    sent_parts: pending.sent_parts,
                    error: &pending.error,
                    now: ctx.now,
                    first_retry: ctx.now + jobs::outbox::retry_delay(0),
                    expires_at: expires,
                };
                if let Err(e) = outbox.enqueue(&item) {
                    tracing::error!(
                        job = job.id(),
                        "cannot keep the failed delivery for a retry: {e}"
                    );
                }
            }
        }
        let status = if error.is_some() {
            RunStatus::Error
        } else {
            RunStatus::Ok
        };
        let last_status = match (&error, &delivery.error) {
            (Some(_), _) => "error",
            (None, Some(_)) => "delivery_failed",
            (None, None) => "ok",
        };
        let delivery_error = delivery.error.clone();
        self.record_in_store(StoreRecord {
            job_id: job.id().to_string(),
            last_run_at,
            last_status,
            error: error.clone(),
            delivery_error,
            source,
        });
        let end = RunEnd {
            error: error.clone(),
            delivery: Some(delivery.summary.clone()),
            prompt_tokens: outcome.prompt_tokens,
            completion_tokens: outcome.completion_tokens,
        };
        if let Err(e) = lock_poisoned(&self.ledger).finish(row_id, status, Utc::now(), &end) {
            tracing::error!(job = job.id(), "cannot record the run in the ledger: {e}");
        }
        RunReport {
            job_id: job.id().to_string(),
            job_name: job.name().to_string(),
            occurrence: occurrence.to_string(),
            status,
            error,
            output_path,
            response: result_text.ok(),
            delivery: Some(delivery.summary),
        }
    }

    /// Retries one claimed outbox delivery and records the outcome: in the outbox, and —
    /// when it was the last open delivery of the job's last run — in the job, whose
    /// `delivery_failed` becomes `ok` with the delivery error cleared.
    async fn redeliver(self: Arc<Self>, item: OutboxItem) -> RunReport {
        let skip = usize::try_from(item.sent_parts).unwrap_or(0);
        // Every request is marked in the row while it is out, so a crash mid-retry
        // leaves a row another pass can tell apart: given back, or unknown.
        let result = delivery::http::recording_flights(
            self.flight_recorder(item.id),
            delivery::retry(&self.home.root, &item.target, &item.payload, skip),
        )
        .await;
        let this = Arc::clone(&self);
        let occurrence = item.occurrence.clone();
        let job_id = item.job_id.clone();
        blocking(move || this.finish_redelivery(item, result))
            .await
            .unwrap_or_else(|e| RunReport {
                job_id,
                job_name: "delivery retry".to_string(),
                occurrence,
                status: RunStatus::Error,
                error: Some(e.to_string()),
                output_path: None,
                response: None,
                delivery: None,
            })
    }

    /// Marks outbox row `id` in flight while each of its requests is out, and counts the
    /// parts that arrived.
    fn flight_recorder(&self, id: i64) -> delivery::http::FlightRecorder {
        let outbox = Arc::clone(&self.outbox);
        Arc::new(move |flight| {
            let outbox = lock_poisoned(&outbox);
            let recorded = match flight {
                delivery::http::Flight::Out => outbox.request_going_out(id),
                delivery::http::Flight::Back { delivered } => {
                    outbox.answer_came_back(id, delivered)
                }
            };
            if let Err(e) = recorded {
                tracing::warn!(row = id, "cannot mark the outbox row: {e}");
            }
        })
    }

    fn finish_redelivery(
        &self,
        item: OutboxItem,
        result: Result<(), (delivery::http::Failure, usize)>,
    ) -> RunReport {
        use delivery::http::Failure;
        let ctx = load_context(&self.home).map(|(ctx, _)| ctx).ok();
        let now = ctx.as_ref().map_or_else(Utc::now, |c| c.now);
        let shown = delivery::target::Destination::from_key(&item.target)
            .map_or_else(|| item.target.clone(), |d| delivery::shown(&d));
        let (state, parts, error) = match &result {
            Ok(()) => (OutboxState::Sent, item.sent_parts, None),
            Err((Failure::Transient(m), n)) if now < item.expires_at => {
                (OutboxState::Pending, *n as i64, Some(m.clone()))
            }
            Err((Failure::Transient(m), n)) => (OutboxState::Expired, *n as i64, Some(m.clone())),
            Err((Failure::Final(m) | Failure::Unknown(m), n)) => {
                (OutboxState::Failed, *n as i64, Some(m.clone()))
            }
        };
        let outbox = lock_poisoned(&self.outbox);
        if let Err(e) = outbox.finish(item.id, state, now, parts, error.as_deref()) {
            tracing::error!(job = %item.job_id, "cannot record the delivery retry: {e}");
        }
        let settled = state == OutboxState::Sent
            && outbox.open_for_occurrence(&item.occurrence).unwrap_or(1) == 0;
        drop(outbox);
        tracing::info!(
            job = %item.job_id, occurrence = %item.occurrence, target = %shown,
            outcome = state.as_str(), error = error.as_deref().unwrap_or(""),
            "delivery retried from the outbox"
        );
        if let (true, Some(ctx)) = (settled, &ctx) {
            self.clear_delivery_failure(&item, ctx);
        }
        RunReport {
            job_id: item.job_id.clone(),
            job_name: format!("delivery retry to {shown}"),
            occurrence: item.occurrence.clone(),
            status: if state == OutboxState::Sent {
                RunStatus::Ok
            } else {
                RunStatus::Error
            },
            error,
            output_path: None,
            response: None,
            delivery: None,
        }
    }

    /// `delivery_failed` → `ok` for the job whose last run this delivery belonged to.
    fn clear_delivery_failure(&self, item: &OutboxItem, ctx: &Context) {
        let instant = |text: &str| DateTime::parse_from_rfc3339(text).ok();
        let applies = |job: &Job| {
            job.id() == item.job_id
                && job.text_field("last_status") == Some("delivery_failed")
                && job.text_field("last_run_at").and_then(instant)
                    == item.run_at.as_deref().and_then(instant)
        };
        // Decide on an unlocked read first: most retries have nothing to change.
        let Ok(jobs) = self.store.load_jobs(ctx) else {
            return;
        };
        if !jobs.iter().any(&applies) {
            return;
        }
        let result = self.store.update_jobs(ctx, &mut |jobs| {
            if let Some(job) = jobs.iter_mut().find(|j| applies(j)) {
                job.set("last_status", json!("ok"));
                job.set("last_delivery_error", Value::Null);
            }
            Ok(())
        });
        if let Err(e) = result {
            tracing::error!(job = %item.job_id, "cannot record the delivered retry in jobs.json: {e}");
        }
    }

    /// Refreshes the `run_claim` of a running one-shot every minute, as Python Hermes
    /// does, so a run longer than the claim's lifetime is not taken for a dead one by
    /// another scheduler on the store. Only a claim this process stamped is refreshed.
    async fn keep_run_claim_fresh(self: Arc<Self>, job_id: String) {
        let mut every = tokio::time::interval(RUN_CLAIM_HEARTBEAT);
        every.tick().await;
        loop {
            every.tick().await;
            let this = Arc::clone(&self);
            let id = job_id.clone();
            let refreshed = blocking(move || this.refresh_run_claim(&id)).await;
            if let Ok(Err(e)) = refreshed {
                tracing::warn!(job = %job_id, "cannot refresh the run claim: {e}");
            }
        }
    }

    fn refresh_run_claim(&self, job_id: &str) -> Result<(), CliError> {
        let (ctx, _) = load_context(&self.home)?;
        let ids = HashSet::from([job_id]);
        self.store.update_jobs_by_id(&ctx, &ids, &mut |jobs| {
            for job in jobs.iter_mut() {
                let ours = job
                    .get("run_claim")
                    .and_then(|claim| claim.get("by"))
                    .and_then(Value::as_str)
                    == Some(self.claim_owner.as_str());
                if ours {
                    let at = schedules::format_instant(ctx.now, job.zone(&ctx));
                    job.set("run_claim", json!({"at": at, "by": self.claim_owner}));
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Queues a run's bookkeeping and writes every queued one in a single store update,
    /// unless another thread is already writing (it picks this one up before it stops).
    fn record_in_store(&self, record: StoreRecord) {
        lock_poisoned(&self.records).push(record);
        loop {
            {
                let Ok(_writer) = self.flushing.try_lock() else {
                    return;
                };
                loop {
                    let batch = std::mem::take(&mut *lock_poisoned(&self.records));
                    if batch.is_empty() {
                        break;
                    }
                    self.write_records(&batch);
                }
            }
            // A record queued after the last take but before the writer stepped down
            // would otherwise wait for the next run: look once more.
            if lock_poisoned(&self.records).is_empty() {
                return;
            }
        }
    }

    fn write_records(&self, batch: &[StoreRecord]) {
        let ctx = match load_context(&self.home) {
            Ok((ctx, _)) => ctx,
            Err(e) => {
                tracing::error!("cannot record {} run(s) in jobs.json: {e}", batch.len());
                return;
            }
        };
        let started = std::time::Instant::now();
        let ids: HashSet<&str> = batch.iter().map(|r| r.job_id.as_str()).collect();
        let result = self.store.update_jobs_by_id(&ctx, &ids, &mut |jobs| {
            for record in batch {
                // A job removed while it ran has nothing left to record in the store.
                if let Some(stored) = jobs.iter_mut().find(|j| j.id() == record.job_id) {
                    record.apply(stored, &ctx);
                }
            }
            Ok(())
        });
        match result {
            Ok(()) => tracing::debug!(
                runs = batch.len(),
                ms = started.elapsed().as_millis() as u64,
                "recorded runs in jobs.json"
            ),
            Err(e) => tracing::error!("cannot record {} run(s) in jobs.json: {e}", batch.len()),
        }
    }

    /// Records this process's unfinished runs as interrupted (shutdown after the drain).
    pub fn mark_own_running_interrupted(&self) -> Result<usize, CliError> {
        let own = i64::from(std::process::id());
        let alive = |pid: i64| pid != own && pid_alive(pid);
        lock_poisoned(&self.ledger)
            .mark_interrupted(&self.host, Utc::now(), &alive)
            .map_err(|e| CliError::internal(e.to_string()))
    }
}

/// The scheduled instant of an occurrence key `<job_id>@<instant>` (none for manual runs).
fn scheduled_instant(occurrence: &str) -> Option<DateTime<Utc>> {
    let (_, at) = occurrence.split_once('@')?;
    DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Drives a future to completion from the blocking half of a run (`record` runs under
/// `spawn_blocking`, where the runtime's handle may block).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(future),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("start a runtime for delivery")
            .block_on(future),
    }
}

/// Runs the job, stopping it when it shows no activity for the configured time.
async fn run_watched(runner: &dyn Runner, job: &Job, env: &RunEnv) -> RunOutcome {
    let Some(limit) = env.settings.inactivity_timeout else {
        return runner.run(job, env).await;
    };
    let run = runner.run(job, env);
    tokio::pin!(run);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
    loop {
        tokio::select! {
            outcome = &mut run => return outcome,
            _ = tick.tick() => {
                let idle = env.activity.idle_millis();
                if idle >= limit.as_millis() as i64 {
                    return RunOutcome::failed(
                        job.prompt().to_string(),
                        format!(
                            "stopped after {}s without activity (HERMES_CRON_TIMEOUT={}); last activity {}s ago",
                            limit.as_secs(), limit.as_secs(), idle / 1000
                        ),
                    );
                }
            }
        }
    }
}

/// Drops completed one-shots whose last run is older than the retention.
fn prune_completed_one_shots(jobs: &mut Vec<Job>, ctx: &Context, retention: chrono::Duration) {
    jobs.retain(|job| {
        let one_shot = job.schedule(ctx).is_ok_and(|s| !s.is_recurring());
        let old = job
            .last_run_at(ctx)
            .or_else(|| job.instant("created_at", ctx))
            .is_some_and(|t| t < ctx.now - retention);
        !(one_shot && job.state() == JobState::Completed && old)
    });
}

/// Writes one of the small ticker files (`ticker_heartbeat` etc.) atomically.
pub fn write_ticker_file(cron_dir: &Path, name: &str, text: &str) {
    if let Err(e) = jobs::store::write_atomic(&cron_dir.join(name), text.as_bytes()) {
        tracing::warn!("cannot write {name}: {e}");
    }
}
