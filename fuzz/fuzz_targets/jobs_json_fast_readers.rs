//! jobs.json's fast readers against its whole-document reader. A store is generated from
//! the input (records from the fixture stores with odd values in their fields: escapes,
//! numbers, nulls, nesting, duplicate keys, wrong kinds, unicode, raw bytes; the top level
//! canonical or in a shape that needs repairs) and written into two homes. The file store
//! reads one as it always does and the other with every walk turned away
//! (`jobs::jsonscan::the_long_way`), as `list`, `list --json` and a scheduler pass read it:
//! both must give the same jobs, the same listing bytes, the same pass and the same errors,
//! and `list` and `list --json` what `load_view` and `load_jobs` give. Every store call is
//! awaited on one current-thread runtime, so the file store reads on the hook's thread.
#![no_main]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use jobs::due::ScanOptions;
use jobs::job::SCHEDULING_KEYS;
use jobs::jsonscan::the_long_way;
use jobs::store::{
    list_normalized, list_summaries, DueScan, ExtraField, Keep, Listed, Owner, SharedSink,
    ListedJob, SummarySink, WriteValue,
};
use jobs::{Context, FileStore, Job, JobState, JobSummary, Layout, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::runtime::Runtime;

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

/// Summaries as the text listing gets them, from whichever thread. The fast reader hands
/// them over from its walk's second thread, the whole-document reader from the caller's:
/// `foreign` counts those that came from another thread than the one that made the sink,
/// which is how a reading proves it went the long way.
struct Summaries {
    texts: Vec<String>,
    home: ThreadId,
    foreign: usize,
}

impl Summaries {
    fn here() -> Arc<Mutex<Summaries>> {
        Arc::new(Mutex::new(Summaries {
            texts: Vec::new(),
            home: std::thread::current().id(),
            foreign: 0,
        }))
    }
}

impl SummarySink for Summaries {
    fn summary(&mut self, job: &JobSummary<'_>) {
        if std::thread::current().id() != self.home {
            self.foreign += 1;
        }
        self.texts.push(format!("{job:?}"));
    }

    fn restart(&mut self) {
        self.texts.clear();
        self.foreign = 0;
    }
}

/// `list`'s summaries of `store` and how many came from another thread.
async fn summaries(store: &dyn Store, ctx: &Context) -> (Result<Vec<String>, String>, usize) {
    let sink = Summaries::here();
    let shared: SharedSink = sink.clone();
    let listed = list_summaries(store, ctx, shared).await;
    let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let foreign = sink.foreign;
    let texts = std::mem::take(&mut sink.texts);
    (listed.map(|()| texts).map_err(|e| e.to_string()), foreign)
}

/// Everything one read of a store gives: jobs reduced to a few keys, summaries,
/// listings, then a scheduler pass, the file it leaves and the listing after it.
#[derive(Debug, PartialEq)]
struct Reading {
    views: Vec<Result<Vec<Job>, String>>,
    summaries: Result<Vec<String>, String>,
    listings: Vec<Result<String, String>>,
    pass: Result<(Vec<String>, Option<DateTime<Utc>>), String>,
    after_pass: Option<String>,
    listing_after_pass: Result<String, String>,
    /// The layout a new job would be written in (`Store::layout`, found in the text).
    layout: Result<Layout, String>,
}

/// What the whole-document reader alone makes of the same store, before the pass: the
/// summaries of `load_view` and the listings built from `load_jobs` as a store without a
/// faster listing builds them. Both readings must agree with it.
#[derive(Debug, PartialEq)]
struct Whole {
    summaries: Result<Vec<String>, String>,
    listings: Vec<Result<String, String>>,
    /// The layout of the jobs `load_view` builds.
    layout: Result<Layout, String>,
}

/// The key sets of the reduced views.
const VIEW_KEYS: [&[&str]; 4] = [
    SCHEDULING_KEYS,
    JobSummary::KEYS,
    &["id"],
    &["id", "x_extra", "schedule", "deliver", "origin"],
];

/// The filters and extra fields of the `list --json` listings compared: everything, the
/// enabled, the scheduled with the dashboard's two fields, everything with one field.
fn listing_kinds() -> Vec<(Keep, Vec<ExtraField>)> {
    let run: WriteValue = Arc::new(|job: &ListedJob<'_>, out: &mut Vec<u8>| {
        out.extend_from_slice(
            serde_json::to_string(&format!("run of {}", job.id))
                .unwrap_or_default()
                .as_bytes(),
        )
    });
    let profile: WriteValue =
        Arc::new(|_: &ListedJob<'_>, out: &mut Vec<u8>| out.extend_from_slice(b"\"default\""));
    let extras = vec![
        ExtraField {
            key: "latest_execution",
            write: run,
        },
        ExtraField {
            key: "profile",
            write: profile,
        },
        ExtraField::schedule_description(),
    ];
    let all: Keep = Arc::new(|_| true);
    let enabled: Keep = Arc::new(|listed| listed.enabled);
    let scheduled: Keep = Arc::new(|listed| listed.state == JobState::Scheduled);
    vec![
        (all.clone(), Vec::new()),
        (enabled, Vec::new()),
        (scheduled, extras.clone()),
        (all, extras[1..].to_vec()),
    ]
}

async fn listing(
    store: &dyn Store,
    ctx: &Context,
    keep: Keep,
    extras: Vec<ExtraField>,
) -> Result<String, String> {
    let out = list_normalized(store, ctx, keep, extras, Vec::new())
        .await
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The listing `list_normalized` writes from whole jobs, as for a store without a
/// faster listing: each kept job normalized, the extra fields set in place or last.
fn listing_of(
    jobs: &[Job],
    ctx: &Context,
    keep: &Keep,
    extras: &[ExtraField],
) -> Result<String, String> {
    let mut out = Vec::new();
    for job in jobs.iter().filter(|job| keep(Listed::of(job))) {
        if !out.is_empty() {
            out.push(b',');
        }
        let normalized = job.clone().normalized(ctx);
        let written = match extras {
            [] => serde_json::to_writer(&mut out, &normalized),
            _ => {
                let id = normalized.id().to_string();
                let mut record = normalized.into_record();
                let schedule = record.get("schedule").cloned();
                let timezone = record
                    .get("timezone")
                    .and_then(|t| t.as_str().map(str::to_string));
                let listed = ListedJob::stored(&id, schedule.as_ref(), timezone.as_deref(), ctx);
                for extra in extras {
                    let mut value = Vec::new();
                    (extra.write)(&listed, &mut value);
                    let value = serde_json::from_slice(&value).map_err(|e| e.to_string())?;
                    record.insert(extra.key.to_string(), value);
                }
                serde_json::to_writer(&mut out, &record)
            }
        };
        written.map_err(|e| format!("cannot write a job as JSON: {e}"))?;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// One reading of the store in `cron`, as `list`, `list --json`, reduced views and a
/// scheduler pass read it, and the whole-document reader's own listing of it. Also how
/// many summaries came from another thread than the caller's.
async fn read(cron: &Path, store_text: &str, ctx: &Context) -> (Reading, Whole, usize) {
    let file_store = file_store(cron);
    let store: &dyn Store = &file_store;
    // Errors name the file: each home's own, the same for both once the home is cut off.
    let home = cron
        .parent()
        .map(|home| home.display().to_string())
        .unwrap_or_default();
    let same_home = |text: String| text.replace(&home, "<home>");
    let mask = |text: String| mask_new_ids(&text, store_text);
    let masked = |result: Result<String, String>| result.map(mask).map_err(same_home);

    let layout = store.layout(ctx).await.map_err(|e| same_home(e.to_string()));
    let whole_layout = store
        .load_view(ctx, Layout::PROBE_KEYS)
        .await
        .map(|jobs| Layout::of_store(&jobs))
        .map_err(|e| same_home(e.to_string()));
    let (summaries_read, foreign) = summaries(store, ctx).await;
    let summaries_read = summaries_read
        .map(|texts| texts.into_iter().map(mask).collect())
        .map_err(same_home);
    let mut listings = Vec::new();
    for (keep, extras) in listing_kinds() {
        listings.push(masked(listing(store, ctx, keep, extras).await));
    }
    let mut views = Vec::new();
    for keys in VIEW_KEYS {
        let view = store.load_view(ctx, keys).await;
        views.push(view.map_err(|e| same_home(e.to_string())));
    }

    let whole_summaries = store
        .load_view(ctx, JobSummary::KEYS)
        .await
        .map(|jobs| {
            jobs.iter()
                .map(|job| mask(format!("{:?}", JobSummary::of(job, ctx))))
                .collect()
        })
        .map_err(|e| same_home(e.to_string()));
    let whole_jobs = store.load_jobs(ctx).await.map_err(|e| e.to_string());
    let whole_listings = listing_kinds()
        .iter()
        .map(|(keep, extras)| {
            let jobs = whole_jobs.as_ref().map_err(Clone::clone)?;
            listing_of(jobs, ctx, keep, extras)
        })
        .map(masked)
        .collect();

    let running = HashSet::new();
    let scan = DueScan {
        options: ScanOptions {
            catch_up_missed: true,
            claim_owner: "fuzz:1",
            run_claim_ttl: Duration::minutes(30),
            // cron.catch_up_spread's default.
            catch_up_spread: Duration::minutes(5),
        },
        completed_retention: Duration::days(7),
        running_here: &running,
        free_slots: None,
    };
    let pass = store
        .claim_due(ctx, &scan)
        .await
        .map(|pass| {
            let occurrences = pass
                .occurrences
                .iter()
                .map(|o| mask(format!("{o:?}")))
                .collect();
            (occurrences, pass.next_wake)
        })
        .map_err(|e| same_home(e.to_string()));
    let all: Keep = Arc::new(|_| true);
    let listing_after_pass = masked(listing(store, ctx, all, Vec::new()).await);
    let reading = Reading {
        views,
        summaries: summaries_read,
        listings,
        pass,
        after_pass: std::fs::read(cron.join("jobs.json"))
            .ok()
            .map(|bytes| mask(String::from_utf8_lossy(&bytes).into_owned())),
        listing_after_pass,
        layout,
    };
    let whole = Whole {
        summaries: whole_summaries,
        listings: whole_listings,
        layout: whole_layout,
    };
    (reading, whole, foreign)
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

/// The runtime every store call is awaited on, built once per process. It has one
/// thread, so the file store works in place rather than on a blocking thread, and
/// `the_long_way`, set on this thread, reaches its reads. Checked once before first use.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        check_the_long_way_reaches_the_store(&runtime);
        runtime
    })
}

/// A canonical store of one plain job is listed by the walk, whose summaries come from
/// its second thread, and inside `the_long_way` by the whole-document reader, on this
/// thread: were the hook not to reach the store's reads, both readings below would be
/// the walk's and every comparison of the target would compare the walk with itself.
fn check_the_long_way_reaches_the_store(runtime: &Runtime) {
    let root = scratch_dir().join(format!("hermes-fuzz-long-way-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bytes = include_bytes!("../../tests/fixtures/newer_full_store.json");
    let ctx = context();
    let cron = home(&root, "check", bytes);
    let store = file_store(&cron);
    let (fast, fast_foreign) = runtime.block_on(summaries(&store, &ctx));
    let (long, long_foreign) = the_long_way(|| runtime.block_on(summaries(&store, &ctx)));
    let _ = std::fs::remove_dir_all(&root);
    let listed = fast.as_ref().map(Vec::len).unwrap_or(0);
    assert!(listed > 0, "the check store lists no job: {fast:?}");
    assert_eq!(fast, long, "the check store's summaries differ");
    assert_eq!(
        fast_foreign, listed,
        "the walk did not list the check store"
    );
    assert_eq!(
        long_foreign, 0,
        "the_long_way did not reach the store's reads"
    );
}

/// Each listing of `a` equals the one of `b` at its place (named by its place, since one
/// store's four listings often differ only in a filter).
fn same_listings(a: &[Result<String, String>], b: &[Result<String, String>], what: &str) {
    assert_eq!(a.len(), b.len(), "listings {what}");
    for (n, (a, b)) in a.iter().zip(b).enumerate() {
        assert_eq!(a, b, "listing {n} {what}");
    }
}

fuzz_target!(|data: &[u8]| {
    let runtime = runtime();
    let bytes = store(&mut Input(data));
    let root = scratch_dir().join(format!("hermes-fuzz-fast-readers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let ctx = context();
    let store_text = String::from_utf8_lossy(&bytes);

    let fast_cron = home(&root, "fast", &bytes);
    let (fast_reading, fast_whole, _) = runtime.block_on(read(&fast_cron, &store_text, &ctx));
    let long_cron = home(&root, "long", &bytes);
    let (long_reading, long_whole, long_foreign) =
        the_long_way(|| runtime.block_on(read(&long_cron, &store_text, &ctx)));
    assert_eq!(
        long_foreign, 0,
        "the_long_way listed by the walk: {store_text}"
    );

    // The whole-document reader reads both homes alike, and `list` and `list --json`
    // must give what it gives, the usual way and the long way.
    assert_eq!(
        fast_whole, long_whole,
        "whole-document reads of {store_text}"
    );
    assert_eq!(
        fast_reading.summaries, fast_whole.summaries,
        "summaries against load_view of {store_text}"
    );
    same_listings(
        &fast_reading.listings,
        &fast_whole.listings,
        &format!("against load_jobs of {store_text}"),
    );
    assert_eq!(
        fast_reading.views, long_reading.views,
        "views of {store_text}"
    );
    assert_eq!(
        fast_reading.layout, fast_whole.layout,
        "layout against load_view of {store_text}"
    );
    assert_eq!(
        fast_reading.layout, long_reading.layout,
        "layout of {store_text}"
    );
    assert_eq!(
        fast_reading.summaries, long_reading.summaries,
        "summaries of {store_text}"
    );
    same_listings(
        &fast_reading.listings,
        &long_reading.listings,
        &format!("of {store_text}"),
    );
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
