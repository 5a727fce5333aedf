//! The conformance of the run ledger and what runs spent ([`RunLedger`](crate::store::RunLedger)):
//! every backend gives the same answers.

use std::collections::HashSet;

use chrono::Duration;

use crate::ledger::{RunEnd, RunStatus};
use crate::spend::Spend;
use crate::store::Claimed;

use super::{ctx, hourly, scan, Backend};

async fn runs_of_dead_processes_become_interrupted(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    one.insert_job(&c, hourly("aaaaaaaaaaaa", c.now - Duration::seconds(5)))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).await.unwrap();
    let Claimed::Run { run } = pass.occurrences[0].claimed else {
        panic!("not claimed");
    };
    assert!(one.start_run(run, c.now).await.unwrap());
    assert_eq!(
        two.interrupt_dead_runs(c.now, false).await.unwrap(),
        0,
        "1 is alive"
    );
    backend.kill(one, 1).await;
    assert_eq!(two.interrupt_dead_runs(c.now, false).await.unwrap(), 1);
    assert_eq!(
        two.recent_runs(None, 1).await.unwrap()[0].status,
        "interrupted"
    );
}

async fn the_latest_run_of_each_job_reads_back(backend: &dyn Backend) {
    let store = backend.process(1).await;
    let now = backend.now();
    assert!(store.latest_runs(None).await.unwrap().is_empty());
    let first = store.claim_manual("aaaaaaaaaaaa", now).await.unwrap();
    store
        .finish_run(first, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    let second = store
        .claim_manual("aaaaaaaaaaaa", now + Duration::seconds(1))
        .await
        .unwrap();
    let other = store.claim_manual("bbbbbbbbbbbb", now).await.unwrap();
    let latest = store.latest_runs(None).await.unwrap();
    assert_eq!(latest.len(), 2);
    assert_eq!(latest["aaaaaaaaaaaa"].id, second);
    assert_eq!(latest["aaaaaaaaaaaa"].status, "running");
    assert_eq!(latest["bbbbbbbbbbbb"].id, other);
    let only = store
        .latest_runs(Some(&["bbbbbbbbbbbb".to_string()]))
        .await
        .unwrap();
    assert_eq!(only.keys().collect::<Vec<_>>(), ["bbbbbbbbbbbb"]);
}

async fn spend_is_summed_for_every_process_and_a_budget_notice_goes_once(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let spent = |model: &str, cost: Option<f64>| RunEnd {
        prompt_tokens: Some(100),
        completion_tokens: Some(50),
        cost_usd: cost,
        model: Some(model.to_string()),
        ..RunEnd::default()
    };
    let ends = [
        spent("m", Some(0.25)),
        spent("m", Some(0.5)),
        spent("local", None),
        RunEnd::default(),
    ];
    for (n, end) in ends.iter().enumerate() {
        let store = if n % 2 == 0 { &one } else { &two };
        let at = c.now + Duration::seconds(n as i64);
        let run = store.claim_manual("aaaaaaaaaaaa", at).await.unwrap();
        store.finish_run(run, RunStatus::Ok, at, end).await.unwrap();
    }
    let spend = two.spend_since(c.now - Duration::hours(1)).await.unwrap();
    let sum = |model: &str, runs: i64, cost_usd, unpriced_runs| Spend {
        job_id: "aaaaaaaaaaaa".into(),
        model: Some(model.into()),
        runs,
        prompt_tokens: 100 * runs,
        completion_tokens: 50 * runs,
        cost_usd,
        unpriced_runs,
    };
    assert_eq!(
        spend,
        [sum("local", 1, None, 1), sum("m", 2, Some(0.75), 0)]
    );
    let rows = one.recent_runs(None, 10).await.unwrap();
    assert_eq!(rows[3].cost_usd, Some(0.25));
    assert_eq!(rows[3].model.as_deref(), Some("m"));
    assert!(one
        .spend_since(c.now + Duration::hours(1))
        .await
        .unwrap()
        .is_empty());
    // Rows that spent outlive the per-job row limit inside the spend window (each
    // process trims the jobs it added runs for).
    two.prune_history(c.now, 0, c.now - Duration::hours(1))
        .await
        .unwrap();
    one.prune_history(c.now, 0, c.now - Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(one.recent_runs(None, 10).await.unwrap().len(), 3);
    assert!(one
        .claim_budget_notice("day:2026-03-01", c.now)
        .await
        .unwrap());
    assert!(!two
        .claim_budget_notice("day:2026-03-01", c.now)
        .await
        .unwrap());
    assert!(two
        .claim_budget_notice("day:2026-03-02", c.now)
        .await
        .unwrap());
}

/// A chained occurrence is claimed once, by one process of all, and waits while its
/// job runs anywhere; a finished run reads back by id and takes a redelivery's outcome.
async fn a_chained_run_is_claimed_once_and_a_run_takes_its_redelivery(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let now = backend.now();
    let occurrence = crate::chain::occurrence("bbbbbbbbbbbb", 7);
    let manual = one.claim_manual("bbbbbbbbbbbb", now).await.unwrap();
    assert_eq!(
        two.claim_chained("bbbbbbbbbbbb", &occurrence, now)
            .await
            .unwrap(),
        None,
        "the job is running on process 1"
    );
    one.finish_run(manual, RunStatus::Ok, now, &RunEnd::default())
        .await
        .unwrap();
    let run = two
        .claim_chained("bbbbbbbbbbbb", &occurrence, now)
        .await
        .unwrap()
        .expect("claimed");
    let end = RunEnd {
        delivery: Some("local".into()),
        ..RunEnd::default()
    };
    two.finish_run(run, RunStatus::Ok, now, &end).await.unwrap();
    assert_eq!(
        one.claim_chained("bbbbbbbbbbbb", &occurrence, now)
            .await
            .unwrap(),
        None,
        "never twice"
    );
    let row = one.run(run).await.unwrap().expect("the run reads back");
    assert_eq!(
        (
            row.occurrence.as_str(),
            row.source.as_str(),
            row.status.as_str()
        ),
        (occurrence.as_str(), "chain", "ok")
    );
    one.set_run_delivery(run, "sent: telegram:1").await.unwrap();
    let row = two.run(run).await.unwrap().expect("the run reads back");
    assert_eq!(row.delivery.as_deref(), Some("sent: telegram:1"));
    assert_eq!(row.status, "ok");
    assert!(one.run(run + 1000).await.unwrap().is_none());
}

/// A backfilled occurrence is claimed once, by any process, and an occurrence the
/// scheduler fired is never backfilled.
async fn a_backfilled_occurrence_is_claimed_once_and_never_after_a_fire(backend: &dyn Backend) {
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    let day_ago = c.now - Duration::days(1);
    let run = one
        .claim_backfill("aaaaaaaaaaaa", day_ago, c.now)
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(
        two.claim_backfill("aaaaaaaaaaaa", day_ago, c.now)
            .await
            .unwrap(),
        None,
        "the same occurrence again, from another process"
    );
    let row = two.recent_runs(Some("aaaaaaaaaaaa"), 5).await.unwrap();
    assert_eq!(row.len(), 1);
    assert_eq!(
        (row[0].id, row[0].source.as_str(), row[0].status.as_str()),
        (run, "backfill", "running")
    );
    assert!(one
        .claim_backfill("aaaaaaaaaaaa", day_ago + Duration::hours(1), c.now)
        .await
        .unwrap()
        .is_some());
    // An occurrence the scheduler fired (its key is the job id and due instant).
    let due = c.now - Duration::seconds(5);
    one.insert_job(&c, hourly("bbbbbbbbbbbb", due))
        .await
        .unwrap();
    let running = HashSet::new();
    let pass = one.claim_due(&c, &scan(&running)).await.unwrap();
    assert!(matches!(pass.occurrences[0].claimed, Claimed::Run { .. }));
    assert_eq!(
        two.claim_backfill("bbbbbbbbbbbb", due, c.now)
            .await
            .unwrap(),
        None
    );
}

conformance!(
    a_chained_run_is_claimed_once_and_a_run_takes_its_redelivery,
    a_backfilled_occurrence_is_claimed_once_and_never_after_a_fire,
    runs_of_dead_processes_become_interrupted,
    the_latest_run_of_each_job_reads_back,
    spend_is_summed_for_every_process_and_a_budget_notice_goes_once,
);
