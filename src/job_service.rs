//! The one door for every change to a job: create, edit, pause, resume, remove, run
//! now, cancel and replay ([`runs`]), acknowledging a job's failure incident, and the
//! control operations — the global pause and a job's notepad ([`control`]). The CLI,
//! Python Hermes' REST routes, the dashboard's routes and the MCP tool translate their
//! requests into [`NewJob`] / [`JobEdit`] and their answers out of [`Changed`] and
//! [`ServiceError`]; the rules — field limits, schedule, targets, script confinement,
//! the prompt scan and the gateway guard, on create and on edit alike — are judged here
//! (the limits and the scan first, in Python Hermes' order) and in the `jobs` lifecycle
//! this service feeds, so the same bad input gets the same refusal from every door. It
//! reads what only the binary knows (the script's text, and through [`Facts`] the model
//! an unpinned job would use now) and never formats a door's reply. It imports neither
//! the scheduler nor the agent: runs go through the [`Runs`] a door passes in
//! ([`ports`]; `crate::wiring` implements both with the scheduler and the agent).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use jobs::incident::{Incident, Transition};
use jobs::store::Store;
use jobs::{BareDuration, Context, Job, JobEdit, JobError, JobState, NewJob, RearmAt};

use crate::clock::Clock;
use crate::config::{Config, ConfigError};
use crate::home::{load_context, Home};
use crate::run_report::RunReport;

mod control;
mod ports;
mod runs;

pub use ports::{Facts, Pending, Runs};

/// Why a job operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Job(#[from] JobError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A run asked for a paused job, where the door refuses rather than resumes.
    #[error("Job {0} is paused; resume it first with 'hermes cron resume {0}'")]
    Paused(String),
    /// The run did not start: the job has a run going in this process (a run going on
    /// another host is [`JobError::Running`]).
    #[error("Job {0} is already running")]
    AlreadyRunning(String),
    /// A cancel found nothing of the job (or the run) running.
    #[error("{0}")]
    NothingRunning(String),
    /// A run id the ledger does not hold.
    #[error("No run {0}: see the run ids with 'hermes cron runs'")]
    NoRun(i64),
    /// An acknowledgement named an incident the store does not hold.
    #[error("No incident '{0}': see the ids with hermes cron incidents")]
    NoIncident(String),
    /// A notepad read or delete named a key the job's notepad does not hold.
    #[error("No notepad key '{key}' for job {job_id}")]
    NoNote { job_id: String, key: String },
}

impl From<jobs::StoreError> for ServiceError {
    fn from(e: jobs::StoreError) -> ServiceError {
        ServiceError::Job(JobError::from(e))
    }
}

/// What kind of failure an error is: each door maps kinds to its own statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No job (or incident) by that reference.
    NotFound,
    /// The request was refused: the user can fix it.
    Invalid,
    /// The job is in a state that refuses the operation now (running).
    Conflict,
    /// The store exists but cannot be read: nothing was written, and whoever runs it
    /// must repair the file (the CLI's user can; an HTTP client cannot).
    Unreadable,
    /// The machine failed (I/O, a database down).
    Internal,
}

impl ServiceError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            ServiceError::Job(JobError::NotFound(_))
            | ServiceError::NoIncident(_)
            | ServiceError::NoRun(_)
            | ServiceError::NoNote { .. } => ErrorKind::NotFound,
            ServiceError::NothingRunning(_)
            | ServiceError::AlreadyRunning(_)
            | ServiceError::Job(JobError::Running(_)) => ErrorKind::Conflict,
            ServiceError::Job(JobError::Store(jobs::StoreError::Unreadable(_))) => {
                ErrorKind::Unreadable
            }
            ServiceError::Job(e) if e.is_internal() => ErrorKind::Internal,
            ServiceError::Config(ConfigError::Unreadable { .. }) => ErrorKind::Internal,
            _ => ErrorKind::Invalid,
        }
    }
}

/// A job as an operation left it, with the context ("now", zones) it was decided in:
/// what a door needs to show it.
#[derive(Debug, Clone)]
pub struct Changed {
    pub job: Job,
    pub ctx: Context,
}

/// What a run of a paused job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenPaused {
    /// Refuse: the user resumes it first (the CLI, the MCP tool).
    Refuse,
    /// Resume it, then run (Python Hermes' REST trigger).
    Resume,
}

