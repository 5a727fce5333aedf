//! Delivery through the real binary: a `--no-agent` script job produces the reply,
//! `hermes cron run` / `hermes cron tick` delivers it to local fakes of the Telegram Bot
//! API, Discord, Slack and a webhook receiver (tiny_http on 127.0.0.1:0) that answer
//! like the real services, error bodies and 429s included. Tokens, home channels and
//! API bases come from `<home>/.env`, as a user would set them.

use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::Hermes;

const TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

/// What a fake saw of one request.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) at: Instant,
}

impl Seen {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

/// Status, extra headers, body.
pub(crate) type Answer = (u16, Vec<(String, String)>, String);
type Responder = Box<dyn Fn(&Seen, usize) -> Answer + Send>;
/// A responder shared by the connections of a [`Fake::websocket`].
type SharedResponder = Arc<dyn Fn(&Seen, usize) -> Answer + Send + Sync>;

/// A local fake API: every request is logged, then answered by the responder (given
/// the request and its index).
pub(crate) struct Fake {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    pub(crate) fn start(responder: impl Fn(&Seen, usize) -> Answer + Send + 'static) -> Fake {
        Fake::on_port(0, Box::new(responder))
    }

    fn on_port(port: u16, responder: Responder) -> Fake {
        // A port just given back may still be held for a moment by a child forked
        // meanwhile (until its exec closes it): try again for a while.
        let deadline = Instant::now() + Duration::from_secs(10);
        let server = loop {
            match tiny_http::Server::http(("127.0.0.1", port)) {
                Ok(server) => break server,
                Err(e) if Instant::now() > deadline => panic!("bind the fake: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let port = server.server_addr().to_ip().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopped) = (Arc::clone(&seen), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let Ok(Some(mut request)) = server.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let mut body = Vec::new();
                let _ = request.as_reader().read_to_end(&mut body);
                let seen = Seen {
                    path: request.url().to_string(),
                    headers: request
                        .headers()
                        .iter()
                        .map(|h| (h.field.to_string(), h.value.to_string()))
                        .collect(),
                    body,
                    at: Instant::now(),
                };
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(seen.clone());
                    log.len() - 1
                };
                let (status, headers, text) = responder(&seen, index);
                let mut response = tiny_http::Response::from_string(text)
                    .with_status_code(status)
                    .with_header(
                        tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                    );
                for (k, v) in headers {
                    response.add_header(tiny_http::Header::from_bytes(k, v).unwrap());
                }
                let _ = request.respond(response);
            }
        });
        Fake {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// A local fake WebSocket gateway: every text frame a client sends is logged as a
    /// [`Seen`] (`path` is its `cmd`, `body` the frame) and answered with the
    /// responder's body as one text frame (none when empty); a status of 400 or more
    /// closes the connection after answering, as a gateway does after a refused login.
    /// Binary frames (protobuf gateways) are logged as they are, with an empty `path`,
    /// and answered with the responder's body hex-decoded into one binary frame.
    pub(crate) fn websocket(
        responder: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static,
    ) -> Fake {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopped) = (Arc::clone(&seen), Arc::clone(&stop));
        let responder: SharedResponder = Arc::new(responder);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while !stopped.load(Ordering::SeqCst) {
                    let accepted =
                        tokio::time::timeout(Duration::from_millis(50), listener.accept()).await;
                    if let Ok(Ok((stream, _))) = accepted {
                        let (log, responder) = (Arc::clone(&log), Arc::clone(&responder));
                        tokio::spawn(serve_websocket(stream, log, responder));
                    }
                }
            });
        });
        Fake {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// JSON bodies of the requests whose path ends with `suffix`.
    pub(crate) fn bodies(&self, suffix: &str) -> Vec<Value> {
        self.seen()
            .iter()
            .filter(|s| s.path.ends_with(suffix))
            .map(Seen::json)
            .collect()
    }
}

