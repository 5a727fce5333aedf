//! jobs.json as any Hermes build (or a hand edit) may leave it: arbitrary bytes through
//! `parse_document`, then every record through the job model with one fixed `Context`.
//! Checks that nothing panics, that healing is idempotent and keeps the schedule, and
//! that a rendered document parses back to the same jobs.
#![no_main]

use std::path::Path;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use jobs::jsonfile::{parse_document, render_document};
use jobs::{Context, Job};
use libfuzzer_sys::fuzz_target;

fn context() -> Context {
    Context {
        now: DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .expect("fixed instant in the fuzz target")
            .with_timezone(&Utc),
        zone: Tz::America__New_York,
        legacy_zone: Tz::Europe__Berlin,
    }
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("jobs.json");
    let Ok(doc) = parse_document(data, path) else {
        return;
    };
    let ctx = context();
    for record in &doc.jobs {
        let job = Job::from_record(record.clone());
        let _ = job.clone().normalized(&ctx);
        let _ = (job.repeat(), job.deliver(), job.state(), job.skills());
        let before = job.schedule(&ctx).map(|s| s.to_json());

        let mut healed = job.clone();
        healed.heal(&ctx);
        let _ = (healed.repeat(), healed.deliver(), healed.state());
        let _ = (healed.next_run_at(&ctx), healed.last_run_at(&ctx));
        let _ = healed.schedule_display(&ctx);
        let after = healed.schedule(&ctx).map(|s| s.to_json());
        if let Ok(before) = &before {
            assert_eq!(
                after.as_ref().ok(),
                Some(before),
                "healing changed the schedule of {record:?}"
            );
        }

        let mut twice = healed.clone();
        twice.heal(&ctx);
        assert_eq!(twice, healed, "healing is not idempotent for {record:?}");
    }

    let rendered = render_document(&doc);
    let again = parse_document(&rendered, path).unwrap_or_else(|e| {
        panic!(
            "rendered document does not parse: {e}\n{}",
            String::from_utf8_lossy(&rendered)
        )
    });
    assert_eq!(again.jobs, doc.jobs, "jobs change through render → parse");
    assert_eq!(
        again.extra, doc.extra,
        "top-level keys change through render → parse"
    );
    assert_eq!(again.updated_at, doc.updated_at);
});
