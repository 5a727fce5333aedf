//! Job lifecycle: create, find, edit, pause, resume, remove — every change to the set of
//! jobs goes through [`JobStore::update`], so each is one locked read-modify-write.
//!
//! Validation (schedule, repeat, prompt scan, deliver, paths) happens before the store
//! is touched: a refused command leaves jobs.json exactly as it was.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use schedules::{format_instant, parse_schedule, Schedule, ScheduleError, ONE_SHOT_GRACE};

use crate::deliver::validate_deliver;
use crate::job::{is_safe_id, new_id, parse_repeat_times, Context, Job, JobState, SCHEDULING_KEYS};
use crate::store::{JsonFileStore, StoreError};
use crate::threats::{scan_prompt, PromptBlocked};

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
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl JobError {
    /// True for failures of the machine (I/O), false for what the user can fix.
    pub fn is_internal(&self) -> bool {
        matches!(self, JobError::Store(StoreError::Io { .. }))
    }
}

/// Where jobs live. The JSON file shared with Python Hermes is the default backend;
/// others (PostgreSQL for several hosts) implement the same two calls.
pub trait JobStore {
    /// Every job, read without taking the lock.
    fn load_jobs(&self, ctx: &Context) -> Result<Vec<Job>, StoreError>;
    /// Every job reduced to [`SCHEDULING_KEYS`], read without the lock: enough for the
    /// due scan, the next wake-up and pruning, at a fraction of the memory of whole jobs.
    fn load_scheduling_view(&self, ctx: &Context) -> Result<Vec<Job>, StoreError> {
        self.load_jobs(ctx)
    }
    /// One locked read-modify-write. `change` sees every (healed) job; when it returns
    /// an error nothing is written.
    fn update_jobs(
        &self,
        ctx: &Context,
        change: &mut dyn FnMut(&mut Vec<Job>) -> Result<(), JobError>,
    ) -> Result<(), JobError>;
    /// A locked change of the jobs whose id is in `ids` (healed, in store order); every
    /// other job is left exactly as it is. When `change` returns an error nothing is
    /// written.
    fn update_jobs_by_id(
        &self,
        ctx: &Context,
        ids: &HashSet<&str>,
        change: &mut dyn FnMut(&mut [Job]) -> Result<(), JobError>,
    ) -> Result<(), JobError> {
        self.update_jobs(ctx, &mut |jobs| {
            let mut chosen: Vec<Job> = Vec::new();
            let mut at = Vec::new();
            for (i, job) in jobs.iter().enumerate() {
                if ids.contains(job.id()) {
                    chosen.push(job.clone());
                    at.push(i);
                }
            }
            change(&mut chosen)?;
            for (i, job) in at.into_iter().zip(chosen) {
                jobs[i] = job;
            }
            Ok(())
        })
    }
    /// Where this job's output documents go.
    fn output_dir(&self, job_id: &str) -> PathBuf;
}

impl JobStore for JsonFileStore {
    fn load_jobs(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .load()?
            .jobs
            .into_iter()
            .map(Job::from_record)
            .collect())
    }

    fn load_scheduling_view(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .load_keeping(SCHEDULING_KEYS)?
            .jobs
            .into_iter()
            .map(Job::from_record)
            .collect())
    }

    fn update_jobs(
        &self,
        ctx: &Context,
        change: &mut dyn FnMut(&mut Vec<Job>) -> Result<(), JobError>,
    ) -> Result<(), JobError> {
        self.update(&ctx.now_text(), |doc| {
            let mut jobs: Vec<Job> = std::mem::take(&mut doc.jobs)
                .into_iter()
                .map(Job::from_record)
                .collect();
            for job in &mut jobs {
                job.heal(ctx);
            }
            change(&mut jobs)?;
            doc.jobs = jobs.into_iter().map(Job::into_record).collect();
            Ok(())
        })
    }

    fn update_jobs_by_id(
        &self,
        ctx: &Context,
        ids: &HashSet<&str>,
        change: &mut dyn FnMut(&mut [Job]) -> Result<(), JobError>,
    ) -> Result<(), JobError> {
        self.update_records(&ctx.now_text(), ids, |records| {
            let mut jobs: Vec<Job> = records
                .iter_mut()
                .map(|record| {
                    let mut job = Job::from_record(std::mem::take(record));
                    job.heal(ctx);
                    job
                })
                .collect();
            let result = change(&mut jobs);
            for (record, job) in records.iter_mut().zip(jobs) {
                *record = job.into_record();
            }
            result
        })
    }

    fn output_dir(&self, job_id: &str) -> PathBuf {
        self.cron_dir().join("output").join(job_id)
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

fn find_index(jobs: &[Job], reference: &str) -> Result<usize, JobError> {
    let id = find_job(jobs, reference)?.id().to_string();
    jobs.iter()
        .position(|j| j.id() == id)
        .ok_or(JobError::NotFound(reference.to_string()))
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
    /// `PLATFORM:CHAT[:THREAD]` — the chat an integration created the job from.
    pub origin: Option<String>,
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
        ];
        strings.iter().all(|field| field.is_none())
            && self.skills.is_none()
            && self.add_skills.is_empty()
            && self.remove_skills.is_empty()
            && !self.clear_skills
            && self.no_agent.is_none()
    }
}

