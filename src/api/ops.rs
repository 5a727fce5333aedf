//! The job operations behind both route families (Hermes' `/api/jobs` and the
//! dashboard's `/api/cron/`): jobs are addressed by id, every change goes through the
//! job service (the same rules as every other door) and failures get their HTTP status
//! from the error's kind. It never opens a file of the store and never formats an HTTP
//! body (the route modules do).

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use jobs::store::{list_normalized, ExtraField, Keep, Listed, ListedJob};
use jobs::{Context, JobEdit, JobError, NewJob};

use super::ApiState;
use crate::config::Config;
use crate::job_service::{Changed, ErrorKind, ServiceError, WhenPaused};

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

impl From<ServiceError> for Failure {
    /// The status comes from the error's kind; a prompt the scan refuses is worded as
    /// Python Hermes' API words it.
    fn from(e: ServiceError) -> Failure {
        if let ServiceError::Job(JobError::Blocked(blocked)) = &e {
            return Failure::bad_request(blocked_message(blocked));
        }
        match e.kind() {
            ErrorKind::NotFound
                if matches!(e, ServiceError::NoIncident(_) | ServiceError::NoRun(_)) =>
            {
                Failure::new(StatusCode::NOT_FOUND, e.to_string())
            }
            ErrorKind::NotFound => Failure::not_found(),
            ErrorKind::Invalid => Failure::bad_request(e.to_string()),
            ErrorKind::Conflict => Failure::new(StatusCode::CONFLICT, e.to_string()),
            ErrorKind::Unreadable | ErrorKind::Internal => {
                Failure::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
        }
    }
}

impl From<JobError> for Failure {
    fn from(e: JobError) -> Failure {
        Failure::from(ServiceError::from(e))
    }
}

impl From<jobs::StoreError> for Failure {
    fn from(e: jobs::StoreError) -> Failure {
        Failure::from(JobError::from(e))
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

/// A job as the API answers with it: as listed, with its `schedule_description`.
fn record(changed: Changed) -> Record {
    let ctx = changed.ctx;
    let mut record = changed.job.normalized(&ctx).into_record();
    let id = record.get("id").and_then(Value::as_str).unwrap_or_default();
    let timezone = record.get("timezone").and_then(Value::as_str);
    let described =
        ListedJob::stored(id, record.get("schedule"), timezone, &ctx).schedule_description();
    record.insert("schedule_description".into(), described.into());
    record
}

impl ApiState {
    /// "Now", the zones and the config, read afresh for each request.
    pub fn context(&self) -> Result<(Context, Config), Failure> {
        Ok(self.jobs.context()?)
    }

    /// Appends every job (only enabled ones unless `include_disabled`), each with its
    /// latest run as `latest_execution` (null when it never ran) and then the `more`
    /// fields, as the items of a JSON list: written straight from the store's listing,
    /// so a store of 10,000 jobs builds no job.
    pub async fn write_job_list(
        &self,
        include_disabled: bool,
        more: Vec<ExtraField>,
        out: Vec<u8>,
    ) -> Result<Vec<u8>, Failure> {
        let (ctx, _) = self.jobs.context()?;
        let store = self.jobs.store();
        let latest = store.latest_runs().await?;
        let write = move |job: &ListedJob<'_>, out: &mut Vec<u8>| {
            let mark = out.len();
            match latest.get(job.id) {
                Some(run) if serde_json::to_writer(&mut *out, run).is_ok() => {}
                _ => {
                    // Nothing half-written stays in the body.
                    out.truncate(mark);
                    out.extend_from_slice(b"null");
                }
            }
        };
        let mut extras = vec![
            ExtraField {
                key: "latest_execution",
                write: Arc::new(write),
            },
            ExtraField::schedule_description(),
        ];
        extras.extend(more);
        let keep: Keep = Arc::new(move |job: Listed| include_disabled || job.enabled);
        Ok(list_normalized(store, &ctx, keep, extras, out).await?)
    }

    /// The job with exactly this id (a name never matches here: both route families
    /// address jobs by id).
    pub async fn get_job(&self, id: &str) -> Result<Record, Failure> {
        Ok(record(self.jobs.get(id).await?))
    }

    pub async fn create_job(&self, new: NewJob) -> Result<Record, Failure> {
        Ok(record(self.jobs.create(new).await?))
    }

    /// Applies `edit` (when it changes anything), then pauses or resumes the job when
    /// `enabled` says so.
    pub async fn update_job(
        &self,
        id: &str,
        edit: JobEdit,
        enabled: Option<bool>,
    ) -> Result<Record, Failure> {
        self.jobs.get(id).await?;
        Ok(record(self.jobs.update(id, edit, enabled).await?))
    }

    pub async fn pause_job(&self, id: &str) -> Result<Record, Failure> {
        self.jobs.get(id).await?;
        Ok(record(self.jobs.pause(id, None).await?))
    }

    pub async fn resume_job(&self, id: &str) -> Result<Record, Failure> {
        self.jobs.get(id).await?;
        Ok(record(self.jobs.resume(id).await?))
    }

    pub async fn remove_job(&self, id: &str) -> Result<(), Failure> {
        self.jobs.get(id).await?;
        self.jobs.remove(id).await?;
        Ok(())
    }

    /// Starts the job now through the scheduler's manual-run path (its ledger row exists
    /// when this returns). A paused job is resumed first, as Python Hermes' trigger
    /// does; a job already running is refused (409).
    /// `run_context` is appended to this run's prompt only.
    pub async fn run_job(&self, id: &str, run_context: Option<&str>) -> Result<Record, Failure> {
        self.jobs.get(id).await?;
        Ok(record(
            self.jobs
                .start_now(&self.scheduler, id, WhenPaused::Resume, run_context)
                .await?,
        ))
    }
}
