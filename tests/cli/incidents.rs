//! Failure incidents and declared failures through the real binary: a failing script job
//! (or an agent against the local fake model) delivering to a local fake of the Telegram
//! Bot API; `hermes cron incidents` shows what the store kept. On jobs.json the same
//! table is read and written by Python Hermes 0.22 (its CLI and its incidents module,
//! from the venv of `scripts/python-hermes/setup.sh 0.22`).

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::agent::{openai_config, text, Fake as ModelFake};
use crate::delivery::{add_job, home, ok, Answer, Fake};
use crate::support::{Hermes, Run};

const TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

fn telegram_ok(index: usize) -> Answer {
    ok(
        json!({"ok": true, "result": {"message_id": index + 1, "date": 1772359200, "chat": {"id": 1}}}),
    )
}

/// `.env` lines that make the fake Telegram, with chat 5550001 as the home channel.
fn telegram_env(fake: &Fake) -> Vec<(&'static str, String)> {
    vec![
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", fake.base()),
        ("TELEGRAM_HOME_CHANNEL", "5550001".to_string()),
    ]
}

/// A home whose "daily report" script job (delivering to `deliver`) fails the same way
/// every run; returns the home and the job's id.
fn failing_job(fake: &Fake, deliver: &str) -> (Hermes, String) {
    let hermes = home("", &telegram_env(fake));
    fs::write(
        hermes.home().join("scripts").join("report.sh"),
        "echo 'disk check failed' >&2\nexit 3\n",
    )
    .unwrap();
    let id = add_job(&hermes, deliver, &[]);
    (hermes, id)
}

/// `hermes cron run <id>` at `now`, which must fail.
fn fail_at(hermes: &Hermes, id: &str, now: &str) {
    let run = hermes.cron_at(now, &["run", id]);
    assert_eq!(run.code, Some(1), "{run:?}");
}

/// The incidents `hermes cron incidents --json [args]` lists.
pub(crate) fn incidents(hermes: &Hermes, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["incidents", "--json"];
    all.extend_from_slice(args);
    let listed: Value = serde_json::from_str(hermes.cron(&all).ok()).expect("incidents JSON");
    listed["incidents"].as_array().expect("a list").clone()
}

fn notices(fake: &Fake) -> Vec<String> {
    fake.bodies("/sendMessage")
        .iter()
        .map(|b| b["text"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn three_identical_failures_open_one_incident_and_alert_once() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "telegram");
    for minute in 1..=3 {
        fail_at(&hermes, &id, &format!("2026-03-01T10:0{minute}:00Z"));
    }
    let sent = notices(&fake);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("disk check failed"), "{}", sent[0]);
    let listed = incidents(&hermes, &[]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let incident = &listed[0];
    assert_eq!(incident["job_id"], id.as_str());
    assert_eq!(incident["state"], "alerted");
    assert_eq!(incident["failure_type"], "script");
    assert_eq!(incident["first_seen_at"], "2026-03-01T10:01:00+00:00");
    assert_eq!(incident["last_seen_at"], "2026-03-01T10:03:00+00:00");
    assert_eq!(incident["alerted_at"], "2026-03-01T10:01:00+00:00");
    let incident_id = incident["id"].as_str().unwrap();
    assert!(
        incident_id.starts_with(&format!("{}_", &id[..6])),
        "{incident_id}"
    );
    assert_eq!(incident_id.len(), 6 + 1 + 12);
    // The withheld notices are in the ledger, each run still failed.
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", &id, "--json"]).ok()).unwrap();
    let deliveries: Vec<&str> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["delivery"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(deliveries.len(), 3);
    assert!(
        deliveries[0].starts_with(&format!("withheld: incident {incident_id} is alerted")),
        "{deliveries:?}"
    );
    // The text listing, as Python Hermes 0.22 shows it.
    let shown = hermes.cron(&["incidents"]);
    let shown = shown.ok();
    assert!(
        shown.contains(&format!("  {incident_id}  alerted\n")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("    Job:        {id}\n")),
        "{shown}"
    );
    assert!(shown.contains("    Type:       script\n"), "{shown}");
    assert!(
        shown.contains("  1 incident(s)  |  ack one with: hermes cron incidents ack <id>"),
        "{shown}"
    );
}

#[test]
fn after_the_quiet_window_one_reminder_goes_out() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "telegram");
    fs::write(
        hermes.home().join("config.yaml"),
        "cron:\n  failure_repeat_alert_hours: 0.5\n",
    )
    .unwrap();
    fail_at(&hermes, &id, "2026-03-01T10:00:00Z");
    fail_at(&hermes, &id, "2026-03-01T10:29:00Z");
    fail_at(&hermes, &id, "2026-03-01T10:31:00Z");
    fail_at(&hermes, &id, "2026-03-01T10:40:00Z");
    assert_eq!(notices(&fake).len(), 2);
    assert_eq!(
        incidents(&hermes, &[])[0]["alerted_at"],
        "2026-03-01T10:31:00+00:00"
    );
}

