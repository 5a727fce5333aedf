//! Slack sender: `chat.postMessage` with `channel`, `text` and `thread_ts`, one message
//! per second per channel, 429 `Retry-After`, and Slack's `{"ok":false,"error":…}`
//! answers (HTTP 200) told apart: `ratelimited` and server-side errors are retried,
//! the rest (`channel_not_found`, `not_in_channel`, `invalid_auth`…) are final.

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split_rendered, Rendering};
use super::http::{client, credentials, pace, send_once, snippet, Failure, Retrier, SLACK};
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Slack;

/// Slack truncates very long messages; parts stay well under its guidance.
pub const MAX_CHARS: usize = 3900;

/// The parts a text is sent in, as mrkdwn (escaped, so `<`, `>` and `&` in the reply
/// stay text).
pub fn parts(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split_rendered(text, Rendering::SlackMrkdwn, MAX_CHARS, &|s| {
        s.chars().count()
    })
}

const TRANSIENT_ERRORS: &[&str] = &[
    "ratelimited",
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// Sends to a channel (threaded under `thread_ts` when given). Slack has no simple
/// upload in chat.postMessage, so `MEDIA:` files are named in the text instead.
pub async fn send(
    env: &Environment,
    channel: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let (token, base) =
        credentials(env, PLATFORM, "https://slack.com/api").map_err(|f| (f, skip))?;
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!("\n(attachment not uploaded to Slack: {path})"));
    }
    let parts = parts(&text);
    let total = parts.len();
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let mut body = json!({"channel": channel, "text": part, "unfurl_links": false});
        if let Some(ts) = thread {
            body["thread_ts"] = json!(ts);
        }
        post(token, base, channel, &body)
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(total)
}

async fn post(token: &str, base: &str, channel: &str, body: &Value) -> Result<(), Failure> {
    let mut retrier = Retrier::default();
    loop {
        pace(PLATFORM.as_str(), channel, SLACK).await;
        let request = client()
            .post(format!("{base}/chat.postMessage"))
            .bearer_auth(token)
            .json(body);
        let answer = match send_once(request).await {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
        let error = reply["error"].as_str().unwrap_or("").to_string();
        let described = if error.is_empty() {
            format!("{} {}", answer.status, snippet(&answer.body))
        } else {
            format!("{} {error}", answer.status)
        };
        if answer.status == 200 && reply["ok"] == json!(true) {
            return Ok(());
        }
        if answer.status == 429 || error == "ratelimited" {
            let wait = answer
                .retry_after
                .unwrap_or(std::time::Duration::from_secs(1));
            retrier
                .rate_limited(PLATFORM.as_str(), channel, wait, described)
                .await?;
        } else if answer.status >= 500 || TRANSIENT_ERRORS.contains(&error.as_str()) {
            retrier.transient(described).await?;
        } else {
            return Err(Failure::Final(described));
        }
    }
}
