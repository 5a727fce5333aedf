//! The one door to persistence: every read and write of jobs, occurrence claims and the
//! run ledger, the delivery outbox, output documents, failure incidents, job notepads,
//! the global pause and the scheduler's heartbeat goes through [`Store`], the seven rooms
//! of this file ([`JobRecords`], [`JobViews`], [`RunLedger`], [`Outbox`], [`Outputs`],
//! [`Notes`], [`Control`]). Backends implement them, one directory each with one file per room —
//! [`FileStore`] (jobs.json shared with Python Hermes, `executions.db`, `output/`),
//! [`PgStore`] (several hosts on one database) and [`MemoryStore`] (unit tests) — and
//! nothing outside them knows where or how anything is kept; `conformance/` holds the
//! one suite every backend passes, a module per room.

pub mod estop;
mod file;
mod memory;
mod postgres;
mod transfer;

#[cfg(test)]
mod conformance;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

pub use file::{FileStore, HomeEstop};
pub use memory::MemoryStore;
pub use postgres::PgStore;
pub use transfer::{export_jobs_json, import_jobs_json, Imported};

use crate::jsonjobs::listing::JobSummary;
pub use crate::jsonjobs::listing::ListedJob;
use crate::ledger::incident::{Incident, IncidentState, NewIncident, Transition};
use crate::ledger::notepad::Note;
use crate::ledger::outbox::{NewOutboxItem, OutboxItem, OutboxState};
use crate::ledger::output::OutputDocument;
use crate::ledger::spend::Spend;
use crate::ledger::{
    occurrence_key, CancelTarget, RunEnd, RunRequest, RunRow, RunSource, RunStatus,
};
use crate::lifecycle::JobError;
use crate::model::due::{Decision, Planned, ScanOptions};
use crate::model::fields::Layout;
use crate::model::job::{Context, Job, JobState, NormalizedJob};
use crate::model::overlap::Overlap;
use crate::store::estop::GlobalPause;

/// Why the store could not do what was asked. Backend-neutral: the message names what
/// could not be read or reached and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stored jobs exist but cannot be read; nothing was written.
    #[error("{0}")]
    Unreadable(String),
    /// The store could not be reached or written (I/O, permissions, a database down).
    #[error("{0}")]
    Unavailable(String),
    /// An id that cannot name anything in the store (e.g. not a safe path component).
    #[error("{0}")]
    Refused(String),
}

/// Who this process is, as the store records it on the runs and deliveries it claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `HERMES_MACHINE_ID`, else the host name.
    pub host: String,
    pub pid: u32,
}

/// Whether a process of this host is still alive (a claim of a dead one is stale).
pub type Liveness = Arc<dyn Fn(i64) -> bool + Send + Sync>;

/// What one scheduler pass asks the store to decide and claim.
#[derive(Debug, Clone, Copy)]
pub struct DueScan<'a> {
    pub options: ScanOptions<'a>,
    /// Completed one-shots whose last run is older than this are removed.
    pub completed_retention: chrono::Duration,
    /// Jobs this process is running now: a new occurrence of one is skipped, never run
    /// beside the old one.
    pub running_here: &'a HashSet<String>,
    /// Runs this process could start at once (`None`: no limit). A store shared by
    /// several hosts hands a process with free slots occurrences that others claimed but
    /// cannot start yet; the others ignore it.
    pub free_slots: Option<usize>,
}

/// What became of one due job in a pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// Claimed for this process: run it. `run` is its ledger row.
    Run { run: i64 },
    /// Recorded without running (skipped, missed) with this status and reason.
    Recorded { status: RunStatus, reason: String },
    /// Another process recorded this occurrence first: nothing to do.
    Taken,
    /// Nothing recorded in the ledger (a one-shot settled as completed, a broken schedule).
    Settled,
    /// The ledger could not be written: the occurrence is not run.
    Failed { error: String },
}

/// One due job of a pass: the job as the pass left it, what the due scan decided and
/// what the claim came to.
#[derive(Debug, Clone)]
pub struct Occurrence {
    pub job: Job,
    pub decision: Decision,
    pub claimed: Claimed,
}

/// The result of [`JobRecords::claim_due`].
#[derive(Debug, Default)]
pub struct DuePass {
    pub occurrences: Vec<Occurrence>,
    /// The earliest next run among runnable jobs after the pass (deliveries aside).
    pub next_wake: Option<DateTime<Utc>>,
    /// False when another scheduler was in the middle of a pass on this store: nothing
    /// was decided.
    pub ran: bool,
    /// "Now" by the store's clock when it keeps its own (a database), `None` when the
    /// pass decided by the caller's. The caller sleeps by the same clock.
    pub decided_at: Option<DateTime<Utc>>,
    /// Other processes hold claimed occurrences they have not started (they wait for a
    /// run slot there): pass again when a slot frees here. Always false on a store only
    /// one host uses.
    pub backlog: bool,
}

