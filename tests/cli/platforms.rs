//! The senders for Signal, Matrix, Mattermost, Home Assistant, SMS (Twilio) and the
//! WhatsApp Cloud API through the real binary, each against a local fake that checks
//! what the real API checks (path, auth, request shape, size limit) and answers with
//! its real success and error bodies. Every platform gets the same four checks (a long
//! reply split in order, a 429 and a 5xx retried once, a wrong credential recorded),
//! plus one test of exactly what a rich reply — three paragraphs, a code block and a
//! `MEDIA:` file — posts.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::delivery::{add_job, home, long_reply, ok, run, wrapped, Answer, Fake, Seen};
use crate::support::Hermes;

/// A fault the fake injects into the first message request of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    RateLimited,
    ServerError,
}

/// One platform as the shared checks see it.
pub(crate) struct Spec {
    /// The `deliver` target of the tests.
    pub(crate) target: &'static str,
    /// The fake API: answers a request, injecting `fault` when given.
    pub(crate) api: fn(&Seen, Option<Fault>) -> Answer,
    /// The text of a message request (`None` for other requests: uploads, lookups).
    pub(crate) text: fn(&Seen) -> Option<String>,
    /// The `.env` lines that point the sender at the fake at `base`.
    pub(crate) env: fn(&str) -> Vec<(&'static str, String)>,
    /// The credential the wrong-credential test spoils, how, and the error it must record.
    pub(crate) credential: &'static str,
    pub(crate) spoil: fn(&str) -> String,
    pub(crate) refused: &'static str,
    /// Whether the platform's rate limit is short enough to wait out within the run.
    pub(crate) waits_in_run: bool,
    /// The platform's size limit on one message, in characters.
    pub(crate) limit: usize,
}

/// Starts the spec's fake; the first message request gets `fault`.
pub(crate) fn fake(spec: &Spec, fault: Option<Fault>) -> Fake {
    let (api, text) = (spec.api, spec.text);
    let messages = Arc::new(AtomicUsize::new(0));
    let responder = move |seen: &Seen, _| {
        let first = text(seen).is_some() && messages.fetch_add(1, Ordering::SeqCst) == 0;
        api(seen, fault.filter(|_| first))
    };
    match WEBSOCKET_PLATFORMS.contains(&spec.target.split(':').next().unwrap_or("")) {
        true => Fake::websocket(responder),
        false => Fake::start(responder),
    }
}

/// The platforms whose senders speak a WebSocket instead of HTTP: their fakes are
/// [`Fake::websocket`] gateways.
const WEBSOCKET_PLATFORMS: &[&str] = &["wecom"];

/// A home whose script replies `reply`, with the spec's env pointing at `fake`.
pub(crate) fn platform_home(spec: &Spec, fake: &Fake, reply: &str) -> Hermes {
    home(reply, &(spec.env)(&fake.base()))
}

pub(crate) fn texts(spec: &Spec, fake: &Fake) -> Vec<String> {
    fake.seen().iter().filter_map(spec.text).collect()
}

/// A reply over the platform's limit arrives in ordered parts, each within the limit,
/// the code block whole in one of them.
pub(crate) fn check_long_reply_is_split_in_order(spec: &Spec) {
    let fake = fake(spec, None);
    let (mut reply, code) = long_reply();
    while reply.chars().count() < spec.limit * 2 + 100 {
        reply.push_str("\n\n");
        reply.push_str(&long_reply().0);
    }
    let hermes = platform_home(spec, &fake, &reply);
    let id = add_job(&hermes, spec.target, &[]);
    run(&hermes, &id);

    let parts = texts(spec, &fake);
    assert!(parts.len() >= 3, "{}: {} parts", spec.target, parts.len());
    let total = parts.len();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            part.chars().count() <= spec.limit,
            "{}: part {i}",
            spec.target
        );
        assert!(
            part.ends_with(&format!("({}/{total})", i + 1)),
            "{}",
            spec.target
        );
    }
    let first_line = code.lines().nth(1).unwrap_or_default();
    let holding: Vec<&String> = parts.iter().filter(|p| p.contains(first_line)).collect();
    assert!(
        !holding.is_empty(),
        "{}: the code block is missing",
        spec.target
    );
    let last_line = code.lines().rev().nth(1).unwrap_or_default();
    // A block bigger than a part (SMS) is cut; a smaller one never is.
    if code.chars().count() < spec.limit {
        assert!(
            holding[0].contains(last_line),
            "{}: the code block is split",
            spec.target
        );
    }
    let joined = parts.concat();
    let mut last = 0;
    for n in 0..20 {
        let marker = format!("Paragraph {n:02}:");
        let at = joined.find(&marker).unwrap_or(usize::MAX);
        assert!(
            at >= last && at != usize::MAX,
            "{}: paragraph {n}",
            spec.target
        );
        last = at;
    }
    assert_eq!(hermes.job(&id)["last_status"], "ok", "{}", spec.target);
}

/// A 429 or a 5xx on the first message is retried, and the message arrives once.
pub(crate) fn check_fault_is_retried_and_arrives_once(spec: &Spec, fault: Fault) {
    let fake = fake(spec, Some(fault));
    let hermes = platform_home(spec, &fake, "All 12 services are healthy.\n");
    let id = add_job(&hermes, spec.target, &[]);
    run(&hermes, &id);

    let sent = texts(spec, &fake);
    assert_eq!(sent.len(), 2, "{} {fault:?}: {sent:?}", spec.target);
    assert_eq!(
        sent[0], sent[1],
        "{}: the retry is the same message",
        spec.target
    );
    assert!(sent[1].contains("All 12 services are healthy."), "{sent:?}");
    let times: Vec<_> = fake
        .seen()
        .iter()
        .filter(|s| (spec.text)(s).is_some())
        .map(|s| s.at)
        .collect();
    if fault == Fault::RateLimited {
        let waited = times[1] - times[0];
        assert!(
            waited >= Duration::from_millis(950),
            "{}: {waited:?}",
            spec.target
        );
    }
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok", "{}: {job}", spec.target);
}

