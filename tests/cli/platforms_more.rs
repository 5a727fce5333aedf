//! The senders for Hermes' WhatsApp bridge, BlueBubbles (iMessage), Weixin, QQ bots, WeCom
//! AI bots (a WebSocket gateway) and WeCom self-built apps through the real binary, each
//! against a local fake that checks what the real service checks (path, auth, request
//! shape, size limit) and answers with its real success and error bodies; the shared
//! checks of `platforms` (a long reply split in order, a 429 or 5xx retried once, a wrong
//! credential recorded) run for each, plus one test of exactly what a rich reply — three
//! paragraphs, a code block and a `MEDIA:` file — posts. Yuanbao's fake signs tokens over
//! HTTP and speaks protobuf frames on its WebSocket.

use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::delivery::{add_job, ok, run, Answer, Fake, Seen};
use crate::platforms::{
    check_all, fake, header, platform_home, rich_home, texts, wrapped_for, Fault, Spec,
};

/// The rich reply of the shape tests, as Markdown (before any platform's rendering).
const RICH: &str =
    "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
                    Backups finished at 03:12; nothing to do.\n\n\
                    ```sh\ndf -h /srv\n```\n\n\
                    Next check tomorrow.";

// ---------------------------------------------------------------------------- WhatsApp bridge

fn bridge_error(status: u16, error: &str) -> Answer {
    (status, Vec::new(), json!({ "error": error }).to_string())
}

/// Hermes' Baileys bridge: loopback hosts only, JIDs only (Baileys cannot decode a bare
/// number), 503 while WhatsApp is not connected, and files read from disk by path.
fn bridge_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let host = header(seen, "Host");
    let host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
    if !["localhost", "127.0.0.1", "[::1]"].contains(&host) {
        return bridge_error(
            400,
            "Invalid Host header. Bridge accepts loopback hosts only.",
        );
    }
    if fault.is_some() {
        return bridge_error(503, "Not connected to WhatsApp");
    }
    let body = seen.json();
    let chat = body["chatId"].as_str().unwrap_or("");
    let bad_jid = || {
        bridge_error(
            500,
            "Cannot destructure property 'user' of 'jidDecode(...)' as it is undefined.",
        )
    };
    match seen.path.as_str() {
        "/send" => {
            if chat.is_empty() || body["message"].as_str().unwrap_or("").is_empty() {
                return bridge_error(400, "chatId and message are required");
            }
            if !chat.contains('@') {
                return bad_jid();
            }
            ok(
                json!({"success": true, "messageId": "3EB0C431C26A1916", "messageIds": ["3EB0C431C26A1916"]}),
            )
        }
        "/send-media" => {
            let path = body["filePath"].as_str().unwrap_or("");
            if chat.is_empty() || path.is_empty() {
                return bridge_error(400, "chatId and filePath are required");
            }
            if !chat.contains('@') {
                return bad_jid();
            }
            if !std::path::Path::new(path).exists() {
                return bridge_error(404, &format!("File not found: {path}"));
            }
            ok(json!({"success": true, "messageId": "3EB0C431C26A1917"}))
        }
        _ => (404, Vec::new(), format!("Cannot POST {}", seen.path)),
    }
}

fn bridge_text(seen: &Seen) -> Option<String> {
    let body = seen.json();
    match seen.path.as_str() {
        "/send" => body["message"].as_str().map(str::to_string),
        "/send-media" => Some(body["caption"].as_str().unwrap_or("").to_string()),
        _ => None,
    }
}

fn bridge_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WHATSAPP_ENABLED", "true".to_string()),
        ("WHATSAPP_API_BASE", base.to_string()),
        ("WHATSAPP_HOME_CHANNEL", "15557654321".to_string()),
    ]
}

fn disabled(_: &str) -> String {
    "false".to_string()
}

const WHATSAPP: Spec = Spec {
    target: "whatsapp",
    api: bridge_api,
    text: bridge_text,
    env: bridge_env,
    credential: "WHATSAPP_ENABLED",
    spoil: disabled,
    refused: "whatsapp:15557654321: WHATSAPP_ENABLED is 'false', not true",
    waits_in_run: false,
    limit: 4096,
};

