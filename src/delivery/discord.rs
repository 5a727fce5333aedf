//! Discord sender: `POST /channels/<id>/messages` with the bot token (a thread is a
//! channel, so a thread id is sent to directly), 2000-character parts, 429
//! `retry_after`, mentions disabled so a report can never ping `@everyone`.

use std::path::Path;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::split;
use super::http::{client, credentials, send_once, snippet, Answer, Failure, Retrier};
use super::telegram::read_media;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Discord;

pub const MAX_CHARS: usize = 2000;

pub fn parts(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(text, MAX_CHARS, &|s| s.chars().count())
}

/// Sends to a channel (or thread), skipping `skip` items already delivered; see
/// [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    channel: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let (token, base) =
        credentials(env, PLATFORM, "https://discord.com/api/v10").map_err(|f| (f, skip))?;
    let channel = thread.unwrap_or(channel);
    let url = format!("{base}/channels/{channel}/messages");
    let parts = parts(text);
    let total = parts.len() + media.len();
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = json!({"content": part, "allowed_mentions": {"parse": []}});
        post(token, &url, channel, |r| r.json(&body))
            .await
            .map_err(|f| (f, index))?;
    }
    for (offset, path) in media.iter().enumerate() {
        let index = parts.len() + offset;
        if index < skip {
            continue;
        }
        let (name, bytes) = read_media(Path::new(path)).map_err(|f| (f, index))?;
        let payload = json!({"allowed_mentions": {"parse": []}}).to_string();
        post(token, &url, channel, |r| {
            r.multipart(
                reqwest::multipart::Form::new()
                    .text("payload_json", payload.clone())
                    .part(
                        "files[0]",
                        reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                    ),
            )
        })
        .await
        .map_err(|f| (f, index))?;
    }
    Ok(total)
}

fn described(answer: &Answer) -> String {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    match body["message"].as_str() {
        Some(m) => format!("{} {m} (code {})", answer.status, body["code"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    }
}

async fn post(
    token: &str,
    url: &str,
    channel: &str,
    body: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<(), Failure> {
    let mut retrier = Retrier::default();
    loop {
        let request = body(
            client()
                .post(url)
                .header("Authorization", format!("Bot {token}")),
        );
        let answer = match send_once(request).await {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        match answer.status {
            200..=299 => return Ok(()),
            429 => {
                let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
                let wait = body["retry_after"]
                    .as_f64()
                    .map(super::http::seconds)
                    .or(answer.retry_after)
                    .unwrap_or(std::time::Duration::from_secs(1));
                retrier
                    .rate_limited(PLATFORM.as_str(), channel, wait, described(&answer))
                    .await?;
            }
            500..=599 => retrier.transient(described(&answer)).await?,
            _ => return Err(Failure::Final(described(&answer))),
        }
    }
}