/// A wrong credential is a final delivery error carrying the platform's own text,
/// never the credential.
pub(crate) fn check_wrong_credential_is_recorded(spec: &Spec) {
    let fake = fake(spec, None);
    let mut env = (spec.env)(&fake.base());
    let spoiled = "wrong-credential-0000000000";
    for (key, value) in env.iter_mut() {
        if *key == spec.credential {
            *value = (spec.spoil)(value);
        }
    }
    let hermes = home("report\n", &env);
    let id = add_job(&hermes, spec.target, &[]);
    run(&hermes, &id);

    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed", "{}", spec.target);
    let error = job["last_delivery_error"].as_str().unwrap_or_default();
    assert!(error.contains(spec.refused), "{}: {error}", spec.target);
    assert!(!error.contains("(will retry)"), "{}: {error}", spec.target);
    assert!(!error.contains(spoiled), "{}: leaked {error}", spec.target);
    let requests = fake.seen().len();
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(fake.seen().len(), requests, "{}: retried", spec.target);
}

/// Runs the shared checks of one platform.
pub(crate) fn check_all(spec: &Spec) {
    check_long_reply_is_split_in_order(spec);
    if spec.waits_in_run {
        check_fault_is_retried_and_arrives_once(spec, Fault::RateLimited);
    }
    check_fault_is_retried_and_arrives_once(spec, Fault::ServerError);
    check_wrong_credential_is_recorded(spec);
}

/// The rich reply of the shape tests, with its `MEDIA:` file written in the home.
pub(crate) fn rich_home(spec: &Spec, fake: &Fake) -> (Hermes, PathBuf) {
    let hermes = platform_home(spec, fake, "");
    let chart = hermes.home().join("chart.png");
    fs::write(&chart, b"\x89PNG\r\n\x1a\nnot-really-a-png").unwrap();
    let reply = format!(
        "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         ```sh\ndf -h /srv\n```\n\n\
         Next check tomorrow.\n\
         MEDIA:{}\n",
        chart.display()
    );
    fs::write(hermes.home().join("scripts").join("reply.txt"), reply).unwrap();
    (hermes, chart)
}

pub(crate) fn spoiled(_: &str) -> String {
    "wrong-credential-0000000000".to_string()
}

pub(crate) fn wrapped_for(id: &str, content: &str) -> String {
    wrapped(content).replace("{id}", id)
}

pub(crate) fn png_base64() -> String {
    base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nnot-really-a-png")
}

pub(crate) fn header(seen: &Seen, name: &str) -> String {
    seen.header(name).unwrap_or_default()
}

/// `application/x-www-form-urlencoded` fields.
fn form(seen: &Seen) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    String::from_utf8_lossy(&seen.body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn field(fields: &[(String, String)], name: &str) -> Option<String> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

// ---------------------------------------------------------------------------- Signal

const SIGNAL_ACCOUNT: &str = "+15550001111";

fn signal_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if seen.path != "/api/v1/rpc" {
        return (404, Vec::new(), "Not Found".into());
    }
    let request = seen.json();
    let id = request["id"].clone();
    let error = |code: i64, message: &str, data: Value| {
        ok(
            json!({"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": id}),
        )
    };
    if request["jsonrpc"] != "2.0" || request["method"] != "send" {
        return error(-32601, "Method not implemented", Value::Null);
    }
    let params = &request["params"];
    if params["account"] != SIGNAL_ACCOUNT {
        return error(-32602, "Specified account does not exist", Value::Null);
    }
    match fault {
        Some(Fault::RateLimited) => {
            return error(
                -5,
                "Failed to send message due to rate limiting",
                json!({"response": {"timestamp": 1772359200000u64, "results": [
                    {"recipientAddress": {"number": "+15557654321"}, "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 1}
                ]}}),
            )
        }
        Some(Fault::ServerError) => return (502, Vec::new(), "Bad Gateway".into()),
        None => {}
    }
    if params["message"].as_str().map_or(0, |m| m.chars().count()) > 8000 {
        return error(-1, "Message too long", Value::Null);
    }
    ok(
        json!({"jsonrpc": "2.0", "result": {"timestamp": 1772359200000u64, "results": [
        {"recipientAddress": {"number": "+15557654321"}, "type": "SUCCESS"}
    ]}, "id": id}),
    )
}

fn signal_text(seen: &Seen) -> Option<String> {
    let body = seen.json();
    (body["method"] == "send")
        .then(|| body["params"]["message"].as_str().map(str::to_string))
        .flatten()
}

fn signal_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SIGNAL_HTTP_URL", base.to_string()),
        ("SIGNAL_ACCOUNT", SIGNAL_ACCOUNT.to_string()),
        ("SIGNAL_HOME_CHANNEL", "+15557654321".to_string()),
    ]
}

const SIGNAL: Spec = Spec {
    target: "signal",
    api: signal_api,
    text: signal_text,
    env: signal_env,
    credential: "SIGNAL_ACCOUNT",
    spoil: spoiled,
    refused: "signal:+15557654321: signal-cli error -32602: Specified account does not exist",
    waits_in_run: true,
    limit: 8000,
};

