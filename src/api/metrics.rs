//! `/metrics` in the Prometheus text format, written by hand (the format is a few lines
//! per family): counters and histograms the scheduler feeds through its
//! [`Observer`] seam, and gauges read from the store at scrape time; and the readiness
//! the scheduler's passes add up to. Counting is lock-free atomics (one short lock per
//! pass for readiness); it must never block or fail a run.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jobs::ledger::RunStatus;
use jobs::store::Store;
use jobs::{Context, JobState};

use crate::scheduler::Observer;

/// Upper bounds (seconds) of the fire-lateness buckets: on time is well under a second;
/// minutes mean a busy or sleeping host.
const LATENESS_BUCKETS: &[f64] = &[0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0];
/// Upper bounds (seconds) of the pass-duration buckets.
const PASS_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
/// The run outcomes counted, in the order they are shown.
const OUTCOMES: [RunStatus; 8] = [
    RunStatus::Ok,
    RunStatus::Error,
    RunStatus::Skipped,
    RunStatus::Missed,
    RunStatus::Interrupted,
    RunStatus::BudgetExceeded,
    RunStatus::BudgetExhausted,
    RunStatus::Cancelled,
];
const STATES: [JobState; 4] = [
    JobState::Scheduled,
    JobState::Paused,
    JobState::Completed,
    JobState::Error,
];

/// A histogram of durations: cumulative counts are computed when rendered.
struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, plus one for `+Inf`.
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        let slot = self
            .bounds
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, bound) in self.bounds.iter().enumerate() {
            cumulative += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.counts[self.bounds.len()].load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
    }
}

/// Failed passes in a row after which the daemon is not ready.
pub const FAILED_PASSES_UNREADY: u32 = 3;
/// The longest a ready daemon goes without ending a pass: the loop passes at least
/// once a minute, so three minutes means a pass that hangs.
pub const PASS_OVERDUE: Duration = Duration::from_secs(180);

/// The scheduler's recent passes, for readiness.
struct Passes {
    /// When the daemon started counting (no pass yet is fine for [`PASS_OVERDUE`]).
    since: Instant,
    last_ended: Option<Instant>,
    failed_in_a_row: u32,
    last_failure: Option<String>,
}

/// What this daemon counted since it started.
pub struct Metrics {
    /// Runs by outcome, in [`OUTCOMES`] order.
    runs: [AtomicU64; 8],
    /// Tokens and dollars by job and model.
    spend: super::spend_metrics::SpendCounters,
    lateness: Histogram,
    deliveries_failed: AtomicU64,
    pass: Histogram,
    /// Taken once per pass and per readiness check; never held across an await.
    passes: Mutex<Passes>,
}

impl Metrics {
    /// Counters whose per-job spend series stop at `job_series` jobs
    /// (`cron.metrics_job_series`); the rest are counted as `job="_other"`.
    pub fn with_job_series(job_series: usize) -> Metrics {
        Metrics {
            spend: super::spend_metrics::SpendCounters::with_job_series(job_series),
            ..Metrics::default()
        }
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            runs: Default::default(),
            spend: Default::default(),
            lateness: Histogram::new(LATENESS_BUCKETS),
            deliveries_failed: AtomicU64::new(0),
            pass: Histogram::new(PASS_BUCKETS),
            passes: Mutex::new(Passes {
                since: Instant::now(),
                last_ended: None,
                failed_in_a_row: 0,
                last_failure: None,
            }),
        }
    }
}

