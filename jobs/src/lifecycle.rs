//! Job lifecycle: create, find, edit, pause, resume, remove — every change goes through
//! one row operation of the [`Store`], so each is one locked read-modify-write.
//!
//! Validation (schedule, repeat, prompt scan, deliver, paths) happens before the store
//! is touched: a refused command leaves jobs.json exactly as it was.

use std::path::{Component, Path};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use schedules::{format_instant, parse_schedule, Schedule, ScheduleError, ONE_SHOT_GRACE};

use crate::checks::gateway_guard;
use crate::checks::target::{validate_deliver, Platform};
use crate::checks::threats::{scan_prompt, PromptBlocked};
use crate::model::caps::{CapChange, CapTexts};
use crate::model::fields::{schedule_text, BareDuration, MonitorSource, ReasoningEffort};
use crate::model::job::TextField;
use crate::model::job::{new_id, parse_repeat_times, Context, Job, JobSpec, JobState, Repeat};
use crate::model::overlap::Overlap;
use crate::model::window::{check_window, WindowTexts};
use crate::store::{JobChange, Store, StoreError};
use schedules::Planned;

/// Why a job operation was refused or failed. Every message reads as an instruction.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("Job not found: {0}. Run 'hermes cron list --all' to see job IDs")]
    NotFound(String),
    #[error("Job reference '{reference}' is ambiguous — use the job ID: {}", ids.join(", "))]
    Ambiguous { reference: String, ids: Vec<String> },
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Blocked(#[from] PromptBlocked),
    #[error("{0}")]
    Invalid(String),
    /// A manual run of a job that has a run going (here or on another host).
    #[error("Job {0} is already running; wait for it to finish")]
    Running(String),
    /// A text field longer than [`crate::checks::limits`] allows.
    #[error("{field} must be ≤ {max_chars} characters")]
    TooLong {
        field: &'static str,
        max_chars: usize,
    },
    /// A control character in a one-line field ([`crate::checks::limits`]).
    #[error("{field} must not contain control characters (found U+{:04X}): give it on one line", u32::from(*found))]
    ControlCharacter { field: &'static str, found: char },
    /// An invisible or bidi-control character, or a line separator, in a one-line field
    /// ([`crate::checks::limits`], [`crate::checks::threats::first_hidden_in_line`]).
    #[error("{field} must not contain invisible or bidi-control characters (found U+{:04X}): type it without them", u32::from(*found))]
    HiddenCharacter { field: &'static str, found: char },
    /// A list with more items than [`crate::checks::limits`] allows.
    #[error("A job may load at most {max} {what}: keep the ones it needs, or split it into several jobs")]
    TooMany { what: &'static str, max: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl JobError {
    /// True for failures of the machine (I/O), false for what the user can fix.
    pub fn is_internal(&self) -> bool {
        matches!(self, JobError::Store(StoreError::Unavailable(_)))
    }
}

/// Finds a job by reference: an exact id wins, else a case-insensitive name match.
pub fn find_job<'a>(jobs: &'a [Job], reference: &str) -> Result<&'a Job, JobError> {
    let wanted = reference.trim();
    if let Some(job) = jobs.iter().find(|j| j.id() == wanted) {
        return Ok(job);
    }
    let lower = wanted.to_lowercase();
    let matches: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.name().to_lowercase() == lower)
        .collect();
    match matches.as_slice() {
        [] => Err(JobError::NotFound(wanted.to_string())),
        [one] => Ok(one),
        many => Err(JobError::Ambiguous {
            reference: wanted.to_string(),
            ids: many.iter().map(|j| j.id().to_string()).collect(),
        }),
    }
}

/// The id of the job `reference` names, resolved on a snapshot of the store.
async fn resolve(store: &dyn Store, reference: &str, ctx: &Context) -> Result<String, JobError> {
    let jobs = store.load_view(ctx, &["id", "name"]).await?;
    Ok(find_job(&jobs, reference)?.id().to_string())
}

/// Changes the job `reference` names under the store's lock; a job removed meanwhile is
/// reported as not found under the name the user gave.
async fn change_job(
    store: &dyn Store,
    reference: &str,
    ctx: &Context,
    change: JobChange,
) -> Result<Job, JobError> {
    let id = resolve(store, reference, ctx).await?;
    store
        .update_job(ctx, &id, change)
        .await
        .map_err(|e| match e {
            JobError::NotFound(_) => JobError::NotFound(reference.trim().to_string()),
            other => other,
        })
}

