//! The scheduler as a library: [`Scheduler::new`] takes its parts (store, clock, runner,
//! delivery) and [`run`] drives it until a shutdown future completes. `hermes cron
//! daemon`, `hermes cron tick`, `hermes cron run` and the tests build it the same way.
//! It is split by the life of an occurrence, one file each:
//!
//! * [`claim`] — one pass: the store decides what is due and claims it before anything
//!   runs (a crash can never fire an occurrence twice);
//! * [`execute`] — run one claimed occurrence, stopping it when it goes silent;
//! * [`reports`] — record what a run reports it changed beyond its outcome (a monitor
//!   job's new output), while it runs;
//! * [`record`] — save its output document, deliver it (write-ahead in the outbox) and
//!   record the outcome in the job and the ledger;
//! * [`aftermath`] — what the outcome does beyond that: an unreachable model's re-runs,
//!   a quota hold, a blocked configuration's one alert;
//! * [`overlap`] — a job's `overlap` policy: replace the running run, or run one
//!   queued occurrence after it;
//! * [`alert`] — group failures into incidents and alert once per incident;
//! * [`cancel`] — stop a run on request, wherever it runs, and record it `cancelled`;
//! * [`budget`] — a run's runtime cap, the global spend caps and their one notice;
//! * [`chain`] — claim the runs of jobs chained after runs that ended (`after`);
//! * [`backfill`] — run the past occurrences of a window, each once (`hermes cron backfill`);
//! * [`redeliver`] — retry, on later passes, deliveries that failed for a passing reason;
//! * [`resend`] — deliver a finished run's stored output again (`hermes cron redeliver`);
//! * [`daemon`] — the loop: sleep until the next due instant, wake on store changes,
//!   stop gracefully;
//! * [`observe`] — the seam that tells an observer (metrics) what happened;
//! * [`settings`] — its settings from config.yaml and the environment, read per pass.
//!
//! It never reads the wall clock (only its [`Clock`]) and never touches a file of the
//! store (only its [`Store`]).

mod aftermath;
mod alert;
mod backfill;
mod budget;
mod cancel;
mod chain;
mod claim;
mod daemon;
mod execute;
mod reports;
pub use reports::StoreReports;
mod observe;
mod overlap;
mod record;
mod redeliver;
mod resend;
pub use runner::settings;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use jobs::ledger::RunStatus;
use jobs::store::Store;
use jobs::{Context, Job, JobError, StoreError};

use crate::clock::Clock;
use crate::config::ConfigError;
use crate::runner::Runner;
use crate::world::World;
use settings::CronSettings;

pub use backfill::{BackfillOccurrence, Backfilled};
pub use daemon::run;
pub use observe::Observer;

/// The delivery crate owns its trait (and the boxed future its calls return); the
/// scheduler holds an `Arc<dyn Delivery>`.
pub use crate::delivery::{BoxFuture, Delivery};

/// Why the scheduler could not do what was asked. Every message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// A manual run of a job that has a run going in this process.
    #[error("Job {0} is already running")]
    AlreadyRunning(String),
    /// config.yaml cannot be read (the scheduler reads it for every pass and run).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store refused or failed (a manual run of a job running on another host is
    /// [`JobError::Running`]).
    #[error(transparent)]
    Job(#[from] JobError),
}

impl From<StoreError> for SchedulerError {
    fn from(e: StoreError) -> SchedulerError {
        SchedulerError::Job(e.into())
    }
}

/// Everything a scheduler is made of.
pub struct Parts {
    /// The Hermes home: config.yaml, `.env`, skills and scripts (never the store).
    pub home: PathBuf,
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub runner: Arc<dyn Runner>,
    pub delivery: Arc<dyn Delivery>,
    /// `None`: read from the home's config.yaml and environment on every pass and run,
    /// so an edit applies without a restart. Tests fix them.
    pub settings: Option<CronSettings>,
    /// The `run_claim.by` this process stamps on the one-shots it dispatches (Python
    /// Hermes' `HERMES_MACHINE_ID`, else `<host>:<pid>`).
    pub claim_owner: String,
    /// Told what runs, fires, deliveries and passes did (the API's `/metrics`); `None`
    /// counts nothing.
    pub observer: Option<Arc<dyn Observer>>,
}

