//! A recurring job's run window and jitter (docs/SCHEDULES.md, "Start, end and
//! jitter"): no run before `start_at` (the first run is the first occurrence at or
//! after it), none after `until`, and each occurrence moved later by a fixed offset
//! derived from the job id, so jobs that share a schedule do not all start in the same
//! second. Pure: "now" comes in.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use crate::Schedule;

/// What shapes a job's runs beyond its schedule. The default changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunWindow<'a> {
    /// No run before it.
    pub start_at: Option<DateTime<Utc>>,
    /// No run after it; the job completes.
    pub until: Option<DateTime<Utc>>,
    /// The widest offset (whole seconds; 0: none).
    pub jitter_secs: u64,
    /// What the offset is derived from: the job id.
    pub seed: &'a str,
}

/// A job's next run as its window allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planned {
    /// It runs next at this instant (its occurrence plus the jitter offset).
    At(DateTime<Utc>),
    /// Its next run would fall after `until`: the job is finished.
    Ended,
    /// The schedule has no next run at all.
    Nothing,
}

/// FNV-1a, 64 bits: the same number for the same id on every host and every release
/// (the standard library's hasher promises neither).
fn stable_hash(seed: &str) -> u64 {
    seed.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The jitter offset of an occurrence followed by the next one `gap` later: the id's
/// hash modulo the jitter, in whole seconds — the same for every occurrence and on
/// every host. When the jitter reaches the gap, it is taken modulo the gap less one
/// second instead, so a run never moves onto or past the next occurrence.
pub fn jitter_offset(seed: &str, jitter_secs: u64, gap: Duration) -> Duration {
    let gap_secs = u64::try_from(gap.num_seconds()).unwrap_or(0);
    let width = jitter_secs.min(gap_secs.saturating_sub(1));
    if width == 0 {
        return Duration::zero();
    }
    let secs = stable_hash(seed) % width;
    Duration::seconds(i64::try_from(secs).unwrap_or(0))
}

/// The occurrence after `occurrence` for a recurring schedule, to bound the offset.
fn gap_after(schedule: &Schedule, occurrence: DateTime<Utc>, zone: Tz) -> Option<Duration> {
    match schedule {
        Schedule::Once { .. } => None,
        Schedule::Interval { .. } => schedule.period(occurrence, zone),
        Schedule::Cron { .. } => Some(schedule.next_run(occurrence, None, zone)? - occurrence),
    }
}

impl RunWindow<'_> {
    /// True when nothing beyond the schedule shapes the runs.
    pub fn is_plain(&self) -> bool {
        self.start_at.is_none() && self.until.is_none() && self.jitter_secs == 0
    }

    /// The jitter offset of the occurrence at `occurrence`.
    pub fn offset(&self, schedule: &Schedule, occurrence: DateTime<Utc>, zone: Tz) -> Duration {
        if self.jitter_secs == 0 {
            return Duration::zero();
        }
        gap_after(schedule, occurrence, zone).map_or(Duration::zero(), |gap| {
            jitter_offset(self.seed, self.jitter_secs, gap)
        })
    }

    /// The occurrence a run planned at `planned` belongs to: `planned` less its offset.
    /// An interval's offset is the same for every run, so the next run counts from the
    /// occurrence, never from the shifted time (which would drift by the offset each
    /// run). A cron's next occurrence follows the shifted time anyway.
    pub fn occurrence_of(
        &self,
        schedule: &Schedule,
        planned: DateTime<Utc>,
        zone: Tz,
    ) -> DateTime<Utc> {
        match schedule {
            Schedule::Interval { .. } => planned - self.offset(schedule, planned, zone),
            _ => planned,
        }
    }

    /// The next run as [`Schedule::next_run`] computes it from `now` and `last_run_at`,
    /// moved to the first occurrence at or after `start_at`, shifted by the jitter
    /// offset, and [`Planned::Ended`] once it would fall after `until`. A one-shot is
    /// its schedule's own (the doors refuse a window on one).
    pub fn next_run(
        &self,
        schedule: &Schedule,
        now: DateTime<Utc>,
        last_run_at: Option<DateTime<Utc>>,
        zone: Tz,
    ) -> Planned {
        let occurrence = match (schedule, self.start_at) {
            (Schedule::Once { .. }, _) | (_, None) => schedule.next_run(now, last_run_at, zone),
            (Schedule::Interval { .. }, Some(start)) => schedule
                .next_run(now, last_run_at, zone)
                .map(|next| next.max(start)),
            (Schedule::Cron { .. }, Some(start)) => {
                let just_before = start - Duration::nanoseconds(1);
                schedule.next_run(now.max(just_before), last_run_at, zone)
            }
        };
        let Some(occurrence) = occurrence else {
            return Planned::Nothing;
        };
        let planned = occurrence + self.offset(schedule, occurrence, zone);
        match self.until {
            Some(until) if planned > until => Planned::Ended,
            _ => Planned::At(planned),
        }
    }

    /// Every occurrence of `schedule` from `from` to `to`, both included, oldest first,
    /// without jitter and within `start_at`/`until`; at most `limit` of them (`None`
    /// when there are more).
    pub fn occurrences(
        &self,
        schedule: &Schedule,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        zone: Tz,
        limit: usize,
    ) -> Option<Vec<DateTime<Utc>>> {
        let from = self.start_at.map_or(from, |start| from.max(start));
        let to = self.until.map_or(to, |until| to.min(until));
        let mut found = Vec::new();
        let first = match schedule {
            Schedule::Once { run_at, .. } => {
                let at = run_at.with_timezone(&Utc);
                return Some(if at >= from && at <= to {
                    vec![at]
                } else {
                    Vec::new()
                });
            }
            // An interval counts from `from` itself, the first occurrence of the window.
            Schedule::Interval { .. } => Some(from),
            Schedule::Cron { .. } => schedule.next_run(from - Duration::nanoseconds(1), None, zone),
        };
        let mut next = first;
        while let Some(at) = next.filter(|&at| at <= to) {
            if found.len() == limit {
                return None;
            }
            found.push(at);
            next = match schedule {
                Schedule::Interval { .. } => schedule.next_run(at, Some(at), zone),
                _ => schedule.next_run(at, None, zone),
            };
        }
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_schedule;
    use chrono_tz::{America::New_York, UTC};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn schedule(text: &str) -> Schedule {
        parse_schedule(text, at("2026-03-01T00:00:00Z"), UTC, None).unwrap()
    }

    #[test]
    fn the_first_run_is_the_first_occurrence_at_or_after_start_at() {
        let daily = schedule("0 9 * * *");
        let window = RunWindow {
            start_at: Some(at("2026-03-05T09:00:00Z")),
            ..RunWindow::default()
        };
        let now = at("2026-03-01T10:00:00Z");
        assert_eq!(
            window.next_run(&daily, now, None, UTC),
            Planned::At(at("2026-03-05T09:00:00Z")),
            "an occurrence exactly at start_at is the first run"
        );
        let hourly = schedule("every 1h");
        assert_eq!(
            window.next_run(&hourly, now, None, UTC),
            Planned::At(at("2026-03-05T09:00:00Z")),
            "an interval starts at start_at"
        );
        // Once started, start_at no longer moves anything.
        assert_eq!(
            window.next_run(&daily, at("2026-03-06T10:00:00Z"), None, UTC),
            Planned::At(at("2026-03-07T09:00:00Z"))
        );
    }

    #[test]
    fn until_ends_the_job_across_a_dst_change() {
        // New York moves to summer time on 2026-03-08: 09:00 is 14:00Z before, 13:00Z after.
        let daily =
            parse_schedule("0 9 * * *", at("2026-03-01T00:00:00Z"), New_York, None).unwrap();
        let window = RunWindow {
            until: Some(at("2026-03-09T13:00:00Z")),
            ..RunWindow::default()
        };
        assert_eq!(
            window.next_run(&daily, at("2026-03-07T15:00:00Z"), None, New_York),
            Planned::At(at("2026-03-08T13:00:00Z"))
        );
        assert_eq!(
            window.next_run(&daily, at("2026-03-08T14:00:00Z"), None, New_York),
            Planned::At(at("2026-03-09T13:00:00Z")),
            "an occurrence exactly at until still runs"
        );
        assert_eq!(
            window.next_run(&daily, at("2026-03-09T14:00:00Z"), None, New_York),
            Planned::Ended
        );
    }

    #[test]
    fn jitter_is_fixed_per_id_and_never_reaches_the_next_occurrence() {
        let hourly = schedule("0 * * * *");
        let window = |seed| RunWindow {
            jitter_secs: 600,
            seed,
            ..RunWindow::default()
        };
        let now = at("2026-03-01T10:30:00Z");
        let Planned::At(first) = window("a1b2c3d4e5f6").next_run(&hourly, now, None, UTC) else {
            panic!("no next run");
        };
        let offset = first - at("2026-03-01T11:00:00Z");
        assert!(offset >= Duration::zero() && offset < Duration::seconds(600));
        assert_eq!(
            jitter_offset("a1b2c3d4e5f6", 600, Duration::hours(1)),
            offset,
            "the same offset every time"
        );
        let Planned::At(after) = window("a1b2c3d4e5f6").next_run(&hourly, first, None, UTC) else {
            panic!("no next run");
        };
        assert_eq!(
            after,
            at("2026-03-01T12:00:00Z") + offset,
            "every occurrence moves alike"
        );
        let offsets: std::collections::HashSet<Duration> = (0..100)
            .map(|i| jitter_offset(&format!("job{i:09}"), 3600, Duration::hours(1)))
            .collect();
        assert!(
            offsets.len() > 80,
            "a hundred ids spread out: {}",
            offsets.len()
        );
        assert!(offsets.iter().all(|o| *o < Duration::hours(1)));
        assert_eq!(
            jitter_offset("x", 7200, Duration::seconds(1)),
            Duration::zero()
        );
    }

    #[test]
    fn an_interval_with_jitter_does_not_drift() {
        let every = schedule("every 30m");
        let window = RunWindow {
            jitter_secs: 300,
            seed: "feedfacecafe",
            ..RunWindow::default()
        };
        let offset = window.offset(&every, at("2026-03-01T10:00:00Z"), UTC);
        let planned = at("2026-03-01T10:00:00Z") + offset;
        let occurrence = window.occurrence_of(&every, planned, UTC);
        assert_eq!(occurrence, at("2026-03-01T10:00:00Z"));
        assert_eq!(
            window.next_run(&every, planned, Some(occurrence), UTC),
            Planned::At(at("2026-03-01T10:30:00Z") + offset)
        );
    }

    #[test]
    fn the_occurrences_of_a_window_are_listed_oldest_first() {
        let daily = schedule("0 9 * * *");
        let all = RunWindow::default()
            .occurrences(
                &daily,
                at("2026-02-01T00:00:00Z"),
                at("2026-02-07T23:59:59Z"),
                UTC,
                100,
            )
            .unwrap();
        assert_eq!(all.len(), 7);
        assert_eq!(all[0], at("2026-02-01T09:00:00Z"));
        assert_eq!(all[6], at("2026-02-07T09:00:00Z"));
        let exact = RunWindow::default()
            .occurrences(
                &daily,
                at("2026-02-01T09:00:00Z"),
                at("2026-02-02T09:00:00Z"),
                UTC,
                100,
            )
            .unwrap();
        assert_eq!(exact.len(), 2, "both ends are included");
        assert_eq!(
            RunWindow::default().occurrences(
                &daily,
                at("2026-02-01T00:00:00Z"),
                at("2026-02-07T23:59:59Z"),
                UTC,
                3
            ),
            None
        );
    }
}
