//! The typed setters: the only ways a job's fields change outside this module.

use super::*;
use crate::ledger::RunStatus;

impl Job {
    fn set_instant(&mut self, key: &str, at: Option<DateTime<Utc>>, zone: Tz) {
        self.set(
            key,
            at.map_or(Value::Null, |t| json!(format_instant(t, zone))),
        );
    }

    fn set_optional_text(&mut self, key: &str, value: Option<&str>) {
        self.set(key, value.map_or(Value::Null, |v| json!(v)));
    }

    /// The next fire, written in `zone` (null: none).
    pub fn set_next_run_at(&mut self, at: Option<DateTime<Utc>>, zone: Tz) {
        self.set_instant("next_run_at", at, zone);
    }

    pub fn set_last_run_at(&mut self, at: Option<DateTime<Utc>>, zone: Tz) {
        self.set_instant("last_run_at", at, zone);
    }

    /// `repeat`, keeping any other key the stored object carries.
    pub fn set_repeat(&mut self, repeat: Repeat) {
        let mut object = match self.record.get("repeat") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        object.insert("times".into(), json!(repeat.times));
        object.insert("completed".into(), json!(repeat.completed));
        self.set("repeat", Value::Object(object));
    }

    /// `repeat` replaced whole (an edit sets a new count; a new schedule starts afresh).
    pub fn replace_repeat(&mut self, repeat: Repeat) {
        self.set("repeat", repeat.to_json());
    }

    /// Marks the job finished for good: kept, disabled, no next run.
    pub fn complete(&mut self) {
        self.set("enabled", json!(false));
        self.set("state", json!("completed"));
        self.set("next_run_at", Value::Null);
    }

    pub fn set_enabled(&mut self, enabled: bool) {
        self.set("enabled", json!(enabled));
    }

    /// The stored `state` (the effective state also looks at `enabled` and the pause
    /// marker, see [`Job::state`]).
    pub fn set_state(&mut self, state: JobState) {
        self.set("state", json!(state.as_str()));
    }

    /// Enabled but unschedulable: kept enabled in `state: error` with the reason.
    pub fn set_broken(&mut self, reason: &str) {
        self.set("state", json!("error"));
        self.set("last_error", json!(reason));
    }

    /// Paused at `at` (written in `zone`, the configured one) with an optional reason.
    pub fn pause(&mut self, at: DateTime<Utc>, zone: Tz, reason: Option<&str>) {
        self.set_enabled(false);
        self.set_state(JobState::Paused);
        self.set_instant("paused_at", Some(at), zone);
        self.set_optional_text("paused_reason", reason);
    }

    /// Clears the pause marker and makes the job runnable.
    pub fn unpause(&mut self) {
        self.set_enabled(true);
        self.set_state(JobState::Scheduled);
        self.set("paused_at", Value::Null);
        self.set("paused_reason", Value::Null);
    }

    /// What the job's last run ended as (`last_status`; none before its first run). A
    /// status this build does not know reads as itself ([`RunStatus::Other`]).
    pub fn last_status(&self) -> Option<RunStatus> {
        self.text_field("last_status").map(RunStatus::parse)
    }

    fn set_last_status(&mut self, status: &RunStatus) {
        self.set("last_status", json!(status.as_str()));
    }

    /// The outcome fields of a run: status, error, delivery error and the failure
    /// streak (one more on error, else back to zero).
    pub fn record_outcome(
        &mut self,
        status: &RunStatus,
        error: Option<&str>,
        delivery_error: Option<&str>,
    ) {
        self.set_last_status(status);
        self.set_optional_text("last_error", error);
        self.set_optional_text("last_delivery_error", delivery_error);
        let streak = if error.is_some() {
            self.failure_streak() + 1
        } else {
            0
        };
        self.set("failure_streak", json!(streak));
    }

    /// A run stopped on request: `last_status: cancelled`, the error of the run before
    /// cleared (this one did not fail), the failure streak kept as it was.
    pub fn record_cancelled(&mut self) {
        self.set_last_status(&RunStatus::Cancelled);
        self.set_optional_text("last_error", None);
    }

