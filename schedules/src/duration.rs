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

#[cfg(test)]
mod tests {
    use super::*;

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
