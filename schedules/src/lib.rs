//! Schedule strings → schedule values → next fire instants, with time zones and DST.
//!
//! This crate is pure: it never reads the clock, the environment or a file. Callers pass
//! "now" and the zone in. Wall-clock times (`NaiveDateTime`, a reading on a zone's clocks)
//! and instants (`DateTime<Utc>`, a point on the time line) are kept apart in the types;
//! every place where one becomes the other makes its DST choice explicit (see [`cron`]).

pub mod cron;
mod describe;
pub mod duration;
mod error;
pub mod instant;
pub mod phrase;
mod schedule;
pub mod window;

pub use crate::cron::DstRule;
pub use chrono_tz::Tz;
pub use cron::CronExpr;
pub use describe::{describe_cron, describe_cron_in, describe_interval, describe_stored};
pub use duration::{format_span, parse_duration_minutes, parse_span_seconds};
pub use error::ScheduleError;
pub use instant::{
    format_instant, has_explicit_offset, parse_stored_instant, parse_user_timestamp, push_instant,
};
pub use schedule::{grace_period, parse_schedule, Schedule, ONE_SHOT_GRACE};
pub use window::{jitter_offset, Planned, RunWindow};
