//! Writes that wait out a failover. The end of a run (its ledger row, and the job's own
//! outcome fields) is written once, by the process that ran it: when that falls in the
//! seconds a database is down, restarting or being replaced by its standby, the write is
//! tried again until the database answers, rather than lost. Only a cause that passes is
//! waited for; a statement the database refuses fails at once.

use std::time::Duration;

use tokio::time::Instant;

use super::PgStore;
use crate::store::StoreError;

/// How long the record of a run that ended waits for a database that went away (a
/// failover promotes its standby within seconds).
pub(super) const RECORD_PATIENCE: Duration = Duration::from_secs(30);

/// How long between two attempts.
const RETRY_EVERY: Duration = Duration::from_millis(500);

/// A failed attempt: its error, and whether its cause passes.
pub(super) struct Failed {
    passes: bool,
    error: StoreError,
}

impl Failed {
    /// A failure that passes: no connection could be had.
    pub(super) fn unreachable(error: StoreError) -> Failed {
        Failed {
            passes: true,
            error,
        }
    }
}

/// Anything else a store call can fail with (a record that does not decode, …) does
/// not pass.
impl From<StoreError> for Failed {
    fn from(error: StoreError) -> Failed {
        Failed {
            passes: false,
            error,
        }
    }
}

impl From<Failed> for StoreError {
    fn from(failed: Failed) -> StoreError {
        failed.error
    }
}

/// Whether a statement failed for a reason that passes: the connection went away, or
/// the server is shutting down, not accepting connections yet, or read-only (a standby
/// that is being promoted). A refusal of the statement itself does not pass.
fn passing(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            db.code().code().starts_with("57")
                || *db.code() == tokio_postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION
        }
    }
}

/// The time left for the attempts at one write.
pub(super) struct Patience {
    deadline: Instant,
}

impl Patience {
    pub(super) fn start() -> Patience {
        Patience {
            deadline: Instant::now() + RECORD_PATIENCE,
        }
    }

    /// After a failed attempt: waits and returns `Ok` when another one is worth making,
    /// else the error to give up with.
    pub(super) async fn after(&self, failed: Failed) -> Result<(), StoreError> {
        if failed.passes && Instant::now() + RETRY_EVERY < self.deadline {
            tokio::time::sleep(RETRY_EVERY).await;
            Ok(())
        } else {
            Err(failed.error)
        }
    }
}

impl PgStore {
    /// A failed statement, told whether its cause passes.
    pub(super) fn failed(&self, e: tokio_postgres::Error) -> Failed {
        Failed {
            passes: passing(&e),
            error: self.fail(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_passing_failure_is_waited_for_until_the_patience_runs_out() {
        let patience = Patience::start();
        let began = Instant::now();
        let mut attempts = 1;
        let unreachable = || Failed::unreachable(StoreError::Unavailable("down".into()));
        while patience.after(unreachable()).await.is_ok() {
            attempts += 1;
        }
        assert_eq!(attempts, 60, "one attempt every 0.5 s for 30 s");
        assert!(began.elapsed() < RECORD_PATIENCE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_fails_at_once() {
        let patience = Patience::start();
        let began = Instant::now();
        let refused = Failed::from(StoreError::Refused("no".into()));
        let error = patience.after(refused).await.unwrap_err();
        assert_eq!(error.to_string(), "no");
        assert_eq!(began.elapsed(), Duration::ZERO);
    }
}
