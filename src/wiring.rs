//! The binary's wiring of the job service: the scheduler and the agent as the parts the
//! service declares ([`crate::job_service::Runs`], [`crate::job_service::Facts`]), so
//! that the service itself imports neither. The CLI, the API and the MCP server get
//! their service from `commands::Session::service` with [`AgentFacts`], and hand their
//! scheduler to each run they ask for.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jobs::ledger::RunRow;
use jobs::Job;

use crate::config::Config;
use crate::job_service::{Facts, Pending, Runs, ServiceError};
use crate::run_report::RunReport;
use crate::scheduler::{Scheduler, SchedulerError};

/// The agent's resolution of the model an unpinned job would use, and the scheduler's
/// inactivity timeout.
pub struct AgentFacts;

impl Facts for AgentFacts {
    fn inference_now(&self, home: &Path, config: &Config) -> jobs::InferenceNow {
        let vars = crate::agent::inference::Vars::load(home);
        crate::agent::inference::inference_now(config, &vars, home)
    }

    fn inactivity_timeout(&self) -> Option<Duration> {
        crate::scheduler::settings::inactivity_timeout()
    }
}

/// The scheduler's refusal of a manual run as the service's error: a job running here
/// is a conflict, a config or store failure the service's own kind of it.
fn refused(e: SchedulerError) -> ServiceError {
    match e {
        SchedulerError::AlreadyRunning(id) => ServiceError::AlreadyRunning(id),
        SchedulerError::Config(e) => ServiceError::Config(e),
        SchedulerError::Job(e) => ServiceError::Job(e),
    }
}

impl Runs for Arc<Scheduler> {
    fn run_now(&self, job: Job) -> Pending<'_, RunReport> {
        Box::pin(async move { Scheduler::run_now(self, job).await.map_err(refused) })
    }

    fn start_now(&self, job: Job) -> Pending<'_, i64> {
        Box::pin(async move { Scheduler::start_now(self, job).await.map_err(refused) })
    }

    fn replay_now(&self, job: Job, replay_of: i64) -> Pending<'_, RunReport> {
        Box::pin(async move {
            Scheduler::replay_now(self, job, replay_of)
                .await
                .map_err(refused)
        })
    }

    fn start_replay(&self, job: Job, replay_of: i64) -> Pending<'_, i64> {
        Box::pin(async move {
            Scheduler::start_replay(self, job, replay_of)
                .await
                .map_err(refused)
        })
    }

    fn resend<'a>(&'a self, row: &'a RunRow, to: Option<&'a str>) -> Pending<'a, RunReport> {
        Box::pin(async move { Scheduler::resend(self, row, to).await.map_err(refused) })
    }
}

#[cfg(test)]
mod tests {
    use jobs::JobError;

    use super::*;
    use crate::job_service::ErrorKind;

    #[test]
    fn a_job_running_here_or_on_another_host_is_a_conflict_and_the_rest_keeps_its_kind() {
        let here = refused(SchedulerError::AlreadyRunning("abc".into()));
        assert_eq!(here.kind(), ErrorKind::Conflict);
        assert_eq!(here.to_string(), "Job abc is already running");
        let elsewhere = refused(SchedulerError::Job(JobError::Running("abc".into())));
        assert_eq!(elsewhere.kind(), ErrorKind::Conflict);
        let gone = refused(SchedulerError::Job(JobError::NotFound("abc".into())));
        assert_eq!(gone.kind(), ErrorKind::NotFound);
    }
}