#[test]
fn signal_gets_plain_text_then_the_file_as_a_data_uri_attachment() {
    let fake = fake(&SIGNAL, None);
    let (hermes, _) = rich_home(&SIGNAL, &fake);
    let id = add_job(&hermes, "signal,signal:group:aGVybWVzLWdyb3Vw", &[]);
    run(&hermes, &id);

    let plain = wrapped_for(
        &id,
        "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         df -h /srv\n\n\
         Next check tomorrow.",
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 4, "{seen:?}");
    let to_home: Vec<Value> = seen
        .iter()
        .map(Seen::json)
        .filter(|b| b["params"]["recipient"] == json!(["+15557654321"]))
        .collect();
    assert_eq!(to_home.len(), 2);
    assert_eq!(
        to_home[0]["params"],
        json!({"account": SIGNAL_ACCOUNT, "recipient": ["+15557654321"], "message": plain})
    );
    assert_eq!(to_home[1]["params"]["message"], "");
    assert_eq!(
        to_home[1]["params"]["attachments"],
        json!([format!(
            "data:image/png;filename=chart.png;base64,{}",
            png_base64()
        )])
    );
    let to_group = seen
        .iter()
        .map(Seen::json)
        .find(|b| b["params"]["groupId"] == "aGVybWVzLWdyb3Vw")
        .unwrap();
    assert!(to_group["params"].get("recipient").is_none());
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn signal_splits_retries_and_records_refusals() {
    check_all(&SIGNAL);
}

// ---------------------------------------------------------------------------- Matrix

const MATRIX_TOKEN: &str = "syt_aGVybWVz_matrixtesttoken_1234";

fn matrix_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let error = |status: u16, code: &str, message: &str| {
        (
            status,
            Vec::new(),
            json!({"errcode": code, "error": message}).to_string(),
        )
    };
    if header(seen, "Authorization") != format!("Bearer {MATRIX_TOKEN}") {
        return (
            401,
            Vec::new(),
            json!({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed.", "soft_logout": false}).to_string(),
        );
    }
    if seen.path.starts_with("/_matrix/media/v3/upload?filename=") {
        return ok(json!({"content_uri": "mxc://example.org/AbCdEf"}));
    }
    let Some(rest) = seen.path.strip_prefix("/_matrix/client/v3/rooms/") else {
        return error(404, "M_UNRECOGNIZED", "Unrecognized request");
    };
    let (room, action) = rest.split_once('/').unwrap_or((rest, ""));
    let room = percent_encoding::percent_decode_str(room).decode_utf8_lossy();
    if action == "state/m.room.encryption/" {
        return match room.as_ref() {
            "!secret:example.org" => ok(json!({"algorithm": "m.megolm.v1.aes-sha2"})),
            _ => error(404, "M_NOT_FOUND", "Event not found."),
        };
    }
    if !action.starts_with("send/m.room.message/") {
        return error(404, "M_UNRECOGNIZED", "Unrecognized request");
    }
    match fault {
        Some(Fault::RateLimited) => {
            return (
                429,
                Vec::new(),
                json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": 1000}).to_string(),
            )
        }
        Some(Fault::ServerError) => return (502, Vec::new(), "<html>Bad Gateway</html>".into()),
        None => {}
    }
    if seen.body.len() > 65_536 {
        return error(413, "M_TOO_LARGE", "event too large");
    }
    ok(json!({"event_id": "$Bx1y2z3_event"}))
}

fn matrix_text(seen: &Seen) -> Option<String> {
    seen.path
        .contains("/send/m.room.message/")
        .then(|| seen.json()["body"].as_str().map(str::to_string))
        .flatten()
}

fn matrix_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("MATRIX_HOMESERVER", format!("{base}/")),
        ("MATRIX_ACCESS_TOKEN", MATRIX_TOKEN.to_string()),
        ("MATRIX_HOME_ROOM", "!ops:example.org".to_string()),
    ]
}

const MATRIX: Spec = Spec {
    target: "matrix",
    api: matrix_api,
    text: matrix_text,
    env: matrix_env,
    credential: "MATRIX_ACCESS_TOKEN",
    spoil: spoiled,
    refused: "matrix:!ops:example.org: 401 M_UNKNOWN_TOKEN: Invalid access token passed.",
    waits_in_run: true,
    limit: 16_000,
};

