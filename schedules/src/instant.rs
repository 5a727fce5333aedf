//! Instants as jobs.json stores them, and timestamps as users type them.
//!
//! Stored instants always carry an explicit offset (Python `isoformat()` shape). A
//! wall-clock time becomes an instant only through [`wall_to_instant`], which owns the
//! choice for times a DST change skips or repeats.

use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone,
    Timelike, Utc,
};
use chrono_tz::Tz;

use crate::ScheduleError;

/// Formats an instant in `zone` as `2026-08-19T09:00:00-03:00` (whole seconds, like the
/// Python store writes for computed times; UTC is `+00:00`, never `Z`).
pub fn format_instant(instant: DateTime<Utc>, zone: Tz) -> String {
    let mut text = String::with_capacity(25);
    push_instant(&mut text, instant, zone);
    text
}

/// [`format_instant`] appended to `text`.
pub fn push_instant(text: &mut String, instant: DateTime<Utc>, zone: Tz) {
    use std::fmt::Write;
    let local = instant.with_timezone(&zone);
    let local = local.with_nanosecond(0).unwrap_or(local);
    let offset = local.offset().fix().local_minus_utc();
    // Written by hand for the shape every store holds (listing 10,000 jobs formats
    // 20,000 instants; chrono reads its format string again for each); chrono for years
    // outside 0–9999 and offsets with seconds.
    if (0..=9999).contains(&local.year()) && offset % 60 == 0 {
        let (sign, minutes) = if offset < 0 {
            ('-', -offset / 60)
        } else {
            ('+', offset / 60)
        };
        let year = local.year().unsigned_abs();
        push_digits(text, year / 100);
        push_digits(text, year % 100);
        for (separator, number) in [
            ('-', local.month()),
            ('-', local.day()),
            ('T', local.hour()),
            (':', local.minute()),
            (':', local.second()),
            (sign, minutes.unsigned_abs() / 60),
            (':', minutes.unsigned_abs() % 60),
        ] {
            text.push(separator);
            push_digits(text, number);
        }
        return;
    }
    // Writing into a String cannot fail.
    let _ = write!(text, "{}", local.format("%Y-%m-%dT%H:%M:%S%:z"));
}

/// Two digits of `number` (below 100).
fn push_digits(text: &mut String, number: u32) {
    text.push(char::from(b'0' + (number / 10 % 10) as u8));
    text.push(char::from(b'0' + (number % 10) as u8));
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
    if let Some(t) = parse_canonical(text.as_bytes()) {
        return Some(Parsed::Aware(t));
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

/// The shape every Hermes build writes, `2026-08-19T09:00:00[.ffffff]+02:00` (or `Z`),
/// read digit by digit: a due scan reads one or two instants per job, and chrono's
/// format-driven parser costs about ten times as much. `None` for anything else (or out
/// of range), which the general parser then reads, so both always agree.
fn parse_canonical(b: &[u8]) -> Option<DateTime<FixedOffset>> {
    fn digits(b: &[u8]) -> Option<u32> {
        b.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    }
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let year = i32::try_from(digits(&b[0..4])?).ok()?;
    let (month, day) = (digits(&b[5..7])?, digits(&b[8..10])?);
    let (hour, minute, second) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if second > 59 {
        return None; // a leap second: the general parser's business
    }
    let mut rest = &b[19..];
    let mut nanos = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let len = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=9).contains(&len) {
            return None;
        }
        nanos = digits(&fraction[..len])? * 10u32.pow(9 - len as u32);
        rest = &fraction[len..];
    }
    let offset_secs = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = i32::try_from(h * 3600 + m * 60).ok()?;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    let wall =
        NaiveDate::from_ymd_opt(year, month, day)?.and_hms_nano_opt(hour, minute, second, nanos)?;
    FixedOffset::east_opt(offset_secs)?
        .from_local_datetime(&wall)
        .single()
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
    fn the_hand_written_format_agrees_with_chrono() {
        let zones = [
            chrono_tz::UTC,
            New_York,
            chrono_tz::Asia::Kolkata,
            chrono_tz::Pacific::Chatham,
            chrono_tz::Australia::Lord_Howe,
            chrono_tz::Europe::Amsterdam,
        ];
        for text in [
            "2026-08-19T12:00:00.250Z",
            "2026-03-08T07:00:00Z",
            "0001-01-01T00:00:00Z",
            "1900-06-01T12:34:56Z",
            "9999-12-31T23:59:59Z",
        ] {
            let t = utc(text);
            for zone in zones {
                let local = t.with_timezone(&zone);
                let local = local.with_nanosecond(0).unwrap_or(local);
                let chrono = local.format("%Y-%m-%dT%H:%M:%S%:z").to_string();
                assert_eq!(format_instant(t, zone), chrono, "{text} in {zone}");
                let mut appended = String::from("at ");
                push_instant(&mut appended, t, zone);
                assert_eq!(appended, format!("at {chrono}"));
            }
        }
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
    fn the_fast_reading_agrees_with_the_general_parser() {
        let general = |text: &str| {
            let normalized = text.replacen(' ', "T", 1);
            let normalized = match normalized.strip_suffix(['Z', 'z']) {
                Some(rest) => format!("{rest}+00:00"),
                None => normalized,
            };
            DateTime::parse_from_str(&normalized, "%Y-%m-%dT%H:%M:%S%.f%:z").ok()
        };
        for text in [
            "2026-08-19T09:00:00-03:00",
            "2026-08-19T09:00:00+05:45",
            "2026-08-19T09:00:00-00:00",
            "2026-08-19T12:00:00Z",
            "2026-08-19T12:00:00.5+00:00",
            "2026-08-19T12:00:00.123456+01:00",
            "2026-08-19T12:00:00.123456789+01:00",
            "2026-12-31T23:59:59+14:00",
            "0001-01-01T00:00:00+00:00",
            "2024-02-29T00:00:00+00:00",
            "2026-02-29T00:00:00+00:00",
            "2026-04-31T00:00:00+00:00",
            "2026-08-19T24:00:00+00:00",
            "2026-08-19T12:60:00+00:00",
            "2026-08-19T12:00:00+24:00",
            "2026-08-19T12:00:00+23:60",
            "2026-08-19T12:00:00.+00:00",
            "2026-08-19T12:00:00+0100",
            "2026-08-19T12:00:00+01",
            "2026-08-19T12:00:00",
            "2026-8-19T12:00:00+00:00",
        ] {
            let fast = parse_canonical(text.as_bytes());
            if fast.is_some() {
                assert_eq!(fast, general(text), "{text}");
            }
            let expected = general(text).map(|t| t.with_timezone(&Utc));
            if expected.is_some() {
                assert_eq!(parse_stored_instant(text, New_York), expected, "{text}");
            }
        }
        assert!(parse_canonical(b"2026-08-19T12:00:00.123456+01:00").is_some());
        assert!(parse_canonical(b"2026-08-19T12:00:00Z").is_some());
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
