//! What a run reports it changed beyond its outcome ([`RunReports`]), recorded in the
//! store while the run goes on: a runner reads the store but never writes it.

use std::sync::Arc;

use jobs::fields::MonitorState;
use jobs::store::Store;
use jobs::{Context, Job};

use crate::runner::{MonitorChange, ReportFuture, RunReports};

/// [`RunReports`] over the scheduler's store, with the run's "now" and zones.
pub struct StoreReports {
    pub store: Arc<dyn Store>,
    pub ctx: Context,
}

impl RunReports for StoreReports {
    /// The snapshot, then the hash: a hash is never newer than its text. Failures are
    /// logged; the agent still gets the change.
    fn monitor_changed<'a>(&'a self, job: &'a Job, change: MonitorChange) -> ReportFuture<'a> {
        Box::pin(async move {
            if let Err(e) = self
                .store
                .save_monitor_snapshot(job.id(), &change.output)
                .await
            {
                tracing::warn!(job = job.id(), "cannot keep the monitor snapshot: {e}");
            }
            let ctx = self.ctx;
            let state = MonitorState {
                last_output_hash: change.hash,
                last_changed_at: Some(schedules::format_instant(ctx.now, job.zone(&ctx))),
            };
            let record: jobs::store::JobChange = Box::new(move |stored: &mut Job| {
                stored.set_monitor_state(Some(&state));
                Ok(())
            });
            if let Err(e) = self.store.update_job(&ctx, job.id(), record).await {
                tracing::warn!(job = job.id(), "cannot record the monitor state: {e}");
            }
        })
    }
}
