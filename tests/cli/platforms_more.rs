//! The senders for Hermes' WhatsApp bridge, BlueBubbles (iMessage), Weixin, QQ bots and
//! WeCom self-built apps through the real binary, each against a local fake that checks
//! what the real service checks (path, auth, request shape, size limit) and answers
//! with its real success and error bodies; the shared checks of `platforms` (a long
//! reply split in order, a 429 or 5xx retried once, a wrong credential recorded) run
//! for each, plus one test of exactly what a rich reply — three paragraphs, a code
//! block and a `MEDIA:` file — posts.

use std::fs;

use serde_json::{json, Value};

use crate::delivery::{add_job, ok, run, Answer, Seen};
use crate::platforms::{
    check_all, fake, header, platform_home, rich_home, wrapped_for, Fault, Spec,
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