#[test]
fn ack_closes_the_incident_and_keeps_its_error_quiet() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "telegram");
    fail_at(&hermes, &id, "2026-03-01T10:01:00Z");
    let incident_id = incidents(&hermes, &[])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let acked = hermes.cron_at("2026-03-01T10:02:00Z", &["incidents", "ack", &incident_id]);
    assert_eq!(
        acked.ok(),
        format!("Incident {incident_id} acknowledged (closed): this error stays quiet until its text changes.\n")
    );
    // Past any reminder window, the same failure still sends nothing.
    fail_at(&hermes, &id, "2026-03-02T10:00:00Z");
    assert_eq!(notices(&fake).len(), 1);
    let closed = incidents(&hermes, &["--state", "closed"]);
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0]["acked_at"], "2026-03-01T10:02:00+00:00");
    assert!(incidents(&hermes, &["--state", "alerted"]).is_empty());
    assert_eq!(
        hermes.cron(&["incidents", "ack", &incident_id]).ok(),
        format!("Incident {incident_id} is already closed.\n")
    );
    assert_eq!(
        hermes
            .cron(&["incidents", "ack", "nosuch_000000000000"])
            .user_error(),
        "error: No incident 'nosuch_000000000000': see the ids with hermes cron incidents"
    );
    assert_eq!(
        hermes.cron(&["incidents", "--state", "detected"]).ok(),
        "No cron failure incidents recorded.\n  (filtered by state 'detected')\n"
    );
    // A different error is a new incident, and alerts.
    fs::write(
        hermes.home().join("scripts").join("report.sh"),
        "echo 'disk full' >&2\nexit 3\n",
    )
    .unwrap();
    fail_at(&hermes, &id, "2026-03-02T11:00:00Z");
    assert_eq!(notices(&fake).len(), 2);
    assert_eq!(incidents(&hermes, &[]).len(), 2);
}

#[test]
fn a_good_run_resolves_the_incident_and_the_same_failure_alerts_again() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "telegram");
    let script = hermes.home().join("scripts").join("report.sh");
    fail_at(&hermes, &id, "2026-03-01T10:01:00Z");
    fs::write(&script, "echo all green\n").unwrap();
    hermes.cron_at("2026-03-01T10:02:00Z", &["run", &id]).ok();
    let resolved = incidents(&hermes, &[]);
    assert_eq!(resolved[0]["state"], "resolved");
    assert_eq!(resolved[0]["closed_at"], "2026-03-01T10:02:00+00:00");
    fs::write(&script, "echo 'disk check failed' >&2\nexit 3\n").unwrap();
    fail_at(&hermes, &id, "2026-03-01T10:03:00Z");
    let sent = notices(&fake);
    assert_eq!(sent.len(), 3, "failure, report, failure again: {sent:?}");
    let again = incidents(&hermes, &[]);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["state"], "alerted");
    assert_eq!(again[0]["first_seen_at"], "2026-03-01T10:01:00+00:00");
}

#[test]
fn with_deliver_local_no_notice_leaves_and_the_incident_stays_detected() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "local");
    fail_at(&hermes, &id, "2026-03-01T10:01:00Z");
    fail_at(&hermes, &id, "2026-03-01T10:02:00Z");
    let listed = incidents(&hermes, &[]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["state"], "detected");
    assert_eq!(listed[0]["alerted_at"], Value::Null);
    assert!(fake.seen().is_empty());
}

