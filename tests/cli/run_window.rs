//! When jobs run, beyond their schedule (docs/SCHEDULES.md, "Start, end and jitter",
//! "Missed runs and catch-up"; docs/COMMANDS.md, "backfill"): `--start-at` and
//! `--until`, a fixed per-job jitter, overdue runs spread over `cron.catch_up_spread`,
//! and `hermes cron backfill`. Every test runs on jobs.json and, with
//! `HERMES_TEST_STORE=postgres`, on PostgreSQL.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::agent::{text, user_prompt, Fake as Model};
use crate::support::{created_id, Hermes};

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// A home whose scripts folder has `mark.sh`, which appends the job id to side.txt.
fn home(hermes: Hermes) -> Hermes {
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(
        scripts.join("mark.sh"),
        "echo \"$HERMES_JOB_ID\" >> \"$HERMES_HOME/side.txt\"\necho ran\n",
    )
    .unwrap();
    hermes
}

fn marks(hermes: &Hermes) -> Vec<String> {
    std::fs::read_to_string(hermes.home().join("side.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn runs(hermes: &Hermes, job: &str) -> Vec<Value> {
    let out = hermes.cron(&["runs", job, "--json", "--limit", "500"]);
    let v: Value = serde_json::from_str(out.ok()).unwrap();
    v["runs"].as_array().unwrap().clone()
}

fn next_run(hermes: &Hermes, id: &str) -> Option<DateTime<Utc>> {
    hermes.job(id)["next_run_at"].as_str().map(at)
}

#[test]
fn start_at_and_until_bound_the_runs_across_a_dst_change() {
    // New York moves to summer time on 2026-03-08: 09:00 is 14:00Z before, 13:00Z after.
    let hermes = home(Hermes::in_zone("America/New_York"));
    let id = hermes.add(
        "0 9 * * *",
        "",
        &[
            "--script",
            "mark.sh",
            "--no-agent",
            "--start-at",
            "2026-03-06T09:00",
            "--until",
            "2026-03-09T09:00",
        ],
    );
    let job = hermes.job(&id);
    assert_eq!(job["start_at"], "2026-03-06T09:00:00-05:00");
    assert_eq!(
        job["until"], "2026-03-09T09:00:00-04:00",
        "read in the job's zone, after the change"
    );
    assert_eq!(
        job["next_run_at"], "2026-03-06T09:00:00-05:00",
        "the first run is the first occurrence at or after --start-at"
    );
    let listing = hermes.cron(&["list"]);
    assert!(
        listing
            .ok()
            .contains("Window:   from 2026-03-06T09:00:00-05:00, until 2026-03-09T09:00:00-04:00"),
        "{}",
        listing.stdout
    );
    for now in [
        "2026-03-05T14:00:00Z",
        "2026-03-06T14:00:00Z",
        "2026-03-07T14:00:00Z",
        "2026-03-08T13:00:00Z",
    ] {
        hermes.cron_at(now, &["tick"]).ok();
    }
    assert_eq!(
        marks(&hermes).len(),
        3,
        "nothing before --start-at, then each day"
    );
    assert_eq!(
        next_run(&hermes, &id),
        Some(at("2026-03-09T13:00:00Z")),
        "an occurrence exactly at --until still runs"
    );
    hermes.cron_at("2026-03-09T13:00:00Z", &["tick"]).ok();
    let job = hermes.job(&id);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["next_run_at"], Value::Null);
    hermes.cron_at("2026-03-10T13:00:00Z", &["tick"]).ok();
    assert_eq!(marks(&hermes).len(), 4, "no run after --until");
    let listed: Value =
        serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok()).unwrap();
    let listed = &listed["jobs"][0];
    assert_eq!(listed["start_at"], "2026-03-06T09:00:00-05:00");
    assert_eq!(listed["until"], "2026-03-09T09:00:00-04:00");
}

