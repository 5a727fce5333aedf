//! Typed values of the job fields Hermes 0.22 added (reasoning effort, monitor source
//! and state, the sticky last failure) and the record layout a new job is written in,
//! decided from the records a store already holds. Pure: it reads values handed to it
//! and never touches a store or a clock.

use serde_json::Value;

use crate::model::job::Job;

/// A job's pinned reasoning (thinking) effort, `reasoning_effort` in the record. The
/// levels and their spelling are Hermes 0.22's; the model's own support is not checked
/// (providers clamp an unsupported level when the request is sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
    Ultra,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 8] = [
        ReasoningEffort::None,
        ReasoningEffort::Minimal,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
        ReasoningEffort::Xhigh,
        ReasoningEffort::Max,
        ReasoningEffort::Ultra,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::Max => "max",
            ReasoningEffort::Ultra => "ultra",
        }
    }

    /// Reads a level as users write it, case-insensitively; `false` and `disabled` mean
    /// `none` (Hermes 0.22 stores them so). A blank text is no level at all: `Ok(None)`,
    /// which on an edit clears the pin.
    pub fn parse(text: &str) -> Result<Option<ReasoningEffort>, String> {
        let lower = text.trim().to_ascii_lowercase();
        if lower.is_empty() {
            return Ok(None);
        }
        if lower == "false" || lower == "disabled" {
            return Ok(Some(ReasoningEffort::None));
        }
        ReasoningEffort::ALL
            .into_iter()
            .find(|level| level.as_str() == lower)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "Invalid reasoning_effort '{}'. Valid levels: none, minimal, low, medium, high, xhigh, max, ultra (empty string clears the override).",
                    text.trim()
                )
            })
    }
}

/// Where a monitor job reads the output whose change wakes the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorSource<'a> {
    /// A script under `<home>/scripts/`, run like `script`.
    Script(&'a str),
    /// An http(s) URL, fetched each run.
    Url(&'a str),
}

/// `monitor_state`: the hash of the monitored output last seen, and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorState {
    /// SHA-256 of the output's bytes, lower-case hex.
    pub last_output_hash: String,
    /// When the output last changed, as stored (ISO-8601).
    pub last_changed_at: Option<String>,
}