impl DuePass {
    /// A pass that ran on a store one host uses, deciding by the caller's clock.
    pub fn decided(occurrences: Vec<Occurrence>, next_wake: Option<DateTime<Utc>>) -> DuePass {
        DuePass {
            occurrences,
            next_wake,
            ran: true,
            decided_at: None,
            backlog: false,
        }
    }
}

/// Which jobs a page of the listing holds ([`JobRecords::job_page`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageQuery {
    /// Jobs skipped before the page, in store order.
    pub offset: usize,
    /// The most jobs on the page (0: none, only the count).
    pub limit: usize,
    /// Completed jobs too (`list --all`); otherwise they are left out.
    pub completed: bool,
    /// Only jobs in one of these states (none: any).
    pub states: Vec<JobState>,
    /// Only jobs whose id or name contains this text, ignoring case.
    pub search: Option<String>,
    /// Only jobs that wait on another job's runs (`after` set): what a pass looks at for
    /// chains, without reading the others.
    pub chained: bool,
}

impl PageQuery {
    /// No job, only the count of every one.
    pub fn count_all() -> PageQuery {
        PageQuery {
            completed: true,
            ..PageQuery::default()
        }
    }

    /// Whether `job` is one the query lists (offset and limit aside).
    pub fn matches(&self, job: &Job) -> bool {
        let state = job.state();
        let search = self.search.as_deref().map(str::to_lowercase);
        (self.completed || state != JobState::Completed)
            && (self.states.is_empty() || self.states.contains(&state))
            && (!self.chained || job.get("after").is_some_and(serde_json::Value::is_object))
            && search.is_none_or(|text| {
                job.id().to_lowercase().contains(&text) || job.name().to_lowercase().contains(&text)
            })
    }
}

/// Writes `jobs` as `list --json` shows them ([`Job::normalized`]), each with `extras`,
/// separated by commas: a page of the listing ([`JobRecords::job_page`]).
pub fn write_jobs_normalized(
    ctx: &Context,
    jobs: Vec<Job>,
    extras: &[ExtraField],
    out: &mut Vec<u8>,
) -> Result<(), StoreError> {
    let mut jobs = jobs;
    write_normalized(ctx, &|_| true, extras, out, &mut |each| {
        std::mem::take(&mut jobs).into_iter().for_each(each);
        Ok(())
    })
}

/// A page of jobs and the number of jobs that match in all.
#[derive(Debug, Clone, Default)]
pub struct JobPage {
    pub jobs: Vec<Job>,
    pub total: usize,
}

impl JobPage {
    /// The page `query` asks for, out of every job in store order.
    pub fn of(jobs: Vec<Job>, query: &PageQuery) -> JobPage {
        let mut total = 0;
        let mut page = Vec::with_capacity(query.limit.min(jobs.len()));
        for job in jobs {
            if !query.matches(&job) {
                continue;
            }
            if total >= query.offset && page.len() < query.limit {
                page.push(job);
            }
            total += 1;
        }
        JobPage { jobs: page, total }
    }
}

/// The scheduler's health marks, as `hermes cron status` reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Heartbeat {
    /// A daemon ever ran here (a clean stop leaves this true and `alive_at` empty).
    pub seen: bool,
    /// The last loop of a daemon, `None` when none ever ran or it stopped cleanly.
    pub alive_at: Option<DateTime<Utc>>,
    pub pid: Option<i64>,
    pub last_success: Option<DateTime<Utc>>,
    /// When the last failed pass happened, and why.
    pub last_error: Option<(DateTime<Utc>, String)>,
    /// The scheduler processes the store sees alive (a store shared by several hosts).
    pub hosts: Vec<LiveHost>,
    /// The database failovers of the last day, newest first (PostgreSQL only).
    pub failovers: Vec<Failover>,
}

/// A failover of a PostgreSQL store: a standby promoted to primary, as the first host
/// to connect to it noticed (its timeline is past the one the hosts wrote on before).
#[derive(Debug, Clone, PartialEq)]
pub struct Failover {
    /// The timeline the database writes on since.
    pub timeline: i32,
    /// The one it wrote on before.
    pub previous: i32,
    /// When the first host noticed it, by the database's clock: no run of a host
    /// started on the new primary before that host noticed.
    pub noticed_at: DateTime<Utc>,
    /// The process that noticed it first.
    pub noticed_by: String,
    /// Whether the old primary waited for its standby on each commit: with synchronous
    /// replication nothing is lost; with asynchronous, what the standby had not
    /// received is, and `may_repeat` lists what may have run twice.
    pub synchronous: bool,
    /// The occurrences (`JOB@INSTANT`) due before the failover that started after it:
    /// each one that the old primary had seen start may have run twice.
    pub may_repeat: Vec<String>,
}

/// A scheduler process alive on a shared store.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveHost {
    /// `HERMES_MACHINE_ID`, else the host name.
    pub host: String,
    pub pid: i64,
    /// Its last heartbeat, by the store's clock.
    pub heartbeat_at: DateTime<Utc>,
}

