//! Mattermost sender over the v4 REST API as Python Hermes speaks it: `POST
//! /api/v4/posts` on `MATTERMOST_URL` with `MATTERMOST_TOKEN` (`channel_id`,
//! `message`, `root_id` for a thread), Markdown as is (Mattermost renders it), parts of
//! 4000 characters, `MEDIA:` files uploaded with `POST /api/v4/files` and attached by
//! id, paced under the server's default 10 requests a second; 429 `Retry-After`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::split;
use super::http::{client, exchange, settings, snippet, Answer, Failure, Pacing, Request, Verdict};
use super::telegram::read_media;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Mattermost;

/// Hermes' part size (the server takes up to 16383, 4000 reads well).
pub const MAX_CHARS: usize = 4000;

/// Mattermost's rate limiter defaults to 10 requests a second per user (burst 100).
const PACING: Pacing = Pacing {
    spacing: Duration::ZERO,
    window: Duration::from_secs(1),
    window_max: usize::MAX,
    global_per_sec: 10,
};

pub fn parts(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(text, MAX_CHARS, &|s| s.chars().count())
}

/// Sends to a channel id (replying under `root_id` when a thread is given), skipping
/// `skip` items already delivered; see [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    channel: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let (base, token) = (vars[0], vars[1]);
    let channel = &super::channels::resolve(env, PLATFORM, channel)
        .await
        .map_err(|f| (f, skip))?;
    let parts = parts(text);
    let total = parts.len() + media.len();
    let post = |message: &str, file_ids: Vec<String>| {
        let mut body = json!({"channel_id": channel, "message": message});
        if let Some(root) = thread {
            body["root_id"] = json!(root);
        }
        if !file_ids.is_empty() {
            body["file_ids"] = json!(file_ids);
        }
        body
    };
    let url = format!("{base}/api/v4/posts");
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = post(part, Vec::new());
        let build = || client().post(&url).bearer_auth(token).json(&body);
        exchange(
            PLATFORM,
            channel,
            Some(PACING),
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
        let file_id = upload(base, token, channel, Path::new(path))
            .await
            .map_err(|f| (f, index))?;
        let body = post("", vec![file_id]);
        let build = || client().post(&url).bearer_auth(token).json(&body);
        exchange(
            PLATFORM,
            channel,
            Some(PACING),
            Request::Item,
            &build,
            &judge,
        )
        .await
        .map_err(|f| (f, index))?;
    }
    Ok(total)
}

/// Uploads a file to the channel; returns its file id.
async fn upload(base: &str, token: &str, channel: &str, path: &Path) -> Result<String, Failure> {
    let (name, bytes) = read_media(path)?;
    let url = format!("{base}/api/v4/files");
    let build = || {
        let form = reqwest::multipart::Form::new()
            .text("channel_id", channel.to_string())
            .part(
                "files",
                reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
            );
        client().post(&url).bearer_auth(token).multipart(form)
    };
    let answer = exchange(
        PLATFORM,
        channel,
        Some(PACING),
        Request::Step,
        &build,
        &judge,
    )
    .await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    reply["file_infos"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            Failure::Transient(format!(
                "the file upload answered without a file id: {}",
                snippet(&answer.body)
            ))
        })
}

/// Mattermost errors are `{"id": "api.context.session_expired.app_error", "message":
/// "…", "status_code": 401}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let text = match body["message"].as_str() {
        Some(m) => format!(
            "{} {m} ({})",
            answer.status,
            body["id"].as_str().unwrap_or("")
        ),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        500..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