impl MonitorState {
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "last_output_hash": self.last_output_hash,
            "last_changed_at": self.last_changed_at,
        })
    }

    pub(crate) fn from_json(value: &Value) -> Option<MonitorState> {
        let hash = value.get("last_output_hash")?.as_str()?.trim();
        (!hash.is_empty()).then(|| MonitorState {
            last_output_hash: hash.to_string(),
            last_changed_at: value
                .get("last_changed_at")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// `last_failure`: the most recent failed run, kept after later successes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastFailure {
    /// When it failed, as stored (ISO-8601).
    pub at: String,
    pub detail: String,
}

impl LastFailure {
    pub fn to_json(&self) -> Value {
        serde_json::json!({"at": self.at, "detail": self.detail})
    }

    pub(crate) fn from_json(value: &Value) -> Option<LastFailure> {
        Some(LastFailure {
            at: value.get("at")?.as_str()?.to_string(),
            detail: value.get("detail")?.as_str()?.to_string(),
        })
    }
}

/// `unreachable_retry`: the automatic re-run pending after a fire that never reached the
/// model (docs/AGENT.md, "Unreachable model"), written as Hermes 0.22 writes it. The
/// re-run is the job's `next_run_at`; this says that instant is a re-run of an
/// occurrence already counted, not an occurrence of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreachableRetry {
    /// Re-runs planned so far in this cycle, from 1.
    pub attempt: u32,
    /// When the pending re-run fires, as stored (ISO-8601).
    pub at: String,
    /// The cron expression it was planned under (none for an interval): a schedule
    /// edited since makes the instant an ordinary one again.
    pub expr: Option<String>,
}

impl UnreachableRetry {
    pub fn to_json(&self) -> Value {
        serde_json::json!({"attempt": self.attempt, "at": self.at, "expr": self.expr})
    }

    pub(crate) fn from_json(value: &Value) -> Option<UnreachableRetry> {
        Some(UnreachableRetry {
            attempt: value
                .get("attempt")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            at: value.get("at")?.as_str()?.to_string(),
            expr: value
                .get("expr")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

pub use crate::model::field_table::HERMES_022_RUNTIME_KEYS;

/// Which Hermes version's record a new job is written as (docs/STORE.md, "Record
/// layouts"): a store keeps the layout its records already have, so a Hermes 0.19 store
/// never gains 0.22's keys on a job nobody asked a 0.22 feature of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Hermes 0.19: `provider_snapshot` and `model_snapshot`; 0.22's keys only when a
    /// flag sets them.
    Hermes019,
    /// Hermes 0.22: `monitor_*`, `last_delivery_unverified`, `last_failure`, no
    /// snapshots; a job created paused has no next run.
    Hermes022,
}

impl Layout {
    /// The keys [`Layout::of_store`] reads of every job.
    pub const PROBE_KEYS: &'static [&'static str] = &["id", "monitor_state", "provider_snapshot"];

    /// The layout of a store, from its jobs reduced to at least [`Layout::PROBE_KEYS`]:
    /// Hermes 0.22's as soon as one record carries `monitor_state` (0.22 writes it on
    /// every job it creates), else 0.19's when one carries `provider_snapshot` (0.19 and
    /// hermes-cron before 0.22 support wrote it on every job), else — an empty store, or
    /// only hand-written records — 0.22's, today's Hermes.
    pub fn of_store(jobs: &[Job]) -> Layout {
        let has = |key: &str| jobs.iter().any(|job| job.get(key).is_some());
        Layout::of_keys(has("monitor_state"), has("provider_snapshot"))
    }

    /// [`Layout::of_store`] from whether any record carries `monitor_state`, and any
    /// `provider_snapshot` (for a backend that can ask that without reading the jobs).
    pub fn of_keys(monitor_state: bool, provider_snapshot: bool) -> Layout {
        if monitor_state || !provider_snapshot {
            Layout::Hermes022
        } else {
            Layout::Hermes019
        }
    }
}

/// How a schedule given as a bare duration (`30m`, `2h`) is read: `cron.bare_duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BareDuration {
    /// Once, that long from now (the Hermes this project started from); the default.
    #[default]
    Once,
    /// Every that long (Hermes 0.22).
    Every,
}

impl BareDuration {
    /// `once` or `every`; anything else is refused with what to write.
    pub fn parse(text: &str) -> Result<BareDuration, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "once" => Ok(BareDuration::Once),
            "every" => Ok(BareDuration::Every),
            other => Err(format!(
                "cron.bare_duration must be 'once' or 'every', got '{other}'"
            )),
        }
    }
}

/// The schedule text to parse for what the user wrote: a bare duration becomes `every
/// <it>` when bare durations repeat; anything else is left as written.
pub fn schedule_text(input: &str, bare: BareDuration) -> std::borrow::Cow<'_, str> {
    match bare {
        BareDuration::Every if is_bare_duration(input) => {
            std::borrow::Cow::Owned(format!("every {}", input.trim()))
        }
        _ => std::borrow::Cow::Borrowed(input),
    }
}

