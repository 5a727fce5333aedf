//! Overlap: what a job's `overlap` policy does when an occurrence comes due while its
//! previous run goes on (docs/SCHEDULES.md, "Overlap"). The pass decides it with the
//! store ([`jobs::store`]: `skip` records the occurrence `skipped`, `queue` records it
//! queued, `replace` claims it as any fire); this file carries out the two that act:
//!
//! * `replace` — the new run asks the job's other running runs to stop (the cancel
//!   mark of [`super::cancel`], so a run on another host stops too) and waits for them
//!   to be recorded `cancelled` before it starts;
//! * `queue` — when a run ends, the process that ran it starts the newest occurrence
//!   queued during it, under that occurrence's own ledger row (taken once on the
//!   store); older ones queued meanwhile are marked superseded: never more than one
//!   waits.

use std::sync::Arc;
use std::time::Duration;

use jobs::ledger::{CancelTarget, RunSource, RunStatus};
use jobs::overlap::Overlap;

use super::execute::ClaimedRun;
use super::settings::CronSettings;
use super::{lock, RunReport, Scheduler};

/// How long a replacing run waits for the runs it replaces to be recorded.
const REPLACED_WITHIN: Duration = Duration::from_secs(10);
const LOOK_EVERY: Duration = Duration::from_millis(200);

impl Scheduler {
    /// Runs one claimed occurrence, then — under `overlap: queue` — the occurrences
    /// queued while it ran, one after the other. The last run's report.
    pub async fn execute(self: Arc<Self>, claimed: ClaimedRun) -> RunReport {
        let job_id = claimed.job.id().to_string();
        let queue = claimed.job.overlap() == Overlap::Queue;
        let settings = claimed.settings.clone();
        let mut after = claimed.run;
        let mut report = Arc::clone(&self).execute_one(claimed).await;
        if !queue {
            return report;
        }
        while let Some(next) = self.next_queued(&job_id, after, &settings).await {
            after = next.run;
            report = Arc::clone(&self).execute_one(next).await;
        }
        report
    }

    /// The newest occurrence queued since run `after` began, taken to run now.
    async fn next_queued(
        &self,
        job_id: &str,
        after: i64,
        settings: &CronSettings,
    ) -> Option<ClaimedRun> {
        let (ctx, _) = self.context().ok()?;
        let (run, scheduled_at) = match self.store().take_queued(job_id, after, ctx.now).await {
            Ok(taken) => taken?,
            Err(e) => {
                tracing::warn!(job = %job_id, "cannot look for a queued occurrence: {e}");
                return None;
            }
        };
        let job = match self.store().get_job(&ctx, job_id).await {
            Ok(Some(job)) => job,
            found => {
                // Removed meanwhile (or unreadable): the taken row says why it did not run.
                let why = match found {
                    Err(e) => format!("queued occurrence not run: cannot read the job: {e}"),
                    _ => "queued occurrence not run: the job was removed".to_string(),
                };
                let end = jobs::ledger::RunEnd {
                    error: Some(why),
                    ..Default::default()
                };
                let _ = self
                    .store()
                    .finish_run(run, RunStatus::Skipped, ctx.now, &end)
                    .await;
                return None;
            }
        };
        tracing::info!(job = %job_id, run, "running the occurrence queued during the last run (overlap: queue)");
        lock(&self.running).insert(job_id.to_string());
        Some(ClaimedRun {
            job,
            scheduled_at: Some(scheduled_at),
            claimed_at: ctx.now,
            run,
            source: RunSource::Scheduler,
            upstream: None,
            settings: settings.clone(),
            queued: self.enqueue(),
            replay_of: None,
        })
    }

    /// Under `overlap: replace`: asks the job's other running runs to stop and waits
    /// (up to 10 s) for them to be recorded, so the new run starts alone.
    pub(super) async fn replace_running(&self, claimed: &ClaimedRun) {
        if claimed.source != RunSource::Scheduler || claimed.job.overlap() != Overlap::Replace {
            return;
        }
        let job_id = claimed.job.id();
        let open = |rows: &[jobs::ledger::RunRow]| -> Vec<i64> {
            rows.iter()
                .filter(|r| r.id != claimed.run && r.status.is_open())
                .map(|r| r.id)
                .collect()
        };
        let rows = self
            .store()
            .recent_runs(Some(job_id), 50)
            .await
            .unwrap_or_default();
        let replaced = open(&rows);
        if replaced.is_empty() {
            return;
        }
        for id in &replaced {
            if let Err(e) = self
                .store()
                .request_cancel(CancelTarget::Run(*id), self.now())
                .await
            {
                tracing::warn!(job = %job_id, run = id, "cannot cancel the replaced run: {e}");
            }
        }
        tracing::info!(job = %job_id, replaced = ?replaced, "replacing the running run (overlap: replace)");
        let deadline = tokio::time::Instant::now() + REPLACED_WITHIN;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(LOOK_EVERY).await;
            let rows = self
                .store()
                .recent_runs(Some(job_id), 50)
                .await
                .unwrap_or_default();
            if open(&rows).iter().all(|id| !replaced.contains(id)) {
                return;
            }
        }
        tracing::warn!(job = %job_id, "the replaced run is not recorded stopped after 10 s; starting the new one anyway");
    }
}
