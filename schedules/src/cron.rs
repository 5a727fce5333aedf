//! Five-field cron expressions and their next fire instant in a zone, DST-correct the
//! way Vixie/ISC cron is.
//!
//! croner finds matching wall-clock readings; this module alone decides which instants
//! those readings become when a DST change skips or repeats them. It never reads a clock.

use std::fmt;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use crate::instant::gap_end;
use crate::ScheduleError;

/// How a DST change treats a job — Vixie cron's rule, made explicit.
///
/// * `FixedTime` (neither the minute nor the hour field is `*…` or a step): the job
///   names particular times of day. A time inside the skipped spring hour runs once,
///   right after the gap; a time inside the repeated autumn hour runs once, in its
///   first pass.
/// * `Elapsed` (`*/15 * * * *`, `0 */2 * * *`, `0/15 …`): the job fires every so many
///   minutes or hours, so it follows elapsed time — it fires through both passes of a
///   repeated hour and simply has no fires inside a skipped one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DstRule {
    FixedTime,
    Elapsed,
}

/// A validated five-field cron expression.
#[derive(Clone)]
pub struct CronExpr {
    source: String,
    // Boxed: croner's pattern is large and schedules are moved around by value.
    cron: Box<Cron>,
    rule: DstRule,
}

impl fmt::Debug for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronExpr")
            .field("source", &self.source)
            .field("rule", &self.rule)
            .finish()
    }
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// The stored 5-field expression for each `@` macro.
fn macro_expr(name: &str) -> Option<&'static str> {
    match name {
        "@hourly" => Some("0 * * * *"),
        "@daily" | "@midnight" => Some("0 0 * * *"),
        "@weekly" => Some("0 0 * * 0"),
        "@monthly" => Some("0 0 1 * *"),
        "@yearly" | "@annually" => Some("0 0 1 1 *"),
        _ => None,
    }
}

/// True when `text` looks like a cron field list (so a cron error, not a generic one,
/// is the helpful answer): fields of digits, letters and `* , - /`, the first a minute.
pub(crate) fn looks_like_cron(fields: &[&str]) -> bool {
    let charset = |f: &str| {
        f.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"*,-/".contains(&b))
    };
    fields.iter().all(|f| charset(f))
        && fields
            .first()
            .is_some_and(|f| f.starts_with(|c: char| c.is_ascii_digit() || c == '*'))
}

/// One of the five fields: its name and the numbers it may hold.
struct FieldSpec {
    name: &'static str,
    low: u32,
    high: u32,
}

/// The five fields in order. Day-of-week allows 7 as well as 0 for Sunday.
const FIELDS: [FieldSpec; 5] = [
    FieldSpec {
        name: "minute",
        low: 0,
        high: 59,
    },
    FieldSpec {
        name: "hour",
        low: 0,
        high: 23,
    },
    FieldSpec {
        name: "day-of-month",
        low: 1,
        high: 31,
    },
    FieldSpec {
        name: "month",
        low: 1,
        high: 12,
    },
    FieldSpec {
        name: "day-of-week",
        low: 0,
        high: 7,
    },
];

impl FieldSpec {
    /// Why `field` is out of this field's range, naming the field and the range, or
    /// `None` when every number in it fits (names, `L` and `W` are left to croner).
    fn check(&self, field: &str) -> Option<String> {
        let FieldSpec { name, low, high } = *self;
        for item in field.split(',') {
            let (range, step) = match item.split_once('/') {
                Some((range, step)) => (range, Some(step)),
                None => (item, None),
            };
            if let Some(step) = step.and_then(|s| s.parse::<u32>().ok()) {
                if step == 0 {
                    return Some(format!(
                        "the {name} field has a step of 0 in '{item}'; a step is 1 or more"
                    ));
                }
            }
            for value in range.split('-') {
                let Ok(number) = value.parse::<u32>() else {
                    continue;
                };
                if number < low || number > high {
                    return Some(format!(
                        "the {name} field allows {low}-{high}, not {number}"
                    ));
                }
            }
        }
        None
    }
}

/// Does this day-of-week field match every day of the week?
fn every_weekday(parser: &CronParser, field: &str) -> bool {
    if field == "*" {
        return true;
    }
    let Ok(days) = parser.parse(&format!("0 0 * * {field}")) else {
        return false;
    };
    // 2026-01-04 is a Sunday: seven consecutive days cover the week.
    (4..=10).all(|day| {
        chrono::NaiveDate::from_ymd_opt(2026, 1, day)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .is_some_and(|t| days.is_time_matching(&t).unwrap_or(false))
    })
}

