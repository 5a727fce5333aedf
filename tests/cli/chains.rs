//! Chains of jobs (`--after JOB [--on success|failure|always]`) and sending a run again
//! (`hermes cron redeliver RUN [--to TARGET]`) through the real binary (docs/COMMANDS.md,
//! docs/RUNNING.md). The model is the local fake of `agent.rs`, Telegram the fake of
//! `delivery.rs`; schedules are driven by `hermes cron tick` at pinned instants, the
//! crash test by real daemons. Every test runs on jobs.json and, with
//! `HERMES_TEST_STORE=postgres`, on PostgreSQL.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::{text, user_prompt, Fake as Model};
use crate::delivery::{ok, Fake as Chat};
use crate::support::Hermes;

const TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

/// An instant on the test day (jobs are added at 10:00).
fn at(hour: u32, minute: u32, second: u32) -> String {
    format!("2026-03-01T{hour:02}:{minute:02}:{second:02}Z")
}

fn home(config: &str, env: &[(&str, String)]) -> Hermes {
    let hermes = Hermes::new();
    std::fs::write(hermes.home().join("config.yaml"), config).unwrap();
    let dotenv: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(hermes.home().join(".env"), dotenv).unwrap();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    hermes
}

fn model_config(base: &str) -> String {
    format!("model:\n  default: test-model\n  base_url: {base}\nagent:\n  api_max_retries: 1\n")
}

fn script(hermes: &Hermes, name: &str, body: &str) {
    std::fs::write(hermes.home().join("scripts").join(name), body).unwrap();
}

fn tick(hermes: &Hermes, now: &str) {
    hermes.cron_at(now, &["tick"]).ok();
}