pub struct Scheduler {
    parts: Parts,
    /// Ids of the jobs with a run going in this process: a new occurrence of one is
    /// recorded as skipped, and a manual run of one is refused. Held only for an insert,
    /// a removal or a copy; never while another lock of this struct is taken.
    running: Mutex<Running>,
    /// Finished runs waiting to be written to the store. Runs that end together share
    /// one store write. Taken after `flushing` when both are held.
    records: Mutex<Vec<record::JobRecord>>,
    /// The right to write `records` (held by one task at a time, with `try_lock`, across
    /// the store write). Lock order: `flushing`, then `records`.
    flushing: tokio::sync::Mutex<()>,
    /// `cron.max_parallel_jobs` permits for scheduled runs (`None`: unbounded).
    permits: Option<Arc<Semaphore>>,
    /// Scheduled runs handed out by passes that wait for a permit: the slots they will
    /// take are not free for a shared store's work sharing.
    queued: Arc<AtomicUsize>,
    /// Manual runs started while the daemon runs ([`Scheduler::start_now`], the API's
    /// "run now"): the daemon drains them with its own on shutdown. Held only to spawn
    /// into, reap or take out.
    manual: Mutex<JoinSet<RunReport>>,
    /// The global pause was logged since it was engaged (logged once per engagement).
    pause_noted: std::sync::atomic::AtomicBool,
    /// The chained jobs as last read, with the store's change mark before that read
    /// and when it was read: passes reuse them while no job changed ([`chain`]).
    chained: Mutex<Option<chain::Chained>>,
    /// The runs going in this process, each with how it is told to stop: one look at
    /// the store a second serves them all ([`cancel`]).
    cancels: cancel::CancelWatch,
    /// The home's files as passes and runs see them, read again when one changes.
    world: crate::world::WorldCache,
}

/// What one finished run looked like (declared beside the job service, which hands it
/// to the doors).
pub use crate::run_report::RunReport;

/// Work a pass claimed: an occurrence to run or a kept delivery to retry.
pub enum Pending {
    Run(execute::ClaimedRun),
    Redeliver(jobs::outbox::OutboxItem),
}

impl Pending {
    /// Carries the work out to its end.
    pub async fn run(self, scheduler: Arc<Scheduler>) -> RunReport {
        match self {
            Pending::Run(claimed) => scheduler.execute(claimed).await,
            Pending::Redeliver(item) => scheduler.redeliver(item).await,
        }
    }
}

/// What one pass did.
pub struct PassReport {
    /// Work claimed by this pass, for the caller to spawn.
    pub pending: Vec<Pending>,
    /// Outcomes this pass recorded without running anything (a missed one-shot, a
    /// skipped occurrence).
    pub recorded: Vec<RunReport>,
    /// The earliest next run or delivery retry after the pass.
    pub next_wake: Option<DateTime<Utc>>,
    /// False when another scheduler was in the middle of a pass on the store.
    pub ran: bool,
    /// Other hosts on the store hold occurrences waiting for a run slot: pass again as
    /// soon as one frees here.
    pub backlog: bool,
}

/// The jobs with runs going in this process, counted: under `overlap: replace` a job's
/// new run starts while its replaced one is still being stopped.
#[derive(Default)]
pub(crate) struct Running(std::collections::HashMap<String, usize>);

impl Running {
    pub(crate) fn insert(&mut self, id: String) {
        *self.0.entry(id).or_default() += 1;
    }

    pub(crate) fn remove(&mut self, id: &str) {
        if let Some(n) = self.0.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(id);
            }
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// The ids, for a pass.
    pub(crate) fn ids(&self) -> HashSet<String> {
        self.0.keys().cloned().collect()
    }
}

