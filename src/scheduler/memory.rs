//! A run's state between runs, read and recorded for it ([`RunMemory`]): the runner
//! reports what it changed beyond its outcome, and this writes it to the store.

use std::sync::Arc;

use jobs::fields::MonitorState;
use jobs::store::Store;
use jobs::{Context, Job};

use crate::runner::{MemoryFuture, MonitorChange, RunMemory};

/// [`RunMemory`] over the scheduler's store, with the run's "now" and zones.
pub struct StoreMemory {
    pub store: Arc<dyn Store>,
    pub ctx: Context,
}

impl RunMemory for StoreMemory {
    fn monitor_snapshot<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, Option<String>> {
        Box::pin(async move {
            self.store
                .monitor_snapshot(job_id)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(job = job_id, "cannot read the monitor snapshot: {e}");
                    None
                })
        })
    }

    /// The snapshot, then the hash: a hash is never newer than its text. Failures are
    /// logged; the agent still gets the change.
    fn monitor_changed<'a>(&'a self, job: &'a Job, change: MonitorChange) -> MemoryFuture<'a, ()> {
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
