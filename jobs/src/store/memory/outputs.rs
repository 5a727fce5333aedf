//! The memory store's output documents and monitor snapshots ([`Outputs`]).

use crate::ledger::output::OutputDocument;
use crate::store::{Outputs, StoreError};

use super::MemoryStore;

#[async_trait::async_trait]
impl Outputs for MemoryStore {
    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        if !crate::model::job::is_safe_id(doc.job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{}' is not a safe file name",
                doc.job_id
            )));
        }
        let mut inner = self.lock();
        let documents = inner.outputs.entry(doc.job_id.to_string()).or_default();
        let stamp = doc.file_stem();
        let mut name = format!("{stamp}.md");
        let mut n = 1;
        while documents.contains_key(&name) {
            name = format!("{stamp}-{n}.md");
            n += 1;
        }
        documents.insert(name.clone(), doc.render());
        while documents.len() > keep.max(1) {
            documents.pop_first();
        }
        Ok(format!("memory:{}/{name}", doc.job_id))
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .outputs
            .get(job_id)
            .and_then(|docs| docs.values().next_back().cloned()))
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        Ok(self
            .lock()
            .outputs
            .get(job_id)
            .map(|docs| docs.values().rev().take(limit).cloned().collect())
            .unwrap_or_default())
    }

    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.lock().monitor_snapshots.get(job_id).cloned())
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        self.lock()
            .monitor_snapshots
            .insert(job_id.to_string(), output.to_string());
        Ok(())
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        let inner = self.lock();
        let Some(row) = inner.runs.iter().find(|r| r.id == run) else {
            return Ok(None);
        };
        let text = inner.run_outputs.get(&row.id).and_then(|location| {
            let (job, name) = location.strip_prefix("memory:")?.split_once('/')?;
            inner.outputs.get(job)?.get(name).cloned()
        });
        Ok(Some(text))
    }
}
