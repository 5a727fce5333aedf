//! The PostgreSQL store's failure incidents and job notepads ([`Notes`]): the same
//! tables as on a Hermes home (`hermes_cron_incidents`, `hermes_cron_notepad`), in the
//! database every host shares, so an incident alerted by one host stays quiet on all. The
//! rules are [`crate::incident`]'s and [`crate::notepad`]'s; this file only reads and
//! writes rows, each change in one transaction.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PgStore;
use crate::incident;
use crate::incident::{Incident, IncidentState, NewIncident, Transition};
use crate::notepad;
use crate::notepad::Note;
use crate::store::{Notes, StoreError};

const COLUMNS: &str = "id, job_id, error_sig, state, failure_type, first_seen_at, last_seen_at, \
    acked_at, alerted_at, closed_at, error, output_file";

/// Serialises the changes to one incident across hosts (with the incident id's hash):
/// a new incident has no row to lock yet.
const INCIDENT_LOCK: i32 = 4861058;

fn incident_of(row: &Row) -> Incident {
    Incident {
        id: row.get("id"),
        job_id: row.get("job_id"),
        error_sig: row.get("error_sig"),
        state: row.get("state"),
        failure_type: row.get("failure_type"),
        first_seen_at: row.get("first_seen_at"),
        last_seen_at: row.get("last_seen_at"),
        acked_at: row.get("acked_at"),
        alerted_at: row.get("alerted_at"),
        closed_at: row.get("closed_at"),
        error: row.get("error"),
        output_file: row.get("output_file"),
    }
}

fn note_of(row: &Row) -> Note {
    Note {
        job_id: row.get("job_id"),
        key: row.get("key"),
        value: row.get("value"),
        updated_at: row.get("updated_at"),
    }
}

#[async_trait::async_trait]
impl Notes for PgStore {
    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        self.pg_record_incident(new).await
    }

    async fn move_incident(
        &self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, StoreError> {
        self.pg_move_incident(id, to, at, zone).await
    }

    async fn resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError> {
        self.pg_resolve_incidents(job_id, at, zone).await
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        self.pg_incidents(state).await
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        self.pg_notes(job_id).await
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        self.pg_set_note(note).await
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        self.pg_delete_note(job_id, key).await
    }
}

impl PgStore {
    /// Applies `change` to the incidents `filter` (on `$1` = `param`) selects, locked,
    /// in one transaction, and writes back the ones it returns.
    async fn change_incidents(
        &self,
        filter: &str,
        param: &str,
        change: &mut (dyn FnMut(Vec<Incident>) -> Vec<Incident> + Send),
    ) -> Result<Vec<Incident>, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        if filter == "id = $1" {
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&INCIDENT_LOCK, &param],
            )
            .await
            .map_err(|e| self.fail(e))?;
        }
        let rows = tx
            .query(
                &format!("SELECT {COLUMNS} FROM hermes_cron_incidents WHERE {filter} FOR UPDATE"),
                &[&param],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let changed = change(rows.iter().map(incident_of).collect());
        for i in &changed {
            tx.execute(
                &format!(
                    "INSERT INTO hermes_cron_incidents ({COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                     ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                         last_seen_at = excluded.last_seen_at, acked_at = excluded.acked_at,
                         alerted_at = excluded.alerted_at, closed_at = excluded.closed_at,
                         error = excluded.error, output_file = excluded.output_file"
                ),
                &[
                    &i.id,
                    &i.job_id,
                    &i.error_sig,
                    &i.state,
                    &i.failure_type,
                    &i.first_seen_at,
                    &i.last_seen_at,
                    &i.acked_at,
                    &i.alerted_at,
                    &i.closed_at,
                    &i.error,
                    &i.output_file,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(changed)
    }

    pub(super) async fn pg_record_incident(
        &self,
        new: &NewIncident,
    ) -> Result<Incident, StoreError> {
        let changed = self
            .change_incidents("id = $1", &new.id, &mut |rows| {
                vec![incident::upserted(rows.first(), new)]
            })
            .await?;
        changed
            .into_iter()
            .next()
            .ok_or_else(|| self.fail("the incident was not written"))
    }

    pub(super) async fn pg_move_incident(
        &self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, StoreError> {
        let changed = self
            .change_incidents("id = $1", id, &mut |rows| {
                rows.iter()
                    .filter_map(|i| incident::moved(i, to, at, zone))
                    .collect()
            })
            .await?;
        Ok(!changed.is_empty())
    }

    pub(super) async fn pg_resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError> {
        let open = "job_id = $1 AND state IN ('detected', 'alerted')";
        let any: bool = self
            .scalar(
                &format!("SELECT EXISTS (SELECT 1 FROM hermes_cron_incidents WHERE {open})"),
                &[&job_id],
            )
            .await?;
        if !any {
            return Ok(0);
        }
        let changed = self
            .change_incidents(open, job_id, &mut |rows| {
                rows.iter()
                    .filter_map(|i| incident::moved(i, Transition::Recovered, at, zone))
                    .collect()
            })
            .await?;
        Ok(changed.len())
    }

    pub(super) async fn pg_incidents(
        &self,
        state: Option<IncidentState>,
    ) -> Result<Vec<Incident>, StoreError> {
        let client = self.client().await?;
        let state = state.map(IncidentState::as_str);
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM hermes_cron_incidents
                     WHERE $1::text IS NULL OR state = $1"
                ),
                &[&state],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut incidents: Vec<Incident> = rows.iter().map(incident_of).collect();
        incident::sort_newest_first(&mut incidents);
        Ok(incidents)
    }

    pub(super) async fn pg_notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT job_id, key, value, updated_at FROM hermes_cron_notepad
                 WHERE job_id = $1 ORDER BY key",
                &[&job_id],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(note_of).collect())
    }

    pub(super) async fn pg_set_note(&self, note: &Note) -> Result<(), StoreError> {
        let refused = |e: notepad::NotepadError| StoreError::Refused(e.to_string());
        notepad::check(note, 0).map_err(refused)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        // The job's other entries, locked, so two writers cannot both squeeze in.
        let rows = tx
            .query(
                "SELECT octet_length(key) + octet_length(value) FROM hermes_cron_notepad
                 WHERE job_id = $1 AND key <> $2 FOR UPDATE",
                &[&note.job_id, &note.key],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let others: i64 = rows.iter().map(|r| i64::from(r.get::<_, i32>(0))).sum();
        notepad::check(note, usize::try_from(others).unwrap_or(usize::MAX)).map_err(refused)?;
        tx.execute(
            "INSERT INTO hermes_cron_notepad (job_id, key, value, updated_at)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (job_id, key) DO UPDATE SET value = excluded.value,
                 updated_at = excluded.updated_at",
            &[&note.job_id, &note.key, &note.value, &note.updated_at],
        )
        .await
        .map_err(|e| self.fail(e))?;
        tx.commit().await.map_err(|e| self.fail(e))
    }

    pub(super) async fn pg_delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM hermes_cron_notepad WHERE job_id = $1 AND key = $2",
                &[&job_id, &key],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// A job's notepad goes with it (called in the removal's transaction).
    pub(super) async fn pg_clear_notes(
        &self,
        tx: &impl GenericClient,
        job_id: &str,
    ) -> Result<(), StoreError> {
        tx.execute(
            "DELETE FROM hermes_cron_notepad WHERE job_id = $1",
            &[&job_id],
        )
        .await
        .map_err(|e| self.fail(e))?;
        Ok(())
    }
}
