//! English descriptions of schedules for the people reading a listing: "at 09:00, Monday
//! through Friday", "every 6 hours", "once on Tue 3 Feb 2026 at 14:00 CET".
//!
//! A cron description is written from croner's parse of the expression, the one the
//! scheduler fires by, so it can never name a time the scheduler would not fire at. Pure:
//! no clock, no I/O.

use chrono::{DateTime, FixedOffset};
use chrono_tz::Tz;

use crate::cron::{looks_like_cron, CronExpr};
use crate::Schedule;

const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
/// Weekdays in the order people read a week: Monday first, so `1-5` is one run.
const WEEK_ORDER: [u16; 7] = [1, 2, 3, 4, 5, 6, 0];

impl Schedule {
    /// When this schedule fires, in English, with wall-clock times read in `zone`.
    /// `zone_named` (the job names its own zone) appends the zone's name to a wall-clock
    /// description; an interval is elapsed time and names no zone.
    pub fn describe(&self, zone: Tz, zone_named: bool) -> String {
        let text = match self {
            Schedule::Interval { minutes, .. } => return describe_interval(*minutes),
            Schedule::Cron { expr, .. } => expr.describe(),
            Schedule::Once { run_at, .. } => describe_once(run_at, zone),
        };
        named(text, zone, zone_named)
    }
}

/// `every 6 hours`, `every 90 minutes`, `every 2 hours 30 minutes`, `every day`.
pub fn describe_interval(minutes: u64) -> String {
    let every = |n: u64, unit: &str| match n {
        1 => format!("every {unit}"),
        n => format!("every {n} {unit}s"),
    };
    if minutes.is_multiple_of(24 * 60) {
        every(minutes / (24 * 60), "day")
    } else if minutes.is_multiple_of(60) {
        every(minutes / 60, "hour")
    } else if minutes < 120 {
        every(minutes, "minute")
    } else {
        format!("every {} hours {} minutes", minutes / 60, minutes % 60)
    }
}

/// The one-shot's instant as a wall-clock reading in `zone`, with the zone's abbreviation
/// so a time in a repeated autumn hour says which of the two it is.
fn describe_once(run_at: &DateTime<FixedOffset>, zone: Tz) -> String {
    let local = run_at.with_timezone(&zone);
    format!("once on {}", local.format("%a %-d %b %Y at %H:%M %Z"))
}

/// The description of a stored `schedule` value, as [`Schedule::from_json`] reads it, or
/// `None` when it cannot be read. A plain cron expression is described from its text
/// ([`describe_cron`], about 1 µs) without building croner's schedule (about 13 µs): a
/// listing of 10,000 jobs describes every one.
pub fn describe_stored(
    value: &serde_json::Value,
    now: chrono::DateTime<chrono::Utc>,
    zone: Tz,
    legacy_zone: Tz,
    zone_named: bool,
) -> Option<String> {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
    };
    if text("kind") == Some("cron") {
        if let Some(described) = text("expr").and_then(|e| describe_cron_in(e, zone, zone_named)) {
            return Some(described);
        }
    }
    let schedule = Schedule::from_json(value, now, zone, legacy_zone).ok()?;
    Some(schedule.describe(zone, zone_named))
}

/// [`describe_cron`] as a job in `zone` shows it: the zone named when the job has its own.
pub fn describe_cron_in(expr: &str, zone: Tz, zone_named: bool) -> Option<String> {
    describe_cron(expr).map(|text| named(text, zone, zone_named))
}

fn named(text: String, zone: Tz, zone_named: bool) -> String {
    if zone_named {
        format!("{text} ({})", zone.name())
    } else {
        text
    }
}

/// [`CronExpr::describe`] of a five-field expression in the plain forms (numbers and
/// names, `*`, ranges, steps, lists, the `L`/`W` items), read from its text the way
/// croner reads it; `None` for anything else (then parse it with [`CronExpr::parse`]).
pub fn describe_cron(expr: &str) -> Option<String> {
    Fields::read(expr).map(|fields| fields.describe())
}

impl CronExpr {
    /// When this expression fires, in English: `at 09:00, Monday through Friday`.
    pub fn describe(&self) -> String {
        Fields::of(self).describe()
    }
}

/// An expression's fields as value sets, and the day fields as written (for their
/// `L`/`W` items and whether they are `*`).
#[derive(Debug, PartialEq)]
struct Fields<'a> {
    source: &'a str,
    minutes: Vec<u16>,
    hours: Vec<u16>,
    /// Plain days of the month (not the `L`/`W` items).
    days: Vec<u16>,
    months: Vec<u16>,
    /// Plain weekdays, Sunday = 0 (not the `5L` items).
    weekdays: Vec<u16>,
    dom_star: bool,
    dow_star: bool,
    dom_field: &'a str,
    dow_field: &'a str,
}

