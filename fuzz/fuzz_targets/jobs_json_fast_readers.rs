//! jobs.json's fast readers against its whole-document reader. A store is generated from
//! the input (records from the fixture stores with odd values in their fields: escapes,
//! numbers, nulls, nesting, duplicate keys, wrong kinds, unicode, raw bytes; the top level
//! canonical or in a shape that needs repairs) and written into two homes. The file store
//! reads one as it always does and the other with every walk turned away
//! (`jobs::jsonscan::the_long_way`), as `list`, `list --json` and a scheduler pass read it:
//! both must give the same jobs, the same listing bytes, the same pass and the same errors.
//! The store's async calls run on a runtime of this one thread, where the file store
//! works in place (the switch is per thread).
#![no_main]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use jobs::due::ScanOptions;
use jobs::job::SCHEDULING_KEYS;
use jobs::jsonscan::the_long_way;
use jobs::store::{
    list_normalized, list_summaries, DueScan, ExtraField, Keep, Listed, Owner, SummarySink,
};
use jobs::{Context, FileStore, Job, JobState, JobSummary, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The choices a store is made of, taken from the input byte by byte (zeros once it ends).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((first, rest)) => {
                self.0 = rest;
                *first
            }
            None => 0,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to 24 bytes of the input as they are (not always UTF-8, not always JSON).
    fn raw(&mut self) -> String {
        let n = self.below(25).min(self.0.len());
        let (text, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(text).into_owned()
    }
}

/// Values a field is tried with, as JSON text: every kind, blanks, escapes, instants with
/// and without offsets, schedules healing leaves alone or rewrites, numbers at the edges.
const ODD_VALUES: &[&str] = &[
    "null",
    "true",
    "false",
    "0",
    "-1",
    "3",
    "-0",
    "1.5",
    "1e2",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "\"\"",
    "\" \"",
    "\"x\"",
    "\" x \"",
    "\"\\u0078\"",
    "\"\\ud83c\\udf89 caf\\u00e9\"",
    "\"日本語 🎉\"",
    "\"tab\\there\"",
    "\"line one\\nline \\\"two\\\"\"",
    "\"yes\"",
    "\"paused\"",
    "\"completed\"",
    "\"error\"",
    "\"scheduled\"",
    "\"local\"",
    "\"origin\"",
    "\"local,telegram\"",
    "\"telegram:42\"",
    "\"2026-11-22T09:00:00\"",
    "\"2026-11-22T08:59:59+00:00\"",
    "\"2026-11-22T10:00:00+00:00\"",
    "\"2026-11-21T10:00:00+01:00\"",
    "\"2026-11-21T10:00:00Z\"",
    "\"2026-11-21 10:00:00.5 -05:30 \"",
    "\"2025-01-01T00:00:00+00:00\"",
    "\"soon+05:00\"",
    "\"America/New_York\"",
    "\" Europe/Berlin \"",
    "\"Mars/Base\"",
    "\"every 2h\"",
    "\"0 9 * * *\"",
    "[]",
    "[\"a\", \" a \", \"a\", 3, \"b\"]",
    "[\"\\u0062\"]",
    "[\"local\", \"origin\"]",
    "[[[]]]",
    "{}",
    "{\"times\": 2, \"completed\": 1}",
    "{\"times\": 0, \"completed\": 5, \"x\": [1, 2]}",
    "{\"times\": \"3\"}",
    "{\"times\": 1, \"completed\": 1}",
    "{\"completed\": -1}",
    "{\"times\": 18446744073709551616}",
    "{\"times\": 2, \"times\": 3}",
    "{\"kind\": \"once\", \"run_at\": \"2026-12-25T08:00:00+00:00\", \"display\": \"once at 8\"}",
    "{\"kind\": \"once\", \"run_at\": \"2026-11-22T08:00:00+00:00\", \"display\": \"once\"}",
    "{\"kind\": \"cron\", \"expr\": \"0 9 * * *\", \"display\": \"\"}",
    "{\"kind\": \"cron\", \"expr\": \"*/5 * * * *\", \"display\": \"every 5m\"}",
    "{\"kind\": \"cron\", \"expr\": \"nonsense\", \"display\": \"bad\"}",
    "{\"kind\": \"interval\", \"minutes\": 30, \"display\": \"every 30m\"}",
    "{\"kind\": \"interval\", \"minutes\": -5, \"display\": \"never\"}",
    "{\"\\u006bind\": \"cron\", \"expr\": \"0 9 * * *\", \"display\": \"d\"}",
    "{\"kind\": \"cron\", \"kind\": \"once\", \"display\": \"d\"}",
    "{\"expr\": \"0 9 * * *\", \"display\": \"x\"}",
    "{\"platform\": \"telegram\", \"chat_id\": \"42\"}",
    "{\"by\": \"host:1\", \"at\": \"2026-11-22T08:50:00+00:00\"}",
    "{\"a\": 1, \"a\": 2}",
    "{\"a\": {\"b\": {\"c\": [null, {\"d\": \"\\u0000\"}]}}}",
];

/// Keys a record is changed at: those the listings and the due scan read, others a
/// newer version may add, ones the listing sets itself, and spellings that only decode
/// to a key.
const KEYS: &[&str] = &[
    "id",
    "name",
    "prompt",
    "skills",
    "skill",
    "model",
    "provider",
    "script",
    "no_agent",
    "schedule",
    "schedule_display",
    "repeat",
    "enabled",
    "state",
    "paused_at",
    "paused_reason",
    "created_at",
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "failure_streak",
    "deliver",
    "origin",
    "workdir",
    "timezone",
    "catch_up",
    "run_claim",
    "x_extra",
    "provider_snapshot",
    "latest_execution",
    "profile",
    "\\u0069d",
    "n\\u0061me",
    "jobs",
    "",
];

/// Job records of the fixture stores (current, newer and legacy shapes) and of a
/// benchmark store, each as its entries' text.
fn bases() -> &'static [Vec<(String, String)>] {
    static BASES: OnceLock<Vec<Vec<(String, String)>>> = OnceLock::new();
    BASES.get_or_init(|| {
        let stores = [
            include_str!("../../tests/fixtures/newer_full_store.json"),
            include_str!("../../tests/fixtures/old_one_shot_store.json"),
            include_str!("../seeds/jobs_json_loader/mixed_legacy_fields.json"),
        ];
        let mut records = Vec::new();
        for store in stores {
            match serde_json::from_str::<Value>(store) {
                Ok(Value::Object(top)) => {
                    if let Some(Value::Array(jobs)) = top.get("jobs") {
                        records.extend(jobs.iter().cloned());
                    }
                }
                Ok(Value::Array(jobs)) => records.extend(jobs),
                _ => {}
            }
        }
        records.push(serde_json::json!({
            "id": "b00000000000", "name": "bench job 0", "prompt": "", "skills": [],
            "skill": null, "model": null, "script": "silent.sh", "no_agent": true,
            "schedule": {"kind": "cron", "expr": "47 8 * * *", "display": "47 8 * * *"},
            "schedule_display": "47 8 * * *", "repeat": {"times": null, "completed": 0},
            "enabled": true, "state": "scheduled", "paused_at": null,
            "created_at": "2026-11-21T16:29:31.448172+00:00",
            "next_run_at": "2026-11-23T18:24:09.448172+00:00", "last_run_at": null,
            "deliver": "local", "origin": null, "workdir": null
        }));
        records.push(serde_json::json!({
            "id": "0d0d0d0d0d0d", "name": "Christmas call", "prompt": "Remind me",
            "schedule": {"kind": "once", "run_at": "2026-12-25T08:00:00+00:00", "display": "once"},
            "deliver": "local", "enabled": true, "created_at": "2026-02-01T08:00:00+00:00",
            "next_run_at": "2026-12-25T08:00:00+00:00"
        }));
        records
            .iter()
            .filter_map(Value::as_object)
            .map(|record| {
                record
                    .iter()
                    .map(|(key, value)| (json_key(key), value.to_string()))
                    .collect()
            })
            .collect()
    })
}