#[test]
fn matrix_gets_text_and_html_in_a_thread_then_the_uploaded_image() {
    let fake = fake(&MATRIX, None);
    let (hermes, _) = rich_home(&MATRIX, &fake);
    let id = add_job(&hermes, "matrix:!ops:example.org:$root_event", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(
        paths[0],
        "/_matrix/client/v3/rooms/%21ops%3Aexample%2Eorg/state/m.room.encryption/"
    );
    assert!(paths[1].starts_with(
        "/_matrix/client/v3/rooms/%21ops%3Aexample%2Eorg/send/m.room.message/hermes-cron-"
    ));
    assert_eq!(paths[2], "/_matrix/media/v3/upload?filename=chart.png");
    assert_eq!(header(&seen[2], "Content-Type"), "image/png");
    assert_eq!(seen[2].body, b"\x89PNG\r\n\x1a\nnot-really-a-png");
    assert_ne!(paths[1], paths[3], "each event has its own transaction id");

    let text = seen[1].json();
    let reply = "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
                 Backups finished at 03:12; nothing to do.\n\n\
                 ```sh\ndf -h /srv\n```\n\n\
                 Next check tomorrow.";
    assert_eq!(text["msgtype"], "m.text");
    assert_eq!(text["body"], json!(wrapped_for(&id, reply)));
    assert_eq!(text["format"], "org.matrix.custom.html");
    let html = text["formatted_body"].as_str().unwrap();
    assert!(html.contains("Disk usage is <b>fine</b> on all hosts, see <a href=\"https://grafana.example.com\">the dashboard</a>.<br><br>Backups"), "{html}");
    assert!(
        html.contains("<pre><code class=\"language-sh\">df -h /srv</code></pre>"),
        "{html}"
    );
    let thread = json!({"rel_type": "m.thread", "event_id": "$root_event", "is_falling_back": true, "m.in_reply_to": {"event_id": "$root_event"}});
    assert_eq!(text["m.relates_to"], thread);
    assert_eq!(
        seen[3].json(),
        json!({"msgtype": "m.image", "body": "chart.png", "url": "mxc://example.org/AbCdEf",
               "info": {"mimetype": "image/png", "size": 24}, "m.relates_to": thread})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn matrix_refuses_an_encrypted_room_before_posting_anything() {
    let fake = fake(&MATRIX, None);
    let hermes = platform_home(&MATRIX, &fake, "report\n");
    let id = add_job(&hermes, "matrix:!secret:example.org", &[]);
    run(&hermes, &id);

    assert_eq!(fake.seen().len(), 1, "only the state lookup");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "matrix:!secret:example.org: room !secret:example.org is end-to-end encrypted and hermes-cron cannot encrypt: deliver to an unencrypted room"
    );
}

#[test]
fn matrix_splits_retries_and_records_refusals() {
    check_all(&MATRIX);
}

// ---------------------------------------------------------------------------- Mattermost

const MATTERMOST_TOKEN: &str = "9xuqwrwgstrb3mzrxb83nb357a";

fn mattermost_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if header(seen, "Authorization") != format!("Bearer {MATTERMOST_TOKEN}") {
        return (
            401,
            Vec::new(),
            json!({"id": "api.context.session_expired.app_error", "message": "Invalid or expired session, please login again.",
                   "detailed_error": "", "request_id": "k3z1a8", "status_code": 401}).to_string(),
        );
    }
    match seen.path.as_str() {
        "/api/v4/files" => {
            let body = String::from_utf8_lossy(&seen.body);
            if !body.contains("name=\"channel_id\"") || !body.contains("filename=\"chart.png\"") {
                return (400, Vec::new(), json!({"id": "api.file.upload_file.incorrect_number_of_files.app_error", "message": "Unable to upload files.", "status_code": 400}).to_string());
            }
            (201, Vec::new(), json!({"file_infos": [{"id": "f1le1d", "name": "chart.png"}], "client_ids": []}).to_string())
        }
        "/api/v4/posts" => {
            match fault {
                Some(Fault::RateLimited) => {
                    return (
                        429,
                        vec![("Retry-After".into(), "1".into()), ("X-Ratelimit-Reset".into(), "1".into())],
                        "limit exceeded\n".into(),
                    )
                }
                Some(Fault::ServerError) => {
                    return (500, Vec::new(), json!({"id": "app.post.save.app_error", "message": "Unable to save the post.", "status_code": 500}).to_string())
                }
                None => {}
            }
            let post = seen.json();
            if post["message"].as_str().map_or(0, |m| m.chars().count()) > 16_383 {
                return (400, Vec::new(), json!({"id": "model.post.is_valid.message_length.app_error", "message": "Invalid Message.", "status_code": 400}).to_string());
            }
            (201, Vec::new(), json!({"id": "p0st1d", "channel_id": post["channel_id"], "message": post["message"]}).to_string())
        }
        _ => (404, Vec::new(), json!({"id": "api.context.404.app_error", "message": "Sorry, we could not find the page.", "status_code": 404}).to_string()),
    }
}

fn mattermost_text(seen: &Seen) -> Option<String> {
    (seen.path == "/api/v4/posts")
        .then(|| seen.json()["message"].as_str().map(str::to_string))
        .flatten()
}

fn mattermost_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("MATTERMOST_URL", base.to_string()),
        ("MATTERMOST_TOKEN", MATTERMOST_TOKEN.to_string()),
        (
            "MATTERMOST_HOME_CHANNEL",
            "4xp9fdt77pncbef59f4k1qe83o".to_string(),
        ),
    ]
}

const MATTERMOST: Spec = Spec {
    target: "mattermost",
    api: mattermost_api,
    text: mattermost_text,
    env: mattermost_env,
    credential: "MATTERMOST_TOKEN",
    spoil: spoiled,
    refused: "mattermost:4xp9fdt77pncbef59f4k1qe83o: 401 Invalid or expired session, please login again. (api.context.session_expired.app_error)",
    waits_in_run: true,
    limit: 4000,
};

#[test]
fn mattermost_gets_markdown_as_is_then_the_uploaded_file_attached() {
    let fake = fake(&MATTERMOST, None);
    let (hermes, _) = rich_home(&MATTERMOST, &fake);
    let id = add_job(
        &hermes,
        "mattermost:4xp9fdt77pncbef59f4k1qe83o:r00tp0st",
        &[],
    );
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["/api/v4/posts", "/api/v4/files", "/api/v4/posts"]);
    let reply = "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
                 Backups finished at 03:12; nothing to do.\n\n\
                 ```sh\ndf -h /srv\n```\n\n\
                 Next check tomorrow.";
    assert_eq!(
        seen[0].json(),
        json!({"channel_id": "4xp9fdt77pncbef59f4k1qe83o", "message": wrapped_for(&id, reply), "root_id": "r00tp0st"})
    );
    assert_eq!(
        seen[2].json(),
        json!({"channel_id": "4xp9fdt77pncbef59f4k1qe83o", "message": "", "root_id": "r00tp0st", "file_ids": ["f1le1d"]})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn mattermost_splits_retries_and_records_refusals() {
    check_all(&MATTERMOST);
}

// ---------------------------------------------------------------------------- Home Assistant

const HASS_TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.hasstesttoken.signature";

fn hass_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if header(seen, "Authorization") != format!("Bearer {HASS_TOKEN}") {
        return (401, Vec::new(), "401: Unauthorized".into());
    }
    if seen.path != "/api/services/notify/notify" {
        return (
            400,
            Vec::new(),
            json!({"message": "Service not found."}).to_string(),
        );
    }
    match fault {
        Some(Fault::RateLimited) => {
            return (
                429,
                vec![("Retry-After".into(), "1".into())],
                "429: Too Many Requests".into(),
            )
        }
        Some(Fault::ServerError) => {
            return (
                500,
                Vec::new(),
                "500 Internal Server Error\n\nServer got itself in trouble".into(),
            )
        }
        None => {}
    }
    ok(json!([]))
}

