//! The conformance of the delivery outbox ([`Outbox`](crate::store::Outbox)):
//! every backend gives the same answers.

use chrono::{DateTime, Duration, Utc};

use crate::ledger::outbox::{NewOutboxItem, OutboxState};
use crate::store::Flight;

use super::Backend;

fn item<'a>(occurrence: &'a str, now: DateTime<Utc>) -> NewOutboxItem<'a> {
    NewOutboxItem {
        occurrence,
        target: "telegram:42",
        job_id: "aaaaaaaaaaaa",
        run_at: super::at("2026-11-23T10:00:00Z"),
        run_zone: chrono_tz::UTC,
        payload: "{}",
        sent_parts: 0,
        error: "",
        now,
        first_retry: now + Duration::seconds(30),
        expires_at: now + Duration::hours(6),
    }
}

async fn a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    let given_back = one
        .keep_delivery(&item("a@1", now), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        one.keep_delivery(&item("a@1", now), true).await.unwrap(),
        None
    );
    let unknown = one
        .keep_delivery(&item("a@2", now), true)
        .await
        .unwrap()
        .unwrap();
    one.flight(unknown, Flight::Out).await.unwrap();
    assert_eq!(one.open_deliveries("a@1").await.unwrap(), 1);
    backend.kill(one, 1).await;
    assert_eq!(two.release_orphan_deliveries(now).await.unwrap(), (1, 1));
    assert_eq!(
        two.delivery_state("a@2", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("failed")
    );
    assert_eq!(two.next_delivery_due().await.unwrap(), Some(now));
    let claimed = two.claim_deliveries(now, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, given_back);
    assert!(
        two.claim_deliveries(now, 10).await.unwrap().is_empty(),
        "claimed once"
    );
    two.finish_delivery(given_back, OutboxState::Sent, now, 1, None)
        .await
        .unwrap();
    assert_eq!(two.open_deliveries("a@1").await.unwrap(), 0);
    assert_eq!(
        two.delivery_state("a@1", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("sent")
    );
    // A pending one waits for its retry time and expires when its window closes.
    two.keep_delivery(&item("a@3", now), false).await.unwrap();
    assert!(two.claim_deliveries(now, 10).await.unwrap().is_empty());
    assert_eq!(
        two.claim_deliveries(now + Duration::seconds(30), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    two.keep_delivery(&item("a@4", now), false).await.unwrap();
    assert!(two
        .claim_deliveries(now + Duration::hours(7), 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        two.delivery_state("a@4", "telegram:42")
            .await
            .unwrap()
            .as_deref(),
        Some("expired")
    );
}

async fn the_outbox_depth_reads_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let now = backend.now();
    assert_eq!(store.outbox_depth().await.unwrap(), 0);
    let sending = store
        .keep_delivery(&item("a@1", now), true)
        .await
        .unwrap()
        .unwrap();
    store.keep_delivery(&item("a@2", now), false).await.unwrap();
    assert_eq!(store.outbox_depth().await.unwrap(), 2);
    store
        .finish_delivery(sending, OutboxState::Sent, now, 1, None)
        .await
        .unwrap();
    assert_eq!(store.outbox_depth().await.unwrap(), 1);
}

conformance!(
    a_delivery_is_kept_once_and_an_orphan_is_never_sent_twice,
    the_outbox_depth_reads_back,
);