/// What `hermes cron add` asks for. `None` means "not given" (defaults apply).
#[derive(Debug, Clone, Default)]
pub struct NewJob {
    pub schedule: String,
    pub prompt: String,
    pub name: Option<String>,
    pub deliver: Option<String>,
    pub repeat: Option<String>,
    pub skills: Vec<String>,
    pub script: Option<String>,
    pub no_agent: bool,
    pub workdir: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub timezone: Option<String>,
    pub paused: bool,
    /// Why it was created paused (requires `paused`; default: Hermes 0.22's text).
    pub paused_reason: Option<String>,
    /// Failure notices go here instead of `deliver` (`local` mutes them).
    pub failure_deliver: Option<String>,
    /// Monitor mode: a script under `<home>/scripts/` whose output change wakes the agent.
    pub monitor_script: Option<String>,
    /// Monitor mode: an http(s) URL whose content change wakes the agent.
    pub monitor_url: Option<String>,
    /// none, minimal, low, medium, high, xhigh, max or ultra.
    pub reasoning_effort: Option<String>,
    /// The Python a `.py` script or monitor script runs under.
    pub interpreter: Option<String>,
    /// Each run sees the job's own previous output (`"self"` in `context_from`).
    pub continuity: bool,
    /// Jobs whose newest output each run is given (ids or exact names; `self` is
    /// continuity too), `context_from` ([`crate::reach`]).
    pub context_from: Vec<String>,
    /// `enabled_toolsets`: `None` every tool, an empty list none ([`crate::reach`]).
    pub enabled_toolsets: Option<Vec<String>>,
    /// Pin the configured model and provider now (ignored when `model` is given).
    pub pin: bool,
    /// How a bare duration (`30m`) reads: `cron.bare_duration` (set by the caller).
    pub bare_duration: BareDuration,
    /// `PLATFORM:CHAT[:THREAD]` — the chat an integration created the job from.
    pub origin: Option<String>,
    /// The text of the script file (read by the caller, who knows the home), for the
    /// gateway lifecycle guard; `None` when there is no script or it cannot be read.
    pub script_text: Option<String>,
    /// What an unpinned agent job would run on if it ran now, for the snapshots.
    pub inference_now: InferenceNow,
    /// The job's own spending caps, as given.
    pub caps: CapTexts,
    /// `--after JOB`: run each time a run of that job ends with `after_on`
    /// ([`crate::model::chain`]).
    pub after: Option<String>,
    /// `--on success|failure|always` (default `success`); needs `after`.
    pub after_on: Option<String>,
    /// `--start-at`, `--until` and `--jitter`.
    pub window: WindowTexts,
    /// `overlap`: skip, queue or replace (docs/SCHEDULES.md, "Overlap"); `None`: skip.
    pub overlap: Option<String>,
    /// `strict`, `standard` or `off`; `None`: `cron.sandbox` decides at run time.
    pub sandbox: Option<String>,
}

