//! The conformance of failure incidents and job notepads ([`Notes`](crate::store::Notes)):
//! every backend gives the same answers.

use chrono_tz::UTC;

use super::{at, ctx, hourly, Backend};

async fn failures_group_into_incidents_that_every_process_sees(backend: &dyn Backend) {
    use crate::ledger::incident::{IncidentState, NewIncident, Transition};
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let failure =
        |seen: &str| NewIncident::of("aaaaaaaaaaaa", "HTTP 500 after 3s", None, at(seen), UTC);
    let first = one
        .record_incident(&failure("2026-11-23T10:00:00+00:00"))
        .await
        .unwrap();
    assert_eq!(first.state(), Some(IncidentState::Detected));
    assert!(one
        .move_incident(
            &first.id,
            Transition::Alerted,
            at("2026-11-23T10:00:01+00:00"),
            UTC
        )
        .await
        .unwrap());
    let again = two
        .record_incident(&NewIncident::of(
            "aaaaaaaaaaaa",
            "HTTP 500 after 9s",
            Some("/o.md"),
            at("2026-11-23T11:00:00+00:00"),
            UTC,
        ))
        .await
        .unwrap();
    assert_eq!(again.id, first.id, "the same error is the same incident");
    assert_eq!(again.state(), Some(IncidentState::Alerted));
    assert_eq!(
        again.alerted_at.as_deref(),
        Some("2026-11-23T10:00:01+00:00")
    );
    assert_eq!(
        (again.first_seen_at.as_str(), again.last_seen_at.as_str()),
        ("2026-11-23T10:00:00+00:00", "2026-11-23T11:00:00+00:00")
    );
    assert_eq!(again.output_file.as_deref(), Some("/o.md"));
    let other = one
        .record_incident(&NewIncident::of(
            "bbbbbbbbbbbb",
            "script exited 3",
            None,
            at("2026-11-23T09:00:00+00:00"),
            UTC,
        ))
        .await
        .unwrap();
    let listed: Vec<String> = two
        .incidents(None)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(
        listed,
        vec![first.id.clone(), other.id.clone()],
        "newest activity first"
    );
    assert_eq!(
        two.resolve_incidents("aaaaaaaaaaaa", at("2026-11-23T12:00:00+00:00"), UTC)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        two.resolve_incidents("aaaaaaaaaaaa", at("2026-11-23T12:00:00+00:00"), UTC)
            .await
            .unwrap(),
        0
    );
    let reopened = one
        .record_incident(&failure("2026-11-23T13:00:00+00:00"))
        .await
        .unwrap();
    assert_eq!(reopened.state(), Some(IncidentState::Detected));
    assert_eq!(reopened.alerted_at, None);
    assert!(two
        .move_incident(
            &first.id,
            Transition::Acked,
            at("2026-11-23T13:30:00+00:00"),
            UTC
        )
        .await
        .unwrap());
    assert!(!one
        .move_incident(
            &first.id,
            Transition::Alerted,
            at("2026-11-23T14:00:00+00:00"),
            UTC
        )
        .await
        .unwrap());
    assert!(!one
        .move_incident(
            "nosuch_000000000000",
            Transition::Acked,
            at("2026-11-23T14:00:00Z"),
            UTC
        )
        .await
        .unwrap());
    let closed = one.incidents(Some(IncidentState::Closed)).await.unwrap();
    assert_eq!(closed.len(), 1);
    assert_eq!(
        closed[0].acked_at.as_deref(),
        Some("2026-11-23T13:30:00+00:00")
    );
    assert_eq!(
        one.record_incident(&failure("2026-11-23T15:00:00+00:00"))
            .await
            .unwrap()
            .state(),
        Some(IncidentState::Closed)
    );
    assert_eq!(
        one.incidents(Some(IncidentState::Detected))
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn notepads_keep_their_limits_and_go_with_their_job(backend: &dyn Backend) {
    use crate::ledger::notepad::{Note, MAX_VALUE_BYTES};
    let (one, two) = (backend.process(1).await, backend.process(2).await);
    let c = ctx(backend.now());
    one.insert_job(&c, hourly("aaaaaaaaaaaa", c.now))
        .await
        .unwrap();
    let note = |key: &str, value: &str| Note {
        job_id: "aaaaaaaaaaaa".into(),
        key: key.into(),
        value: value.into(),
        updated_at: "2026-11-23T10:00:00+00:00".into(),
    };
    assert!(one.notes("aaaaaaaaaaaa").await.unwrap().is_empty());
    one.set_note(&note("cursor", "41")).await.unwrap();
    one.set_note(&note("cursor", "42")).await.unwrap();
    one.set_note(&note("a", "first")).await.unwrap();
    let keys: Vec<(String, String)> = two
        .notes("aaaaaaaaaaaa")
        .await
        .unwrap()
        .into_iter()
        .map(|n| (n.key, n.value))
        .collect();
    assert_eq!(
        keys,
        vec![("a".into(), "first".into()), ("cursor".into(), "42".into())]
    );
    let big = "x".repeat(MAX_VALUE_BYTES);
    for key in ["b1", "b2", "b3"] {
        one.set_note(&note(key, &big)).await.unwrap();
    }
    let full = one.set_note(&note("b4", &big)).await;
    assert!(
        matches!(full, Err(crate::store::StoreError::Refused(ref m)) if m.contains("notepad full")),
        "{full:?}"
    );
    assert!(matches!(
        one.set_note(&note("k", &"x".repeat(MAX_VALUE_BYTES + 1)))
            .await,
        Err(crate::store::StoreError::Refused(_))
    ));
    assert_eq!(
        two.notes("aaaaaaaaaaaa").await.unwrap().len(),
        5,
        "a refused write changes nothing"
    );
    assert!(two.delete_note("aaaaaaaaaaaa", "b1").await.unwrap());
    assert!(!two.delete_note("aaaaaaaaaaaa", "b1").await.unwrap());
    one.set_note(&Note {
        job_id: "bbbbbbbbbbbb".into(),
        ..note("kept", "yes")
    })
    .await
    .unwrap();
    two.remove_job(&c, "aaaaaaaaaaaa").await.unwrap();
    assert!(one.notes("aaaaaaaaaaaa").await.unwrap().is_empty());
    assert_eq!(one.notes("bbbbbbbbbbbb").await.unwrap().len(), 1);
}

conformance!(
    failures_group_into_incidents_that_every_process_sees,
    notepads_keep_their_limits_and_go_with_their_job,
);
