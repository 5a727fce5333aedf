//! Chains of jobs: a job with `after: {"job": ID, "on": "success"}` runs each time a run
//! of job ID ends with that outcome (scheduled, manual or replayed), once per upstream
//! run, whatever else it does on its own schedule.
//!
//! The trigger is durable without a table of its own: the upstream run's finished row in
//! the ledger *is* the pending trigger, and the chained run claims the ledger occurrence
//! `<job>@after-<upstream run id>` ([`occurrence`]). The unique occurrence key makes it
//! exactly-once across hosts and restarts: a scheduler killed between the upstream run
//! and the chained one finds the finished upstream row without its chained occurrence on
//! its next pass and claims it then; two hosts never both claim it.
//!
//! Only upstream runs that finished at or after the chain was set count (`after_since`,
//! stamped whenever `after` is set), so a new chain never fires for history.
//!
//! Outcomes: `ok` is success; `cancelled` is neither success nor failure (only `always`
//! fires on it); runs that never started (`skipped`, `missed`) and runs still going fire
//! nothing; every other end — `error`, `interrupted`, `budget_exceeded`,
//! `budget_exhausted` and any status this build does not know — is a failure.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::ledger::RunStatus;
use crate::lifecycle::JobError;
use crate::model::job::{Context, Job};
use crate::store::Store;

/// The job field that names the upstream job.
pub const AFTER: &str = "after";
/// The instant (RFC 3339, UTC) the chain was set: older upstream runs never fire it.
pub const AFTER_SINCE: &str = "after_since";

/// Which upstream outcomes fire a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    Success,
    Failure,
    Always,
}

impl On {
    /// `success`, `failure` or `always` (case and surrounding blanks ignored).
    pub fn parse(text: &str) -> Result<On, JobError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "success" => Ok(On::Success),
            "failure" => Ok(On::Failure),
            "always" => Ok(On::Always),
            other => Err(JobError::Invalid(format!(
                "--on must be success, failure or always (got '{other}')"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            On::Success => "success",
            On::Failure => "failure",
            On::Always => "always",
        }
    }

    /// Whether an upstream run that ended with ledger status `status` fires the chain.
    pub fn fires_on(self, status: &RunStatus) -> bool {
        let outcome = match status {
            RunStatus::Ok => Outcome::Success,
            RunStatus::Cancelled => Outcome::Cancelled,
            RunStatus::Running | RunStatus::Claimed | RunStatus::Skipped | RunStatus::Missed => {
                return false
            }
            _ => Outcome::Failure,
        };
        matches!(
            (self, outcome),
            (On::Always, _) | (On::Success, Outcome::Success) | (On::Failure, Outcome::Failure)
        )
    }
}

enum Outcome {
    Success,
    Failure,
    Cancelled,
}

/// A job's chain: the upstream job's id and the outcomes that fire it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub job: String,
    pub on: On,
}

impl After {
    /// The chain a job has, when its `after` names a job (an `on` this build cannot read
    /// counts as `success`, the default).
    pub fn of(job: &Job) -> Option<After> {
        let value = job.get(AFTER)?;
        let upstream = value.get("job").and_then(Value::as_str)?.trim();
        if upstream.is_empty() {
            return None;
        }
        let on = value
            .get("on")
            .and_then(Value::as_str)
            .and_then(|text| On::parse(text).ok())
            .unwrap_or(On::Success);
        Some(After {
            job: upstream.to_string(),
            on,
        })
    }

    pub fn to_json(&self) -> Value {
        json!({"job": self.job, "on": self.on.as_str()})
    }
}

/// When the job's chain was set; `None` when it was never stamped (a chain written by
/// hand counts from the start of time).
pub fn since(job: &Job) -> Option<DateTime<Utc>> {
    let text = job.get(AFTER_SINCE)?.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Sets (`Some`) or removes (`None`) a job's chain; a set chain is stamped `now`.
pub fn set(job: &mut Job, after: Option<&After>, now: DateTime<Utc>) {
    match after {
        Some(after) => {
            job.set(AFTER, after.to_json());
            job.set(
                AFTER_SINCE,
                json!(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            );
        }
        None => {
            job.set(AFTER, Value::Null);
            job.set(AFTER_SINCE, Value::Null);
        }
    }
}

/// The ledger occurrence of the chained run `job_id` makes for upstream run `run`.
pub fn occurrence(job_id: &str, upstream_run: i64) -> String {
    format!("{job_id}@after-{upstream_run}")
}

/// Refuses a chain that would make `job_id` wait on itself, directly or through other
/// jobs' chains; `jobs` are the stored jobs (the job's own stored chain is ignored).
pub fn check_cycle(jobs: &[Job], job_id: &str, upstream: &str) -> Result<(), JobError> {
    let mut path = vec![job_id.to_string()];
    let mut at = upstream.to_string();
    loop {
        path.push(at.clone());
        if at == job_id {
            let names: Vec<String> = path
                .iter()
                .map(|id| {
                    let name = jobs
                        .iter()
                        .find(|j| j.id() == id)
                        .map(Job::name)
                        .unwrap_or("this job");
                    format!("'{name}' ({id})")
                })
                .collect();
            return Err(JobError::Invalid(format!(
                "--after would make a cycle: {} — a job cannot wait on itself; chain it after a job that does not wait on it",
                names.join(" waits on ")
            )));
        }
        // Jobs on the path already seen: a cycle elsewhere that does not reach this job.
        if path[..path.len() - 1].contains(&at) {
            return Ok(());
        }
        let next = jobs
            .iter()
            .find(|j| j.id() == at)
            .and_then(After::of)
            .map(|a| a.job);
        match next {
            Some(next) => at = next,
            None => return Ok(()),
        }
    }
}

/// The stored jobs whose chain waits on `upstream`.
pub fn waiting_on<'a>(jobs: &'a [Job], upstream: &str) -> Vec<&'a Job> {
    jobs.iter()
        .filter(|j| j.id() != upstream && After::of(j).is_some_and(|a| a.job == upstream))
        .collect()
}

