//! Stopping a run and running one again through the real binary (docs/COMMANDS.md,
//! "cancel" and "replay"; docs/RUNNING.md, "Cancelling a run"): a run whose tool hangs
//! is cancelled from the CLI, from the REST route and — on PostgreSQL — from another
//! host, within 5 seconds, with the tool's processes gone, recorded `cancelled`, nothing
//! delivered and the schedule unmoved; cancelling nothing is refused; a replay asks the
//! model what the original run asked.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::{home_with, openai_config, runs, text, tools, user_prompt, Fake};
use crate::api::{serve, KEY};
use crate::support::{alive, Hermes};

const APPROVE: &str = "approvals:\n  cron_mode: approve\n";

/// A home whose model first asks for a terminal command that starts a long `sleep` in
/// the background of its shell (a `sh` whose command line names `pidfile`, so that the
/// test finds it from outside the run's sandbox) and waits for it: the run
/// hangs in its tool, with a grandchild process, until stopped.
fn hanging_home(pidfile: &Path) -> (Fake, Hermes) {
    let command = format!("sh -c 'sleep 300; : {}' & wait", pidfile.display());
    let fake = Fake::start(vec![
        tools(&[("terminal", json!({"command": command, "timeout": 600}))]),
        text("done"),
    ]);
    let hermes = home_with(&format!("{}{APPROVE}", openai_config(&fake.base)));
    (fake, hermes)
}

/// `hermes cron run JOB` in the background, once its tool's process is up: its pid.
fn start_run(hermes: &Hermes, id: &str, pidfile: &Path) -> (Child, i32) {
    let child = hermes
        .command(&["cron", "run", id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, wait_for_pid(pidfile))
}

fn wait_for_pid(pidfile: &Path) -> i32 {
    // The sleeper's `sh`, seen by its command line: the run's tools have a PID namespace
    // of their own, so a pid they would write down means nothing out here.
    let wanted = format!("sh\0-c\0sleep 300; : {}\0", pidfile.display());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| line == wanted.as_bytes())
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for `child` to exit, at most until `deadline`: its exit code.
fn exited_by(child: &mut Child, deadline: Instant) -> Option<i32> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for the newest run of `id` to leave `running`: that row.
fn ended(hermes: &Hermes, id: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let row = runs(hermes, id).remove(0);
        if row["status"] != "running" {
            return row;
        }
        assert!(Instant::now() < deadline, "still running: {row}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the user sees of a cancelled run: the row, the document, the job.
fn assert_cancelled(hermes: &Hermes, id: &str, next_before: &Value, grandchild: i32) {
    assert!(
        !alive(grandchild),
        "the tool's child {grandchild} is still running"
    );
    let row = runs(hermes, id).remove(0);
    assert_eq!(row["status"], "cancelled", "{row}");
    assert_eq!(row["delivery"], "none: the run was cancelled", "{row}");
    let job = hermes.job(id);
    assert_eq!(job["last_status"], "cancelled");
    assert_eq!(&job["next_run_at"], next_before, "the schedule moved");
    let run_id = row["id"].as_i64().unwrap().to_string();
    let document = hermes.cron(&["output", &run_id]);
    assert!(
        document.ok().contains("cancelled on request"),
        "{}",
        document.stdout
    );
}

#[test]
fn a_hanging_run_is_cancelled_from_the_cli_within_5_seconds_with_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let (fake, hermes) = hanging_home(&pidfile);
    let id = hermes.add("every 1h", "Wait for the sleeper", &[]);
    let next_before = hermes.job(&id)["next_run_at"].clone();
    let (mut run, grandchild) = start_run(&hermes, &id, &pidfile);
    assert!(alive(grandchild));

    let asked = Instant::now();
    let cancel = hermes.cron(&["cancel", &id]);
    let out = cancel.ok();
    assert!(out.contains("Cancelling run "), "{out}");
    assert!(out.contains(": cancelled"), "{out}");
    let code = exited_by(&mut run, asked + Duration::from_secs(5));
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "took {:?}",
        asked.elapsed()
    );
    // `hermes cron run` says how its run ended and fails, as for any run not `ok`.
    assert_eq!(code, Some(1));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut run.stdout.take().unwrap(), &mut said).unwrap();
    assert!(said.contains(": cancelled"), "{said}");
    assert_cancelled(&hermes, &id, &next_before, grandchild);
    // Only the request that started the tool went out; nothing more after the cancel.
    assert_eq!(fake.count(), 1);

    // `stop` is the same verb; with nothing running it says so and exits 1.
    let again = hermes.cron(&["stop", &id]);
    assert_eq!(again.code, Some(1), "{again:?}");
    assert_eq!(
        again.stderr.trim(),
        format!("error: Job {id} has no run going: nothing to cancel")
    );
    let run_id = runs(&hermes, &id)[0]["id"].as_i64().unwrap().to_string();
    let by_run = hermes.cron(&["cancel", &run_id]);
    assert_eq!(by_run.code, Some(1));
    assert_eq!(
        by_run.stderr.trim(),
        format!("error: Run {run_id} is not running: nothing to cancel")
    );
    let unknown = hermes.cron(&["cancel", "no-such-job"]);
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("No job or run 'no-such-job'"),
        "{unknown:?}"
    );
}