/// The python of the Python Hermes 0.22 venv.
pub(crate) fn python_022() -> PathBuf {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/python-hermes/setup.sh"
    );
    let out = Command::new("bash")
        .args([script, "0.22"])
        .output()
        .expect("run setup.sh 0.22");
    assert!(
        out.status.success(),
        "setup.sh 0.22 failed (Python Hermes 0.22 is needed): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Python Hermes 0.22 on this home: `hermes <args>` (its CLI), or with `args` starting
/// with `-c`, its python running that code. Nothing of the caller's environment leaks in.
pub(crate) fn hermes_022(hermes: &Hermes, args: &[&str]) -> Run {
    let python = python_022();
    let mut command = match args.first() {
        Some(&"-c") => Command::new(&python),
        _ => Command::new(python.with_file_name("hermes")),
    };
    command
        .args(args)
        .env_clear()
        .env("HERMES_HOME", hermes.home())
        .env("HOME", hermes.home())
        .env("TZ", "UTC")
        .env("HERMES_TIMEZONE", "UTC")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let out = command.output().expect("start Python Hermes 0.22");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn python_hermes_022_lists_our_incidents_and_we_list_and_ack_its() {
    if crate::support::on_postgres() {
        return; // Python Hermes keeps its incidents in a home's executions.db only.
    }
    let fake = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = failing_job(&fake, "telegram");
    fail_at(&hermes, &id, "2026-03-01T10:01:00Z");
    let ours = incidents(&hermes, &[])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = hermes_022(&hermes, &["cron", "incidents"]);
    assert_eq!(shown.code, Some(0), "{shown:?}");
    assert!(shown.stdout.contains(&ours), "{}", shown.stdout);
    assert!(shown.stdout.contains("alerted"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("disk check failed"),
        "{}",
        shown.stdout
    );
    // Theirs: the same signature rule gives the same id on both sides.
    let made = hermes_022(
        &hermes,
        &[
            "-c",
            "from cron.incidents import upsert_incident\n\
             print(upsert_incident('feedbeef0001', 'Provider error: HTTP 500 after 12s')[0])",
        ],
    );
    assert_eq!(made.code, Some(0), "{made:?}");
    let theirs = made.stdout.trim().to_string();
    let listed = incidents(&hermes, &["--state", "detected"]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], theirs.as_str());
    assert_eq!(listed[0]["job_id"], "feedbeef0001");
    assert_eq!(listed[0]["failure_type"], "agent");
    hermes.cron(&["incidents", "ack", &theirs]).ok();
    let seen = hermes_022(
        &hermes,
        &["-c", "from cron.incidents import list_incidents\nprint([(i['id'], i['state']) for i in list_incidents(state='closed')])"],
    );
    assert_eq!(
        seen.stdout.trim(),
        format!("[('{theirs}', 'closed')]"),
        "{seen:?}"
    );
}

/// A home whose agent answers `reply` (the local fake model), delivering to the fake
/// Telegram; returns the home and the id of its job.
fn agent_job(model: &ModelFake, telegram: &Fake) -> (Hermes, String) {
    let hermes = crate::agent::home_with(&openai_config(&model.base));
    let dotenv: String = telegram_env(telegram)
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    fs::write(hermes.home().join(".env"), dotenv).unwrap();
    let id = hermes.add(
        "every 1d",
        "delegate the check",
        &["--name", "delegator", "--deliver", "telegram"],
    );
    (hermes, id)
}

#[test]
fn a_reply_whose_first_line_is_cron_failure_fails_the_run_and_delivers_its_evidence() {
    let reply = "[CRON_FAILURE]\nchild task exploded\nstep 3 of 5 never finished";
    let model = ModelFake::start(vec![text(reply)]);
    let telegram = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = agent_job(&model, &telegram);
    let run = hermes.cron(&["run", &id]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout
            .contains("  error: child task exploded\nstep 3 of 5 never finished\n"),
        "{}",
        run.stdout
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "error");
    assert_eq!(
        job["last_error"],
        "child task exploded\nstep 3 of 5 never finished"
    );
    let sent = notices(&telegram);
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].contains("child task exploded\nstep 3 of 5 never finished"),
        "the evidence goes out as written: {}",
        sent[0]
    );
    assert!(!sent[0].contains("[CRON_FAILURE]"), "{}", sent[0]);
    assert!(
        hermes.latest_output(&id).contains(reply),
        "the whole reply stays in the output document"
    );
    let listed = incidents(&hermes, &[]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["state"], "alerted");
    // The agent was told the rule.
    let prompt = crate::agent::user_prompt(&model.requests()[0]);
    assert!(
        prompt.contains("put [CRON_FAILURE] on the first line by itself"),
        "{prompt}"
    );
}

