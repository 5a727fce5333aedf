//! The schedule grammar (docs/SCHEDULES.md, "Schedule grammar"), the stored JSON form, next run (docs/SCHEDULES.md, "Next run") and grace (docs/SCHEDULES.md, "Missed runs and catch-up").

use chrono::{DateTime, Duration, FixedOffset, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use crate::cron::{looks_like_cron, CronExpr};
use crate::duration::parse_duration_minutes;
use crate::instant::{parse_stored_instant, parse_user_timestamp};
use crate::phrase::{self, phrase_to_cron};
use crate::ScheduleError;

/// How late a one-shot may still fire; later than this it is recorded as missed.
pub const ONE_SHOT_GRACE: Duration = Duration::seconds(120);

/// A parsed schedule, as jobs.json stores it under `schedule`.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Fires once at `run_at` (kept with the offset it was given).
    Once {
        run_at: DateTime<FixedOffset>,
        display: String,
    },
    /// Fires every `minutes` of elapsed time.
    Interval { minutes: u64, display: String },
    /// Fires at the wall-clock matches of a cron expression in the job's zone.
    Cron { expr: CronExpr, display: String },
}

impl Schedule {
    pub fn display(&self) -> &str {
        match self {
            Schedule::Once { display, .. }
            | Schedule::Interval { display, .. }
            | Schedule::Cron { display, .. } => display,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Schedule::Once { .. } => "once",
            Schedule::Interval { .. } => "interval",
            Schedule::Cron { .. } => "cron",
        }
    }

    pub fn is_recurring(&self) -> bool {
        !matches!(self, Schedule::Once { .. })
    }

    /// The stored form: `{"kind","minutes"|"expr"|"run_at","display"}`.
    pub fn to_json(&self) -> Value {
        match self {
            Schedule::Once { run_at, display } => json!({
                "kind": "once",
                "run_at": run_at.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                "display": display,
            }),
            Schedule::Interval { minutes, display } => json!({
                "kind": "interval",
                "minutes": minutes,
                "display": display,
            }),
            Schedule::Cron { expr, display } => json!({
                "kind": "cron",
                "expr": expr.as_str(),
                "display": display,
            }),
        }
    }

    /// Reads a stored `schedule` value written by any Hermes version: the object form,
    /// a bare schedule string, a missing `display`, or the legacy `value` key. Relative
    /// forms in a bare string ("30m") are taken from `now`. A `run_at` without offset is
    /// a legacy naive timestamp, read in `legacy_zone` (the system's zone).
    pub fn from_json(
        value: &Value,
        now: DateTime<Utc>,
        zone: Tz,
        legacy_zone: Tz,
    ) -> Result<Schedule, ScheduleError> {
        let bad = |reason: String| ScheduleError::BadStored { reason };
        let object = match value {
            Value::String(text) => return parse_schedule(text, now, zone, None),
            Value::Object(object) => object,
            other => {
                return Err(bad(format!(
                    "schedule must be an object or a string, found {other}"
                )))
            }
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::trim);
        let display = text("display")
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        match text("kind") {
            Some("once") => {
                if let Some(run_at) = text("run_at") {
                    let instant = parse_stored_instant(run_at, legacy_zone)
                        .ok_or_else(|| bad(format!("run_at '{run_at}' is not a timestamp")))?;
                    let run_at = parse_user_timestamp(run_at, legacy_zone)
                        .unwrap_or_else(|_| instant.with_timezone(&legacy_zone).fixed_offset());
                    let display = display.unwrap_or_else(|| once_display(&run_at));
                    return Ok(Schedule::Once { run_at, display });
                }
            }
            Some("interval") => {
                let minutes = match object.get("minutes") {
                    Some(Value::Number(n)) => n.as_u64().filter(|m| *m > 0),
                    Some(Value::String(s)) => s.trim().parse::<u64>().ok().filter(|m| *m > 0),
                    _ => None,
                };
                if let Some(minutes) = minutes {
                    let display = display.unwrap_or_else(|| format!("every {minutes}m"));
                    return Ok(Schedule::Interval { minutes, display });
                }
            }
            Some("cron") => {
                if let Some(source) = text("expr") {
                    let expr = CronExpr::parse(source)?;
                    let display = display.unwrap_or_else(|| source.to_string());
                    return Ok(Schedule::Cron { expr, display });
                }
            }
            _ => {}
        }
        match text("value").or(display.as_deref()) {
            Some(legacy) => parse_schedule(legacy, now, zone, None),
            None => Err(bad(format!("unrecognised schedule object {value}"))),
        }
    }

