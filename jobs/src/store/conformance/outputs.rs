//! The conformance of output documents and monitor snapshots ([`Outputs`](crate::store::Outputs)):
//! every backend gives the same answers.

use chrono::Duration;

use crate::ledger::output::OutputDocument;

use super::Backend;

async fn outputs_keep_the_newest(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let t0 = backend.now();
    for n in 0..3 {
        let response = format!("answer {n}");
        let doc = OutputDocument {
            job_id: "aaaaaaaaaaaa",
            job_name: "report",
            schedule: "every 60m",
            run_time: t0 + Duration::minutes(n),
            zone: chrono_tz::UTC,
            prompt: "p",
            result: Ok(&response),
            gate: None,
        };
        store.save_output(&doc, 2).await.unwrap();
    }
    store
        .save_monitor_snapshot("aaaaaaaaaaaa", "v1\nv2")
        .await
        .unwrap();
    let latest = store.latest_output("aaaaaaaaaaaa").await.unwrap().unwrap();
    assert!(latest.contains("answer 2"), "{latest}");
    let recent = store.recent_outputs("aaaaaaaaaaaa", 5).await.unwrap();
    assert_eq!(recent.len(), 2, "the snapshot is not a document");
    assert!(recent[0].contains("answer 2") && recent[1].contains("answer 1"));
    let more = format!("answer {}", 3);
    let doc = OutputDocument {
        job_id: "aaaaaaaaaaaa",
        job_name: "report",
        schedule: "every 60m",
        run_time: t0 + Duration::minutes(3),
        zone: chrono_tz::UTC,
        prompt: "p",
        result: Ok(&more),
        gate: None,
    };
    store.save_output(&doc, 1).await.unwrap();
    let snapshot = async |id| store.monitor_snapshot(id).await.unwrap();
    assert_eq!(
        snapshot("aaaaaaaaaaaa").await.as_deref(),
        Some("v1\nv2"),
        "pruning documents keeps the snapshot"
    );
    store
        .save_monitor_snapshot("aaaaaaaaaaaa", "v3")
        .await
        .unwrap();
    assert_eq!(snapshot("aaaaaaaaaaaa").await.as_deref(), Some("v3"));
    assert_eq!(snapshot("bbbbbbbbbbbb").await, None);
    assert_eq!(store.latest_output("bbbbbbbbbbbb").await.unwrap(), None);
}

conformance!(outputs_keep_the_newest);
