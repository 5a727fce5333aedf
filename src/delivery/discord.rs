//! Discord sender: `POST /channels/<id>/messages` with the bot token (a thread is a
//! channel, so a thread id is sent to directly), 2000-character parts, mentions
//! disabled so a report can never ping `@everyone`. Requests are paced per route from
//! Discord's own rate-limit headers, so a long reply waits for its bucket to refill
//! instead of meeting a 429; a 429 that still comes is waited out (`retry_after`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use jobs::target::Platform;

use super::format::split;
use super::http::{
    client, credentials, send_judged_with_headers, snippet, Answer, Failure, Retrier,
};
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
    let channel = super::channels::resolve(env, PLATFORM, channel)
        .await
        .map_err(|f| (f, skip))?;
    let channel = thread.unwrap_or(&channel);
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

/// What Discord said about one rate-limit bucket on its last answer.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    remaining: u32,
    reset_at: Instant,
}

/// The rate limits this process has learnt, shared by every send to Discord.
#[derive(Default)]
struct Limits {
    /// A route's bucket, as the `X-RateLimit-Bucket` header names it: routes that share
    /// a bucket share its count.
    buckets_of_routes: HashMap<String, String>,
    /// The state of each bucket per channel (Discord counts per bucket and channel).
    buckets: HashMap<String, Bucket>,
}

fn limits() -> &'static Mutex<Limits> {
    static LIMITS: OnceLock<Mutex<Limits>> = OnceLock::new();
    LIMITS.get_or_init(Default::default)
}

impl Limits {
    fn key(&self, route: &str, channel: &str) -> String {
        match self.buckets_of_routes.get(route) {
            Some(bucket) => format!("{bucket}:{channel}"),
            None => format!("{route}:{channel}"),
        }
    }
}

/// Waits until the route's bucket has a request left for this channel, and takes it.
/// Taking it under the lock is what keeps concurrent runs from all spending the last
/// request of a bucket.
async fn take_request(route: &str, channel: &str) {
    loop {
        let wait = {
            let mut limits = limits().lock().unwrap_or_else(|p| p.into_inner());
            let key = limits.key(route, channel);
            let now = Instant::now();
            match limits.buckets.get_mut(&key) {
                Some(bucket) if now < bucket.reset_at && bucket.remaining == 0 => {
                    Some(bucket.reset_at - now)
                }
                Some(bucket) if now < bucket.reset_at => {
                    bucket.remaining -= 1;
                    None
                }
                _ => None,
            }
        };
        match wait {
            Some(wait) => {
                tracing::debug!(
                    route,
                    channel,
                    wait_s = wait.as_secs_f64(),
                    "pacing to Discord's bucket"
                );
                tokio::time::sleep(wait).await;
            }
            None => return,
        }
    }
}

/// Records the bucket state an answer reports (`X-RateLimit-Bucket`,
/// `X-RateLimit-Remaining`, `X-RateLimit-Reset-After` in seconds).
fn note_limits(route: &str, channel: &str, headers: &reqwest::header::HeaderMap) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let remaining = header("x-ratelimit-remaining").and_then(|v| v.parse::<u32>().ok());
    let reset_after = header("x-ratelimit-reset-after").and_then(|v| v.parse::<f64>().ok());
    let mut limits = limits().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(bucket) = header("x-ratelimit-bucket").filter(|b| !b.is_empty()) {
        limits
            .buckets_of_routes
            .insert(route.to_string(), bucket.to_string());
    }
    if let (Some(remaining), Some(reset_after)) = (remaining, reset_after) {
        let key = limits.key(route, channel);
        let reset_at = Instant::now() + super::http::seconds(reset_after);
        limits.buckets.insert(
            key,
            Bucket {
                remaining,
                reset_at,
            },
        );
    }
}

/// A 429: the bucket is empty until the wait is over, for every send to the channel.
fn hold_bucket(route: &str, channel: &str, wait: Duration) {
    let mut limits = limits().lock().unwrap_or_else(|p| p.into_inner());
    let key = limits.key(route, channel);
    let reset_at = Instant::now() + wait;
    limits.buckets.insert(
        key,
        Bucket {
            remaining: 0,
            reset_at,
        },
    );
}

/// The route of a message post, as Discord counts rate limits: the method and path
/// with the channel as its major parameter.
const MESSAGES_ROUTE: &str = "POST /channels/{channel_id}/messages";

async fn post(
    token: &str,
    url: &str,
    channel: &str,
    body: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<(), Failure> {
    let mut retrier = Retrier::default();
    let delivered = |answer: &Answer| (200..300).contains(&answer.status);
    loop {
        take_request(MESSAGES_ROUTE, channel).await;
        let request = body(
            client()
                .post(url)
                .header("Authorization", format!("Bot {token}")),
        );
        let answer = match send_judged_with_headers(request, Some(&delivered)).await {
            Ok((answer, headers)) => {
                note_limits(MESSAGES_ROUTE, channel, &headers);
                answer
            }
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
                    .unwrap_or(Duration::from_secs(1));
                hold_bucket(MESSAGES_ROUTE, channel, wait);
                retrier
                    .rate_limited(PLATFORM.as_str(), channel, wait, described(&answer))
                    .await?;
            }
            500..=599 => retrier.transient(described(&answer)).await?,
            _ => return Err(Failure::Final(described(&answer))),
        }
    }
}