/// The provider and model an agent job that pins neither would resolve to at creation,
/// as the binary's configuration resolves them; `None` where that is not known. They
/// become `provider_snapshot` / `model_snapshot` for each axis the job leaves unpinned,
/// so Hermes' drift guard can notice a later change of the global default.
#[derive(Debug, Clone, Default)]
pub struct InferenceNow {
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// Changes asked by `hermes cron edit`. For string fields `Some("")` clears the field.
#[derive(Debug, Clone, Default)]
pub struct JobEdit {
    pub schedule: Option<String>,
    pub prompt: Option<String>,
    pub name: Option<String>,
    pub deliver: Option<String>,
    pub repeat: Option<String>,
    pub skills: Option<Vec<String>>,
    pub add_skills: Vec<String>,
    pub remove_skills: Vec<String>,
    pub clear_skills: bool,
    pub script: Option<String>,
    pub no_agent: Option<bool>,
    pub workdir: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub timezone: Option<String>,
    /// `""` clears, as for the string fields above.
    pub failure_deliver: Option<String>,
    pub monitor_script: Option<String>,
    pub monitor_url: Option<String>,
    pub reasoning_effort: Option<String>,
    pub interpreter: Option<String>,
    /// `Some(true)` turns continuity on, `Some(false)` off.
    pub continuity: Option<bool>,
    /// Replaces the jobs in `context_from` (continuity is kept); an empty list
    /// removes them.
    pub context_from: Option<Vec<String>>,
    /// `Some(None)` allows every tool again, `Some(Some(list))` only those.
    pub enabled_toolsets: Option<Option<Vec<String>>>,
    /// `Some(true)` pins the configured model and provider (unless the job has a model
    /// or the edit sets one), `Some(false)` clears both pins.
    pub pin: Option<bool>,
    /// How a bare duration in `schedule` reads: `cron.bare_duration` (set by the caller).
    pub bare_duration: BareDuration,
    /// The text of the script the job will run after the edit (read by the caller), for
    /// the gateway lifecycle guard when the edit sets a prompt or a script.
    pub script_text: Option<String>,
    /// What unpinned axes resolve to now, for the snapshots when the edit changes the
    /// model, the provider or `no_agent` (Hermes recomputes them then).
    pub inference_now: InferenceNow,
    /// Caps to set or, with `""` or `0`, to clear.
    pub caps: CapTexts,
    /// `--after JOB` sets the job's chain, `""` removes it ([`crate::model::chain`]).
    pub after: Option<String>,
    /// `--on success|failure|always`: alone, changes the outcome of the job's chain.
    pub after_on: Option<String>,
    /// `--start-at`, `--until`, `--jitter` to set or, with `""` (or a jitter of `0`), to clear.
    pub window: WindowTexts,
    /// `overlap` to set; `""` clears it (back to the default, skip).
    pub overlap: Option<String>,
    /// A sandbox level to set; `""` clears it (back to `cron.sandbox`).
    pub sandbox: Option<String>,
}

impl JobEdit {
    /// True when the edit would change nothing.
    pub fn is_empty(&self) -> bool {
        let strings = [
            &self.schedule,
            &self.prompt,
            &self.name,
            &self.deliver,
            &self.repeat,
            &self.script,
            &self.workdir,
            &self.model,
            &self.provider,
            &self.timezone,
            &self.failure_deliver,
            &self.monitor_script,
            &self.monitor_url,
            &self.reasoning_effort,
            &self.interpreter,
            &self.after,
            &self.after_on,
            &self.overlap,
            &self.sandbox,
        ];
        strings.iter().all(|field| field.is_none())
            && self.continuity.is_none()
            && self.context_from.is_none()
            && self.enabled_toolsets.is_none()
            && self.pin.is_none()
            && self.skills.is_none()
            && self.add_skills.is_empty()
            && self.remove_skills.is_empty()
            && !self.clear_skills
            && self.no_agent.is_none()
            && self.caps.is_empty()
            && self.window.is_empty()
    }
}

fn parse_zone(name: &str) -> Result<Tz, JobError> {
    name.trim().parse::<Tz>().map_err(|_| {
        JobError::Invalid(format!(
            "Unknown time zone '{name}': use an IANA name such as Europe/Berlin or America/New_York"
        ))
    })
}

/// The sandbox levels a job may name (docs/SAFETY.md, "Sandbox").
pub const SANDBOX_LEVELS: [&str; 3] = ["strict", "standard", "off"];

/// A sandbox level as stored (lower case), or the one-line error every door gives.
pub fn check_sandbox(level: &str) -> Result<String, JobError> {
    let lower = level.trim().to_ascii_lowercase();
    if SANDBOX_LEVELS.contains(&lower.as_str()) {
        return Ok(lower);
    }
    Err(JobError::Invalid(format!(
        "Invalid sandbox '{}': use strict, standard or off",
        level.trim()
    )))
}

fn check_workdir(dir: &str) -> Result<(), JobError> {
    let path = Path::new(dir);
    if !path.is_absolute() || !path.is_dir() {
        return Err(JobError::Invalid(format!(
            "Invalid workdir '{dir}': give the absolute path of an existing directory"
        )));
    }
    Ok(())
}

fn check_script(script: &str) -> Result<(), JobError> {
    let path = Path::new(script);
    let confined = path.components().all(|c| matches!(c, Component::Normal(_)));
    if !confined || script.trim().is_empty() {
        return Err(JobError::Invalid(format!(
            "Invalid script '{script}': give a path relative to <HERMES_HOME>/scripts/ without '..'"
        )));
    }
    Ok(())
}

/// `PLATFORM:CHAT[:THREAD]` as the object Python Hermes' cronjob tool stores: all five
/// keys, the two it cannot know here (`chat_name`, `user_id`) null. The chat and thread
/// split by the platform's id syntax, so a Matrix room id keeps its colon.
fn parse_origin(text: &str) -> Result<Value, JobError> {
    let invalid = || {
        JobError::Invalid(format!(
            "Invalid origin '{text}': use PLATFORM:CHAT[:THREAD], e.g. telegram:-1001234567890:17"
        ))
    };
    let (name, rest) = text.trim().split_once(':').ok_or_else(invalid)?;
    let platform = Platform::parse(name.trim()).ok_or_else(invalid)?;
    let (chat, thread) = platform.split_chat(rest.trim()).ok_or_else(invalid)?;
    Ok(json!({
        "platform": platform.as_str(),
        "chat_id": chat.trim(),
        "chat_name": null,
        "thread_id": thread.map(str::trim),
        "user_id": null,
    }))
}

fn repeat_times(text: &str) -> Result<Option<u64>, JobError> {
    parse_repeat_times(&Value::String(text.to_string())).map_err(JobError::Invalid)
}

/// The first fire of a schedule as of `ctx.now`; refuses one-shots already in the past.
fn first_run(schedule: &Schedule, zone: Tz, ctx: &Context) -> Result<DateTime<Utc>, JobError> {
    if let Schedule::Once { run_at, .. } = schedule {
        if run_at.with_timezone(&Utc) < ctx.now - ONE_SHOT_GRACE {
            return Err(JobError::Invalid(format!(
                "Refusing a one-shot in the past ({}): give a future time",
                run_at.format("%Y-%m-%dT%H:%M:%S%:z")
            )));
        }
    }
    schedule.next_run(ctx.now, None, zone).ok_or_else(|| {
        JobError::Invalid(format!(
            "Schedule '{}' has no future run",
            schedule.display()
        ))
    })
}

fn default_name(prompt: &str, skills: &[String], script: Option<&str>) -> String {
    // One line of at most 50 characters, as a given name must be one line of at most 200:
    // control characters (a newline, a DEL) read as spaces.
    let one_line = |text: &str| {
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || c.is_control())
            .filter(|w| !w.is_empty())
            .collect();
        words
            .join(" ")
            .chars()
            .take(50)
            .collect::<String>()
            .trim()
            .to_string()
    };
    [Some(prompt), skills.first().map(String::as_str), script]
        .into_iter()
        .flatten()
        .map(one_line)
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "cron job".to_string())
}

fn dedup(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let item = item.trim().to_string();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Hermes' snapshot rule for one axis: the value it resolves to now when the job is an
/// agent job that leaves the axis unpinned, else nothing.
fn snapshot<'a>(no_agent: bool, pinned: Option<&str>, now: &'a Option<String>) -> Option<&'a str> {
    match (no_agent, pinned) {
        (false, None) => non_empty(now),
        _ => None,
    }
}

/// The fields whose change makes Hermes take new snapshots.
fn inference_axes(job: &Job) -> (Option<String>, Option<String>, bool) {
    (
        job.model().map(str::to_string),
        job.provider().map(str::to_string),
        job.no_agent(),
    )
}

/// Hermes 0.22's reason for a job created paused without one.
pub const CREATED_PAUSED_REASON: &str = "Created paused; awaiting operator approval.";

/// Hermes 0.22's refusals of a monitor job that cannot be one.
const MONITOR_BOTH: &str = "monitor_script and monitor_url are mutually exclusive — a job can only have one monitor source.";
const MONITOR_BOTH_ON_EDIT: &str =
    "monitor_script and monitor_url are mutually exclusive — clear one before setting the other.";
const MONITOR_NO_AGENT: &str = "monitor_script/monitor_url cannot be combined with no_agent=True — the whole point of a monitor job is to suppress or wake the AGENT based on source changes. Use a plain no_agent script job instead.";

