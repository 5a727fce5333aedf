//! Slack sender: `chat.postMessage` with `channel`, `text` (mrkdwn) and `thread_ts`,
//! one message per second per channel, 429 `Retry-After`, and Slack's
//! `{"ok":false,"error":…}` answers (HTTP 200) told apart: `ratelimited` and
//! server-side errors are retried, the rest (`channel_not_found`, `not_in_channel`,
//! `invalid_auth`…) are final. `MEDIA:` files go up through Slack's external upload
//! flow. The bot token is never sent to the upload URL Slack hands out.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split_rendered, Rendering};
use super::http::{
    client, credentials, exchange, snippet, Answer, Failure, Request, Verdict, SLACK,
};
use super::telegram::read_media;
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

/// One channel of one workspace.
struct Channel<'a> {
    token: &'a str,
    base: &'a str,
    id: &'a str,
    thread: Option<&'a str>,
}

/// Sends to a channel (threaded under `thread_ts` when given), then uploads each
/// `MEDIA:` file into it; skips `skip` items already delivered (see
/// [`super::telegram::send`] for the contract).
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
    let channel = &super::channels::resolve(env, PLATFORM, channel)
        .await
        .map_err(|f| (f, skip))?;
    let target = Channel {
        token,
        base,
        id: channel,
        thread,
    };
    let parts = parts(text);
    let total = parts.len() + media.len();
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let mut body = json!({"channel": channel, "text": part, "unfurl_links": false});
        if let Some(ts) = thread {
            body["thread_ts"] = json!(ts);
        }
        let url = format!("{base}/chat.postMessage");
        let build = || client().post(&url).bearer_auth(token).json(&body);
        exchange(
            PLATFORM,
            channel,
            Some(SLACK),
            Request::Item,
            &build,
            &judge,
        )
        .await
        .map_err(|f| (f, index))?;
    }
    for (offset, path) in media.iter().enumerate() {
        let index = parts.len() + offset;
        if index < skip {
            continue;
        }
        upload(&target, Path::new(path))
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(total)
}

/// The external upload flow: `files.getUploadURLExternal` (name and size) gives an
/// upload URL and a file id, the bytes are POSTed there, and
/// `files.completeUploadExternal` shares the file in the channel. Only that last call
/// posts anything, so only it counts as the item; an upload whose completion never
/// happened leaves a private file no one sees.
async fn upload(channel: &Channel<'_>, path: &Path) -> Result<(), Failure> {
    let (name, bytes) = read_media(path)?;
    let length = bytes.len().to_string();
    let url = format!("{}/files.getUploadURLExternal", channel.base);
    let form = [("filename", name.as_str()), ("length", length.as_str())];
    let build = || client().post(&url).bearer_auth(channel.token).form(&form);
    let answer = exchange(PLATFORM, channel.id, None, Request::Step, &build, &judge).await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let (Some(upload_url), Some(file_id)) =
        (reply["upload_url"].as_str(), reply["file_id"].as_str())
    else {
        return Err(Failure::Transient(format!(
            "files.getUploadURLExternal answered without an upload URL: {}",
            snippet(&answer.body)
        )));
    };
    let build = || {
        client()
            .post(upload_url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(bytes.clone())
    };
    let judge_upload = |answer: &Answer| match answer.status {
        200..=299 => (Verdict::Done, String::new()),
        _ => judge(answer),
    };
    exchange(
        PLATFORM,
        channel.id,
        None,
        Request::Step,
        &build,
        &judge_upload,
    )
    .await?;
    let files = json!([{"id": file_id, "title": name}]).to_string();
    let mut form = vec![("files", files), ("channel_id", channel.id.to_string())];
    if let Some(ts) = channel.thread {
        form.push(("thread_ts", ts.to_string()));
    }
    let url = format!("{}/files.completeUploadExternal", channel.base);
    let build = || client().post(&url).bearer_auth(channel.token).form(&form);
    exchange(
        PLATFORM,
        channel.id,
        Some(SLACK),
        Request::Item,
        &build,
        &judge,
    )
    .await
    .map(drop)
}

/// Slack answers HTTP 200 with `{"ok": false, "error": "channel_not_found"}` for most
/// refusals; a 429 names its wait in `Retry-After`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let error = reply["error"].as_str().unwrap_or("");
    let text = if error.is_empty() {
        format!("{} {}", answer.status, snippet(&answer.body))
    } else {
        format!("{} {error}", answer.status)
    };
    let verdict = if answer.status == 200 && reply["ok"] == json!(true) {
        Verdict::Done
    } else if answer.status == 429 || error == "ratelimited" {
        Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1)))
    } else if answer.status >= 500 || TRANSIENT_ERRORS.contains(&error) {
        Verdict::Retry
    } else {
        Verdict::Final
    };
    (verdict, text)
}
