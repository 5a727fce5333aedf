//! Slack and Discord beyond plain posts, through the real binary: Slack gets mrkdwn and
//! real file uploads through its external-upload flow (a fake that refuses any step
//! out of order), and Discord paces a long reply by its rate-limit headers (a fake
//! that answers 429 to a client that does not).

use std::collections::HashMap;
use std::fs;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::delivery::{add_job, home, ok, run, wrapped, Answer, Fake, Seen};

const SLACK_TOKEN: &str = "xoxb-1111-2222-testtokentest";

/// `application/x-www-form-urlencoded` fields.
fn form(seen: &Seen) -> HashMap<String, String> {
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

fn slack_error(error: &str) -> Answer {
    ok(json!({"ok": false, "error": error}))
}

/// A file announced to the Slack fake: its length, then the bytes received.
type Upload = (usize, Option<usize>);

/// Slack's Web API as the external upload flow needs it: `files.getUploadURLExternal`
/// hands out an upload URL for a named file of a given length, the URL takes exactly
/// that many bytes (and no bot token), and `files.completeUploadExternal` shares only
/// files whose bytes arrived.
fn slack_api() -> impl Fn(&Seen, usize) -> Answer + Send + 'static {
    let files: Mutex<HashMap<String, Upload>> = Mutex::default();
    move |seen, index| {
        let authorized =
            seen.header("Authorization").as_deref() == Some(&*format!("Bearer {SLACK_TOKEN}"));
        let mut files = files.lock().unwrap();
        if let Some(id) = seen.path.strip_prefix("/upload/v1/") {
            if seen.header("Authorization").is_some() {
                return (400, Vec::new(), "token sent to the upload URL".into());
            }
            return match files.get_mut(id) {
                Some((length, received)) if *length == seen.body.len() => {
                    *received = Some(seen.body.len());
                    (200, Vec::new(), format!("OK - {length}"))
                }
                _ => (400, Vec::new(), "bad upload".into()),
            };
        }
        if !authorized {
            return slack_error("invalid_auth");
        }
        let fields = form(seen);
        match seen.path.as_str() {
            "/slack/chat.postMessage" => ok(
                json!({"ok": true, "channel": "C0123", "ts": format!("1772359200.00010{index}")}),
            ),
            "/slack/files.getUploadURLExternal" => {
                let (Some(_name), Some(Ok(length))) = (
                    fields.get("filename"),
                    fields.get("length").map(|l| l.parse::<usize>()),
                ) else {
                    return slack_error("invalid_arguments");
                };
                let id = format!("F{:04}", files.len() + 1);
                files.insert(id.clone(), (length, None));
                let host = seen.header("Host").unwrap_or_default();
                ok(
                    json!({"ok": true, "upload_url": format!("http://{host}/upload/v1/{id}"), "file_id": id}),
                )
            }
            "/slack/files.completeUploadExternal" => {
                let listed: Value = fields
                    .get("files")
                    .and_then(|f| serde_json::from_str(f).ok())
                    .unwrap_or(Value::Null);
                let Some(id) = listed[0]["id"].as_str() else {
                    return slack_error("invalid_arguments");
                };
                match files.get(id) {
                    Some((_, Some(_))) if fields.contains_key("channel_id") => {
                        ok(json!({"ok": true, "files": [{"id": id, "title": listed[0]["title"]}]}))
                    }
                    _ => slack_error("file_not_found"),
                }
            }
            _ => slack_error("unknown_method"),
        }
    }
}

#[test]
fn slack_gets_mrkdwn_then_the_file_through_the_external_upload_flow() {
    let fake = Fake::start(slack_api());
    let env = vec![
        ("SLACK_BOT_TOKEN", SLACK_TOKEN.to_string()),
        ("SLACK_API_BASE", format!("{}/slack", fake.base())),
    ];
    let hermes = home("", &env);
    let chart = hermes.home().join("chart.png");
    fs::write(&chart, b"\x89PNG\r\n\x1a\nnot-really-a-png").unwrap();
    let reply = format!(
        "Disk usage is **fine** on _all_ hosts, see [the dashboard](https://grafana.example.com).\n\n\
         Run `df -h` if 3 < 4 & done.\n\
         MEDIA:{}\n",
        chart.display()
    );
    fs::write(hermes.home().join("scripts").join("reply.txt"), reply).unwrap();
    let id = add_job(&hermes, "slack:C0123:1772350000.000200", &[]);
    run(&hermes, &id);

    let seen = fake.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/slack/chat.postMessage",
            "/slack/files.getUploadURLExternal",
            "/upload/v1/F0001",
            "/slack/files.completeUploadExternal"
        ]
    );
    let text = wrapped(
        "Disk usage is *fine* on _all_ hosts, see <https://grafana.example.com|the dashboard>.\n\n\
         Run `df -h` if 3 &lt; 4 &amp; done.",
    )
    .replace("{id}", &id);
    assert_eq!(
        seen[0].json(),
        json!({"channel": "C0123", "text": text, "unfurl_links": false, "thread_ts": "1772350000.000200"})
    );
    let asked = form(&seen[1]);
    assert_eq!(asked["filename"], "chart.png");
    assert_eq!(asked["length"], "24");
    assert_eq!(seen[2].body, b"\x89PNG\r\n\x1a\nnot-really-a-png");
    let completed = form(&seen[3]);
    assert_eq!(completed["channel_id"], "C0123");
    assert_eq!(completed["thread_ts"], "1772350000.000200");
    assert_eq!(
        serde_json::from_str::<Value>(&completed["files"]).unwrap(),
        json!([{"id": "F0001", "title": "chart.png"}])
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["last_delivery_error"], Value::Null);
}