fn hass_text(seen: &Seen) -> Option<String> {
    seen.json()["message"].as_str().map(str::to_string)
}

fn hass_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("HASS_URL", base.to_string()),
        ("HASS_TOKEN", HASS_TOKEN.to_string()),
    ]
}

const HASS: Spec = Spec {
    target: "homeassistant:mobile_app_pixel_8",
    api: hass_api,
    text: hass_text,
    env: hass_env,
    credential: "HASS_TOKEN",
    spoil: spoiled,
    refused: "homeassistant:mobile_app_pixel_8: 401 401: Unauthorized",
    waits_in_run: true,
    limit: 4096,
};

#[test]
fn home_assistant_gets_a_notify_call_naming_the_file_it_cannot_carry() {
    let fake = fake(&HASS, None);
    let (hermes, chart) = rich_home(&HASS, &fake);
    let id = add_job(&hermes, HASS.target, &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/api/services/notify/notify");
    let reply = "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
                 Backups finished at 03:12; nothing to do.\n\n\
                 ```sh\ndf -h /srv\n```\n\n\
                 Next check tomorrow.";
    let mut message = wrapped_for(&id, reply);
    message.push_str(&format!(
        "\n(attachment not sent to Home Assistant: {})",
        chart.display()
    ));
    assert_eq!(
        seen[0].json(),
        json!({"message": message, "target": "mobile_app_pixel_8"})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn home_assistant_splits_retries_and_records_refusals() {
    check_all(&HASS);
}

// ---------------------------------------------------------------------------- SMS (Twilio)

const TWILIO_SID: &str = "AC0123456789abcdef0123456789abcdef";
const TWILIO_TOKEN: &str = "twilio-auth-token-0123456789abcdef";

fn twilio_error(status: u16, code: u32, message: &str) -> Answer {
    (
        status,
        Vec::new(),
        json!({"code": code, "message": message, "more_info": format!("https://www.twilio.com/docs/errors/{code}"), "status": status}).to_string(),
    )
}

fn twilio_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{TWILIO_SID}:{TWILIO_TOKEN}"));
    if header(seen, "Authorization") != format!("Basic {basic}") {
        return twilio_error(401, 20003, "Authenticate");
    }
    if seen.path != format!("/2010-04-01/Accounts/{TWILIO_SID}/Messages.json") {
        return twilio_error(404, 20404, "The requested resource was not found");
    }
    match fault {
        Some(Fault::RateLimited) => {
            let mut answer = twilio_error(429, 20429, "Too Many Requests");
            answer.1.push(("Retry-After".into(), "1".into()));
            return answer;
        }
        Some(Fault::ServerError) => return twilio_error(503, 20503, "Service Unavailable"),
        None => {}
    }
    let fields = form(seen);
    let body = field(&fields, "Body").unwrap_or_default();
    if body.chars().count() > 1600 {
        return twilio_error(
            400,
            21617,
            "The concatenated message body exceeds the 1600 character limit.",
        );
    }
    (
        201,
        Vec::new(),
        json!({"sid": "SM0123456789abcdef0123456789abcdef", "status": "queued", "to": field(&fields, "To"), "body": body}).to_string(),
    )
}

fn twilio_text(seen: &Seen) -> Option<String> {
    field(&form(seen), "Body")
}

fn twilio_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SMS_API_BASE", base.to_string()),
        ("TWILIO_ACCOUNT_SID", TWILIO_SID.to_string()),
        ("TWILIO_AUTH_TOKEN", TWILIO_TOKEN.to_string()),
        ("TWILIO_PHONE_NUMBER", "+15550002222".to_string()),
        ("SMS_HOME_CHANNEL", "+15557654321".to_string()),
    ]
}

const SMS: Spec = Spec {
    target: "sms",
    api: twilio_api,
    text: twilio_text,
    env: twilio_env,
    credential: "TWILIO_AUTH_TOKEN",
    spoil: spoiled,
    refused: "sms:+15557654321: 401 Authenticate (Twilio error 20003)",
    waits_in_run: true,
    limit: 1600,
};