impl CronExpr {
    /// Parses a 5-field expression or an `@` macro (stored as its 5-field equivalent).
    pub fn parse(input: &str) -> Result<CronExpr, ScheduleError> {
        let trimmed = input.trim();
        let bad = |reason: String| ScheduleError::BadCron {
            input: trimmed.to_string(),
            reason,
        };
        let source = match trimmed.strip_prefix('@') {
            Some(_) => macro_expr(&trimmed.to_ascii_lowercase())
                .ok_or_else(|| {
                    bad("unknown macro; use @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually".into())
                })?
                .to_string(),
            None => trimmed.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        let fields: Vec<&str> = source.split(' ').collect();
        match fields.len() {
            5 => {}
            6 | 7 => {
                return Err(bad(format!(
                    "it has {} fields; seconds and year fields are not supported",
                    fields.len()
                )))
            }
            n => return Err(bad(format!("it has {n} fields"))),
        }
        // An empty list item (`9,` or `1,,5`) names nothing; croner would search its whole
        // calendar for a match that cannot come.
        if fields.iter().any(|f| f.split(',').any(str::is_empty)) {
            return Err(bad("a field has an empty list item (a stray comma)".into()));
        }
        if !looks_like_cron(&fields) {
            return Err(bad(
                "fields may only hold digits, month/weekday names and * , - /".into(),
            ));
        }
        if let Some(reason) = fields
            .iter()
            .zip(FIELDS)
            .find_map(|(f, spec)| spec.check(f))
        {
            return Err(bad(reason));
        }
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .sloppy_ranges(true)
            .build();
        let cron = parser.parse(&source).map_err(|e| bad(e.to_string()))?;
        // A day-of-week that names all seven days restricts nothing. Next to a stepped
        // day-of-month (`*/4 * 1-7`) croniter and Vixie then match the day-of-month alone,
        // where croner would OR the two fields and fire every day.
        let cron =
            if fields[2] != "*" && fields[2].contains('*') && every_weekday(&parser, fields[4]) {
                let relaxed = format!("{} {} {} {} *", fields[0], fields[1], fields[2], fields[3]);
                parser.parse(&relaxed).map_err(|e| bad(e.to_string()))?
            } else {
                cron
            };
        let names_a_time = |field: &str| !field.starts_with('*') && !field.contains('/');
        let rule = if names_a_time(fields[0]) && names_a_time(fields[1]) {
            DstRule::FixedTime
        } else {
            DstRule::Elapsed
        };
        Ok(CronExpr {
            source,
            cron: Box::new(cron),
            rule,
        })
    }

    /// The expression as stored in jobs.json.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    pub fn dst_rule(&self) -> DstRule {
        self.rule
    }

    /// croner's parse, which the scheduler fires by (and descriptions are written from).
    pub(crate) fn pattern(&self) -> &croner::CronPattern {
        &self.cron.pattern
    }

    /// The instants a matching wall-clock reading fires at, per [`DstRule`].
    fn fire_instants(&self, wall: NaiveDateTime, zone: Tz) -> [Option<DateTime<Utc>>; 2] {
        let utc = |t: DateTime<Tz>| t.with_timezone(&Utc);
        match (zone.from_local_datetime(&wall), self.rule) {
            (LocalResult::Single(t), _) => [Some(utc(t)), None],
            (LocalResult::Ambiguous(first, _), DstRule::FixedTime) => [Some(utc(first)), None],
            (LocalResult::Ambiguous(first, second), DstRule::Elapsed) => {
                [Some(utc(first)), Some(utc(second))]
            }
            (LocalResult::None, DstRule::FixedTime) => [gap_end(wall, zone), None],
            (LocalResult::None, DstRule::Elapsed) => [None, None],
        }
    }