fn check_monitor_url(url: &str) -> Result<(), JobError> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(());
    }
    Err(JobError::Invalid(format!(
        "Invalid monitor_url '{url}': give an http:// or https:// URL"
    )))
}

fn parse_effort(text: &str) -> Result<Option<ReasoningEffort>, JobError> {
    ReasoningEffort::parse(text).map_err(JobError::Invalid)
}

/// A `deliver`-shaped value (`failure_deliver` shares its grammar).
fn check_targets(value: &str) -> Result<String, JobError> {
    validate_deliver(value).map_err(JobError::Invalid)
}

/// The pin `--pin` takes: the configured model and the provider it resolves to, or
/// neither when no model is configured (Hermes 0.22's `_main_model_pin`).
fn configured_pin(now: &InferenceNow) -> (Option<String>, Option<String>) {
    match non_empty(&now.model) {
        Some(model) => (
            non_empty(&now.provider).map(str::to_ascii_lowercase),
            Some(model.to_string()),
        ),
        None => (None, None),
    }
}

/// Creates a job and stores it. Everything is validated before the store is locked.
pub async fn create_job(store: &dyn Store, new: &NewJob, ctx: &Context) -> Result<Job, JobError> {
    crate::checks::limits::check_new(new)?;
    if new.paused_reason.is_some() && !new.paused {
        // Hermes 0.22's words, on every door (its CLI and API say the same).
        return Err(JobError::Invalid(
            "paused_reason requires paused=True.".into(),
        ));
    }
    let zone = match non_empty(&new.timezone) {
        Some(name) => parse_zone(name)?,
        None => ctx.zone,
    };
    let times = match non_empty(&new.repeat) {
        Some(text) => repeat_times(text)?,
        None => None,
    };
    let schedule = parse_schedule(
        &schedule_text(&new.schedule, new.bare_duration),
        ctx.now,
        zone,
        times.map(|t| t as i64),
    )?;
    // One-shots run once unless told otherwise; recurring jobs run forever.
    let times = match (&schedule, times) {
        (Schedule::Once { .. }, _) => Some(1),
        (_, times) => times,
    };
    scan_prompt(&new.prompt)?;
    if gateway_guard::touches_gateway(&new.prompt, new.script_text.as_deref()) {
        return Err(JobError::Invalid(gateway_guard::REFUSAL.to_string()));
    }
    let skills = dedup(new.skills.iter().cloned());
    let script = non_empty(&new.script);
    if let Some(script) = script {
        check_script(script)?;
    }
    let monitor = match (non_empty(&new.monitor_script), non_empty(&new.monitor_url)) {
        (Some(_), Some(_)) => return Err(JobError::Invalid(MONITOR_BOTH.into())),
        (Some(script), None) => {
            check_script(script)?;
            Some(MonitorSource::Script(script))
        }
        (None, Some(url)) => {
            check_monitor_url(url)?;
            Some(MonitorSource::Url(url))
        }
        (None, None) => None,
    };
    if monitor.is_some() && new.no_agent {
        return Err(JobError::Invalid(MONITOR_NO_AGENT.into()));
    }
    if new.prompt.trim().is_empty() && skills.is_empty() && script.is_none() {
        return Err(JobError::Invalid(
            "A job needs a prompt, a --skill or a --script: give at least one".into(),
        ));
    }
    if new.no_agent && script.is_none() {
        return Err(JobError::Invalid(
            "--no-agent needs --script: the script's output is the message".into(),
        ));
    }
    if let Some(dir) = non_empty(&new.workdir) {
        check_workdir(dir)?;
    }
    let sandbox = non_empty(&new.sandbox).map(check_sandbox).transpose()?;
    let reasoning_effort = match &new.reasoning_effort {
        Some(text) => parse_effort(text)?,
        None => None,
    };
    let overlap = match &new.overlap {
        Some(text) => Overlap::parse(text).map_err(JobError::Invalid)?,
        None => None,
    };
    let failure_deliver = non_empty(&new.failure_deliver)
        .map(check_targets)
        .transpose()?;
    let origin = non_empty(&new.origin).map(parse_origin).transpose()?;
    let caps = new.caps.parse().map_err(JobError::Invalid)?;
    new.window.check()?;
    let deliver = match non_empty(&new.deliver) {
        Some(value) => check_targets(value)?,
        None if origin.is_some() => "origin".to_string(),
        None => "local".to_string(),
    };
    let next_run = first_run(&schedule, zone, ctx)?;
    let name = non_empty(&new.name)
        .map(str::to_string)
        .unwrap_or_else(|| default_name(&new.prompt, &skills, script));

    let (mut model, mut provider) = (non_empty(&new.model), non_empty(&new.provider));
    let pinned = configured_pin(&new.inference_now);
    if new.pin && model.is_none() {
        (provider, model) = (pinned.0.as_deref(), pinned.1.as_deref());
    }
    let paused_reason = new
        .paused
        .then(|| non_empty(&new.paused_reason).unwrap_or(CREATED_PAUSED_REASON));
    let after = crate::model::chain::resolve(
        store,
        ctx,
        None,
        None,
        new.after.as_deref(),
        new.after_on.as_deref(),
    )
    .await?;
    let mut context_from = crate::reach::context_refs(store, ctx, None, &new.context_from).await?;
    if new.continuity && !context_from.iter().any(|r| r == "self") {
        context_from.push("self".to_string());
    }
    let enabled_toolsets = new
        .enabled_toolsets
        .as_deref()
        .map(crate::reach::toolsets)
        .transpose()?;
    let layout = store.layout(ctx).await?;
    let mut job = Job::create(&JobSpec {
        id: new_id(),
        name,
        prompt: &new.prompt,
        skills: &skills,
        model,
        provider,
        // Hermes 0.19 snapshots each axis the job leaves to the global default, and
        // nothing for a script-only job (it never calls a model).
        provider_snapshot: snapshot(new.no_agent, provider, &new.inference_now.provider),
        model_snapshot: snapshot(new.no_agent, model, &new.inference_now.model),
        script,
        no_agent: new.no_agent,
        monitor,
        context_from: (!context_from.is_empty()).then_some(context_from),
        schedule: &schedule,
        times,
        paused_at: new.paused.then(|| ctx.now_text()),
        paused_reason,
        created_at: ctx.now_text(),
        next_run_at: format_instant(next_run, zone),
        deliver,
        origin,
        workdir: non_empty(&new.workdir),
        reasoning_effort,
        failure_deliver: failure_deliver.as_deref(),
        interpreter: non_empty(&new.interpreter),
        timezone: non_empty(&new.timezone),
        layout,
    });
    caps.apply(&mut job);
    if enabled_toolsets.is_some() {
        job.set_enabled_toolsets(enabled_toolsets);
    }
    if let Some(Some(after)) = &after {
        crate::model::chain::set(&mut job, Some(after), ctx.now);
    }
    if !new.window.is_empty() {
        new.window.apply(&mut job, ctx)?;
        check_window(&job, &schedule, ctx)?;
        if job.get("next_run_at").is_some_and(Value::is_string) {
            let next = next_in_window(&job, &schedule, ctx)?;
            job.set_next_run_at(Some(next), zone);
        }
    }
    if overlap.is_some() {
        job.set_overlap(overlap);
    }
    if let Some(level) = &sandbox {
        job.set_text(TextField::Sandbox, Some(level));
    }
    store.insert_job(ctx, job.clone()).await?;
    Ok(job)
}

