//! What a run ended as (or is doing): the one status type of a ledger row
//! ([`crate::ledger::RunRow`]) and of a job's `last_status`.
//!
//! The two sets overlap but are not the same, and one type holds both:
//! - a ledger row is `running` (`claimed` on PostgreSQL before its process starts it),
//!   then `ok`, `error`, `skipped`, `missed`, `interrupted`, `budget_exceeded`,
//!   `budget_exhausted` or `cancelled`;
//! - a job's `last_status` is what its last run ended as, plus `delivery_failed` (the run
//!   was good, a delivery failed) and `blocked_config` (refused before the agent started,
//!   for a configuration to fix), and `missed` for a one-shot that never ran. Python Hermes
//!   writes `ok`, `error`, `delivery_failed` and `blocked_config`.
//!
//! A value this build does not know (a newer Hermes) is kept as it was written
//! ([`RunStatus::Other`]): read and written back unchanged, and shown as itself.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a run ended as, or is doing. Its text ([`RunStatus::as_str`]) is what every
/// store holds and every door shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunStatus {
    Running,
    /// A PostgreSQL ledger row claimed by a scheduler whose process has not started it yet.
    Claimed,
    Ok,
    Error,
    Skipped,
    Missed,
    Interrupted,
    /// Stopped at one of the job's own caps (docs/AGENT.md, "Budgets").
    BudgetExceeded,
    /// Not sent to the model: the global spend cap of the day or month is reached.
    BudgetExhausted,
    /// Stopped on request (`hermes cron cancel`, or replaced by a newer occurrence under
    /// `overlap: replace`): keeps what it produced, alerts and delivers nothing.
    Cancelled,
    /// `last_status` only: the run was good and a delivery of it failed (a later
    /// redelivery that arrives turns it `ok`).
    DeliveryFailed,
    /// `last_status` only: refused before the agent started, for a configuration the user
    /// must fix (`[blocked_config] …`).
    BlockedConfig,
    /// A status this build does not know, kept as written.
    Other(String),
}

impl RunStatus {
    /// Every status this build knows, for [`RunStatus::parse`].
    const KNOWN: [RunStatus; 12] = [
        RunStatus::Running,
        RunStatus::Claimed,
        RunStatus::Ok,
        RunStatus::Error,
        RunStatus::Skipped,
        RunStatus::Missed,
        RunStatus::Interrupted,
        RunStatus::BudgetExceeded,
        RunStatus::BudgetExhausted,
        RunStatus::Cancelled,
        RunStatus::DeliveryFailed,
        RunStatus::BlockedConfig,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Claimed => "claimed",
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Skipped => "skipped",
            RunStatus::Missed => "missed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::BudgetExceeded => "budget_exceeded",
            RunStatus::BudgetExhausted => "budget_exhausted",
            RunStatus::Cancelled => "cancelled",
            RunStatus::DeliveryFailed => "delivery_failed",
            RunStatus::BlockedConfig => "blocked_config",
            RunStatus::Other(text) => text,
        }
    }

    /// The status `text` names; an unknown one is kept as written (exact match: the
    /// stores hold these in lower case, and a differently spelled one is not ours).
    pub fn parse(text: &str) -> RunStatus {
        RunStatus::KNOWN
            .into_iter()
            .find(|s| s.as_str() == text)
            .unwrap_or_else(|| RunStatus::Other(text.to_string()))
    }

    /// A run still going: `running`, or `claimed` and not started yet.
    pub fn is_open(&self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Claimed)
    }

    /// A run stopped at a budget: the job's own cap or the global spend cap.
    pub fn is_budget_stop(&self) -> bool {
        matches!(self, RunStatus::BudgetExceeded | RunStatus::BudgetExhausted)
    }
}

impl From<&str> for RunStatus {
    fn from(text: &str) -> RunStatus {
        RunStatus::parse(text)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serialised as its text: `hermes cron runs --json` and the API show `"ok"`, as always.
impl Serialize for RunStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RunStatus, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(RunStatus::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_status_reads_back_as_itself() {
        for status in RunStatus::KNOWN {
            assert_eq!(RunStatus::parse(status.as_str()), status);
        }
    }

    #[test]
    fn an_unknown_status_keeps_its_text() {
        let status = RunStatus::parse("quarantined");
        assert_eq!(status, RunStatus::Other("quarantined".into()));
        assert_eq!(status.to_string(), "quarantined");
        assert_eq!(serde_json::to_string(&status).unwrap(), r#""quarantined""#);
        // Not folded into a known one by its case.
        assert_eq!(RunStatus::parse("OK"), RunStatus::Other("OK".into()));
    }

    #[test]
    fn serialises_to_the_stored_text() {
        assert_eq!(
            serde_json::to_string(&RunStatus::BudgetExhausted).unwrap(),
            r#""budget_exhausted""#
        );
        let back: RunStatus = serde_json::from_str(r#""delivery_failed""#).unwrap();
        assert_eq!(back, RunStatus::DeliveryFailed);
    }
}