impl Observer for Metrics {
    fn run_ended(&self, status: &RunStatus) {
        if let Some(i) = OUTCOMES.iter().position(|o| o == status) {
            self.runs[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn fired_late(&self, lateness: Duration) {
        self.lateness.observe(lateness);
    }

    fn run_spent(&self, job: &str, model: &str, prompt: i64, completion: i64, cost: Option<f64>) {
        self.spend.add(job, model, prompt, completion, cost);
    }

    fn delivery_failed(&self) {
        self.deliveries_failed.fetch_add(1, Ordering::Relaxed);
    }

    fn pass_took(&self, elapsed: Duration) {
        self.pass.observe(elapsed);
    }

    fn pass_ended(&self, failure: Option<&str>) {
        let mut passes = self.lock_passes();
        passes.last_ended = Some(Instant::now());
        match failure {
            None => {
                passes.failed_in_a_row = 0;
                passes.last_failure = None;
            }
            Some(failure) => {
                passes.failed_in_a_row = passes.failed_in_a_row.saturating_add(1);
                passes.last_failure = Some(failure.to_string());
            }
        }
    }
}

impl Metrics {
    fn lock_passes(&self) -> std::sync::MutexGuard<'_, Passes> {
        self.passes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the scheduler is doing its work: `Err` with the reason when its last
    /// [`FAILED_PASSES_UNREADY`] passes failed, or none ended for [`PASS_OVERDUE`].
    pub fn readiness(&self) -> Result<(), String> {
        let passes = self.lock_passes();
        if passes.failed_in_a_row >= FAILED_PASSES_UNREADY {
            return Err(format!(
                "the last {} scheduler passes failed: {}",
                passes.failed_in_a_row,
                passes.last_failure.as_deref().unwrap_or("")
            ));
        }
        let since = passes.last_ended.unwrap_or(passes.since);
        if since.elapsed() > PASS_OVERDUE {
            return Err(format!(
                "no scheduler pass has ended for {} s",
                since.elapsed().as_secs()
            ));
        }
        Ok(())
    }

    /// The exposition text: the counters, then the gauges read from `store` now. A
    /// gauge the store cannot give is left out (and logged), never reported as zero.
    pub async fn render(&self, store: &dyn Store, ctx: &Context) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("# HELP hermes_cron_runs_total Runs and occurrences recorded by this daemon, by outcome.\n# TYPE hermes_cron_runs_total counter\n");
        for (i, outcome) in OUTCOMES.iter().enumerate() {
            let n = self.runs[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "hermes_cron_runs_total{{outcome=\"{}\"}} {n}",
                outcome.as_str()
            );
        }
        self.spend.render(&mut out);
        self.lateness.render(
            &mut out,
            "hermes_cron_fire_lateness_seconds",
            "How long after its due instant each scheduled run started.",
        );
        let failed = self.deliveries_failed.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP hermes_cron_deliveries_failed_total Deliveries that failed for good (not retried).\n# TYPE hermes_cron_deliveries_failed_total counter\nhermes_cron_deliveries_failed_total {failed}"
        );
        self.pass.render(
            &mut out,
            "hermes_cron_pass_duration_seconds",
            "How long one scheduler pass (decide, claim, start) took.",
        );
        match store.outbox_depth().await {
            Ok(depth) => {
                let _ = writeln!(out, "# HELP hermes_cron_outbox_depth Deliveries pending or being sent.\n# TYPE hermes_cron_outbox_depth gauge\nhermes_cron_outbox_depth {depth}");
            }
            Err(e) => tracing::warn!("metrics: cannot read the outbox depth: {e}"),
        }
        match jobs_by_state(store, ctx).await {
            Ok(counts) => {
                out.push_str("# HELP hermes_cron_jobs Jobs in the store, by state.\n# TYPE hermes_cron_jobs gauge\n");
                for (state, n) in counts {
                    let _ = writeln!(out, "hermes_cron_jobs{{state=\"{}\"}} {n}", state.as_str());
                }
            }
            Err(e) => tracing::warn!("metrics: cannot read the jobs: {e}"),
        }
        out
    }
}

/// How many jobs are in each state: from the few fields it takes where the store lists
/// fast (jobs.json), else counted by the store itself (a million rows in PostgreSQL are
/// never read for it).
async fn jobs_by_state(
    store: &dyn Store,
    ctx: &Context,
) -> Result<Vec<(JobState, usize)>, jobs::store::StoreError> {
    if store.listing().is_some() {
        let jobs = store
            .load_view(ctx, &["id", "state", "enabled", "paused_at"])
            .await?;
        return Ok(STATES
            .into_iter()
            .map(|state| (state, jobs.iter().filter(|j| j.state() == state).count()))
            .collect());
    }
    let mut counts = Vec::with_capacity(STATES.len());
    for state in STATES {
        let query = jobs::store::PageQuery {
            states: vec![state],
            ..jobs::store::PageQuery::count_all()
        };
        counts.push((state, store.job_page(ctx, &query).await?.total));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failed_passes_in_a_row_make_the_daemon_unready_and_one_success_ready() {
        let metrics = Metrics::default();
        assert_eq!(metrics.readiness(), Ok(()));
        metrics.pass_ended(Some("cannot read jobs.json"));
        metrics.pass_ended(Some("cannot read jobs.json"));
        assert_eq!(metrics.readiness(), Ok(()));
        metrics.pass_ended(Some("cannot read jobs.json: line 1"));
        assert_eq!(
            metrics.readiness(),
            Err("the last 3 scheduler passes failed: cannot read jobs.json: line 1".into())
        );
        metrics.pass_ended(None);
        assert_eq!(metrics.readiness(), Ok(()));
    }

    #[test]
    fn a_histogram_counts_cumulatively_with_an_infinite_bucket() {
        let h = Histogram::new(&[1.0, 5.0]);
        h.observe(Duration::from_millis(500));
        h.observe(Duration::from_secs(3));
        h.observe(Duration::from_secs(60));
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"1\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"5\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_sum 63.5\nx_count 3\n"), "{out}");
    }
}