/// Discord's per-route bucket for channel messages, scaled down for a test: 5 requests
/// per 1-second window, announced in the rate-limit headers of every answer; a request
/// over the limit gets Discord's 429.
const DISCORD_LIMIT: u32 = 5;
const DISCORD_WINDOW: Duration = Duration::from_secs(1);

struct Window {
    start: Option<Instant>,
    used: u32,
}

fn discord_api(limited: Arc<Mutex<u32>>) -> impl Fn(&Seen, usize) -> Answer + Send + 'static {
    let window = Mutex::new(Window {
        start: None,
        used: 0,
    });
    move |seen, index| {
        let now = Instant::now();
        let mut window = window.lock().unwrap();
        if window
            .start
            .is_none_or(|start| now >= start + DISCORD_WINDOW)
        {
            *window = Window {
                start: Some(now),
                used: 0,
            };
        }
        let reset_after = (window.start.unwrap() + DISCORD_WINDOW - now).as_secs_f64();
        let over = window.used >= DISCORD_LIMIT;
        if !over {
            window.used += 1;
        }
        let headers = vec![
            ("X-RateLimit-Limit".to_string(), DISCORD_LIMIT.to_string()),
            (
                "X-RateLimit-Remaining".to_string(),
                (DISCORD_LIMIT - window.used).to_string(),
            ),
            (
                "X-RateLimit-Reset-After".to_string(),
                format!("{reset_after:.3}"),
            ),
            (
                "X-RateLimit-Bucket".to_string(),
                "41f9cd5d28af77da04563bcb1d67fdfd".to_string(),
            ),
        ];
        if !seen.path.ends_with("/channels/777/messages") {
            return (
                404,
                headers,
                json!({"message": "Unknown Channel", "code": 10003}).to_string(),
            );
        }
        if over {
            *limited.lock().unwrap() += 1;
            let body = json!({"message": "You are being rate limited.", "retry_after": reset_after, "global": false});
            let mut headers = headers;
            headers.push(("X-RateLimit-Scope".to_string(), "user".to_string()));
            return (429, headers, body.to_string());
        }
        (
            200,
            headers,
            json!({"id": format!("11{index:02}"), "channel_id": "777"}).to_string(),
        )
    }
}

#[test]
fn a_long_discord_reply_is_paced_by_its_rate_limit_headers_and_meets_no_429() {
    let limited = Arc::new(Mutex::new(0));
    let fake = Fake::start(discord_api(Arc::clone(&limited)));
    let env = vec![
        ("DISCORD_BOT_TOKEN", "discord-test-token-1234".to_string()),
        ("DISCORD_API_BASE", fake.base()),
    ];
    // Twelve parts of about 1900 characters: more than two full buckets.
    let reply = (0..12)
        .map(|n| format!("Section {n:02}: {}", "status nominal ".repeat(125)))
        .collect::<Vec<_>>()
        .join("\n\n");
    let hermes = home(&reply, &env);
    let id = add_job(&hermes, "discord:777", &[]);
    run(&hermes, &id);

    let contents: Vec<String> = fake
        .bodies("/messages")
        .iter()
        .map(|b| b["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(*limited.lock().unwrap(), 0, "the client met a 429");
    assert!(contents.len() >= 12, "{} parts", contents.len());
    for (i, content) in contents.iter().enumerate() {
        assert!(content.chars().count() <= 2000);
        assert!(content.ends_with(&format!("({}/{})", i + 1, contents.len())));
    }
    let joined = contents.concat();
    for n in 0..12 {
        assert_eq!(joined.matches(&format!("Section {n:02}:")).count(), 1);
    }
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}