/// Recomputes `next_run_at` (and the error state) after a schedule-affecting change.
fn reschedule(job: &mut Job, ctx: &Context) -> Result<(), JobError> {
    let zone = job.zone(ctx);
    let schedule = job.schedule(ctx)?;
    let next = next_in_window(job, &schedule, ctx)?;
    job.set_next_run_at(Some(next), zone);
    if job.state() == JobState::Error {
        job.set_state(if job.enabled() {
            JobState::Scheduled
        } else {
            JobState::Paused
        });
    }
    Ok(())
}

/// The first run as of `ctx.now`: a one-shot's own ([`first_run`]), a recurring job's
/// first occurrence within its window, shifted by its jitter.
fn next_in_window(
    job: &Job,
    schedule: &Schedule,
    ctx: &Context,
) -> Result<DateTime<Utc>, JobError> {
    let zone = job.zone(ctx);
    if !schedule.is_recurring() {
        return first_run(schedule, zone, ctx);
    }
    match job.planned_next(schedule, ctx.now, None, ctx) {
        Planned::At(next) => Ok(next),
        Planned::Ended => Err(JobError::Invalid(format!(
            "Job {} has no run left before its --until ({}): give a later --until, or clear it with --until ''",
            job.id(),
            job.text_field("until").unwrap_or_default()
        ))),
        Planned::Nothing => Err(JobError::Invalid(format!(
            "Schedule '{}' has no future run",
            schedule.display()
        ))),
    }
}

/// The stored window fields, to tell whether an edit changed them.
fn window_fields(job: &Job) -> [Option<Value>; 3] {
    ["start_at", "until", "jitter"].map(|key| job.get(key).filter(|v| !v.is_null()).cloned())
}

/// Sets an optional string field: `""` clears it to null.
fn set_optional(job: &mut Job, field: TextField, value: &str) {
    let trimmed = value.trim();
    job.set_text(field, Some(trimmed).filter(|t| !t.is_empty()));
}

/// What an edit asks for, checked before the store is touched (owned: the store may
/// apply it on another thread).
struct CheckedEdit {
    edit: JobEdit,
    /// The validated `deliver` (`""`: back to the default).
    deliver: Option<String>,
    /// A new repeat count (`None` inside: forever).
    repeat: Option<Option<u64>>,
    /// The validated `failure_deliver` (`None` inside: cleared).
    failure_deliver: Option<Option<String>>,
    /// The new reasoning effort (`None` inside: cleared).
    reasoning_effort: Option<Option<ReasoningEffort>>,
    /// The new overlap policy (`None` inside: cleared, back to skip).
    overlap: Option<Option<Overlap>>,
    caps: CapChange,
}

impl CheckedEdit {
    fn check(edit: &JobEdit) -> Result<CheckedEdit, JobError> {
        crate::checks::limits::check_edit(edit)?;
        if let Some(prompt) = &edit.prompt {
            scan_prompt(prompt)?;
        }
        if let Some(zone) = non_empty(&edit.timezone) {
            parse_zone(zone)?;
        }
        if let Some(dir) = non_empty(&edit.workdir) {
            check_workdir(dir)?;
        }
        if let Some(level) = non_empty(&edit.sandbox) {
            check_sandbox(level)?;
        }
        if let Some(script) = non_empty(&edit.script) {
            check_script(script)?;
        }
        let deliver = match &edit.deliver {
            Some(value) if !value.trim().is_empty() => {
                Some(validate_deliver(value).map_err(JobError::Invalid)?)
            }
            Some(_) => Some(String::new()),
            None => None,
        };
        let repeat = match non_empty(&edit.repeat) {
            Some(text) => Some(repeat_times(text)?),
            None => None,
        };
        if let Some(script) = non_empty(&edit.monitor_script) {
            check_script(script)?;
        }
        if let Some(url) = non_empty(&edit.monitor_url) {
            check_monitor_url(url)?;
        }
        let failure_deliver = match &edit.failure_deliver {
            Some(value) => Some(
                Some(value.as_str())
                    .filter(|v| !v.trim().is_empty())
                    .map(check_targets)
                    .transpose()?,
            ),
            None => None,
        };
        let reasoning_effort = edit
            .reasoning_effort
            .as_deref()
            .map(parse_effort)
            .transpose()?;
        edit.window.check()?;
        Ok(CheckedEdit {
            edit: edit.clone(),
            deliver,
            repeat,
            failure_deliver,
            reasoning_effort,
            overlap: edit
                .overlap
                .as_deref()
                .map(Overlap::parse)
                .transpose()
                .map_err(JobError::Invalid)?,
            caps: edit.caps.parse().map_err(JobError::Invalid)?,
        })
    }

