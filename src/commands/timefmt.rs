//! How instants are shown to people: absolute (with offset) and relative ("in 2h 5m").

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// "in 2h 5m", "3d 4h ago", "now" — the two largest units, rounded down.
fn write_relative(out: &mut String, target: DateTime<Utc>, now: DateTime<Utc>) {
    let delta = target - now;
    let future = delta >= Duration::zero();
    let seconds = delta.num_seconds().unsigned_abs();
    if seconds < 1 {
        out.push_str("now");
        return;
    }
    if future {
        out.push_str("in ");
    }
    let units = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let mut parts = 0;
    let mut rest = seconds;
    for (size, unit) in units {
        if rest >= size {
            if parts > 0 {
                out.push(' ');
            }
            let _ = write!(out, "{}{unit}", rest / size);
            parts += 1;
            rest %= size;
        }
        if parts == 2 || (parts > 0 && size == 60) {
            break;
        }
    }
    if !future {
        out.push_str(" ago");
    }
}

/// `2026-11-22T09:00:00-05:00 (in 2h 5m)`.
pub fn absolute_and_relative(target: DateTime<Utc>, now: DateTime<Utc>, zone: Tz) -> String {
    let mut text = String::new();
    write_absolute_and_relative(&mut text, target, now, zone);
    text
}

/// [`absolute_and_relative`] appended to `out`.
pub fn write_absolute_and_relative(
    out: &mut String,
    target: DateTime<Utc>,
    now: DateTime<Utc>,
    zone: Tz,
) {
    schedules::push_instant(out, target, zone);
    out.push_str(" (");
    write_relative(out, target, now);
    out.push(')');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relative(target: DateTime<Utc>, now: DateTime<Utc>) -> String {
        let mut text = String::new();
        write_relative(&mut text, target, now);
        text
    }

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