/// A key's text between its quotes.
fn json_key(key: &str) -> String {
    let quoted = serde_json::to_string(key).unwrap_or_default();
    quoted.trim_matches('"').to_string()
}

/// One value: mostly an odd one, else input text as a JSON string, raw input text, or an
/// object nesting more values.
fn value(input: &mut Input, depth: usize) -> String {
    match input.below(10) {
        0..=5 => input.pick(ODD_VALUES).to_string(),
        6 => serde_json::to_string(&input.raw()).unwrap_or_default(),
        7 => input.raw(),
        _ if depth > 2 => "null".to_string(),
        8 => format!(
            "{{\"kind\": {}, \"display\": {}, \"{}\": {}}}",
            value(input, depth + 1),
            value(input, depth + 1),
            input.pick(KEYS),
            value(input, depth + 1)
        ),
        _ => format!("[{}, {}]", value(input, depth + 1), value(input, depth + 1)),
    }
}

/// A record's text: a base with a few keys set, removed, repeated or moved.
fn record(input: &mut Input) -> String {
    let mut entries = bases()[input.below(bases().len())].clone();
    for _ in 0..input.below(9) {
        let key = match input.below(12) {
            0 => json_key(&input.raw()),
            _ => input.pick(KEYS).to_string(),
        };
        let at = entries.iter().position(|(k, _)| *k == key);
        match (input.below(8), at) {
            (0, Some(at)) => {
                entries.remove(at);
            }
            (1, _) => entries.push((key, value(input, 0))),
            (2, Some(at)) => {
                let entry = entries.remove(at);
                let to = input.below(entries.len() + 1);
                entries.insert(to, entry);
            }
            (_, Some(at)) => entries[at].1 = value(input, 0),
            (_, None) => entries.push((key, value(input, 0))),
        }
    }
    let gap = input.pick(&[", ", ",", ",\n      ", " ,\t"]);
    let fields: Vec<String> = entries
        .iter()
        .map(|(key, value)| format!("\"{key}\": {value}"))
        .collect();
    format!("{{{}}}", fields.join(gap))
}