/// The job as `list --json` shows it.
fn job(hermes: &Hermes, id: &str) -> Value {
    let out: Value = serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok()).unwrap();
    out["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

/// The job's runs, newest first.
fn runs(hermes: &Hermes, id: &str) -> Vec<Value> {
    let out: Value =
        serde_json::from_str(hermes.cron(&["runs", id, "--json", "--limit", "500"]).ok()).unwrap();
    out["runs"].as_array().unwrap().clone()
}

fn lines(hermes: &Hermes, file: &str) -> usize {
    std::fs::read_to_string(hermes.home().join(file))
        .unwrap_or_default()
        .lines()
        .count()
}

/// A chained no-agent job that writes one line per run to `down.txt`.
const DOWN: &str = "echo ran >> \"$HERMES_HOME/down.txt\"\necho chained\n";

#[test]
fn a_chain_runs_once_per_upstream_run_with_that_runs_output() {
    let model = Model::start(vec![text("Summary sent")]);
    let hermes = home(&model_config(&model.base), &[]);
    script(&hermes, "collect.sh", "echo upstream says hi\n");
    let up = hermes.add(
        "every 1h",
        "",
        &["--script", "collect.sh", "--no-agent", "--name", "collect"],
    );
    // Its own schedule (daily) is not due today: only the chain runs it.
    let down = hermes.add("every 24h", "Summarize it", &["--after", "collect"]);
    assert_eq!(
        job(&hermes, &down)["after"],
        json!({"job": up, "on": "success"})
    );

    tick(&hermes, &at(11, 0, 0));
    assert_eq!(runs(&hermes, &up).len(), 1);
    assert_eq!(
        model.count(),
        0,
        "the chain runs after the upstream run ended"
    );
    tick(&hermes, &at(11, 0, 30));
    assert_eq!(model.count(), 1);
    let prompt = user_prompt(&model.requests()[0]);
    assert!(
        prompt.contains(&format!("## Output of job 'collect' ({up})"))
            && prompt.contains("upstream says hi"),
        "{prompt}"
    );
    tick(&hermes, &at(11, 1, 0));
    tick(&hermes, &at(11, 2, 0));
    assert_eq!(model.count(), 1, "one chained run per upstream run");
    let chained = runs(&hermes, &down);
    let upstream_run = runs(&hermes, &up)[0]["id"].as_i64().unwrap();
    assert_eq!(chained.len(), 1, "{chained:?}");
    assert_eq!(chained[0]["source"], "chain");
    assert_eq!(chained[0]["status"], "ok");
    assert_eq!(
        chained[0]["occurrence"],
        format!("{down}@after-{upstream_run}")
    );

    // A manual run of the upstream job fires the chain too, once.
    hermes.cron_at(&at(11, 10, 0), &["run", &up]).ok();
    tick(&hermes, &at(11, 10, 30));
    tick(&hermes, &at(11, 11, 0));
    assert_eq!(model.count(), 2);
    assert_eq!(runs(&hermes, &down).len(), 2);
}

#[test]
fn an_on_failure_chain_waits_for_a_failed_run() {
    let hermes = home("", &[]);
    script(
        &hermes,
        "up.sh",
        "if [ -f \"$HERMES_HOME/fail\" ]; then echo broken >&2; exit 1; fi\necho fine\n",
    );
    script(&hermes, "down.sh", DOWN);
    let up = hermes.add("every 1h", "", &["--script", "up.sh", "--no-agent"]);
    let down = hermes.add(
        "every 24h",
        "",
        &[
            "--script",
            "down.sh",
            "--no-agent",
            "--after",
            &up,
            "--on",
            "failure",
        ],
    );
    assert_eq!(
        job(&hermes, &down)["after"],
        json!({"job": up, "on": "failure"})
    );

    tick(&hermes, &at(11, 0, 0));
    tick(&hermes, &at(11, 0, 30));
    assert_eq!(runs(&hermes, &up)[0]["status"], "ok");
    assert_eq!(lines(&hermes, "down.txt"), 0, "a success does not fire it");
    assert!(runs(&hermes, &down).is_empty());

    std::fs::write(hermes.home().join("fail"), "").unwrap();
    tick(&hermes, &at(12, 0, 0));
    tick(&hermes, &at(12, 0, 30));
    tick(&hermes, &at(12, 1, 0));
    assert_eq!(runs(&hermes, &up)[0]["status"], "error");
    assert_eq!(lines(&hermes, "down.txt"), 1);
    assert_eq!(runs(&hermes, &down).len(), 1);
}

#[test]
fn a_cycle_is_refused_and_removing_the_upstream_job_names_who_waits() {
    let hermes = home("", &[]);
    let a = hermes.add("every 1h", "A", &["--name", "alpha"]);
    let b = hermes.add("every 1h", "B", &["--after", &a]);
    let c = hermes.add("every 1h", "C", &["--after", &b, "--on", "always"]);

    let refused = hermes.cron(&["edit", &a, "--after", &c]);
    let message = refused.user_error();
    assert!(message.contains("cycle"), "{message}");
    assert!(job(&hermes, &a)["after"].is_null());
    let itself = hermes.cron(&["edit", &b, "--after", &b]);
    assert!(itself.user_error().contains("cycle"));
    assert_eq!(
        job(&hermes, &b)["after"],
        json!({"job": a, "on": "success"})
    );

    let unknown = hermes.cron(&["add", "every 1h", "D", "--after", "nosuchjob"]);
    assert!(unknown.user_error().contains("--after names no job"));
    let bad_on = hermes.cron(&["add", "every 1h", "D", "--after", &a, "--on", "sometimes"]);
    assert!(bad_on
        .user_error()
        .contains("--on must be success, failure or always"));
    let on_alone = hermes.cron(&["edit", &a, "--on", "failure"]);
    assert!(on_alone.user_error().contains("--on needs --after"));

    hermes.cron(&["edit", &b, "--on", "failure"]).ok();
    assert_eq!(
        job(&hermes, &b)["after"],
        json!({"job": a, "on": "failure"})
    );

    let removed = hermes.cron(&["remove", &a]);
    let out = removed.ok();
    assert!(
        out.contains(&format!("Waiting on {a}")) && out.contains(&b) && !out.contains(&c),
        "{out}"
    );
    hermes.cron(&["edit", &b, "--after", ""]).ok();
    assert!(job(&hermes, &b)["after"].is_null());
}

struct Daemon(Child);

impl Daemon {
    fn start(hermes: &Hermes) -> Daemon {
        let child = hermes
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Daemon(child)
    }

    /// SIGKILL: nothing of the daemon's own shutdown runs.
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}

#[test]
#[ignore = "slow (8-30 s of real time): .ci/run runs it once"]
fn a_chain_owed_when_the_daemon_is_killed_fires_once_after_the_restart() {
    let mut hermes = home("", &[]);
    hermes.now = None;
    script(
        &hermes,
        "up.sh",
        "echo up >> \"$HERMES_HOME/up.txt\"\nsleep 2\necho done\n",
    );
    script(&hermes, "down.sh", DOWN);
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(2))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let up = hermes.add(&soon, "", &["--script", "up.sh", "--no-agent"]);
    let down = hermes.add(
        "every 24h",
        "",
        &["--script", "down.sh", "--no-agent", "--after", &up],
    );

    let daemon = Daemon::start(&hermes);
    assert!(wait_for(Duration::from_secs(15), || lines(
        &hermes, "up.txt"
    ) == 1));
    // The global pause keeps the daemon from claiming the chained run once the upstream
    // run ends: the daemon dies owing it.
    hermes.run(&["pause"]).ok();
    assert!(wait_for(Duration::from_secs(15), || runs(&hermes, &up)
        .first()
        .is_some_and(|r| r["status"] == "ok")));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(lines(&hermes, "down.txt"), 0);
    daemon.kill();

    hermes.run(&["resume"]).ok();
    let restarted = Daemon::start(&hermes);
    assert!(wait_for(Duration::from_secs(15), || lines(
        &hermes, "down.txt"
    ) == 1));
    // Later passes (and a second restart) never run it again.
    std::thread::sleep(Duration::from_secs(2));
    restarted.kill();
    let again = Daemon::start(&hermes);
    std::thread::sleep(Duration::from_secs(3));
    again.kill();
    assert_eq!(lines(&hermes, "down.txt"), 1);
    let chained = runs(&hermes, &down);
    assert_eq!(chained.len(), 1, "{chained:?}");
    assert_eq!(chained[0]["status"], "ok");
}