#[test]
fn sms_gets_plain_text_from_the_twilio_number_naming_the_file() {
    let fake = fake(&SMS, None);
    let (hermes, chart) = rich_home(&SMS, &fake);
    let id = add_job(&hermes, "sms", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        header(&seen[0], "Content-Type"),
        "application/x-www-form-urlencoded"
    );
    let mut body = wrapped_for(
        &id,
        "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         df -h /srv\n\n\
         Next check tomorrow.",
    );
    body.push_str(&format!(
        "\n(attachment not sent by SMS: {})",
        chart.display()
    ));
    assert_eq!(
        form(&seen[0]),
        [
            ("From".to_string(), "+15550002222".to_string()),
            ("To".to_string(), "+15557654321".to_string()),
            ("Body".to_string(), body),
        ]
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn sms_splits_retries_and_records_refusals() {
    check_all(&SMS);
}

// ---------------------------------------------------------------------------- WhatsApp Cloud API

const WA_TOKEN: &str = "EAAGwhatsappcloudtesttoken0123456789";
const WA_PHONE_ID: &str = "106540352242922";

fn graph_error(status: u16, code: u32, message: &str) -> Answer {
    (
        status,
        Vec::new(),
        json!({"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbCdEfGh123"}}).to_string(),
    )
}

fn whatsapp_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if header(seen, "Authorization") != format!("Bearer {WA_TOKEN}") {
        return graph_error(
            401,
            190,
            "Invalid OAuth access token - Cannot parse access token",
        );
    }
    if seen.path == format!("/v20.0/{WA_PHONE_ID}/media") {
        let body = String::from_utf8_lossy(&seen.body);
        if !body.contains("name=\"messaging_product\"\r\n\r\nwhatsapp") {
            return graph_error(
                400,
                100,
                "(#100) The parameter messaging_product is required.",
            );
        }
        return ok(json!({"id": "1037543291543636"}));
    }
    if seen.path != format!("/v20.0/{WA_PHONE_ID}/messages") {
        return graph_error(400, 100, "Unsupported post request.");
    }
    match fault {
        Some(Fault::RateLimited) => return graph_error(400, 130429, "(#130429) Rate limit hit"),
        Some(Fault::ServerError) => return graph_error(500, 1, "An unknown error has occurred."),
        None => {}
    }
    let message = seen.json();
    if message["messaging_product"] != "whatsapp" {
        return graph_error(
            400,
            100,
            "(#100) The parameter messaging_product is required.",
        );
    }
    if message["text"]["body"]
        .as_str()
        .map_or(0, |b| b.chars().count())
        > 4096
    {
        return graph_error(
            400,
            100,
            "(#100) Param text['body'] must be at most 4096 characters long.",
        );
    }
    ok(
        json!({"messaging_product": "whatsapp", "contacts": [{"input": message["to"], "wa_id": message["to"]}],
              "messages": [{"id": "wamid.HBgLMTU1NTc2NTQzMjEVAgARGBI"}]}),
    )
}

fn whatsapp_text(seen: &Seen) -> Option<String> {
    if !seen.path.ends_with("/messages") {
        return None;
    }
    let message = seen.json();
    Some(
        message["text"]["body"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn whatsapp_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WHATSAPP_CLOUD_API_BASE", base.to_string()),
        ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", WA_PHONE_ID.to_string()),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", WA_TOKEN.to_string()),
        ("WHATSAPP_CLOUD_HOME_CHANNEL", "15557654321".to_string()),
    ]
}

const WHATSAPP: Spec = Spec {
    target: "whatsapp_cloud",
    api: whatsapp_api,
    text: whatsapp_text,
    env: whatsapp_env,
    credential: "WHATSAPP_CLOUD_ACCESS_TOKEN",
    spoil: spoiled,
    refused: "whatsapp_cloud:15557654321: 401 Invalid OAuth access token - Cannot parse access token (Graph error 190)",
    waits_in_run: true,
    limit: 4096,
};

#[test]
fn whatsapp_cloud_gets_whatsapp_markup_then_the_uploaded_image_by_id() {
    let fake = fake(&WHATSAPP, None);
    let (hermes, _) = rich_home(&WHATSAPP, &fake);
    let id = add_job(&hermes, "whatsapp_cloud", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v20.0/106540352242922/messages",
            "/v20.0/106540352242922/media",
            "/v20.0/106540352242922/messages"
        ]
    );
    let text = wrapped_for(
        &id,
        "Disk usage is *fine* on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         ```sh\ndf -h /srv\n```\n\n\
         Next check tomorrow.",
    );
    assert_eq!(
        seen[0].json(),
        json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": "15557654321",
               "type": "text", "text": {"body": text, "preview_url": false}})
    );
    let upload = String::from_utf8_lossy(&seen[1].body);
    assert!(
        upload.contains("name=\"type\"\r\n\r\nimage/png"),
        "{upload}"
    );
    assert!(upload.contains("filename=\"chart.png\""), "{upload}");
    assert_eq!(
        seen[2].json(),
        json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": "15557654321",
               "type": "image", "image": {"id": "1037543291543636"}})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn whatsapp_cloud_splits_retries_and_records_refusals() {
    check_all(&WHATSAPP);
}

// ---------------------------------------------------------------------------- DingTalk

const DINGTALK_TOKEN: &str = "5f1a6a2e9d0c4b7f8e3a1d2c6b9e0f4a5d7c8b1e2f3a4b5c6d7e8f9a0b1c2d3e";

fn dingtalk_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let error = |code: i64, message: &str| ok(json!({"errcode": code, "errmsg": message}));
    if seen.path != format!("/robot/send?access_token={DINGTALK_TOKEN}") {
        return error(300001, "token is not exist");
    }
    match fault {
        Some(Fault::RateLimited) => {
            return error(410100, "send too fast, exceed 20 times per minute")
        }
        Some(Fault::ServerError) => return error(-1, "system busy"),
        None => {}
    }
    let message = seen.json();
    if message["msgtype"] != "text" {
        return error(40035, "missing msgtype");
    }
    if message["text"]["content"]
        .as_str()
        .map_or(0, |c| c.chars().count())
        > 20_000
    {
        return error(460101, "message too long, exceed 20000 bytes");
    }
    error(0, "ok")
}

fn dingtalk_text(seen: &Seen) -> Option<String> {
    seen.json()["text"]["content"].as_str().map(str::to_string)
}

fn dingtalk_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "DINGTALK_WEBHOOK_URL",
            format!("{base}/robot/send?access_token={DINGTALK_TOKEN}"),
        ),
        ("DINGTALK_HOME_CHANNEL", "ops-group".to_string()),
    ]
}

fn spoil_dingtalk_token(url: &str) -> String {
    url.replace(DINGTALK_TOKEN, "wrong-credential-0000000000")
}

