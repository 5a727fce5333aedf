//! The file store's failure incidents (in `cron/executions.db`) and job notepads (in
//! `cron/notepad.db`) ([`Notes`]). It never creates either database to answer a read.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::ledger::incident::{Incident, IncidentState, NewIncident, Transition};
use crate::ledger::notepad::{Note, NoteWriteError, NotepadBook};
use crate::store::{Notes, StoreError};

use super::{FileStore, Files};

impl Files {
    fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        if !self.db_exists(&self.incidents, &self.db_path()) {
            return Ok(Vec::new());
        }
        self.with_incidents(|book| book.list(state))
    }

    fn resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError> {
        if !self.db_exists(&self.incidents, &self.db_path()) {
            return Ok(0);
        }
        self.with_incidents(|book| book.resolve_job(job_id, at, zone))
    }

    fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        if !self.db_exists(&self.notepad, &self.notepad_path()) {
            return Ok(Vec::new());
        }
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.list(job_id).map_err(StoreError::from)
        })
    }

    fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.set(note).map_err(|e| match e {
                NoteWriteError::Refused(e) => StoreError::Refused(e.to_string()),
                NoteWriteError::Database(e) => e.into(),
            })
        })
    }

    fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        if !self.db_exists(&self.notepad, &self.notepad_path()) {
            return Ok(false);
        }
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.delete(job_id, key).map_err(StoreError::from)
        })
    }
}

#[async_trait::async_trait]
impl Notes for FileStore {
    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        let new = new.clone();
        self.blocking(move |files| files.with_incidents(|book| book.record(&new)))
            .await
    }

    async fn move_incident(
        &self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.blocking(move |files| files.with_incidents(|book| book.move_one(&id, to, at, zone)))
            .await
    }

    async fn resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.resolve_incidents(&job_id, at, zone))
            .await
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        self.blocking(move |files| files.incidents(state)).await
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.notes(&job_id)).await
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        let note = note.clone();
        self.blocking(move |files| files.set_note(&note)).await
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        let (job_id, key) = (job_id.to_string(), key.to_string());
        self.blocking(move |files| files.delete_note(&job_id, &key))
            .await
    }
}