impl<'a> Fields<'a> {
    /// From croner's parse, the one the scheduler fires by.
    fn of(expr: &'a CronExpr) -> Fields<'a> {
        let pattern = expr.pattern();
        let source = expr.as_str();
        let (dom_field, dow_field) = day_fields(source);
        Fields {
            source,
            minutes: pattern.minutes.values(),
            hours: pattern.hours.values(),
            days: pattern.days.values(),
            months: pattern.months.values(),
            weekdays: pattern.days_of_week.values(),
            dom_star: pattern.is_dom_wildcard(),
            dow_star: pattern.is_dow_wildcard(),
            dom_field,
            dow_field,
        }
    }

    /// From the text alone, as croner and [`CronExpr::parse`] read it (a test holds the
    /// two equal on every form); `None` for anything outside the plain forms.
    fn read(source: &'a str) -> Option<Fields<'a>> {
        let fields: Vec<&str> = source.split(' ').collect();
        if !looks_like_cron(&fields) {
            return None;
        }
        let [minute, hour, dom, month, dow] = <[&str; 5]>::try_from(fields).ok()?;
        let weekdays = {
            let mut days: Vec<u16> = field_values(dow, Field::DayOfWeek)?
                .into_iter()
                .map(|d| d % 7)
                .collect();
            days.sort_unstable();
            days.dedup();
            days
        };
        // As CronExpr::parse: a weekday field naming all seven days next to a stepped
        // day of month restricts nothing.
        let relaxed = dom != "*" && dom.contains('*') && weekdays.len() == 7;
        Some(Fields {
            source,
            minutes: field_values(minute, Field::Minute)?,
            hours: field_values(hour, Field::Hour)?,
            days: field_values(dom, Field::DayOfMonth)?,
            months: field_values(month, Field::Month)?,
            weekdays,
            dom_star: dom == "*",
            dow_star: dow == "*" || relaxed,
            dom_field: dom,
            dow_field: dow,
        })
    }

    fn describe(&self) -> String {
        let (mut text, at_times) = time_phrase(&self.minutes, &self.hours);
        let month_names = (self.months.len() < 12).then(|| month_list(&self.months));
        match Days::of(self) {
            Days::Never => return format!("never (no day matches '{}')", self.source),
            Days::Every => match (&month_names, at_times) {
                (None, true) => text.push_str(", every day"),
                (None, false) => {}
                (Some(names), true) => text.push_str(&format!(", every day in {names}")),
                (Some(names), false) => text.push_str(&format!(", in {names}")),
            },
            Days::Month(days) => {
                let of = month_names.as_deref().unwrap_or("the month");
                text.push_str(&format!(", {}", days.phrase(of)));
            }
            Days::Week(days) => {
                text.push_str(&format!(", {}", days.phrase()));
                if let Some(names) = &month_names {
                    text.push_str(&format!(", in {names}"));
                }
            }
            Days::Either(month, week) => {
                text.push_str(&format!(
                    ", {} and {}",
                    month.phrase("the month"),
                    week.phrase()
                ));
                if let Some(names) = &month_names {
                    text.push_str(&format!(", in {names}"));
                }
            }
        }
        text
    }
}

/// The day-of-month and day-of-week fields of a five-field expression.
fn day_fields(source: &str) -> (&str, &str) {
    let mut fields = source.split(' ');
    match (fields.nth(2), fields.nth(1)) {
        (Some(dom), Some(dow)) => (dom, dow),
        _ => ("*", "*"),
    }
}

/// The five fields, for what each one takes.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    fn bounds(self) -> (u16, u16) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            // 7 is Sunday too.
            Field::DayOfWeek => (0, 7),
        }
    }

    /// A value as the field writes it: digits, or a month or weekday name.
    fn value(self, text: &str) -> Option<u16> {
        let (min, max) = self.bounds();
        let value = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            text.parse().ok()?
        } else {
            let names: &[&str] = match self {
                Field::Month => &MONTHS,
                Field::DayOfWeek => &WEEKDAYS,
                _ => return None,
            };
            let i = names
                .iter()
                .position(|n| n[..3].eq_ignore_ascii_case(text))?;
            let first = if self == Field::Month { 1 } else { 0 };
            u16::try_from(i).ok()? + first
        };
        (min..=max).contains(&value).then_some(value)
    }

    /// An `L`/`W` item, read apart from the plain values: `L`, `LW`, `15W` in the day of
    /// the month; `5L`, `FRIL` (and a bare `L`, which croner accepts and matches nothing)
    /// in the day of the week.
    fn is_modifier(self, item: &str) -> bool {
        let upper = item.to_ascii_uppercase();
        match self {
            Field::DayOfMonth => {
                upper == "L"
                    || upper == "LW"
                    || upper
                        .strip_suffix('W')
                        .is_some_and(|day| self.value(day).is_some())
            }
            Field::DayOfWeek => {
                upper == "L"
                    || upper
                        .strip_suffix('L')
                        .is_some_and(|day| self.value(day).is_some())
            }
            _ => false,
        }
    }
}