#[test]
fn a_window_the_schedule_cannot_meet_is_refused_with_one_line() {
    let hermes = home(Hermes::new());
    let before = hermes.store_bytes();
    let reversed = hermes.cron(&[
        "add",
        "every 1h",
        "report",
        "--start-at",
        "2026-03-05T00:00:00Z",
        "--until",
        "2026-03-04T00:00:00Z",
    ]);
    assert!(
        reversed.user_error().contains("--until"),
        "{}",
        reversed.stderr
    );
    let once = hermes.cron(&[
        "add",
        "in 30m",
        "remind me",
        "--until",
        "2026-03-04T00:00:00Z",
    ]);
    assert!(once.user_error().contains("recurring"), "{}", once.stderr);
    let jitter = hermes.cron(&["add", "every 1h", "report", "--jitter", "soon"]);
    assert!(
        jitter.user_error().contains("--jitter"),
        "{}",
        jitter.stderr
    );
    assert_eq!(hermes.store_bytes(), before, "a refused add stores nothing");
    let id = hermes.add("every 1h", "report", &[]);
    let past = hermes.cron(&["edit", &id, "--until", "2026-02-01T00:00:00Z"]);
    assert!(past.user_error().contains("--until"), "{}", past.stderr);
}

#[test]
fn jitter_moves_each_run_by_the_same_offset_in_every_process_and_on_every_host() {
    let hermes = home(Hermes::new());
    let hourly = |name: &str| {
        hermes.add(
            "0 * * * *",
            "",
            &[
                "--script",
                "mark.sh",
                "--no-agent",
                "--jitter",
                "30m",
                "--name",
                name,
            ],
        )
    };
    let (a, b) = (hourly("a"), hourly("b"));
    let offset = |id: &str, hour: &str| next_run(&hermes, id).unwrap() - at(hour);
    let first_a = offset(&a, "2026-03-01T11:00:00Z");
    let first_b = offset(&b, "2026-03-01T11:00:00Z");
    for first in [first_a, first_b] {
        assert!(first >= chrono::Duration::zero() && first < chrono::Duration::minutes(30));
    }
    assert_ne!(
        first_a, first_b,
        "jobs on one schedule do not start together"
    );
    let listing = hermes.cron(&["list"]);
    assert!(
        listing.ok().contains("Window:   jitter 30m"),
        "{}",
        listing.stdout
    );
    // A second host on a copy of the store computes the same times.
    let other = home(Hermes::new());
    other.write_store(&hermes.store_bytes().unwrap());
    // Both have run once the later of the two is due.
    let due = (at("2026-03-01T11:00:00Z") + first_a.max(first_b)).to_rfc3339();
    hermes.cron_at(&due, &["tick"]).ok();
    other.cron_at(&due, &["tick"]).ok();
    let mut ran = marks(&hermes);
    ran.sort();
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(ran, both);
    for (id, first) in [(&a, first_a), (&b, first_b)] {
        assert_eq!(
            offset(id, "2026-03-01T12:00:00Z"),
            first,
            "the same offset every run"
        );
        assert_eq!(
            next_run(&other, id),
            next_run(&hermes, id),
            "and on every host"
        );
    }
}

/// Polls `check` every 200 ms until it is true or `limit` passes.
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    check()
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "slow (8-30 s of real time): .ci/run runs it once"]
fn twenty_overdue_jobs_at_start_are_spread_over_the_window_oldest_first() {
    let mut hermes = home(Hermes::new());
    std::fs::write(
        hermes.home().join("config.yaml"),
        "cron:\n  catch_up_spread: 20s\n",
    )
    .unwrap();
    // Created two hours ago: due 60 to 41 minutes ago, the oldest first.
    let created = (Utc::now() - chrono::Duration::hours(2)).to_rfc3339();
    let ids: Vec<String> = (0..20)
        .map(|n| {
            let schedule = format!("every {}m", 60 + n);
            let run = hermes.cron_at(
                &created,
                &[
                    "add",
                    &schedule,
                    "",
                    "--script",
                    "mark.sh",
                    "--no-agent",
                    "--name",
                    &format!("j{n}"),
                ],
            );
            created_id(run.ok())
        })
        .collect();
    hermes.now = None;
    let daemon = Daemon(
        hermes
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_for(Duration::from_secs(60), || marks(&hermes).len() >= 20),
        "only {} ran",
        marks(&hermes).len()
    );
    drop(daemon);
    let mut ran = marks(&hermes);
    ran.sort();
    let mut each = ids.clone();
    each.sort();
    assert_eq!(ran, each, "each once");
    // Each run's turn (its ledger `scheduled_at`) and when it really started.
    let (turns, started): (Vec<DateTime<Utc>>, Vec<DateTime<Utc>>) = ids
        .iter()
        .map(|id| {
            let runs = runs(&hermes, id);
            assert_eq!(runs.len(), 1, "{runs:?}");
            let at_field = |key: &str| at(runs[0][key].as_str().unwrap());
            (at_field("scheduled_at"), at_field("started_at"))
        })
        .unzip();
    // The oldest due first, never two turns in one second, all within the window.
    for pair in turns.windows(2) {
        assert!(
            pair[1].timestamp() > pair[0].timestamp(),
            "two turns in one second, or out of order: {pair:?}"
        );
    }
    let first = started[0];
    assert!(
        turns[19] - first <= chrono::Duration::seconds(20),
        "{turns:?}"
    );
    assert!(
        turns[19] - first >= chrono::Duration::seconds(15),
        "not spread: {turns:?}"
    );
    // None started before its turn (a busy machine may start one a little late).
    for (turn, start) in turns.iter().zip(&started).skip(1) {
        assert!(start >= turn, "started before its turn: {start} < {turn}");
    }
}

