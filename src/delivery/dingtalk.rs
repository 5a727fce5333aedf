//! DingTalk sender as Python Hermes speaks it out of process: a group robot's webhook
//! (`POST <DINGTALK_WEBHOOK_URL>`, its `access_token` in the URL) with a `text`
//! message, plain text in parts of 20000 characters, paced under the robot's 20
//! messages a minute. The robot decides the group, so the chat id is only a label; it
//! cannot upload files, so `MEDIA:` paths are named. The URL is never shown in errors.

use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::http::{client, exchange, settings, snippet, Answer, Failure, Pacing, Request, Verdict};
use super::sms::plain_parts;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::DingTalk;

/// Hermes' DingTalk message limit.
pub const MAX_CHARS: usize = 20_000;

/// A robot may send 20 messages a minute; past that DingTalk throttles it for 10
/// minutes (errcode 410100).
const PACING: Pacing = Pacing {
    spacing: Duration::ZERO,
    window: Duration::from_millis(60_500),
    window_max: 20,
    global_per_sec: 20,
};
const THROTTLED: i64 = 410_100;
const THROTTLED_FOR: Duration = Duration::from_secs(600);
/// "System busy": DingTalk asks to try again.
const BUSY: i64 = -1;

pub fn parts(text: &str) -> Vec<String> {
    plain_parts(text, MAX_CHARS)
}

/// Posts to the robot's group, skipping `skip` parts already delivered; see
/// [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    _chat: &str,
    _thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let url = vars[0];
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!("\n(attachment not sent to DingTalk: {path})"));
    }
    let parts = parts(&text);
    let robot = robot_key(url);
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = json!({"msgtype": "text", "text": {"content": part}});
        let build = || client().post(url).json(&body);
        exchange(
            PLATFORM,
            &robot,
            Some(PACING),
            Request::Item,
            &build,
            &judge,
        )
        .await
        .map_err(|f| (f, index))?;
    }
    Ok(parts.len())
}

/// The robot's name in pacing and logs: a digest of its URL, which holds its token.
fn robot_key(url: &str) -> String {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(url.as_bytes()));
    format!("robot-{}", &digest[..12])
}

/// DingTalk answers HTTP 200 with `{"errcode": 0, "errmsg": "ok"}`, or an error code:
/// 300001 (token is not exist), 310000 (keywords or signature), 410100 (too fast).
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let code = body["errcode"].as_i64();
    let text = match body["errmsg"].as_str() {
        Some(m) => format!("errcode {}: {m}", body["errcode"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match (answer.status, code) {
        (200, Some(0)) => Verdict::Done,
        (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        (_, Some(THROTTLED)) => Verdict::RateLimited(THROTTLED_FOR),
        (500..=599, _) | (_, Some(BUSY)) => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