    /// The next fire instant (docs/SCHEDULES.md, "Next run"), or `None` when the job has nothing left to run.
    ///
    /// * once: `run_at`, if the job never ran and `run_at ≥ now − 120 s`;
    /// * interval: `last_run_at` (else now) + minutes — elapsed time, not wall clock;
    /// * cron: the first match strictly after `last_run_at`-or-now in `zone`, whichever
    ///   is later, so a job never schedules itself in the past.
    pub fn next_run(
        &self,
        now: DateTime<Utc>,
        last_run_at: Option<DateTime<Utc>>,
        zone: Tz,
    ) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Once { run_at, .. } => {
                let run_at = run_at.with_timezone(&Utc);
                (last_run_at.is_none() && run_at >= now - ONE_SHOT_GRACE).then_some(run_at)
            }
            Schedule::Interval { minutes, .. } => {
                let base = last_run_at.unwrap_or(now);
                base.checked_add_signed(Duration::minutes(i64::try_from(*minutes).ok()?))
            }
            Schedule::Cron { expr, .. } => {
                let base = last_run_at.map_or(now, |last| last.max(now));
                expr.next_after(base, zone)
            }
        }
    }

    /// The job's period around `at`: the interval, or the gap between the next two cron
    /// fires. One-shots have none.
    pub fn period(&self, at: DateTime<Utc>, zone: Tz) -> Option<Duration> {
        match self {
            Schedule::Once { .. } => None,
            Schedule::Interval { minutes, .. } => {
                Some(Duration::minutes(i64::try_from(*minutes).ok()?))
            }
            Schedule::Cron { expr, .. } => expr.period_after(at, zone),
        }
    }
}

/// How late a recurring fire may be and still count as on time: half the period,
/// clamped to [120 s, 2 h] (docs/SCHEDULES.md, "Missed runs and catch-up").
pub fn grace_period(period: Duration) -> Duration {
    (period / 2).clamp(Duration::seconds(120), Duration::hours(2))
}

fn once_display(run_at: &DateTime<FixedOffset>) -> String {
    format!("once at {}", run_at.format("%Y-%m-%d %H:%M"))
}

/// A one-shot `minutes` from now, displayed as `once in <dur>`.
fn once_in(minutes: u64, duration_text: &str, now: DateTime<Utc>, zone: Tz) -> Option<Schedule> {
    let run_at = now.checked_add_signed(Duration::minutes(i64::try_from(minutes).ok()?))?;
    Some(Schedule::Once {
        run_at: run_at.with_timezone(&zone).fixed_offset(),
        display: format!("once in {}", duration_text.trim()),
    })
}

fn looks_like_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let date_prefix = bytes.len() >= 10
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[5..7].iter().all(u8::is_ascii_digit)
        && bytes[7] == b'-'
        && bytes[8..10].iter().all(u8::is_ascii_digit);
    date_prefix || (text.contains('T') && text.starts_with(|c: char| c.is_ascii_digit()))
}