/// One client connection of [`Fake::websocket`].
async fn serve_websocket(
    stream: tokio::net::TcpStream,
    log: Arc<Mutex<Vec<Seen>>>,
    responder: SharedResponder,
) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    while let Some(Ok(frame)) = socket.next().await {
        let binary = frame.is_binary();
        let body = match frame {
            Message::Text(text) => text.as_bytes().to_vec(),
            Message::Binary(bytes) => bytes.to_vec(),
            _ => continue,
        };
        let cmd = match binary {
            true => String::new(),
            false => serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null)["cmd"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        };
        let seen = Seen {
            path: cmd,
            headers: Vec::new(),
            body,
            at: Instant::now(),
        };
        let index = {
            let mut log = log.lock().unwrap();
            log.push(seen.clone());
            log.len() - 1
        };
        let (status, _, reply) = responder(&seen, index);
        let reply = match binary {
            true => Message::binary(hex::decode(&reply).unwrap_or_default()),
            false => Message::text(reply),
        };
        if !reply.is_empty() && socket.send(reply).await.is_err() {
            return;
        }
        if status >= 400 {
            let _ = socket.close(None).await;
            return;
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn ok(body: Value) -> Answer {
    (200, Vec::new(), body.to_string())
}

/// Telegram's success answer for sendMessage.
fn telegram_ok(index: usize) -> Answer {
    ok(
        json!({"ok": true, "result": {"message_id": index + 1, "date": 1772359200, "chat": {"id": 1}}}),
    )
}

fn telegram_error(code: u16, description: &str, parameters: Value) -> Answer {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if !parameters.is_null() {
        body["parameters"] = parameters;
    }
    (code, Vec::new(), body.to_string())
}

/// A home with a `report.sh` script that prints `reply`, and a `.env` with `env` lines.
pub(crate) fn home(reply: &str, env: &[(&str, String)]) -> Hermes {
    let hermes = Hermes::new();
    let scripts = hermes.home().join("scripts");
    fs::create_dir_all(&scripts).unwrap();
    fs::write(scripts.join("reply.txt"), reply).unwrap();
    fs::write(scripts.join("report.sh"), "cat reply.txt\n").unwrap();
    let dotenv: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    fs::write(hermes.home().join(".env"), dotenv).unwrap();
    hermes
}

/// Lets the home's webhooks reach the local fakes on 127.0.0.1, which the default
/// outbound policy refuses (docs/SAFETY.md, "Outbound addresses").
pub(crate) fn allow_local_webhooks(hermes: &Hermes) {
    let path = hermes.home().join("config.yaml");
    let mut config = fs::read_to_string(&path).unwrap_or_default();
    config.push_str("delivery:\n  allow_private_targets: true\n");
    fs::write(path, config).unwrap();
}

fn telegram_env(fake: &Fake) -> Vec<(&'static str, String)> {
    vec![
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", fake.base()),
    ]
}

/// A home whose script replies "report", with the fake as Telegram and chat 5550001 as
/// its home channel.
fn report_home(fake: &Fake) -> Hermes {
    let mut env = telegram_env(fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    home("report\n", &env)
}

/// Adds the "daily report" script job delivering to `deliver`; returns its id.
pub(crate) fn add_job(hermes: &Hermes, deliver: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "--name",
        "daily report",
        "--script",
        "report.sh",
        "--no-agent",
        "--deliver",
        deliver,
    ];
    args.extend_from_slice(extra);
    hermes.add("every 1d", "daily report", &args)
}

/// `hermes cron run <id>`, which must succeed (the run is ok even when delivery failed).
pub(crate) fn run(hermes: &Hermes, id: &str) {
    hermes.cron(&["run", id]).ok();
}

pub(crate) fn wrapped(content: &str) -> String {
    format!(
        "Cronjob Response: daily report\n(job_id: {{id}})\n-------------\n\n{content}\n\n\
         To stop or manage this job, send me a new message (e.g. \"stop reminder daily report\")."
    )
}

#[test]
fn home_channel_gets_the_reply_in_the_exact_wrapper() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = home("All 12 services are healthy.\n", &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, format!("/bot{TOKEN}/sendMessage"));
    let body = seen[0].json();
    assert_eq!(body["chat_id"], json!(5550001));
    assert_eq!(
        body["text"],
        json!(wrapped("All 12 services are healthy.").replace("{id}", &id))
    );
    assert_eq!(body["parse_mode"], "HTML");
    assert!(body.get("message_thread_id").is_none());
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["last_delivery_error"], Value::Null);
}

