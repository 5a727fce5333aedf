//! QQ bot sender over the QQ Bot Open Platform REST API, as Python Hermes sends out of
//! process: an app access token from `getAppAccessToken` (`QQ_APP_ID`,
//! `QQ_CLIENT_SECRET`), then a plain-text message (`msg_type` 0) to the chat as a guild
//! channel, else a user (C2C), else a group — the first endpoint that knows the id.
//! Parts of 4000 characters; QQ's cron path carries no files, so `MEDIA:` paths are
//! named in the text. `QQBOT_API_BASE` points both hosts at one server.

use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::http::{client, exchange, settings, snippet, Answer, Failure, Pacing, Request, Verdict};
use super::sms::plain_parts;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::QqBot;

/// Hermes' QQ message limit.
pub const MAX_CHARS: usize = 4000;

const API_BASE: &str = "https://api.sgroup.qq.com";
const TOKEN_URL: &str = "https://bots.qq.com/app/getAppAccessToken";
/// Hermes waits a minute when QQ says "too fast" without saying how long.
const RATE_LIMIT_DELAY: Duration = Duration::from_secs(60);

/// QQ takes at most 5 messages a second in a guild sub-channel (active or passive)
/// before `22009 msg limit exceed`, and a refused part costs Hermes' minute-long wait:
/// the parts of a reply go a little over 0.2 s apart, and no sixth within a second of
/// the answer to the first. QQ names no limit per bot, so the bot-wide rate only keeps
/// many chats from arriving as one burst.
const PACING: Pacing = Pacing {
    spacing: Duration::from_millis(210),
    window: Duration::from_secs(1),
    window_max: 5,
    global_per_sec: 50,
};

/// The endpoints a chat id may belong to, in the order Hermes tries them.
const KINDS: [(&str, &str); 3] = [
    ("channel", "/channels/{id}/messages"),
    ("c2c", "/v2/users/{id}/messages"),
    ("group", "/v2/groups/{id}/messages"),
];

pub fn parts(text: &str) -> Vec<String> {
    plain_parts(text, MAX_CHARS)
}

/// Sends to a guild channel, user or group openid, skipping `skip` parts already
/// delivered; see [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    chat: &str,
    _thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let (app_id, secret) = (vars[0], vars[1]);
    let base = env.get("QQBOT_API_BASE").map(|b| b.trim_end_matches('/'));
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!("\n(attachment not sent to QQ: {path})"));
    }
    let parts = parts(&text);
    if skip >= parts.len() {
        return Ok(parts.len());
    }
    let token_url = base.map_or(TOKEN_URL.to_string(), |b| {
        format!("{b}/app/getAppAccessToken")
    });
    let token = access_token(&token_url, app_id, secret, chat)
        .await
        .map_err(|f| (f, skip))?;
    let api = base.unwrap_or(API_BASE);
    let mut kinds: Vec<(&str, &str)> = KINDS.to_vec();
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = json!({"content": part, "msg_type": 0});
        let found = post_to_first_kind(api, &token, chat, &kinds, &body)
            .await
            .map_err(|f| (f, index))?;
        // The id's kind is known now: later parts go straight to it.
        kinds = vec![found];
    }
    Ok(parts.len())
}

/// Posts `body` to the first endpoint kind that knows the chat; returns that kind. A
/// refusal other than the token's is "not this kind": nothing was posted, so the next
/// kind is tried, and when none knows the chat every refusal is reported.
async fn post_to_first_kind<'k>(
    api: &str,
    token: &str,
    chat: &str,
    kinds: &[(&'k str, &'k str)],
    body: &Value,
) -> Result<(&'k str, &'k str), Failure> {
    let mut refusals = Vec::new();
    for &(kind, path) in kinds {
        let url = format!("{api}{}", path.replace("{id}", chat));
        let build = || {
            client()
                .post(&url)
                .header("Authorization", format!("QQBot {token}"))
                .json(body)
        };
        match exchange(PLATFORM, chat, Some(PACING), Request::Item, &build, &judge).await {
            Ok(_) => return Ok((kind, path)),
            Err(Failure::Final(text)) if !text.starts_with("401 ") => {
                refusals.push(format!("{kind}: {text}"));
            }
            Err(other) => return Err(other),
        }
    }
    Err(Failure::Final(format!(
        "no QQ endpoint took chat {chat} ({})",
        refusals.join("; ")
    )))
}

/// The app's access token. QQ answers `{"access_token": "…", "expires_in": "7200"}`, or
/// `{"code": 100016, "message": "invalid appid or secret"}`.
async fn access_token(
    url: &str,
    app_id: &str,
    secret: &str,
    chat: &str,
) -> Result<String, Failure> {
    let body = json!({"appId": app_id, "clientSecret": secret});
    let build = || client().post(url).json(&body);
    let judge_token = |answer: &Answer| {
        let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
        let text = match reply["message"].as_str() {
            Some(m) => format!("QQ token request failed: code {}: {m}", reply["code"]),
            None => format!(
                "QQ token request failed: {} {}",
                answer.status,
                snippet(&answer.body)
            ),
        };
        let verdict = match (answer.status, reply["access_token"].as_str()) {
            (200, Some(_)) => Verdict::Done,
            (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(RATE_LIMIT_DELAY)),
            (500..=599, _) => Verdict::Retry,
            _ => Verdict::Final,
        };
        (verdict, text)
    };
    let answer = exchange(PLATFORM, chat, None, Request::Step, &build, &judge_token).await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    reply["access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Failure::Transient("QQ answered without an access_token".to_string()))
}

/// QQ errors are `{"message": "…", "code": 11241, "err_code": …, "trace_id": …}` with a
/// 4xx or 5xx status; a 401 means the token was refused.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let text = match body["message"].as_str() {
        Some(m) => format!("{} {m} (code {})", answer.status, body["code"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(answer.retry_after.unwrap_or(RATE_LIMIT_DELAY)),
        500..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