/// Parses a schedule string (docs/SCHEDULES.md, "Schedule grammar") at `now` in `zone`.
///
/// `repeat` is the caller's `--repeat`: a bare duration with `repeat > 1` becomes an
/// interval (three runs 30 minutes apart for `30m --repeat 3`), because a one-shot that
/// must run three times is a contradiction the user did not mean.
pub fn parse_schedule(
    input: &str,
    now: DateTime<Utc>,
    zone: Tz,
    repeat: Option<i64>,
) -> Result<Schedule, ScheduleError> {
    let trimmed = input.trim();
    let lower = trimmed.to_ascii_lowercase();
    let unrecognized = || ScheduleError::Unrecognized {
        input: trimmed.to_string(),
    };
    if trimmed.is_empty() {
        return Err(unrecognized());
    }
    // 1. Natural day/time phrase.
    if let Some(expr) = phrase_to_cron(&lower) {
        let expr = CronExpr::parse(&expr)?;
        return Ok(Schedule::Cron {
            expr,
            display: trimmed.to_string(),
        });
    }
    // 2. every <duration>
    if let Some(rest) = lower.strip_prefix("every ") {
        // A bare unit is a duration first: `every day` is every 1,440 minutes, as Hermes
        // 0.22 reads it; only what is not a duration (`every monday`) asks for a time.
        let minutes = match parse_duration_minutes(rest) {
            Some(minutes) => minutes,
            None if phrase::names_days_only(rest) => {
                return Err(ScheduleError::DaysWithoutTime {
                    schedule: trimmed.to_string(),
                })
            }
            None => {
                return Err(ScheduleError::BadDuration {
                    input: rest.trim().to_string(),
                    schedule: trimmed.to_string(),
                })
            }
        };
        return Ok(Schedule::Interval {
            minutes,
            display: format!("every {minutes}m"),
        });
    }
    // 3. Cron: five fields, or an @macro.
    let fields: Vec<&str> = trimmed.split_whitespace().collect();
    if trimmed.starts_with('@')
        || (fields.len() >= 5 && fields.len() <= 7 && looks_like_cron(&fields))
    {
        let expr = CronExpr::parse(trimmed)?;
        if expr.next_after(now, zone).is_none() {
            return Err(ScheduleError::BadCron {
                input: trimmed.to_string(),
                reason: "it never fires (no date matches it)".into(),
            });
        }
        return Ok(Schedule::Cron {
            expr,
            display: trimmed.to_string(),
        });
    }
    // 4. ISO-8601 timestamp.
    if looks_like_timestamp(trimmed) {
        let run_at = parse_user_timestamp(trimmed, zone)?;
        return Ok(Schedule::Once {
            display: once_display(&run_at),
            run_at,
        });
    }
    // 5. in <duration>
    if let Some(rest) = lower.strip_prefix("in ") {
        let minutes = parse_duration_minutes(rest).ok_or_else(|| ScheduleError::BadDuration {
            input: rest.trim().to_string(),
            schedule: trimmed.to_string(),
        })?;
        return once_in(minutes, rest, now, zone).ok_or_else(unrecognized);
    }
    // 6. Bare duration: once, or an interval when it must run more than once.
    if let Some(minutes) = parse_duration_minutes(&lower) {
        if repeat.is_some_and(|times| times > 1) {
            return Ok(Schedule::Interval {
                minutes,
                display: format!("every {minutes}m"),
            });
        }
        return once_in(minutes, &lower, now, zone).ok_or_else(unrecognized);
    }
    Err(unrecognized())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::America::New_York;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn stored(input: &str) -> Value {
        parse_schedule(input, now(), New_York, None)
            .unwrap_or_else(|e| panic!("{input}: {e}"))
            .to_json()
    }

    #[test]
    fn every_documented_example_has_its_stored_form() {
        assert_eq!(
            stored("every 2h"),
            json!({"kind":"interval","minutes":120,"display":"every 120m"})
        );
        assert_eq!(
            stored("every hour"),
            json!({"kind":"interval","minutes":60,"display":"every 60m"})
        );
        assert_eq!(
            stored("Every 1 Day"),
            json!({"kind":"interval","minutes":1440,"display":"every 1440m"})
        );
        for (input, expr) in [
            ("every monday 9am", "0 9 * * 1"),
            ("weekdays at 9am", "0 9 * * 1-5"),
            ("Monday, Wednesday at 9am", "0 9 * * 1,3"),
            ("every weekend at 10am", "0 10 * * 0,6"),
        ] {
            assert_eq!(
                stored(input),
                json!({"kind":"cron","expr":expr,"display":input})
            );
        }
        for input in [
            "0 9 * * *",
            "*/15 * * * *",
            "0 9 * * MON-FRI",
            "0/15 * * * *",
            "0 0 1,15 * *",
        ] {
            assert_eq!(
                stored(input),
                json!({"kind":"cron","expr":input,"display":input})
            );
        }
        assert_eq!(
            stored("@daily"),
            json!({"kind":"cron","expr":"0 0 * * *","display":"@daily"})
        );
        assert_eq!(
            stored("2026-12-03T14:00"),
            json!({"kind":"once","run_at":"2026-12-03T14:00:00-05:00","display":"once at 2026-12-03 14:00"})
        );
        assert_eq!(
            stored("2026-12-03T14:00:00Z"),
            json!({"kind":"once","run_at":"2026-12-03T14:00:00+00:00","display":"once at 2026-12-03 14:00"})
        );
        assert_eq!(
            stored("2026-12-03 14:00+05:30"),
            json!({"kind":"once","run_at":"2026-12-03T14:00:00+05:30","display":"once at 2026-12-03 14:00"})
        );
        assert_eq!(
            stored("in 30m"),
            json!({"kind":"once","run_at":"2026-11-22T07:30:00-05:00","display":"once in 30m"})
        );
        assert_eq!(
            stored("30m"),
            json!({"kind":"once","run_at":"2026-11-22T07:30:00-05:00","display":"once in 30m"})
        );
        assert_eq!(
            stored("2h"),
            json!({"kind":"once","run_at":"2026-11-22T09:00:00-05:00","display":"once in 2h"})
        );
    }

    #[test]
    fn a_bare_duration_that_repeats_is_an_interval() {
        let s = parse_schedule("30m", now(), New_York, Some(3)).unwrap();
        assert_eq!(
            s.to_json(),
            json!({"kind":"interval","minutes":30,"display":"every 30m"})
        );
        let once = parse_schedule("30m", now(), New_York, Some(1)).unwrap();
        assert_eq!(once.kind(), "once");
    }

    #[test]
    fn invalid_forms_list_the_accepted_ones() {
        for input in ["x", "", "tomorrow", "run it now please", "in soon"] {
            let err = parse_schedule(input, now(), New_York, None)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("Use: '30m'") || err.contains("Invalid duration"),
                "{input}: {err}"
            );
        }
        let err = parse_schedule("x", now(), New_York, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Invalid schedule 'x'. Use: '30m' or 'in 30m' (once), 'every 2h' (recurring), \
'every monday 9am' / 'weekdays at 9am', '0 9 * * *' (cron), '2026-02-03T14:00' (once at)"
        );
        let err = parse_schedule("every 1.5h", now(), New_York, None).unwrap_err();
        assert!(matches!(err, ScheduleError::BadDuration { .. }), "{err}");
        let err = parse_schedule("0 9 * * * *", now(), New_York, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("seconds and year fields are not supported"),
            "{err}"
        );
        let err = parse_schedule("0 0 30 2 *", now(), New_York, None).unwrap_err();
        assert!(err.to_string().contains("never fires"), "{err}");
        let err = parse_schedule("2026-02-30T10:00", now(), New_York, None).unwrap_err();
        assert!(matches!(err, ScheduleError::BadTimestamp { .. }), "{err}");
    }

    #[test]
    fn reads_legacy_stored_forms() {
        let s = Schedule::from_json(&json!("every 2h"), now(), New_York, New_York).unwrap();
        assert_eq!(s.to_json()["minutes"], 120);
        let s = Schedule::from_json(
            &json!({"kind":"interval","minutes":"45"}),
            now(),
            New_York,
            New_York,
        )
        .unwrap();
        assert_eq!(s.display(), "every 45m");
        let s = Schedule::from_json(
            &json!({"kind":"cron","expr":"0 9 * * *"}),
            now(),
            New_York,
            New_York,
        )
        .unwrap();
        assert_eq!(s.display(), "0 9 * * *");
        let s = Schedule::from_json(
            &json!({"kind":"cron","value":"0 9 * * *"}),
            now(),
            New_York,
            New_York,
        )
        .unwrap();
        assert_eq!(s.to_json()["expr"], "0 9 * * *");
        let s =
            Schedule::from_json(&json!({"value":"every 5m"}), now(), New_York, New_York).unwrap();
        assert_eq!(s.to_json()["minutes"], 5);
        let s = Schedule::from_json(
            &json!({"kind":"once","run_at":"2026-12-01T09:00:00"}),
            now(),
            chrono_tz::UTC,
            New_York,
        )
        .unwrap();
        assert_eq!(s.to_json()["run_at"], "2026-12-01T09:00:00-05:00");
        assert_eq!(s.display(), "once at 2026-12-01 09:00");
        assert!(Schedule::from_json(&json!(42), now(), New_York, New_York).is_err());
        assert!(Schedule::from_json(&json!({"kind":"weekly"}), now(), New_York, New_York).is_err());
    }

    #[test]
    fn next_run_follows_the_documented_rules() {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let interval = parse_schedule("every 2h", now(), New_York, None).unwrap();
        assert_eq!(
            interval.next_run(now(), None, New_York),
            Some(t("2026-11-22T14:00:00Z"))
        );
        assert_eq!(
            interval.next_run(now(), Some(t("2026-11-22T11:30:00Z")), New_York),
            Some(t("2026-11-22T13:30:00Z"))
        );
        let once = parse_schedule("2026-11-22T06:59", now(), New_York, None).unwrap();
        // 60 s late: still due; after it ran: nothing.
        assert_eq!(
            once.next_run(now(), None, New_York),
            Some(t("2026-11-22T11:59:00Z"))
        );
        assert_eq!(once.next_run(now(), Some(now()), New_York), None);
        let stale = parse_schedule("2026-11-22T06:57", now(), New_York, None).unwrap();
        assert_eq!(stale.next_run(now(), None, New_York), None);
        let cron = parse_schedule("0 9 * * *", now(), New_York, None).unwrap();
        assert_eq!(
            cron.next_run(now(), None, New_York),
            Some(t("2026-11-22T14:00:00Z"))
        );
    }

    #[test]
    fn grace_is_half_the_period_clamped() {
        assert_eq!(grace_period(Duration::minutes(1)), Duration::seconds(120));
        assert_eq!(grace_period(Duration::minutes(30)), Duration::minutes(15));
        assert_eq!(grace_period(Duration::days(1)), Duration::hours(2));
        let cron = parse_schedule("*/10 * * * *", now(), New_York, None).unwrap();
        assert_eq!(cron.period(now(), New_York), Some(Duration::minutes(10)));
    }
}
#[test]
fn a_day_without_a_time_asks_for_a_time() {
    let now = Utc::now();
    for input in ["every monday", "every weekday", "every mon,wed"] {
        let err = parse_schedule(input, now, Tz::UTC, None).unwrap_err();
        assert_eq!(
            err,
            ScheduleError::DaysWithoutTime {
                schedule: input.to_string()
            }
        );
        assert!(err.to_string().contains(&format!("'{input} 9am'")), "{err}");
    }
    assert!(matches!(
        parse_schedule("every fortnight", now, Tz::UTC, None),
        Err(ScheduleError::BadDuration { .. })
    ));
}

#[test]
fn every_day_is_a_bare_unit_of_1440_minutes() {
    let now = Utc::now();
    for (input, minutes) in [
        ("every day", 1440),
        ("every 1 day", 1440),
        ("every 2 days", 2880),
    ] {
        assert_eq!(
            parse_schedule(input, now, Tz::UTC, None),
            Ok(Schedule::Interval {
                minutes,
                display: format!("every {minutes}m"),
            }),
            "{input}"
        );
    }
}