const DINGTALK: Spec = Spec {
    target: "dingtalk",
    api: dingtalk_api,
    text: dingtalk_text,
    env: dingtalk_env,
    credential: "DINGTALK_WEBHOOK_URL",
    spoil: spoil_dingtalk_token,
    refused: "dingtalk:ops-group: errcode 300001: token is not exist",
    waits_in_run: false,
    limit: 20_000,
};

#[test]
fn dingtalk_gets_plain_text_through_the_robot_webhook() {
    let fake = fake(&DINGTALK, None);
    let (hermes, chart) = rich_home(&DINGTALK, &fake);
    let id = add_job(&hermes, "dingtalk", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let mut content = wrapped_for(
        &id,
        "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         df -h /srv\n\n\
         Next check tomorrow.",
    );
    content.push_str(&format!(
        "\n(attachment not sent to DingTalk: {})",
        chart.display()
    ));
    assert_eq!(
        seen[0].json(),
        json!({"msgtype": "text", "text": {"content": content}})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn dingtalk_splits_retries_and_records_refusals() {
    check_all(&DINGTALK);
}

/// A throttled robot stays throttled for 10 minutes: the message waits in the outbox
/// and a later pass delivers it, once.
#[test]
fn a_throttled_dingtalk_robot_gets_the_message_once_from_the_outbox() {
    let fake = fake(&DINGTALK, Some(Fault::RateLimited));
    let hermes = platform_home(&DINGTALK, &fake, "report\n");
    let id = add_job(&hermes, "dingtalk", &[]);
    run(&hermes, &id);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "dingtalk:ops-group: errcode 410100: send too fast, exceed 20 times per minute (will retry)"
    );
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    hermes.cron_at("2026-03-01T11:00:00Z", &["tick"]).ok();
    let sent = texts(&DINGTALK, &fake);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

// ---------------------------------------------------------------------------- Feishu

const FEISHU_APP: &str = "cli_a1b2c3d4e5f6a7b8";
const FEISHU_SECRET: &str = "feishu-app-secret-0123456789abcdef";
const FEISHU_TENANT_TOKEN: &str = "t-g1044ghJRUIJJ5ELPP3ZYIGZJIKYDD3N";

fn feishu_error(status: u16, code: i64, message: &str) -> Answer {
    (
        status,
        Vec::new(),
        json!({"code": code, "msg": message}).to_string(),
    )
}

fn feishu_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if seen.path == "/open-apis/auth/v3/tenant_access_token/internal" {
        let body = seen.json();
        if body["app_id"] != FEISHU_APP || body["app_secret"] != FEISHU_SECRET {
            return feishu_error(400, 10014, "app secret invalid");
        }
        return ok(
            json!({"code": 0, "msg": "ok", "tenant_access_token": FEISHU_TENANT_TOKEN, "expire": 7200}),
        );
    }
    if header(seen, "Authorization") != format!("Bearer {FEISHU_TENANT_TOKEN}") {
        return feishu_error(
            400,
            99991663,
            "Invalid access token for authorization. Please make a request with token attached.",
        );
    }
    if seen.path == "/open-apis/im/v1/images" {
        return ok(json!({"code": 0, "msg": "success", "data": {"image_key": "img_v3_0123abcd"}}));
    }
    if !seen
        .path
        .starts_with("/open-apis/im/v1/messages?receive_id_type=")
    {
        return feishu_error(404, 1254000, "not found");
    }
    match fault {
        Some(Fault::RateLimited) => {
            let mut answer = feishu_error(429, 99991400, "request trigger frequency limit");
            answer.1.push(("x-ogw-ratelimit-reset".into(), "1".into()));
            return answer;
        }
        Some(Fault::ServerError) => {
            return (502, Vec::new(), "<html>502 Bad Gateway</html>".into())
        }
        None => {}
    }
    let message = seen.json();
    let Ok(content) = serde_json::from_str::<Value>(message["content"].as_str().unwrap_or(""))
    else {
        return feishu_error(
            400,
            230001,
            "Your request contains an invalid request parameter.",
        );
    };
    if message["msg_type"] == "post" && feishu_post_text(&content).chars().count() > 30_000 {
        return feishu_error(
            400,
            230025,
            "The length of the message content reaches its limit.",
        );
    }
    ok(
        json!({"code": 0, "msg": "success", "data": {"message_id": "om_dc13264520392913993dd051dba21dcf"}}),
    )
}

fn feishu_post_text(content: &Value) -> String {
    content["zh_cn"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| row[0]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn feishu_text(seen: &Seen) -> Option<String> {
    if !seen.path.starts_with("/open-apis/im/v1/messages") {
        return None;
    }
    let content: Value = serde_json::from_str(seen.json()["content"].as_str()?).ok()?;
    Some(feishu_post_text(&content))
}

fn feishu_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("FEISHU_API_BASE", base.to_string()),
        ("FEISHU_APP_ID", FEISHU_APP.to_string()),
        ("FEISHU_APP_SECRET", FEISHU_SECRET.to_string()),
        (
            "FEISHU_HOME_CHANNEL",
            "oc_a0553eda9014c201e6969b478895c230".to_string(),
        ),
    ]
}

const FEISHU: Spec = Spec {
    target: "feishu",
    api: feishu_api,
    text: feishu_text,
    env: feishu_env,
    credential: "FEISHU_APP_SECRET",
    spoil: spoiled,
    refused: "feishu:oc_a0553eda9014c201e6969b478895c230: 400 app secret invalid (code 10014)",
    waits_in_run: true,
    limit: 8000,
};

#[test]
fn feishu_gets_a_markdown_post_with_the_code_block_in_its_own_row_then_the_image() {
    let fake = fake(&FEISHU, None);
    let (hermes, _) = rich_home(&FEISHU, &fake);
    let id = add_job(&hermes, "feishu", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/open-apis/auth/v3/tenant_access_token/internal",
            "/open-apis/im/v1/messages?receive_id_type=chat_id",
            "/open-apis/im/v1/images",
            "/open-apis/im/v1/messages?receive_id_type=chat_id"
        ]
    );
    let post = seen[1].json();
    assert_eq!(post["receive_id"], "oc_a0553eda9014c201e6969b478895c230");
    assert_eq!(post["msg_type"], "post");
    assert!(post["uuid"].as_str().is_some_and(|u| !u.is_empty()));
    let content: Value = serde_json::from_str(post["content"].as_str().unwrap()).unwrap();
    let wrapped = wrapped_for(&id, "X");
    let (head, tail) = wrapped.split_once('X').unwrap();
    assert_eq!(
        content,
        json!({"zh_cn": {"content": [
            [{"tag": "md", "text": format!("{head}Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\nBackups finished at 03:12; nothing to do.\n")}],
            [{"tag": "md", "text": "```sh\ndf -h /srv\n```"}],
            [{"tag": "md", "text": format!("\nNext check tomorrow.{tail}")}],
        ]}})
    );
    let upload = String::from_utf8_lossy(&seen[2].body);
    assert!(
        upload.contains("name=\"image_type\"\r\n\r\nmessage"),
        "{upload}"
    );
    let image = seen[3].json();
    assert_eq!(image["msg_type"], "image");
    assert_eq!(
        image["content"],
        json!({"image_key": "img_v3_0123abcd"}).to_string()
    );
    assert_ne!(image["uuid"], post["uuid"]);
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn feishu_splits_retries_and_records_refusals() {
    check_all(&FEISHU);
}

// ---------------------------------------------------------------------------- every platform

#[test]
fn all_and_origin_reach_the_new_platforms_home_channels_in_hermes_order() {
    let fake = Fake::start(|seen, _| {
        if seen.path.starts_with("/mm/") {
            (201, Vec::new(), json!({"id": "p"}).to_string())
        } else if seen.path.starts_with("/mx/") && seen.path.ends_with("/state/m.room.encryption/")
        {
            (
                404,
                Vec::new(),
                json!({"errcode": "M_NOT_FOUND", "error": "Event not found."}).to_string(),
            )
        } else if seen.path.starts_with("/mx/") {
            ok(json!({"event_id": "$e"}))
        } else {
            ok(json!({"jsonrpc": "2.0", "result": {"timestamp": 1}, "id": "x"}))
        }
    });
    let base = fake.base();
    let env = vec![
        ("SIGNAL_HTTP_URL", format!("{base}/sig")),
        ("SIGNAL_ACCOUNT", SIGNAL_ACCOUNT.to_string()),
        ("SIGNAL_HOME_CHANNEL", "+15557654321".to_string()),
        ("MATTERMOST_URL", format!("{base}/mm")),
        ("MATTERMOST_TOKEN", MATTERMOST_TOKEN.to_string()),
        ("MATTERMOST_HOME_CHANNEL", "town".to_string()),
        ("MATRIX_HOMESERVER", format!("{base}/mx")),
        ("MATRIX_ACCESS_TOKEN", MATRIX_TOKEN.to_string()),
        ("MATRIX_HOME_ROOM", "!ops:example.org".to_string()),
    ];
    let hermes = home("report\n", &env);
    let all = add_job(&hermes, "all", &[]);
    run(&hermes, &all);
    let paths: Vec<String> = fake.seen().iter().map(|s| s.path.clone()).collect();
    assert!(paths.contains(&"/sig/api/v1/rpc".to_string()), "{paths:?}");
    assert!(paths.contains(&"/mm/api/v4/posts".to_string()), "{paths:?}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/mx/_matrix/client/v3/rooms/%21ops%3Aexample%2Eorg/send/")),
        "{paths:?}"
    );
    assert_eq!(hermes.job(&all)["last_status"], "ok");

    // Without an origin, `origin` takes the first home channel in Hermes' order: Matrix.
    let before = fake.seen().len();
    let origin = add_job(&hermes, "origin", &[]);
    run(&hermes, &origin);
    let new: Vec<String> = fake.seen()[before..]
        .iter()
        .map(|s| s.path.clone())
        .collect();
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(new.iter().all(|p| p.starts_with("/mx/")), "{new:?}");
}