/// A fake Telegram Bot API that accepts every message.
fn telegram() -> Chat {
    Chat::start(|_, i| {
        ok(
            json!({"ok": true, "result": {"message_id": i + 1, "date": 1772359200, "chat": {"id": 1}}}),
        )
    })
}

/// The texts Telegram got for `chat_id`.
fn sent(chat: &Chat, chat_id: i64) -> Vec<String> {
    chat.bodies("/sendMessage")
        .into_iter()
        .filter(|b| b["chat_id"] == json!(chat_id))
        .map(|b| b["text"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn redeliver_sends_the_stored_output_again_without_a_model_request() {
    let chat = telegram();
    let model = Model::start(vec![text("Hello from the run")]);
    let env = [
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", chat.base()),
    ];
    let hermes = home(&model_config(&model.base), &env);
    let id = hermes.add("every 1h", "Say hello", &["--deliver", "telegram:111"]);
    tick(&hermes, &at(11, 0, 0));
    assert_eq!(model.count(), 1);
    let first = sent(&chat, 111);
    assert_eq!(first.len(), 1);
    assert!(first[0].contains("Hello from the run"), "{first:?}");
    let run = runs(&hermes, &id)[0]["id"].as_i64().unwrap().to_string();

    let again = hermes.cron_at(&at(11, 5, 0), &["redeliver", &run]);
    assert!(again
        .ok()
        .contains(&format!("Run {run} of {id} delivered again")));
    assert_eq!(sent(&chat, 111), vec![first[0].clone(), first[0].clone()]);
    assert_eq!(model.count(), 1, "no model request");

    hermes
        .cron_at(&at(11, 6, 0), &["redeliver", &run, "--to", "telegram:222"])
        .ok();
    assert_eq!(sent(&chat, 222), vec![first[0].clone()]);
    assert_eq!(sent(&chat, 111).len(), 2, "only the target given");
    assert_eq!(model.count(), 1, "no model request");
    let recorded = &runs(&hermes, &id)[0];
    assert!(
        recorded["delivery"].as_str().unwrap_or("").contains("222"),
        "{recorded}"
    );
    assert_eq!(runs(&hermes, &id).len(), 1, "a redelivery is no new run");

    let unknown = hermes.cron(&["redeliver", "9999"]);
    assert_eq!(
        unknown.user_error(),
        "error: No run 9999: see the run ids with 'hermes cron runs'"
    );
    let bad = hermes.cron(&["redeliver", &run, "--to", "carrier-pigeon:1"]);
    let message = bad.user_error();
    assert!(message.starts_with("error: --to: "), "{message}");
    assert_eq!(chat.bodies("/sendMessage").len(), 3);
}

#[test]
fn the_rest_routes_and_the_mcp_tool_chain_refuse_a_cycle_and_redeliver() {
    let chat = telegram();
    let hermes = home(
        "",
        &[
            ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
            ("TELEGRAM_API_BASE", chat.base()),
        ],
    );
    script(&hermes, "hello.sh", "echo hello there\n");
    let api = crate::api::serve(&hermes, &[]);
    let send = |method: &str, path: &str, body: Value| {
        let reply = api.send(method, path, &[], &body.to_string());
        (reply.status, reply.json())
    };
    let (status, a) = send(
        "POST",
        "/api/jobs",
        json!({"name": "alpha", "schedule": "every 1h", "prompt": "A"}),
    );
    assert_eq!(status, 200, "{a}");
    let a = a["job"]["id"].as_str().unwrap().to_string();
    let (status, b) = send(
        "POST",
        "/api/jobs",
        json!({"name": "beta", "schedule": "every 1h", "prompt": "B",
               "after": {"job": a, "on": "failure"}}),
    );
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["job"]["after"], json!({"job": a, "on": "failure"}));
    let b = b["job"]["id"].as_str().unwrap().to_string();

    let (status, refused) = send("PATCH", &format!("/api/jobs/{a}"), json!({"after": b}));
    assert_eq!(status, 400);
    assert!(
        refused["error"].as_str().unwrap().contains("cycle"),
        "{refused}"
    );
    let mcp = crate::doors::mcp_results(
        &hermes,
        &[json!({"action": "update", "job_id": a, "after": {"job": b}})],
    );
    let reply = &mcp[0]["structuredContent"];
    assert_eq!(reply["success"], false);
    assert!(
        reply["error"].as_str().unwrap().contains("cycle"),
        "{reply}"
    );
    assert!(hermes.job(&a)["after"].is_null());

    // Python Hermes' PATCH removes a chain with null.
    let (status, cleared) = send("PATCH", &format!("/api/jobs/{b}"), json!({"after": null}));
    assert_eq!(status, 200, "{cleared}");
    assert!(hermes.job(&b)["after"].is_null());
    assert_eq!(
        send("PATCH", &format!("/api/jobs/{b}"), json!({"after": a})).0,
        200
    );
    let (status, removed) = send("DELETE", &format!("/api/jobs/{a}"), Value::Null);
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["waiting"], json!([{"id": b, "name": "beta"}]));

    let sender = hermes.add(
        "every 1h",
        "",
        &[
            "--script",
            "hello.sh",
            "--no-agent",
            "--deliver",
            "telegram:111",
        ],
    );
    hermes.cron(&["run", &sender]).ok();
    assert_eq!(sent(&chat, 111).len(), 1);
    let run = runs(&hermes, &sender)[0]["id"].as_i64().unwrap();
    let (status, again) = send(
        "POST",
        &format!("/api/runs/{run}/redeliver"),
        json!({"to": "telegram:333"}),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["error"], Value::Null);
    assert_eq!(sent(&chat, 333), sent(&chat, 111));
    let reply = api.send("POST", &format!("/api/runs/{run}/redeliver"), &[], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(sent(&chat, 111).len(), 2);
    let mcp = crate::doors::mcp_results(
        &hermes,
        &[json!({"action": "redeliver", "run_id": run, "to": "telegram:444"})],
    );
    assert_eq!(mcp[0]["structuredContent"]["success"], true, "{}", mcp[0]);
    assert_eq!(sent(&chat, 444).len(), 1);
    let unknown = api.send("POST", "/api/runs/9999/redeliver", &[], "");
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.json()["error"],
        "No run 9999: see the run ids with 'hermes cron runs'"
    );
}
