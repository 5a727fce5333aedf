//! A job's run window and jitter as stored (docs/STORE.md, "Job record fields"):
//! `start_at` and `until`, ISO-8601 instants with an offset written in the job's zone
//! like the other `*_at` fields, and `jitter`, whole seconds. Each is absent or null
//! when not set. The maths is [`schedules::RunWindow`]; this file reads and writes the
//! fields and checks what the doors give (`--start-at`, `--until`, `--jitter`).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use schedules::{
    format_instant, format_span, parse_span_seconds, parse_user_timestamp, Planned, RunWindow,
    Schedule,
};

use crate::lifecycle::JobError;
use crate::model::job::{Context, Job};

/// The window fields a create or an edit gives, as typed (`Some("")` clears on an edit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowTexts {
    /// `--start-at`: no run before it.
    pub start_at: Option<String>,
    /// `--until`: no run after it.
    pub until: Option<String>,
    /// `--jitter`: a span such as `5m` (`0` clears).
    pub jitter: Option<String>,
}

impl WindowTexts {
    pub fn is_empty(&self) -> bool {
        self.start_at.is_none() && self.until.is_none() && self.jitter.is_none()
    }

    /// The texts as clap, JSON or a form gives them: blank counts as "not given" on a
    /// create.
    fn given(text: &Option<String>) -> Option<&str> {
        text.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }

    /// Checks the texts that do not need the job (the jitter), so a refused edit is
    /// refused before the store is touched.
    pub fn check(&self) -> Result<(), JobError> {
        if let Some(text) = Self::given(&self.jitter) {
            parse_jitter(text)?;
        }
        Ok(())
    }

    /// Writes the given fields onto `job`, read in its zone; a blank text clears one.
    /// The caller reschedules and then calls [`check_window`].
    pub fn apply(&self, job: &mut Job, ctx: &Context) -> Result<(), JobError> {
        let zone = job.zone(ctx);
        for (key, text) in [("start_at", &self.start_at), ("until", &self.until)] {
            match text.as_deref().map(str::trim) {
                None => {}
                Some("") => job.set(key, Value::Null),
                Some(text) => {
                    let instant = parse_instant(key, text, zone)?;
                    job.set(key, json!(format_instant(instant, zone)));
                }
            }
        }
        match self.jitter.as_deref().map(str::trim) {
            None => {}
            Some("") => job.set("jitter", Value::Null),
            Some(text) => match parse_jitter(text)? {
                0 => job.set("jitter", Value::Null),
                secs => job.set("jitter", json!(secs)),
            },
        }
        Ok(())
    }
}

fn flag(key: &str) -> &'static str {
    match key {
        "start_at" => "--start-at",
        _ => "--until",
    }
}

fn parse_instant(key: &str, text: &str, zone: Tz) -> Result<DateTime<Utc>, JobError> {
    parse_user_timestamp(text, zone)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            JobError::Invalid(format!(
                "Invalid {} '{text}': give an ISO-8601 date and time such as 2026-03-01T09:00:00+01:00 (without an offset it is read in the job's time zone)",
                flag(key)
            ))
        })
}

fn parse_jitter(text: &str) -> Result<u64, JobError> {
    parse_span_seconds(text).ok_or_else(|| {
        JobError::Invalid(format!(
            "Invalid --jitter '{text}': give a duration such as 90s, 5m or 1h (0 for none), at most a year"
        ))
    })
}

impl Job {
    /// `jitter` in whole seconds (0: none).
    pub fn jitter_secs(&self) -> u64 {
        self.get("jitter").and_then(Value::as_u64).unwrap_or(0)
    }

    /// The job's run window and jitter.
    pub fn run_window(&self, ctx: &Context) -> RunWindow<'_> {
        RunWindow {
            start_at: self.instant("start_at", ctx),
            until: self.instant("until", ctx),
            jitter_secs: self.jitter_secs(),
            seed: self.id(),
        }
    }

    /// The next run of `schedule` from `now` (and `last_run_at`) within the job's window,
    /// shifted by its jitter.
    pub fn planned_next(
        &self,
        schedule: &Schedule,
        now: DateTime<Utc>,
        last_run_at: Option<DateTime<Utc>>,
        ctx: &Context,
    ) -> Planned {
        self.run_window(ctx)
            .next_run(schedule, now, last_run_at, self.zone(ctx))
    }

    /// The window as `list` shows it: `from … until … jitter …`, the parts that are set.
    pub fn window_text(&self, ctx: &Context) -> Option<String> {
        let zone = self.zone(ctx);
        let mut parts = Vec::new();
        if let Some(start) = self.instant("start_at", ctx) {
            parts.push(format!("from {}", format_instant(start, zone)));
        }
        if let Some(until) = self.instant("until", ctx) {
            parts.push(format!("until {}", format_instant(until, zone)));
        }
        if self.jitter_secs() > 0 {
            parts.push(format!("jitter {}", format_span(self.jitter_secs())));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The rules of a window on the job as it will be stored: only on a recurring schedule,
/// `until` after `start_at`, and a first run before `until`.
pub fn check_window(job: &Job, schedule: &Schedule, ctx: &Context) -> Result<(), JobError> {
    let window = job.run_window(ctx);
    if window.is_plain() {
        return Ok(());
    }
    let zone = job.zone(ctx);
    if !schedule.is_recurring() {
        return Err(JobError::Invalid(
            "--start-at, --until and --jitter apply to recurring schedules: a one-shot runs once at its own time".into(),
        ));
    }
    if let (Some(start), Some(until)) = (window.start_at, window.until) {
        if until <= start {
            return Err(JobError::Invalid(format!(
                "--until ({}) is not after --start-at ({}): give a later --until",
                format_instant(until, zone),
                format_instant(start, zone)
            )));
        }
    }
    if let (Some(until), Planned::Ended) =
        (window.until, window.next_run(schedule, ctx.now, None, zone))
    {
        return Err(JobError::Invalid(format!(
            "--until ({}) leaves the job no run: give a time after its next occurrence",
            format_instant(until, zone)
        )));
    }
    Ok(())
}