    /// The time zone and schedule: a new schedule restarts a completed job, and a new
    /// one-shot starts counting afresh; the next run is recomputed from now.
    fn apply_schedule(&self, job: &mut Job, ctx: &Context) -> Result<(), JobError> {
        let edit = &self.edit;
        if let Some(text) = &edit.timezone {
            set_optional(job, TextField::Timezone, text);
        }
        if let Some(text) = &edit.schedule {
            let times = self.repeat.unwrap_or(job.repeat().times);
            let text = schedule_text(text, edit.bare_duration);
            let schedule = parse_schedule(&text, ctx.now, job.zone(ctx), times.map(|t| t as i64))?;
            job.set_schedule(&schedule);
            // Its next run follows the new schedule: a hold planned under the old one would
            // only shield a stale instant (Hermes 0.22 removes it too). A pending re-run is
            // kept, as 0.22 keeps it: its instant no longer matches, so it never fires.
            job.set_quota_hold(None, ctx.zone);
            if !schedule.is_recurring() {
                job.set_last_run_at(None, ctx.zone);
                job.replace_repeat(Repeat {
                    times: Some(1),
                    completed: 0,
                });
            }
            if job.state() == JobState::Completed {
                job.set_state(JobState::Scheduled);
                job.set_enabled(true);
            }
        }
        let window_before = window_fields(job);
        if !edit.window.is_empty() {
            edit.window.apply(job, ctx)?;
        }
        // An edit that gives the window it has (a form sends every field) moves nothing.
        let window_changed = window_fields(job) != window_before;
        if window_changed {
            check_window(job, &job.schedule(ctx)?, ctx)?;
            // A job its --until ended runs again once its window is moved.
            let repeat = job.repeat();
            let used_up = repeat.times.is_some_and(|t| repeat.completed >= t);
            if job.state() == JobState::Completed && !used_up && job.schedule(ctx)?.is_recurring() {
                job.set_state(JobState::Scheduled);
                job.set_enabled(true);
            }
        }
        if edit.timezone.is_some() || edit.schedule.is_some() || window_changed {
            // A schedule or zone change keeps the window, which must still hold.
            if !window_changed {
                check_window(job, &job.schedule(ctx)?, ctx)?;
            }
            reschedule(job, ctx)?;
        }
        Ok(())
    }

    /// Everything else: prompt, name, deliver, repeat, skills, script, paths and pins.
    fn apply_fields(&self, job: &mut Job) -> Result<(), JobError> {
        let edit = &self.edit;
        let axes_before = inference_axes(job);
        if let Some(prompt) = &edit.prompt {
            job.set_prompt(prompt);
        }
        if let Some(name) = &edit.name {
            let name = match name.trim() {
                "" => default_name(job.prompt(), &job.skills(), job.script()),
                given => given.to_string(),
            };
            job.set_name(&name);
        }
        match self.deliver.as_deref() {
            Some("") if job.origin().is_some() => job.set_deliver("origin"),
            Some("") => job.set_deliver("local"),
            Some(deliver) => job.set_deliver(deliver),
            None => {}
        }
        if let Some(times) = self.repeat {
            let completed = job.repeat().completed;
            // A count the job has already reached would leave it scheduled for a run
            // it should not have.
            if let Some(limit) = times.filter(|t| *t <= completed) {
                if job.state() != JobState::Completed {
                    return Err(JobError::Invalid(format!(
                        "Job {} has already run {completed} time(s): a repeat of {limit} would end it at once; give --repeat {} or more to keep it, or pause or remove it to stop it",
                        job.id(),
                        completed + 1
                    )));
                }
            }
            job.replace_repeat(Repeat { times, completed });
        }
        if let Some(skills) = self.skills_after(job) {
            job.set_skills(&skills);
        }
        if let Some(script) = &edit.script {
            set_optional(job, TextField::Script, script);
        }
        if let Some(no_agent) = edit.no_agent {
            job.set_no_agent(no_agent);
        }
        self.apply_monitor(job)?;
        if job.no_agent() && job.script().is_none() {
            return Err(JobError::Invalid(
                "--no-agent needs a script: set --script too".into(),
            ));
        }
        // The guard of creation, on what the job will run once edited.
        let touches_run = edit.prompt.is_some() || edit.script.is_some();
        if touches_run && gateway_guard::touches_gateway(job.prompt(), edit.script_text.as_deref())
        {
            return Err(JobError::Invalid(gateway_guard::REFUSAL.to_string()));
        }
        for (field, value) in [
            (TextField::Workdir, &edit.workdir),
            (TextField::Model, &edit.model),
            (TextField::Provider, &edit.provider),
        ] {
            if let Some(value) = value {
                set_optional(job, field, value);
            }
        }
        match edit.pin {
            // An explicit model wins over either, as in Hermes 0.22.
            Some(_) if edit.model.is_some() => {}
            Some(true) if job.model().is_none() => {
                let (provider, model) = configured_pin(&edit.inference_now);
                job.set_pin(provider.as_deref(), model.as_deref());
            }
            Some(false) => job.set_pin(None, None),
            _ => {}
        }
        if let Some(target) = &self.failure_deliver {
            job.set_text(TextField::FailureDeliver, target.as_deref());
        }
        if let Some(effort) = self.reasoning_effort {
            job.set_reasoning_effort(effort);
        }
        if let Some(overlap) = self.overlap {
            job.set_overlap(overlap);
        }
        if let Some(interpreter) = &edit.interpreter {
            set_optional(job, TextField::Interpreter, interpreter);
        }
        if let Some(level) = &edit.sandbox {
            let level = level.trim().to_ascii_lowercase();
            set_optional(job, TextField::Sandbox, &level);
        }
        if let Some(on) = edit.continuity {
            job.set_continuity(on);
        }
        self.caps.apply(job);
        // Hermes 0.19 takes new snapshots when an inference field changes; a record
        // without them (0.22's) does not gain them.
        let touched = edit.model.is_some()
            || edit.provider.is_some()
            || edit.no_agent.is_some()
            || edit.pin.is_some();
        if touched && job.has_inference_snapshots() && inference_axes(job) != axes_before {
            let (model, provider) = (job.model(), job.provider());
            let now = &edit.inference_now;
            let provider_snapshot = snapshot(job.no_agent(), provider, &now.provider);
            let model_snapshot = snapshot(job.no_agent(), model, &now.model);
            job.set_inference_snapshots(provider_snapshot, model_snapshot);
        }
        Ok(())
    }

