//! What each `cronjob` action does, and its reply in the shapes of Python Hermes' tool
//! (`success`, `job`, `message`, …). Every change goes through the `jobs` lifecycle —
//! the validation and prompt scan of `hermes cron add/edit` — on the session's store; a
//! run goes through the scheduler's manual-run path. Never opens a store file itself.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use jobs::ledger::RunStatus;
use jobs::{find_job, Context, Job, JobEdit, JobError, JobState, NewJob};
use schedules::format_instant;

use super::arguments::{ArgumentError, Arguments};
use crate::job_service::{Changed, JobService, ServiceError, WhenPaused};
use crate::scheduler::Scheduler;

/// How many future run times a create or update reply shows.
const NEXT_RUNS: usize = 3;

/// The keys [`Cron::resolve`] reads to find a job and describe an ambiguous match.
const REFERENCE_KEYS: &[&str] = jobs::field_table::REFERENCE_KEYS;

/// Why an action did not happen, as the reply tells the model.
#[derive(Debug)]
pub enum Failure {
    Message(String),
    NotFound(String),
    /// A name several jobs share: the reply lists them so the model can pick an id.
    Ambiguous {
        message: String,
        matches: Vec<Value>,
    },
}

impl Failure {
    /// The reply: Python Hermes' `{"success": false, "error": …}`.
    pub fn reply(self) -> Value {
        match self {
            Failure::Message(error) => json!({"success": false, "error": error}),
            Failure::NotFound(reference) => json!({
                "success": false,
                "error": format!("Job with ID or name '{reference}' not found. Use cronjob(action='list') to inspect jobs."),
            }),
            Failure::Ambiguous { message, matches } => {
                json!({"success": false, "error": message, "matches": matches})
            }
        }
    }
}

impl From<JobError> for Failure {
    fn from(e: JobError) -> Failure {
        match e {
            JobError::NotFound(reference) => Failure::NotFound(reference),
            other => Failure::Message(other.to_string()),
        }
    }
}

impl From<jobs::StoreError> for Failure {
    fn from(e: jobs::StoreError) -> Failure {
        Failure::Message(e.to_string())
    }
}

impl From<ArgumentError> for Failure {
    fn from(e: ArgumentError) -> Failure {
        Failure::Message(e.to_string())
    }
}

impl From<ServiceError> for Failure {
    fn from(e: ServiceError) -> Failure {
        match e {
            ServiceError::Job(e) => Failure::from(e),
            other => Failure::Message(other.to_string()),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::Message(message.to_string())
    }
}

/// The parts the actions work with, shared by every call of one server.
pub struct Cron {
    /// Every change to a job goes through it.
    pub jobs: JobService,
    /// The scheduler whose manual-run path `run` takes; it remembers which jobs this
    /// process is running, so a second `run` of one of them is refused.
    pub scheduler: Arc<Scheduler>,
}

impl Cron {
    /// Carries out one call; the reply says `"success": false` when it did not happen.
    pub async fn call(&self, args: Arguments) -> Value {
        let action = args.action.trim().to_ascii_lowercase();
        let result = match action.as_str() {
            "run" | "run_now" | "trigger" => self.run(&args).await,
            "redeliver" => self.redeliver(&args).await,
            _ => self.change(&action, &args).await,
        };
        result.unwrap_or_else(Failure::reply)
    }

    /// Sends a finished run's stored output again (`hermes cron redeliver`).
    async fn redeliver(&self, args: &Arguments) -> Result<Value, Failure> {
        let Some(run) = args.run_id else {
            return Err("redeliver needs run_id: the id of a finished run".into());
        };
        let report = self
            .jobs
            .redeliver(&self.scheduler, run, args.to.as_deref())
            .await?;
        let message = match &report.error {
            None => format!("Run {run} delivered again."),
            Some(error) => format!("Run {run} was not delivered again: {error}"),
        };
        Ok(json!({
            "success": report.error.is_none(),
            "run_id": run,
            "job_id": report.job_id,
            "delivery": report.delivery,
            "message": message,
        }))
    }

