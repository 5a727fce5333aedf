//! The scheduler's one outward seam for counting what it does: an [`Observer`] is told
//! when a run ends, how late a fire started, when a delivery is given up, how long a
//! pass took and whether it failed. It only receives facts; it must never block, fail a
//! run or reach back into the scheduler. A scheduler without one (tests, `hermes cron
//! tick`) counts nothing.

use std::time::Duration;

use jobs::ledger::RunStatus;

/// Receives the scheduler's events (metrics). Calls come from any thread, often while a
/// run is being recorded: implementations are quick and lock-free or nearly so.
pub trait Observer: Send + Sync {
    /// A run or an occurrence reached its ledger outcome (`ok`, `error`, `skipped`,
    /// `missed`, `interrupted`, `budget_exceeded`, `budget_exhausted`).
    fn run_ended(&self, status: &RunStatus);
    /// A run of `job` answered by `model` used these tokens and cost this much (`None`:
    /// no known price). Told only of runs that reported usage.
    fn run_spent(&self, job: &str, model: &str, prompt: i64, completion: i64, cost: Option<f64>) {
        let _ = (job, model, prompt, completion, cost);
    }
    /// A scheduled occurrence started this long after the instant it was due.
    fn fired_late(&self, lateness: Duration);
    /// A delivery ended failed or expired: it will not be retried.
    fn delivery_failed(&self);
    /// One scheduler pass (decide, claim, spawn) took this long.
    fn pass_took(&self, elapsed: Duration);
    /// A pass ended: `None` when it succeeded, else why it failed (readiness).
    fn pass_ended(&self, _failure: Option<&str>) {}
}