fn parse_zone(name: &str) -> Result<Tz, JobError> {
    name.trim().parse::<Tz>().map_err(|_| {
        JobError::Invalid(format!(
            "Unknown time zone '{name}': use an IANA name such as Europe/Berlin or America/New_York"
        ))
    })
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

fn parse_origin(text: &str) -> Result<Value, JobError> {
    let mut parts = text.trim().splitn(3, ':');
    let platform = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let chat = parts.next().unwrap_or("").trim();
    let thread = parts.next().map(str::trim).filter(|t| !t.is_empty());
    if !crate::deliver::PLATFORMS.contains(&platform.as_str()) || chat.is_empty() {
        return Err(JobError::Invalid(format!(
            "Invalid origin '{text}': use PLATFORM:CHAT[:THREAD], e.g. telegram:-1001234567890:17"
        )));
    }
    let mut origin = json!({"platform": platform, "chat_id": chat});
    if let Some(thread) = thread {
        origin["thread_id"] = json!(thread);
    }
    Ok(origin)
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
    let prompt = prompt.trim();
    if !prompt.is_empty() {
        return prompt
            .chars()
            .take(50)
            .collect::<String>()
            .trim()
            .to_string();
    }
    if let Some(skill) = skills.first() {
        return skill.clone();
    }
    script.map_or_else(|| "cron job".to_string(), str::to_string)
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

/// Creates a job and stores it. Everything is validated before the store is locked.
pub fn create_job(store: &dyn JobStore, new: &NewJob, ctx: &Context) -> Result<Job, JobError> {
    let zone = match non_empty(&new.timezone) {
        Some(name) => parse_zone(name)?,
        None => ctx.zone,
    };
    let times = match non_empty(&new.repeat) {
        Some(text) => repeat_times(text)?,
        None => None,
    };
    let schedule = parse_schedule(&new.schedule, ctx.now, zone, times.map(|t| t as i64))?;
    // One-shots run once unless told otherwise; recurring jobs run forever.
    let times = match (&schedule, times) {
        (Schedule::Once { .. }, _) => Some(1),
        (_, times) => times,
    };
    scan_prompt(&new.prompt)?;
    let skills = dedup(new.skills.iter().cloned());
    let script = non_empty(&new.script);
    if let Some(script) = script {
        check_script(script)?;
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
    let origin = non_empty(&new.origin).map(parse_origin).transpose()?;
    let deliver = match non_empty(&new.deliver) {
        Some(value) => validate_deliver(value).map_err(JobError::Invalid)?,
        None if origin.is_some() => "origin".to_string(),
        None => "local".to_string(),
    };
    let next_run = first_run(&schedule, zone, ctx)?;
    let name = non_empty(&new.name)
        .map(str::to_string)
        .unwrap_or_else(|| default_name(&new.prompt, &skills, script));

    let mut job = Job::from_record(Default::default());
    let fields: Vec<(&str, Value)> = vec![
        ("id", json!(new_id())),
        ("name", json!(name)),
        ("prompt", json!(new.prompt)),
        ("skills", json!(skills)),
        ("skill", json!(skills.first())),
        ("model", json!(non_empty(&new.model))),
        ("provider", json!(non_empty(&new.provider))),
        ("base_url", Value::Null),
        ("script", json!(script)),
        ("no_agent", json!(new.no_agent)),
        ("context_from", Value::Null),
        ("schedule", schedule.to_json()),
        ("schedule_display", json!(schedule.display())),
        ("repeat", json!({"times": times, "completed": 0})),
        ("enabled", json!(!new.paused)),
        (
            "state",
            json!(if new.paused { "paused" } else { "scheduled" }),
        ),
        (
            "paused_at",
            if new.paused {
                json!(ctx.now_text())
            } else {
                Value::Null
            },
        ),
        ("paused_reason", Value::Null),
        ("created_at", json!(ctx.now_text())),
        ("next_run_at", json!(format_instant(next_run, zone))),
        ("last_run_at", Value::Null),
        ("last_status", Value::Null),
        ("last_error", Value::Null),
        ("last_delivery_error", Value::Null),
        ("failure_streak", json!(0)),
        ("deliver", json!(deliver)),
        ("origin", origin.unwrap_or(Value::Null)),
        ("enabled_toolsets", Value::Null),
        ("workdir", json!(non_empty(&new.workdir))),
    ];
    for (key, value) in fields {
        job.set(key, value);
    }
    if let Some(name) = non_empty(&new.timezone) {
        job.set("timezone", json!(name));
    }
    let created = job.clone();
    let mut pending = Some(job);
    store.update_jobs(ctx, &mut |jobs| {
        if let Some(job) = pending.take() {
            jobs.push(job);
        }
        Ok(())
    })?;
    Ok(created)
}

/// Recomputes `next_run_at` (and the error state) after a schedule-affecting change.
fn reschedule(job: &mut Job, ctx: &Context) -> Result<(), JobError> {
    let zone = job.zone(ctx);
    let schedule = job.schedule(ctx)?;
    let next = first_run(&schedule, zone, ctx)?;
    job.set("next_run_at", json!(format_instant(next, zone)));
    if job.state() == JobState::Error {
        job.set(
            "state",
            json!(if job.enabled() { "scheduled" } else { "paused" }),
        );
    }
    Ok(())
}

/// Sets an optional string field: `""` clears it to null.
fn set_optional(job: &mut Job, key: &str, value: &str) {
    let trimmed = value.trim();
    job.set(
        key,
        if trimmed.is_empty() {
            Value::Null
        } else {
            json!(trimmed)
        },
    );
}

/// Applies an edit to the job `reference` names. Validates before locking; the
/// change itself happens under the lock on the freshest copy of the job.
pub fn edit_job(
    store: &dyn JobStore,
    reference: &str,
    edit: &JobEdit,
    ctx: &Context,
) -> Result<Job, JobError> {
    if let Some(prompt) = &edit.prompt {
        scan_prompt(prompt)?;
    }
    if let Some(zone) = non_empty(&edit.timezone) {
        parse_zone(zone)?;
    }
    if let Some(dir) = non_empty(&edit.workdir) {
        check_workdir(dir)?;
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
    let mut edited = None;
    store.update_jobs(ctx, &mut |jobs| {
        let index = find_index(jobs, reference)?;
        let job = &mut jobs[index];
        let mut schedule_changed = false;
        if let Some(text) = &edit.timezone {
            set_optional(job, "timezone", text);
            schedule_changed = true;
        }
        if let Some(text) = &edit.schedule {
            let times = repeat.unwrap_or(job.repeat().times);
            let schedule = parse_schedule(text, ctx.now, job.zone(ctx), times.map(|t| t as i64))?;
            job.set("schedule", schedule.to_json());
            job.set("schedule_display", json!(schedule.display()));
            if !schedule.is_recurring() {
                job.set("last_run_at", Value::Null);
                job.set("repeat", json!({"times": 1, "completed": 0}));
            }
            if job.state() == JobState::Completed {
                job.set("state", json!("scheduled"));
                job.set("enabled", json!(true));
            }
            schedule_changed = true;
        }
        if schedule_changed {
            reschedule(job, ctx)?;
        }
        if let Some(prompt) = &edit.prompt {
            job.set("prompt", json!(prompt));
        }
        if let Some(name) = &edit.name {
            let name = match name.trim() {
                "" => default_name(job.prompt(), &job.skills(), job.script()),
                given => given.to_string(),
            };
            job.set("name", json!(name));
        }
        if let Some(deliver) = &deliver {
            let value = if deliver.is_empty() {
                if job.origin().is_some() {
                    "origin"
                } else {
                    "local"
                }
                .to_string()
            } else {
                deliver.clone()
            };
            job.set("deliver", json!(value));
        }
        if let Some(times) = repeat {
            let completed = job.repeat().completed;
            job.set("repeat", json!({"times": times, "completed": completed}));
        }
        if edit.skills.is_some()
            || edit.clear_skills
            || !edit.add_skills.is_empty()
            || !edit.remove_skills.is_empty()
        {
            let mut skills = if edit.clear_skills {
                Vec::new()
            } else {
                job.skills()
            };
            if let Some(replacement) = &edit.skills {
                skills = replacement.clone();
            }
            skills.extend(edit.add_skills.iter().cloned());
            skills.retain(|s| !edit.remove_skills.iter().any(|r| r.trim() == s));
            let skills = dedup(skills);
            job.set("skill", json!(skills.first()));
            job.set("skills", json!(skills));
        }
        if let Some(script) = &edit.script {
            set_optional(job, "script", script);
        }
        if let Some(no_agent) = edit.no_agent {
            job.set("no_agent", json!(no_agent));
        }
        if job.no_agent() && job.script().is_none() {
            return Err(JobError::Invalid(
                "--no-agent needs a script: set --script too".into(),
            ));
        }
        for (key, value) in [
            ("workdir", &edit.workdir),
            ("model", &edit.model),
            ("provider", &edit.provider),
        ] {
            if let Some(value) = value {
                set_optional(job, key, value);
            }
        }
        edited = Some(job.clone());
        Ok(())
    })?;
    edited.ok_or_else(|| JobError::NotFound(reference.to_string()))
}

/// Pauses a job: it keeps its schedule but never fires (nor catches up) until resumed.
pub fn pause_job(
    store: &dyn JobStore,
    reference: &str,
    reason: Option<&str>,
    ctx: &Context,
) -> Result<Job, JobError> {
    let mut paused = None;
    store.update_jobs(ctx, &mut |jobs| {
        let index = find_index(jobs, reference)?;
        let job = &mut jobs[index];
        if job.state() == JobState::Completed {
            return Err(JobError::Invalid(format!(
                "Job {} has completed; there is nothing to pause",
                job.id()
            )));
        }
        job.set("enabled", json!(false));
        job.set("state", json!("paused"));
        job.set("paused_at", json!(ctx.now_text()));
        job.set(
            "paused_reason",
            json!(reason.map(str::trim).filter(|r| !r.is_empty())),
        );
        paused = Some(job.clone());
        Ok(())
    })?;
    paused.ok_or_else(|| JobError::NotFound(reference.to_string()))
}

/// Resumes a paused job; its next run is recomputed from now (missed runs are not
/// caught up). A one-shot whose time has passed is refused.
pub fn resume_job(store: &dyn JobStore, reference: &str, ctx: &Context) -> Result<Job, JobError> {
    let mut resumed = None;
    store.update_jobs(ctx, &mut |jobs| {
        let index = find_index(jobs, reference)?;
        let job = &mut jobs[index];
        if job.state() == JobState::Completed {
            return Err(JobError::Invalid(format!(
                "Job {} has completed; give it a new schedule with 'hermes cron edit {} --schedule ...'",
                job.id(),
                job.id()
            )));
        }
        let zone = job.zone(ctx);
        let schedule = job.schedule(ctx)?;
        let next = match &schedule {
            Schedule::Once { .. } => first_run(&schedule, zone, ctx)?,
            recurring => recurring.next_run(ctx.now, None, zone).ok_or_else(|| {
                JobError::Invalid(format!("Schedule '{}' has no future run", recurring.display()))
            })?,
        };
        job.set("enabled", json!(true));
        job.set("state", json!("scheduled"));
        job.set("paused_at", Value::Null);
        job.set("paused_reason", Value::Null);
        job.set("next_run_at", json!(format_instant(next, zone)));
        resumed = Some(job.clone());
        Ok(())
    })?;
    resumed.ok_or_else(|| JobError::NotFound(reference.to_string()))
}

/// Removes a job and its output directory.
pub fn remove_job(store: &dyn JobStore, reference: &str, ctx: &Context) -> Result<Job, JobError> {
    let mut removed = None;
    store.update_jobs(ctx, &mut |jobs| {
        let index = find_index(jobs, reference)?;
        if !is_safe_id(jobs[index].id()) {
            return Err(JobError::Invalid(format!(
                "Job id '{}' is not a safe file name; fix or remove it in jobs.json by hand",
                jobs[index].id()
            )));
        }
        removed = Some(jobs.remove(index));
        Ok(())
    })?;
    let job = removed.ok_or_else(|| JobError::NotFound(reference.to_string()))?;
    let output = store.output_dir(job.id());
    match std::fs::remove_dir_all(&output) {
        Ok(()) => Ok(job),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(job),
        Err(source) => Err(JobError::Store(StoreError::Io {
            path: output,
            source,
        })),
    }
}