/// What `hermes cron store status` shows of a store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreInfo {
    /// `jobs.json` or `postgresql`.
    pub backend: &'static str,
    /// The file or the database (without its password).
    pub location: String,
    /// The schema version a database is at.
    pub schema_version: Option<i64>,
}

/// One heartbeat event of a daemon.
#[derive(Debug, Clone, PartialEq)]
pub enum Beat {
    Started { pid: u32 },
    Alive(DateTime<Utc>),
    PassSucceeded(DateTime<Utc>),
    PassFailed(DateTime<Utc>, String),
    Stopped,
}

/// A request of a delivery going out or its answer coming back (see [`Outbox::flight`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flight {
    Out,
    Back { delivered: bool },
}

/// An opaque mark that changes whenever jobs change: the daemon compares two to know it
/// should wake up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChangeMark(pub u64);

/// A change to one job, made under the store's lock on its freshest copy (see
/// [`JobRecords::update_job`]). Owned and `Send`: a backend may run it on another thread.
pub type JobChange = Box<dyn FnOnce(&mut Job) -> Result<(), JobError> + Send>;

/// A change made to every job of a batch (see [`JobRecords::update_jobs`]).
pub type BatchChange = Box<dyn FnMut(&mut Job) + Send>;

/// The one door to everything hermes-cron keeps: every capability of a store at once,
/// which is what callers hold (`Arc<dyn Store>`). Each capability is its own trait, a
/// "room" of at most fifteen calls that each backend implements in its own file
/// (`file/ledger.rs`, `postgres/ledger.rs`, `memory/ledger.rs`, …); code that needs one
/// capability alone may take that trait. Every type with all six is a `Store`.
///
/// Every call is async: a database call awaits its round trip on the caller's runtime,
/// and the file store does its blocking work (file locks, SQLite) on the runtime's
/// blocking threads, so no caller ever blocks a worker. A backend with row locks and a
/// server clock fits the same calls: [`JobRecords::claim_due`] decides and claims in one
/// step, and reads "now" where the backend keeps its clock.
///
/// The rooms are declared with `async_trait`: the store is used as `Arc<dyn Store>`, and
/// a native `async fn` in a trait cannot be called through `dyn`. It boxes each call's
/// future, as the binary's `Runner` and `Delivery` traits do by hand. A room's calls
/// need that room's trait in scope, on a `dyn Store` too: `use jobs::store::prelude::*`
/// brings all six.
pub trait Store: JobRecords + JobViews + RunLedger + Outbox + Outputs + Notes + Control {}

impl<T: JobRecords + JobViews + RunLedger + Outbox + Outputs + Notes + Control + ?Sized> Store
    for T
{
}

/// The seven rooms of [`Store`], for `use jobs::store::prelude::*`: their calls work on any
/// store, `dyn Store` included, without naming each trait (imported as `_`, so none of
/// their names can clash with a caller's own).
pub mod prelude {
    pub use super::{
        Control as _, JobRecords as _, JobViews as _, Notes as _, Outbox as _, Outputs as _,
        RunLedger as _, Store,
    };
}

/// The jobs themselves and the claims on their occurrences: row-level reads and writes,
/// the layout new jobs are written in, the marks a sleeping daemon wakes on, and the
/// pass that decides what is due and claims it ([`JobRecords::claim_due`]).
#[async_trait::async_trait]
pub trait JobRecords: Send + Sync {
    /// Every job, as stored (unhealed snapshot, no lock).
    async fn load_jobs(&self, ctx: &Context) -> Result<Vec<Job>, StoreError>;

    /// One job by id.
    async fn get_job(&self, ctx: &Context, id: &str) -> Result<Option<Job>, StoreError> {
        Ok(self
            .load_jobs(ctx)
            .await?
            .into_iter()
            .find(|j| j.id() == id))
    }

    /// Adds a new job.
    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError>;

    /// Changes one job under the store's lock, on its freshest (healed) copy; returns it
    /// as changed. When `change` fails nothing is written. Unknown id: `NotFound`.
    async fn update_job(&self, ctx: &Context, id: &str, change: JobChange)
        -> Result<Job, JobError>;