#[test]
fn a_run_started_through_the_api_is_cancelled_by_the_rest_route_and_409_after() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let (_fake, hermes) = hanging_home(&pidfile);
    let id = hermes.add("every 1h", "Wait for the sleeper", &[]);
    let next_before = hermes.job(&id)["next_run_at"].clone();
    let api = serve(&hermes, &[]);
    let auth = [("Authorization", &*format!("Bearer {KEY}"))];
    let started = api.send("POST", &format!("/api/jobs/{id}/run"), &auth, "");
    assert_eq!(started.status, 200, "{}", started.body);
    let grandchild = wait_for_pid(&pidfile);

    let asked = Instant::now();
    let cancel = api.send("POST", &format!("/api/jobs/{id}/cancel"), &auth, "");
    assert_eq!(cancel.status, 200, "{}", cancel.body);
    let body = cancel.json();
    assert_eq!(body["ok"], true);
    assert_eq!(body["job_id"], id.as_str());
    let row = ended(&hermes, &id, Duration::from_secs(5));
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(body["runs"], json!([row["id"]]));
    assert_cancelled(&hermes, &id, &next_before, grandchild);

    let nothing = api.send("POST", &format!("/api/jobs/{id}/cancel"), &auth, "");
    assert_eq!(nothing.status, 409, "{}", nothing.body);
    assert_eq!(
        nothing.json()["error"],
        format!("Job {id} has no run going: nothing to cancel")
    );
    let missing = api.send("POST", "/api/jobs/0123456789ab/cancel", &auth, "");
    assert_eq!(missing.status, 404);
}

#[test]
fn on_postgresql_a_run_is_cancelled_from_another_host() {
    if !crate::support::on_postgres() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let (_fake, hermes) = hanging_home(&pidfile);
    let id = hermes.add("every 1h", "Wait for the sleeper", &[]);
    let next_before = hermes.job(&id)["next_run_at"].clone();
    let (mut run, grandchild) = start_run(&hermes, &id, &pidfile);

    let other = hermes.on_same_store();
    let asked = Instant::now();
    let cancel = other
        .command(&["cron", "cancel", &id])
        .env("HERMES_MACHINE_ID", "the-other-host")
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{cancel:?}");
    assert_eq!(exited_by(&mut run, asked + Duration::from_secs(5)), Some(1));
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert_cancelled(&hermes, &id, &next_before, grandchild);
}