/// What acknowledging an incident did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked {
    /// It was open (or resolved) and is closed now.
    Closed,
    /// It was closed before: nothing changed.
    AlreadyClosed,
}

impl Acked {
    /// What every door tells the user about incident `id`.
    pub fn message(self, id: &str) -> String {
        match self {
            Acked::Closed => format!(
                "Incident {id} acknowledged (closed): this error stays quiet until its text changes."
            ),
            Acked::AlreadyClosed => format!("Incident {id} is already closed."),
        }
    }
}

/// How a door names a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Addressing {
    /// An exact id, else a case-insensitive name (the CLI, the MCP tool).
    #[default]
    IdOrName,
    /// An exact id only; a name is not found (both HTTP route families, which address
    /// jobs by id).
    Id,
}

/// The job operations of one home on one store, "now" read from one clock; what only
/// the agent and the scheduler know comes from `facts`.
pub struct JobService {
    home: PathBuf,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    facts: Arc<dyn Facts>,
    addressing: Addressing,
}

impl JobService {
    pub fn new(
        home: &Path,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        facts: Arc<dyn Facts>,
    ) -> JobService {
        JobService {
            home: home.to_path_buf(),
            store,
            clock,
            facts,
            addressing: Addressing::default(),
        }
    }

    /// The same service, naming jobs as `addressing` says.
    pub fn addressed_by(mut self, addressing: Addressing) -> JobService {
        self.addressing = addressing;
        self
    }

    /// With [`Addressing::Id`], that a job has exactly this id (else
    /// [`JobError::NotFound`]); by id or name, the lifecycle finds the job itself.
    async fn addressed(&self, reference: &str) -> Result<(), ServiceError> {
        match self.addressing {
            Addressing::Id => self.get(reference).await.map(drop),
            Addressing::IdOrName => Ok(()),
        }
    }

    /// What a new job is judged by first, for every door in Python Hermes' order: the
    /// field limits (name, then prompt, then the rest), then the prompt scan — before the
    /// schedule is parsed. The lifecycle judges the rest (and these again).
    fn judge_new(new: &NewJob) -> Result<(), ServiceError> {
        jobs::limits::check_new(new)?;
        jobs::threats::scan_prompt(&new.prompt).map_err(JobError::from)?;
        Ok(())
    }

    /// What an edit is judged by before its job is looked for (Python Hermes' order: a
    /// bad name or prompt is refused even for a job that does not exist).
    fn judge_edit(edit: &JobEdit) -> Result<(), ServiceError> {
        jobs::limits::check_edit(edit)?;
        if let Some(prompt) = &edit.prompt {
            jobs::threats::scan_prompt(prompt).map_err(JobError::from)?;
        }
        Ok(())
    }

    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// "Now", the zones and the config, read afresh for each operation: a daemon or an
    /// MCP server lives long, and a config edit applies to its next request.
    pub fn context(&self) -> Result<(Context, Config), ServiceError> {
        let home = Home {
            root: self.home.clone(),
        };
        Ok(load_context(&home, self.clock.now())?)
    }

    /// The text of a script under `<home>/scripts/`, for the gateway guard.
    fn script_text(&self, script: Option<&str>) -> Option<String> {
        let script = script.map(str::trim).filter(|s| !s.is_empty())?;
        crate::script::read_for_scan(&self.home.join("scripts"), script)
    }

    /// `cron.bare_duration`: how `30m` reads (default once); a value that is neither
    /// `once` nor `every` is refused, so no job is made of a schedule read the wrong way.
    fn bare_duration(config: &Config) -> Result<BareDuration, ServiceError> {
        match config.cron.bare_duration.as_deref() {
            None => Ok(BareDuration::default()),
            Some(text) => BareDuration::parse(text)
                .map_err(|e| JobError::Invalid(format!("{e}: fix it in config.yaml")).into()),
        }
    }

    fn inference_now(&self, config: &Config) -> jobs::InferenceNow {
        self.facts.inference_now(&self.home, config)
    }

    /// The job with exactly this id.
    pub async fn get(&self, id: &str) -> Result<Changed, ServiceError> {
        let (ctx, _) = self.context()?;
        let job = self
            .store
            .get_job(&ctx, id)
            .await?
            .ok_or_else(|| JobError::NotFound(id.to_string()))?;
        Ok(Changed { job, ctx })
    }

