//! The store as a run sees it ([`StoreReads`]): what the prompt and a monitor draw on
//! from earlier runs, and nothing that writes. What a run changes beyond its outcome it
//! reports through [`crate::RunReports`]; the scheduler records it.

use std::collections::HashMap;
use std::sync::Arc;

use jobs::notepad::Note;
use jobs::store::Store;
use jobs::{Context, StoreError};

/// Read-only access to the scheduler's store for one run.
#[derive(Clone)]
pub struct StoreReads(Arc<dyn Store>);

impl StoreReads {
    pub fn new(store: Arc<dyn Store>) -> StoreReads {
        StoreReads(store)
    }

    /// The job's notepad.
    pub async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        self.0.notes(job_id).await
    }

    /// A finished run's output document: `None` for no such run, `Some(None)` for a
    /// run that left none.
    pub async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        self.0.run_output(run).await
    }

    /// The names of all jobs by id.
    pub async fn job_names(&self, ctx: &Context) -> Result<HashMap<String, String>, StoreError> {
        let jobs = self.0.load_view(ctx, &["id", "name"]).await?;
        Ok(jobs
            .into_iter()
            .map(|job| (job.id().to_string(), job.name().to_string()))
            .collect())
    }

    /// A job's newest output document.
    pub async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        self.0.latest_output(job_id).await
    }

    /// A job's newest output documents, newest first, at most `limit`.
    pub async fn recent_outputs(
        &self,
        job_id: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.0.recent_outputs(job_id, limit).await
    }

    /// The output a monitor job saw when it last changed.
    pub async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        self.0.monitor_snapshot(job_id).await
    }
}