#[test]
fn whatsapp_bridge_gets_the_reply_as_the_caption_of_its_only_image() {
    let fake = fake(&WHATSAPP, None);
    let (hermes, chart) = rich_home(&WHATSAPP, &fake);
    let id = add_job(&hermes, "whatsapp", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/send-media");
    assert_eq!(
        seen[0].json(),
        json!({"chatId": "15557654321@s.whatsapp.net", "filePath": chart.display().to_string(),
               "mediaType": "image", "caption": wrapped_for(&id, RICH)})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn whatsapp_bridge_gets_the_text_then_each_file_when_no_caption_fits() {
    let fake = fake(&WHATSAPP, None);
    let hermes = platform_home(&WHATSAPP, &fake, "");
    let (voice, log) = (
        hermes.home().join("voice.ogg"),
        hermes.home().join("run.log"),
    );
    fs::write(&voice, b"OggS").unwrap();
    fs::write(&log, b"done\n").unwrap();
    let reply = format!(
        "{RICH}\nMEDIA:{}\nMEDIA:{}\n",
        voice.display(),
        log.display()
    );
    fs::write(hermes.home().join("scripts").join("reply.txt"), reply).unwrap();
    let id = add_job(&hermes, "whatsapp:120363040512345678@g.us", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let bodies: Vec<(&str, Value)> = seen.iter().map(|s| (s.path.as_str(), s.json())).collect();
    let group = "120363040512345678@g.us";
    assert_eq!(
        bodies,
        [
            (
                "/send",
                json!({"chatId": group, "message": wrapped_for(&id, RICH)})
            ),
            (
                "/send-media",
                json!({"chatId": group, "filePath": voice.display().to_string(), "mediaType": "audio"})
            ),
            (
                "/send-media",
                json!({"chatId": group, "filePath": log.display().to_string(), "mediaType": "document", "fileName": "run.log"})
            ),
        ]
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn whatsapp_bridge_refusing_a_send_is_recorded_and_never_resent() {
    let fake = fake(&WHATSAPP, None);
    let hermes = platform_home(&WHATSAPP, &fake, "report\n");
    // A Baileys failure (500) may come after the message left: it is not repeated.
    let id = add_job(&hermes, "whatsapp:team-room", &[]);
    run(&hermes, &id);
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();

    assert_eq!(fake.seen().len(), 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "whatsapp:team-room: WhatsApp bridge error (500): Cannot destructure property 'user' of 'jidDecode(...)' as it is undefined."
    );
}

#[test]
fn whatsapp_bridge_splits_retries_and_records_refusals() {
    check_all(&WHATSAPP);
}

// ---------------------------------------------------------------------------- BlueBubbles

const BB_PASSWORD: &str = "bb-server-password-0123456789";
const BB_CHAT: &str = "iMessage;-;+15557654321";

fn bb_error(status: u16, message: &str, kind: &str, detail: &str) -> Answer {
    (
        status,
        Vec::new(),
        json!({"status": status, "message": message, "error": {"type": kind, "message": detail}})
            .to_string(),
    )
}

/// The query parameter `name` of a request path, percent-decoded.
fn query_param(path: &str, name: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// A BlueBubbles server: the password in the query string, chats by GUID, and the
/// server's own `{status, message, error}` bodies.
fn bb_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if query_param(&seen.path, "password").as_deref() != Some(BB_PASSWORD) {
        return bb_error(
            401,
            "Unauthorized",
            "Authentication Error",
            "You are not authorized to access this resource",
        );
    }
    let route = seen.path.split('?').next().unwrap_or("");
    let sent = |guid: &str| {
        ok(
            json!({"status": 200, "message": "Message sent!", "data": {"guid": guid, "isFromMe": true}}),
        )
    };
    match route {
        "/api/v1/chat/query" => ok(json!({"status": 200, "message": "Success", "data": [
            {"guid": "iMessage;+;chat493787071395575843", "chatIdentifier": "chat493787071395575843", "displayName": "Ops"},
            {"guid": BB_CHAT, "chatIdentifier": "+15557654321", "displayName": ""}
        ]})),
        "/api/v1/message/text" => {
            match fault {
                Some(Fault::ServerError) => {
                    return (
                        503,
                        Vec::new(),
                        "<html><body><h1>503 Service Unavailable</h1></body></html>".into(),
                    )
                }
                Some(Fault::RateLimited) => {
                    return (
                        429,
                        vec![("Retry-After".into(), "1".into())],
                        "Too Many Requests".into(),
                    )
                }
                None => {}
            }
            let body = seen.json();
            let (guid, message) = (
                body["chatGuid"].as_str().unwrap_or(""),
                body["message"].as_str().unwrap_or(""),
            );
            if guid.is_empty() || message.is_empty() || !body["tempGuid"].is_string() {
                return bb_error(
                    400,
                    "Bad Request",
                    "Validation Error",
                    "A message and chatGuid are required",
                );
            }
            if !guid.contains(';') {
                return bb_error(
                    500,
                    "Message Send Error",
                    "iMessage Error",
                    "Chat does not exist",
                );
            }
            sent("p:0/6B8D1D4E-0001")
        }
        "/api/v1/message/attachment" => {
            let body = String::from_utf8_lossy(&seen.body);
            let has = |name: &str| body.contains(&format!("name=\"{name}\""));
            if !(has("chatGuid")
                && has("name")
                && has("tempGuid")
                && body.contains("name=\"attachment\"; filename=\"chart.png\""))
            {
                return bb_error(
                    400,
                    "Bad Request",
                    "Validation Error",
                    "Attachment not provided or was empty!",
                );
            }
            ok(
                json!({"status": 200, "message": "Attachment sent!", "data": {"guid": "p:0/6B8D1D4E-0002"}}),
            )
        }
        _ => bb_error(404, "Not Found", "Not Found", "Route not found"),
    }
}

fn bb_text(seen: &Seen) -> Option<String> {
    seen.path
        .starts_with("/api/v1/message/text")
        .then(|| seen.json()["message"].as_str().map(str::to_string))
        .flatten()
}

fn bb_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("BLUEBUBBLES_SERVER_URL", format!("{base}/")),
        ("BLUEBUBBLES_PASSWORD", BB_PASSWORD.to_string()),
        ("BLUEBUBBLES_HOME_CHANNEL", "+15557654321".to_string()),
    ]
}

const BLUEBUBBLES: Spec = Spec {
    target: "bluebubbles",
    api: bb_api,
    text: bb_text,
    env: bb_env,
    credential: "BLUEBUBBLES_PASSWORD",
    spoil: crate::platforms::spoiled,
    refused:
        "bluebubbles:+15557654321: 401 Unauthorized: You are not authorized to access this resource",
    waits_in_run: true,
    limit: 4000,
};

#[test]
fn bluebubbles_gets_one_plain_bubble_per_paragraph_then_the_attachment() {
    let fake = fake(&BLUEBUBBLES, None);
    let (hermes, _) = rich_home(&BLUEBUBBLES, &fake);
    let id = add_job(&hermes, "bluebubbles", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let routes: Vec<&str> = seen
        .iter()
        .map(|s| s.path.split('?').next().unwrap_or(""))
        .collect();
    assert_eq!(routes[0], "/api/v1/chat/query");
    assert_eq!(routes[1..7], ["/api/v1/message/text"; 6]);
    assert_eq!(routes[7..], ["/api/v1/message/attachment"]);
    let texts: Vec<Value> = seen[1..7].iter().map(Seen::json).collect();
    assert!(texts.iter().all(|t| t["chatGuid"] == BB_CHAT), "{texts:?}");
    let temps: std::collections::HashSet<&str> = texts
        .iter()
        .filter_map(|t| t["tempGuid"].as_str())
        .collect();
    assert_eq!(temps.len(), 6, "each bubble has its own tempGuid");
    let bubbles: Vec<&str> = texts.iter().filter_map(|t| t["message"].as_str()).collect();
    let header = format!("Cronjob Response: daily report\n(job_id: {id})\n-------------");
    assert_eq!(
        bubbles,
        [
            header.as_str(),
            "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).",
            "Backups finished at 03:12; nothing to do.",
            "df -h /srv",
            "Next check tomorrow.",
            "To stop or manage this job, send me a new message (e.g. \"stop reminder daily report\").",
        ]
    );
    let upload = String::from_utf8_lossy(&seen[7].body);
    assert!(upload.contains(BB_CHAT), "{upload}");
    assert!(upload.contains("PNG\r\n\x1a\nnot-really-a-png"), "{upload}");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn bluebubbles_long_paragraphs_arrive_in_order_as_bubbles_within_the_limit() {
    let fake = fake(&BLUEBUBBLES, None);
    let huge = format!("Opening: {}", "all systems nominal ".repeat(300));
    let (mut reply, code) = crate::delivery::long_reply();
    reply = format!("{huge}\n\n{reply}");
    let hermes = platform_home(&BLUEBUBBLES, &fake, &reply);
    let id = add_job(&hermes, "bluebubbles:iMessage;-;+15557654321", &[]);
    run(&hermes, &id);

    let bubbles: Vec<String> = fake.seen().iter().filter_map(bb_text).collect();
    assert!(bubbles.iter().all(|b| b.chars().count() <= 4000));
    // The paragraph over the limit is cut in two bubbles, in order, without markers.
    assert!(huge.starts_with(&bubbles[1]), "{:?}", &bubbles[1][..40]);
    assert!(
        huge.trim_end().ends_with(&bubbles[2]),
        "{:?}",
        &bubbles[2][..40]
    );
    // Cut between two words: the space at the cut is the only thing not sent.
    assert_eq!(format!("{} {}", bubbles[1], bubbles[2]), huge.trim_end());
    assert!(bubbles
        .iter()
        .all(|b| !b.ends_with(')') || b.ends_with("daily report\").")));
    let code_body = code
        .trim_start_matches("```rust\n")
        .trim_end_matches("```")
        .trim_end();
    assert!(
        bubbles.iter().any(|b| b == code_body),
        "the code block is one bubble"
    );
    let joined = bubbles.concat();
    let mut last = 0;
    for n in 0..20 {
        let at = joined
            .find(&format!("Paragraph {n:02}:"))
            .unwrap_or(usize::MAX);
        assert!(at >= last && at != usize::MAX, "paragraph {n}");
        last = at;
    }
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn bluebubbles_refuses_a_target_that_names_no_chat_before_sending() {
    let fake = fake(&BLUEBUBBLES, None);
    let hermes = platform_home(&BLUEBUBBLES, &fake, "report\n");
    let id = add_job(&hermes, "bluebubbles:someone@example.com", &[]);
    run(&hermes, &id);

    assert_eq!(fake.seen().len(), 1, "only the chat lookup");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "bluebubbles:someone@example.com: BlueBubbles chat not found for target: someone@example.com (name it by its GUID, e.g. iMessage;-;someone@example.com)"
    );
}

/// A 429 or a 503 from the tunnel on the first bubble: that bubble is sent again, and
/// every bubble arrives once, in order.
#[test]
fn bluebubbles_retries_the_bubble_that_met_a_429_or_a_503_and_records_refusals() {
    for fault in [Fault::RateLimited, Fault::ServerError] {
        let fake = fake(&BLUEBUBBLES, Some(fault));
        let hermes = platform_home(&BLUEBUBBLES, &fake, "All 12 services are healthy.\n");
        let id = add_job(&hermes, "bluebubbles", &[]);
        run(&hermes, &id);

        let sent: Vec<String> = fake.seen().iter().filter_map(bb_text).collect();
        assert_eq!(sent.len(), 4, "{fault:?}: {sent:?}");
        assert_eq!(sent[0], sent[1], "{fault:?}: the retry is the same bubble");
        assert_eq!(sent[2], "All 12 services are healthy.");
        assert!(sent[3].starts_with("To stop or manage this job"));
        assert_eq!(hermes.job(&id)["last_status"], "ok", "{fault:?}");
    }
    crate::platforms::check_wrong_credential_is_recorded(&BLUEBUBBLES);
}

// ---------------------------------------------------------------------------- QQ bot

const QQ_APP_ID: &str = "102074111";
const QQ_SECRET: &str = "qq-client-secret-0123456789abcdef";
const QQ_TOKEN: &str = "qq-access-token-ZmFrZS10b2tlbg";
const QQ_CHANNEL: &str = "6389524";
const QQ_USER: &str = "E4F4AEA33253A2797FB897C50B81D7ED";

fn qq_error(status: u16, code: i64, message: &str) -> Answer {
    (
        status,
        Vec::new(),
        json!({"message": message, "code": code, "err_code": code, "trace_id": "5f0c9e0b-1c1b-4f60"}).to_string(),
    )
}

/// QQ's token endpoint and message endpoints: a guild channel, a user (C2C) and no
/// group are known; an id on the wrong endpoint is refused as unknown.
fn qq_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    if seen.path == "/app/getAppAccessToken" {
        let body = seen.json();
        if body["appId"] != QQ_APP_ID || body["clientSecret"] != QQ_SECRET {
            return ok(json!({"code": 100016, "message": "invalid appid or secret"}));
        }
        return ok(json!({"access_token": QQ_TOKEN, "expires_in": "7200"}));
    }
    if header(seen, "Authorization") != format!("QQBot {QQ_TOKEN}") {
        return qq_error(401, 11244, "token not exist or expire");
    }
    match fault {
        Some(Fault::RateLimited) => {
            let (status, _, body) = qq_error(429, 22009, "request too fast");
            return (status, vec![("Retry-After".into(), "1".into())], body);
        }
        Some(Fault::ServerError) => return qq_error(500, 10000, "internal server error"),
        None => {}
    }
    let body = seen.json();
    if body["msg_type"] != 0 || body["content"].as_str().unwrap_or("").is_empty() {
        return qq_error(400, 40034001, "invalid message content");
    }
    if body["content"].as_str().map_or(0, |c| c.chars().count()) > 4000 {
        return qq_error(400, 40034028, "message too long");
    }
    let known = [
        format!("/channels/{QQ_CHANNEL}/messages"),
        format!("/v2/users/{QQ_USER}/messages"),
    ];
    if !known.contains(&seen.path) {
        return qq_error(404, 50001, "target not found");
    }
    ok(json!({"id": "ROBOT1.0_kzHRKXfGT.bbJHh8u1M9Bg", "timestamp": "2026-03-01T09:00:01+08:00"}))
}

fn qq_text(seen: &Seen) -> Option<String> {
    seen.path
        .ends_with("/messages")
        .then(|| seen.json()["content"].as_str().map(str::to_string))
        .flatten()
}

fn qq_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("QQ_APP_ID", QQ_APP_ID.to_string()),
        ("QQ_CLIENT_SECRET", QQ_SECRET.to_string()),
        ("QQBOT_API_BASE", base.to_string()),
        ("QQBOT_HOME_CHANNEL", QQ_CHANNEL.to_string()),
    ]
}

const QQBOT: Spec = Spec {
    target: "qqbot",
    api: qq_api,
    text: qq_text,
    env: qq_env,
    credential: "QQ_CLIENT_SECRET",
    spoil: crate::platforms::spoiled,
    refused: "qqbot:6389524: QQ token request failed: code 100016: invalid appid or secret",
    waits_in_run: true,
    limit: 4000,
};

#[test]
fn qqbot_finds_the_users_endpoint_and_gets_plain_text_naming_the_file() {
    let fake = fake(&QQBOT, None);
    let (hermes, chart) = rich_home(&QQBOT, &fake);
    let id = add_job(&hermes, &format!("qqbot:{QQ_USER}"), &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/app/getAppAccessToken".to_string(),
            format!("/channels/{QQ_USER}/messages"),
            format!("/v2/users/{QQ_USER}/messages"),
        ]
    );
    assert_eq!(
        seen[0].json(),
        json!({"appId": QQ_APP_ID, "clientSecret": QQ_SECRET})
    );
    let mut content = wrapped_for(
        &id,
        "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         df -h /srv\n\n\
         Next check tomorrow.",
    );
    content.push_str(&format!(
        "\n(attachment not sent to QQ: {})",
        chart.display()
    ));
    assert_eq!(seen[2].json(), json!({"content": content, "msg_type": 0}));
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn qqbot_reports_every_endpoints_refusal_when_none_knows_the_chat() {
    let fake = fake(&QQBOT, None);
    let hermes = platform_home(&QQBOT, &fake, "report\n");
    let id = add_job(&hermes, "qqbot:UNKNOWN0PENID", &[]);
    run(&hermes, &id);

    assert_eq!(fake.seen().len(), 4, "the token, then each endpoint once");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "qqbot:UNKNOWN0PENID: no QQ endpoint took chat UNKNOWN0PENID (channel: 404 target not found (code 50001); \
         c2c: 404 target not found (code 50001); group: 404 target not found (code 50001))"
    );
}

#[test]
fn qqbot_splits_retries_and_records_refusals() {
    check_all(&QQBOT);
}

/// QQ refuses a sixth message within a second in one guild sub-channel with `22009 msg
/// limit exceed` and names no wait, so each refusal would cost the reply a minute: a
/// reply of a dozen parts must arrive paced, without one refusal.
#[test]
fn qqbot_paces_a_long_reply_under_the_channels_five_messages_a_second() {
    let refused = Arc::new(AtomicUsize::new(0));
    let accepted: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let fake = {
        let (refused, accepted) = (Arc::clone(&refused), Arc::clone(&accepted));
        Fake::start(move |seen, _| {
            if seen.path == format!("/channels/{QQ_CHANNEL}/messages") {
                let mut accepted = accepted.lock().unwrap();
                let second = Duration::from_secs(1);
                let recent = accepted.iter().filter(|t| seen.at - **t < second).count();
                if recent >= 5 {
                    refused.fetch_add(1, Ordering::SeqCst);
                    return qq_error(429, 22009, "msg limit exceed");
                }
                accepted.push(seen.at);
            }
            qq_api(seen, None)
        })
    };
    let reply: Vec<String> = (0..12)
        .map(|n| format!("Paragraph {n:02}: {}", "all green ".repeat(390)))
        .collect();
    let hermes = platform_home(&QQBOT, &fake, &reply.join("\n\n"));
    let id = add_job(&hermes, &format!("qqbot:{QQ_CHANNEL}"), &[]);
    run(&hermes, &id);

    assert_eq!(
        refused.load(Ordering::SeqCst),
        0,
        "parts refused as too fast"
    );
    let parts = texts(&QQBOT, &fake);
    assert!(parts.len() >= 12, "{} parts", parts.len());
    let joined = parts.concat();
    let at: Vec<Option<usize>> = (0..12)
        .map(|n| joined.find(&format!("Paragraph {n:02}:")))
        .collect();
    assert!(at.iter().all(Option::is_some), "a paragraph is missing");
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "paragraphs out of order"
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

// ---------------------------------------------------------------------------- WeCom callback app

const WECOM_CORP: &str = "ww8f4e2d1c0b9a7e6d";
const WECOM_SECRET: &str = "wecom-app-secret-0123456789abcdef0123";
const WECOM_TOKEN: &str = "wecom-access-token-3Hq8vAbCdEf";

fn wecom_error(code: i64, message: &str) -> Answer {
    ok(json!({"errcode": code, "errmsg": message}))
}

/// WeCom's gettoken and message/send: errors as `errcode` in HTTP 200 bodies, the
/// 2048-byte text limit, and one known member.
fn wecom_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let route = seen.path.split('?').next().unwrap_or("");
    if route == "/cgi-bin/gettoken" {
        if query_param(&seen.path, "corpid").as_deref() != Some(WECOM_CORP) {
            return wecom_error(40013, "invalid corpid");
        }
        if query_param(&seen.path, "corpsecret").as_deref() != Some(WECOM_SECRET) {
            return wecom_error(
                40001,
                "invalid credential, hint: [1772359200_12_4f1e], from ip: 127.0.0.1",
            );
        }
        return ok(
            json!({"errcode": 0, "errmsg": "ok", "access_token": WECOM_TOKEN, "expires_in": 7200}),
        );
    }
    if route != "/cgi-bin/message/send" {
        return (404, Vec::new(), "404 page not found".into());
    }
    if query_param(&seen.path, "access_token").as_deref() != Some(WECOM_TOKEN) {
        return wecom_error(40014, "invalid access_token");
    }
    if fault.is_some() {
        return wecom_error(-1, "system busy");
    }
    let body = seen.json();
    if body["msgtype"] != "text" || body["agentid"] != 1000002 {
        return wecom_error(40008, "invalid message type");
    }
    if body["text"]["content"].as_str().map_or(0, str::len) > 2048 {
        return wecom_error(45002, "content size out of limit");
    }
    if body["touser"] != "zhangsan" {
        return wecom_error(81013, "user & party & tag all invalid");
    }
    ok(json!({"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": "mF2xJ0b2NlAhQ1Kk"}))
}

fn wecom_text(seen: &Seen) -> Option<String> {
    seen.path
        .starts_with("/cgi-bin/message/send")
        .then(|| seen.json()["text"]["content"].as_str().map(str::to_string))
        .flatten()
}

fn wecom_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WECOM_CALLBACK_CORP_ID", WECOM_CORP.to_string()),
        ("WECOM_CALLBACK_CORP_SECRET", WECOM_SECRET.to_string()),
        ("WECOM_CALLBACK_AGENT_ID", "1000002".to_string()),
        ("WECOM_CALLBACK_API_BASE", base.to_string()),
    ]
}

