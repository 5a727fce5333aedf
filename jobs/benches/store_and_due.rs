//! What the store and the due scan cost in memory, without a file or a process in the
//! way: reading a jobs.json document of 1,000 jobs (`jsonfile::parse_document`), reading and
//! healing it as every locked update does, rendering it back, one `due::plan_pass`
//! over 10,000 jobs with nothing due and with 1 % due, and the probe scan a pass makes
//! of the jobs.json bytes of those 10,000 jobs before it builds any job.
//!
//! `cargo bench -p jobs --bench store_and_due` prints time per call and jobs per second
//! (`thrpt`, one element = one job); a regex after `--` picks cases by id, e.g.
//! `-- plan_pass`. Run any other way (`cargo test --benches`) each case runs once.
//! The jobs are generated here (fixed choices per index, no randomness) in the shapes
//! `hermes cron add` writes, with one in ten in the legacy shapes healing rewrites.

use std::hint::black_box;
use std::path::Path;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use serde_json::{json, Value};

use jobs::due::{plan_pass, probe, Probe, ScanOptions, PROBE_KEYS};
use jobs::jsonfile::{parse_document, pick_job_fields, render_document, Record, StoreDocument};
use jobs::{Context, Job, JobState};
use schedules::{format_instant, parse_schedule, Schedule};

/// splitmix64: a fixed, well-spread choice per job index without a dependency.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn pick<T: Copy>(items: &[T], i: u64, salt: u64) -> T {
    items[(mix(i ^ salt.wrapping_mul(0x1000_0001)) % items.len() as u64) as usize]
}

// Schedules as users type them: about 30 % intervals, 50 % cron and phrases, 20 % one-shots
// (the mix of the `cli_list` bench).
const SCHEDULES: [&str; 16] = [
    "every 15m",
    "every 30m",
    "every 2h",
    "every 6h",
    "every 1d",
    "weekdays at 9am",
    "every monday 9am",
    "every weekend at 10am",
    "0 9 * * *",
    "*/15 * * * *",
    "30 2 * * *",
    "0 0 1 * *",
    "@daily",
    "2026-12-03T14:00",
    "in 45m",
    "2027-01-15T08:30",
];

const PROMPTS: [&str; 4] = [
    "Summarize the unread mail in my inbox in five bullet points.",
    "Check the status page of our three production services and report anything degraded.",
    "Remind me to stretch.",
    "Draft the weekly team update from the notes in ~/notes/week.md; keep it under 200 words.",
];

const ZONES: [&str; 3] = ["America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"];

fn ctx() -> Context {
    Context {
        now: DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .expect("a valid instant")
            .with_timezone(&Utc),
        zone: chrono_tz::Europe::Berlin,
        legacy_zone: chrono_tz::Europe::Berlin,
    }
}

/// Job number `i`. One in ten (`i % 10 == 5`) is written the way older Hermes builds
/// wrote it — bare-string schedule, naive timestamps, `deliver` list, bare `repeat` count
/// — so healing has real work; the rest are already canonical.
fn job_record(i: u64, ctx: &Context) -> Record {
    let own_zone = i.is_multiple_of(4).then(|| pick(&ZONES, i, 1));
    let zone: Tz = own_zone.map_or(ctx.zone, |name| name.parse().expect("valid zone"));
    let source = pick(&SCHEDULES, i, 2);
    let schedule = parse_schedule(source, ctx.now, zone, None).expect("bench schedules are valid");
    let recurring = schedule.is_recurring();
    let prompt = pick(&PROMPTS, i, 3);
    let paused = i % 10 == 3;
    let last_run = (recurring && !i.is_multiple_of(3))
        .then(|| ctx.now - TimeDelta::minutes(1 + (mix(i) % 1440) as i64));
    let next_run = schedule.next_run(ctx.now, last_run, zone);
    let legacy = i % 10 == 5;
    let at = |t: DateTime<Utc>| {
        if legacy {
            // Naive, in the legacy (system) zone, as Python Hermes' isoformat() wrote it.
            json!(t
                .with_timezone(&ctx.legacy_zone)
                .naive_local()
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string())
        } else {
            json!(format_instant(t, zone))
        }
    };
    let times = match &schedule {
        Schedule::Once { .. } => Some(1),
        _ if i.is_multiple_of(9) => Some(20),
        _ => None,
    };
    let completed = if last_run.is_some() { i % 20 } else { 0 };

    let mut record = Record::new();
    let mut set = |key: &str, value: Value| {
        record.insert(key.to_string(), value);
    };
    set("id", json!(format!("{:012x}", mix(i) & 0xFFFF_FFFF_FFFF)));
    set(
        "name",
        json!(format!("{} #{i}", &prompt[..prompt.len().min(40)])),
    );
    set("prompt", json!(prompt));
    if legacy {
        set("schedule", json!(source));
        set("deliver", json!(["local", "telegram"]));
        set("repeat", json!(times));
    } else {
        set("skill", json!(null));
        set("skills", json!([]));
        set("schedule", schedule.to_json());
        set("schedule_display", json!(schedule.display()));
        set(
            "deliver",
            json!(if i.is_multiple_of(2) {
                "local"
            } else {
                "origin"
            }),
        );
        set("repeat", json!({"times": times, "completed": completed}));
    }
    set("enabled", json!(!paused));
    set("state", json!(if paused { "paused" } else { "scheduled" }));
    set(
        "paused_at",
        if paused {
            at(ctx.now - TimeDelta::days(2))
        } else {
            Value::Null
        },
    );
    set(
        "created_at",
        at(ctx.now - TimeDelta::minutes(60 + i as i64)),
    );
    set("next_run_at", next_run.map_or(Value::Null, at));
    set("last_run_at", last_run.map_or(Value::Null, at));
    set("last_status", json!(last_run.map(|_| "ok")));
    if i % 2 == 1 {
        set(
            "origin",
            json!({"platform": "telegram", "chat_id": "-1001234567890", "thread_id": "17"}),
        );
    }
    if let Some(name) = own_zone {
        set("timezone", json!(name));
    }
    record
}

