//! `overlap` through the real binary (docs/SCHEDULES.md, "Overlap"): a slow script job
//! whose next occurrences come due while it runs — each `hermes cron tick` here is
//! another scheduler process at a later pinned instant — is skipped (the default),
//! queued (one occurrence runs right after, never more than one waiting) or replaces
//! the running run (recorded `cancelled`). Set, shown and cleared on the command line.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Hermes;

fn at(hour: u32) -> String {
    format!("2026-03-01T{hour:02}:00:00Z")
}

/// A script job, due hourly from 11:00, whose first run sleeps `first` seconds and
/// later ones none; each run writes `start N` and `end N` to `runs.log`.
fn slow_job(hermes: &Hermes, first: u32, overlap: &[&str]) -> String {
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let log = hermes.home().join("runs.log");
    std::fs::write(
        scripts.join("slow.sh"),
        format!(
            "log={log}\nn=$(grep -c start \"$log\" 2>/dev/null || echo 0)\nn=$((n + 1))\n\
             echo \"start $n\" >> \"$log\"\n\
             if [ \"$n\" = 1 ]; then sleep {first}; fi\n\
             echo \"end $n\" >> \"$log\"\necho \"run $n done\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    let mut extra = vec!["--script", "slow.sh", "--no-agent"];
    extra.extend_from_slice(overlap);
    hermes.add("every 1h", "", &extra)
}

fn log(hermes: &Hermes) -> Vec<String> {
    std::fs::read_to_string(hermes.home().join("runs.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `hermes cron tick` at `now`, in the background, once its run has started.
fn tick_in_background(hermes: &Hermes, now: &str) -> Child {
    let child = hermes
        .command(&["cron", "tick"])
        .env("HERMES_NOW", now)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !log(hermes).iter().any(|l| l == "start 1") {
        assert!(Instant::now() < deadline, "the first run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn wait(child: &mut Child, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    false
}

/// The job's ledger rows, oldest first: (scheduled hour, status, error).
fn rows(hermes: &Hermes, id: &str) -> Vec<(String, String, String)> {
    let out = hermes.cron(&["runs", id, "--json"]);
    let runs: Value = serde_json::from_str(out.ok()).unwrap();
    let mut rows: Vec<(String, String, String)> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["scheduled_at"].as_str().unwrap_or("")[11..13].to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["error"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    rows.reverse();
    rows
}

#[test]
fn overlap_is_set_shown_and_cleared_and_a_bad_value_is_refused() {
    let hermes = Hermes::new();
    let id = hermes.add("every 1h", "Check", &["--overlap", "queue"]);
    assert_eq!(hermes.job(&id)["overlap"], "queue");
    let shown = hermes.cron(&["edit", &id, "--overlap", "REPLACE"]);
    assert!(
        shown.ok().contains("  Overlap:  replace\n"),
        "{}",
        shown.stdout
    );
    assert_eq!(hermes.job(&id)["overlap"], "replace");
    hermes.cron(&["edit", &id, "--overlap", ""]).ok();
    assert!(hermes.job(&id).get("overlap").is_none());
    let bad = hermes.cron(&["edit", &id, "--overlap", "later"]);
    assert_eq!(bad.code, Some(1));
    assert_eq!(
        bad.stderr.trim(),
        "error: Invalid overlap 'later'. Use skip, queue or replace (empty string restores the default, skip)."
    );
    let plain = hermes.add("every 1h", "Check", &[]);
    assert!(
        hermes.job(&plain).get("overlap").is_none(),
        "skip is the default, not written"
    );
}

#[test]
#[ignore = "slow (3-5 s of real time): .ci/run runs it once"]
fn by_default_an_occurrence_due_during_a_run_is_skipped() {
    let hermes = Hermes::new();
    let id = slow_job(&hermes, 3, &[]);
    let mut first = tick_in_background(&hermes, &at(11));
    hermes.cron_at(&at(12), &["tick"]).ok();
    assert!(wait(&mut first, Duration::from_secs(20)));
    assert_eq!(log(&hermes), ["start 1", "end 1"]);
    let rows = rows(&hermes, &id);
    assert_eq!(rows[0].1, "ok");
    assert_eq!(
        rows[1],
        (
            "12".into(),
            "skipped".into(),
            "skipped (still running)".into()
        )
    );
}

#[test]
#[ignore = "slow (3-5 s of real time): .ci/run runs it once"]
fn queue_runs_one_occurrence_that_came_due_right_after_the_run_ends() {
    let hermes = Hermes::new();
    let id = slow_job(&hermes, 3, &["--overlap", "queue"]);
    let mut first = tick_in_background(&hermes, &at(11));
    // Two occurrences come due while it runs: only the newest waits.
    let queued = hermes.cron_at(&at(12), &["tick"]);
    assert!(
        queued.ok().contains("queued (still running)"),
        "{}",
        queued.stdout
    );
    hermes.cron_at(&at(13), &["tick"]).ok();
    assert!(wait(&mut first, Duration::from_secs(20)));
    // One after the other, never at once.
    assert_eq!(log(&hermes), ["start 1", "end 1", "start 2", "end 2"]);
    let rows = rows(&hermes, &id);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0], ("11".into(), "ok".into(), String::new()));
    assert_eq!(
        rows[1],
        (
            "12".into(),
            "skipped".into(),
            "skipped (still running): a later occurrence ran in its place (overlap: queue)".into()
        )
    );
    assert_eq!(rows[2], ("13".into(), "ok".into(), String::new()));
}

#[test]
fn replace_cancels_the_running_run_and_starts_the_new_one() {
    let hermes = Hermes::new();
    let id = slow_job(&hermes, 300, &["--overlap", "replace"]);
    let mut first = tick_in_background(&hermes, &at(11));
    let started = Instant::now();
    let second = hermes.cron_at(&at(12), &["tick"]);
    let out = second.ok();
    assert!(out.contains(": ok"), "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(wait(&mut first, Duration::from_secs(5)));
    // The first run's script was stopped in its sleep: it never wrote its end.
    assert_eq!(log(&hermes), ["start 1", "start 2", "end 2"]);
    let rows = rows(&hermes, &id);
    assert_eq!(rows[0].0, "11");
    assert_eq!(rows[0].1, "cancelled");
    assert_eq!(rows[1], ("12".into(), "ok".into(), String::new()));
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn every_door_takes_overlap_and_refuses_a_bad_one_with_the_same_words() {
    let hermes = Hermes::new();
    let refusal =
        "Invalid overlap 'later'. Use skip, queue or replace (empty string restores the default, skip).";
    let api = crate::api::serve(&hermes, &[]);
    let auth = [("Authorization", &*format!("Bearer {}", crate::api::KEY))];
    let body = serde_json::json!({"name": "q", "schedule": "every 1h", "prompt": "Check", "overlap": "queue"});
    let created = api.send("POST", "/api/jobs", &auth, &body.to_string());
    assert_eq!(created.status, 200, "{}", created.body);
    let id = created.json()["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(hermes.job(&id)["overlap"], "queue");
    let patched = api.send(
        "PATCH",
        &format!("/api/jobs/{id}"),
        &auth,
        r#"{"overlap": "replace"}"#,
    );
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(hermes.job(&id)["overlap"], "replace");
    let bad = api.send(
        "PATCH",
        &format!("/api/jobs/{id}"),
        &auth,
        r#"{"overlap": "later"}"#,
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"], refusal);

    let replies = crate::doors::mcp_results(
        &hermes,
        &[
            serde_json::json!({"action": "update", "job_id": id, "overlap": "later"}),
            serde_json::json!({"action": "update", "job_id": id, "overlap": "skip"}),
        ],
    );
    assert_eq!(replies[0]["structuredContent"]["error"], refusal);
    assert_eq!(replies[1]["structuredContent"]["success"], true);
    assert_eq!(replies[1]["structuredContent"]["job"]["overlap"], "skip");
    let cli = hermes.cron(&["edit", &id, "--overlap", "later"]);
    assert_eq!(cli.stderr.trim(), format!("error: {refusal}"));
}