#[test]
fn doctor_names_each_platforms_missing_credential_and_home_channel() {
    let hermes = home(
        "report\n",
        &[("SIGNAL_HTTP_URL", "http://127.0.0.1:9".to_string())],
    );
    let ids: Vec<(String, &str)> = [
        ("signal", "SIGNAL_ACCOUNT"),
        ("matrix:!ops:example.org", "MATRIX_ACCESS_TOKEN"),
        ("matrix", "MATRIX_HOME_ROOM"),
        ("mattermost:town", "MATTERMOST_TOKEN"),
        ("homeassistant:mobile_app", "HASS_TOKEN"),
        ("sms:+15557654321", "TWILIO_AUTH_TOKEN"),
        ("whatsapp_cloud:15557654321", "WHATSAPP_CLOUD_ACCESS_TOKEN"),
        ("dingtalk", "DINGTALK_WEBHOOK_URL"),
        ("dingtalk", "DINGTALK_HOME_CHANNEL"),
        ("feishu:oc_1", "FEISHU_APP_SECRET"),
    ]
    .into_iter()
    .map(|(deliver, var)| (add_job(&hermes, deliver, &[]), var))
    .collect();
    let out = hermes.cron(&["doctor"]);
    assert_eq!(out.code, Some(1));
    for (id, var) in &ids {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains(id.as_str()) && l.contains(var) && l.contains("not set")),
            "{id} {var}:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("SIGNAL_HTTP_URL"), "{}", out.stdout);
    assert!(!out.stdout.contains("_BOT_TOKEN"), "{}", out.stdout);
}