    /// A failed run's sticky stamp, `last_failure` `{at, detail}`, which a later success
    /// keeps (Hermes 0.22 writes it so a job that failed once does not look always green).
    /// Only on a record that carries the field, as 0.22's records do: a 0.19 record gains
    /// no key it never had. `at` is written in `zone`.
    pub fn stamp_failure(&mut self, at: DateTime<Utc>, zone: Tz, detail: &str) {
        if self.record.contains_key("last_failure") {
            self.set_last_failure(Some(&LastFailure {
                at: format_instant(at, zone),
                detail: detail.to_string(),
            }));
        }
    }

    /// A one-shot that was never run: completed with `last_status: missed`.
    pub fn mark_missed(&mut self, why: &str) {
        self.complete();
        self.set_last_status(&RunStatus::Missed);
        self.set("last_error", json!(why));
    }

    /// A delivery retried later arrived: the last run is `ok` after all.
    pub fn clear_delivery_failure(&mut self) {
        self.set_last_status(&RunStatus::Ok);
        self.set("last_delivery_error", Value::Null);
    }

    pub fn failure_streak(&self) -> u64 {
        self.record
            .get("failure_streak")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// The `run_claim` stamp (`{at, by}`) that keeps other schedulers on a shared store
    /// off a running one-shot; `None` clears it.
    pub fn set_run_claim(&mut self, claim: Option<(DateTime<Utc>, &str)>, zone: Tz) {
        let value = claim.map_or(
            Value::Null,
            |(at, by)| json!({"at": format_instant(at, zone), "by": by}),
        );
        self.set("run_claim", value);
    }

    /// Who stamped the job's `run_claim`, when it has one.
    pub fn run_claim_by(&self) -> Option<&str> {
        self.record
            .get("run_claim")
            .and_then(|claim| claim.get("by"))
            .and_then(Value::as_str)
    }

    /// When the job's `run_claim` was stamped (unreadable: none).
    pub fn run_claim_at(&self, ctx: &Context) -> Option<DateTime<Utc>> {
        let at = self
            .record
            .get("run_claim")
            .and_then(|claim| claim.get("at"))
            .and_then(Value::as_str)?;
        parse_stored_instant(at, ctx.legacy_zone)
    }

    pub fn has_run_claim(&self) -> bool {
        self.record.get("run_claim").is_some_and(|c| !c.is_null())
    }

    /// This job for one run only: its prompt followed by a per-run context block, as
    /// Hermes 0.22 appends one (`\n\n## Run Context\n<context>`). Never stored: the
    /// record a run writes back is the stored one.
    pub fn with_run_context(mut self, context: &str) -> Job {
        let prompt = format!("{}\n\n## Run Context\n{context}", self.prompt());
        self.set_prompt(&prompt);
        self
    }

    /// A new schedule and its display.
    pub fn set_schedule(&mut self, schedule: &Schedule) {
        self.set("schedule", schedule.to_json());
        self.set("schedule_display", json!(schedule.display()));
    }

    pub fn set_name(&mut self, name: &str) {
        self.set("name", json!(name));
    }

    pub fn set_prompt(&mut self, prompt: &str) {
        self.set("prompt", json!(prompt));
    }

    pub fn set_deliver(&mut self, deliver: &str) {
        self.set("deliver", json!(deliver));
    }

    /// `provider_snapshot` and `model_snapshot`: what the job's unpinned axes resolved to
    /// when it was created or its inference fields last changed (null = none).
    pub fn set_inference_snapshots(&mut self, provider: Option<&str>, model: Option<&str>) {
        self.set("provider_snapshot", json!(provider));
        self.set("model_snapshot", json!(model));
    }

    /// The model pin: both `model` and `provider` (null: follow the configuration).
    pub fn set_pin(&mut self, provider: Option<&str>, model: Option<&str>) {
        self.set_optional_text("provider", provider);
        self.set_optional_text("model", model);
    }

    /// `monitor_state` (null: no baseline yet).
    pub fn set_monitor_state(&mut self, state: Option<&MonitorState>) {
        self.set(
            "monitor_state",
            state.map_or(Value::Null, MonitorState::to_json),
        );
    }

    /// Sets the pre-run check's alert marker, or removes it (as Hermes 0.22 does) once
    /// a run passes the check.
    pub fn set_preflight_alerted(&mut self, alerted: bool) {
        if alerted {
            self.set("preflight_alerted", json!(true));
        } else {
            self.record.remove("preflight_alerted");
        }
    }

    /// Plans unreachable-model re-run number `attempt` at `at`, which becomes the job's
    /// `next_run_at`; the record says it was planned under the current schedule.
    pub fn plan_unreachable_retry(&mut self, attempt: u32, at: DateTime<Utc>, zone: Tz) {
        let retry = UnreachableRetry {
            attempt,
            at: format_instant(at, zone),
            expr: self.cron_expr().map(str::to_string),
        };
        self.set_next_run_at(Some(at), zone);
        self.set("unreachable_retry", retry.to_json());
    }

    /// Ends a cycle of unreachable-model re-runs (the key is removed, as Hermes 0.22 does).
    pub fn end_unreachable_retry(&mut self) {
        self.record.remove("unreachable_retry");
    }

    /// Holds the job's fires until `until` (also its `next_run_at`), with the cron
    /// expression of a recovery fire planned off the schedule's own instants; `None`
    /// lifts the hold (both keys removed, as Hermes 0.22 does).
    pub fn set_quota_hold(&mut self, hold: Option<(DateTime<Utc>, Option<&str>)>, zone: Tz) {
        match hold {
            Some((until, recovery_expr)) => {
                self.set_next_run_at(Some(until), zone);
                self.set_instant("quota_hold_until", Some(until), zone);
                match recovery_expr {
                    Some(expr) => self.set("quota_hold_cron_expr", json!(expr)),
                    None => {
                        self.record.remove("quota_hold_cron_expr");
                    }
                }
            }
            None => {
                self.record.remove("quota_hold_until");
                self.record.remove("quota_hold_cron_expr");
            }
        }
    }

    /// `last_failure` (null: never failed).
    pub fn set_last_failure(&mut self, failure: Option<&LastFailure>) {
        self.set(
            "last_failure",
            failure.map_or(Value::Null, LastFailure::to_json),
        );
    }

    /// `reasoning_effort` (null: follow the configuration).
    pub fn set_reasoning_effort(&mut self, effort: Option<ReasoningEffort>) {
        self.set_optional_text("reasoning_effort", effort.map(ReasoningEffort::as_str));
    }

    /// Turns continuity on (`"self"` added to `context_from`) or off (every `"self"`
    /// removed; other references kept), as Hermes 0.22 does: the list is stored
    /// cleaned, and null once empty.
    pub fn set_continuity(&mut self, on: bool) {
        let mut refs = self.context_from();
        let has_self = refs.iter().any(|r| r.eq_ignore_ascii_case("self"));
        if on && !has_self {
            refs.push("self".to_string());
        } else if !on {
            refs.retain(|r| !r.eq_ignore_ascii_case("self"));
        }
        self.set_context_from(refs);
    }

    /// `context_from` as given (ids and `"self"`), null once empty.
    pub fn set_context_from(&mut self, refs: Vec<String>) {
        let value = if refs.is_empty() {
            Value::Null
        } else {
            json!(refs)
        };
        self.set("context_from", value);
    }

    /// `enabled_toolsets`: `None` (null) allows every tool, an empty list none.
    pub fn set_enabled_toolsets(&mut self, names: Option<Vec<String>>) {
        self.set("enabled_toolsets", json!(names));
    }

    pub fn set_no_agent(&mut self, no_agent: bool) {
        self.set("no_agent", json!(no_agent));
    }

    /// `skills` and its legacy mirror `skill` (= the first), kept aligned.
    pub fn set_skills(&mut self, skills: &[String]) {
        self.set("skill", json!(skills.first()));
        self.set("skills", json!(skills));
    }

    /// An optional text field (`None` stores null).
    pub fn set_text(&mut self, field: TextField, value: Option<&str>) {
        self.set_optional_text(field.key(), value);
    }
}
