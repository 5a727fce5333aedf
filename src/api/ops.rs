//! The job operations behind both route families (Hermes' `/api/jobs` and the
//! dashboard's `/api/cron/`): jobs are addressed by id, every change goes through the
//! job service (the same rules as every other door) and failures get their HTTP status
//! from the error's kind. It never opens a file of the store and never formats an HTTP
//! body (the route modules do).

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use jobs::store::{
    list_normalized, write_jobs_normalized, ExtraField, Keep, Listed, ListedJob, PageQuery,
};
use jobs::{Context, JobEdit, JobError, JobState, NewJob};

use super::ApiState;
use crate::config::Config;
use crate::job_service::{Changed, ErrorKind, ServiceError, WhenPaused};

/// The most jobs a list answers with when no page is asked for: a store of up to this
/// many jobs is listed whole, as Hermes lists it; a larger PostgreSQL store answers
/// with its first page of this size and says how many there are.
pub const UNPAGED_MAX: usize = 10_000;

/// The page a client asked of a job list (`?limit=&offset=&search=`).
#[derive(Debug, Clone, Default)]
pub struct Paging {
    pub offset: usize,
    pub limit: Option<usize>,
    /// Only jobs whose id or name contains this, ignoring case.
    pub search: Option<String>,
}

impl Paging {
    /// Reads the query's paging parameters; a bad one is a 400 that says what to send.
    pub fn read(
        limit: Option<&str>,
        offset: Option<&str>,
        search: Option<&str>,
    ) -> Result<Paging, Failure> {
        let limit = match limit.map(str::trim) {
            None | Some("") => None,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=UNPAGED_MAX).contains(&n) => Some(n),
                _ => {
                    return Err(Failure::bad_request(format!(
                        "limit must be a whole number from 1 to {UNPAGED_MAX}"
                    )))
                }
            },
        };
        let offset = match offset.map(str::trim) {
            None | Some("") => 0,
            Some(text) => text.parse::<usize>().map_err(|_| {
                Failure::bad_request("offset must be a whole number (0 for the first page)")
            })?,
        };
        let search = search
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        Ok(Paging {
            offset,
            limit,
            search,
        })
    }

    /// Whether the client asked for a page (or a search) rather than the whole list.
    pub fn asked(&self) -> bool {
        self.limit.is_some() || self.offset > 0 || self.search.is_some()
    }
}

/// What a page of a job list held, for the answer to say.
#[derive(Debug, Clone, Copy)]
pub struct PageInfo {
    /// The jobs that match in all.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    /// The jobs on this page.
    pub count: usize,
}

impl PageInfo {
    /// The offset of the next page, when there is one.
    pub fn next_offset(&self) -> Option<usize> {
        let next = self.offset + self.count;
        (self.count > 0 && next < self.total).then_some(next)
    }

    /// `"total"`, `"offset"`, `"limit"` and `"next_offset"` (null on the last page),
    /// as JSON members to follow the list in an answer object.
    pub fn members(&self) -> String {
        let next = self
            .next_offset()
            .map_or_else(|| "null".to_string(), |n| n.to_string());
        format!(
            ",\"total\":{},\"offset\":{},\"limit\":{},\"next_offset\":{next}",
            self.total, self.offset, self.limit
        )
    }
}

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
        paging: &Paging,
        more: Vec<ExtraField>,
        mut out: Vec<u8>,
    ) -> Result<(Vec<u8>, Option<PageInfo>), Failure> {
        let (ctx, _) = self.jobs.context()?;
        let store = self.jobs.store();
        // Unpaged: every job, as Hermes answers, while the store is of a size where that
        // is sane (jobs.json always; PostgreSQL up to UNPAGED_MAX jobs).
        let unpaged = !paging.asked()
            && (store.listing().is_some()
                || store.job_page(&ctx, &PageQuery::count_all()).await?.total <= UNPAGED_MAX);
        let query = PageQuery {
            offset: paging.offset,
            limit: paging.limit.unwrap_or(UNPAGED_MAX),
            completed: include_disabled,
            // Hermes leaves out disabled jobs: paused and completed ones.
            states: if include_disabled {
                Vec::new()
            } else {
                vec![JobState::Scheduled, JobState::Error]
            },
            search: paging.search.clone(),
            chained: false,
        };
        let (page, latest) = if unpaged {
            (None, store.latest_runs(None).await?)
        } else {
            let page = store.job_page(&ctx, &query).await?;
            let ids: Vec<String> = page.jobs.iter().map(|j| j.id().to_string()).collect();
            let latest = store.latest_runs(Some(&ids)).await?;
            (Some(page), latest)
        };
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
        let Some(page) = page else {
            let keep: Keep = Arc::new(move |job: Listed| include_disabled || job.enabled);
            return Ok((list_normalized(store, &ctx, keep, extras, out).await?, None));
        };
        let info = PageInfo {
            total: page.total,
            offset: query.offset,
            limit: query.limit,
            count: page.jobs.len(),
        };
        write_jobs_normalized(&ctx, page.jobs, &extras, &mut out)?;
        Ok((out, Some(info)))
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
    /// `enabled` says so. The service judges the edit before it looks for the job, as
    /// Python Hermes does.
    pub async fn update_job(
        &self,
        id: &str,
        edit: JobEdit,
        enabled: Option<bool>,
    ) -> Result<Record, Failure> {
        Ok(record(self.jobs.update(id, edit, enabled).await?))
    }

    pub async fn pause_job(&self, id: &str) -> Result<Record, Failure> {
        Ok(record(self.jobs.pause(id, None).await?))
    }

    pub async fn resume_job(&self, id: &str) -> Result<Record, Failure> {
        Ok(record(self.jobs.resume(id).await?))
    }

    /// Removes the job; returns the jobs whose chain waited on it (id, name).
    pub async fn remove_job(&self, id: &str) -> Result<Vec<(String, String)>, Failure> {
        self.jobs.remove(id).await?;
        Ok(self.jobs.waiting_on(id).await)
    }

    /// Starts the job now through the scheduler's manual-run path (its ledger row exists
    /// when this returns). A paused job is resumed first, as Python Hermes' trigger
    /// does; a job already running is refused (409).
    /// `run_context` is appended to this run's prompt only.
    pub async fn run_job(&self, id: &str, run_context: Option<&str>) -> Result<Record, Failure> {
        Ok(record(
            self.jobs
                .start_now(&self.scheduler, id, WhenPaused::Resume, run_context)
                .await?,
        ))
    }
}

/// The answer of a removal on the REST routes: `{"ok": true}`, with `waiting` (the ids
/// and names of the jobs whose chain waited on the removed job) and the `message` every
/// door gives about them when there are any.
pub fn removed_reply(id: &str, waiting: &[(String, String)]) -> serde_json::Value {
    match jobs::chain::waiting_note(id, waiting) {
        None => serde_json::json!({ "ok": true }),
        Some(note) => serde_json::json!({
            "ok": true,
            "waiting": waiting.iter().map(|(id, name)| serde_json::json!({"id": id, "name": name})).collect::<Vec<_>>(),
            "message": note,
        }),
    }
}
