//! Durations as users type them: `<n><unit>`, optional space, no decimals, no compounds.

/// Minutes in one unit, keyed by every spelling the grammar accepts.
fn unit_minutes(unit: &str) -> Option<u64> {
    match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => Some(1),
        "h" | "hr" | "hrs" | "hour" | "hours" => Some(60),
        "d" | "day" | "days" => Some(24 * 60),
        _ => None,
    }
}

/// Parses a duration such as `30m`, `2 h`, `hour` (a missing number means 1) into minutes.
/// Input must already be trimmed; matching is case-insensitive. Zero and overflowing
/// durations are refused: a job that fires every 0 minutes is a mistake, never a wish.
pub fn parse_duration_minutes(input: &str) -> Option<u64> {
    let lower = input.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let count: u64 = if number.is_empty() {
        1
    } else {
        number.parse().ok()?
    };
    let per_unit = unit_minutes(unit.trim_start())?;
    let minutes = count.checked_mul(per_unit)?;
    // Bounded at ~100 years so that adding it to an instant can never overflow.
    (1..=100 * 366 * 24 * 60)
        .contains(&minutes)
        .then_some(minutes)
}

/// Parses a span such as `90s`, `5m`, `2 h`, `1d` or `0` into whole seconds (zero
/// allowed: "none"): the jitter of a job and `cron.catch_up_spread`. A bare number is
/// seconds. Bounded at a year.
pub fn parse_span_seconds(input: &str) -> Option<u64> {
    let lower = input.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let count: u64 = number.parse().ok()?;
    let per_unit = match unit.trim_start() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        other => unit_minutes(other)? * 60,
    };
    let secs = count.checked_mul(per_unit)?;
    (secs <= 366 * 24 * 3600).then_some(secs)
}

/// A span of whole seconds as [`parse_span_seconds`] reads it back, in its largest
/// exact unit: `90s`, `5m`, `2h`, `1d`.
pub fn format_span(secs: u64) -> String {
    match secs {
        0 => "0".to_string(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_seconds_and_zero() {
        for (input, secs) in [
            ("0", 0),
            ("90s", 90),
            ("20 sec", 20),
            ("5m", 300),
            ("2h", 7200),
            ("1d", 86_400),
            ("45", 45),
        ] {
            assert_eq!(parse_span_seconds(input), Some(secs), "{input}");
        }
        for input in ["", "m", "1.5m", "-5s", "5 weeks", "400d"] {
            assert_eq!(parse_span_seconds(input), None, "{input}");
        }
        for secs in [0, 90, 300, 7200, 86_400, 3690] {
            assert_eq!(parse_span_seconds(&format_span(secs)), Some(secs));
        }
    }

    #[test]
    fn accepts_every_unit_spelling() {
        for (input, minutes) in [
            ("30m", 30),
            ("30 min", 30),
            ("5mins", 5),
            ("1 minute", 1),
            ("10 minutes", 10),
            ("2h", 120),
            ("2 hr", 120),
            ("3hrs", 180),
            ("1 hour", 60),
            ("4 HOURS", 240),
            ("1d", 1440),
            ("2 day", 2880),
            ("3days", 4320),
            ("hour", 60),
            ("day", 1440),
        ] {
            assert_eq!(parse_duration_minutes(input), Some(minutes), "{input}");
        }
    }

    #[test]
    fn refuses_decimals_compounds_zero_and_junk() {
        for input in [
            "1.5h",
            "1h30m",
            "0m",
            "",
            "m5",
            "5",
            "5 weeks",
            "-5m",
            "99999999999999999999m",
        ] {
            assert_eq!(parse_duration_minutes(input), None, "{input}");
        }
    }
}
