//! The PostgreSQL store's output documents and monitor snapshots ([`Outputs`]), in the
//! database so every host reads what another saved.

use deadpool_postgres::GenericClient;

use super::patience::{Failed, Patience};
use super::PgStore;
use crate::job::is_safe_id;
use crate::output::{OutputDocument, MONITOR_SNAPSHOT_FILE};
use crate::store::{Outputs, StoreError};

#[async_trait::async_trait]
impl Outputs for PgStore {
    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        if !is_safe_id(doc.job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{}' is not a safe file name",
                doc.job_id
            )));
        }
        let stem = doc.file_stem();
        let body = doc.render();
        let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
        // A run's output is kept through a failover, as its ledger row is (patience.rs).
        let patience = Patience::start();
        let name = loop {
            match self.try_save_output(doc.job_id, &stem, &body, keep).await {
                Ok(name) => break name,
                Err(failed) => patience.after(failed).await?,
            }
        };
        Ok(format!("postgresql:output/{}/{name}", doc.job_id))
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     ORDER BY name DESC LIMIT 1",
                &[&job_id],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     ORDER BY name DESC LIMIT $2",
                &[&job_id, &limit],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    // The snapshot is a row of the documents' table under its file's name, which no
    // document has (documents end in `.md`): removed with the job's documents, never
    // counted among them.
    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name = $2",
                &[&job_id, &MONITOR_SNAPSHOT_FILE],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO hermes_cron_outputs (job_id, name, body) VALUES ($1, $2, $3)
                     ON CONFLICT (job_id, name) DO UPDATE SET body = EXCLUDED.body",
                &[&job_id, &MONITOR_SNAPSHOT_FILE, &output],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        let client = self.client().await?;
        let Some(row) = client
            .query_opt("SELECT output FROM hermes_cron_runs WHERE id = $1", &[&run])
            .await
            .map_err(|e| self.fail(e))?
        else {
            return Ok(None);
        };
        let location: Option<String> = row.get(0);
        let Some((job, name)) = location
            .as_deref()
            .and_then(|l| l.strip_prefix("postgresql:output/"))
            .and_then(|l| l.split_once('/'))
        else {
            return Ok(Some(None));
        };
        let body = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name = $2",
                &[&job, &name],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(Some(body.map(|r| r.get(0))))
    }
}

impl PgStore {
    /// One attempt at [`Outputs::save_output`]: the document under the first free name
    /// of its stem (`-1`, `-2`, … after the first), then the oldest beyond `keep` pruned.
    /// A name that already holds this very body is this document, saved by an attempt
    /// whose answer was lost, so trying again never saves it twice.
    async fn try_save_output(
        &self,
        job_id: &str,
        stem: &str,
        body: &str,
        keep: i64,
    ) -> Result<String, Failed> {
        let client = self.client().await.map_err(Failed::unreachable)?;
        let mut n = 0;
        let name = loop {
            let name = match n {
                0 => format!("{stem}.md"),
                n => format!("{stem}-{n}.md"),
            };
            let inserted = client
                .execute(
                    "INSERT INTO hermes_cron_outputs (job_id, name, body) VALUES ($1, $2, $3)
                         ON CONFLICT (job_id, name) DO UPDATE SET body = EXCLUDED.body
                         WHERE hermes_cron_outputs.body = EXCLUDED.body",
                    &[&job_id, &name, &body],
                )
                .await
                .map_err(|e| self.failed(e))?;
            if inserted == 1 {
                break name;
            }
            n += 1;
        };
        client
            .execute(
                "DELETE FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     AND name NOT IN (
                         SELECT name FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                         ORDER BY name DESC LIMIT $2)",
                &[&job_id, &keep],
            )
            .await
            .map_err(|e| self.failed(e))?;
        Ok(name)
    }
}