const WECOM_CALLBACK: Spec = Spec {
    target: "wecom_callback:zhangsan",
    api: wecom_api,
    text: wecom_text,
    env: wecom_env,
    credential: "WECOM_CALLBACK_CORP_SECRET",
    spoil: crate::platforms::spoiled,
    refused: "wecom_callback:zhangsan: errcode 40001: invalid credential",
    waits_in_run: false,
    limit: 2048,
};

#[test]
fn wecom_callback_app_gets_plain_text_for_a_corp_scoped_member() {
    let fake = fake(&WECOM_CALLBACK, None);
    let (hermes, chart) = rich_home(&WECOM_CALLBACK, &fake);
    let id = add_job(
        &hermes,
        &format!("wecom_callback:{WECOM_CORP}:zhangsan"),
        &[],
    );
    run(&hermes, &id);

    let seen = fake.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].path.starts_with("/cgi-bin/gettoken?"));
    assert_eq!(
        seen[1].path,
        format!("/cgi-bin/message/send?access_token={WECOM_TOKEN}")
    );
    let mut content = wrapped_for(
        &id,
        "Disk usage is fine on all hosts, see the dashboard (https://grafana.example.com).\n\n\
         Backups finished at 03:12; nothing to do.\n\n\
         df -h /srv\n\n\
         Next check tomorrow.",
    );
    content.push_str(&format!(
        "\n(attachment not sent to WeCom: {})",
        chart.display()
    ));
    assert_eq!(
        seen[1].json(),
        json!({"touser": "zhangsan", "msgtype": "text", "agentid": 1000002,
               "text": {"content": content}, "safe": 0})
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn wecom_callback_fetches_a_new_token_once_when_the_old_one_expired() {
    let tokens = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fake = crate::delivery::Fake::start(move |seen, _| {
        if seen.path.starts_with("/cgi-bin/gettoken") {
            let n = tokens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let token = if n == 0 { "expired-token" } else { WECOM_TOKEN };
            return ok(
                json!({"errcode": 0, "errmsg": "ok", "access_token": token, "expires_in": 7200}),
            );
        }
        if query_param(&seen.path, "access_token").as_deref() == Some("expired-token") {
            return wecom_error(42001, "access_token expired");
        }
        wecom_api(seen, None)
    });
    let hermes = platform_home(&WECOM_CALLBACK, &fake, "report\n");
    let id = add_job(&hermes, WECOM_CALLBACK.target, &[]);
    run(&hermes, &id);

    let routes: Vec<String> = fake
        .seen()
        .iter()
        .map(|s| s.path.split('?').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        routes,
        [
            "/cgi-bin/gettoken",
            "/cgi-bin/message/send",
            "/cgi-bin/gettoken",
            "/cgi-bin/message/send"
        ]
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn wecom_callback_splits_retries_and_records_refusals() {
    check_all(&WECOM_CALLBACK);
}

// ---------------------------------------------------------------------------- Weixin (iLink)

const WX_TOKEN: &str = "wx-ilink-bot-token-0123456789abcdef";
const WX_ACCOUNT: &str = "a1b2c3d4e5f6@im.bot";
const WX_USER: &str = "o9cq804svxfyCCTIqzddDqRBeMC0@im.wechat";

fn ilink_error(ret: i64, errmsg: &str) -> Answer {
    ok(json!({"ret": ret, "errmsg": errmsg}))
}

/// iLink's checks on every call: its headers (a bot token, a base64 decimal uin) and
/// `base_info` in the body.
fn ilink_refusal(seen: &Seen) -> Option<Answer> {
    let uin = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        header(seen, "X-WECHAT-UIN"),
    )
    .unwrap_or_default();
    let headers_ok = header(seen, "AuthorizationType") == "ilink_bot_token"
        && header(seen, "iLink-App-Id") == "bot"
        && header(seen, "iLink-App-ClientVersion") == "131584"
        && !uin.is_empty()
        && uin.iter().all(u8::is_ascii_digit)
        && header(seen, "Content-Type") == "application/json";
    if !headers_ok || seen.json()["base_info"]["channel_version"] != "2.2.0" {
        return Some((400, Vec::new(), "bad request".into()));
    }
    if header(seen, "Authorization") != format!("Bearer {WX_TOKEN}") {
        return Some(ilink_error(-14, "session timeout"));
    }
    None
}

/// iLink's sendmessage and getuploadurl and the WeChat CDN's upload: errors as `ret` in
/// HTTP 200 bodies (-14 an expired session, -2 the frequency limit), 2000 characters
/// of text, one known peer, and ciphertext in whole AES blocks.
fn weixin_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let route = seen.path.split('?').next().unwrap_or("");
    if route == "/c2c/upload" {
        let filekey = query_param(&seen.path, "filekey").unwrap_or_default();
        let param = query_param(&seen.path, "encrypted_query_param").unwrap_or_default();
        let whole_blocks = !seen.body.is_empty() && seen.body.len().is_multiple_of(16);
        if param != format!("UP-{filekey}") || !whole_blocks {
            return (400, Vec::new(), "invalid upload".into());
        }
        let header = ("x-encrypted-param".to_string(), format!("ENC-{filekey}"));
        return (200, vec![header], String::new());
    }
    if let Some(refusal) = ilink_refusal(seen) {
        return refusal;
    }
    let body = seen.json();
    match route {
        "/ilink/bot/getuploadurl" => {
            let filekey = body["filekey"].as_str().unwrap_or("");
            if filekey.len() != 32 || body["aeskey"].as_str().map_or(0, str::len) != 32 {
                return ilink_error(-1, "invalid param");
            }
            ok(json!({"ret": 0, "upload_param": format!("UP-{filekey}")}))
        }
        "/ilink/bot/sendmessage" => {
            let msg = &body["msg"];
            let shape_ok = msg["message_type"] == 2
                && msg["message_state"] == 2
                && msg["from_user_id"] == ""
                && msg["client_id"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("hermes-weixin-"))
                && msg["item_list"].as_array().map_or(0, Vec::len) == 1;
            if !shape_ok {
                return ilink_error(-1, "invalid param");
            }
            if msg["to_user_id"] != WX_USER {
                return ilink_error(-1, "invalid to_user_id");
            }
            let text = msg["item_list"][0]["text_item"]["text"].as_str();
            if text.is_some_and(|t| t.chars().count() > 2000) {
                return ilink_error(-1, "text too long");
            }
            match fault {
                Some(Fault::RateLimited) => ilink_error(-2, "freq limit"),
                Some(Fault::ServerError) => {
                    (502, Vec::new(), "<html>502 Bad Gateway</html>".into())
                }
                None => ok(json!({"ret": 0})),
            }
        }
        _ => (404, Vec::new(), "404 page not found".into()),
    }
}

fn weixin_text(seen: &Seen) -> Option<String> {
    let item = &seen.json()["msg"]["item_list"][0];
    (seen.path == "/ilink/bot/sendmessage" && item["type"] == 1)
        .then(|| item["text_item"]["text"].as_str().map(str::to_string))
        .flatten()
}

fn weixin_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WEIXIN_TOKEN", WX_TOKEN.to_string()),
        ("WEIXIN_ACCOUNT_ID", WX_ACCOUNT.to_string()),
        ("WEIXIN_BASE_URL", base.to_string()),
        ("WEIXIN_CDN_BASE_URL", format!("{base}/c2c")),
        ("WEIXIN_HOME_CHANNEL", WX_USER.to_string()),
        // Hermes' own knobs, shortened so the checks stay fast: the pause between
        // parts (1.5 s) and the cooldown after a frequency limit (30 s).
        ("WEIXIN_SEND_CHUNK_DELAY_SECONDS", "0.05".to_string()),
        ("WEIXIN_RATE_LIMIT_CIRCUIT_OPEN_SECONDS", "1".to_string()),
    ]
}

