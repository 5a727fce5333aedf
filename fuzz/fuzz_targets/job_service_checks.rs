//! The job service's checks — the `jobs` lifecycle and its one set of limits, which every
//! door (CLI, both REST families, MCP) feeds — with arbitrary JSON bodies. The input is
//! a JSON object read as a create body, the way the doors read theirs (texts, numbers,
//! booleans and lists of texts where a door takes them; anything else left out), and its
//! `"edit"` object as an edit of the job created (or of a valid job when the create is
//! refused). Checks that nothing panics; that a refused create stores nothing and a
//! refused edit changes nothing; and that whatever is stored passes the limits, the
//! threat scan and the `deliver` parser again.
#![no_main]

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use jobs::store::prelude::*;
use jobs::store::Owner;
use jobs::{Context, Job, JobEdit, MemoryStore, NewJob};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use tokio::runtime::Runtime;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

fn context() -> Context {
    Context {
        now: DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default(),
        zone: Tz::UTC,
        legacy_zone: Tz::Europe__Berlin,
    }
}

/// A text field as the doors take it: a string, or a number's digits.
fn text(body: &Map<String, Value>, key: &str) -> Option<String> {
    match body.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn flag(body: &Map<String, Value>, key: &str) -> Option<bool> {
    body.get(key).and_then(Value::as_bool)
}

/// A list of texts: a string is a list of one.
fn texts(body: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    match body.get(key)? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
        ),
        _ => None,
    }
}

fn new_job(body: &Map<String, Value>) -> NewJob {
    NewJob {
        schedule: text(body, "schedule").unwrap_or_default(),
        prompt: text(body, "prompt").unwrap_or_default(),
        name: text(body, "name"),
        deliver: text(body, "deliver"),
        repeat: text(body, "repeat"),
        skills: texts(body, "skills").unwrap_or_default(),
        script: text(body, "script"),
        no_agent: flag(body, "no_agent").unwrap_or(false),
        workdir: text(body, "workdir"),
        model: text(body, "model"),
        provider: text(body, "provider"),
        timezone: text(body, "timezone"),
        paused: flag(body, "paused").unwrap_or(false),
        origin: text(body, "origin"),
        script_text: text(body, "script_text"),
        ..NewJob::default()
    }
}

fn job_edit(body: &Map<String, Value>) -> JobEdit {
    JobEdit {
        schedule: text(body, "schedule"),
        prompt: text(body, "prompt"),
        name: text(body, "name"),
        deliver: text(body, "deliver"),
        repeat: text(body, "repeat"),
        skills: texts(body, "skills"),
        add_skills: texts(body, "add_skills").unwrap_or_default(),
        remove_skills: texts(body, "remove_skills").unwrap_or_default(),
        clear_skills: flag(body, "clear_skills").unwrap_or(false),
        script: text(body, "script"),
        no_agent: flag(body, "no_agent"),
        workdir: text(body, "workdir"),
        model: text(body, "model"),
        provider: text(body, "provider"),
        timezone: text(body, "timezone"),
        script_text: text(body, "script_text"),
        ..JobEdit::default()
    }
}

/// What every stored job must pass, whoever asked for it.
fn assert_stored_job_passes(job: &Job, asked: &str) {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        panic!("stored job fails {what} ({e}): {asked}\n{:?}", job.record())
    };
    if let Err(e) = jobs::limits::check_name(job.name()) {
        fail("the name limit", &e);
    }
    if let Err(e) = jobs::limits::check_prompt(job.prompt()) {
        fail("the prompt limit", &e);
    }
    if let Err(e) = jobs::threats::scan_prompt(job.prompt()) {
        fail("the threat scan", &e);
    }
    let deliver = job.deliver();
    match jobs::target::validate_deliver(&deliver) {
        Ok(normal) if normal == deliver => {}
        Ok(normal) => fail("the deliver parser", &format!("normal form {normal:?}")),
        Err(e) => fail("the deliver parser", &e),
    }
    assert!(job.skills().len() <= 50, "more than 50 skills stored: {asked}");
}

async fn only_job(store: &MemoryStore, ctx: &Context) -> Option<Job> {
    let jobs = store.load_jobs(ctx).await.expect("the memory store reads");
    assert!(jobs.len() <= 1, "a create stored {} jobs", jobs.len());
    jobs.into_iter().next()
}

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let asked = String::from_utf8_lossy(data);
    let ctx = context();
    runtime().block_on(async {
        let store = MemoryStore::new(Owner {
            host: "fuzz".into(),
            pid: 1,
        });
        let created = jobs::lifecycle::create_job(&store, &new_job(&body), &ctx).await;
        let job = match (&created, only_job(&store, &ctx).await) {
            (Ok(job), Some(stored)) => {
                assert_eq!(job.id(), stored.id(), "another job was stored: {asked}");
                assert_stored_job_passes(&stored, &asked);
                stored
            }
            (Ok(_), None) => panic!("an accepted create stored nothing: {asked}"),
            (Err(e), Some(_)) => panic!("a refused create ({e}) stored a job: {asked}"),
            (Err(_), None) => {
                let valid = NewJob {
                    schedule: "every 1h".into(),
                    prompt: "Summarize the logs".into(),
                    name: Some("base".into()),
                    ..NewJob::default()
                };
                jobs::lifecycle::create_job(&store, &valid, &ctx)
                    .await
                    .expect("a valid job is created")
            }
        };
        let Some(Value::Object(edit)) = body.get("edit") else {
            return;
        };
        let before = serde_json::to_string(job.record()).unwrap_or_default();
        let edited = jobs::lifecycle::edit_job(&store, job.id(), &job_edit(edit), &ctx).await;
        let after = only_job(&store, &ctx).await.expect("the job is still stored");
        match edited {
            Ok(_) => assert_stored_job_passes(&after, &asked),
            Err(e) => assert_eq!(
                serde_json::to_string(after.record()).unwrap_or_default(),
                before,
                "a refused edit ({e}) changed the job: {asked}"
            ),
        }
    });
});