/// The plain values of one field (croner's reading: `*`, `n`, `a-b`, `a-b/s`, `*/s`, and
/// `a/s` and `/s` meaning `a-max/s` and `*/s`), without the field's `L`/`W` items; `None`
/// for anything croner would read otherwise or refuse.
fn field_values(text: &str, field: Field) -> Option<Vec<u16>> {
    let (min, max) = field.bounds();
    if text == "*" {
        return Some((min..=max).collect());
    }
    let mut values = Vec::new();
    for item in text.split(',') {
        if field.is_modifier(item) {
            continue;
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step.parse::<u16>().ok().filter(|s| *s > 0)?)),
            None => (item, None),
        };
        let (first, last) = match (range, range.split_once('-'), step) {
            ("*" | "", _, Some(_)) => (min, max),
            (_, Some((first, last)), _) => (field.value(first)?, field.value(last)?),
            (_, None, Some(_)) => (field.value(range)?, max),
            (_, None, None) => {
                let value = field.value(range)?;
                (value, value)
            }
        };
        if first > last {
            return None;
        }
        values.extend((first..=last).step_by(usize::from(step.unwrap_or(1))));
    }
    values.sort_unstable();
    values.dedup();
    Some(values)
}

/// `09:05`.
fn clock(hour: u16, minute: u16) -> String {
    format!("{hour:02}:{minute:02}")
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `(first, step, last)` when `values` (ascending, at least three) are evenly spaced.
fn progression(values: &[u16]) -> Option<(u16, u16, u16)> {
    (values.len() >= 3).then(|| spacing(values)).flatten()
}

/// `(first, step, last)` when `values` (ascending, at least two) are evenly spaced.
fn spacing(values: &[u16]) -> Option<(u16, u16, u16)> {
    let (&first, &second, &last) = (values.first()?, values.get(1)?, values.last()?);
    let step = second - first;
    values
        .windows(2)
        .all(|w| w[1] - w[0] == step)
        .then_some((first, step, last))
}

/// Runs of consecutive values, each as `(first, last)`.
fn runs(values: &[u16]) -> Vec<(u16, u16)> {
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for &value in values {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == value => *last = value,
            _ => runs.push((value, value)),
        }
    }
    runs
}

/// Every value of `values` named by `name`, runs of three or more as `X through Y`.
fn named_runs(values: &[u16], name: impl Fn(u16) -> String) -> Vec<String> {
    named_runs_or_each(values, &name, &name)
}

/// [`named_runs`] with another name for the values that stand alone (`Mondays`).
fn named_runs_or_each(
    values: &[u16],
    name: &dyn Fn(u16) -> String,
    alone: &dyn Fn(u16) -> String,
) -> Vec<String> {
    let mut items = Vec::new();
    for (first, last) in runs(values) {
        if last >= first + 2 {
            items.push(format!("{} through {}", name(first), name(last)));
        } else {
            items.extend((first..=last).map(alone));
        }
    }
    items
}

