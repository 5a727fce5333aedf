//! How instants are shown to people: absolute (with offset) and relative ("in 2h 5m").

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// "in 2h 5m", "3d 4h ago", "now" — the two largest units, rounded down.
pub fn relative(target: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let delta = target - now;
    let future = delta >= Duration::zero();
    let seconds = delta.num_seconds().unsigned_abs();
    if seconds < 1 {
        return "now".to_string();
    }
    let units = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let mut parts = Vec::new();
    let mut rest = seconds;
    for (size, unit) in units {
        if rest >= size {
            parts.push(format!("{}{unit}", rest / size));
            rest %= size;
        }
        if parts.len() == 2 || (!parts.is_empty() && size == 60) {
            break;
        }
    }
    let text = parts.join(" ");
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// `2026-11-22T09:00:00-05:00 (in 2h 5m)`.
pub fn absolute_and_relative(target: DateTime<Utc>, now: DateTime<Utc>, zone: Tz) -> String {
    format!(
        "{} ({})",
        schedules::format_instant(target, zone),
        relative(target, now)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_naturally() {
        let now = Utc::now();
        assert_eq!(relative(now + Duration::seconds(7505), now), "in 2h 5m");
        assert_eq!(relative(now + Duration::seconds(45), now), "in 45s");
        assert_eq!(
            relative(now + Duration::days(3) + Duration::hours(4), now),
            "in 3d 4h"
        );
        assert_eq!(relative(now - Duration::minutes(5), now), "5m ago");
        assert_eq!(relative(now + Duration::hours(2), now), "in 2h");
        assert_eq!(relative(now, now), "now");
    }
}
