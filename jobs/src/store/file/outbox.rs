//! The file store's delivery outbox ([`Outbox`]): the `outbox` table of
//! `cron/executions.db`, on its own connection. It never creates the database to answer
//! a read.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::ledger::outbox::{NewOutboxItem, OutboxItem, OutboxState};
use crate::store::{Flight, Outbox, StoreError};

use super::{FileStore, Files};

impl Files {
    fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        self.with_outbox(|outbox| {
            if claimed {
                outbox.enqueue_claimed(item, &self.owner.host, self.owner.pid)
            } else {
                outbox.enqueue(item).map(|_| None)
            }
        })
    }

    fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.with_outbox(|outbox| outbox.claim_due(now, limit, &self.owner.host, self.owner.pid))
    }

    fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        self.with_outbox(|outbox| match flight {
            Flight::Out => outbox.request_going_out(id),
            Flight::Back { delivered } => outbox.answer_came_back(id, delivered),
        })
    }

    fn release_orphan_deliveries(&self, now: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        self.with_outbox(|outbox| outbox.release_orphans(&self.owner.host, &*self.alive, now))
    }

    fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.with_outbox(|outbox| outbox.finish(id, state, now, sent_parts, error))
    }

    fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        self.with_outbox(|outbox| outbox.open_for_occurrence(occurrence))
    }

    fn outbox_depth(&self) -> Result<usize, StoreError> {
        if !self.db_exists(&self.outbox, &self.db_path()) {
            return Ok(0);
        }
        self.with_outbox(crate::ledger::outbox::Outbox::depth)
    }

    fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.with_outbox(crate::ledger::outbox::Outbox::earliest_due)
    }

    fn delivery_state(&self, occurrence: &str, target: &str) -> Result<Option<String>, StoreError> {
        self.with_outbox(|outbox| outbox.state_of(occurrence, target))
    }
}

#[async_trait::async_trait]
impl Outbox for FileStore {
    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let item = OwnedItem::of(item);
        self.blocking(move |files| files.keep_delivery(&item.item(), claimed))
            .await
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.blocking(move |files| files.claim_deliveries(now, limit))
            .await
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        self.blocking(move |files| files.flight(id, flight)).await
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        self.blocking(move |files| files.release_orphan_deliveries(now))
            .await
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let error = error.map(str::to_string);
        self.blocking(move |files| {
            files.finish_delivery(id, state, now, sent_parts, error.as_deref())
        })
        .await
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        let occurrence = occurrence.to_string();
        self.blocking(move |files| files.open_deliveries(&occurrence))
            .await
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        self.blocking(Files::outbox_depth).await
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.blocking(Files::next_delivery_due).await
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        let (occurrence, target) = (occurrence.to_string(), target.to_string());
        self.blocking(move |files| files.delivery_state(&occurrence, &target))
            .await
    }
}

/// A [`NewOutboxItem`] that owns its texts, to cross to the blocking thread.
struct OwnedItem {
    occurrence: String,
    target: String,
    job_id: String,
    run_at: DateTime<Utc>,
    run_zone: Tz,
    payload: String,
    sent_parts: i64,
    error: String,
    now: DateTime<Utc>,
    first_retry: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl OwnedItem {
    fn of(item: &NewOutboxItem<'_>) -> OwnedItem {
        OwnedItem {
            occurrence: item.occurrence.to_string(),
            target: item.target.to_string(),
            job_id: item.job_id.to_string(),
            run_at: item.run_at,
            run_zone: item.run_zone,
            payload: item.payload.to_string(),
            sent_parts: item.sent_parts,
            error: item.error.to_string(),
            now: item.now,
            first_retry: item.first_retry,
            expires_at: item.expires_at,
        }
    }

    fn item(&self) -> NewOutboxItem<'_> {
        NewOutboxItem {
            occurrence: &self.occurrence,
            target: &self.target,
            job_id: &self.job_id,
            run_at: self.run_at,
            run_zone: self.run_zone,
            payload: &self.payload,
            sent_parts: self.sent_parts,
            error: &self.error,
            now: self.now,
            first_retry: self.first_retry,
            expires_at: self.expires_at,
        }
    }
}
