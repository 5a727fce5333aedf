//! One job record as jobs.json holds it, with typed, tolerant views of its fields.
//!
//! The record stays a JSON object so that every key we do not know — at any depth —
//! survives a rewrite. Readers never fail on a wrongly typed field: they fall back to
//! the default, and the healing in [`Job::heal`] rewrites the field properly.
//!
//! Its readers are here; [`setters`] holds the typed setters, [`heal`] the repairs a
//! record gets on every read, [`normalized`] the `list --json` form.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{json, Map, Value};

use schedules::{format_instant, parse_stored_instant, Schedule, ScheduleError};

use crate::jsonjobs::Record;
use crate::model::field_table::{Start, Written, FIELDS};
use crate::model::fields::{
    LastFailure, Layout, MonitorSource, MonitorState, ReasoningEffort, UnreachableRetry,
};

mod heal;
mod normalized;
mod setters;

pub use normalized::NormalizedJob;
pub(crate) use normalized::NORMALIZED_KEYS;

/// What "now" and "where" mean for an operation: the caller's clock reading, the
/// configured zone (docs/SCHEDULES.md, "Time zones") and the system zone that legacy naive timestamps are read in.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    pub now: DateTime<Utc>,
    pub zone: Tz,
    pub legacy_zone: Tz,
}

impl Context {
    /// `now` written the way jobs.json stores instants.
    pub fn now_text(&self) -> String {
        format_instant(self.now, self.zone)
    }
}

/// A job's state as users see it (docs/STORE.md, "Effective state").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Scheduled,
    Paused,
    Completed,
    Error,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Scheduled => "scheduled",
            JobState::Paused => "paused",
            JobState::Completed => "completed",
            JobState::Error => "error",
        }
    }
}

/// `repeat`: how many runs in all (`None` = forever) and how many have been recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub times: Option<u64>,
    pub completed: u64,
}

impl Repeat {
    pub fn to_json(self) -> Value {
        json!({"times": self.times, "completed": self.completed})
    }
}

/// Reads a repeat count as users and Hermes versions write it: a number, `"3"`,
/// `"forever"`, `"once"`, null. Zero or less means forever.
pub fn parse_repeat_times(value: &Value) -> Result<Option<u64>, String> {
    let count = match value {
        Value::Null => return Ok(None),
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("repeat must be a whole number, got {n}"))?,
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "" | "forever" | "always" | "infinite" | "inf" | "none" | "null" => return Ok(None),
            "once" => 1,
            "twice" => 2,
            other => other
                .parse::<i64>()
                .map_err(|_| format!("Invalid repeat '{s}': use a number, 'once' or 'forever'"))?,
        },
        other => {
            return Err(format!(
                "Invalid repeat {other}: use a number, 'once' or 'forever'"
            ))
        }
    };
    Ok(u64::try_from(count).ok().filter(|n| *n > 0))
}

/// Is `id` usable as a single path component (it names the output directory)?
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh 12-hex-character id.
pub fn new_id() -> String {
    let bytes: [u8; 6] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub use crate::model::field_table::SCHEDULING_KEYS;

/// The optional text fields a user sets and clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    Script,
    Workdir,
    Model,
    Provider,
    Timezone,
    MonitorScript,
    MonitorUrl,
    FailureDeliver,
    Interpreter,
    /// `strict`, `standard` or `off`: how confined the job's runs are.
    Sandbox,
}

impl TextField {
    pub fn key(self) -> &'static str {
        match self {
            TextField::Script => "script",
            TextField::Workdir => "workdir",
            TextField::Model => "model",
            TextField::Provider => "provider",
            TextField::Timezone => "timezone",
            TextField::MonitorScript => "monitor_script",
            TextField::MonitorUrl => "monitor_url",
            TextField::FailureDeliver => "failure_deliver",
            TextField::Interpreter => "interpreter",
            TextField::Sandbox => "sandbox",
        }
    }
}

