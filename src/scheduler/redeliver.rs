//! Redeliver: deliveries that failed for a reason that may pass (connection refused,
//! 429, 5xx) are retried on later passes until their window closes. A claimed row is
//! sent by this process only; rows a dead process left behind are given back when
//! nothing was in flight, closed as unknown when a request was (never posted twice).

use std::sync::Arc;

use chrono::{DateTime, Utc};

use jobs::ledger::RunStatus;
use jobs::outbox::{OutboxItem, OutboxState};

use super::{RunReport, Scheduler};
use crate::delivery::http::{self, Failure};
use crate::delivery::target::Destination;
use crate::delivery::HomeFiles;
use crate::world::World;

/// Outbox deliveries retried per pass, at most.
const OUTBOX_PER_PASS: usize = 50;

impl Scheduler {
    /// Gives back rows of dead processes, then claims the retries due now. Returns them
    /// and when the earliest pending one is due.
    pub(super) async fn claim_redeliveries(
        &self,
        now: DateTime<Utc>,
    ) -> (Vec<OutboxItem>, Option<DateTime<Utc>>) {
        let store = self.store();
        match store.release_orphan_deliveries(now).await {
            Ok((0, 0)) => {}
            Ok((released, closed)) => tracing::warn!(
                released,
                closed,
                "outbox rows left by a dead process: given back when nothing was in flight, closed as unknown when a request was"
            ),
            Err(e) => tracing::error!("cannot check the outbox for rows of dead processes: {e}"),
        }
        let claimed = store
            .claim_deliveries(now, OUTBOX_PER_PASS)
            .await
            .unwrap_or_else(|e| {
                tracing::error!("cannot read the delivery outbox: {e}");
                Vec::new()
            });
        let next = store.next_delivery_due().await.ok().flatten();
        (claimed, next)
    }

    /// Retries one claimed delivery and records the outcome: in the outbox, and — when
    /// it was the last open delivery of the job's last run — in the job, whose
    /// `delivery_failed` becomes `ok` with the delivery error cleared.
    pub(super) async fn redeliver(self: Arc<Self>, item: OutboxItem) -> RunReport {
        let skip = usize::try_from(item.sent_parts).unwrap_or(0);
        // A config.yaml that cannot be read leaves webhooks the public addresses only.
        let world = match self.loaded() {
            Ok((_, _, world)) => world,
            Err(_) => Arc::new(World::without_config(&self.parts.home)),
        };
        let files = HomeFiles {
            environment: &world.environment,
            redactor: &world.redactor,
            config: &world.config,
        };
        // Every request is marked in the row while it is out, so a crash mid-retry
        // leaves a row another pass can tell apart: given back, or unknown.
        let result = http::recording_flights(
            self.flight_recorder(item.id),
            self.parts
                .delivery
                .retry(files, &item.target, &item.payload, skip),
        )
        .await;
        self.finish_redelivery(item, result).await
    }

    async fn finish_redelivery(
        &self,
        item: OutboxItem,
        result: Result<(), (Failure, usize)>,
    ) -> RunReport {
        let now = self.now();
        let shown = Destination::from_key(&item.target)
            .map_or_else(|| item.target.clone(), |d| crate::delivery::shown(&d));
        let (state, parts, error) = match &result {
            Ok(()) => (OutboxState::Sent, item.sent_parts, None),
            Err((Failure::Transient(m), n)) if now < item.expires_at => {
                (OutboxState::Pending, *n as i64, Some(m.clone()))
            }
            Err((Failure::Transient(m), n)) => (OutboxState::Expired, *n as i64, Some(m.clone())),
            Err((Failure::Final(m) | Failure::Unknown(m), n)) => {
                (OutboxState::Failed, *n as i64, Some(m.clone()))
            }
        };
        if matches!(state, OutboxState::Failed | OutboxState::Expired) {
            self.observe(|o| o.delivery_failed());
        }
        let store = self.store();
        if let Err(e) = store
            .finish_delivery(item.id, state, now, parts, error.as_deref())
            .await
        {
            tracing::error!(job = %item.job_id, "cannot record the delivery retry: {e}");
        }
        let settled = state == OutboxState::Sent
            && store.open_deliveries(&item.occurrence).await.unwrap_or(1) == 0;
        tracing::info!(
            job = %item.job_id, occurrence = %item.occurrence, target = %shown,
            outcome = state.as_str(), error = error.as_deref().unwrap_or(""),
            "delivery retried from the outbox"
        );
        if settled {
            self.clear_delivery_failure(&item).await;
        }
        RunReport {
            job_id: item.job_id.clone(),
            job_name: format!("delivery retry to {shown}"),
            occurrence: item.occurrence.clone(),
            status: if state == OutboxState::Sent {
                RunStatus::Ok
            } else {
                RunStatus::Error
            },
            error,
            output: None,
            response: None,
            delivery: None,
        }
    }

    /// `delivery_failed` → `ok` for the job whose last run this delivery belonged to.
    async fn clear_delivery_failure(&self, item: &OutboxItem) {
        let Ok((ctx, _)) = self.context() else {
            return;
        };
        let instant = |text: &str| DateTime::parse_from_rfc3339(text).ok();
        let kept_run = item.run_at.as_deref().and_then(instant);
        let job_id = item.job_id.clone();
        let applies = move |job: &jobs::Job| {
            job.id() == job_id
                && job.last_status() == Some(RunStatus::DeliveryFailed)
                && job.text_field("last_run_at").and_then(instant) == kept_run
        };
        // Decide on an unlocked read first: most retries have nothing to change.
        let store = self.store();
        let Ok(Some(job)) = store.get_job(&ctx, &item.job_id).await else {
            return;
        };
        if !applies(&job) {
            return;
        }
        let ids = std::collections::HashSet::from([item.job_id.clone()]);
        let clear = Box::new(move |job: &mut jobs::Job| {
            if applies(job) {
                job.clear_delivery_failure();
            }
        });
        let result = store.update_jobs(&ctx, ids, clear).await;
        if let Err(e) = result {
            tracing::error!(job = %item.job_id, "cannot record the delivered retry in the store: {e}");
        }
    }
}
