//! The conformance of the global pause and the heartbeat ([`Control`](crate::store::Control)):
//! every backend gives the same answers.

use crate::store::Beat;

use super::Backend;

async fn the_global_pause_holds_every_process(backend: &dyn Backend) {
    use crate::store::estop::GlobalPause;
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    assert_eq!(two.global_pause().await.unwrap(), None);
    let pause = GlobalPause {
        engaged_at: Some("2026-11-23T10:00:00+00:00".into()),
        reason: Some("deploy".into()),
    };
    assert!(!one.set_global_pause(Some(&pause)).await.unwrap());
    assert!(one.set_global_pause(Some(&pause)).await.unwrap());
    assert_eq!(two.global_pause().await.unwrap(), Some(pause));
    assert!(two.set_global_pause(None).await.unwrap());
    assert!(!two.set_global_pause(None).await.unwrap());
    assert_eq!(one.global_pause().await.unwrap(), None);
}

async fn heartbeats_read_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let t0 = backend.now();
    assert!(!store.heartbeat().await.unwrap().seen);
    store.beat(&Beat::Started { pid: 1 }).await.unwrap();
    store.beat(&Beat::Alive(t0)).await.unwrap();
    store
        .beat(&Beat::PassFailed(t0, "boom".into()))
        .await
        .unwrap();
    let beat = store.heartbeat().await.unwrap();
    assert!(beat.seen && beat.alive_at.is_some(), "{beat:?}");
    assert_eq!(beat.last_error.map(|(_, why)| why).as_deref(), Some("boom"));
    store.beat(&Beat::Stopped).await.unwrap();
    let beat = store.heartbeat().await.unwrap();
    assert!(beat.seen && beat.alive_at.is_none(), "{beat:?}");
}

conformance!(the_global_pause_holds_every_process, heartbeats_read_back);
