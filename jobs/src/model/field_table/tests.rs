//! The table against what reads it: the docs, `list --json`'s key list, the record a new
//! job gets in jobs.json.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::DateTime;
use serde_json::{json, Value};

use super::*;
use crate::jsonjobs::{render_document, Record, StoreDocument};
use crate::lifecycle::{create_job, NewJob};
use crate::model::job::{Context, NORMALIZED_KEYS};
use crate::store::{FileStore, Owner};

#[test]
fn every_key_is_in_the_table_once() {
    let mut seen = BTreeSet::new();
    for field in FIELDS {
        assert!(
            seen.insert(field.key),
            "{} is in the table twice",
            field.key
        );
    }
}

/// The docs check: docs/STORE.md names every field of the table (in its "Job record
/// fields" table, or among Hermes 0.22's run fields), so a new row needs its line there.
#[test]
fn the_store_docs_name_every_field() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/STORE.md");
    let docs = std::fs::read_to_string(path).unwrap();
    let missing: Vec<&str> = FIELDS
        .iter()
        .map(|field| field.key)
        .filter(|key| !docs.contains(&format!("`{key}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/STORE.md does not describe {missing:?}: add them to \"Job record fields\""
    );
}

/// `list --json`'s key list stays a hand-written array (its order is Python Hermes'
/// normalized view, which has `skill` before `skills` where a record has them the other
/// way round, and the fast listing finds its slots in it at compile time); it holds the
/// [`NORMALIZED`] fields, no more, no fewer.
#[test]
fn the_json_listing_shows_exactly_the_normalized_fields() {
    let table: BTreeSet<&str> = keys::<{ count(NORMALIZED) }>(NORMALIZED)
        .into_iter()
        .collect();
    let listed: BTreeSet<&str> = NORMALIZED_KEYS.into_iter().collect();
    assert_eq!(listed, table);
    assert_eq!(NORMALIZED_KEYS.len(), table.len());
}

#[test]
fn a_field_a_door_sets_is_one_users_set() {
    for field in FIELDS {
        if field.uses & (PATCH | DASHBOARD) != 0 {
            assert_ne!(field.set, Set::Internal, "{} is set by a door", field.key);
        }
    }
}

fn ctx(now: &str) -> Context {
    Context {
        now: DateTime::parse_from_rfc3339(now).unwrap().to_utc(),
        zone: chrono_tz::UTC,
        legacy_zone: chrono_tz::UTC,
    }
}

/// The record the table says a job made of a schedule and a prompt gets, in a store of
/// `layout`; `given` holds the values of its [`Start::Given`] fields.
fn record_by_the_table(layout: Layout, given: &Value) -> Record {
    FIELDS
        .iter()
        .filter_map(|field| {
            let value = match field.start {
                Start::Given => given
                    .get(field.key)
                    .cloned()
                    .unwrap_or_else(|| panic!("no given value for {} in the test", field.key)),
                Start::Null => Value::Null,
                Start::Zero => json!(0),
            };
            let written = match field.written {
                Written::Always => true,
                Written::WhenSet => !value.is_null(),
                Written::Layout(only) => only == layout,
                Written::LayoutElseWhenSet(only) => only == layout || !value.is_null(),
                Written::Later => false,
            };
            written.then(|| (field.key.to_string(), value))
        })
        .collect()
}

/// The [`Start::Given`] values of a job made of `every 2h` and `check the mail` at
/// 10:00 UTC.
fn plain_given(id: &str) -> Value {
    json!({
        "id": id, "name": "check the mail", "prompt": "check the mail", "skills": [],
        "skill": null, "model": null, "provider": null, "provider_snapshot": null,
        "model_snapshot": null, "script": null, "no_agent": false, "monitor_script": null,
        "monitor_url": null, "context_from": null,
        "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
        "schedule_display": "every 120m", "repeat": {"times": null, "completed": 0},
        "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
        "created_at": "2026-03-01T10:00:00+00:00", "next_run_at": "2026-03-01T12:00:00+00:00",
        "deliver": "local", "origin": null, "workdir": null, "reasoning_effort": null,
        "failure_deliver": null, "interpreter": null, "timezone": null,
    })
}

/// The record Hermes 0.22 (`layout_022`) or 0.19 writes for that job, key by key in its
/// order: what the table must describe.
fn hermes_record(id: &str, layout_022: bool) -> Value {
    let mut record = json!({
        "id": id, "name": "check the mail", "prompt": "check the mail", "skills": [],
        "skill": null, "model": null, "provider": null,
    });
    let fields = if layout_022 {
        json!({"base_url": null, "script": null, "no_agent": false, "monitor_script": null,
            "monitor_url": null, "monitor_state": null})
    } else {
        json!({"provider_snapshot": null, "model_snapshot": null, "base_url": null,
            "script": null, "no_agent": false})
    };
    let schedule = json!({
        "context_from": null,
        "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
        "schedule_display": "every 120m", "repeat": {"times": null, "completed": 0},
        "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
        "created_at": "2026-03-01T10:00:00+00:00", "next_run_at": "2026-03-01T12:00:00+00:00",
        "last_run_at": null, "last_status": null, "last_error": null,
        "last_delivery_error": null,
    });
    let failures = if layout_022 {
        json!({"last_delivery_unverified": null, "last_failure": null, "failure_streak": 0})
    } else {
        json!({"failure_streak": 0})
    };
    let rest = json!({"deliver": "local", "origin": null, "enabled_toolsets": null,
        "workdir": null});
    for part in [fields, schedule, failures, rest] {
        if let (Value::Object(record), Value::Object(part)) = (&mut record, part) {
            record.extend(part);
        }
    }
    record
}

/// A new job in an empty file store: the table describes Hermes 0.22's record, and
/// jobs.json holds it byte for byte.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_job_writes_the_record_the_table_describes() {
    let home = tempfile::tempdir().unwrap();
    let cron = home.path().join("cron");
    let store = FileStore::new(
        cron.clone(),
        Owner {
            host: "host".into(),
            pid: 1,
        },
        Arc::new(|_| true),
    );
    let ctx = ctx("2026-03-01T10:00:00Z");
    let new = NewJob {
        schedule: "every 2h".into(),
        prompt: "check the mail".into(),
        ..NewJob::default()
    };
    let job = create_job(&store, &new, &ctx).await.unwrap();
    let given = plain_given(job.id());
    let by_table = record_by_the_table(Layout::Hermes022, &given);
    assert_eq!(
        serde_json::to_string(&by_table).unwrap(),
        serde_json::to_string(&hermes_record(job.id(), true)).unwrap()
    );
    let bytes = std::fs::read(cron.join("jobs.json")).unwrap();
    let stored: Value = serde_json::from_slice(&bytes).unwrap();
    let expected = StoreDocument {
        jobs: vec![by_table],
        extra: Record::new(),
        updated_at: stored["updated_at"].as_str().map(str::to_string),
        repaired: false,
    };
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        String::from_utf8(render_document(&expected)).unwrap()
    );
}

