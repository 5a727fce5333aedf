//! The one place "now" comes from. Tests fix it with `HERMES_NOW` (an ISO-8601 instant)
//! so that relative times and next runs are predictable; users never need to set it.

use chrono::{DateTime, Utc};

pub trait Clock {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock, unless `HERMES_NOW` pins it.
pub struct SystemClock {
    pinned: Option<DateTime<Utc>>,
}

impl SystemClock {
    pub fn from_env() -> Result<SystemClock, String> {
        let pinned = match std::env::var("HERMES_NOW") {
            Ok(text) if !text.trim().is_empty() => Some(
                DateTime::parse_from_rfc3339(text.trim())
                    .map_err(|e| format!("HERMES_NOW '{text}' is not an RFC 3339 instant: {e}"))?
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