    /// The monitor source (`""` clears either), then Hermes 0.22's rules on the job as
    /// edited: one source at most, and none on a no-agent job.
    fn apply_monitor(&self, job: &mut Job) -> Result<(), JobError> {
        let edit = &self.edit;
        for (field, value) in [
            (TextField::MonitorScript, &edit.monitor_script),
            (TextField::MonitorUrl, &edit.monitor_url),
        ] {
            if let Some(value) = value {
                set_optional(job, field, value);
            }
        }
        let sources_touched = edit.monitor_script.is_some() || edit.monitor_url.is_some();
        let both =
            job.text_field("monitor_script").is_some() && job.text_field("monitor_url").is_some();
        if sources_touched && both {
            return Err(JobError::Invalid(MONITOR_BOTH_ON_EDIT.into()));
        }
        let mode_touched = sources_touched || edit.no_agent.is_some() || edit.script.is_some();
        if mode_touched && job.no_agent() && job.monitor_source().is_some() {
            return Err(JobError::Invalid(MONITOR_NO_AGENT.into()));
        }
        Ok(())
    }

    /// The job's skills after `--skill`, `--add-skill`, `--remove-skill` and
    /// `--clear-skills`, or `None` when the edit leaves them alone.
    fn skills_after(&self, job: &Job) -> Option<Vec<String>> {
        let edit = &self.edit;
        let touched = edit.skills.is_some()
            || edit.clear_skills
            || !edit.add_skills.is_empty()
            || !edit.remove_skills.is_empty();
        if !touched {
            return None;
        }
        let mut skills = match (&edit.skills, edit.clear_skills) {
            (Some(replacement), _) => replacement.clone(),
            (None, true) => Vec::new(),
            (None, false) => job.skills(),
        };
        skills.extend(edit.add_skills.iter().cloned());
        skills.retain(|s| !edit.remove_skills.iter().any(|r| r.trim() == s));
        Some(dedup(skills))
    }
}

/// Applies an edit to the job `reference` names. Validates before locking; the
/// change itself happens under the lock on the freshest copy of the job.
pub async fn edit_job(
    store: &dyn Store,
    reference: &str,
    edit: &JobEdit,
    ctx: &Context,
) -> Result<Job, JobError> {
    let checked = CheckedEdit::check(edit)?;
    let chain = match (&edit.after, &edit.after_on) {
        (None, None) => None,
        (after, on) => {
            let jobs = store
                .load_view(ctx, &["id", "name", crate::model::chain::AFTER])
                .await?;
            let job = find_job(&jobs, reference)?;
            crate::model::chain::resolve(
                store,
                ctx,
                Some(job.id()),
                crate::model::chain::After::of(job),
                after.as_deref(),
                on.as_deref(),
            )
            .await?
        }
    };
    let context_from = match &edit.context_from {
        None => None,
        Some(refs) => {
            let own = resolve(store, reference, ctx).await?;
            Some(crate::reach::context_refs(store, ctx, Some(&own), refs).await?)
        }
    };
    let toolsets = match &edit.enabled_toolsets {
        None => None,
        Some(names) => Some(names.as_deref().map(crate::reach::toolsets).transpose()?),
    };
    let at = *ctx;
    let change: JobChange = Box::new(move |job| {
        checked.apply_schedule(job, &at)?;
        checked.apply_fields(job)?;
        if let Some(after) = &chain {
            crate::model::chain::set(job, after.as_ref(), at.now);
        }
        if let Some(refs) = &context_from {
            crate::reach::set_context_refs(job, refs);
        }
        if let Some(names) = &toolsets {
            job.set_enabled_toolsets(names.clone());
        }
        Ok(())
    });
    change_job(store, reference, ctx, change).await
}