/// The minutes and hours an expression fires at, and whether the phrase names times of
/// day (`at 09:00`), which a day phrase then follows with "every day".
fn time_phrase(minutes: &[u16], hours: &[u16]) -> (String, bool) {
    let every_minute = minutes.len() == 60;
    let every_hour = hours.len() == 24;
    // Every `step` minutes from the top of the hour, evenly through every hour.
    let minute_step = match spacing(minutes) {
        _ if every_minute => Some(1),
        Some((0, step, last)) if last + step == 60 => Some(step),
        _ => None,
    };
    let every_minutes = |step: u16| match step {
        1 => "every minute".to_string(),
        step => format!("every {step} minutes"),
    };
    if every_hour {
        return match (minutes, minute_step) {
            ([0], _) => ("every hour".into(), false),
            ([minute], _) => (format!("every hour at minute {minute}"), false),
            (_, Some(step)) => (every_minutes(step), false),
            _ => (
                format!("at minutes {} of every hour", minute_list(minutes)),
                false,
            ),
        };
    }
    if minutes.len() * hours.len() <= 4 {
        let times: Vec<String> = hours
            .iter()
            .flat_map(|&h| minutes.iter().map(move |&m| clock(h, m)))
            .collect();
        return (format!("at {}", join_and(&times)), true);
    }
    let span = |first: u16, last: u16| match (minutes.first(), minutes.last()) {
        (Some(&from), Some(&to)) => format!("from {} to {}", clock(first, from), clock(last, to)),
        _ => String::new(),
    };
    let contiguous = runs(hours).len() == 1;
    let (first_hour, last_hour) = (hours[0], hours[hours.len() - 1]);
    match (minutes, minute_step) {
        ([_], _) if contiguous => (format!("every hour {}", span(first_hour, last_hour)), false),
        ([_], _) => match progression(hours) {
            Some((first, step, last)) => {
                (format!("every {step} hours {}", span(first, last)), false)
            }
            None => {
                let times: Vec<String> = hours.iter().map(|&h| clock(h, minutes[0])).collect();
                (format!("at {}", join_and(&times)), true)
            }
        },
        (_, Some(step)) if contiguous => (
            format!("{} {}", every_minutes(step), span(first_hour, last_hour)),
            false,
        ),
        (_, Some(step)) => (
            format!(
                "{} during the {} hours",
                every_minutes(step),
                hour_list(hours)
            ),
            false,
        ),
        _ if contiguous => (
            format!(
                "at minutes {} of every hour from {} to {}",
                minute_list(minutes),
                clock(first_hour, 0),
                clock(last_hour, 59)
            ),
            false,
        ),
        _ => (
            format!(
                "at minutes {} of the {} hours",
                minute_list(minutes),
                hour_list(hours)
            ),
            false,
        ),
    }
}

fn minute_list(minutes: &[u16]) -> String {
    join_and(&named_runs(minutes, |m| m.to_string()))
}

/// `09:00, 11:00 and 13:00`.
fn hour_list(hours: &[u16]) -> String {
    let names: Vec<String> = hours.iter().map(|&h| clock(h, 0)).collect();
    join_and(&names)
}

fn month_list(months: &[u16]) -> String {
    let name = |m: u16| MONTHS[usize::from(m.clamp(1, 12) - 1)].to_string();
    join_and(&named_runs(months, name))
}

/// `1st`, `2nd`, `3rd`, `11th`, `22nd`.
fn ordinal(n: u16) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The days an expression fires on, as croner matches them: day of month and day of
/// week OR-ed when both are restricted (Vixie cron), either alone when the other is `*`.
enum Days {
    Every,
    Month(MonthDays),
    Week(WeekDays),
    Either(MonthDays, WeekDays),
    Never,
}

/// A restricted day-of-month field.
struct MonthDays {
    days: Vec<u16>,
    /// `L`.
    last: bool,
    /// `LW`.
    last_weekday: bool,
    /// `15W`: the weekday nearest the 15th.
    nearest_weekday: Vec<u16>,
}

/// A restricted day-of-week field.
struct WeekDays {
    /// Sunday = 0.
    days: Vec<u16>,
    /// `5L`, `FRIL`: the last Friday of the month.
    last_of_month: Vec<u16>,
}

impl Days {
    /// The `L`/`W` items, which croner keeps behind private flags, are read from the
    /// field text.
    fn of(fields: &Fields<'_>) -> Days {
        let dom_items = || fields.dom_field.split(',').map(str::to_ascii_uppercase);
        let month = MonthDays {
            days: fields.days.clone(),
            last: dom_items().any(|item| item == "L"),
            last_weekday: dom_items().any(|item| item == "LW"),
            nearest_weekday: dom_items()
                .filter_map(|item| item.strip_suffix('W')?.parse().ok())
                .collect(),
        };
        let mut week = WeekDays {
            days: fields.weekdays.clone(),
            last_of_month: fields
                .dow_field
                .split(',')
                .filter_map(|item| {
                    let item = item.to_ascii_uppercase();
                    weekday_number(item.strip_suffix('L')?)
                })
                .collect(),
        };
        week.last_of_month.sort_unstable();
        week.last_of_month.dedup();
        let whole_month = month.days.len() == 31;
        let whole_week = week.days.len() == 7;
        match (fields.dom_star, fields.dow_star) {
            (true, true) => Days::Every,
            (false, true) if whole_month => Days::Every,
            (false, true) => Days::Month(month),
            (true, false) if whole_week => Days::Every,
            (true, false) if week.is_empty() => Days::Never,
            (true, false) => Days::Week(week),
            (false, false) if whole_month || whole_week => Days::Every,
            (false, false) if week.is_empty() => Days::Month(month),
            (false, false) => Days::Either(month, week),
        }
    }
}