#[test]
fn origin_and_a_bare_platform_reach_the_origin_chat_and_thread() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let hermes = report_home(&fake);
    let id = add_job(
        &hermes,
        "origin,telegram",
        &["--origin", "telegram:-1009876543210:42"],
    );
    run(&hermes, &id);

    let bodies = fake.bodies("/sendMessage");
    assert_eq!(
        bodies.len(),
        1,
        "origin and telegram are one chat: {bodies:?}"
    );
    assert_eq!(bodies[0]["chat_id"], json!(-1009876543210i64));
    assert_eq!(bodies[0]["message_thread_id"], json!(42));
}

#[test]
fn an_explicit_chat_and_topic_post_with_its_thread_and_the_general_topic_is_omitted() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let hermes = home("report\n", &telegram_env(&fake));
    let id = add_job(
        &hermes,
        "telegram:-1001234567890:17,telegram:-1005550000:1",
        &[],
    );
    run(&hermes, &id);

    let bodies = fake.bodies("/sendMessage");
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let to = |chat: i64| {
        bodies
            .iter()
            .find(|b| b["chat_id"] == json!(chat))
            .unwrap_or_else(|| panic!("nothing sent to {chat}: {bodies:?}"))
    };
    assert_eq!(to(-1001234567890)["message_thread_id"], json!(17));
    let general = to(-1005550000);
    assert!(general.get("message_thread_id").is_none(), "{general:?}");
}