/// The same in a store of Hermes 0.19's layout: the snapshots, no 0.22 keys.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_job_in_a_0_19_store_writes_the_record_the_table_describes() {
    let home = tempfile::tempdir().unwrap();
    let cron = home.path().join("cron");
    std::fs::create_dir_all(&cron).unwrap();
    let old = json!({"id": "0123456789ab", "name": "old", "prompt": "p",
        "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
        "enabled": true, "state": "scheduled", "provider_snapshot": null,
        "next_run_at": "2026-03-01T11:00:00+00:00"});
    std::fs::write(
        cron.join("jobs.json"),
        serde_json::to_vec_pretty(&json!({"jobs": [old]})).unwrap(),
    )
    .unwrap();
    let store = FileStore::new(
        cron.clone(),
        Owner {
            host: "host".into(),
            pid: 1,
        },
        Arc::new(|_| true),
    );
    let ctx = ctx("2026-03-01T10:00:00Z");
    let new = NewJob {
        schedule: "every 2h".into(),
        prompt: "check the mail".into(),
        ..NewJob::default()
    };
    let job = create_job(&store, &new, &ctx).await.unwrap();
    let stored: Value =
        serde_json::from_slice(&std::fs::read(cron.join("jobs.json")).unwrap()).unwrap();
    let Some(Value::Object(written)) = stored["jobs"].get(1).cloned() else {
        panic!("the new job is the second record: {stored}");
    };
    let given = plain_given(job.id());
    let expected = record_by_the_table(Layout::Hermes019, &given);
    assert_eq!(
        serde_json::to_string(&expected).unwrap(),
        serde_json::to_string(&hermes_record(job.id(), false)).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&written).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    assert!(written.contains_key("provider_snapshot") && !written.contains_key("monitor_state"));
}