/// A weekday as the field names it: `0`–`7` (both ends Sunday) or `MON`.
fn weekday_number(text: &str) -> Option<u16> {
    if let Ok(n) = text.parse::<u16>() {
        return (n <= 7).then_some(n % 7);
    }
    WEEKDAYS
        .iter()
        .position(|day| day[..3].eq_ignore_ascii_case(text))
        .and_then(|n| u16::try_from(n).ok())
}

impl MonthDays {
    /// `on the 1st and 15th of the month`, `on the last weekday of March`.
    fn phrase(&self, of: &str) -> String {
        if let Some((first, step, last)) = progression(&self.days).filter(|_| {
            self.days.len() > 8
                && !self.last
                && !self.last_weekday
                && self.nearest_weekday.is_empty()
        }) {
            return format!(
                "every {step} days from the {} through the {} of {of}",
                ordinal(first),
                ordinal(last)
            );
        }
        let mut items = Vec::new();
        if !self.days.is_empty() {
            items.push(format!(
                "the {}",
                join_and(&named_runs(&self.days, ordinal))
            ));
        }
        for day in &self.nearest_weekday {
            items.push(format!("the weekday nearest the {}", ordinal(*day)));
        }
        if self.last_weekday {
            items.push("the last weekday".into());
        }
        if self.last {
            items.push("the last day".into());
        }
        format!("on {} of {of}", join_and(&items))
    }
}

impl WeekDays {
    fn is_empty(&self) -> bool {
        self.days.is_empty() && self.last_of_month.is_empty()
    }

