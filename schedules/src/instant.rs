//! Instants as jobs.json stores them, and timestamps as users type them.
//!
//! Stored instants always carry an explicit offset (Python `isoformat()` shape). A
//! wall-clock time becomes an instant only through [`wall_to_instant`], which owns the
//! choice for times a DST change skips or repeats.

use chrono::{
    DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;

use crate::ScheduleError;

/// Formats an instant in `zone` as `2026-08-19T09:00:00-03:00` (whole seconds, like the
/// Python store writes for computed times; UTC is `+00:00`, never `Z`).
pub fn format_instant(instant: DateTime<Utc>, zone: Tz) -> String {
    let local = instant.with_timezone(&zone);
    let local = local.with_nanosecond(0).unwrap_or(local);
    local.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// The instant a wall-clock reading in `zone` stands for.
///
/// DST choice, made once here for every caller: a reading that happens twice (the
/// repeated autumn hour) means its **first** occurrence; a reading that never happens
/// (the skipped spring hour) means the first instant **after the gap**. A job asked for
/// 02:30 on the spring-forward night thus runs once, right after the clocks jump.
pub fn wall_to_instant(wall: NaiveDateTime, zone: Tz) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&wall) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        LocalResult::None => gap_end(wall, zone),
    }
}

/// First instant after the DST gap that swallows `wall`. Transitions in real zones fall
/// on whole minutes and skip at most a few hours, so a minute-by-minute walk is exact.
pub(crate) fn gap_end(wall: NaiveDateTime, zone: Tz) -> Option<DateTime<Utc>> {
    let start = wall.with_second(0)?.with_nanosecond(0)?;
    (1..=24 * 60).find_map(|minutes| {
        let probe = start + chrono::Duration::minutes(minutes);
        match zone.from_local_datetime(&probe) {
            LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
            LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
            LocalResult::None => None,
        }
    })
}

/// Reads an instant from jobs.json. Accepts any ISO-8601 shape Hermes versions wrote:
/// with offset or `Z`, with or without fraction, `T` or space. A value without offset
/// is a legacy naive timestamp and is read in `legacy_zone` (the system's zone).
pub fn parse_stored_instant(value: &str, legacy_zone: Tz) -> Option<DateTime<Utc>> {
    match parse_iso(value.trim())? {
        Parsed::Aware(t) => Some(t.with_timezone(&Utc)),
        Parsed::Naive(wall) => wall_to_instant(wall, legacy_zone),
    }
}

/// Does a stored timestamp carry its own offset? (Legacy naive ones do not.)
pub fn has_explicit_offset(value: &str) -> bool {
    matches!(parse_iso(value.trim()), Some(Parsed::Aware(_)))
}

/// Reads a timestamp typed by a user. Without an offset it is a wall-clock time in
/// `zone`. Returns the instant together with the offset to store it with: the user's own
/// offset when given, else the zone's offset at that instant.
pub fn parse_user_timestamp(input: &str, zone: Tz) -> Result<DateTime<FixedOffset>, ScheduleError> {
    let bad = |reason: &str| ScheduleError::BadTimestamp {
        input: input.to_string(),
        reason: reason.to_string(),
    };
    match parse_iso(input.trim()).ok_or_else(|| bad("not a valid date and time"))? {
        Parsed::Aware(t) => Ok(t),
        Parsed::Naive(wall) => {
            let instant = wall_to_instant(wall, zone).ok_or_else(|| bad("no such time"))?;
            Ok(instant.with_timezone(&zone).fixed_offset())
        }
    }
}

enum Parsed {
    Aware(DateTime<FixedOffset>),
    Naive(NaiveDateTime),
}

fn parse_iso(text: &str) -> Option<Parsed> {
    if text.is_empty() || !text.is_ascii() {
        return None;
    }
    let normalized = text.replacen(' ', "T", 1);
    let normalized = match normalized.strip_suffix(['Z', 'z']) {
        Some(rest) => format!("{rest}+00:00"),
        None => normalized,
    };
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M%:z",
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M%z",
        "%Y-%m-%dT%H:%M:%S%.f%#z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(&normalized, format) {
            return Some(Parsed::Aware(t));
        }
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(wall) = NaiveDateTime::parse_from_str(&normalized, format) {
            return Some(Parsed::Naive(wall));
        }
    }
    NaiveDate::parse_from_str(&normalized, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(Parsed::Naive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::America::New_York;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn formats_like_python_isoformat() {
        let t = utc("2026-08-19T12:00:00.250Z");
        assert_eq!(
            format_instant(t, chrono_tz::America::Sao_Paulo),
            "2026-08-19T09:00:00-03:00"
        );
        assert_eq!(
            format_instant(t, chrono_tz::UTC),
            "2026-08-19T12:00:00+00:00"
        );
    }

    #[test]
    fn reads_every_stored_shape() {
        let want = utc("2026-08-19T12:00:00Z");
        for text in [
            "2026-08-19T09:00:00-03:00",
            "2026-08-19T12:00:00Z",
            "2026-08-19T12:00:00.000000+00:00",
            "2026-08-19 12:00:00+00:00",
            "2026-08-19T12:00+00:00",
        ] {
            assert_eq!(parse_stored_instant(text, New_York), Some(want), "{text}");
        }
        // Legacy naive timestamps are the system's local time.
        assert_eq!(
            parse_stored_instant("2026-08-19T08:00:00", New_York),
            Some(want)
        );
        assert_eq!(parse_stored_instant("yesterday", New_York), None);
        assert_eq!(parse_stored_instant("2026-13-45T99:00", New_York), None);
    }

    #[test]
    fn skipped_wall_time_means_the_end_of_the_gap() {
        let wall = NaiveDateTime::parse_from_str("2026-03-08T02:30", "%Y-%m-%dT%H:%M").unwrap();
        assert_eq!(
            wall_to_instant(wall, New_York),
            Some(utc("2026-03-08T07:00:00Z"))
        );
    }

    #[test]
    fn repeated_wall_time_means_its_first_occurrence() {
        let wall = NaiveDateTime::parse_from_str("2026-11-01T01:30", "%Y-%m-%dT%H:%M").unwrap();
        assert_eq!(
            wall_to_instant(wall, New_York),
            Some(utc("2026-11-01T05:30:00Z"))
        );
    }

    #[test]
    fn user_timestamp_keeps_its_offset_or_takes_the_zone() {
        let given = parse_user_timestamp("2026-02-03T14:00:00+05:30", New_York).unwrap();
        assert_eq!(given.to_rfc3339(), "2026-02-03T14:00:00+05:30");
        let naive = parse_user_timestamp("2026-02-03T14:00", New_York).unwrap();
        assert_eq!(naive.to_rfc3339(), "2026-02-03T14:00:00-05:00");
        let zulu = parse_user_timestamp("2026-02-03T14:00:00Z", New_York).unwrap();
        assert_eq!(zulu.to_rfc3339(), "2026-02-03T14:00:00+00:00");
        assert!(parse_user_timestamp("2026-02-30T14:00", New_York).is_err());
    }
}