    /// "Now", the zones and the config are read afresh for each call: the server lives
    /// for as long as the chat agent does.
    async fn change(&self, action: &str, args: &Arguments) -> Result<Value, Failure> {
        let (ctx, _) = self.jobs.context()?;
        match action {
            "create" => self.create(args).await,
            "list" => self.list(args, &ctx).await,
            "update" => self.update(args, &ctx).await,
            "pause" => {
                let id = self.resolve(args, &ctx).await?;
                let Changed { job, ctx } = self.jobs.pause(&id, args.reason.as_deref()).await?;
                Ok(json!({"success": true, "job": format_job(&job, &ctx)}))
            }
            "resume" => {
                let id = self.resolve(args, &ctx).await?;
                let Changed { job, ctx } = self.jobs.resume(&id).await?;
                Ok(json!({"success": true, "job": format_job(&job, &ctx), "next_runs": next_runs(&job, &ctx)}))
            }
            "remove" => {
                let id = self.resolve(args, &ctx).await?;
                let Changed { job, ctx } = self.jobs.remove(&id).await?;
                let waiting = self.jobs.waiting_on(job.id()).await;
                let mut out = json!({
                    "success": true,
                    "message": format!("Cron job '{}' removed.", job.name()),
                    "removed_job": {"id": job.id(), "name": job.name(), "schedule": job.schedule_display(&ctx).ok()},
                });
                if let Some(note) = jobs::chain::waiting_note(job.id(), &waiting) {
                    out["message"] = json!(format!("Cron job '{}' removed. {note}", job.name()));
                    out["waiting"] = json!(waiting
                        .iter()
                        .map(|(id, name)| json!({"id": id, "name": name}))
                        .collect::<Vec<_>>());
                }
                Ok(out)
            }
            "cancel" => {
                // Stops the job's running run, wherever it runs (docs/RUNNING.md).
                let id = self.resolve(args, &ctx).await?;
                let requested = self.jobs.cancel(&id).await?;
                Ok(json!({
                    "success": true,
                    "job_id": requested.job_id,
                    "runs": requested.runs,
                    "message": requested.message(),
                }))
            }
            "" => Err("action is required: one of create, list, update, pause, resume, remove, run, redeliver, cancel".into()),
            other => Err(format!(
                "Unknown cron action '{other}': use create, list, update, pause, resume, remove, run, redeliver or cancel"
            )
            .into()),
        }
    }