#[test]
fn all_reaches_every_platform_with_a_home_channel() {
    let fake = Fake::start(|seen, i| {
        if seen.path.starts_with("/discord/") {
            ok(json!({"id": "1100", "channel_id": "777", "content": "x"}))
        } else if seen.path.starts_with("/slack/") {
            ok(json!({"ok": true, "channel": "C0123", "ts": "1772359200.000100"}))
        } else {
            telegram_ok(i)
        }
    });
    let base = fake.base();
    let env = vec![
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", format!("{base}/tg")),
        ("TELEGRAM_HOME_CHANNEL", "5550001".to_string()),
        ("DISCORD_BOT_TOKEN", "discord-test-token-1234".to_string()),
        ("DISCORD_API_BASE", format!("{base}/discord")),
        ("DISCORD_HOME_CHANNEL", "777".to_string()),
        (
            "SLACK_BOT_TOKEN",
            "xoxb-1111-2222-testtokentest".to_string(),
        ),
        ("SLACK_API_BASE", format!("{base}/slack")),
        ("SLACK_HOME_CHANNEL", "C0123".to_string()),
        (
            "SLACK_HOME_CHANNEL_THREAD_ID",
            "1772350000.000200".to_string(),
        ),
    ];
    let hermes = home("report\n", &env);
    let id = add_job(&hermes, "all", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert!(paths.contains(&format!("/tg/bot{TOKEN}/sendMessage").as_str()));
    let discord = seen
        .iter()
        .find(|s| s.path == "/discord/channels/777/messages")
        .unwrap();
    assert_eq!(
        discord.header("Authorization").unwrap(),
        "Bot discord-test-token-1234"
    );
    assert!(discord.json()["content"]
        .as_str()
        .unwrap()
        .contains("report"));
    let slack = seen
        .iter()
        .find(|s| s.path == "/slack/chat.postMessage")
        .unwrap();
    assert_eq!(
        slack.header("Authorization").unwrap(),
        "Bearer xoxb-1111-2222-testtokentest"
    );
    assert_eq!(slack.json()["channel"], "C0123");
    assert_eq!(slack.json()["thread_ts"], "1772350000.000200");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

/// A 10,000-character reply: prose paragraphs around a fenced code block placed where
/// a naive 4096-character cut would fall inside it.
pub(crate) fn long_reply() -> (String, String) {
    let paragraph = |n: usize| format!("Paragraph {n:02}: {}", "lorem ipsum dolor ".repeat(16));
    let code = format!(
        "```rust\n{}```",
        (0..60)
            .map(|i| format!("let value_{i:02} = compute({i}) * 2; // step\n"))
            .collect::<String>()
    );
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 3400 {
        text.push_str(&paragraph(n));
        text.push_str("\n\n");
        n += 1;
    }
    text.push_str(&code);
    text.push_str("\n\n");
    while text.len() < 10_000 {
        text.push_str(&paragraph(n));
        text.push_str("\n\n");
        n += 1;
    }
    (text.trim_end().to_string(), code)
}

#[test]
fn a_long_reply_arrives_in_three_ordered_parts_with_the_code_block_intact() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let (reply, code) = long_reply();
    assert!(reply.chars().count() >= 10_000);
    let hermes = home(&reply, &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    let texts: Vec<String> = fake
        .bodies("/sendMessage")
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:#?}");
    for (i, text) in texts.iter().enumerate() {
        assert!(
            text.encode_utf16().count() <= 4096,
            "part {} has {}",
            i + 1,
            text.len()
        );
        assert!(text.ends_with(&format!("({}/3)", i + 1)), "order: {text}");
    }
    let code_html = code
        .lines()
        .filter(|l| !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n");
    let holding: Vec<usize> = (0..3)
        .filter(|&i| texts[i].contains("let value_00"))
        .collect();
    assert_eq!(holding.len(), 1);
    assert!(
        texts[holding[0]].contains(&format!(
            "<pre><code class=\"language-rust\">{code_html}</code></pre>"
        )),
        "the code block is split"
    );
    // Every paragraph arrives once, in order.
    let joined = texts.concat();
    let mut last = 0;
    for n in 0..40 {
        let marker = format!("Paragraph {n:02}:");
        if let Some(at) = joined.find(&marker) {
            assert!(at >= last, "paragraph {n} out of order");
            assert_eq!(joined.matches(&marker).count(), 1);
            last = at;
        }
    }
}

#[test]
fn a_reply_telegram_cannot_parse_is_resent_as_plain_text_and_arrives_once() {
    let fake = Fake::start(|seen, i| {
        if seen.json()["parse_mode"] == "HTML" {
            telegram_error(
                400,
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 51",
                Value::Null,
            )
        } else {
            telegram_ok(i)
        }
    });
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = home("Totals **up** 3%\n", &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    let bodies = fake.bodies("/sendMessage");
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert_eq!(bodies[0]["parse_mode"], "HTML");
    assert!(bodies[0]["text"].as_str().unwrap().contains("<b>up</b>"));
    assert!(bodies[1].get("parse_mode").is_none());
    assert!(bodies[1]["text"]
        .as_str()
        .unwrap()
        .contains("Totals **up** 3%"));
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn a_429_waits_its_retry_after_and_then_succeeds() {
    let fake = Fake::start(|_, i| {
        if i == 0 {
            telegram_error(
                429,
                "Too Many Requests: retry after 2",
                json!({"retry_after": 2}),
            )
        } else {
            telegram_ok(i)
        }
    });
    let hermes = report_home(&fake);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    let waited = seen[1].at - seen[0].at;
    assert!(waited >= Duration::from_secs(2), "waited only {waited:?}");
    assert!(waited < Duration::from_secs(4), "waited {waited:?}");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn a_403_is_final_recorded_and_never_retried() {
    let fake = Fake::start(|_, _| {
        telegram_error(403, "Forbidden: bot was blocked by the user", Value::Null)
    });
    let hermes = report_home(&fake);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    assert_eq!(fake.seen().len(), 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(job["last_error"], Value::Null);
    assert_eq!(
        job["last_delivery_error"],
        "telegram:5550001: 403 Forbidden: bot was blocked by the user (not retried)"
    );
    // Later passes do not try again either.
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn a_fake_down_during_the_run_gets_the_message_once_from_the_outbox_later() {
    // Hold a port with nothing listening on it during the run.
    let closed = crate::support::ClosedPort::new();
    let port = closed.port;
    let env = vec![
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_string()),
        ("TELEGRAM_API_BASE", format!("http://127.0.0.1:{port}")),
        ("TELEGRAM_HOME_CHANNEL", "5550001".to_string()),
    ];
    let hermes = home("report\n", &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    let error = job["last_delivery_error"].as_str().unwrap();
    assert!(
        error.starts_with("telegram:5550001: cannot connect"),
        "{error}"
    );
    assert!(error.ends_with("(will retry)"), "{error}");
    assert!(!error.contains("AAtesttoken"), "the token leaked: {error}");

    drop(closed);
    let fake = Fake::on_port(port, Box::new(|_, i| telegram_ok(i)));
    // Not due yet at the same instant; due a few minutes later; then done for good.
    hermes.cron(&["tick"]).ok();
    assert_eq!(fake.seen().len(), 0);
    let out = hermes.cron_at("2026-03-01T10:05:00Z", &["tick"]);
    assert!(
        out.ok().contains("delivery retry to telegram:5550001"),
        "{}",
        out.stdout
    );
    hermes.cron_at("2026-03-01T10:10:00Z", &["tick"]).ok();
    hermes.cron_at("2026-03-01T12:00:00Z", &["tick"]).ok();

    let bodies = fake.bodies("/sendMessage");
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(
        bodies[0]["text"],
        json!(wrapped("report").replace("{id}", &id))
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["last_delivery_error"], Value::Null);
}

#[test]
fn telegram_without_a_home_channel_is_a_delivery_error_while_the_run_is_ok() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let hermes = home("report\n", &telegram_env(&fake));
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    assert!(fake.seen().is_empty());
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(job["last_error"], Value::Null);
    assert_eq!(
        job["last_delivery_error"],
        "no delivery target resolved for deliver=telegram"
    );
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", &id, "--json"]).ok()).unwrap();
    assert_eq!(runs["runs"][0]["status"], "ok");
    // The plain listing shows the run's id, that its delivery failed, and why.
    let plain = hermes.cron(&["runs", &id]);
    let lines: Vec<&str> = plain.ok().lines().collect();
    assert!(
        lines[0].trim_start().starts_with("RUN  STARTED"),
        "{}",
        plain.stdout
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        row[0],
        runs["runs"][0]["id"].to_string(),
        "{}",
        plain.stdout
    );
    assert_eq!(
        &row[2..6],
        ["ok", "manual", id.as_str(), "failed"],
        "{}",
        plain.stdout
    );
    assert_eq!(
        lines[2].trim(),
        "delivery failed: no delivery target resolved for deliver=telegram",
        "{}",
        plain.stdout
    );
}

#[test]
fn runs_of_an_unknown_job_is_an_error() {
    let hermes = home("report\n", &[]);
    let run = hermes.cron(&["runs", "nosuchjob"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("No job or run history matches 'nosuchjob'"),
        "{}",
        run.stderr
    );
}

#[test]
fn local_and_an_originless_origin_send_nothing_and_record_no_error() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let hermes = home("report\n", &telegram_env(&fake));
    for deliver in ["local", "origin"] {
        let id = add_job(&hermes, deliver, &[]);
        run(&hermes, &id);
        let job = hermes.job(&id);
        assert_eq!(job["last_status"], "ok", "{deliver}");
        assert_eq!(job["last_delivery_error"], Value::Null, "{deliver}");
    }
    assert!(fake.seen().is_empty());
}

#[test]
fn secrets_in_a_reply_are_redacted_in_what_the_chat_and_the_output_document_get() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    env.push((
        "OPENAI_API_KEY",
        "plainvalue-without-a-known-shape-77".to_string(),
    ));
    let reply = "Config check:\nOPENAI_API_KEY=plainvalue-without-a-known-shape-77\n\
                 anthropic=sk-ant-api03-abcdefghijklmnopqrstuvwxyz\n\
                 slack=xoxb-2222-3333-abcdefghijkl\n";
    let hermes = home(reply, &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);

    let text = fake.bodies("/sendMessage")[0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    for secret in ["plainvalue-without", "sk-ant-api03", "xoxb-2222"] {
        assert!(!text.contains(secret), "{secret} reached the chat:\n{text}");
    }
    assert!(text.contains("OPENAI_API_KEY=[REDACTED]"), "{text}");
    let doc = hermes.latest_output(&id);
    assert!(
        !doc.contains("plainvalue-without") && !doc.contains("sk-ant-api03"),
        "{doc}"
    );
}

#[test]
fn a_failed_run_sends_a_one_line_notice_with_a_nudge_from_the_third_failure() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = home("", &env);
    fs::write(
        hermes.home().join("scripts").join("report.sh"),
        "echo 'disk check failed' >&2\nexit 3\n",
    )
    .unwrap();
    // Every failure alerts (by default one incident alerts once: tests/cli/incidents.rs).
    fs::write(
        hermes.home().join("config.yaml"),
        "cron:\n  failure_repeat_alert_hours: 0\n",
    )
    .unwrap();
    let id = add_job(&hermes, "telegram", &[]);
    for minute in 1..=3 {
        let at = format!("2026-03-01T10:0{minute}:00Z");
        assert_eq!(hermes.cron_at(&at, &["run", &id]).code, Some(1));
    }
    let texts: Vec<String> = fake
        .bodies("/sendMessage")
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts.len(), 3);
    assert!(
        texts[0].contains("⚠️ This run failed (script): "),
        "{}",
        texts[0]
    );
    assert!(!texts[1].contains("in a row"), "{}", texts[1]);
    assert!(
        texts[2].contains(&format!(
            "It has failed 3 times in a row. See <code>hermes cron runs {id}</code>"
        )),
        "{}",
        texts[2]
    );
}

#[test]
fn a_silent_run_sends_nothing() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = home("", &env);
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);
    assert!(fake.seen().is_empty());
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn wrap_response_false_sends_the_bare_reply() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = home("just this\n", &env);
    fs::write(
        hermes.home().join("config.yaml"),
        "cron:\n  wrap_response: false\n",
    )
    .unwrap();
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);
    assert_eq!(fake.bodies("/sendMessage")[0]["text"], "just this");
}

#[test]
fn a_migrated_group_is_followed_to_its_new_id() {
    let fake = Fake::start(|seen, i| {
        if seen.json()["chat_id"] == json!(-4001) {
            telegram_error(
                400,
                "Bad Request: group chat was upgraded to a supergroup chat",
                json!({"migrate_to_chat_id": -1004001}),
            )
        } else {
            telegram_ok(i)
        }
    });
    let hermes = home("report\n", &telegram_env(&fake));
    let id = add_job(&hermes, "telegram:-4001", &[]);
    run(&hermes, &id);
    let bodies = fake.bodies("/sendMessage");
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[1]["chat_id"], json!(-1004001));
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn media_lines_become_telegram_uploads_and_leave_the_text() {
    let fake = Fake::start(|_, i| telegram_ok(i));
    let mut env = telegram_env(&fake);
    env.push(("TELEGRAM_HOME_CHANNEL", "5550001".to_string()));
    let hermes = Hermes::new();
    let chart = hermes.home().join("chart.png");
    let hermes = {
        let reply = format!("Weekly chart:\nMEDIA:{}\n", chart.display());
        let h = home(&reply, &env);
        fs::write(h.home().join("chart.png"), b"\x89PNG fake image").unwrap();
        h
    };
    // The reply names the chart in the first (dropped) home; point it at this one.
    let chart = hermes.home().join("chart.png");
    fs::write(
        hermes.home().join("scripts").join("reply.txt"),
        format!("Weekly chart:\nMEDIA:{}\n", chart.display()),
    )
    .unwrap();
    let id = add_job(&hermes, "telegram", &[]);
    run(&hermes, &id);
    let seen = fake.seen();
    assert_eq!(
        seen.len(),
        2,
        "{:?}",
        seen.iter().map(|s| &s.path).collect::<Vec<_>>()
    );
    let text = seen[0].json()["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("Weekly chart:") && !text.contains("MEDIA:"),
        "{text}"
    );
    assert_eq!(seen[1].path, format!("/bot{TOKEN}/sendPhoto"));
    let upload = String::from_utf8_lossy(&seen[1].body).to_string();
    assert!(
        upload.contains("name=\"photo\"; filename=\"chart.png\""),
        "{upload}"
    );
    assert!(upload.contains("PNG fake image"));
}

#[test]
fn a_webhook_gets_the_signed_json_payload() {
    let fake = Fake::start(|_, _| (204, Vec::new(), String::new()));
    let env = vec![("WEBHOOK_SECRET", "hook-secret-value".to_string())];
    let hermes = home("report body\n", &env);
    allow_local_webhooks(&hermes);
    let url = format!("{}/hooks/cron", fake.base());
    let id = add_job(&hermes, &format!("webhook:{url}"), &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    let body = seen[0].json();
    assert_eq!(body["job_id"], json!(id));
    assert_eq!(body["name"], "daily report");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["text"], "report body");
    assert!(body["scheduled_at"].as_str().unwrap().ends_with('Z'));
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"hook-secret-value").unwrap();
    mac.update(&seen[0].body);
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(seen[0].header("X-Hermes-Signature").unwrap(), expected);
}

#[test]
fn slack_refusals_and_discord_parts_are_handled_like_the_real_apis() {
    let fake = Fake::start(|seen, _| {
        if seen.path.starts_with("/slack/") {
            ok(json!({"ok": false, "error": "channel_not_found"}))
        } else {
            ok(json!({"id": "1", "channel_id": "888"}))
        }
    });
    let base = fake.base();
    let env = vec![
        ("DISCORD_BOT_TOKEN", "discord-test-token-1234".to_string()),
        ("DISCORD_API_BASE", format!("{base}/discord")),
        (
            "SLACK_BOT_TOKEN",
            "xoxb-1111-2222-testtokentest".to_string(),
        ),
        ("SLACK_API_BASE", format!("{base}/slack")),
    ];
    let reply = (0..30)
        .map(|n| format!("Line {n:02} {}", "x".repeat(150)))
        .collect::<Vec<_>>()
        .join("\n\n");
    let hermes = home(&reply, &env);
    let id = add_job(&hermes, "discord:888:999,slack:CNOPE", &[]);
    run(&hermes, &id);

    let discord: Vec<Value> = fake.bodies("/messages");
    assert!(discord.len() >= 3, "{}", discord.len());
    assert!(fake
        .seen()
        .iter()
        .all(|s| !s.path.contains("/channels/888/")));
    for (i, body) in discord.iter().enumerate() {
        let content = body["content"].as_str().unwrap();
        assert!(content.chars().count() <= 2000);
        assert!(content.ends_with(&format!("({}/{})", i + 1, discord.len())));
        assert_eq!(body["allowed_mentions"], json!({"parse": []}));
    }
    assert_eq!(fake.bodies("/chat.postMessage").len(), 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "slack:CNOPE: 200 channel_not_found"
    );
}

/// When a test kills a delivering pass.
#[derive(Clone, Copy)]
enum KillWhen {
    /// This long after the fake saw the request (its answer is held back meanwhile).
    After(Duration),
    /// Once the pass has taken the answer and waits out the rate limit it asked for
    /// (the log says so after the outbox has the answer).
    WaitingOutARateLimit,
}

/// Runs a job whose three in-run attempts meet 503s (the delivery goes to the outbox),
/// then starts the pass that retries it (due 30 s later) and SIGKILLs that pass once the
/// fake has seen the retry's first request, `when` it says.
fn kill_a_retry_after_its_first_request(fake: &Fake, hermes: &Hermes, when: KillWhen) {
    let id = add_job(hermes, "telegram", &[]);
    run(hermes, &id);
    assert_eq!(hermes.job(&id)["last_status"], "delivery_failed");
    assert_eq!(fake.seen().len(), 3);
    kill_a_pass_at_request(fake, hermes, "2026-03-01T10:05:00Z", 4, when);
}

/// Starts `hermes cron tick` at `now` and SIGKILLs it once the fake has seen `requests`
/// requests, `when` it says.
fn kill_a_pass_at_request(
    fake: &Fake,
    hermes: &Hermes,
    now: &str,
    requests: usize,
    when: KillWhen,
) {
    let mut pass = hermes.command(&["cron", "tick"]);
    pass.env("HERMES_NOW", now)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut pass = pass.spawn().unwrap();
    let (waiting, logged) = std::sync::mpsc::channel();
    let stderr = pass.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("rate limited; waiting") {
                let _ = waiting.send(());
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.seen().len() < requests {
        assert!(Instant::now() < deadline, "request {requests} never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    match when {
        KillWhen::After(settle) => std::thread::sleep(settle),
        KillWhen::WaitingOutARateLimit => logged
            .recv_timeout(Duration::from_secs(20))
            .expect("the pass never waited out the rate limit"),
    }
    pass.kill().unwrap();
    pass.wait().unwrap();
}

#[test]
fn a_pass_killed_between_attempts_of_its_run_s_delivery_leaves_it_to_the_next_pass() {
    if crate::support::on_postgres() {
        // On PostgreSQL a dead process's deliveries wait for its host's lease (10 s) to
        // expire; postgres::a_host_stopped_for_two_leases_… covers that path.
        return;
    }
    // The job's daily run (due 2026-03-02T10:00Z) meets a 429 asking for 5 s on its
    // first request, and the pass is killed while it waits: nothing is out.
    let fake = Fake::start(|_, i| match i {
        0 => telegram_error(
            429,
            "Too Many Requests: retry after 5",
            json!({"retry_after": 5}),
        ),
        _ => telegram_ok(i),
    });
    let hermes = report_home(&fake);
    let id = add_job(&hermes, "telegram", &[]);
    kill_a_pass_at_request(
        &fake,
        &hermes,
        "2026-03-02T10:00:05Z",
        1,
        KillWhen::WaitingOutARateLimit,
    );
    assert_eq!(fake.seen().len(), 1);

    // The run is not repeated; its message is sent by a later pass, once.
    hermes.cron_at("2026-03-02T10:01:00Z", &["tick"]).ok();
    hermes.cron_at("2026-03-02T10:30:00Z", &["tick"]).ok();
    let seen = fake.seen();
    assert_eq!(seen.len(), 2, "one more request, accepted");
    assert_eq!(
        seen[1].json()["text"],
        json!(wrapped("report").replace("{id}", &id))
    );
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", &id, "--json"]).ok()).unwrap();
    assert_eq!(
        runs["runs"].as_array().unwrap().len(),
        1,
        "the run itself is not repeated"
    );
}

#[test]
fn a_pass_killed_with_its_run_s_message_out_never_sends_it_again() {
    let fake = Fake::start(|_, i| {
        if i == 0 {
            std::thread::sleep(Duration::from_millis(1500));
        }
        telegram_ok(i)
    });
    let hermes = report_home(&fake);
    add_job(&hermes, "telegram", &[]);
    kill_a_pass_at_request(
        &fake,
        &hermes,
        "2026-03-02T10:00:05Z",
        1,
        KillWhen::After(Duration::from_millis(200)),
    );

    hermes.cron_at("2026-03-02T10:01:00Z", &["tick"]).ok();
    hermes.cron_at("2026-03-02T12:00:00Z", &["tick"]).ok();
    std::thread::sleep(Duration::from_millis(1700));
    assert_eq!(fake.seen().len(), 1, "may have arrived: never sent again");
}

#[test]
fn a_retry_killed_between_attempts_is_given_back_and_delivered_once_later() {
    if crate::support::on_postgres() {
        // On PostgreSQL a dead process's deliveries wait for its host's lease (10 s) to
        // expire; postgres::a_host_stopped_for_two_leases_… covers that path.
        return;
    }
    // 503 for the run's three attempts; the retry's first request gets a 429 asking for
    // 5 s, and the pass is killed while it waits: nothing is out, nothing arrived.
    let fake = Fake::start(|_, i| match i {
        0..=2 => telegram_error(503, "Service Unavailable", Value::Null),
        3 => telegram_error(
            429,
            "Too Many Requests: retry after 5",
            json!({"retry_after": 5}),
        ),
        _ => telegram_ok(i),
    });
    let hermes = report_home(&fake);
    kill_a_retry_after_its_first_request(&fake, &hermes, KillWhen::WaitingOutARateLimit);
    assert_eq!(fake.seen().len(), 4);

    // The next pass finds the row of the dead pass and sends it, once.
    let out = hermes.cron_at("2026-03-01T10:06:00Z", &["tick"]);
    assert!(
        out.ok().contains("delivery retry to telegram:5550001"),
        "{}",
        out.stdout
    );
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    let seen = fake.seen();
    assert_eq!(seen.len(), 5, "one more request, accepted");
    let id = hermes.jobs()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        seen[4].json()["text"],
        json!(wrapped("report").replace("{id}", &id))
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["last_delivery_error"], Value::Null);
}

#[test]
#[ignore = "slow (3-5 s of real time): .ci/run runs it once"]
fn a_retry_killed_with_its_request_out_is_closed_as_unknown_and_never_resent() {
    // The retry's request is read and left unanswered for 1.5 s: it may have arrived.
    let fake = Fake::start(|_, i| match i {
        0..=2 => telegram_error(503, "Service Unavailable", Value::Null),
        3 => {
            std::thread::sleep(Duration::from_millis(1500));
            telegram_ok(i)
        }
        _ => telegram_ok(i),
    });
    let hermes = report_home(&fake);
    kill_a_retry_after_its_first_request(
        &fake,
        &hermes,
        KillWhen::After(Duration::from_millis(200)),
    );

    hermes.cron_at("2026-03-01T10:06:00Z", &["tick"]).ok();
    hermes.cron_at("2026-03-01T12:00:00Z", &["tick"]).ok();
    std::thread::sleep(Duration::from_millis(1700));
    assert_eq!(fake.seen().len(), 4, "never sent again");
    let id = hermes.jobs()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(hermes.job(&id)["last_status"], "delivery_failed");
}