const WEIXIN: Spec = Spec {
    target: "weixin",
    api: weixin_api,
    text: weixin_text,
    env: weixin_env,
    credential: "WEIXIN_TOKEN",
    spoil: crate::platforms::spoiled,
    refused: "iLink ilink/bot/sendmessage error: ret=-14 errmsg=session timeout",
    waits_in_run: true,
    limit: 2000,
};

#[test]
fn weixin_gets_the_markdown_text_then_the_file_encrypted_on_the_cdn() {
    use aes::cipher::{block_padding::Pkcs7, BlockDecryptMut, KeyInit};
    use md5::Digest;

    let fake = fake(&WEIXIN, None);
    let (hermes, chart) = rich_home(&WEIXIN, &fake);
    let id = add_job(&hermes, "weixin", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let routes: Vec<&str> = seen
        .iter()
        .map(|s| s.path.split('?').next().unwrap_or(""))
        .collect();
    assert_eq!(
        routes,
        [
            "/ilink/bot/sendmessage",
            "/ilink/bot/getuploadurl",
            "/c2c/upload",
            "/ilink/bot/sendmessage"
        ]
    );
    let text = seen[0].json();
    assert_eq!(
        text["msg"]["item_list"],
        json!([{"type": 1, "text_item": {"text": wrapped_for(&id, RICH)}}])
    );
    assert!(text["msg"].get("context_token").is_none());

    let plain = fs::read(&chart).unwrap();
    let ask = seen[1].json();
    let (filekey, aeskey) = (
        ask["filekey"].as_str().unwrap(),
        ask["aeskey"].as_str().unwrap(),
    );
    assert_eq!(
        ask,
        json!({"filekey": filekey, "media_type": 1, "to_user_id": WX_USER,
               "rawsize": plain.len(), "rawfilemd5": hex::encode(md5::Md5::digest(&plain)),
               "filesize": 32, "no_need_thumb": true, "aeskey": aeskey,
               "base_info": {"channel_version": "2.2.0"}})
    );
    let key: [u8; 16] = hex::decode(aeskey).unwrap().try_into().unwrap();
    let decrypted = ecb::Decryptor::<aes::Aes128>::new(&key.into())
        .decrypt_padded_vec_mut::<Pkcs7>(&seen[2].body)
        .unwrap();
    assert_eq!(
        decrypted, plain,
        "the CDN gets the file under the announced key"
    );
    assert_eq!(header(&seen[2], "Content-Type"), "application/octet-stream");

    let aes_key = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, aeskey);
    assert_eq!(
        seen[3].json()["msg"]["item_list"],
        json!([{"type": 2, "image_item": {"media": {"encrypt_query_param": format!("ENC-{filekey}"),
               "aes_key": aes_key, "encrypt_type": 1}, "mid_size": 32}}])
    );
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn weixin_drops_a_stale_conversation_token_once_and_sends_without_it() {
    let fake = crate::delivery::Fake::start(|seen, _| {
        if seen.json()["msg"]["context_token"] == "ctx-stale" {
            return ilink_error(-14, "session timeout");
        }
        weixin_api(seen, None)
    });
    let hermes = platform_home(&WEIXIN, &fake, "report\n");
    let accounts = hermes.home().join("weixin").join("accounts");
    fs::create_dir_all(&accounts).unwrap();
    fs::write(
        accounts.join(format!("{WX_ACCOUNT}.context-tokens.json")),
        json!({ WX_USER: "ctx-stale" }).to_string(),
    )
    .unwrap();
    let id = add_job(&hermes, &format!("weixin:{WX_USER}"), &[]);
    run(&hermes, &id);

    let msgs: Vec<Value> = fake
        .bodies("/sendmessage")
        .iter()
        .map(|b| b["msg"].clone())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["context_token"], "ctx-stale");
    assert!(msgs[1].get("context_token").is_none());
    assert_eq!(msgs[0]["client_id"], msgs[1]["client_id"]);
    assert_eq!(msgs[0]["item_list"], msgs[1]["item_list"]);
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn weixin_splits_retries_and_records_refusals() {
    check_all(&WEIXIN);
}

// ---------------------------------------------------------------------------- WeCom AI bot

const WECOM_BOT: &str = "aibGq3kT2mNf8xWqR5vZ";
const WECOM_BOT_SECRET: &str = "wecom-bot-secret-9f8e7d6c5b4a3210";
const WECOM_CHAT: &str = "wrkSFfCgAAkJb4nHq3oRzbxPyg1hKr9Q";

/// A gateway frame answering `seen`: its `req_id`, an errcode and a body.
fn wecom_frame(seen: &Seen, code: i64, message: &str, body: Value) -> String {
    let mut frame = json!({"headers": {"req_id": seen.json()["headers"]["req_id"]},
                           "errcode": code, "errmsg": message});
    if !body.is_null() {
        frame["body"] = body;
    }
    frame.to_string()
}

/// WeCom's bot gateway: the subscription checks the bot id and secret (and closes the
/// connection when they are wrong), `aibot_send_msg` takes Markdown of up to 4000
/// characters or an uploaded media id for the one known chat, uploads go init, chunks,
/// finish; errors are `errcode`s, -1 meaning busy.
fn wecom_bot_api(seen: &Seen, fault: Option<Fault>) -> Answer {
    let frame = seen.json();
    let body = &frame["body"];
    let answer = |code, message: &str, reply: Value| {
        (200, Vec::new(), wecom_frame(seen, code, message, reply))
    };
    match seen.path.as_str() {
        "aibot_subscribe" => {
            let known = body["bot_id"] == WECOM_BOT && body["secret"] == WECOM_BOT_SECRET;
            if !known || body["device_id"].as_str().unwrap_or("").is_empty() {
                let refusal = wecom_frame(seen, 853000, "invalid bot_id or secret", Value::Null);
                return (400, Vec::new(), refusal);
            }
            answer(0, "ok", Value::Null)
        }
        "aibot_upload_media_init" => {
            let md5 = body["md5"].as_str().unwrap_or("");
            if md5.len() != 32 || body["total_chunks"] != 1 || body["filename"].is_null() {
                return answer(40001, "invalid upload request", Value::Null);
            }
            answer(0, "ok", json!({"upload_id": format!("UP-{}", &md5[..8])}))
        }
        "aibot_upload_media_chunk" => answer(0, "ok", Value::Null),
        "aibot_upload_media_finish" => {
            let id = body["upload_id"].as_str().unwrap_or("");
            answer(
                0,
                "ok",
                json!({"type": "image", "media_id": format!("MEDIA-{id}"), "created_at": "1772359200"}),
            )
        }
        "aibot_send_msg" => {
            if body["chatid"] != WECOM_CHAT {
                return answer(93006, "invalid chatid", Value::Null);
            }
            let content = body["markdown"]["content"].as_str();
            if content.is_some_and(|c| c.chars().count() > 4000) {
                return answer(40058, "markdown.content exceed max length", Value::Null);
            }
            if fault.is_some() {
                return answer(-1, "system busy", Value::Null);
            }
            answer(0, "ok", Value::Null)
        }
        _ => answer(40008, "invalid cmd", Value::Null),
    }
}

fn wecom_bot_text(seen: &Seen) -> Option<String> {
    let body = &seen.json()["body"];
    (seen.path == "aibot_send_msg" && body["msgtype"] == "markdown")
        .then(|| body["markdown"]["content"].as_str().map(str::to_string))
        .flatten()
}

fn wecom_bot_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WECOM_BOT_ID", WECOM_BOT.to_string()),
        ("WECOM_SECRET", WECOM_BOT_SECRET.to_string()),
        ("WECOM_WEBSOCKET_URL", base.replacen("http", "ws", 1)),
        ("WECOM_HOME_CHANNEL", WECOM_CHAT.to_string()),
    ]
}