fn document(count: u64, ctx: &Context) -> StoreDocument {
    StoreDocument {
        jobs: (0..count).map(|i| job_record(i, ctx)).collect(),
        updated_at: Some(ctx.now_text()),
        ..StoreDocument::default()
    }
}

/// What `JsonFile::update` does before handing the jobs to a change: read the
/// bytes, then heal every record.
fn parse_and_heal(bytes: &[u8], ctx: &Context) -> Vec<Job> {
    let doc = parse_document(bytes, Path::new("jobs.json")).expect("the bench store is readable");
    let mut jobs: Vec<Job> = doc.jobs.into_iter().map(Job::from_record).collect();
    for job in &mut jobs {
        job.heal(ctx);
    }
    jobs
}

fn store(c: &mut Criterion) {
    const JOBS: u64 = 1_000;
    let ctx = ctx();
    let doc = document(JOBS, &ctx);
    let bytes = render_document(&doc);
    println!(
        "store: jobs.json of {JOBS} jobs, {:.2} MB",
        bytes.len() as f64 / 1e6
    );
    let healed = parse_and_heal(&bytes, &ctx);
    assert_eq!(healed.len() as u64, JOBS);

    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(JOBS));
    let id = |function: &str| BenchmarkId::new(function, format!("{JOBS} jobs"));
    group.bench_function(id("parse_document"), |b| {
        b.iter(|| parse_document(black_box(&bytes), Path::new("jobs.json")))
    });
    group.bench_function(id("parse_and_heal"), |b| {
        b.iter(|| parse_and_heal(black_box(&bytes), &ctx))
    });
    group.bench_function(id("render_document"), |b| {
        b.iter(|| render_document(black_box(&doc)))
    });
    group.finish();
}

fn due(c: &mut Criterion) {
    const JOBS: u64 = 10_000;
    const ON: ScanOptions = ScanOptions {
        catch_up_missed: true,
        claim_owner: "testhost:1",
        run_claim_ttl: chrono::Duration::seconds(1800),
        catch_up_spread: chrono::Duration::zero(),
    };
    let ctx = ctx();
    let mut idle: Vec<Job> = document(JOBS, &ctx)
        .jobs
        .into_iter()
        .map(Job::from_record)
        .collect();
    for job in &mut idle {
        job.heal(&ctx);
    }
    // One settling pass: jobs generated without a next run (used-up one-shots) are closed
    // here, so the measured passes find nothing to change.
    plan_pass(&mut idle, &ctx, ON);
    let settled = idle.clone();
    assert!(plan_pass(&mut idle, &ctx, ON).is_empty());
    assert_eq!(idle, settled, "a pass with nothing due changes no job");

    // Every hundredth job became due 30 s ago.
    let due_at = ctx.now - TimeDelta::seconds(30);
    let mut some_due = idle.clone();
    let mut due_count = 0;
    for job in some_due.iter_mut().step_by(100) {
        if job.state() == JobState::Scheduled {
            job.set_next_run_at(Some(due_at), ctx.zone);
            due_count += 1;
        }
    }
    assert_eq!(plan_pass(&mut some_due.clone(), &ctx, ON).len(), due_count);

    let mut group = c.benchmark_group("due");
    group.throughput(Throughput::Elements(JOBS));
    // A pass takes milliseconds; flat sampling with fewer samples keeps the run short.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    // A pass moves the due jobs forward, so each one gets a fresh copy (not timed). The
    // idle pass gets one too: scanning a just-made copy is faster than scanning the same
    // vector again (its memory is in cache), so only like with like compares.
    for (jobs, due) in [(&idle, 0), (&some_due, due_count)] {
        let case = match due {
            0 => format!("{JOBS} jobs, nothing due"),
            n => format!("{JOBS} jobs, {n} due"),
        };
        group.bench_function(BenchmarkId::new("plan_pass", case), |b| {
            b.iter_batched_ref(
                || jobs.clone(),
                |jobs| plan_pass(black_box(jobs), &ctx, ON),
                BatchSize::LargeInput,
            )
        });
    }
    // What a FileStore pass does first on the file's bytes: check the store, then judge
    // every job on its probe fields, building only the undecided ones.
    let idle_bytes = render_document(&StoreDocument {
        jobs: idle.iter().map(|job| job.record().clone()).collect(),
        ..StoreDocument::default()
    });
    let probe_pass = |bytes: &[u8]| {
        let picked = pick_job_fields(bytes, &PROBE_KEYS).expect("the bench store is canonical");
        let mut undecided = 0;
        for values in picked.jobs() {
            let fields = std::array::from_fn(|i| {
                values[i].map(|text| serde_json::from_str(text).expect("JSON"))
            });
            if probe(&fields, &ctx) == Probe::Undecided {
                undecided += 1;
            }
        }
        undecided
    };
    assert_eq!(
        probe_pass(&idle_bytes),
        idle.iter()
            .filter(|j| j.state() == JobState::Completed)
            .count()
    );
    group.bench_function(
        BenchmarkId::new("probe_scan", format!("{JOBS} jobs from bytes, nothing due")),
        |b| b.iter(|| probe_pass(black_box(&idle_bytes))),
    );
    group.finish();
}

criterion_group!(benches, store, due);
criterion_main!(benches);