#[test]
fn a_replay_asks_the_model_what_the_original_run_asked_and_is_recorded_as_one() {
    let fake = Fake::start(vec![text("first"), text("second"), text("third")]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add(
        "every 1h",
        "Summarise the news",
        &["--model", "pinned-model"],
    );
    hermes.cron(&["run", &id]).ok();
    let original = runs(&hermes, &id)[0]["id"].as_i64().unwrap();
    // The job changes after the run: the replay still asks what the run asked.
    hermes
        .cron(&[
            "edit",
            &id,
            "--prompt",
            "Something else",
            "--model",
            "other-model",
        ])
        .ok();
    let replay = hermes.cron(&["replay", &original.to_string()]);
    let out = replay.ok();
    assert!(out.contains(": ok"), "{out}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one request per run");
    assert_eq!(requests[1]["model"], "pinned-model");
    assert_eq!(user_prompt(&requests[1]), user_prompt(&requests[0]));
    assert!(user_prompt(&requests[1]).contains("Summarise the news"));

    let rows = runs(&hermes, &id);
    assert_eq!(rows[0]["source"], "replay");
    assert_eq!(rows[0]["replay_of"], original);
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[1]["source"], "manual");
    assert_eq!(rows[1]["replay_of"], Value::Null);

    let unknown = hermes.cron(&["replay", "99999"]);
    assert_eq!(unknown.code, Some(1));
    assert_eq!(
        unknown.stderr.trim(),
        "error: No run 99999: see the run ids with 'hermes cron runs'"
    );
}

#[test]
fn a_replay_through_the_api_keeps_the_per_run_prompt_and_shows_in_api_runs() {
    let fake = Fake::start(vec![text("first"), text("second")]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Check the queue", &[]);
    let api = serve(&hermes, &[]);
    let auth = [("Authorization", &*format!("Bearer {KEY}"))];
    let body = json!({"prompt": "Only the red items"}).to_string();
    let started = api.send("POST", &format!("/api/jobs/{id}/run"), &auth, &body);
    assert_eq!(started.status, 200, "{}", started.body);
    let first = ended(&hermes, &id, Duration::from_secs(20));
    let original = first["id"].as_i64().unwrap();

    let replay = api.send("POST", &format!("/api/runs/{original}/replay"), &auth, "");
    assert_eq!(replay.status, 200, "{}", replay.body);
    let answer = replay.json();
    assert_eq!(answer["replay_of"], original);
    let new_run = answer["run"].as_i64().unwrap();
    let row = ended(&hermes, &id, Duration::from_secs(20));
    assert_eq!(row["id"], new_run);
    assert_eq!(row["status"], "ok", "{row}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let asked = user_prompt(&requests[1]);
    assert!(asked.contains("Only the red items"), "{asked}");
    assert_eq!(asked, user_prompt(&requests[0]));

    let listed = api.get(&format!("/api/runs?job={id}")).json();
    assert_eq!(listed["runs"][0]["source"], "replay");
    assert_eq!(listed["runs"][0]["replay_of"], original);
    let missing = api.send("POST", "/api/runs/99999/replay", &auth, "");
    assert_eq!(missing.status, 404);
}

#[test]
fn the_mcp_tool_cancels_a_running_run_and_says_when_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let (_fake, hermes) = hanging_home(&pidfile);
    let id = hermes.add("every 1h", "Wait for the sleeper", &[]);
    let next_before = hermes.job(&id)["next_run_at"].clone();
    let (mut run, grandchild) = start_run(&hermes, &id, &pidfile);

    let asked = Instant::now();
    let replies = crate::doors::mcp_results(&hermes, &[json!({"action": "cancel", "job_id": id})]);
    let reply = &replies[0]["structuredContent"];
    assert_eq!(reply["success"], true, "{}", replies[0]);
    assert!(reply["message"]
        .as_str()
        .unwrap()
        .starts_with("Cancelling run "));
    assert_eq!(exited_by(&mut run, asked + Duration::from_secs(5)), Some(1));
    assert_cancelled(&hermes, &id, &next_before, grandchild);

    let replies = crate::doors::mcp_results(&hermes, &[json!({"action": "cancel", "job_id": id})]);
    assert_eq!(
        replies[0]["structuredContent"],
        json!({"success": false, "error": format!("Job {id} has no run going: nothing to cancel")})
    );
}