const WECOM_BOT_SPEC: Spec = Spec {
    target: "wecom",
    api: wecom_bot_api,
    text: wecom_bot_text,
    env: wecom_bot_env,
    credential: "WECOM_SECRET",
    spoil: crate::platforms::spoiled,
    refused: "the bot's subscription was refused (WeCom errcode 853000: invalid bot_id or secret)",
    waits_in_run: false,
    limit: 4000,
};

#[test]
fn wecom_bot_subscribes_then_sends_the_markdown_and_the_uploaded_file() {
    let fake = fake(&WECOM_BOT_SPEC, None);
    let (hermes, chart) = rich_home(&WECOM_BOT_SPEC, &fake);
    let id = add_job(&hermes, "wecom", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let cmds: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        cmds,
        [
            "aibot_subscribe",
            "aibot_send_msg",
            "aibot_upload_media_init",
            "aibot_upload_media_chunk",
            "aibot_upload_media_finish",
            "aibot_send_msg"
        ]
    );
    let bodies: Vec<Value> = seen.iter().map(|s| s.json()["body"].clone()).collect();
    assert_eq!(bodies[0]["bot_id"], WECOM_BOT);
    assert_eq!(
        bodies[1],
        json!({"chatid": WECOM_CHAT, "msgtype": "markdown",
               "markdown": {"content": wrapped_for(&id, RICH)}})
    );
    let plain = fs::read(&chart).unwrap();
    let md5 = hex::encode(<md5::Md5 as md5::Digest>::digest(&plain));
    assert_eq!(
        bodies[2],
        json!({"type": "image", "filename": "chart.png", "total_size": plain.len(),
               "total_chunks": 1, "md5": md5})
    );
    let upload = format!("UP-{}", &md5[..8]);
    assert_eq!(
        bodies[3],
        json!({"upload_id": upload, "chunk_index": 0, "base64_data": crate::platforms::png_base64()})
    );
    assert_eq!(bodies[4], json!({"upload_id": upload}));
    assert_eq!(
        bodies[5],
        json!({"chatid": WECOM_CHAT, "msgtype": "image", "image": {"media_id": format!("MEDIA-{upload}")}})
    );
    let req_ids: std::collections::HashSet<String> = seen
        .iter()
        .map(|s| {
            s.json()["headers"]["req_id"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(req_ids.len(), 6, "every frame has its own req_id");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn wecom_bot_connection_lost_after_a_message_left_is_never_resent() {
    let fake = crate::delivery::Fake::websocket(|seen, _| match seen.path.as_str() {
        // The gateway drops the connection without answering the message.
        "aibot_send_msg" => (500, Vec::new(), String::new()),
        _ => wecom_bot_api(seen, None),
    });
    let hermes = platform_home(&WECOM_BOT_SPEC, &fake, "report\n");
    let id = add_job(&hermes, &format!("wecom:{WECOM_CHAT}"), &[]);
    run(&hermes, &id);
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();

    let sends = fake
        .seen()
        .iter()
        .filter(|s| s.path == "aibot_send_msg")
        .count();
    assert_eq!(sends, 1);
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        format!("wecom:{WECOM_CHAT}: the WeCom connection closed after the message was sent; not resent, to never post twice")
    );
}

#[test]
fn wecom_bot_splits_retries_and_records_refusals() {
    check_all(&WECOM_BOT_SPEC);
}

#[test]
fn doctor_names_each_new_platforms_missing_credential_and_home_channel() {
    let hermes = crate::delivery::home(
        "report\n",
        &[
            ("QQ_APP_ID", "102074111".to_string()),
            ("WECOM_BOT_ID", WECOM_BOT.to_string()),
        ],
    );
    let ids: Vec<(String, &str)> = [
        ("whatsapp:15557654321", "WHATSAPP_ENABLED"),
        ("whatsapp", "WHATSAPP_HOME_CHANNEL"),
        (
            "bluebubbles:iMessage;-;+15557654321",
            "BLUEBUBBLES_PASSWORD",
        ),
        ("bluebubbles", "BLUEBUBBLES_HOME_CHANNEL"),
        ("qqbot:6389524", "QQ_CLIENT_SECRET"),
        ("qqbot", "QQBOT_HOME_CHANNEL"),
        ("wecom_callback:zhangsan", "WECOM_CALLBACK_AGENT_ID"),
        ("weixin:wxid_abc123", "WEIXIN_TOKEN"),
        ("weixin", "WEIXIN_HOME_CHANNEL"),
        ("wecom:wrkSFfCgAA", "WECOM_SECRET"),
        ("wecom", "WECOM_HOME_CHANNEL"),
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
    assert!(!out.stdout.contains("QQ_APP_ID"), "{}", out.stdout);
}

#[test]
fn all_and_origin_reach_the_new_home_channels_in_hermes_order() {
    let fake = crate::delivery::Fake::start(|seen, _| {
        if seen.path.starts_with("/bb/") {
            ok(json!({"status": 200, "message": "Message sent!", "data": {"guid": "g"}}))
        } else if seen.path.ends_with("/getAppAccessToken") {
            ok(json!({"access_token": QQ_TOKEN, "expires_in": "7200"}))
        } else {
            ok(json!({"success": true, "messageId": "m", "id": "q"}))
        }
    });
    let base = fake.base();
    let env = vec![
        ("QQ_APP_ID", QQ_APP_ID.to_string()),
        ("QQ_CLIENT_SECRET", QQ_SECRET.to_string()),
        ("QQBOT_API_BASE", format!("{base}/qq")),
        ("QQ_HOME_CHANNEL", QQ_CHANNEL.to_string()),
        ("WHATSAPP_ENABLED", "true".to_string()),
        ("WHATSAPP_API_BASE", format!("{base}/wa")),
        ("WHATSAPP_HOME_CHANNEL", "15557654321".to_string()),
        ("BLUEBUBBLES_SERVER_URL", format!("{base}/bb")),
        ("BLUEBUBBLES_PASSWORD", BB_PASSWORD.to_string()),
        ("BLUEBUBBLES_HOME_CHANNEL", BB_CHAT.to_string()),
    ];
    let hermes = crate::delivery::home("report\n", &env);
    let all = add_job(&hermes, "all", &[]);
    run(&hermes, &all);
    let paths: Vec<String> = fake.seen().iter().map(|s| s.path.clone()).collect();
    assert!(paths.contains(&"/wa/send".to_string()), "{paths:?}");
    assert!(
        paths.contains(&format!("/qq/channels/{QQ_CHANNEL}/messages")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/bb/api/v1/message/text")),
        "{paths:?}"
    );
    assert_eq!(hermes.job(&all)["last_status"], "ok");

    // Without an origin, `origin` takes the first home in Hermes' order: BlueBubbles
    // comes before QQ and WhatsApp. QQ's home is read from its former name too.
    let before = fake.seen().len();
    let origin = add_job(&hermes, "origin", &[]);
    run(&hermes, &origin);
    let new: Vec<String> = fake.seen()[before..]
        .iter()
        .map(|s| s.path.clone())
        .collect();
    assert!(
        !new.is_empty() && new.iter().all(|p| p.starts_with("/bb/")),
        "{new:?}"
    );
}

// ---------------------------------------------------------------------------- Yuanbao

const YUANBAO_APP_ID: &str = "yb-app-7f3a9c21";
const YUANBAO_SECRET: &str = "yb-secret-0c5e8d4b2a197f63";
const YUANBAO_BOT: &str = "bot_88123";
const YUANBAO_TOKEN: &str = "ws-token-5d1e0a";

/// The few protobuf fields the fake reads and writes.
mod pb {
    pub(super) fn varint(data: &[u8], pos: &mut usize) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        while let Some(byte) = data.get(*pos) {
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        value
    }

    /// Field number → its varints and byte strings (every occurrence).
    pub(super) fn fields(data: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
        let (mut pos, mut out) = (0, Vec::new());
        while pos < data.len() {
            let tag = varint(data, &mut pos);
            match tag & 7 {
                0 => out.push((tag >> 3, varint(data, &mut pos), Vec::new())),
                2 => {
                    let len = varint(data, &mut pos) as usize;
                    let end = (pos + len).min(data.len());
                    out.push((tag >> 3, 0, data[pos..end].to_vec()));
                    pos = end;
                }
                _ => panic!("unexpected wire type in {data:?}"),
            }
        }
        out
    }

    pub(super) fn bytes(data: &[u8], field: u64) -> Vec<u8> {
        let found = fields(data).into_iter().find(|(f, _, _)| *f == field);
        found.map(|(_, _, b)| b).unwrap_or_default()
    }

    pub(super) fn string(data: &[u8], field: u64) -> String {
        String::from_utf8(bytes(data, field)).unwrap()
    }

    pub(super) fn number(data: &[u8], field: u64) -> u64 {
        let found = fields(data).into_iter().find(|(f, _, _)| *f == field);
        found.map(|(_, n, _)| n).unwrap_or_default()
    }

    fn put_varint(mut value: u64, out: &mut Vec<u8>) {
        while value >= 0x80 {
            out.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    pub(super) fn put_bytes(field: u64, value: &[u8], out: &mut Vec<u8>) {
        put_varint(field << 3 | 2, out);
        put_varint(value.len() as u64, out);
        out.extend_from_slice(value);
    }

    pub(super) fn put_number(field: u64, value: u64, out: &mut Vec<u8>) {
        put_varint(field << 3, out);
        put_varint(value, out);
    }
}

/// One frame the bot sent: its head's cmd, msg_id and module, and its data.
struct YbFrame {
    cmd: String,
    msg_id: String,
    module: String,
    data: Vec<u8>,
}

fn yb_frame(seen: &Seen) -> YbFrame {
    let head = pb::bytes(&seen.body, 1);
    assert_eq!(pb::number(&head, 1), 0, "requests have cmd_type 0");
    YbFrame {
        cmd: pb::string(&head, 2),
        msg_id: pb::string(&head, 4),
        module: pb::string(&head, 5),
        data: pb::bytes(&seen.body, 2),
    }
}

/// The response frame to `frame`, hex-encoded for the fake, with `code`/`message`
/// (and a connect id for a bind).
fn yb_response(frame: &YbFrame, code: u64, message: &str) -> Answer {
    let mut head = Vec::new();
    pb::put_number(1, 1, &mut head);
    pb::put_bytes(2, frame.cmd.as_bytes(), &mut head);
    pb::put_bytes(4, frame.msg_id.as_bytes(), &mut head);
    let mut data = Vec::new();
    if code != 0 {
        pb::put_number(1, code, &mut data);
        pb::put_bytes(2, message.as_bytes(), &mut data);
    } else if frame.cmd == "auth-bind" {
        pb::put_bytes(3, b"conn-1f2e3d", &mut data);
    }
    let mut out = Vec::new();
    pb::put_bytes(1, &head, &mut out);
    if !data.is_empty() {
        pb::put_bytes(2, &data, &mut out);
    }
    (200, Vec::new(), hex::encode(out))
}

/// The text of a send frame, with its kind and recipient.
fn yb_text(seen: &Seen) -> Option<(String, String, String)> {
    let frame = yb_frame(seen);
    let body_field = match frame.cmd.as_str() {
        "send_c2c_message" => 5,
        "send_group_message" => 6,
        _ => return None,
    };
    assert_eq!(frame.module, "yuanbao_openclaw_proxy");
    assert_eq!(pb::string(&frame.data, 3), YUANBAO_BOT, "from_account");
    let element = pb::bytes(&frame.data, body_field);
    assert_eq!(pb::string(&element, 1), "TIMTextElem");
    let text = pb::string(&pb::bytes(&element, 2), 1);
    Some((frame.cmd, pb::string(&frame.data, 2), text))
}

/// Yuanbao's sign-token API: checks the HMAC-SHA256 signature of nonce, timestamp,
/// app key and secret; `busy` answers the first request with the retry code 10099.
fn yb_sign_api(seen: &Seen, index: usize, busy: bool) -> Answer {
    if seen.path != "/api/v5/robotLogic/sign-token" {
        return (404, Vec::new(), "not found".into());
    }
    let body = seen.json();
    let field = |k: &str| body[k].as_str().unwrap_or("").to_string();
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(YUANBAO_SECRET.as_bytes()).unwrap();
    let plain = format!(
        "{}{}{}{}",
        field("nonce"),
        field("timestamp"),
        YUANBAO_APP_ID,
        YUANBAO_SECRET
    );
    hmac::Mac::update(&mut mac, plain.as_bytes());
    let expected = hex::encode(hmac::Mac::finalize(mac).into_bytes());
    assert!(field("timestamp").ends_with("+08:00"), "{body}");
    assert_eq!(field("nonce").len(), 32, "{body}");
    if field("app_key") != YUANBAO_APP_ID || field("signature") != expected {
        return ok(json!({"code": 40002, "msg": "invalid signature"}));
    }
    if busy && index == 0 {
        return ok(json!({"code": 10099, "msg": "system busy, retry later"}));
    }
    ok(
        json!({"code": 0, "data": {"token": YUANBAO_TOKEN, "bot_id": YUANBAO_BOT,
              "source": "bot", "duration": 3600, "product": "yuanbao"}}),
    )
}

/// Yuanbao's gateway: AUTH_BIND must carry the signed token; sends answer code 0, or
/// 10099 ("busy") for the first send when `busy`.
fn yb_ws_api(seen: &Seen, sends: &AtomicUsize, busy: bool) -> Answer {
    let frame = yb_frame(seen);
    match frame.cmd.as_str() {
        "auth-bind" => {
            assert_eq!(frame.module, "conn_access");
            assert_eq!(pb::string(&frame.data, 1), "ybBot");
            let auth = pb::bytes(&frame.data, 2);
            if pb::string(&auth, 3) != YUANBAO_TOKEN || pb::string(&auth, 1) != YUANBAO_BOT {
                return yb_response(&frame, 41001, "invalid token");
            }
            yb_response(&frame, 0, "")
        }
        "send_c2c_message" | "send_group_message" => {
            let text = yb_text(seen).map(|t| t.2).unwrap_or_default();
            if text.chars().count() > 4000 {
                return yb_response(&frame, 40005, "message too long");
            }
            if busy && sends.fetch_add(1, Ordering::SeqCst) == 0 {
                return yb_response(&frame, 10099, "system busy");
            }
            yb_response(&frame, 0, "")
        }
        _ => yb_response(&frame, 40400, "unknown cmd"),
    }
}

struct YuanbaoFakes {
    sign: Fake,
    ws: Fake,
}

impl YuanbaoFakes {
    fn start(busy: bool) -> YuanbaoFakes {
        let sends = AtomicUsize::new(0);
        YuanbaoFakes {
            sign: Fake::start(move |seen, index| yb_sign_api(seen, index, busy)),
            ws: Fake::websocket(move |seen, _| yb_ws_api(seen, &sends, busy)),
        }
    }

    fn env(&self, secret: &str) -> Vec<(&'static str, String)> {
        vec![
            ("YUANBAO_APP_ID", YUANBAO_APP_ID.to_string()),
            ("YUANBAO_APP_SECRET", secret.to_string()),
            ("YUANBAO_API_DOMAIN", self.sign.base()),
            (
                "YUANBAO_WS_URL",
                format!(
                    "{}/wss/connection",
                    self.ws.base().replacen("http", "ws", 1)
                ),
            ),
        ]
    }

    fn cmds(&self) -> Vec<String> {
        self.ws.seen().iter().map(|s| yb_frame(s).cmd).collect()
    }

    fn texts(&self) -> Vec<(String, String, String)> {
        self.ws.seen().iter().filter_map(yb_text).collect()
    }
}

#[test]
fn yuanbao_signs_binds_and_sends_the_reply_as_one_text_frame() {
    let fakes = YuanbaoFakes::start(false);
    let hermes = crate::delivery::home("", &fakes.env(YUANBAO_SECRET));
    let chart = hermes.home().join("chart.png");
    fs::write(&chart, b"\x89PNG\r\n\x1a\nnot-really-a-png").unwrap();
    let reply = format!("{RICH}\nMEDIA:{}\n", chart.display());
    fs::write(hermes.home().join("scripts").join("reply.txt"), reply).unwrap();
    let id = add_job(&hermes, "yuanbao:direct:10001", &[]);
    run(&hermes, &id);

    let signs = fakes.sign.seen();
    assert_eq!(signs.len(), 1);
    assert_eq!(header(&signs[0], "X-Instance-Id"), "17");
    assert_eq!(fakes.cmds(), ["auth-bind", "send_c2c_message"]);
    // Hermes drops the response wrapper for Yuanbao; the file is named, not sent.
    let expected = format!(
        "{RICH}\n(attachment not sent to Yuanbao: {})",
        chart.display()
    );
    assert_eq!(
        fakes.texts(),
        [(
            "send_c2c_message".to_string(),
            "10001".to_string(),
            expected
        )]
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok", "{job}");
}

#[test]
fn yuanbao_splits_a_long_reply_to_a_group_in_order() {
    let fakes = YuanbaoFakes::start(false);
    let (mut reply, code) = crate::delivery::long_reply();
    while reply.chars().count() < 8100 {
        reply.push_str("\n\n");
        reply.push_str(&crate::delivery::long_reply().0);
    }
    let hermes = crate::delivery::home(&reply, &fakes.env(YUANBAO_SECRET));
    let id = add_job(&hermes, "yuanbao:group:328306697", &[]);
    run(&hermes, &id);

    let sent = fakes.texts();
    assert!(sent.len() >= 3, "{} parts", sent.len());
    assert!(sent
        .iter()
        .all(|(cmd, to, _)| cmd == "send_group_message" && to == "328306697"));
    let parts: Vec<&String> = sent.iter().map(|(_, _, text)| text).collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 4000));
    assert!(
        parts.iter().all(|p| !p.trim_end().ends_with(')')),
        "no (1/3) markers"
    );
    let first_line = code.lines().nth(1).unwrap_or_default();
    let last_line = code.lines().rev().nth(1).unwrap_or_default();
    let holding: Vec<&&String> = parts.iter().filter(|p| p.contains(first_line)).collect();
    assert!(
        !holding.is_empty() && holding[0].contains(last_line),
        "code block whole"
    );
    let joined: String = parts.iter().map(|p| p.as_str()).collect();
    let mut last = 0;
    for n in 0..20 {
        let at = joined
            .find(&format!("Paragraph {n:02}:"))
            .unwrap_or(usize::MAX);
        assert!(at >= last && at != usize::MAX, "paragraph {n}");
        last = at;
    }
    assert!(!joined.contains("Cronjob Response"));
    assert_eq!(fakes.cmds().iter().filter(|c| *c == "auth-bind").count(), 1);
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn yuanbao_busy_codes_are_retried_and_the_message_arrives_once() {
    let fakes = YuanbaoFakes::start(true);
    let hermes =
        crate::delivery::home("All 12 services are healthy.\n", &fakes.env(YUANBAO_SECRET));
    let id = add_job(&hermes, "yuanbao:direct:10001", &[]);
    run(&hermes, &id);

    // sign-token answered 10099 once, then a token.
    assert_eq!(fakes.sign.seen().len(), 2);
    let sent = fakes.texts();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], sent[1], "the retry is the same message");
    assert_eq!(sent[1].2, "All 12 services are healthy.");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok", "{job}");
}

#[test]
fn yuanbao_wrong_secret_is_a_delivery_failure_with_the_platforms_text() {
    let fakes = YuanbaoFakes::start(false);
    let spoiled = "wrong-credential-0000000000";
    let hermes = crate::delivery::home("report\n", &fakes.env(spoiled));
    let id = add_job(&hermes, "yuanbao:direct:10001", &[]);
    run(&hermes, &id);

    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    assert_eq!(
        job["last_delivery_error"],
        "yuanbao:direct:10001: Yuanbao sign-token refused: code=40002, msg=invalid signature; \
         check YUANBAO_APP_ID and YUANBAO_APP_SECRET"
    );
    assert!(fakes.ws.seen().is_empty(), "no connection without a token");
    let requests = fakes.sign.seen().len();
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(fakes.sign.seen().len(), requests, "not retried");
}

#[test]
fn yuanbao_connection_lost_after_a_message_left_is_never_resent() {
    let sign = Fake::start(|seen, index| yb_sign_api(seen, index, false));
    let ws = Fake::websocket(|seen, _| match yb_frame(seen).cmd.as_str() {
        // The gateway drops the connection without answering the message.
        "send_c2c_message" => (500, Vec::new(), String::new()),
        _ => yb_ws_api(seen, &AtomicUsize::new(0), false),
    });
    let fakes = YuanbaoFakes { sign, ws };
    let hermes = crate::delivery::home("report\n", &fakes.env(YUANBAO_SECRET));
    let id = add_job(&hermes, "yuanbao:direct:10001", &[]);
    run(&hermes, &id);
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();

    assert_eq!(fakes.texts().len(), 1, "never resent");
    let job = hermes.job(&id);
    let error = job["last_delivery_error"].as_str().unwrap_or_default();
    assert!(error.contains("not resent, to never post twice"), "{job}");
}

#[test]
fn yuanbao_is_accepted_without_a_warning_and_doctor_names_its_missing_secret_only() {
    let hermes = crate::delivery::home(
        "report\n",
        &[("YUANBAO_APP_KEY", YUANBAO_APP_ID.to_string())],
    );
    let created = hermes.cron(&[
        "add",
        "every 1d",
        "daily report",
        "--script",
        "report.sh",
        "--no-agent",
        "--deliver",
        "yuanbao:direct:10001",
    ]);
    let id = crate::support::created_id(created.ok());
    // The one warning is doctor's: no word about the platform itself.
    let dotenv = hermes.home().join(".env");
    assert_eq!(
        created.stderr,
        format!(
            "warning: this job: delivery platform 'yuanbao' has no credentials configured (YUANBAO_APP_SECRET not set). Set them in {}, or change the job's `deliver` target.\n",
            dotenv.display()
        )
    );
    let doctor = hermes.cron(&["doctor"]);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or("");
    assert!(
        line.contains("delivery platform 'yuanbao' has no credentials configured (YUANBAO_APP_SECRET not set)"),
        "{}",
        doctor.stdout
    );
    // Hermes reads the app id from YUANBAO_APP_KEY too.
    assert!(
        !doctor.stdout.contains("YUANBAO_APP_ID"),
        "{}",
        doctor.stdout
    );
    run(&hermes, &id);
    assert_eq!(
        hermes.job(&id)["last_delivery_error"],
        format!(
            "yuanbao:direct:10001: YUANBAO_APP_SECRET is not set (add it to {})",
            dotenv.display()
        )
    );
}
