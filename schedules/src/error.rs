use thiserror::Error;

/// The accepted forms, shown whenever a schedule is refused so the user can fix it at once.
pub const ACCEPTED_FORMS: &str = "Use: '30m' or 'in 30m' (once), 'every 2h' (recurring), \
'every monday 9am' / 'weekdays at 9am', '0 9 * * *' (cron), '2026-02-03T14:00' (once at)";

/// Why a schedule string or a stored schedule could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    #[error("Invalid schedule '{input}'. {ACCEPTED_FORMS}")]
    Unrecognized { input: String },
    #[error("Invalid duration '{input}' in schedule '{schedule}': use a whole number and a unit, e.g. '30m', '2h', '1d' (units: m, min, h, hr, hour, d, day)")]
    BadDuration { input: String, schedule: String },
    #[error("Schedule '{schedule}' names days but no time of day: add one, e.g. '{schedule} 9am' or '{schedule} at 14:30'")]
    DaysWithoutTime { schedule: String },
    #[error("Invalid cron expression '{input}': {reason}. A cron expression has 5 fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5'")]
    BadCron { input: String, reason: String },
    #[error("Invalid timestamp '{input}': {reason}. Use ISO-8601, e.g. '2026-02-03T14:00' or '2026-02-03T14:00:00+01:00'")]
    BadTimestamp { input: String, reason: String },
    #[error("Invalid stored schedule: {reason}")]
    BadStored { reason: String },
}
