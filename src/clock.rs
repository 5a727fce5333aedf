//! The one place "now" comes from. Every part that needs the time of day is handed a
//! [`Clock`]: the binary uses [`SystemClock`] (which `HERMES_NOW`, an RFC 3339 instant,
//! pins for tests of the real binary), unit tests a [`ManualClock`] they move themselves.

use chrono::{DateTime, Utc};

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// `HERMES_NOW` is set but cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("HERMES_NOW '{text}' is not an RFC 3339 instant: {source}")]
pub struct ClockError {
    text: String,
    source: chrono::ParseError,
}

/// The system clock, unless `HERMES_NOW` pins it.
pub struct SystemClock {
    pinned: Option<DateTime<Utc>>,
}

impl SystemClock {
    pub fn from_env() -> Result<SystemClock, ClockError> {
        let pinned = match std::env::var("HERMES_NOW") {
            Ok(text) if !text.trim().is_empty() => Some(
                DateTime::parse_from_rfc3339(text.trim())
                    .map_err(|source| ClockError { text, source })?
                    .with_timezone(&Utc),
            ),
            _ => None,
        };
        Ok(SystemClock { pinned })
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        self.pinned.unwrap_or_else(Utc::now)
    }
}

/// A clock that starts at a chosen instant and moves with tokio's timer (so a test on a
/// paused runtime sees time pass exactly as its sleeps and timeouts do) plus whatever
/// [`ManualClock::advance`] adds.
#[cfg(test)]
pub struct ManualClock {
    start: DateTime<Utc>,
    anchor: tokio::time::Instant,
    jumped: std::sync::Mutex<chrono::Duration>,
}

#[cfg(test)]
impl ManualClock {
    pub fn at(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            start,
            anchor: tokio::time::Instant::now(),
            jumped: std::sync::Mutex::new(chrono::Duration::zero()),
        }
    }

    /// Jumps ahead without anything sleeping (a machine that was asleep).
    pub fn advance(&self, by: chrono::Duration) {
        *self.jumped.lock().unwrap() += by;
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = chrono::Duration::from_std(self.anchor.elapsed()).unwrap_or_default();
        self.start + elapsed + *self.jumped.lock().unwrap()
    }
}