/// A scheduled run waiting for a run slot, counted in [`Scheduler::free_slots`] until
/// it gets one or is dropped.
pub(crate) struct Queued(Arc<AtomicUsize>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Scheduler {
    pub fn new(parts: Parts) -> Result<Arc<Scheduler>, SchedulerError> {
        let settings = match &parts.settings {
            Some(settings) => settings.clone(),
            None => CronSettings::from_config(
                &crate::home::Home {
                    root: parts.home.clone(),
                }
                .config()?,
            ),
        };
        let home = parts.home.clone();
        Ok(Arc::new(Scheduler {
            permits: settings.max_parallel.map(|n| Arc::new(Semaphore::new(n))),
            queued: Arc::new(AtomicUsize::new(0)),
            parts,
            running: Mutex::new(Running::default()),
            records: Mutex::new(Vec::new()),
            flushing: tokio::sync::Mutex::new(()),
            manual: Mutex::new(JoinSet::new()),
            pause_noted: std::sync::atomic::AtomicBool::new(false),
            chained: Mutex::new(None),
            cancels: cancel::CancelWatch::default(),
            world: crate::world::WorldCache::new(&home),
        }))
    }

    /// Scheduled runs this process could start at once (`None`: no limit): the free
    /// permits less the runs already handed out that wait for one.
    pub(crate) fn free_slots(&self) -> Option<usize> {
        self.permits.as_ref().map(|permits| {
            permits
                .available_permits()
                .saturating_sub(self.queued.load(Ordering::Relaxed))
        })
    }

    /// Counts a scheduled run handed out until it holds a permit (nothing to count
    /// without a limit).
    fn enqueue(&self) -> Option<Queued> {
        self.permits.as_ref()?;
        self.queued.fetch_add(1, Ordering::Relaxed);
        Some(Queued(Arc::clone(&self.queued)))
    }

    pub fn store(&self) -> &dyn Store {
        &*self.parts.store
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.parts.clock.now()
    }

    /// Tells the observer, when there is one.
    fn observe(&self, event: impl FnOnce(&dyn Observer)) {
        if let Some(observer) = &self.parts.observer {
            event(observer.as_ref());
        }
    }

    /// "Now", the zones and the settings for one pass or run: the home's config is read
    /// afresh, the time comes from the clock.
    pub fn context(&self) -> Result<(Context, CronSettings), SchedulerError> {
        self.loaded().map(|(ctx, settings, _)| (ctx, settings))
    }

    /// [`Scheduler::context`] with the world it was read from, for a run to pass down:
    /// the home's files are read again only when one of them changed ([`crate::world`]).
    fn loaded(&self) -> Result<(Context, CronSettings, Arc<World>), SchedulerError> {
        let world = match &self.parts.settings {
            // Fixed settings (tests): every time in UTC.
            Some(settings) => Arc::new(World::fixed(&self.parts.home, settings.clone())),
            None => self.world.get()?,
        };
        let ctx = Context {
            now: self.now(),
            zone: world.zone,
            legacy_zone: world.legacy_zone,
        };
        Ok((ctx, world.settings.clone(), world))
    }

    /// The context for bookkeeping after a run: a config that became unreadable while
    /// the job ran must not lose the run's record.
    fn context_or_default(&self, settings: &CronSettings) -> (Context, CronSettings) {
        self.context().unwrap_or_else(|_| {
            let zone = crate::home::system_zone();
            let ctx = Context {
                now: self.now(),
                zone,
                legacy_zone: zone,
            };
            (ctx, settings.clone())
        })
    }

    /// Runs recorded `running` by dead processes of this host become `interrupted`.
    pub async fn recover_interrupted(&self) -> Result<usize, SchedulerError> {
        let n = self.store().interrupt_dead_runs(self.now(), false).await?;
        self.observe_interrupted(n);
        Ok(n)
    }

    fn observe_interrupted(&self, n: usize) {
        for _ in 0..n {
            self.observe(|o| o.run_ended(&RunStatus::Interrupted));
        }
    }

    /// After a shutdown's drain: this process's unfinished runs become `interrupted`.
    pub async fn interrupt_own_runs(&self) -> Result<usize, SchedulerError> {
        let n = self.store().interrupt_dead_runs(self.now(), true).await?;
        self.observe_interrupted(n);
        Ok(n)
    }

    /// One pass, then every run it claimed, to the end (`hermes cron tick`).
    pub async fn tick(self: &Arc<Self>) -> Result<Option<Vec<RunReport>>, SchedulerError> {
        let report = self.pass().await?;
        if !report.ran {
            return Ok(None);
        }
        let mut handles = Vec::new();
        for pending in report.pending {
            handles.push(tokio::spawn(pending.run(Arc::clone(self))));
        }
        let mut reports = report.recorded;
        for handle in handles {
            match handle.await {
                Ok(report) => reports.push(report),
                Err(e) => tracing::error!("a run failed to complete: {e}"),
            }
        }
        Ok(Some(reports))
    }

    /// Runs a job now, outside its schedule (`hermes cron run`): its own occurrence,
    /// the schedule untouched, through the same execution and record as a fire.
    pub async fn run_now(self: &Arc<Self>, job: Job) -> Result<RunReport, SchedulerError> {
        let claimed = self.claim_manual(job).await?;
        Ok(Arc::clone(self).execute(claimed).await)
    }

    /// Starts a job now, outside its schedule, and returns once its run is claimed in
    /// the ledger (its id); the run goes on in the background and the daemon drains it
    /// on shutdown. Same claim and refusals as [`Scheduler::run_now`]. Called within the
    /// daemon's runtime.
    pub async fn start_now(self: &Arc<Self>, job: Job) -> Result<i64, SchedulerError> {
        let claimed = self.claim_manual(job).await?;
        Ok(self.spawn_manual(claimed))
    }

    /// Runs `job` (as the replayed run was asked: its prompt and model) now, as a
    /// `replay` of run `replay_of`, and waits for its outcome (`hermes cron replay`).
    pub async fn replay_now(
        self: &Arc<Self>,
        job: Job,
        replay_of: i64,
    ) -> Result<RunReport, SchedulerError> {
        let claimed = self.claim_replay(job, replay_of).await?;
        Ok(Arc::clone(self).execute(claimed).await)
    }

    /// [`Scheduler::replay_now`] in the background, as [`Scheduler::start_now`] starts a
    /// run: returns the new run's id once it is claimed.
    pub async fn start_replay(
        self: &Arc<Self>,
        job: Job,
        replay_of: i64,
    ) -> Result<i64, SchedulerError> {
        let claimed = self.claim_replay(job, replay_of).await?;
        Ok(self.spawn_manual(claimed))
    }

    /// A manual claim that is a replay of run `replay_of`: its ledger row says so at
    /// once (`source: replay`, `replay_of`).
    async fn claim_replay(
        &self,
        job: Job,
        replay_of: i64,
    ) -> Result<execute::ClaimedRun, SchedulerError> {
        let mut claimed = self.claim_manual(job).await?;
        claimed.source = jobs::ledger::RunSource::Replay;
        claimed.replay_of = Some(replay_of);
        let request = jobs::ledger::RunRequest {
            prompt: Some(claimed.job.prompt().to_string()),
            model: claimed.job.model().map(str::to_string),
            replay_of: Some(replay_of),
        };
        if let Err(e) = self.store().note_run_request(claimed.run, &request).await {
            // Not run unmarked: the ledger would call it an ordinary manual run.
            lock(&self.running).remove(claimed.job.id());
            let end = jobs::ledger::RunEnd {
                error: Some(format!("cannot mark the run as a replay: {e}")),
                ..Default::default()
            };
            let _ = self
                .store()
                .finish_run(claimed.run, RunStatus::Error, self.now(), &end)
                .await;
            return Err(e.into());
        }
        Ok(claimed)
    }

    /// Runs a claimed manual run in the background (drained by the daemon on shutdown);
    /// returns its ledger row.
    fn spawn_manual(self: &Arc<Self>, claimed: execute::ClaimedRun) -> i64 {
        let run = claimed.run;
        let mut manual = lock(&self.manual);
        while manual.try_join_next().is_some() {}
        manual.spawn(Arc::clone(self).execute(claimed));
        run
    }
}