    /// The job a reference names: an exact id, else (unless addressed by id only) a
    /// case-insensitive name.
    pub async fn find(&self, reference: &str) -> Result<Changed, ServiceError> {
        if self.addressing == Addressing::Id {
            return self.get(reference).await;
        }
        let (ctx, _) = self.context()?;
        let jobs = self.store.load_jobs(&ctx).await?;
        let job = jobs::find_job(&jobs, reference)?.clone();
        Ok(Changed { job, ctx })
    }

    pub async fn create(&self, mut new: NewJob) -> Result<Changed, ServiceError> {
        Self::judge_new(&new)?;
        let (ctx, config) = self.context()?;
        new.script_text = self.script_text(new.script.as_deref());
        new.inference_now = self.inference_now(&config);
        new.bare_duration = Self::bare_duration(&config)?;
        let job = jobs::create_job(&*self.store, &new, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    /// Applies an edit. The gateway guard reads the script the job will run once
    /// edited: the one the edit sets, else the one it has.
    pub async fn edit(&self, reference: &str, mut edit: JobEdit) -> Result<Changed, ServiceError> {
        Self::judge_edit(&edit)?;
        self.addressed(reference).await?;
        let (ctx, config) = self.context()?;
        if edit.prompt.is_some() || edit.script.is_some() {
            let script = match &edit.script {
                Some(script) => Some(script.clone()),
                // Only the script of the job is needed: a reduced view, read in this
                // operation's context.
                None => {
                    let view = self
                        .store
                        .load_view(&ctx, &["id", "name", "script"])
                        .await?;
                    jobs::find_job(&view, reference)?
                        .script()
                        .map(str::to_string)
                }
            };
            edit.script_text = self.script_text(script.as_deref());
        }
        edit.inference_now = self.inference_now(&config);
        edit.bare_duration = Self::bare_duration(&config)?;
        let job = jobs::edit_job(&*self.store, reference, &edit, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    /// An edit (when it changes anything), then a pause or resume when `enabled` says
    /// so: the REST routes' update.
    pub async fn update(
        &self,
        reference: &str,
        edit: JobEdit,
        enabled: Option<bool>,
    ) -> Result<Changed, ServiceError> {
        let mut changed = if edit.is_empty() {
            self.find(reference).await?
        } else {
            self.edit(reference, edit).await?
        };
        let id = changed.job.id().to_string();
        match (enabled, changed.job.state()) {
            (Some(false), state) if state != JobState::Paused && changed.job.enabled() => {
                changed = self.pause(&id, None).await?;
            }
            (Some(true), JobState::Paused) => changed = self.resume(&id).await?,
            _ => {}
        }
        Ok(changed)
    }

    pub async fn pause(
        &self,
        reference: &str,
        reason: Option<&str>,
    ) -> Result<Changed, ServiceError> {
        self.addressed(reference).await?;
        let (ctx, _) = self.context()?;
        let job = jobs::pause_job(&*self.store, reference, reason, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    pub async fn resume(&self, reference: &str) -> Result<Changed, ServiceError> {
        self.addressed(reference).await?;
        let (ctx, _) = self.context()?;
        let job = jobs::resume_job(&*self.store, reference, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    /// Re-arms a one-shot to run at `at` (`hermes cron resume --at/--run-now`).
    pub async fn rearm(&self, reference: &str, at: &RearmAt) -> Result<Changed, ServiceError> {
        self.addressed(reference).await?;
        let (ctx, _) = self.context()?;
        let timeout = self.facts.inactivity_timeout();
        let ttl = jobs::due::run_claim_ttl(timeout.map(|t| t.as_secs()));
        let job = jobs::rearm_one_shot(&*self.store, reference, at, ttl, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    /// Removes a job and its output documents; returns it as it was.
    pub async fn remove(&self, reference: &str) -> Result<Changed, ServiceError> {
        self.addressed(reference).await?;
        let (ctx, _) = self.context()?;
        let job = jobs::remove_job(&*self.store, reference, &ctx).await?;
        Ok(Changed { job, ctx })
    }

    /// The jobs (id, name) whose chain (`after`) waits on job `id`: what every door
    /// says when it removes that job (they are kept; their chain never fires again).
    pub async fn waiting_on(&self, id: &str) -> Vec<(String, String)> {
        let Ok((ctx, _)) = self.context() else {
            return Vec::new();
        };
        let view = self
            .store
            .load_view(&ctx, &["id", "name", jobs::chain::AFTER])
            .await
            .unwrap_or_default();
        jobs::chain::waiting_on(&view, id)
            .into_iter()
            .map(|job| (job.id().to_string(), job.name().to_string()))
            .collect()
    }

    /// Acknowledges incident `id` (see [`jobs::incident::moved`]): closed now, its error
    /// quiet until its text changes; acknowledging a closed one changes nothing.
    pub async fn ack_incident(&self, id: &str) -> Result<(Acked, Incident), ServiceError> {
        let (ctx, _) = self.context()?;
        let moved = self
            .store
            .move_incident(id, Transition::Acked, ctx.now, ctx.zone)
            .await?;
        let known = self.store.incidents(None).await?;
        let incident = known
            .into_iter()
            .find(|i| i.id == id)
            .ok_or_else(|| ServiceError::NoIncident(id.to_string()))?;
        let acked = if moved {
            Acked::Closed
        } else {
            Acked::AlreadyClosed
        };
        Ok((acked, incident))
    }

    /// The job a run now would run, paused jobs handled as `when_paused` says.
    async fn to_run(
        &self,
        reference: &str,
        when_paused: WhenPaused,
    ) -> Result<Changed, ServiceError> {
        let found = self.find(reference).await?;
        match (found.job.state(), when_paused) {
            (JobState::Paused, WhenPaused::Refuse) => {
                Err(ServiceError::Paused(found.job.id().to_string()))
            }
            (JobState::Paused, WhenPaused::Resume) => self.resume(found.job.id()).await,
            _ => Ok(found),
        }
    }

    /// A per-run prompt (`run_context`) as every door checks it: a prompt's length
    /// limit and the strict threat scan, before anything runs.
    pub fn check_run_context(run_context: &str) -> Result<(), ServiceError> {
        jobs::limits::check_prompt(run_context)?;
        jobs::threats::scan_prompt(run_context).map_err(JobError::from)?;
        Ok(())
    }

    /// The job a run now runs: with `run_context` (checked, blank = none) appended to
    /// its prompt for this run only.
    async fn to_run_with(
        &self,
        reference: &str,
        when_paused: WhenPaused,
        run_context: Option<&str>,
    ) -> Result<(Changed, Job), ServiceError> {
        let context = run_context.filter(|c| !c.trim().is_empty());
        if let Some(context) = context {
            Self::check_run_context(context)?;
        }
        let changed = self.to_run(reference, when_paused).await?;
        let job = match context {
            Some(context) => changed.job.clone().with_run_context(context),
            None => changed.job.clone(),
        };
        Ok((changed, job))
    }

    /// Runs the job now, outside its schedule, and waits for its outcome. A
    /// `run_context` is appended to the prompt of this run only (Hermes 0.22's per-run
    /// prompt).
    pub async fn run_now(
        &self,
        runs: &dyn Runs,
        reference: &str,
        when_paused: WhenPaused,
        run_context: Option<&str>,
    ) -> Result<RunReport, ServiceError> {
        let (_, job) = self
            .to_run_with(reference, when_paused, run_context)
            .await?;
        runs.run_now(job).await
    }

    /// Starts the job now and returns once its run is claimed in the ledger; the run
    /// goes on in the background. Returns the job as it was started (without the
    /// `run_context`, which only that run sees).
    pub async fn start_now(
        &self,
        runs: &dyn Runs,
        reference: &str,
        when_paused: WhenPaused,
        run_context: Option<&str>,
    ) -> Result<Changed, ServiceError> {
        let (changed, job) = self
            .to_run_with(reference, when_paused, run_context)
            .await?;
        runs.start_now(job).await?;
        Ok(changed)
    }
}

impl JobService {
    /// Delivers finished run `run`'s stored output again, with no model request: to
    /// `to` (a `deliver` value; blank = none) or its job's targets. The outcome is
    /// recorded on the run (the scheduler's `resend`, through [`Runs::resend`]).
    pub async fn redeliver(
        &self,
        runs: &dyn Runs,
        run: i64,
        to: Option<&str>,
    ) -> Result<RunReport, ServiceError> {
        if let Some(to) = to {
            jobs::limits::check_redeliver_to(to)?;
        }
        let row = self.store.run(run).await?.ok_or(ServiceError::NoRun(run))?;
        let to = to.filter(|t| !t.trim().is_empty());
        runs.resend(&row, to).await
    }
}