/// Pauses a job: it keeps its schedule but never fires (nor catches up) until resumed.
pub async fn pause_job(
    store: &dyn Store,
    reference: &str,
    reason: Option<&str>,
    ctx: &Context,
) -> Result<Job, JobError> {
    crate::checks::limits::check_reason(reason)?;
    let reason = reason.map(str::to_string);
    let at = *ctx;
    let change: JobChange = Box::new(move |job| {
        if job.state() == JobState::Completed {
            return Err(JobError::Invalid(format!(
                "Job {} has completed; there is nothing to pause",
                job.id()
            )));
        }
        job.pause(
            at.now,
            at.zone,
            reason.as_deref().map(str::trim).filter(|r| !r.is_empty()),
        );
        Ok(())
    });
    change_job(store, reference, ctx, change).await
}

/// Resumes a paused job; its next run is recomputed from now (missed runs are not
/// caught up). A one-shot whose time has passed is refused.
pub async fn resume_job(
    store: &dyn Store,
    reference: &str,
    ctx: &Context,
) -> Result<Job, JobError> {
    let ctx_at = *ctx;
    let change: JobChange = Box::new(move |job| {
        let ctx = &ctx_at;
        if job.state() == JobState::Completed {
            return Err(JobError::Invalid(format!(
                "Job {} has completed; give it a new schedule with 'hermes cron edit {} --schedule ...'",
                job.id(),
                job.id()
            )));
        }
        let zone = job.zone(ctx);
        let schedule = job.schedule(ctx)?;
        let next = next_in_window(job, &schedule, ctx)?;
        job.unpause();
        job.set_next_run_at(Some(next), zone);
        Ok(())
    });
    change_job(store, reference, ctx, change).await
}

/// When a re-armed one-shot runs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RearmAt {
    /// As soon as a scheduler sees it.
    Now,
    /// At this time (ISO-8601, or any one-shot schedule, read in the job's zone).
    At(String),
}

/// Hermes 0.22's refusal to re-arm anything but a one-shot.
pub const REARM_RECURRING: &str =
    "Cannot re-arm recurring jobs: re-arm is one-shot-only; use plain resume or cron run.";

/// How long Hermes 0.22's `fire_claim` keeps others off a job it is firing.
const FIRE_CLAIM_TTL: chrono::Duration = chrono::Duration::seconds(300);

/// Is the claim object under `key` (`{at, …}`) younger than `ttl`? One dated in the
/// future or unreadable does not count, as in Hermes.
fn live_claim(job: &Job, key: &str, ttl: chrono::Duration, ctx: &Context) -> bool {
    let at = job.get(key).and_then(|c| c.get("at"));
    crate::model::job::instant_of(at, ctx).is_some_and(|at| {
        let age = ctx.now - at;
        age >= chrono::Duration::zero() && age < ttl
    })
}

/// Re-arms a one-shot (`hermes cron resume JOB --at TIME | --run-now`), completed or
/// not, as Hermes 0.22's `rearm_oneshot` does: a new `once` schedule, the run count back
/// to zero, claims and pause markers cleared. Refused for a recurring job, for a time in
/// the past, and while a scheduler holds a live claim on it (`run_claim_ttl`: the
/// lifetime of a `run_claim`, see [`crate::model::due::run_claim_ttl`]).
pub async fn rearm_one_shot(
    store: &dyn Store,
    reference: &str,
    at: &RearmAt,
    run_claim_ttl: chrono::Duration,
    ctx: &Context,
) -> Result<Job, JobError> {
    if let RearmAt::At(text) = at {
        crate::checks::limits::check_schedule(text)?;
    }
    let at = at.clone();
    let ctx_at = *ctx;
    let change: JobChange = Box::new(move |job| {
        let ctx = &ctx_at;
        let zone = job.zone(ctx);
        let text = match &at {
            RearmAt::Now => format_instant(ctx.now, zone),
            RearmAt::At(text) => text.clone(),
        };
        let schedule = parse_schedule(&text, ctx.now, zone, None)?;
        if schedule.is_recurring() || !job.is_one_shot() {
            return Err(JobError::Invalid(REARM_RECURRING.into()));
        }
        if live_claim(job, "run_claim", run_claim_ttl, ctx) {
            return Err(JobError::Invalid(
                "Cannot re-arm one-shot over a live run claim: it is running; wait for it to finish".into(),
            ));
        }
        if live_claim(job, "fire_claim", FIRE_CLAIM_TTL, ctx) {
            return Err(JobError::Invalid(
                "Cannot re-arm one-shot over a live fire claim: it is being fired; wait for it to finish".into(),
            ));
        }
        let next = first_run(&schedule, zone, ctx)?;
        let times = job.repeat().times;
        job.set_schedule(&schedule);
        job.set_repeat(Repeat {
            times,
            completed: 0,
        });
        job.set_run_claim(None, zone);
        job.set("fire_claim", Value::Null);
        job.unpause();
        job.set_next_run_at(Some(next), zone);
        Ok(())
    });
    change_job(store, reference, ctx, change).await
}

/// Removes a job and its output documents.
pub async fn remove_job(
    store: &dyn Store,
    reference: &str,
    ctx: &Context,
) -> Result<Job, JobError> {
    let id = resolve(store, reference, ctx).await?;
    // The id names the job's output documents; one that could name anything else is
    // refused before any backend touches anything.
    if !crate::model::job::is_safe_id(&id) {
        return Err(JobError::Invalid(format!(
            "Job id '{id}' is not a safe file name; fix or remove it in jobs.json by hand"
        )));
    }
    store.remove_job(ctx, &id).await.map_err(|e| match e {
        JobError::NotFound(_) => JobError::NotFound(reference.trim().to_string()),
        other => other,
    })
}