    /// The id of the job `job_id` names (an id, else an exact name).
    async fn resolve(&self, args: &Arguments, ctx: &Context) -> Result<String, Failure> {
        let reference = args
            .job_id
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("job_id is required for action '{}'", args.action.trim()))?;
        let jobs = self.jobs.store().load_view(ctx, REFERENCE_KEYS).await?;
        match find_job(&jobs, reference) {
            Ok(job) => Ok(job.id().to_string()),
            Err(JobError::Ambiguous { reference, ids }) => Err(Failure::Ambiguous {
                message: format!(
                    "Job name '{reference}' matches {} jobs: give the job_id",
                    ids.len()
                ),
                matches: jobs
                    .iter()
                    .filter(|job| ids.iter().any(|id| id == job.id()))
                    .map(|job| {
                        json!({
                            "id": job.id(),
                            "name": job.name(),
                            "schedule": job.schedule_display(ctx).ok(),
                            "next_run_at": job.text_field("next_run_at"),
                        })
                    })
                    .collect(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    async fn create(&self, args: &Arguments) -> Result<Value, Failure> {
        let schedule = non_blank(&args.schedule).ok_or("schedule is required for create")?;
        let no_agent = args.no_agent.unwrap_or(false);
        let script = non_blank(&args.script);
        let skills = args.skills.clone().unwrap_or_default();
        if no_agent && script.is_none() {
            return Err(
                "create with no_agent=true requires a script: the script is the job".into(),
            );
        }
        let prompt = args.prompt.clone().unwrap_or_default();
        if prompt.trim().is_empty()
            && skills.iter().all(|s| s.trim().is_empty())
            && script.is_none()
        {
            return Err("create requires a prompt, at least one skill or a script".into());
        }
        args.refuse_model_pins()?;
        let deliver = args.deliver_text()?;
        let origin = args.origin_text()?;
        let (monitor_script, monitor_url) = args.monitor_pair();
        let defaulted_to_local = deliver.is_none() && origin.is_none();
        let after = jobs::chain::requested(args.after.as_ref())?;
        let new = NewJob {
            schedule: schedule.to_string(),
            prompt,
            name: args.name.clone(),
            deliver,
            repeat: args.repeat_text()?,
            skills,
            script: script.map(str::to_string),
            no_agent,
            workdir: args.workdir.clone(),
            sandbox: args.sandbox.clone(),
            timezone: args.timezone.clone(),
            paused: args.paused.unwrap_or(false),
            paused_reason: args.paused_reason.clone(),
            failure_deliver: args.failure_deliver_text()?,
            monitor_script,
            monitor_url,
            continuity: args.continuity.unwrap_or(false),
            context_from: args.context_from_list()?.unwrap_or_default(),
            enabled_toolsets: args.toolsets()?.flatten(),
            pin: args.pinned.unwrap_or(false),
            origin,
            overlap: args.overlap.clone(),
            caps: args.caps()?,
            after: after.0,
            after_on: after.1,
            window: args.window()?,
            ..NewJob::default()
        };
        let Changed { job, ctx } = self.jobs.create(new).await?;
        let ctx = &ctx;
        let mut message = format!("Cron job '{}' created.", job.name());
        if defaulted_to_local {
            message.push_str(" It has no origin and no deliver, so its results are only saved (see them with action='list'); pass origin or deliver to have them sent to a chat.");
        }
        let formatted = format_job(&job, ctx);
        Ok(json!({
            "success": true,
            "job_id": job.id(),
            "name": job.name(),
            "skill": formatted["skill"],
            "skills": formatted["skills"],
            "schedule": formatted["schedule"],
            "repeat": formatted["repeat"],
            "deliver": job.deliver(),
            "next_run_at": job.text_field("next_run_at"),
            "next_runs": next_runs(&job, ctx),
            "job": formatted,
            "message": message,
        }))
    }

    async fn list(&self, args: &Arguments, ctx: &Context) -> Result<Value, Failure> {
        // Python Hermes' tool lists paused and completed jobs unless told not to.
        let all = args.include_disabled.unwrap_or(true);
        let jobs: Vec<Value> = self
            .jobs
            .store()
            .load_jobs(ctx)
            .await?
            .iter()
            .filter(|job| all || matches!(job.state(), JobState::Scheduled | JobState::Error))
            .map(|job| format_job(job, ctx))
            .collect();
        Ok(json!({"success": true, "count": jobs.len(), "jobs": jobs}))
    }

    async fn update(&self, args: &Arguments, ctx: &Context) -> Result<Value, Failure> {
        args.refuse_model_pins()?;
        let (monitor_script, monitor_url) = args.monitor_pair();
        let after = jobs::chain::requested(args.after.as_ref())?;
        let edit = JobEdit {
            schedule: args.schedule.clone(),
            prompt: args.prompt.clone(),
            name: args.name.clone(),
            deliver: args.deliver_text()?,
            repeat: args.repeat_text()?,
            skills: args.skills.clone(),
            script: args.script.clone(),
            no_agent: args.no_agent,
            workdir: args.workdir.clone(),
            sandbox: args.sandbox.clone(),
            timezone: args.timezone.clone(),
            failure_deliver: args.failure_deliver_text()?,
            monitor_script,
            monitor_url,
            continuity: args.continuity,
            context_from: args.context_from_list()?,
            enabled_toolsets: args.toolsets()?,
            pin: args.pinned,
            caps: args.caps()?,
            after: after.0,
            after_on: after.1,
            window: args.window()?,
            overlap: args.overlap.clone(),
            ..JobEdit::default()
        };
        if edit.is_empty() {
            return Err("No updates provided.".into());
        }
        let id = self.resolve(args, ctx).await?;
        let Changed { job, ctx } = self.jobs.edit(&id, edit).await?;
        Ok(
            json!({"success": true, "job": format_job(&job, &ctx), "next_runs": next_runs(&job, &ctx)}),
        )
    }

    /// The job `job_id` names, whole, with the context it was read in.
    async fn load(&self, args: &Arguments) -> Result<(Job, Context), Failure> {
        let (ctx, _) = self.jobs.context()?;
        let id = self.resolve(args, &ctx).await?;
        let Changed { job, ctx } = self.jobs.get(&id).await?;
        Ok((job, ctx))
    }

    /// `run`: the job runs now, outside its schedule, and the reply waits for the
    /// outcome — the scheduler's manual run, as `hermes cron run` does.
    async fn run(&self, args: &Arguments) -> Result<Value, Failure> {
        let (job, ctx) = self.load(args).await?;
        let id = job.id().to_string();
        let mut outcome = Map::new();
        let mut executed = false;
        match self
            .jobs
            .run_now(
                &self.scheduler,
                &id,
                WhenPaused::Refuse,
                args.prompt.as_deref(),
            )
            .await
        {
            Ok(report) => {
                executed = true;
                let ok = report.status == RunStatus::Ok;
                outcome.insert("execution_success".into(), json!(ok));
                if let Some(error) = &report.error {
                    outcome.insert("execution_error".into(), json!(error));
                }
                outcome.insert(
                    "run".into(),
                    json!({
                        "occurrence": report.occurrence,
                        "status": report.status.as_str(),
                        "output": report.output,
                        "delivery": report.delivery,
                    }),
                );
            }
            Err(ServiceError::Paused(_)) => {
                outcome.insert(
                    "execution_skipped".into(),
                    json!("Job is paused; resume it before running."),
                );
            }
            Err(e) => {
                outcome.insert("execution_skipped".into(), json!(e.to_string()));
            }
        }
        // The job as the run left it (last status, next run), or as it was if it is gone.
        let after = self
            .jobs
            .store()
            .load_jobs(&ctx)
            .await
            .ok()
            .and_then(|jobs| jobs.into_iter().find(|j| j.id() == id));
        let mut reply = format_job(after.as_ref().unwrap_or(&job), &ctx);
        reply["executed"] = json!(executed);
        if !outcome.contains_key("execution_success") {
            reply["execution_success"] = json!(false);
        }
        if let Value::Object(fields) = &mut reply {
            fields.extend(outcome);
        }
        Ok(json!({"success": true, "job": reply}))
    }
}

fn non_blank(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// How many runs, as Python Hermes words it: "forever", "once", "3 times", "1/3".
fn repeat_display(job: &Job) -> String {
    let repeat = job.repeat();
    match (repeat.times, repeat.completed) {
        (None, _) => "forever".to_string(),
        (Some(1), 0) => "once".to_string(),
        (Some(times), 0) => format!("{times} times"),
        (Some(times), completed) => format!("{completed}/{times}"),
    }
}

/// A job as the tool shows it: Python Hermes' fields, plus its origin and time zone.
pub fn format_job(job: &Job, ctx: &Context) -> Value {
    let record = job.clone().normalized(ctx).into_record();
    let field = |key: &str| record.get(key).cloned().unwrap_or(Value::Null);
    let prompt = job.prompt();
    let preview = if prompt.chars().count() > 100 {
        format!("{}...", prompt.chars().take(100).collect::<String>())
    } else {
        prompt.to_string()
    };
    let mut out = json!({
        "job_id": job.id(),
        "name": job.name(),
        "skill": field("skill"),
        "skills": field("skills"),
        "prompt_preview": preview,
        "model": field("model"),
        "provider": field("provider"),
        "base_url": field("base_url"),
        "schedule": job.schedule_display(ctx).unwrap_or_else(|_| "?".to_string()),
        "repeat": repeat_display(job),
        "deliver": job.deliver(),
        "origin": field("origin"),
        "timezone": job.zone(ctx).name(),
        "next_run_at": field("next_run_at"),
        "last_run_at": field("last_run_at"),
        "last_status": field("last_status"),
        "last_delivery_error": field("last_delivery_error"),
        "enabled": job.enabled(),
        "state": job.state().as_str(),
        "paused_at": field("paused_at"),
        "paused_reason": field("paused_reason"),
    });
    // Hermes 0.22's optional fields, each only when set.
    for key in [
        "script",
        "reasoning_effort",
        "monitor_script",
        "monitor_url",
        "monitor_state",
        "workdir",
        "sandbox",
        "enabled_toolsets",
        "interpreter",
        "failure_deliver",
        "overlap",
        "max_turns",
        "max_runtime_seconds",
        "max_tokens",
        "max_cost_usd",
        "start_at",
        "until",
        "jitter",
    ] {
        if record.get(key).is_some_and(|v| !v.is_null()) {
            out[key] = field(key);
        }
    }
    out["pinned"] = json!(job.model().is_some());
    if job.no_agent() {
        out["no_agent"] = json!(true);
    }
    if let Some(after) = jobs::chain::After::of(job) {
        out["after"] = after.to_json();
    }
    if job.continuity() {
        out["continuity"] = json!(true);
    }
    // The other jobs it reads, as Hermes 0.22 shows them (its own id counts as itself).
    let others: Vec<String> = job
        .context_from()
        .into_iter()
        .filter(|r| !r.eq_ignore_ascii_case("self") && r != job.id())
        .collect();
    if !others.is_empty() {
        out["context_from"] = json!(others);
    }
    out
}

/// The job's next run times (up to [`NEXT_RUNS`]), in its zone: the stored next run,
/// then the schedule's following fires, within the runs its repeat count leaves.
/// None for a paused or completed job.
pub fn next_runs(job: &Job, ctx: &Context) -> Vec<String> {
    let zone = job.zone(ctx);
    let (Some(first), Ok(schedule)) = (job.next_run_at(ctx), job.schedule(ctx)) else {
        return Vec::new();
    };
    if !matches!(job.state(), JobState::Scheduled | JobState::Error) {
        return Vec::new();
    }
    let repeat = job.repeat();
    let left = repeat
        .times
        .map_or(NEXT_RUNS as u64, |t| t.saturating_sub(repeat.completed));
    let wanted = NEXT_RUNS.min(usize::try_from(left).unwrap_or(NEXT_RUNS));
    let mut fires = Vec::new();
    let mut last = first;
    if wanted > 0 {
        fires.push(format_instant(first, zone));
    }
    let window = job.run_window(ctx);
    while fires.len() < wanted && schedule.is_recurring() {
        // Within the job's `until`, each moved by its jitter, as the scheduler runs them.
        let occurrence = window.occurrence_of(&schedule, last, zone);
        match window.next_run(&schedule, ctx.now, Some(occurrence), zone) {
            schedules::Planned::At(next) if next > last => {
                fires.push(format_instant(next, zone));
                last = next;
            }
            _ => break,
        }
    }
    fires
}