/// Is `input` a bare duration such as `30m` or `2 hours` (not `in 30m`, not `every 30m`)?
pub fn is_bare_duration(input: &str) -> bool {
    schedules::parse_duration_minutes(&input.trim().to_ascii_lowercase()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_effort_reads_every_level_and_false_or_disabled_as_none() {
        for level in ReasoningEffort::ALL {
            let upper = level.as_str().to_ascii_uppercase();
            assert_eq!(ReasoningEffort::parse(&upper), Ok(Some(level)));
        }
        assert_eq!(
            ReasoningEffort::parse("false"),
            Ok(Some(ReasoningEffort::None))
        );
        assert_eq!(
            ReasoningEffort::parse(" Disabled "),
            Ok(Some(ReasoningEffort::None))
        );
        assert_eq!(ReasoningEffort::parse(""), Ok(None));
        assert!(ReasoningEffort::parse("hgih")
            .unwrap_err()
            .starts_with("Invalid reasoning_effort 'hgih'. Valid levels: none, minimal"));
    }

    fn job(record: Value) -> Job {
        let Value::Object(record) = record else {
            unreachable!()
        };
        Job::from_record(record)
    }

    #[test]
    fn a_store_keeps_the_layout_its_records_have() {
        let v019 = job(json!({"id": "a", "provider_snapshot": null}));
        let v022 = job(json!({"id": "b", "monitor_state": null}));
        let bare = job(json!({"id": "c"}));
        assert_eq!(Layout::of_store(&[]), Layout::Hermes022);
        assert_eq!(
            Layout::of_store(std::slice::from_ref(&bare)),
            Layout::Hermes022
        );
        assert_eq!(
            Layout::of_store(&[v019.clone(), bare.clone()]),
            Layout::Hermes019
        );
        assert_eq!(Layout::of_store(&[v019, v022, bare]), Layout::Hermes022);
    }

    #[test]
    fn only_a_bare_duration_is_read_as_every_when_bare_durations_repeat() {
        assert_eq!(schedule_text("30m", BareDuration::Every), "every 30m");
        assert_eq!(
            schedule_text(" 2 hours ", BareDuration::Every),
            "every 2 hours"
        );
        for kept in ["in 30m", "every 30m", "0 9 * * *", "2026-02-03T14:00"] {
            assert_eq!(schedule_text(kept, BareDuration::Every), kept);
        }
        assert_eq!(schedule_text("30m", BareDuration::Once), "30m");
        assert_eq!(BareDuration::parse("EVERY"), Ok(BareDuration::Every));
        assert!(BareDuration::parse("sometimes").is_err());
    }

    #[test]
    fn healing_and_every_typed_change_keep_the_runtime_fields_hermes_0_22_leaves() {
        let mut record = json!({
            "id": "a", "name": "n", "prompt": "p", "enabled": true, "state": "scheduled",
            "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
            "next_run_at": "2026-03-01T11:00:00+00:00",
        });
        for key in HERMES_022_RUNTIME_KEYS {
            record[*key] = json!({"kept": key});
        }
        let mut job = job(record);
        let ctx = crate::model::job::Context {
            now: chrono::DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
                .unwrap()
                .to_utc(),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        };
        job.heal(&ctx);
        job.set_name("renamed");
        job.set_continuity(true);
        job.set_reasoning_effort(Some(ReasoningEffort::High));
        job.set_pin(Some("custom"), Some("m"));
        job.pause(ctx.now, ctx.zone, Some("why"));
        job.unpause();
        for key in HERMES_022_RUNTIME_KEYS {
            assert_eq!(job.get(key), Some(&json!({"kept": key})), "{key}");
        }
    }

    #[test]
    fn monitor_state_and_last_failure_read_their_objects_and_nothing_else() {
        let state =
            json!({"last_output_hash": "ab", "last_changed_at": "2026-01-01T00:00:00+00:00"});
        assert_eq!(
            MonitorState::from_json(&state).map(|s| s.to_json()),
            Some(state)
        );
        assert_eq!(MonitorState::from_json(&json!("ab")), None);
        let failure = json!({"at": "2026-01-01T00:00:00+00:00", "detail": "boom"});
        assert_eq!(
            LastFailure::from_json(&failure).map(|f| f.to_json()),
            Some(failure)
        );
        assert_eq!(LastFailure::from_json(&json!({"at": 1})), None);
    }
}
