//! The memory store's failure incidents and job notepads ([`Notes`]), by the rules of
//! [`crate::ledger::incident`] and [`crate::ledger::notepad`].

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::ledger::incident::{self, Incident, IncidentState, NewIncident, Transition};
use crate::ledger::notepad::{self, Note};
use crate::store::{Notes, StoreError};

use super::MemoryStore;

#[async_trait::async_trait]
impl Notes for MemoryStore {
    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        let mut inner = self.lock();
        let incident = incident::upserted(inner.incidents.get(&new.id), new);
        inner.incidents.insert(new.id.clone(), incident.clone());
        Ok(incident)
    }

    async fn move_incident(
        &self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let moved = inner
            .incidents
            .get(id)
            .and_then(|current| incident::moved(current, to, at, zone));
        Ok(moved
            .map(|incident| inner.incidents.insert(id.to_string(), incident))
            .is_some())
    }

    async fn resolve_incidents(
        &self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let mut n = 0;
        for current in inner.incidents.values_mut().filter(|i| i.job_id == job_id) {
            if let Some(resolved) = incident::moved(current, Transition::Recovered, at, zone) {
                *current = resolved;
                n += 1;
            }
        }
        Ok(n)
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        let mut incidents: Vec<Incident> = self
            .lock()
            .incidents
            .values()
            .filter(|i| state.is_none_or(|s| i.state == s.as_str()))
            .cloned()
            .collect();
        incident::sort_newest_first(&mut incidents);
        Ok(incidents)
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        let inner = self.lock();
        let notes = inner.notes.get(job_id).into_iter().flat_map(|n| n.values());
        Ok(notes.cloned().collect())
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let notes = inner.notes.entry(note.job_id.clone()).or_default();
        let others = notes
            .values()
            .filter(|n| n.key != note.key)
            .map(Note::bytes)
            .sum();
        notepad::check(note, others).map_err(|e| StoreError::Refused(e.to_string()))?;
        notes.insert(note.key.clone(), note.clone());
        Ok(())
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let removed = inner.notes.get_mut(job_id).and_then(|n| n.remove(key));
        Ok(removed.is_some())
    }
}
