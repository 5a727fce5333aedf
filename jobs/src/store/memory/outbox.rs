//! The memory store's delivery outbox ([`Outbox`]): the never-twice states of the file
//! store's, in memory.

use chrono::{DateTime, Utc};

use crate::ledger::outbox::{retry_delay, NewOutboxItem, OutboxItem, OutboxState};
use crate::store::{Flight, Outbox, StoreError};

use super::{Delivery, MemoryStore};

#[async_trait::async_trait]
impl Outbox for MemoryStore {
    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let mut inner = self.lock();
        let taken = inner
            .deliveries
            .iter()
            .any(|d| d.item.occurrence == item.occurrence && d.item.target == item.target);
        if taken {
            return Ok(None);
        }
        let id = inner.deliveries.last().map_or(1, |d| d.item.id + 1);
        inner.deliveries.push(Delivery {
            item: OutboxItem {
                id,
                occurrence: item.occurrence.to_string(),
                target: item.target.to_string(),
                job_id: item.job_id.to_string(),
                run_at: Some(item.run_at_text()),
                payload: item.payload.to_string(),
                sent_parts: item.sent_parts,
                attempts: 1,
                expires_at: item.expires_at,
                last_error: Some(item.error.to_string()).filter(|e| !e.is_empty()),
            },
            state: if claimed {
                OutboxState::Sending
            } else {
                OutboxState::Pending
            },
            next_attempt_at: item.first_retry,
            created_at: item.now,
            claimed_pid: claimed.then_some(self.owner.pid),
            in_flight: false,
        });
        Ok(claimed.then_some(id))
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let mut inner = self.lock();
        let mut claimed = Vec::new();
        for d in inner.deliveries.iter_mut() {
            if d.state != OutboxState::Pending {
                continue;
            }
            if d.item.expires_at <= now {
                d.state = OutboxState::Expired;
            } else if d.next_attempt_at <= now && claimed.len() < limit {
                d.state = OutboxState::Sending;
                d.item.attempts += 1;
                d.claimed_pid = Some(self.owner.pid);
                d.in_flight = false;
                claimed.push(d.item.clone());
            }
        }
        Ok(claimed)
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        if let Some(d) = self.lock().delivery(id) {
            match flight {
                Flight::Out => d.in_flight = true,
                Flight::Back { delivered } => {
                    d.in_flight = false;
                    d.item.sent_parts += i64::from(delivered);
                }
            }
        }
        Ok(())
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        let mut inner = self.lock();
        let dead = inner.dead.clone();
        let (mut released, mut closed) = (0, 0);
        for d in inner.deliveries.iter_mut() {
            let orphan = d.state == OutboxState::Sending
                && d.claimed_pid.is_some_and(|pid| dead.contains(&pid));
            if !orphan {
                continue;
            }
            if d.in_flight {
                d.state = OutboxState::Failed;
                d.item.last_error = Some(
                    "outcome unknown: the process sending it died while a request was out; not resent, to never post twice".into(),
                );
                closed += 1;
            } else {
                d.state = OutboxState::Pending;
                d.next_attempt_at = now;
                released += 1;
            }
        }
        Ok((released, closed))
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        if let Some(d) = self.lock().delivery(id) {
            d.state = state;
            d.item.sent_parts = sent_parts;
            if let Some(error) = error {
                d.item.last_error = Some(error.to_string());
            }
            d.next_attempt_at = now + retry_delay(d.item.attempts - 1);
        }
        Ok(())
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| d.item.occurrence == occurrence)
            .filter(|d| matches!(d.state, OutboxState::Pending | OutboxState::Sending))
            .count())
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| matches!(d.state, OutboxState::Pending | OutboxState::Sending))
            .count())
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .filter(|d| d.state == OutboxState::Pending)
            .map(|d| d.next_attempt_at)
            .min())
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .deliveries
            .iter()
            .find(|d| d.item.occurrence == occurrence && d.item.target == target)
            .map(|d| d.state.as_str().to_string()))
    }
}