    /// `Monday through Friday`, `on Mondays and Thursdays`, `on the last Friday of the month`.
    fn phrase(&self) -> String {
        // Positions in a Monday-first week, so that runs read as people name them.
        let ordered: Vec<u16> = (0u16..7)
            .filter(|&i| self.days.contains(&WEEK_ORDER[usize::from(i)]))
            .collect();
        let name = |i: u16| WEEKDAYS[usize::from(WEEK_ORDER[usize::from(i)])].to_string();
        let mut parts = Vec::new();
        match runs(&ordered)[..] {
            [] => {}
            [(first, last)] if last >= first + 2 => {
                parts.push(format!("{} through {}", name(first), name(last)))
            }
            _ => {
                let items = named_runs_or_each(&ordered, &name, &|i| format!("{}s", name(i)));
                parts.push(format!("on {}", join_and(&items)));
            }
        }
        if !self.last_of_month.is_empty() {
            let days: Vec<String> = WEEK_ORDER
                .iter()
                .filter(|d| self.last_of_month.contains(d))
                .map(|&d| WEEKDAYS[usize::from(d)].to_string())
                .collect();
            parts.push(format!("on the last {} of the month", join_and(&days)));
        }
        parts.join(" and ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_schedule;
    use chrono::Utc;
    use chrono_tz::{
        America::New_York, Asia::Kolkata, Australia::Lord_Howe, Europe::Berlin, Pacific::Chatham,
    };

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    /// The description of `input` as a job in the configured zone `zone` shows it.
    fn described(input: &str, zone: Tz) -> String {
        parse_schedule(input, now(), zone, None)
            .unwrap_or_else(|e| panic!("{input}: {e}"))
            .describe(zone, false)
    }

    fn check(cases: &[(&str, &str)]) {
        for (input, want) in cases {
            assert_eq!(described(input, chrono_tz::UTC), *want, "{input}");
        }
    }

    #[test]
    fn day_and_time_phrases() {
        check(&[
            ("every monday 9am", "at 09:00, on Mondays"),
            ("weekdays at 9am", "at 09:00, Monday through Friday"),
            (
                "Monday, Wednesday at 14:00",
                "at 14:00, on Mondays and Wednesdays",
            ),
            ("daily at noon", "at 12:00, every day"),
            ("every day at 9:05am", "at 09:05, every day"),
            ("every day at midnight", "at 00:00, every day"),
            (
                "every weekend at 10am",
                "at 10:00, on Saturdays and Sundays",
            ),
            ("tue and thu at 6 pm", "at 18:00, on Tuesdays and Thursdays"),
            (
                "friday monday friday 8am",
                "at 08:00, on Mondays and Fridays",
            ),
        ]);
    }

    #[test]
    fn intervals_in_their_largest_whole_unit() {
        check(&[
            ("every 360m", "every 6 hours"),
            ("every 2h", "every 2 hours"),
            ("every hour", "every hour"),
            ("every 1 minute", "every minute"),
            ("every 30 minutes", "every 30 minutes"),
            ("every 90m", "every 90 minutes"),
            ("every 150m", "every 2 hours 30 minutes"),
            ("every 1 day", "every day"),
            ("every 3days", "every 3 days"),
            ("every 25h", "every 25 hours"),
        ]);
        // A bare duration that must run more than once is an interval too.
        let repeated = parse_schedule("30m", now(), chrono_tz::UTC, Some(3)).unwrap();
        assert_eq!(repeated.describe(Berlin, true), "every 30 minutes");
    }

    #[test]
    fn cron_names_ranges_lists_and_steps() {
        check(&[
            ("0 9 * * 1-5", "at 09:00, Monday through Friday"),
            ("0 9 * * MON-FRI", "at 09:00, Monday through Friday"),
            ("0 9 * * mon,wed-fri", "at 09:00, on Mondays and Wednesday through Friday"),
            ("0 9 * * fri-sun", "at 09:00, Friday through Sunday"),
            ("0 12 * JAN,jul sun", "at 12:00, on Sundays, in January and July"),
            ("0 9 * jan-mar *", "at 09:00, every day in January through March"),
            ("0 9 * jan-mar/2 *", "at 09:00, every day in January and March"),
            ("*/15 * * * *", "every 15 minutes"),
            ("0/15 * * * *", "every 15 minutes"),
            ("*/30 * * * *", "every 30 minutes"),
            ("5/20 * * * *", "at minutes 5, 25 and 45 of every hour"),
            ("0-30/15 * * * *", "at minutes 0, 15 and 30 of every hour"),
            ("*/7 * * * *", "at minutes 0, 7, 14, 21, 28, 35, 42, 49 and 56 of every hour"),
            ("* * * * *", "every minute"),
            ("15 * * * *", "every hour at minute 15"),
            ("0 */2 * * *", "every 2 hours from 00:00 to 22:00"),
            ("23 0-20/2 * * *", "every 2 hours from 00:23 to 20:23"),
            ("0 */6 * * *", "at 00:00, 06:00, 12:00 and 18:00, every day"),
            ("0 9-17 * * *", "every hour from 09:00 to 17:00"),
            ("* 9 * * *", "every minute from 09:00 to 09:59"),
            (
                "0,30 9-17 * * 1-5",
                "every 30 minutes from 09:00 to 17:30, Monday through Friday",
            ),
            (
                "*/15 9-17/2 * * *",
                "every 15 minutes during the 09:00, 11:00, 13:00, 15:00 and 17:00 hours",
            ),
            (
                "5,35 9-17 * * *",
                "at minutes 5 and 35 of every hour from 09:00 to 17:59",
            ),
            (
                "5,35 9,12,15 * * 0",
                "at minutes 5 and 35 of the 09:00, 12:00 and 15:00 hours, on Sundays",
            ),
            (
                "15 1,3,7,9,13 * * *",
                "at 01:15, 03:15, 07:15, 09:15 and 13:15, every day",
            ),
            ("0 9,17 * * *", "at 09:00 and 17:00, every day"),
            ("0 0 1,15 * *", "at 00:00, on the 1st and 15th of the month"),
            ("0 4 8-14 * *", "at 04:00, on the 8th through 14th of the month"),
            ("0 9 2,3,22,23 * *", "at 09:00, on the 2nd, 3rd, 22nd and 23rd of the month"),
            ("0 9 11,12,13 * *", "at 09:00, on the 11th through 13th of the month"),
            (
                "0 9 1-31/2 * *",
                "at 09:00, every 2 days from the 1st through the 31st of the month",
            ),
            (
                "0 0,12 1 */2 *",
                "at 00:00 and 12:00, on the 1st of January, March, May, July, September and November",
            ),
            ("0 0 29 2 *", "at 00:00, on the 29th of February"),
        ]);
    }

    #[test]
    fn sunday_is_zero_or_seven() {
        check(&[
            ("0 8 * * 0", "at 08:00, on Sundays"),
            ("0 8 * * 7", "at 08:00, on Sundays"),
            ("0 8 * * SUN", "at 08:00, on Sundays"),
            ("0 8 * * 0,6", "at 08:00, on Saturdays and Sundays"),
            ("0 8 * * 0-7", "at 08:00, every day"),
            (
                "0 8 * * */2",
                "at 08:00, on Tuesdays, Thursdays, Saturdays and Sundays",
            ),
        ]);
    }

    #[test]
    fn macros() {
        check(&[
            ("@hourly", "every hour"),
            ("@daily", "at 00:00, every day"),
            ("@midnight", "at 00:00, every day"),
            ("@weekly", "at 00:00, on Sundays"),
            ("@monthly", "at 00:00, on the 1st of the month"),
            ("@yearly", "at 00:00, on the 1st of January"),
            ("@annually", "at 00:00, on the 1st of January"),
        ]);
    }

    #[test]
    fn day_of_month_or_day_of_week() {
        check(&[
            // Both restricted: either matches (Vixie cron, croner's default).
            (
                "0 9 1 * MON",
                "at 09:00, on the 1st of the month and on Mondays",
            ),
            (
                "0 0 13 * 5",
                "at 00:00, on the 13th of the month and on Fridays",
            ),
            (
                "0 0 */10 * 1",
                "at 00:00, on the 1st, 11th, 21st and 31st of the month and on Mondays",
            ),
            // A weekday field naming all seven days next to a stepped day of month
            // restricts nothing: only the day of month counts.
            (
                "25 0 */4 * 1-7",
                "at 00:25, on the 1st, 5th, 9th, 13th, 17th, 21st, 25th and 29th of the month",
            ),
            // Next to a plain day of month it ORs, so every day matches.
            ("0 0 13 * 0-6", "at 00:00, every day"),
            ("0 0 1-31 * 1", "at 00:00, every day"),
        ]);
    }

    #[test]
    fn last_and_nearest_weekday_forms() {
        check(&[
            ("0 9 L * *", "at 09:00, on the last day of the month"),
            ("0 9 l * *", "at 09:00, on the last day of the month"),
            ("0 9 LW * *", "at 09:00, on the last weekday of the month"),
            (
                "0 9 15W * *",
                "at 09:00, on the weekday nearest the 15th of the month",
            ),
            (
                "0 9 1W * *",
                "at 09:00, on the weekday nearest the 1st of the month",
            ),
            (
                "0 9 L,15 * *",
                "at 09:00, on the 15th and the last day of the month",
            ),
            ("0 9 L 2 *", "at 09:00, on the last day of February"),
            ("0 9 * * 5L", "at 09:00, on the last Friday of the month"),
            ("0 9 * * FRIL", "at 09:00, on the last Friday of the month"),
            ("0 9 * * 7L", "at 09:00, on the last Sunday of the month"),
            (
                "0 9 * * 1L,5L",
                "at 09:00, on the last Monday and Friday of the month",
            ),
            (
                "0 23 * * 0,1L",
                "at 23:00, on Sundays and on the last Monday of the month",
            ),
            (
                "30 */2 * * 1L",
                "every 2 hours from 00:30 to 22:30, on the last Monday of the month",
            ),
            (
                "0 9 1 * 5L",
                "at 09:00, on the 1st of the month and on the last Friday of the month",
            ),
        ]);
    }

    #[test]
    fn the_text_reading_matches_croner_on_every_form() {
        const MINUTES: &[&str] = &[
            "*", "0", "59", "60", "*/15", "0/15", "5/20", "/10", "0-30/15", "5-1", "*/0", "1,2,3",
            "0-59", "7,", "x", "5/1", "*,5", "L",
        ];
        const HOURS: &[&str] = &[
            "*", "9", "9-17", "*/2", "0-20/2", "1,3,7", "24", "12/5", "9-17/2",
        ];
        const DAYS: &[&str] = &[
            "*", "1", "31", "L", "LW", "15W", "l", "lw", "L,15", "*/4", "1-31/2", "32", "0",
            "1W,L", "L-2", "W15", "*/10", "8-14", "13", "1,15", "2W,5",
        ];
        const MONTHS_: &[&str] = &[
            "*",
            "1",
            "JAN",
            "jan-mar",
            "jan-mar/2",
            "*/3",
            "13",
            "JAN,jul",
            "2",
            "dec",
            "foo",
        ];
        const WEEKDAYS_: &[&str] = &[
            "*",
            "0",
            "7",
            "SUN",
            "1-5",
            "MON-FRI",
            "mon,wed-fri",
            "0-7",
            "1-7",
            "0-6",
            "*/2",
            "5L",
            "FRIL",
            "fril",
            "7L",
            "L",
            "1L,5L",
            "0,1L",
            "8",
            "5-1",
            "sun-sat",
            "1",
            "5-7",
        ];
        // splitmix64: a fixed, well-spread choice of combinations.
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            usize::try_from((z ^ (z >> 31)) % n as u64).unwrap()
        };
        let (mut read, mut parsed) = (0, 0);
        for _ in 0..6000 {
            let expr = [MINUTES, HOURS, DAYS, MONTHS_, WEEKDAYS_]
                .iter()
                .map(|items| items[next(items.len())])
                .collect::<Vec<_>>()
                .join(" ");
            let croner = CronExpr::parse(&expr);
            parsed += usize::from(croner.is_ok());
            match (Fields::read(&expr), croner) {
                (Some(fast), Ok(expr)) => {
                    read += 1;
                    assert_eq!(fast, Fields::of(&expr), "{}", expr.as_str());
                }
                (Some(_), Err(e)) => panic!("{expr} is read, but croner refuses it: {e}"),
                (None, _) => {}
            }
        }
        // Every accepted form but the rare sloppy ones is read from its text.
        assert!(read * 100 >= parsed * 95, "{read} read of {parsed} parsed");
    }

    #[test]
    fn stored_cron_schedules_are_described_without_croner() {
        let stored = serde_json::json!({"kind": "cron", "expr": "0 9 * * 1-5", "display": "x"});
        assert_eq!(
            describe_stored(&stored, now(), Berlin, Berlin, true).as_deref(),
            Some("at 09:00, Monday through Friday (Europe/Berlin)")
        );
        // Anything else the long way, as from_json reads it.
        let legacy = serde_json::json!({"kind": "cron", "value": "@daily"});
        assert_eq!(
            describe_stored(&legacy, now(), Berlin, Berlin, false).as_deref(),
            Some("at 00:00, every day")
        );
        let broken = serde_json::json!({"kind": "cron", "expr": "61 * * * *"});
        assert_eq!(describe_stored(&broken, now(), Berlin, Berlin, false), None);
    }

    #[test]
    fn an_expression_that_never_matches_a_day_says_so() {
        let expr = CronExpr::parse("0 9 * * L").unwrap();
        assert_eq!(expr.describe(), "never (no day matches '0 9 * * L')");
    }

    #[test]
    fn the_job_zone_is_named_when_the_job_has_its_own() {
        let schedule = parse_schedule("0 9 * * 1-5", now(), Berlin, None).unwrap();
        assert_eq!(
            schedule.describe(Berlin, true),
            "at 09:00, Monday through Friday (Europe/Berlin)"
        );
        assert_eq!(
            schedule.describe(Berlin, false),
            "at 09:00, Monday through Friday"
        );
        let interval = parse_schedule("every 6h", now(), Berlin, None).unwrap();
        assert_eq!(interval.describe(Berlin, true), "every 6 hours");
    }

    #[test]
    fn a_fixed_time_in_a_dst_change_reads_as_its_wall_clock_time() {
        // 02:30 is skipped in New York on 2026-03-08 and runs right after the gap; the
        // description names the time the job asks for, the same all year.
        let schedule = parse_schedule("30 2 * * *", now(), New_York, None).unwrap();
        assert_eq!(
            schedule.describe(New_York, true),
            "at 02:30, every day (America/New_York)"
        );
        // Lord Howe's 30-minute change.
        let schedule = parse_schedule("15 2 * * *", now(), Lord_Howe, None).unwrap();
        assert_eq!(
            schedule.describe(Lord_Howe, true),
            "at 02:15, every day (Australia/Lord_Howe)"
        );
        // Elapsed expressions say how often, not at which readings.
        assert_eq!(described("*/30 * * * *", New_York), "every 30 minutes");
    }

    #[test]
    fn one_shots_as_local_time_with_the_zone_abbreviation() {
        for (input, zone, named, want) in [
            (
                "2026-12-03T14:00",
                Berlin,
                true,
                "once on Thu 3 Dec 2026 at 14:00 CET (Europe/Berlin)",
            ),
            (
                "2026-12-03T14:00:00Z",
                New_York,
                false,
                "once on Thu 3 Dec 2026 at 09:00 EST",
            ),
            (
                "2026-12-03 14:00+05:30",
                Kolkata,
                false,
                "once on Thu 3 Dec 2026 at 14:00 IST",
            ),
            // The repeated autumn hour: the abbreviation says which 01:30.
            (
                "2026-11-01T01:30:00-04:00",
                New_York,
                false,
                "once on Sun 1 Nov 2026 at 01:30 EDT",
            ),
            (
                "2026-11-01T01:30:00-05:00",
                New_York,
                false,
                "once on Sun 1 Nov 2026 at 01:30 EST",
            ),
            // A time in the spring gap runs right after it.
            (
                "2027-03-14T02:30",
                New_York,
                true,
                "once on Sun 14 Mar 2027 at 03:00 EDT (America/New_York)",
            ),
            (
                "2027-09-26T09:00",
                Chatham,
                false,
                "once on Sun 26 Sep 2027 at 09:00 +1345",
            ),
        ] {
            let schedule = parse_schedule(input, now(), zone, None).unwrap();
            assert_eq!(schedule.describe(zone, named), want, "{input}");
        }
        // `in 30m` and a bare `30m`: 30 minutes from now, read in the zone.
        assert_eq!(
            described("in 30m", Berlin),
            "once on Sun 22 Nov 2026 at 13:30 CET"
        );
        assert_eq!(
            described("2h", Kolkata),
            "once on Sun 22 Nov 2026 at 19:30 IST"
        );
    }
}