/// Everything a new job is made of (validated by the caller).
#[derive(Debug)]
pub struct JobSpec<'a> {
    pub id: String,
    pub name: String,
    pub prompt: &'a str,
    pub skills: &'a [String],
    pub model: Option<&'a str>,
    pub provider: Option<&'a str>,
    /// The provider an unpinned job resolved to at creation (Hermes 0.19's drift guard;
    /// written in the 0.19 layout only).
    pub provider_snapshot: Option<&'a str>,
    /// The default model an unpinned job resolved to at creation (0.19 layout only).
    pub model_snapshot: Option<&'a str>,
    pub script: Option<&'a str>,
    pub no_agent: bool,
    pub monitor: Option<MonitorSource<'a>>,
    /// `context_from` (`["self"]` for continuity); `None` stores null.
    pub context_from: Option<Vec<String>>,
    pub schedule: &'a Schedule,
    pub times: Option<u64>,
    /// Created paused at this instant (written in the configured zone), with this reason.
    pub paused_at: Option<String>,
    pub paused_reason: Option<&'a str>,
    pub created_at: String,
    pub next_run_at: String,
    pub deliver: String,
    pub origin: Option<Value>,
    pub workdir: Option<&'a str>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub failure_deliver: Option<&'a str>,
    pub interpreter: Option<&'a str>,
    /// A per-job zone; the key is written only when given (Python Hermes has none).
    pub timezone: Option<&'a str>,
    /// Which Hermes version's record this is written as.
    pub layout: Layout,
}

/// A yes/no field as Hermes versions write it: a boolean, `"true"`/`"no"`/`"1"`..., a number.
fn flag_value(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(true),
            "false" | "no" | "0" => Some(false),
            _ => None,
        },
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        _ => None,
    }
}

fn non_blank(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// A job's effective state from its `state`, `enabled` and `paused_at` values, as
/// [`Job::state`] reads them: for a reader that has picked only those fields.
pub fn state_of(
    state: Option<&Value>,
    enabled: Option<&Value>,
    paused_at: Option<&Value>,
) -> JobState {
    effective_state(
        state.and_then(Value::as_str),
        enabled.and_then(flag_value),
        non_blank(paused_at).is_some(),
    )
}

/// The rule behind [`state_of`], on values already read: the stored `state` text, the
/// `enabled` flag and whether `paused_at` is set.
pub(crate) fn effective_state(
    state: Option<&str>,
    enabled: Option<bool>,
    paused_at_set: bool,
) -> JobState {
    match state {
        Some("completed") => JobState::Completed,
        Some("error") => JobState::Error,
        _ if !enabled.unwrap_or(true) || state == Some("paused") || paused_at_set => {
            JobState::Paused
        }
        _ => JobState::Scheduled,
    }
}

/// A stored instant field's value as [`Job::instant`] reads it (blank or not text: none).
pub fn instant_of(value: Option<&Value>, ctx: &Context) -> Option<DateTime<Utc>> {
    non_blank(value).and_then(|text| parse_stored_instant(text, ctx.legacy_zone))
}

/// One record of jobs.json.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    record: Record,
}

/// What a run of a job is ([`Job::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind<'a> {
    /// The agent, with the job's script (if any) feeding its prompt.
    Agent,
    /// The agent, run only when the monitored output changed.
    Monitored(MonitorSource<'a>),
    /// The job's script alone; its output is the result.
    ScriptOnly,
}

impl JobKind<'_> {
    /// Whether a run asks a model (and so spends, and needs a provider).
    pub fn runs_agent(&self) -> bool {
        !matches!(self, JobKind::ScriptOnly)
    }
}

