//! The job operations behind both route families (Hermes' `/api/jobs` and the
//! dashboard's `/api/cron/`): each reads "now" and the zones afresh, goes through the
//! `jobs` lifecycle functions (the same validation and threat scan as the CLI) and the
//! one store, and starts runs through the scheduler's manual-run path. It never opens a
//! file of the store and never formats an HTTP body (the route modules do).

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use jobs::store::{ExtraField, Listed};
use jobs::{Context, Job, JobEdit, JobError, JobState, NewJob};

use super::ApiState;
use crate::config::Config;
use crate::error::CliError;
use crate::home::{load_context, Home};

/// Why an operation failed: the status and the one-line message to show.
#[derive(Debug)]
pub struct Failure {
    pub status: StatusCode,
    pub message: String,
}

impl Failure {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found() -> Failure {
        Failure::new(StatusCode::NOT_FOUND, "Job not found")
    }
}

impl From<JobError> for Failure {
    fn from(e: JobError) -> Failure {
        match e {
            JobError::NotFound(_) => Failure::not_found(),
            JobError::Blocked(blocked) => Failure::bad_request(blocked_message(&blocked)),
            e if e.is_internal() => Failure::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            e => Failure::bad_request(e.to_string()),
        }
    }
}

impl From<jobs::StoreError> for Failure {
    fn from(e: jobs::StoreError) -> Failure {
        Failure::from(JobError::from(e))
    }
}

impl From<CliError> for Failure {
    fn from(e: CliError) -> Failure {
        let status = if e.code == 1 {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Failure::new(status, e.message)
    }
}

/// Python Hermes' wording of a threat-scan refusal over HTTP.
pub fn blocked_message(blocked: &jobs::threats::PromptBlocked) -> String {
    use jobs::threats::PromptBlocked;
    match blocked {
        PromptBlocked::Pattern(_) => {
            format!("{blocked}. Cron prompts must not contain injection or exfiltration payloads.")
        }
        PromptBlocked::InvisibleUnicode(_) => format!("{blocked} (possible injection)."),
    }
}

/// The API's answers carry one job as a JSON object.
pub type Record = Map<String, Value>;

impl ApiState {
    /// "Now", the zones and the config, read afresh for each request.
    pub fn context(&self) -> Result<(Context, Config), Failure> {
        let home = Home {
            root: self.home.clone(),
        };
        Ok(load_context(&home, self.scheduler.now())?)
    }

    fn job_by_id(&self, ctx: &Context, id: &str) -> Result<Job, Failure> {
        self.scheduler
            .store()
            .get_job(ctx, id)?
            .ok_or_else(Failure::not_found)
    }

    /// Appends every job (only enabled ones unless `include_disabled`), each with its
    /// latest run as `latest_execution` (null when it never ran) and then the `more`
    /// fields, as the items of a JSON list: written straight from the store's listing,
    /// so a store of 10,000 jobs builds no job.
    pub fn write_job_list(
        &self,
        include_disabled: bool,
        more: &[ExtraField<'_>],
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        let (ctx, _) = self.context()?;
        let store = self.scheduler.store();
        let latest = store.latest_runs()?;
        let write = |id: &str, out: &mut Vec<u8>| {
            let mark = out.len();
            match latest.get(id) {
                Some(run) if serde_json::to_writer(&mut *out, run).is_ok() => {}
                _ => {
                    // Nothing half-written stays in the body.
                    out.truncate(mark);
                    out.extend_from_slice(b"null");
                }
            }
        };
        let mut extras = vec![ExtraField {
            key: "latest_execution",
            write: &write,
        }];
        extras.extend_from_slice(more);
        store.write_normalized_jobs(
            &ctx,
            &|job: Listed| include_disabled || job.enabled,
            &extras,
            out,
        )?;
        Ok(())
    }

    pub fn get_job(&self, id: &str) -> Result<Record, Failure> {
        let (ctx, _) = self.context()?;
        Ok(self.job_by_id(&ctx, id)?.normalized(&ctx).into_record())
    }

    /// Creates a job; `new.inference_now` is filled in here, as the CLI does.
    pub fn create_job(&self, mut new: NewJob) -> Result<Record, Failure> {
        let (ctx, config) = self.context()?;
        new.inference_now = crate::agent::config::inference_now(
            &config,
            &crate::agent::config::Vars::load(&self.home),
            &self.home,
        );
        if let Some(script) = &new.script {
            new.script_text = crate::script::read_for_scan(&self.home.join("scripts"), script);
        }
        let job = jobs::create_job(self.scheduler.store(), &new, &ctx)?;
        Ok(job.normalized(&ctx).into_record())
    }

    /// Applies `edit` (when it changes anything), then pauses or resumes the job when
    /// `enabled` says so.
    pub fn update_job(
        &self,
        id: &str,
        mut edit: JobEdit,
        enabled: Option<bool>,
    ) -> Result<Record, Failure> {
        let (ctx, config) = self.context()?;
        let mut job = self.job_by_id(&ctx, id)?;
        if !edit.is_empty() {
            edit.inference_now = crate::agent::config::inference_now(
                &config,
                &crate::agent::config::Vars::load(&self.home),
                &self.home,
            );
            job = jobs::edit_job(self.scheduler.store(), id, &edit, &ctx)?;
        }
        match (enabled, job.state()) {
            (Some(false), state) if state != JobState::Paused && job.enabled() => {
                job = jobs::pause_job(self.scheduler.store(), id, None, &ctx)?;
            }
            (Some(true), JobState::Paused) => {
                job = jobs::resume_job(self.scheduler.store(), id, &ctx)?;
            }
            _ => {}
        }
        Ok(job.normalized(&ctx).into_record())
    }

    pub fn pause_job(&self, id: &str) -> Result<Record, Failure> {
        let (ctx, _) = self.context()?;
        self.job_by_id(&ctx, id)?;
        Ok(jobs::pause_job(self.scheduler.store(), id, None, &ctx)?
            .normalized(&ctx)
            .into_record())
    }

    pub fn resume_job(&self, id: &str) -> Result<Record, Failure> {
        let (ctx, _) = self.context()?;
        self.job_by_id(&ctx, id)?;
        Ok(jobs::resume_job(self.scheduler.store(), id, &ctx)?
            .normalized(&ctx)
            .into_record())
    }

    pub fn remove_job(&self, id: &str) -> Result<(), Failure> {
        let (ctx, _) = self.context()?;
        self.job_by_id(&ctx, id)?;
        jobs::remove_job(self.scheduler.store(), id, &ctx)?;
        Ok(())
    }

    /// Starts the job now through the scheduler's manual-run path (its ledger row exists
    /// when this returns). A paused job is resumed first, as Python Hermes' trigger
    /// does; a job already running is refused (409).
    pub fn run_job(self: &Arc<Self>, id: &str) -> Result<Record, Failure> {
        let (ctx, _) = self.context()?;
        let mut job = self.job_by_id(&ctx, id)?;
        if job.state() == JobState::Paused {
            job = jobs::resume_job(self.scheduler.store(), id, &ctx)?;
        }
        let record = job.clone().normalized(&ctx).into_record();
        self.scheduler.start_now(job).map_err(|e| match e.code {
            1 => Failure::new(StatusCode::CONFLICT, e.message),
            _ => Failure::from(e),
        })?;
        Ok(record)
    }
}
