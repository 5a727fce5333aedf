//! The PostgreSQL store's delivery outbox ([`Outbox`]), shared by every host: a delivery
//! is claimed by one of them and never sent twice.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PgStore;
use crate::outbox::{retry_delay, NewOutboxItem, OutboxItem, OutboxState};
use crate::store::{Flight, Outbox, StoreError};

fn outbox_item(row: &Row) -> OutboxItem {
    OutboxItem {
        id: row.get("id"),
        occurrence: row.get("occurrence"),
        target: row.get("target"),
        job_id: row.get("job_id"),
        run_at: row.get("run_at"),
        payload: row.get("payload"),
        sent_parts: row.get("sent_parts"),
        attempts: row.get("attempts"),
        expires_at: row.get("expires_at"),
        last_error: row.get("last_error"),
    }
}

#[async_trait::async_trait]
impl Outbox for PgStore {
    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let state = if claimed {
            OutboxState::Sending
        } else {
            OutboxState::Pending
        };
        let claimer = claimed.then_some(self.instance.as_str());
        let error = Some(item.error).filter(|e| !e.is_empty());
        let run_at = item.run_at_text();
        let client = self.client().await?;
        let row = client
            .query_opt(
                "INSERT INTO hermes_cron_outbox (occurrence, target, job_id, run_at, payload,
                         state, sent_parts, attempts, created_at, next_attempt_at, expires_at,
                         last_error, claimed_instance)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10, $11, $12)
                     ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &item.occurrence,
                    &item.target,
                    &item.job_id,
                    &run_at,
                    &item.payload,
                    &state.as_str(),
                    &item.sent_parts,
                    &item.now,
                    &item.first_retry,
                    &item.expires_at,
                    &error,
                    &claimer,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get::<_, i64>(0)).filter(|_| claimed))
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        client
            .execute(
                "UPDATE hermes_cron_outbox SET state = 'expired', finished_at = $1
                     WHERE state = 'pending' AND expires_at <= $1",
                &[&now],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let rows = client
            .query(
                "UPDATE hermes_cron_outbox SET state = 'sending', attempts = attempts + 1,
                         claimed_instance = $3, in_flight = false
                     WHERE id IN (SELECT id FROM hermes_cron_outbox
                                  WHERE state = 'pending' AND next_attempt_at <= $1
                                  ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
                     RETURNING *",
                &[&now, &limit, &self.instance],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut items: Vec<OutboxItem> = rows.iter().map(outbox_item).collect();
        // The attempt just counted is this one; report it as the file store does.
        for item in &mut items {
            item.attempts -= 1;
        }
        items.sort_by_key(|item| item.id);
        Ok(items)
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        let client = self.client().await?;
        let result = match flight {
            Flight::Out => {
                client
                    .execute(
                        "UPDATE hermes_cron_outbox SET in_flight = true WHERE id = $1",
                        &[&id],
                    )
                    .await
            }
            Flight::Back { delivered } => {
                client
                    .execute(
                        "UPDATE hermes_cron_outbox SET in_flight = false,
                                 sent_parts = sent_parts + $2 WHERE id = $1",
                        &[&id, &i64::from(delivered)],
                    )
                    .await
            }
        };
        result.map(drop).map_err(|e| self.fail(e))
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        let client = self.client().await?;
        let live = self.live(&client).await?;
        let released = client
                .execute(
                    "UPDATE hermes_cron_outbox SET state = 'pending', next_attempt_at = $2
                     WHERE state = 'sending' AND NOT in_flight AND NOT (claimed_instance = ANY($1))",
                    &[&live, &now],
                )
                .await
                .map_err(|e| self.fail(e))?;
        let closed = client
                .execute(
                    "UPDATE hermes_cron_outbox SET state = 'failed', finished_at = $2, last_error =
                         'outcome unknown: the process sending it died while a request was out; not resent, to never post twice'
                     WHERE state = 'sending' AND in_flight AND NOT (claimed_instance = ANY($1))",
                    &[&live, &now],
                )
                .await
                .map_err(|e| self.fail(e))?;
        Ok((released as usize, closed as usize))
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let finished = (state != OutboxState::Pending).then_some(now);
        let client = self.client().await?;
        let attempts: i64 = client
            .query_opt(
                "SELECT attempts FROM hermes_cron_outbox WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(|e| self.fail(e))?
            .map_or(1, |r| r.get(0));
        let next = now + retry_delay(attempts - 1);
        client
            .execute(
                "UPDATE hermes_cron_outbox SET state = $2, sent_parts = $3,
                         last_error = COALESCE($4, last_error), next_attempt_at = $5,
                         finished_at = $6
                     WHERE id = $1",
                &[&id, &state.as_str(), &sent_parts, &error, &next, &finished],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        let count: i64 = self
            .scalar(
                "SELECT COUNT(*) FROM hermes_cron_outbox WHERE occurrence = $1
                         AND state IN ('pending', 'sending')",
                &[&occurrence],
            )
            .await?;
        Ok(count as usize)
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        let count: i64 = self
            .scalar(
                "SELECT COUNT(*) FROM hermes_cron_outbox WHERE state IN ('pending', 'sending')",
                &[],
            )
            .await?;
        Ok(count as usize)
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.scalar(
            "SELECT MIN(next_attempt_at) FROM hermes_cron_outbox WHERE state = 'pending'",
            &[],
        )
        .await
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT state FROM hermes_cron_outbox WHERE occurrence = $1 AND target = $2",
                &[&occurrence, &target],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }
}