/// The value a new record writes for a [`Start::Given`] field of [`FIELDS`]: what the
/// job was made of, or what creating it decides (null when it was made without it);
/// `None` for a key that is not such a field.
fn given(spec: &JobSpec<'_>, key: &str) -> Option<Value> {
    let monitor = |want_script: bool| match spec.monitor {
        Some(MonitorSource::Script(script)) if want_script => Some(script),
        Some(MonitorSource::Url(url)) if !want_script => Some(url),
        _ => None,
    };
    Some(match key {
        "id" => json!(spec.id),
        "name" => json!(spec.name),
        "prompt" => json!(spec.prompt),
        "skills" => json!(spec.skills),
        "skill" => json!(spec.skills.first()),
        "model" => json!(spec.model),
        "provider" => json!(spec.provider),
        "provider_snapshot" => json!(spec.provider_snapshot),
        "model_snapshot" => json!(spec.model_snapshot),
        "script" => json!(spec.script),
        "no_agent" => json!(spec.no_agent),
        "monitor_script" => json!(monitor(true)),
        "monitor_url" => json!(monitor(false)),
        "context_from" => json!(spec.context_from),
        "schedule" => spec.schedule.to_json(),
        "schedule_display" => json!(spec.schedule.display()),
        "repeat" => json!({"times": spec.times, "completed": 0}),
        "enabled" => json!(spec.paused_at.is_none()),
        "state" => json!(match spec.paused_at {
            Some(_) => "paused",
            None => "scheduled",
        }),
        "paused_at" => json!(spec.paused_at),
        "paused_reason" => json!(spec.paused_reason),
        "created_at" => json!(spec.created_at),
        // A paused job has no next run in 0.22's record; 0.19's has no paused create and
        // keeps the one computed.
        "next_run_at" => match &spec.paused_at {
            Some(_) if spec.layout == Layout::Hermes022 => Value::Null,
            _ => json!(spec.next_run_at),
        },
        "deliver" => json!(spec.deliver),
        "origin" => spec.origin.clone().unwrap_or(Value::Null),
        "workdir" => json!(spec.workdir),
        "reasoning_effort" => json!(spec.reasoning_effort.map(ReasoningEffort::as_str)),
        "failure_deliver" => json!(spec.failure_deliver),
        "interpreter" => json!(spec.interpreter),
        "timezone" => json!(spec.timezone),
        _ => return None,
    })
}

impl Job {
    pub fn from_record(record: Record) -> Job {
        Job { record }
    }

    /// A new job's record, every field in the order the layout's Hermes writes them
    /// ([`FIELDS`]'s order): keys a layout does not have are left out, and the keys
    /// written only when set (Hermes 0.22's `reasoning_effort`, `failure_deliver`,
    /// `interpreter`, and `timezone`) come last when set.
    pub fn create(spec: &JobSpec<'_>) -> Job {
        let record: Record = FIELDS
            .iter()
            .filter_map(|field| {
                let value = match field.start {
                    // Every `Given` field has its value (held by a test).
                    Start::Given => given(spec, field.key).unwrap_or(Value::Null),
                    Start::Null => Value::Null,
                    Start::Zero => json!(0),
                };
                let written = match field.written {
                    Written::Always => true,
                    Written::WhenSet => !value.is_null(),
                    Written::Layout(layout) => layout == spec.layout,
                    Written::LayoutElseWhenSet(layout) => layout == spec.layout || !value.is_null(),
                    Written::Later => false,
                };
                written.then(|| (field.key.to_string(), value))
            })
            .collect();
        Job { record }
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    pub fn into_record(self) -> Record {
        self.record
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.record.get(key)
    }

    /// Writes a field by name: only this module and the crate's tests do; everyone else
    /// uses the typed setters below.
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        self.record.insert(key.to_string(), value);
    }

    /// Removes a field by name (the crate's typed setters clear with it).
    pub(crate) fn unset(&mut self, key: &str) {
        self.record.remove(key);
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.record.get(key).and_then(Value::as_str)
    }

    /// A string field that counts only when non-empty.
    pub fn text_field(&self, key: &str) -> Option<&str> {
        self.text(key).filter(|s| !s.trim().is_empty())
    }

    fn flag(&self, key: &str) -> Option<bool> {
        flag_value(self.record.get(key)?)
    }

    pub fn id(&self) -> &str {
        self.text("id").unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.text_field("name").unwrap_or("cron job")
    }

    pub fn prompt(&self) -> &str {
        self.text("prompt").unwrap_or("")
    }