/// A whole store: mostly canonical, sometimes in a shape only the whole-document reader
/// reads (BOM, bare list, jobs keyed by id, a second or escaped `jobs`, trailing text).
fn store(input: &mut Input) -> Vec<u8> {
    let records: Vec<String> = (0..input.below(5)).map(|_| record(input)).collect();
    let list = format!("[\n  {}\n]", records.join(",\n  "));
    let canonical = |input: &mut Input| match input.below(4) {
        0 => format!("{{\"updated_at\": \"2026-11-22T08:00:00+00:00\", \"jobs\": {list}}}"),
        1 => format!("{{\"jobs\": {list}, \"x_hermes_version\": \"0.21\", \"x_list\": [1, {{}}]}}"),
        2 => format!("{{\"jobs\":{list},\"updated_at\":null}}"),
        _ => format!(
            "{{\n  \"jobs\": {list},\n  \"updated_at\": \"2026-11-22T08:00:00+00:00\"\n}}\n"
        ),
    };
    let text = match input.below(20) {
        0 => format!("\u{feff}{}", canonical(input)),
        1 => list.clone(),
        2 => format!(
            "{{{}}}",
            records
                .iter()
                .enumerate()
                .map(|(n, record)| format!("\"job{n}\": {record}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        3 => format!("{{\"jobs\": [], \"jobs\": {list}}}"),
        4 => format!("{{\"\\u006aobs\": {list}, \"jobs\": []}}"),
        5 => format!("{}{}", canonical(input), input.raw()),
        6 => format!(
            "{{\"jobs\": {list}, \"x\": {}}}",
            "[".repeat(130) + &"]".repeat(130)
        ),
        _ => canonical(input),
    };
    text.into_bytes()
}

fn context() -> Context {
    Context {
        now: DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default(),
        zone: Tz::America__New_York,
        legacy_zone: Tz::Europe__Berlin,
    }
}

/// Summaries as the text listing gets them, from whichever thread.
#[derive(Default)]
struct Summaries(Vec<String>);

impl SummarySink for Summaries {
    fn summary(&mut self, job: &JobSummary<'_>) {
        self.0.push(format!("{job:?}"));
    }

    fn restart(&mut self) {
        self.0.clear();
    }
}

/// Everything one read of a store gives: jobs reduced to a few keys (by key, since a
/// reduced job's keys may come in either order), summaries, listings, then a scheduler
/// pass, the file it leaves and the listing after it.
#[derive(Debug, PartialEq)]
struct Reading {
    views: Vec<Result<Vec<Job>, String>>,
    summaries: Result<Vec<String>, String>,
    listings: Vec<Result<String, String>>,
    pass: Result<(Vec<String>, Option<DateTime<Utc>>), String>,
    after_pass: Option<String>,
    listing_after_pass: Result<String, String>,
}

/// Runs one store call to its end on this thread.
fn wait<F: Future>(call: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a runtime of one thread")
        })
        .block_on(call)
}

fn views(store: &FileStore, ctx: &Context) -> Vec<Result<Vec<Job>, String>> {
    let key_sets: [&[&str]; 4] = [
        SCHEDULING_KEYS,
        JobSummary::KEYS,
        &["id"],
        &["id", "x_extra", "schedule", "deliver", "origin"],
    ];
    key_sets
        .iter()
        .map(|keys| {
            let mut jobs = Vec::new();
            store
                .for_each_job(ctx, Some(keys), &mut |job| jobs.push(job))
                .map(|()| jobs)
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn listing(
    store: &FileStore,
    ctx: &Context,
    keep: &Keep,
    extras: &[ExtraField],
) -> Result<String, String> {
    let out = wait(list_normalized(
        store,
        ctx,
        Arc::clone(keep),
        extras.to_vec(),
        Vec::new(),
    ))
    .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn read(cron: &Path, store_text: &str, ctx: &Context) -> Reading {
    let store = &file_store(cron);
    // Errors name the file: each home's own, the same for both once the home is cut off.
    let home = cron
        .parent()
        .map(|home| home.display().to_string())
        .unwrap_or_default();
    let same_home = |text: String| text.replace(&home, "<home>");
    let mask = |text: String| mask_new_ids(&text, store_text);
    let sink = Arc::new(Mutex::new(Summaries::default()));
    let summaries = wait(list_summaries(store, ctx, sink.clone()))
        .map(|()| {
            let gathered = std::mem::take(&mut sink.lock().unwrap_or_else(|p| p.into_inner()).0);
            gathered.into_iter().map(mask).collect()
        })
        .map_err(|e| same_home(e.to_string()));
    let run = |id: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(
            serde_json::to_string(&format!("run of {id}"))
                .unwrap_or_default()
                .as_bytes(),
        )
    };
    let profile = |_: &str, out: &mut Vec<u8>| out.extend_from_slice(b"\"default\"");
    let extras = [
        ExtraField {
            key: "latest_execution",
            write: Arc::new(run),
        },
        ExtraField {
            key: "profile",
            write: Arc::new(profile),
        },
    ];
    let all: Keep = Arc::new(|_: Listed| true);
    let enabled: Keep = Arc::new(|listed: Listed| listed.enabled);
    let scheduled: Keep = Arc::new(|listed: Listed| listed.state == JobState::Scheduled);
    let listings = [
        listing(store, ctx, &all, &[]),
        listing(store, ctx, &enabled, &[]),
        listing(store, ctx, &scheduled, &extras),
        listing(store, ctx, &all, &extras[1..]),
    ]
    .into_iter()
    .map(|listing| listing.map(mask).map_err(same_home))
    .collect();
    let views = views(store, ctx)
        .into_iter()
        .map(|view| view.map_err(same_home))
        .collect();
    let running = HashSet::new();
    let scan = DueScan {
        options: ScanOptions {
            catch_up_missed: true,
            claim_owner: "fuzz:1",
            run_claim_ttl: Duration::minutes(30),
        },
        completed_retention: Duration::days(7),
        running_here: &running,
        free_slots: None,
    };
    let pass = wait(store.claim_due(ctx, &scan))
        .map(|pass| {
            let occurrences = pass
                .occurrences
                .iter()
                .map(|o| mask(format!("{o:?}")))
                .collect();
            (occurrences, pass.next_wake)
        })
        .map_err(|e| same_home(e.to_string()));
    Reading {
        views,
        summaries,
        listings,
        pass,
        after_pass: std::fs::read(cron.join("jobs.json"))
            .ok()
            .map(|bytes| mask(String::from_utf8_lossy(&bytes).into_owned())),
        listing_after_pass: listing(store, ctx, &all, &[]).map(mask).map_err(same_home),
    }
}

/// `text` with every id healing made up (12 hex digits the store does not hold) masked:
/// a job without an id gets a random one, a different one on each reading.
fn mask_new_ids(text: &str, store: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_hexdigit()) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let (word, after) = rest.split_at(len);
        let made_up = len == 12
            && word
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            && !store.contains(word);
        out.push_str(if made_up { "<new id>" } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Where the homes go: memory when the machine offers it, since every store write and
/// every claim syncs its file to disk.
fn scratch_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => shm.to_path_buf(),
        false => std::env::temp_dir(),
    }
}

/// A fresh home's cron directory holding `bytes` as jobs.json.
fn home(root: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let cron = root.join(name).join("cron");
    std::fs::create_dir_all(&cron).expect("a temporary home");
    std::fs::write(cron.join("jobs.json"), bytes).expect("a temporary jobs.json");
    cron
}

fn file_store(cron: &Path) -> FileStore {
    let owner = Owner {
        host: "fuzz".to_string(),
        pid: 1,
    };
    FileStore::new(cron, owner, Arc::new(|_| true))
}

fuzz_target!(|data: &[u8]| {
    let bytes = store(&mut Input(data));
    let root = scratch_dir().join(format!("hermes-fuzz-fast-readers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let ctx = context();

    let fast_cron = home(&root, "fast", &bytes);
    let fast = file_store(&fast_cron);
    // Whole jobs: the file store's own reader against the whole-document one.
    let mut whole = Vec::new();
    let each = fast.for_each_job(&ctx, None, &mut |job| whole.push(job));
    let loaded = wait(fast.load_jobs(&ctx));
    match (&each, &loaded) {
        (Ok(()), Ok(loaded)) => assert_eq!(&whole, loaded, "whole jobs differ"),
        _ => assert_eq!(
            each.map_err(|e| e.to_string()),
            loaded.map(drop).map_err(|e| e.to_string()),
            "whole jobs: one way fails"
        ),
    }
    let store_text = String::from_utf8_lossy(&bytes);
    let fast_reading = read(&fast_cron, &store_text, &ctx);

    let long_cron = home(&root, "long", &bytes);
    let long_reading = the_long_way(|| read(&long_cron, &store_text, &ctx));

    assert_eq!(
        fast_reading.views, long_reading.views,
        "views of {store_text}"
    );
    assert_eq!(
        fast_reading.summaries, long_reading.summaries,
        "summaries of {store_text}"
    );
    for (n, (fast, long)) in fast_reading
        .listings
        .iter()
        .zip(&long_reading.listings)
        .enumerate()
    {
        assert_eq!(fast, long, "listing {n} of {store_text}");
    }
    assert_eq!(
        fast_reading.pass, long_reading.pass,
        "scheduler pass on {store_text}"
    );
    assert_eq!(
        fast_reading.after_pass, long_reading.after_pass,
        "jobs.json after a pass on {store_text}"
    );
    assert_eq!(
        fast_reading.listing_after_pass, long_reading.listing_after_pass,
        "listing after a pass on {store_text}"
    );
    let _ = std::fs::remove_dir_all(&root);
});