#[test]
fn a_bare_cron_failure_line_fails_with_the_stock_evidence_and_a_quoted_one_does_not() {
    let model = ModelFake::start(vec![
        text("[CRON_FAILURE]"),
        text("All fine; I did not need [CRON_FAILURE] today."),
    ]);
    let telegram = Fake::start(|_, i| telegram_ok(i));
    let (hermes, id) = agent_job(&model, &telegram);
    assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
    assert_eq!(
        hermes.job(&id)["last_error"],
        "Cron agent reported failure."
    );
    hermes.cron(&["run", &id]).ok();
    assert_eq!(hermes.job(&id)["last_status"], "ok");
    assert_eq!(incidents(&hermes, &[])[0]["state"], "resolved");
}

#[test]
fn the_dashboard_lists_an_incident_and_acks_it_over_http() {
    let hermes = home("", &[]);
    fs::write(
        hermes.home().join("scripts").join("report.sh"),
        "echo 'disk check failed' >&2\nexit 3\n",
    )
    .unwrap();
    let id = add_job(&hermes, "local", &[]);
    for minute in 1..=3 {
        fail_at(&hermes, &id, &format!("2026-03-01T10:0{minute}:00Z"));
    }
    let api = crate::api::serve(&hermes, &[]);
    let get = |path: &str| api.send("GET", path, &[], "");
    let ack = |incident: &str| {
        api.send(
            "POST",
            &format!("/api/cron/incidents/{incident}/ack"),
            &[],
            "",
        )
    };

    let listed = get("/api/cron/incidents");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.json(),
        json!({ "incidents": incidents(&hermes, &[]) }),
        "the same list as the CLI's"
    );
    let incident = listed.json()["incidents"][0].clone();
    assert_eq!(incident["job_id"], id.as_str());
    assert_eq!(incident["state"], "detected");
    assert_eq!(incident["first_seen_at"], "2026-03-01T10:01:00+00:00");
    assert_eq!(incident["last_seen_at"], "2026-03-01T10:03:00+00:00");
    let incident_id = incident["id"].as_str().unwrap().to_string();
    let open = get("/api/cron/incidents?state=detected").json();
    assert_eq!(open["incidents"].as_array().unwrap().len(), 1);
    let bad = get("/api/cron/incidents?state=open");
    assert_eq!(
        (bad.status, bad.json()),
        (
            400,
            json!({"detail": "Unknown incident state 'open': use one of detected, alerted, resolved, closed"})
        )
    );

    let acked = ack(&incident_id);
    assert_eq!(acked.status, 200, "{}", acked.body);
    let body = acked.json();
    assert_eq!(
        body["message"],
        format!("Incident {incident_id} acknowledged (closed): this error stays quiet until its text changes.")
    );
    assert_eq!(body["incident"]["state"], "closed");
    let again = ack(&incident_id).json();
    assert_eq!(
        again["message"],
        format!("Incident {incident_id} is already closed.")
    );
    let missing = ack("nosuch_000000000000");
    assert_eq!(
        (missing.status, missing.json()),
        (
            404,
            json!({"detail": "No incident 'nosuch_000000000000': see the ids with hermes cron incidents"})
        )
    );
    let refused = api.send(
        "POST",
        &format!("/api/cron/incidents/{incident_id}/ack"),
        &[("Authorization", "")],
        "",
    );
    assert_eq!(refused.status, 401);

    let shown = hermes.cron(&["incidents"]).ok().to_string();
    assert!(
        shown.contains(&format!("  {incident_id}  closed\n")),
        "{shown}"
    );
    assert!(get("/api/cron/incidents?state=closed").json()["incidents"][0]["acked_at"].is_string());
}

/// A model that answers 400 (a request it will not take) opens an incident of the model's
/// kind, not a script's: Python Hermes' list names it `agent`.
#[test]
fn a_model_answering_400_opens_an_incident_of_the_model_kind() {
    use crate::agent::{home_with, openai_config, Fake as ModelFake};
    let model = ModelFake::start(vec![(
        400,
        vec![],
        r#"{"error": {"message": "Invalid value for 'tool_choice': a tool description is missing", "type": "invalid_request_error"}}"#
            .to_string(),
    )]);
    let hermes = home_with(&openai_config(&model.base));
    let id = hermes.add("every 1h", "summarize what is new", &[]);
    let run = hermes.cron(&["run", &id]);
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", &id, "--json"]).ok()).unwrap();
    let error = runs["runs"][0]["error"].as_str().unwrap_or("").to_string();
    let listed = incidents(&hermes, &[]);
    assert_eq!(listed.len(), 1, "{listed:?} {run:?} {error}");
    assert_eq!(
        listed[0]["failure_type"], "agent",
        "the run's error: {error}"
    );
}