    pub fn skills(&self) -> Vec<String> {
        let mut skills: Vec<String> = match self.record.get("skills") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
            _ => Vec::new(),
        };
        if skills.is_empty() {
            if let Some(skill) = self.text_field("skill") {
                skills.push(skill.trim().to_string());
            }
        }
        let mut seen = std::collections::HashSet::new();
        skills.retain(|s| seen.insert(s.clone()));
        skills
    }

    pub fn script(&self) -> Option<&str> {
        self.text_field("script")
    }

    /// The directory the job's script and agent work in (`workdir`), when set.
    pub fn workdir(&self) -> Option<&str> {
        self.text_field("workdir")
    }

    /// The job's own sandbox level as written (`sandbox`), when set.
    pub fn sandbox(&self) -> Option<&str> {
        self.text_field("sandbox")
    }

    /// The endpoint pinned with the model (`base_url`), when set.
    pub fn base_url(&self) -> Option<&str> {
        self.text_field("base_url")
    }

    /// The last run's error (`last_error`), when it failed.
    pub fn last_error(&self) -> Option<&str> {
        self.text_field("last_error")
    }

    /// Why the last run's delivery failed (`last_delivery_error`), when it did.
    pub fn last_delivery_error(&self) -> Option<&str> {
        self.text_field("last_delivery_error")
    }

    /// The pinned model (`model`), when set.
    pub fn model(&self) -> Option<&str> {
        self.text_field("model")
    }

    /// The provider paired with the pinned model (`provider`), when set.
    pub fn provider(&self) -> Option<&str> {
        self.text_field("provider")
    }

    /// Where a monitor job reads its output (`monitor_script`, else `monitor_url`).
    pub fn monitor_source(&self) -> Option<MonitorSource<'_>> {
        self.text_field("monitor_script")
            .map(MonitorSource::Script)
            .or_else(|| self.text_field("monitor_url").map(MonitorSource::Url))
    }

    /// The monitored output's hash last seen (`monitor_state`); none before the first
    /// run or when unreadable.
    pub fn monitor_state(&self) -> Option<MonitorState> {
        self.record
            .get("monitor_state")
            .and_then(MonitorState::from_json)
    }

    /// Where failure notices go instead of `deliver` (`failure_deliver`), when set.
    pub fn failure_deliver(&self) -> Option<&str> {
        self.text_field("failure_deliver")
    }

    /// The pinned reasoning effort; a stored level this build does not know counts as
    /// none (config decides).
    pub fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.text_field("reasoning_effort")
            .and_then(|text| ReasoningEffort::parse(text).ok().flatten())
    }

    /// The Python a `.py` script or monitor script runs under (`interpreter`), when set.
    pub fn interpreter(&self) -> Option<&str> {
        self.text_field("interpreter")
    }

    /// `context_from` as a list of references (a single text is one reference), blank
    /// ones left out; `self` stands for this job.
    pub fn context_from(&self) -> Vec<String> {
        let items: Vec<&str> = match self.record.get("context_from") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(one)) => vec![one.as_str()],
            _ => Vec::new(),
        };
        items
            .into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Continuity: each run sees this job's own previous output (`"self"`, or its own id,
    /// in `context_from`).
    pub fn continuity(&self) -> bool {
        let id = self.id();
        self.context_from()
            .iter()
            .any(|r| r.eq_ignore_ascii_case("self") || r == id)
    }

    pub fn paused_reason(&self) -> Option<&str> {
        self.text_field("paused_reason")
    }

    /// The most recent failed run (`last_failure`), kept after later successes.
    pub fn last_failure(&self) -> Option<LastFailure> {
        self.record
            .get("last_failure")
            .and_then(LastFailure::from_json)
    }

    /// A per-run prompt Hermes 0.22 left for the fire of a manual run it forwarded
    /// through the store (`manual_run_prompt`, with `manual_run_at` set): that fire
    /// appends it as its run context.
    pub fn manual_run_prompt(&self) -> Option<&str> {
        self.text_field("manual_run_at")?;
        self.text_field("manual_run_prompt")
    }

    /// Ends a forwarded manual run once it ran: `manual_run_at` and
    /// `manual_run_prompt` are removed, as Hermes 0.22 removes them.
    pub fn clear_manual_run(&mut self) {
        self.record.remove("manual_run_at");
        self.record.remove("manual_run_prompt");
    }

    /// The operator was told that the pre-run check blocked this job
    /// (`preflight_alerted`): later blocked runs stay silent until one passes the check.
    pub fn preflight_alerted(&self) -> bool {
        self.flag("preflight_alerted").unwrap_or(false)
    }

    /// The pending re-run of a fire that never reached the model, when one is planned.
    pub fn unreachable_retry(&self) -> Option<UnreachableRetry> {
        self.record
            .get("unreachable_retry")
            .and_then(UnreachableRetry::from_json)
    }

    /// The cron expression of the schedule as stored (none for other kinds).
    pub fn cron_expr(&self) -> Option<&str> {
        self.record
            .get("schedule")
            .and_then(|s| s.get("expr"))
            .and_then(Value::as_str)
    }

    /// Is the occurrence due at `due_at` the pending unreachable-model re-run (planned
    /// under the schedule the job still has), rather than an occurrence of its own?
    pub fn is_unreachable_retry_fire(&self, due_at: DateTime<Utc>, ctx: &Context) -> bool {
        self.unreachable_retry().is_some_and(|retry| {
            parse_stored_instant(&retry.at, ctx.legacy_zone) == Some(due_at)
                && retry.expr.as_deref() == self.cron_expr()
        })
    }

    /// Until when a closed provider usage window holds the job's fires
    /// (`quota_hold_until`), when it does.
    pub fn quota_hold_until(&self, ctx: &Context) -> Option<DateTime<Utc>> {
        self.instant("quota_hold_until", ctx)
    }

    /// Does the record carry Hermes 0.19's `provider_snapshot`/`model_snapshot`?
    pub fn has_inference_snapshots(&self) -> bool {
        self.record.contains_key("provider_snapshot") || self.record.contains_key("model_snapshot")
    }

    pub fn no_agent(&self) -> bool {
        self.flag("no_agent").unwrap_or(false)
    }

    /// What a run of this job is, decided once from its fields: a script alone
    /// (`no_agent`; Hermes runs it before and without any monitor), an agent whose run a
    /// monitor gates (`monitor_script` or `monitor_url`), or a plain agent.
    pub fn kind(&self) -> JobKind<'_> {
        if self.no_agent() {
            return JobKind::ScriptOnly;
        }
        match self.monitor_source() {
            Some(source) => JobKind::Monitored(source),
            None => JobKind::Agent,
        }
    }

    pub fn enabled(&self) -> bool {
        self.flag("enabled").unwrap_or(true)
    }

    /// A pause marker: the record says paused, or carries `paused_at`.
    fn has_pause_marker(&self) -> bool {
        self.text("state") == Some("paused") || self.text_field("paused_at").is_some()
    }

    pub fn state(&self) -> JobState {
        state_of(
            self.record.get("state"),
            self.record.get("enabled"),
            self.record.get("paused_at"),
        )
    }

    /// The zone this job's cron and phrase schedules are read in.
    pub fn zone(&self, ctx: &Context) -> Tz {
        self.text_field("timezone")
            .and_then(|name| name.trim().parse::<Tz>().ok())
            .unwrap_or(ctx.zone)
    }

    pub fn schedule(&self, ctx: &Context) -> Result<Schedule, ScheduleError> {
        let value = self.record.get("schedule").unwrap_or(&Value::Null);
        Schedule::from_json(value, ctx.now, self.zone(ctx), ctx.legacy_zone)
    }

    /// Is this a one-shot, as stored (object or bare-string schedule)?
    pub fn is_one_shot(&self) -> bool {
        match self.record.get("schedule") {
            Some(Value::Object(o)) => o.get("kind").and_then(Value::as_str) == Some("once"),
            Some(value @ Value::String(_)) => {
                Schedule::from_json(value, DateTime::UNIX_EPOCH, Tz::UTC, Tz::UTC)
                    .is_ok_and(|s| !s.is_recurring())
            }
            _ => false,
        }
    }

    /// `repeat`, with its defaults (docs/SCHEDULES.md, "Repeat"): one-shots run once, others forever.
    /// The schedule as users see it: the stored `display`, else the parsed schedule's.
    /// (Parsing a cron expression costs microseconds; `list` of 10,000 jobs avoids it.)
    pub fn schedule_display(&self, ctx: &Context) -> Result<String, ScheduleError> {
        let stored = self
            .record
            .get("schedule")
            .and_then(|s| s.get("display"))
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty());
        match stored {
            Some(display) => Ok(display.to_string()),
            None => self.schedule(ctx).map(|s| s.display().to_string()),
        }
    }

    pub fn repeat(&self) -> Repeat {
        let default_times = if self.is_one_shot() { Some(1) } else { None };
        let (times, completed) = match self.record.get("repeat") {
            Some(Value::Object(o)) => (
                match o.get("times") {
                    Some(t) => parse_repeat_times(t).unwrap_or(default_times),
                    None => default_times,
                },
                o.get("completed").and_then(Value::as_u64).unwrap_or(0),
            ),
            Some(Value::Null) | None => (default_times, 0),
            Some(other) => (parse_repeat_times(other).unwrap_or(default_times), 0),
        };
        Repeat { times, completed }
    }

    pub fn instant(&self, key: &str, ctx: &Context) -> Option<DateTime<Utc>> {
        instant_of(self.record.get(key), ctx)
    }

    pub fn next_run_at(&self, ctx: &Context) -> Option<DateTime<Utc>> {
        self.instant("next_run_at", ctx)
    }

    pub fn last_run_at(&self, ctx: &Context) -> Option<DateTime<Utc>> {
        self.instant("last_run_at", ctx)
    }

    /// `deliver` as a comma-separated string; a JSON list is joined.
    pub fn deliver(&self) -> String {
        match self.record.get("deliver") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::Array(items)) => {
                let parts: Vec<&str> = items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .collect();
                let joined = parts.join(",");
                if joined.is_empty() {
                    self.default_deliver().to_string()
                } else {
                    joined
                }
            }
            _ => self.default_deliver().to_string(),
        }
    }

    /// Where failure notices go: `failure_deliver` when set and not blank, else
    /// `deliver` (Hermes 0.22's failure lane; `local` mutes them).
    pub fn failure_lane(&self) -> String {
        match self.failure_deliver() {
            Some(lane) => lane.trim().to_string(),
            None => self.deliver(),
        }
    }

    fn default_deliver(&self) -> &'static str {
        if self.origin().is_some() {
            "origin"
        } else {
            "local"
        }
    }

    /// The chat the job came from; a non-object origin is ignored.
    pub fn origin(&self) -> Option<&Map<String, Value>> {
        self.record.get("origin").and_then(Value::as_object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(fields: Value) -> Job {
        let Value::Object(record) = fields else {
            unreachable!("a test job is an object");
        };
        Job::from_record(record)
    }

    #[test]
    fn a_job_is_an_agent_a_monitored_agent_or_a_script_alone() {
        assert_eq!(job(json!({"prompt": "p"})).kind(), JobKind::Agent);
        assert_eq!(
            job(json!({"prompt": "p", "monitor_url": "https://example.org/feed"})).kind(),
            JobKind::Monitored(MonitorSource::Url("https://example.org/feed"))
        );
        assert_eq!(
            job(json!({"monitor_script": "watch.sh", "monitor_url": "https://x.test"})).kind(),
            JobKind::Monitored(MonitorSource::Script("watch.sh"))
        );
        // A script-only job runs without its monitor, as in Hermes.
        let script_only =
            job(json!({"script": "s.sh", "no_agent": true, "monitor_url": "https://x.test"}));
        assert_eq!(script_only.kind(), JobKind::ScriptOnly);
        assert!(!script_only.kind().runs_agent());
        assert!(JobKind::Agent.runs_agent());
    }

    #[test]
    fn every_given_field_of_the_table_has_its_value_in_a_new_record() {
        let schedule = Schedule::from_json(
            &json!({"kind": "interval", "minutes": 60, "display": "every 60m"}),
            DateTime::UNIX_EPOCH,
            Tz::UTC,
            Tz::UTC,
        )
        .unwrap();
        let spec = JobSpec {
            id: "0123456789ab".into(),
            name: "n".into(),
            prompt: "p",
            skills: &[],
            model: None,
            provider: None,
            provider_snapshot: None,
            model_snapshot: None,
            script: None,
            no_agent: false,
            monitor: None,
            context_from: None,
            schedule: &schedule,
            times: None,
            paused_at: None,
            paused_reason: None,
            created_at: "2026-03-01T10:00:00+00:00".into(),
            next_run_at: "2026-03-01T11:00:00+00:00".into(),
            deliver: "local".into(),
            origin: None,
            workdir: None,
            reasoning_effort: None,
            failure_deliver: None,
            interpreter: None,
            timezone: None,
            layout: Layout::Hermes022,
        };
        for field in FIELDS.iter().filter(|f| f.start == Start::Given) {
            assert!(given(&spec, field.key).is_some(), "{}", field.key);
        }
        assert_eq!(given(&spec, "last_status"), None);
    }
}