    /// The first fire instant strictly after `after`, in `zone`. `None` when the
    /// expression never matches again (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        let offset_at = |t: DateTime<Utc>| {
            let local = t.with_timezone(&zone);
            local.naive_local() - t.naive_utc()
        };
        // Naive order and instant order disagree only around a repeated hour. Starting
        // the wall-clock scan at `after` read with the smallest offset in force soon after
        // it catches a second-pass reading that is "earlier" on the clock but later in time.
        let window = Duration::hours(3);
        let min_offset = offset_at(after).min(offset_at(after + window));
        let start = (after.naive_utc() + min_offset).with_nanosecond(0)?;
        let mut cursor = start;
        let mut inclusive = false;
        let mut best: Option<(DateTime<Utc>, NaiveDateTime)> = None;
        for _ in 0..10_000 {
            let wall = self.cron.find_next_occurrence(&cursor, inclusive).ok()?;
            inclusive = false;
            if best.is_some_and(|(_, stop)| wall >= stop) {
                break;
            }
            for instant in self.fire_instants(wall, zone).into_iter().flatten() {
                if instant > after && best.is_none_or(|(b, _)| instant < b) {
                    // A later reading can still be an earlier instant only if it maps
                    // through a larger offset, i.e. one in force shortly before `instant`.
                    let off_b = offset_at(instant);
                    let max_offset = offset_at(instant - window).max(off_b).max(offset_at(after));
                    let wall_b = instant.naive_utc() + off_b;
                    best = Some((instant, wall_b + (max_offset - off_b)));
                }
            }
            // Far from any DST change the stop point is this very reading: done.
            if best.is_some_and(|(_, stop)| stop <= wall) {
                break;
            }
            cursor = wall;
        }
        best.map(|(instant, _)| instant)
    }

    /// The gap between the two fires that follow `after` — the job's period for grace.
    pub fn period_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<Duration> {
        let first = self.next_after(after, zone)?;
        let second = self.next_after(first, zone)?;
        Some(second - first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;
    use chrono_tz::{
        America::New_York, Asia::Kolkata, Australia::Lord_Howe, Europe::Berlin, Pacific::Chatham,
    };

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// The next `n` fires after `from`, each written in the zone's offset.
    fn fires(expr: &str, zone: Tz, from: &str, n: usize) -> Vec<String> {
        let cron = CronExpr::parse(expr).unwrap();
        let mut t = at(from);
        let mut out = Vec::new();
        for _ in 0..n {
            t = cron.next_after(t, zone).unwrap();
            out.push(crate::format_instant(t, zone));
        }
        out
    }

    #[test]
    fn out_of_range_values_name_their_field_and_range() {
        let reason = |input: &str| match CronExpr::parse(input) {
            Err(ScheduleError::BadCron { reason, .. }) => reason,
            other => panic!("{input}: {other:?}"),
        };
        assert_eq!(reason("0 25 * * *"), "the hour field allows 0-23, not 25");
        assert_eq!(reason("61 * * * *"), "the minute field allows 0-59, not 61");
        assert_eq!(
            reason("0 0 32 * *"),
            "the day-of-month field allows 1-31, not 32"
        );
        assert_eq!(
            reason("0 0 0 * *"),
            "the day-of-month field allows 1-31, not 0"
        );
        assert_eq!(reason("0 0 * 13 *"), "the month field allows 1-12, not 13");
        assert_eq!(
            reason("0 0 * * 1-8"),
            "the day-of-week field allows 0-7, not 8"
        );
        assert_eq!(
            reason("5-70/5 * * * *"),
            "the minute field allows 0-59, not 70"
        );
        assert_eq!(
            reason("*/0 * * * *"),
            "the minute field has a step of 0 in '*/0'; a step is 1 or more"
        );
        for fine in [
            "0 23 31 12 7",
            "*/59 0-23 1,15 jan-dec mon-fri",
            "0 9 L * *",
        ] {
            assert!(CronExpr::parse(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn fixed_time_in_the_spring_gap_runs_once_right_after_it() {
        assert_eq!(
            fires("30 2 * * *", New_York, "2026-03-07T12:00:00-05:00", 2),
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]
        );
        assert_eq!(
            fires("30 2 * * *", Berlin, "2026-03-28T12:00:00+01:00", 2),
            ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
        );
        // Lord Howe moves its clocks by 30 minutes: 02:00 → 02:30.
        assert_eq!(
            fires("15 2 * * *", Lord_Howe, "2026-10-03T12:00:00+10:30", 2),
            ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"]
        );
    }

    #[test]
    fn fixed_time_in_the_repeated_autumn_hour_runs_once() {
        assert_eq!(
            fires("30 1 * * *", New_York, "2026-10-31T12:00:00-04:00", 2),
            ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
        );
        assert_eq!(
            fires("30 2 * * *", Berlin, "2026-10-24T12:00:00+02:00", 2),
            ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
        );
        // Starting inside the first pass must not fire again in the second.
        assert_eq!(
            fires("30 1 * * *", New_York, "2026-11-01T01:45:00-04:00", 1),
            ["2026-11-02T01:30:00-05:00"]
        );
        // Lord Howe repeats 01:30–02:00.
        assert_eq!(
            fires("45 1 * * *", Lord_Howe, "2026-04-04T12:00:00+11:00", 2),
            ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"]
        );
    }

    #[test]
    fn stepped_jobs_follow_elapsed_time_through_both_passes() {
        assert_eq!(
            fires("*/30 * * * *", New_York, "2026-11-01T00:45:00-04:00", 6),
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:30:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T01:30:00-05:00",
                "2026-11-01T02:00:00-05:00",
                "2026-11-01T02:30:00-05:00",
            ]
        );
        // From the end of the first pass, the next fire is the start of the second.
        assert_eq!(
            fires("*/30 * * * *", New_York, "2026-11-01T01:59:00-04:00", 1),
            ["2026-11-01T01:00:00-05:00"]
        );
        // Spring: no fires inside the gap, none doubled after it.
        assert_eq!(
            fires("*/30 * * * *", New_York, "2026-03-08T01:00:00-05:00", 3),
            [
                "2026-03-08T01:30:00-05:00",
                "2026-03-08T03:00:00-04:00",
                "2026-03-08T03:30:00-04:00",
            ]
        );
        assert_eq!(
            fires("*/30 * * * *", Lord_Howe, "2026-04-05T01:00:00+11:00", 4),
            [
                "2026-04-05T01:30:00+11:00",
                "2026-04-05T01:30:00+10:30",
                "2026-04-05T02:00:00+10:30",
                "2026-04-05T02:30:00+10:30",
            ]
        );
        assert_eq!(
            fires("0 */1 * * *", Berlin, "2026-10-25T01:30:00+02:00", 3),
            [
                "2026-10-25T02:00:00+02:00",
                "2026-10-25T02:00:00+01:00",
                "2026-10-25T03:00:00+01:00",
            ]
        );
    }

    #[test]
    fn zones_without_dst_and_odd_offsets() {
        assert_eq!(
            fires("0 9 * * *", Kolkata, "2026-03-08T00:00:00+05:30", 2),
            ["2026-03-08T09:00:00+05:30", "2026-03-09T09:00:00+05:30"]
        );
        // Chatham: +12:45 in winter, +13:45 in summer (change 2026-09-27 02:45 → 03:45).
        assert_eq!(
            fires("0 9 * * *", Chatham, "2026-09-26T00:00:00+12:45", 2),
            ["2026-09-26T09:00:00+12:45", "2026-09-27T09:00:00+13:45"]
        );
        assert_eq!(
            fires("0 3 * * *", Chatham, "2026-09-26T12:00:00+12:45", 2),
            ["2026-09-27T03:45:00+13:45", "2026-09-28T03:00:00+13:45"]
        );
    }

    #[test]
    fn nine_am_stays_nine_am_across_dst() {
        assert_eq!(
            fires("0 9 * * *", New_York, "2026-03-07T10:00:00-05:00", 2),
            ["2026-03-08T09:00:00-04:00", "2026-03-09T09:00:00-04:00"]
        );
    }

    #[test]
    fn february_29_and_weekday_names() {
        assert_eq!(
            fires("0 0 29 2 *", chrono_tz::UTC, "2026-03-01T00:00:00Z", 2),
            ["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]
        );
        assert_eq!(
            fires("0 9 * * MON-FRI", chrono_tz::UTC, "2026-11-20T10:00:00Z", 2),
            ["2026-11-23T09:00:00+00:00", "2026-11-24T09:00:00+00:00"]
        );
        assert_eq!(
            fires(
                "0 12 * JAN,jul sun",
                chrono_tz::UTC,
                "2026-06-30T00:00:00Z",
                1
            ),
            ["2026-07-05T12:00:00+00:00"]
        );
    }

    #[test]
    fn day_of_month_or_day_of_week() {
        // The 13th, or any Friday (Vixie/croniter OR), from Thursday 2026-11-05.
        assert_eq!(
            fires("0 0 13 * 5", chrono_tz::UTC, "2026-11-05T12:00:00Z", 3),
            [
                "2026-11-06T00:00:00+00:00",
                "2026-11-13T00:00:00+00:00",
                "2026-11-20T00:00:00+00:00",
            ]
        );
        assert_eq!(
            fires("0 0 1 * 1", chrono_tz::UTC, "2026-11-25T00:00:00Z", 3),
            [
                "2026-11-30T00:00:00+00:00",
                "2026-12-01T00:00:00+00:00",
                "2026-12-07T00:00:00+00:00",
            ]
        );
        // Restricting only one of them does not widen the match.
        assert_eq!(
            fires("0 0 * * 1", chrono_tz::UTC, "2026-11-25T00:00:00Z", 1),
            ["2026-11-30T00:00:00+00:00"]
        );
    }

    #[test]
    fn a_weekday_field_naming_every_day_leaves_a_stepped_day_of_month_alone() {
        // croniter and Vixie: only the day-of-month counts (found by the croniter diff).
        assert_eq!(
            fires(
                "25 0 */4 * 1-7",
                chrono_tz::Australia::Sydney,
                "2027-06-06T00:01:48+10:00",
                1
            ),
            ["2027-06-09T00:25:00+10:00"]
        );
        assert_eq!(
            fires("0 0 */13 * 0-7", New_York, "2025-11-02T01:04:33-04:00", 1),
            ["2025-11-14T00:00:00-05:00"]
        );
        // A real weekday restriction still ORs with the day-of-month.
        assert_eq!(
            fires("0 0 */10 * 1", chrono_tz::UTC, "2026-11-22T12:00:00Z", 1),
            ["2026-11-23T00:00:00+00:00"]
        );
    }

    #[test]
    fn sunday_is_zero_or_seven_and_slash_steps_start_anywhere() {
        let zero = fires("0 8 * * 0", chrono_tz::UTC, "2026-11-22T09:00:00Z", 2);
        assert_eq!(
            zero,
            fires("0 8 * * 7", chrono_tz::UTC, "2026-11-22T09:00:00Z", 2)
        );
        assert_eq!(zero[0], "2026-11-29T08:00:00+00:00");
        assert_eq!(
            fires("0/15 * * * *", chrono_tz::UTC, "2026-11-22T09:01:00Z", 2),
            ["2026-11-22T09:15:00+00:00", "2026-11-22T09:30:00+00:00"]
        );
        assert_eq!(
            fires("5/20 * * * *", chrono_tz::UTC, "2026-11-22T09:06:00Z", 2),
            ["2026-11-22T09:25:00+00:00", "2026-11-22T09:45:00+00:00"]
        );
    }

    #[test]
    fn macros_become_five_fields() {
        for (input, expr) in [
            ("@hourly", "0 * * * *"),
            ("@daily", "0 0 * * *"),
            ("@midnight", "0 0 * * *"),
            ("@weekly", "0 0 * * 0"),
            ("@monthly", "0 0 1 * *"),
            ("@YEARLY", "0 0 1 1 *"),
            ("@annually", "0 0 1 1 *"),
        ] {
            assert_eq!(CronExpr::parse(input).unwrap().as_str(), expr);
        }
        assert!(CronExpr::parse("@reboot").is_err());
    }

    #[test]
    fn invalid_expressions_say_why() {
        for (input, needle) in [
            ("0 0 9 * * *", "6 fields"),
            ("0 0 9 * * * 2026", "7 fields"),
            ("60 * * * *", "Invalid cron expression '60 * * * *'"),
            ("* 24 * * *", "Invalid cron expression"),
            ("* * 32 * *", "Invalid cron expression"),
            ("* * * 13 *", "Invalid cron expression"),
            ("* * * * 8", "Invalid cron expression"),
            ("*/0 * * * *", "Invalid cron expression"),
            ("* * * * ?", "fields may only hold"),
            ("5-1 * * * *", "Invalid cron expression"),
            ("0 9, * * *", "stray comma"),
            ("*/55 , * * *", "stray comma"),
            ("0 1,,5 * * *", "stray comma"),
        ] {
            let err = CronExpr::parse(input).unwrap_err().to_string();
            assert!(err.contains(needle), "{input}: {err}");
            assert!(err.contains("5 fields"), "{input}: {err}");
        }
    }

    #[test]
    fn an_expression_that_never_fires_has_no_next() {
        let cron = CronExpr::parse("0 0 30 2 *").unwrap();
        assert_eq!(
            cron.next_after(at("2026-01-01T00:00:00Z"), chrono_tz::UTC),
            None
        );
    }

    #[test]
    fn dst_rule_follows_vixie() {
        for (expr, rule) in [
            ("30 2 * * *", DstRule::FixedTime),
            ("0,30 1-3 * * *", DstRule::FixedTime),
            ("*/30 * * * *", DstRule::Elapsed),
            ("0 */2 * * *", DstRule::Elapsed),
            ("0/15 1 * * *", DstRule::Elapsed),
            ("15 * * * *", DstRule::Elapsed),
        ] {
            assert_eq!(CronExpr::parse(expr).unwrap().dst_rule(), rule, "{expr}");
        }
    }
}