const BACKFILL_CONFIG: &str = "cron:\n  max_parallel_jobs: 1\n";

#[test]
fn backfill_runs_each_past_occurrence_once_across_two_invocations_naming_its_date() {
    let model = Model::start(vec![text("Report written.")]);
    let hermes = Hermes::new();
    std::fs::write(
        hermes.home().join("config.yaml"),
        format!(
            "model:\n  default: test-model\n  base_url: {}\n{BACKFILL_CONFIG}",
            model.base
        ),
    )
    .unwrap();
    let id = hermes.add("0 9 * * *", "Write the daily report", &["--name", "daily"]);
    let later = "2026-03-01T10:05:00Z";
    let dry = hermes.cron_at(
        later,
        &[
            "backfill",
            "daily",
            "--from",
            "2026-02-20",
            "--to",
            "2026-02-26T23:59",
            "--dry-run",
        ],
    );
    let listed = dry.ok();
    assert!(
        listed.contains("Would run 7 occurrence(s) of daily"),
        "{listed}"
    );
    for day in 20..=26 {
        assert!(
            listed.contains(&format!("  2026-02-{day}T09:00:00+00:00\n")),
            "{listed}"
        );
    }
    assert_eq!(model.count(), 0, "a dry run makes no request");
    assert!(runs(&hermes, &id).is_empty(), "a dry run records nothing");
    let first = hermes.cron_at(
        later,
        &[
            "backfill",
            "daily",
            "--from",
            "2026-02-20",
            "--to",
            "2026-02-23T23:59",
        ],
    );
    assert!(
        first.ok().contains("4 run, 0 already run before"),
        "{}",
        first.stdout
    );
    let second = hermes.cron_at(
        later,
        &[
            "backfill",
            &id,
            "--from",
            "2026-02-20T00:00:00Z",
            "--to",
            "2026-02-26T23:59:00Z",
        ],
    );
    assert!(
        second.ok().contains("3 run, 4 already run before"),
        "{}",
        second.stdout
    );
    assert_eq!(model.count(), 7, "each occurrence ran once");
    for (n, day) in (20..=26).enumerate() {
        let prompt = user_prompt(&model.requests()[n]);
        assert!(
            prompt.contains("Write the daily report\n\n## Run Context\n"),
            "{prompt}"
        );
        assert!(
            prompt.contains(&format!("2026-02-{day}T09:00:00+00:00")),
            "oldest first, each naming its occurrence: {prompt}"
        );
    }
    let rows = runs(&hermes, &id);
    assert_eq!(rows.len(), 7);
    assert!(
        rows.iter()
            .all(|r| r["source"] == "backfill" && r["status"] == "ok"),
        "{rows:?}"
    );
    let again = hermes.cron_at(
        later,
        &[
            "backfill",
            "daily",
            "--from",
            "2026-02-20",
            "--to",
            "2026-02-26T23:59",
            "--dry-run",
        ],
    );
    assert_eq!(again.ok().matches("(already run: skipped)").count(), 7);
    let future = hermes.cron_at(
        later,
        &[
            "backfill",
            "daily",
            "--from",
            "2026-02-20",
            "--to",
            "2026-03-02",
        ],
    );
    assert!(
        future.user_error().contains("in the future"),
        "{}",
        future.stderr
    );
    assert_eq!(model.count(), 7);
}
