//! Wall-clock time of `hermes cron list` and `hermes cron list --json` on job stores of
//! 1,000 and 10,000 jobs (and an empty one, the cost of starting the process). It
//! prints min / median / max and stores nothing outside a temp dir.
//!
//! A plain `harness = false` binary timed with `Instant` (no criterion, to keep the
//! build short). Under `cargo bench` (which passes `--bench`) each command runs 10 times
//! after a warm-up; run any other way (`cargo test --benches`) it runs once on a small
//! store, as a smoke test.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use jobs::jsonfile::Record;
use jobs::jsonfile::{DocumentError, JsonFile};
use jobs::Context;
use schedules::{format_instant, parse_schedule, Schedule};
use serde_json::{json, Value};

mod common;
use common::{grouped, hermes_binary, median, ms};

/// "Now" for creating and listing, so relative times and next runs are the same each run.
const NOW: &str = "2026-11-22T12:00:00Z";
/// The configured zone (HERMES_TIMEZONE); a quarter of the jobs carry their own.
const CONFIG_ZONE: &str = "Europe/Berlin";

/// `hermes <args>` with its own home, a pinned clock and zone, and no output kept.
fn hermes(bin: &Path, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(bin);
    command
        .args(args)
        .env("HERMES_HOME", home)
        .env("HERMES_NOW", NOW)
        .env("HERMES_TIMEZONE", CONFIG_ZONE)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` to completion; panics with its stderr when it fails.
fn run_ok(command: &mut Command) -> Vec<u8> {
    let output = command.output().expect("cannot start the hermes binary");
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The record `hermes cron add` writes today, taken from the binary itself so the
/// generated stores follow `create_job` (jobs/src/lifecycle.rs) as it changes.
fn template_record(bin: &Path) -> Record {
    let scratch = tempfile::tempdir().expect("cannot create a temp dir");
    run_ok(&mut hermes(
        bin,
        scratch.path(),
        &["cron", "add", "every 2h", "summarize inbox"],
    ));
    let doc = JsonFile::new(scratch.path().join("cron"))
        .load()
        .expect("the store hermes just wrote is readable");
    doc.jobs
        .into_iter()
        .next()
        .expect("hermes cron add stored one job")
}

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

// Schedules as users type them: about 30% intervals, 50% cron and phrases, 20% one-shots.
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

const PROMPTS: [&str; 5] = [
    "Summarize the unread mail in my inbox in five bullet points.",
    "Check the status page of our three production services and report anything degraded.",
    "Remind me to stretch.",
    "Pull yesterday's merged pull requests from the hermes repositories, group them by \
     area, and write a short changelog entry for each group with links.",
    "Draft the weekly team update from the notes in ~/notes/week.md; keep it under 200 words.",
];

const ZONES: [&str; 3] = ["America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"];

/// Job number `i`: the template with its own id, name, schedule, zone, delivery,
/// history and state. Next runs are computed with the schedules crate as `add` does.
fn job_record(template: &Record, i: u64, ctx: &Context) -> Record {
    let mut record = template.clone();
    let mut set = |key: &str, value: Value| {
        record.insert(key.to_string(), value);
    };
    let own_zone = i.is_multiple_of(4).then(|| pick(&ZONES, i, 1));
    let zone: Tz = own_zone.map_or(ctx.zone, |name| name.parse().expect("valid zone"));
    let schedule = parse_schedule(pick(&SCHEDULES, i, 2), ctx.now, zone, None)
        .expect("bench schedules are valid");
    let recurring = schedule.is_recurring();
    let prompt = pick(&PROMPTS, i, 3);
    let paused = i % 10 == 3;
    let failed = recurring && i % 25 == 7;
    let last_run = (recurring && !i.is_multiple_of(3))
        .then(|| ctx.now - TimeDelta::minutes(1 + (mix(i) % 1440) as i64));
    let next_run = schedule.next_run(ctx.now, last_run, zone);
    let at = |t: DateTime<Utc>| json!(format_instant(t, zone));

    set("id", json!(format!("{:012x}", mix(i) & 0xFFFF_FFFF_FFFF)));
    set(
        "name",
        json!(format!("{} #{i}", &prompt[..prompt.len().min(40)])),
    );
    set("prompt", json!(prompt));
    let skills: Vec<&str> = if i.is_multiple_of(7) {
        vec!["inbox"]
    } else {
        vec![]
    };
    set("skill", json!(skills.first()));
    set("skills", json!(skills));
    set("schedule", schedule.to_json());
    set("schedule_display", json!(schedule.display()));
    let times = match &schedule {
        Schedule::Once { .. } => Some(1),
        _ if i.is_multiple_of(9) => Some(20),
        _ => None,
    };
    let completed = if last_run.is_some() { i % 20 } else { 0 };
    set("repeat", json!({"times": times, "completed": completed}));
    set("enabled", json!(!paused));
    set(
        "state",
        json!(match (paused, failed) {
            (true, _) => "paused",
            (_, true) => "error",
            _ => "scheduled",
        }),
    );
    set(
        "paused_at",
        if paused {
            at(ctx.now - TimeDelta::days(2))
        } else {
            Value::Null
        },
    );
    set(
        "paused_reason",
        if paused {
            json!("on holiday until Monday")
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
    set(
        "last_status",
        match (last_run, failed) {
            (None, _) => Value::Null,
            (_, true) => json!("error"),
            _ => json!("ok"),
        },
    );
    set(
        "last_error",
        if failed {
            json!("agent exited with status 1\nTraceback (most recent call last): ...")
        } else {
            Value::Null
        },
    );
    set("failure_streak", json!(if failed { 3 } else { 0 }));
    match i % 5 {
        0 => set("deliver", json!("local")),
        1 => set("deliver", json!("telegram")),
        2 => set("deliver", json!("telegram:-1001234567890")),
        3 => set("deliver", json!("local,telegram")),
        _ => {
            set("deliver", json!("origin"));
            set(
                "origin",
                json!({"platform": "telegram", "chat_id": "-1001234567890", "thread_id": "17"}),
            );
        }
    }
    if let Some(name) = own_zone {
        set("timezone", json!(name));
    }
    record
}

/// A Hermes home whose jobs.json holds `count` generated jobs, written through the
/// store's own locked write path. Returns the home and how many jobs `list` shows.
fn make_home(template: &Record, count: u64, ctx: &Context) -> (tempfile::TempDir, usize) {
    let home = tempfile::tempdir().expect("cannot create a temp dir");
    if count == 0 {
        return (home, 0);
    }
    let records: Vec<Record> = (0..count).map(|i| job_record(template, i, ctx)).collect();
    let shown = records
        .iter()
        .filter(|r| r.get("enabled") == Some(&json!(true)))
        .count();
    let store = JsonFile::new(home.path().join("cron"));
    store
        .update::<(), DocumentError>(&ctx.now_text(), |doc| {
            doc.jobs = records;
            Ok(())
        })
        .expect("cannot write the bench store");
    let loaded = store.load().expect("the bench store is readable");
    assert_eq!(loaded.jobs.len() as u64, count);
    (home, shown)
}

/// Checks that `list --json` on `home` shows the `shown` jobs expected.
fn check_listing(bin: &Path, home: &Path, shown: usize) {
    let stdout = run_ok(hermes(bin, home, &["cron", "list", "--json"]).stdout(Stdio::piped()));
    let listing: Value = serde_json::from_slice(&stdout).expect("list --json prints JSON");
    let listed = listing["jobs"].as_array().map_or(0, Vec::len);
    assert_eq!(
        listed, shown,
        "hermes cron list --json shows every enabled job"
    );
}

/// Wall-clock times of `runs` runs of `hermes <args>`, after `warm_up` untimed ones.
fn time_runs(bin: &Path, home: &Path, args: &[&str], warm_up: usize, runs: usize) -> Vec<Duration> {
    for _ in 0..warm_up {
        run_ok(&mut hermes(bin, home, args));
    }
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            run_ok(&mut hermes(bin, home, args));
            start.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (sizes, warm_up, runs): (&[u64], usize, usize) = if measuring {
        (&[0, 1_000, 10_000], 1, 10)
    } else {
        println!("cli_list: smoke run (one run on small stores); use `cargo bench` for figures");
        (&[0, 100], 0, 1)
    };
    let bin = hermes_binary();
    let ctx = Context {
        now: NOW.parse().expect("NOW is RFC 3339"),
        zone: CONFIG_ZONE.parse().expect("valid zone"),
        legacy_zone: CONFIG_ZONE.parse().expect("valid zone"),
    };
    let template = template_record(&bin);
    println!("binary: {}", bin.display());
    println!(
        "{:<26} {:<24} {:>5} {:>9} {:>10} {:>9}",
        "store", "command", "runs", "min ms", "median ms", "max ms"
    );
    for &count in sizes {
        let (home, shown) = make_home(&template, count, &ctx);
        check_listing(&bin, home.path(), shown);
        let bytes = std::fs::metadata(home.path().join("cron/jobs.json")).map_or(0, |m| m.len());
        let store = if count == 0 {
            "no jobs.json".to_string()
        } else {
            format!("{} jobs ({:.1} MB)", grouped(count), bytes as f64 / 1e6)
        };
        for args in [&["cron", "list"][..], &["cron", "list", "--json"][..]] {
            let times = time_runs(&bin, home.path(), args, warm_up, runs);
            println!(
                "{:<26} {:<24} {:>5} {:>9.1} {:>10.1} {:>9.1}",
                store,
                format!("hermes {}", args.join(" ")),
                runs,
                ms(times[0]),
                ms(median(&times)),
                ms(times[times.len() - 1])
            );
        }
    }
}
