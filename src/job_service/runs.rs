//! Runs as things to act on, for every door: cancel a job's run (or one run by its id)
//! and replay a run. The request to cancel is a mark in the store's ledger, seen by
//! whichever process runs the run (the scheduler's cancel); a replay is a new
//! manual run with the prompt and model the original run was asked with.

use jobs::ledger::{CancelTarget, RunRequest};
use jobs::{Job, JobError, JobState};

use super::{Changed, JobService, Runs, ServiceError};
use crate::run_report::RunReport;

/// What a cancel request reached.
#[derive(Debug, Clone)]
pub struct CancelRequested {
    /// The job of the runs (`None`: a run of a job removed since).
    pub job: Option<Job>,
    pub job_id: String,
    /// The ledger rows asked to stop.
    pub runs: Vec<i64>,
}

impl CancelRequested {
    /// What every door tells the user.
    pub fn message(&self) -> String {
        let runs: Vec<String> = self.runs.iter().map(i64::to_string).collect();
        let name = self
            .job
            .as_ref()
            .map_or_else(String::new, |j| format!(" '{}'", j.name()));
        format!(
            "Cancelling run {} of job {}{name}: it stops within 5 seconds, recorded as cancelled.",
            runs.join(", "),
            self.job_id
        )
    }
}

/// A replay about to run: the job as it will run, and what it repeats.
pub struct Replay {
    pub job: Job,
    pub replay_of: i64,
    /// The original run was recorded before runs kept their prompt and model: the job's
    /// current prompt and model are used.
    pub from_current_job: bool,
}

impl Replay {
    /// The note every door adds for a run recorded before prompts were kept.
    pub fn note(&self) -> Option<String> {
        self.from_current_job.then(|| {
            format!(
                "Run {} was recorded before runs kept their prompt and model: replaying with the job's current ones.",
                self.replay_of
            )
        })
    }
}

impl JobService {
    /// Asks the run(s) of a job to stop: `reference` is a job (its id or name; every run
    /// of it going) or a run id as `hermes cron runs` shows it. Refused with
    /// [`ServiceError::NothingRunning`] when nothing of it runs.
    pub async fn cancel(&self, reference: &str) -> Result<CancelRequested, ServiceError> {
        let (ctx, _) = self.context()?;
        let (job, target_run) = match self.find(reference).await {
            Ok(found) => (Some(found.job), None),
            Err(ServiceError::Job(JobError::NotFound(_))) => {
                let Some(run) = run_id(reference) else {
                    return Err(not_found(reference));
                };
                let Some((job_id, _)) = self.store().run_request(run).await? else {
                    return Err(not_found(reference));
                };
                let job = self.store().get_job(&ctx, &job_id).await?;
                (job, Some((run, job_id)))
            }
            Err(e) => return Err(e),
        };
        let (target, job_id) = match (&target_run, &job) {
            (Some((run, job_id)), _) => (CancelTarget::Run(*run), job_id.clone()),
            (None, Some(job)) => (CancelTarget::Job(job.id()), job.id().to_string()),
            (None, None) => return Err(not_found(reference)),
        };
        let runs = self.store().request_cancel(target, ctx.now).await?;
        if runs.is_empty() {
            return Err(ServiceError::NothingRunning(match target_run {
                Some((run, _)) => format!("Run {run} is not running: nothing to cancel"),
                None => format!("Job {job_id} has no run going: nothing to cancel"),
            }));
        }
        Ok(CancelRequested { job, job_id, runs })
    }

    /// The job run `run` belongs to, as it would run again: the prompt (a per-run prompt
    /// included) and model the original run was asked with. For an unpinned job the
    /// model is the one that answered the original run. Paused and removed jobs are
    /// refused as `run` refuses them.
    pub async fn replay_of(&self, run: i64) -> Result<Replay, ServiceError> {
        let Some((job_id, request)) = self.store().run_request(run).await? else {
            return Err(ServiceError::NoRun(run));
        };
        let Changed { job, .. } = self.get(&job_id).await.map_err(|e| match e {
            ServiceError::Job(JobError::NotFound(_)) => ServiceError::Job(JobError::Invalid(
                format!("Job {job_id} of run {run} was removed: there is nothing to replay"),
            )),
            e => e,
        })?;
        if job.state() == JobState::Paused {
            return Err(ServiceError::Paused(job.id().to_string()));
        }
        let answered = match &request.model {
            Some(_) => None,
            None => self
                .store()
                .recent_runs(Some(&job_id), 500)
                .await?
                .into_iter()
                .find(|row| row.id == run)
                .and_then(|row| row.model),
        };
        let RunRequest { prompt, model, .. } = request;
        let mut replayed = job.clone();
        let from_current_job = prompt.is_none();
        if let Some(prompt) = &prompt {
            replayed.set_prompt(prompt);
        }
        if let Some(model) = model.or(answered) {
            replayed.set_text(jobs::job::TextField::Model, Some(&model));
        }
        Ok(Replay {
            job: replayed,
            replay_of: run,
            from_current_job,
        })
    }

    /// Replays run `run` now and waits for its outcome (`hermes cron replay`).
    pub async fn replay_now(
        &self,
        runs: &dyn Runs,
        run: i64,
    ) -> Result<(Replay, RunReport), ServiceError> {
        let replay = self.replay_of(run).await?;
        let report = runs.replay_now(replay.job.clone(), run).await?;
        Ok((replay, report))
    }

    /// Starts a replay of run `run` and returns once it is claimed: the replay and its
    /// new run id (the API and the dashboard).
    pub async fn start_replay(
        &self,
        runs: &dyn Runs,
        run: i64,
    ) -> Result<(Replay, i64), ServiceError> {
        let replay = self.replay_of(run).await?;
        let id = runs.start_replay(replay.job.clone(), run).await?;
        Ok((replay, id))
    }
}

/// A run id as the user typed it: `42` or `#42`.
fn run_id(reference: &str) -> Option<i64> {
    let text = reference.trim();
    text.strip_prefix('#')
        .unwrap_or(text)
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
}

fn not_found(reference: &str) -> ServiceError {
    ServiceError::Job(JobError::Invalid(format!(
        "No job or run '{}': give a job id or name ('hermes cron list'), or a run id ('hermes cron runs')",
        reference.trim()
    )))
}