/// What `add`/`edit` ask of a job's chain (`--after JOB`, `""` to remove it, and
/// `--on`), resolved against the stored jobs: `None` changes nothing, `Some(None)`
/// removes the chain. `job_id` is the edited job (`None`: a new job, which nothing can
/// wait on yet); `current` its chain now. A reference to no job, a bad `--on`, `--on`
/// without a chain and a cycle are refused, before anything is written.
pub async fn resolve(
    store: &dyn Store,
    ctx: &Context,
    job_id: Option<&str>,
    current: Option<After>,
    after: Option<&str>,
    on: Option<&str>,
) -> Result<Option<Option<After>>, JobError> {
    let on = on.map(On::parse).transpose()?;
    let upstream = match after.map(str::trim) {
        None => {
            return match (on, current) {
                (None, _) => Ok(None),
                (Some(on), Some(current)) => Ok(Some(Some(After {
                    job: current.job,
                    on,
                }))),
                (Some(_), None) => Err(JobError::Invalid(
                    "--on needs --after JOB: this job waits on no job".into(),
                )),
            };
        }
        Some("") if on.is_some() => {
            return Err(JobError::Invalid(
                "--on needs --after JOB: an empty --after removes the chain".into(),
            ))
        }
        Some("") => return Ok(Some(None)),
        Some(reference) => reference,
    };
    let jobs = store.load_view(ctx, &["id", "name", AFTER]).await?;
    let found = crate::lifecycle::find_job(&jobs, upstream).map_err(|e| match e {
        JobError::NotFound(reference) => JobError::Invalid(format!(
            "--after names no job: '{reference}'. Run 'hermes cron list --all' to see job IDs"
        )),
        other => other,
    })?;
    let upstream = found.id().to_string();
    if let Some(id) = job_id {
        check_cycle(&jobs, id, &upstream)?;
    }
    Ok(Some(Some(After {
        job: upstream,
        on: on.unwrap_or(On::Success),
    })))
}

/// What a door's `after` value asks (the job reference, `--on`): `{"job": ID, "on":
/// "success"}` (`on` optional; alone on an update it changes the outcome only), a job id
/// or name, or `null` (`""` for the reference: remove the chain on an update). `None`
/// value: nothing asked. The job service judges the reference and the outcome.
pub fn requested(value: Option<&Value>) -> Result<(Option<String>, Option<String>), String> {
    const SHAPE: &str = "after must be {\"job\": ID, \"on\": \"success\"|\"failure\"|\"always\"}, a job id, or null";
    let string = |value: Option<&Value>| -> Result<Option<String>, String> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(SHAPE.to_string()),
        }
    };
    match value {
        None => Ok((None, None)),
        Some(Value::Null) => Ok((Some(String::new()), None)),
        Some(Value::String(reference)) => Ok((Some(reference.clone()), None)),
        Some(Value::Object(after)) => {
            if let Some(key) = after.keys().find(|k| *k != "job" && *k != "on") {
                return Err(format!("{SHAPE} (unknown key '{key}')"));
            }
            Ok((string(after.get("job"))?, string(after.get("on"))?))
        }
        Some(_) => Err(SHAPE.to_string()),
    }
}

/// What removing job `removed` tells the user about the jobs whose chain waits on it
/// (they stay, their chain never fires again): `None` when none waits.
pub fn waiting_note(removed: &str, waiting: &[(String, String)]) -> Option<String> {
    if waiting.is_empty() {
        return None;
    }
    let names: Vec<String> = waiting
        .iter()
        .map(|(id, name)| format!("'{name}' ({id})"))
        .collect();
    Some(format!(
        "Waiting on {removed}: {} — their chain never fires now; chain them after another job with 'hermes cron edit JOB --after OTHER', or remove the chain with --after \"\"",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes() {
        assert!(On::Success.fires_on(&RunStatus::parse("ok")));
        assert!(!On::Success.fires_on(&RunStatus::parse("error")));
        assert!(On::Failure.fires_on(&RunStatus::parse("error")));
        assert!(On::Failure.fires_on(&RunStatus::parse("interrupted")));
        assert!(On::Failure.fires_on(&RunStatus::parse("something_new")));
        assert!(!On::Failure.fires_on(&RunStatus::parse("ok")));
        assert!(!On::Failure.fires_on(&RunStatus::parse("cancelled")));
        assert!(!On::Success.fires_on(&RunStatus::parse("cancelled")));
        assert!(On::Always.fires_on(&RunStatus::parse("cancelled")));
        assert!(On::Always.fires_on(&RunStatus::parse("ok")));
        assert!(!On::Always.fires_on(&RunStatus::parse("skipped")));
        assert!(!On::Always.fires_on(&RunStatus::parse("running")));
        assert!(On::parse(" Failure ").is_ok());
        assert!(On::parse("sometimes").is_err());
    }

    #[test]
    fn occurrence_key() {
        assert_eq!(occurrence("abc", 42), "abc@after-42");
    }
}
