//! The file store's output documents and monitor snapshots ([`Outputs`]): one document
//! per run under `cron/output/<job_id>/`, the monitor's last output beside them. It never
//! names a path from an id that is not a safe file name.

use std::path::PathBuf;

use crate::jsonjobs::write_atomic;
use crate::ledger::output::{
    list_outputs, save_rendered, OutputDocument, RenderedOutput, MONITOR_SNAPSHOT_FILE,
};
use crate::model::job::is_safe_id;
use crate::store::{Outputs, StoreError};

use super::{io_unavailable, FileStore, Files};

impl Files {
    fn save_output(&self, doc: &RenderedOutput, keep: usize) -> Result<String, StoreError> {
        let path = save_rendered(&self.output_root(), doc, keep)?;
        Ok(path.display().to_string())
    }

    fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        if !is_safe_id(job_id) {
            return Ok(None);
        }
        let Some(newest) = list_outputs(&self.output_root().join(job_id)).pop() else {
            return Ok(None);
        };
        match std::fs::read_to_string(&newest) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_unavailable(&newest, e)),
        }
    }

    fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        if !is_safe_id(job_id) {
            return Ok(Vec::new());
        }
        let mut texts = Vec::new();
        for path in list_outputs(&self.output_root().join(job_id))
            .iter()
            .rev()
            .take(limit)
        {
            match std::fs::read_to_string(path) {
                Ok(text) => texts.push(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_unavailable(path, e)),
            }
        }
        Ok(texts)
    }

    /// Where a monitor job's snapshot lives: beside its documents, as Hermes 0.22 keeps it.
    fn monitor_snapshot_path(&self, job_id: &str) -> Result<PathBuf, StoreError> {
        if !is_safe_id(job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{job_id}' is not a safe file name"
            )));
        }
        Ok(self.output_root().join(job_id).join(MONITOR_SNAPSHOT_FILE))
    }

    fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let path = self.monitor_snapshot_path(job_id)?;
        match std::fs::read(&path) {
            // Hermes 0.22 reads it as `utf-8-sig`: a byte-order mark is not output.
            Ok(bytes) => Ok(Some(
                String::from_utf8_lossy(bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes))
                    .into_owned(),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_unavailable(&path, e)),
        }
    }

    fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let path = self.monitor_snapshot_path(job_id)?;
        write_atomic(&path, output.as_bytes()).map_err(StoreError::from)
    }

    fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(None);
        }
        let Some(location) = self.with_ledger(|ledger| ledger.output_of(run))? else {
            return Ok(None);
        };
        let text = location.and_then(|path| std::fs::read_to_string(path).ok());
        Ok(Some(text))
    }
}

#[async_trait::async_trait]
impl Outputs for FileStore {
    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        let doc = doc.rendered();
        self.blocking(move |files| files.save_output(&doc, keep))
            .await
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.latest_output(&job_id))
            .await
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.recent_outputs(&job_id, limit))
            .await
    }

    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.monitor_snapshot(&job_id))
            .await
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let (job_id, output) = (job_id.to_string(), output.to_string());
        self.blocking(move |files| files.save_monitor_snapshot(&job_id, &output))
            .await
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        self.blocking(move |files| files.run_output(run)).await
    }
}