    /// Changes the jobs whose id is in `ids` in one write (a batch of finished runs);
    /// ids no longer stored are skipped.
    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        change: BatchChange,
    ) -> Result<(), StoreError>;

    /// Removes a job and its output documents; returns it.
    async fn remove_job(&self, ctx: &Context, id: &str) -> Result<Job, JobError>;

    /// Changes whenever any job changes.
    async fn change_mark(&self) -> ChangeMark;

    /// Changes when other processes may hold claimed occurrences waiting for a run slot
    /// (a shared store hands them to a process with a free slot): only a process with a
    /// free slot needs a pass for it. Stores whose claims start at once never change it.
    /// Read from memory, never from the store itself.
    fn backlog_mark(&self) -> ChangeMark {
        ChangeMark(0)
    }

    /// One scheduler pass: decide which jobs are due (the pure rules of
    /// [`crate::model::due::plan_pass`]), move their schedules forward and claim their
    /// occurrences in the ledger, all before anything runs, so a crash can never fire an
    /// occurrence twice. Prunes old completed one-shots.
    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError>;

    /// The claimed run is starting now: its `started_at` becomes the start (a run may
    /// wait for a free slot after its claim). `false` when it is no longer this process's
    /// to run (a shared store gave it to another host while this one was stopped): run
    /// nothing. The same write notes what the run is asked with (as
    /// [`RunLedger::note_run_request`]).
    async fn start_run(
        &self,
        run: i64,
        now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<bool, StoreError>;

    /// Claims a manual run (`hermes cron run`); refused with [`JobError::Running`] while
    /// the job is running.
    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError>;

    /// Claims the chained run `occurrence` of `job_id` ([`crate::model::chain::occurrence`]) as
    /// running now. `None` when the occurrence is in the ledger already (another process
    /// or an earlier pass claimed it: run nothing) or the job is running here or on
    /// another host (a later pass claims it).
    async fn claim_chained(
        &self,
        job_id: &str,
        occurrence: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError>;
}

/// Read views of the jobs: a few fields of each, the layout a new job is written in, a
/// page of the listing with its count, and the fast listing where the store has one.
/// Each has a default built on [`JobRecords::load_jobs`]; a backend that can answer
/// without building every job overrides it.
#[async_trait::async_trait]
pub trait JobViews: JobRecords {
    /// Every job reduced to `keys` (at least `id`; a store may give more): what a reader
    /// that shows or decides on a few fields needs, at a fraction of the memory.
    async fn load_view(&self, ctx: &Context, keys: &[&str]) -> Result<Vec<Job>, StoreError> {
        let _ = keys;
        self.load_jobs(ctx).await
    }
    /// The layout a new job is written in ([`Layout::of_store`] of the stored jobs).
    /// Asked once per create, so a backend that can answer it without building every
    /// job should.
    async fn layout(&self, ctx: &Context) -> Result<Layout, StoreError> {
        Ok(Layout::of_store(
            &self.load_view(ctx, Layout::PROBE_KEYS).await?,
        ))
    }
    /// One page of the listing, in store order, and how many jobs match in all: what
    /// `list --limit`, the paged API and the dashboard show of a large store. A backend
    /// that can answer without building every job should.
    async fn job_page(&self, ctx: &Context, query: &PageQuery) -> Result<JobPage, StoreError> {
        Ok(JobPage::of(self.load_jobs(ctx).await?, query))
    }
    /// The store's own faster way to list every job, when it has one (jobs.json reads
    /// listings straight from the file's text). Others are listed from built jobs: see
    /// [`list_summaries`] and [`list_normalized`], which every caller goes through.
    fn listing(&self) -> Option<&dyn Listing> {
        None
    }
}

/// The run ledger: closing runs, reading them back, pruning old history, and what runs
/// spent, with the one notice of a spent global budget per window.
#[async_trait::async_trait]
pub trait RunLedger: Send + Sync {
    /// Closes a run with its outcome.
    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError>;

    /// Runs recorded `running` whose process is gone (`except_own`: this process's own
    /// too) become `interrupted`, never re-run. Returns how many.
    async fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError>;

    /// Newest runs first, of one job or all.
    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError>;

    /// One run by its ledger id (`None`: no such run, or pruned).
    async fn run(&self, id: i64) -> Result<Option<RunRow>, StoreError>;

    /// Records what delivering finished run `id` again did (`hermes cron redeliver`) in
    /// its `delivery`, as a run's own delivery is recorded; nothing else changes.
    async fn set_run_delivery(&self, id: i64, delivery: &str) -> Result<(), StoreError>;

    /// The newest run of every job that has one, by job id, or of the jobs in `only`
    /// (a listing of many jobs shows each one's latest run from this one read; a page
    /// of them asks for its own).
    async fn latest_runs(
        &self,
        only: Option<&[String]>,
    ) -> Result<HashMap<String, RunRow>, StoreError>;

    /// Drops finished deliveries created before `before`, and ledger rows beyond the
    /// newest `keep_runs` per job — but for the rows that spent tokens and finished at or
    /// after `spend_since`: the spend windows count them.
    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Tokens and dollars of the runs that spent any and finished at or after `since`,
    /// summed per job and model ([`crate::ledger::spend`]); on a shared store, every host's.
    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError>;

    /// Asks the running runs of `target` to stop: each is marked in the ledger, where
    /// the process running it — on this host or another on a shared store — looks about
    /// every second. Returns the runs marked (none: nothing of it was running).
    async fn request_cancel(
        &self,
        target: CancelTarget<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<i64>, StoreError>;

    /// Those of `runs` whose cancel was requested, in one look however many run (a
    /// process asks once a second for all its running runs).
    async fn cancels_requested(&self, runs: &[i64]) -> Result<Vec<i64>, StoreError>;

    /// Notes what `run` was asked with (its prompt and model); with `replay_of`, the run
    /// becomes a `replay` of that one.
    async fn note_run_request(&self, run: i64, request: &RunRequest) -> Result<(), StoreError>;

    /// The job of `run` and what it was asked with; `None` for no such run.
    async fn run_request(&self, run: i64) -> Result<Option<(String, RunRequest)>, StoreError>;

    /// Starts the newest occurrence of `job_id` queued (`overlap: queue`) since run
    /// `after` began: its `skipped` row becomes this process's `running` run, at most
    /// once on the store; older ones queued since are marked superseded. Its row id and
    /// scheduled instant; `None` when none waits.
    async fn take_queued(
        &self,
        job_id: &str,
        after: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<(i64, DateTime<Utc>)>, StoreError>;

    /// Claims the one notice of a spent global budget for `window` (its key, e.g.
    /// `day:2026-03-01`): `true` for the first claim on this store — by any process or
    /// host — and `false` ever after.
    async fn claim_budget_notice(
        &self,
        window: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Claims one past occurrence for `hermes cron backfill`, `running`, under its
    /// occurrence key (the key the scheduler's fire of it has, [`occurrence_key`] of the
    /// job id and the instant it was due): its row id, or `None` when the ledger holds
    /// that occurrence already — run by an earlier backfill or by the scheduler — so it
    /// is never run twice.
    async fn claim_backfill(
        &self,
        job_id: &str,
        scheduled_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError>;
}

/// The delivery outbox: every destination of a run kept before its first request, claimed,
/// flown and finished, so a delivery is never sent twice.
#[async_trait::async_trait]
pub trait Outbox: Send + Sync {
    /// Keeps a delivery: claimed by this process before its first request (`claimed`),
    /// or pending for a later pass. `None` when this occurrence and target are already
    /// kept (it is then left alone: never sent twice).
    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError>;

    /// Claims the deliveries due at `now` (at most `limit`); expired ones are closed.
    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError>;

    /// Marks a request of delivery `id` going out, or its answer back.
    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError>;

    /// Deliveries left `sending` by dead processes: given back when nothing was in
    /// flight, closed as unknown when a request was. Returns (given back, closed).
    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError>;

    /// Ends a claimed delivery.
    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError>;

    /// Deliveries of this occurrence still pending or being sent.
    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError>;

    /// How many deliveries are pending or being sent.
    async fn outbox_depth(&self) -> Result<usize, StoreError>;

    /// When the earliest pending delivery is due.
    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError>;

    /// The state of one occurrence's delivery to one target.
    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError>;
}

/// Each run's output document, and the output a monitor job compares its next one with.
#[async_trait::async_trait]
pub trait Outputs: Send + Sync {
    /// Saves a run's document, keeping the newest `keep` of its job; returns where it is
    /// (a path for files).
    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError>;

    /// The text of a job's newest document.
    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError>;

    /// The texts of a job's newest `limit` documents, newest first (continuity reads
    /// back past runs that delivered nothing).
    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError>;

    /// The output a monitor job saw when its source last changed (jobs.json keeps only
    /// its hash), for the diff of the next change; `None` before the first.
    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError>;

    /// Keeps `output` as the job's monitor snapshot, replacing the one before. Never
    /// counted or pruned as a document; removed with the job.
    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError>;

    /// The output document of run `run`: `None` for no such run, `Some(None)` when the
    /// run saved none (or it was pruned since).
    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError>;
}

/// Failure incidents (failed runs grouped by their error) and job notepads.
#[async_trait::async_trait]
pub trait Notes: Send + Sync {
    /// Groups a failed run into its incident (see [`crate::ledger::incident::upserted`]) and
    /// returns the incident as it now is.
    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError>;

    /// Moves incident `id` (see [`crate::ledger::incident::moved`]), stamped `at` (written
    /// in `zone`, as every incident time is); whether it changed (`false` for an unknown or
    /// closed one).
    async fn move_incident(
        &self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, StoreError>;

    /// The job ran fine at `at` (written in `zone`): its open incidents become resolved.
    /// Returns how many.
    async fn resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError>;

    /// The incidents in `state` (all without one), newest activity first.
    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError>;

    /// A job's notepad, by key (the job need not exist: a notepad outlives nothing but
    /// its job's removal).
    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError>;

    /// Sets one entry; [`StoreError::Refused`] when a limit of [`crate::ledger::notepad::check`]
    /// would break, with nothing written.
    async fn set_note(&self, note: &Note) -> Result<(), StoreError>;

    /// Removes one entry; whether it was there.
    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError>;
}

/// The store as a whole: the global pause every scheduler on it obeys, the scheduler's
/// heartbeat, what and where the store is, and the end of this process's session.
#[async_trait::async_trait]
pub trait Control: Send + Sync {
    /// The global pause every scheduler on this store obeys, when it is engaged.
    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError>;

    /// Engages (`Some`) or lifts (`None`) the global pause; whether one was engaged
    /// before.
    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError>;

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError>;

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError>;

    /// Which backend this is and where.
    async fn describe(&self) -> Result<StoreInfo, StoreError>;

    /// Ends this process's session with the store, once, at the end: background work
    /// stops and a shared store forgets this process's lease at once (a store dropped
    /// without it stops its work too, and its lease runs out).
    async fn close(&self) {}
}

/// How a store lists every job faster than by building each one: only jobs.json has
/// such a way (it reads the file's text); [`JobRecords::listing`] hands it out.
#[async_trait::async_trait]
pub trait Listing: Send + Sync {
    /// See [`list_summaries`].
    async fn summaries(&self, ctx: &Context, sink: SharedSink) -> Result<(), StoreError>;
    /// See [`list_normalized`].
    async fn normalized(
        &self,
        ctx: &Context,
        keep: Keep,
        extras: Vec<ExtraField>,
        out: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError>;
}

/// A sink the store fills from another thread; the caller keeps its own handle on it.
pub type SharedSink = Arc<std::sync::Mutex<dyn SummarySink>>;

/// Which jobs a listing keeps, by their stored state.
pub type Keep = Arc<dyn Fn(Listed) -> bool + Send + Sync>;

/// Hands `sink` the [`JobSummary`] of every job, in store order, possibly from another
/// thread and possibly before the store proves unreadable (the error then comes back:
/// what the sink gathered is to be dropped) or before the store has to be read again
/// another way (the sink is told to start over first).
pub async fn list_summaries(
    store: &dyn Store,
    ctx: &Context,
    sink: SharedSink,
) -> Result<(), StoreError> {
    if let Some(listing) = store.listing() {
        return listing.summaries(ctx, sink).await;
    }
    let jobs = store.load_view(ctx, JobSummary::KEYS).await?;
    let mut sink = lock(&sink);
    for job in &jobs {
        sink.summary(&JobSummary::of(job, ctx));
    }
    Ok(())
}

/// Appends to `out` every job `keep` accepts, in store order, as `list --json` shows it
/// ([`Job::normalized`]) with the `extras` set on each, separated by commas, and hands
/// `out` back. Nothing is appended when the store cannot be read.
pub async fn list_normalized(
    store: &dyn Store,
    ctx: &Context,
    keep: Keep,
    extras: Vec<ExtraField>,
    mut out: Vec<u8>,
) -> Result<Vec<u8>, StoreError> {
    if let Some(listing) = store.listing() {
        return listing.normalized(ctx, keep, extras, out).await;
    }
    let mut jobs = store.load_jobs(ctx).await?;
    write_normalized(ctx, &*keep, &extras, &mut out, &mut |each| {
        std::mem::take(&mut jobs).into_iter().for_each(each);
        Ok(())
    })?;
    Ok(out)
}

fn lock<T: ?Sized>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The ledger status and reason of a decision that is recorded without running, or
/// `None` when the decision fires (`busy` = the job's previous run is still going).
pub fn recorded_without_running(
    decision: &Decision,
    busy: bool,
    zone: chrono_tz::Tz,
) -> Option<(RunStatus, String)> {
    match decision {
        Decision::Fire { .. } if busy => {
            Some((RunStatus::Skipped, "skipped (still running)".to_string()))
        }
        Decision::Fire { .. } => None,
        Decision::Missed { scheduled_at } => Some((
            RunStatus::Missed,
            format!(
                "missed: due at {}, the scheduler was not running",
                schedules::format_instant(*scheduled_at, zone)
            ),
        )),
        Decision::SkippedLate { .. } => Some((
            RunStatus::Skipped,
            "skipped: late and catch-up is off".to_string(),
        )),
        Decision::Broken { .. } | Decision::Completed { .. } | Decision::Deferred { .. } => None,
    }
}

/// The instant a decision is about, when it has one.
pub fn scheduled_at(decision: &Decision) -> Option<DateTime<Utc>> {
    match decision {
        Decision::Fire { scheduled_at, .. }
        | Decision::Missed { scheduled_at }
        | Decision::SkippedLate { scheduled_at }
        | Decision::Completed { scheduled_at }
        | Decision::Deferred { scheduled_at, .. } => Some(*scheduled_at),
        Decision::Broken { .. } => None,
    }
}

/// A ledger row to insert; the backend adds who claims it.
#[derive(Debug, Clone)]
pub struct ClaimRequest<'a> {
    pub job_id: &'a str,
    pub occurrence: &'a str,
    pub source: RunSource,
    pub status: RunStatus,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub started_at: DateTime<Utc>,
    pub error: Option<&'a str>,
}

/// The occurrence key of a manual run started at `now`.
pub fn manual_occurrence(job_id: &str, now: DateTime<Utc>) -> String {
    format!("{job_id}@manual-{}", crate::ledger::ledger_time(now))
}

fn chain_claim<'a>(job_id: &'a str, occurrence: &'a str, now: DateTime<Utc>) -> ClaimRequest<'a> {
    ClaimRequest {
        source: RunSource::Chain,
        ..manual_claim(job_id, occurrence, now)
    }
}

/// The ledger row of a backfilled occurrence.
pub(crate) fn backfill_claim(
    job_id: &str,
    occurrence: &str,
    scheduled_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> OwnedBackfill {
    OwnedBackfill {
        job_id: job_id.to_string(),
        occurrence: occurrence.to_string(),
        scheduled_at,
        now,
    }
}

/// [`backfill_claim`]'s row, owned (to cross to a blocking thread).
pub(crate) struct OwnedBackfill {
    pub job_id: String,
    pub occurrence: String,
    pub scheduled_at: DateTime<Utc>,
    pub now: DateTime<Utc>,
}

impl OwnedBackfill {
    pub fn request(&self) -> ClaimRequest<'_> {
        ClaimRequest {
            job_id: &self.job_id,
            occurrence: &self.occurrence,
            source: RunSource::Backfill,
            status: RunStatus::Running,
            scheduled_at: Some(self.scheduled_at),
            started_at: self.now,
            error: None,
        }
    }
}

fn manual_claim<'a>(job_id: &'a str, occurrence: &'a str, now: DateTime<Utc>) -> ClaimRequest<'a> {
    ClaimRequest {
        job_id,
        occurrence,
        source: RunSource::Manual,
        status: RunStatus::Running,
        scheduled_at: None,
        started_at: now,
        error: None,
    }
}

/// A planned decision on its way to the ledger: the row to insert, if any, and what it
/// records without running. Every backend inserts the rows its own way (in its own
/// transaction) and settles each with [`PendingClaim::settle`].
pub(crate) struct PendingClaim {
    pub job: Job,
    pub decision: Decision,
    /// The ledger row; `None` when the decision records nothing (completed, broken).
    pub request: Option<OwnedClaim>,
    recorded: Option<(RunStatus, String)>,
}

/// A ledger row to insert, owned.
#[derive(Debug, Clone)]
pub(crate) struct OwnedClaim {
    pub job_id: String,
    pub occurrence: String,
    pub status: RunStatus,
    pub scheduled_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    pub error: Option<String>,
}

impl OwnedClaim {
    pub fn request(&self) -> ClaimRequest<'_> {
        ClaimRequest {
            job_id: &self.job_id,
            occurrence: &self.occurrence,
            source: RunSource::Scheduler,
            status: self.status.clone(),
            scheduled_at: Some(self.scheduled_at),
            started_at: self.started_at,
            error: self.error.as_deref(),
        }
    }
}

impl PendingClaim {
    /// What became of the occurrence, given what inserting its row gave: the new row's
    /// id, `None` when the occurrence was in the ledger already, or the error.
    pub fn settle(self, inserted: Result<Option<i64>, String>) -> Occurrence {
        let claimed = match (self.request.is_some(), inserted, self.recorded) {
            (false, _, _) => Claimed::Settled,
            (true, Ok(Some(run)), None) => Claimed::Run { run },
            (true, Ok(Some(_)), Some((status, reason))) => Claimed::Recorded { status, reason },
            (true, Ok(None), _) => Claimed::Taken,
            (true, Err(error), _) => Claimed::Failed { error },
        };
        Occurrence {
            job: self.job,
            decision: self.decision,
            claimed,
        }
    }
}

/// Turns planned decisions into ledger rows: a fire is claimed `running` (or recorded
/// `skipped` while the job's previous run goes on, here or where `busy_elsewhere` sees
/// it), a missed or late-skipped occurrence is recorded as such.
pub(crate) fn prepare_claims(
    planned: Vec<Planned>,
    ctx: &Context,
    scan: &DueScan<'_>,
    busy_elsewhere: &mut dyn FnMut(&str) -> bool,
) -> Vec<PendingClaim> {
    planned
        .into_iter()
        .map(|Planned { job, decision }| {
            let at = match decision {
                Decision::Completed { .. }
                | Decision::Broken { .. }
                | Decision::Deferred { .. } => None,
                _ => scheduled_at(&decision),
            };
            let Some(at) = at else {
                return PendingClaim {
                    job,
                    decision,
                    request: None,
                    recorded: None,
                };
            };
            // `overlap: replace` fires anyway (the scheduler cancels the running run);
            // `queue` records the occurrence for the run to take when it ends.
            let overlap = job.overlap();
            let busy = matches!(decision, Decision::Fire { .. })
                && overlap != Overlap::Replace
                && (scan.running_here.contains(job.id()) || busy_elsewhere(job.id()));
            let mut recorded = recorded_without_running(&decision, busy, job.zone(ctx));
            if busy && overlap == Overlap::Queue {
                recorded = Some((RunStatus::Skipped, crate::ledger::QUEUED.to_string()));
            }
            let request = OwnedClaim {
                job_id: job.id().to_string(),
                occurrence: occurrence_key(job.id(), at),
                status: recorded
                    .as_ref()
                    .map_or(RunStatus::Running, |r| r.0.clone()),
                scheduled_at: at,
                started_at: ctx.now,
                error: recorded.as_ref().map(|r| r.1.clone()),
            };
            PendingClaim {
                job,
                decision,
                request: Some(request),
                recorded,
            }
        })
        .collect()
}

/// Appends `job` the long way (normalized, `extras` set) when `keep` accepts it, after a
/// comma unless it comes `first`; whether it was appended.
pub(crate) fn append_normalized_job(
    job: Job,
    ctx: &Context,
    keep: &dyn Fn(Listed) -> bool,
    extras: &[ExtraField],
    first: bool,
    out: &mut Vec<u8>,
) -> serde_json::Result<bool> {
    if !keep(Listed::of(&job)) {
        return Ok(false);
    }
    if !first {
        out.push(b',');
    }
    if extras.is_empty() {
        serde_json::to_writer(&mut *out, &job.normalized(ctx))?;
    } else {
        ExtraField::set_all(extras, job.normalized(ctx), ctx, out)?;
    }
    Ok(true)
}

/// A store's way through every whole job, in store order, handing each to the callback.
pub(crate) type EachJob<'s> = dyn FnMut(&mut dyn FnMut(Job)) -> Result<(), StoreError> + 's;

/// What a listing keeps or leaves out a job by, as the job is stored (before healing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    pub state: JobState,
    pub enabled: bool,
}

impl Listed {
    pub fn of(job: &Job) -> Listed {
        Listed {
            state: job.state(),
            enabled: job.enabled(),
        }
    }
}

/// A field a listing sets on every job (added last, or replacing the record's own):
/// `write` appends its JSON value for the listed job.
#[derive(Clone)]
pub struct ExtraField {
    pub key: &'static str,
    pub write: WriteValue,
}

/// Appends the JSON value of an [`ExtraField`] for one listed job.
pub type WriteValue = Arc<dyn Fn(&ListedJob<'_>, &mut Vec<u8>) + Send + Sync>;

impl ExtraField {
    /// `schedule_description`: the schedule in English ([`ListedJob::schedule_description`]),
    /// `null` when the stored schedule cannot be read.
    pub fn schedule_description() -> ExtraField {
        let memo = crate::jsonjobs::listing::DescriptionMemo::default();
        ExtraField {
            key: "schedule_description",
            write: Arc::new(move |job: &ListedJob<'_>, out: &mut Vec<u8>| {
                // Writing a string into a Vec cannot fail.
                let _ = serde_json::to_writer(out, &job.schedule_description_in(&memo));
            }),
        }
    }

    /// A normalized job appended to `out` with these fields set in order, as a map
    /// setting them would: each in its place when the record has the key, else last.
    pub(crate) fn set_all(
        extras: &[ExtraField],
        job: NormalizedJob,
        ctx: &Context,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let id = job.id().to_string();
        let mut record = job.into_record();
        let schedule = record.get("schedule").cloned();
        let timezone = record
            .get("timezone")
            .and_then(|t| t.as_str().map(str::to_string));
        let listed = ListedJob::stored(&id, schedule.as_ref(), timezone.as_deref(), ctx);
        let mut value = Vec::new();
        for extra in extras {
            value.clear();
            (extra.write)(&listed, &mut value);
            record.insert(extra.key.to_string(), serde_json::from_slice(&value)?);
        }
        serde_json::to_writer(out, &record)
    }
}

/// What takes the jobs' summaries of [`list_summaries`].
pub trait SummarySink: Send {
    /// The next job in store order.
    fn summary(&mut self, job: &JobSummary<'_>);
    /// Forget every summary so far: they come again from the first.
    fn restart(&mut self);
}

/// [`list_normalized`] from whole jobs that `for_each` gives.
pub(crate) fn write_normalized(
    ctx: &Context,
    keep: &dyn Fn(Listed) -> bool,
    extras: &[ExtraField],
    out: &mut Vec<u8>,
    for_each: &mut EachJob<'_>,
) -> Result<(), StoreError> {
    let mark = out.len();
    let mut first = true;
    let mut failed = None;
    let read = for_each(&mut |job| {
        if failed.is_some() {
            return;
        }
        match append_normalized_job(job, ctx, keep, extras, first, out) {
            Ok(appended) => first &= !appended,
            Err(e) => failed = Some(e),
        }
    });
    let result = match (read, failed) {
        (Err(e), _) => Err(e),
        (Ok(()), Some(e)) => Err(StoreError::Unreadable(format!(
            "cannot write a job as JSON: {e}"
        ))),
        (Ok(()), None) => return Ok(()),
    };
    out.truncate(mark);
    result
}

/// [`prepare_claims`], each row inserted with `insert`, settled.
pub(crate) fn claim_planned(
    planned: Vec<Planned>,
    ctx: &Context,
    scan: &DueScan<'_>,
    busy_elsewhere: &mut dyn FnMut(&str) -> bool,
    insert: &mut dyn FnMut(&ClaimRequest<'_>) -> Result<Option<i64>, String>,
) -> Vec<Occurrence> {
    prepare_claims(planned, ctx, scan, busy_elsewhere)
        .into_iter()
        .map(|pending| {
            let inserted = match &pending.request {
                Some(request) => insert(&request.request()),
                None => Ok(None),
            };
            pending.settle(inserted)
        })
        .collect()
}
