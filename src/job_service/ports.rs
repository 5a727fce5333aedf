//! What the job service needs from the rest of the binary, declared here as traits so
//! that the service imports neither the scheduler nor the agent: the binary's wiring
//! ([`crate::wiring`]) implements them with the scheduler and the agent and passes them
//! in — [`Facts`] when the service is built (`commands::Session::service`, used by the
//! CLI, the API and the MCP server), a [`Runs`] with each run a door asks for (the
//! door's own scheduler, the daemon's for the API).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use jobs::ledger::RunRow;
use jobs::Job;

use super::ServiceError;
use crate::config::Config;
use crate::run_report::RunReport;

/// A run's work as the service awaits it.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, ServiceError>> + Send + 'a>>;

/// Starting, running and replaying runs, and sending a finished run's output again: the
/// scheduler's manual runs. A run it will not start is a [`ServiceError`]: a job
/// already running is [`ServiceError::AlreadyRunning`] (a conflict), a config or store
/// failure the service's own kind of it.
pub trait Runs: Send + Sync {
    /// Runs `job` now, outside its schedule, and waits for its outcome.
    fn run_now(&self, job: Job) -> Pending<'_, RunReport>;
    /// Starts `job` now; returns its new run id once the run is claimed in the ledger,
    /// the run going on in the background.
    fn start_now(&self, job: Job) -> Pending<'_, i64>;
    /// Runs `job` as a replay of run `replay_of` and waits for its outcome.
    fn replay_now(&self, job: Job, replay_of: i64) -> Pending<'_, RunReport>;
    /// Starts `job` as a replay of run `replay_of`; returns the new run id once claimed.
    fn start_replay(&self, job: Job, replay_of: i64) -> Pending<'_, i64>;
    /// Delivers finished run `row`'s stored output again, to `to` (a `deliver` value)
    /// or its job's targets, and records the outcome on the run.
    fn resend<'a>(&'a self, row: &'a RunRow, to: Option<&'a str>) -> Pending<'a, RunReport>;
}

/// What only the agent and the scheduler's settings know, asked when a job is created,
/// edited or re-armed.
pub trait Facts: Send + Sync {
    /// The model and provider an unpinned job would use now, as the agent would resolve
    /// them from `config` and the home's `.env` (recorded on the job as Hermes does).
    fn inference_now(&self, home: &Path, config: &Config) -> jobs::InferenceNow;
    /// How long a run may go silent before it is stopped (`HERMES_CRON_TIMEOUT`;
    /// `None`: never), which a re-armed one-shot's run claim outlives.
    fn inactivity_timeout(&self) -> Option<Duration>;
}
