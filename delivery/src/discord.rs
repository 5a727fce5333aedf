//! Discord sender: `POST /channels/<id>/messages` with the bot token (a thread is a
//! channel, so a thread id is sent to directly), 2000-character parts, mentions
//! disabled so a report can never ping `@everyone`. Requests are paced per route from
//! Discord's own rate-limit headers ([`Limits`], kept by the delivery), so a long reply
//! waits for its bucket to refill instead of meeting a 429; a 429 that still comes is
//! waited out (`retry_after`). A silent delivery sets the `SUPPRESS_NOTIFICATIONS`
//! message flag.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{Answer, Failure, Limiter, Link, Pace, Verdict};
use super::sender::{read_media, ready, Description, Home, Open, Opened, Sender, Sending};
use crate::BoxFuture;

pub const MAX_CHARS: usize = 2000;

/// Paced by Discord's own rate-limit headers rather than a fixed rate: see `open`.
pub const DESCRIPTION: Description = Description::new(Platform::Discord, open)
    .needs(&["DISCORD_BOT_TOKEN"])
    .base("DISCORD_API_BASE", "https://discord.com/api/v10")
    .home(Home::var("DISCORD_HOME_CHANNEL"))
    .names('#')
    .split(Rendering::Markdown, MAX_CHARS);

fn open(open: Open<'_>) -> Opened<'_> {
    let mut link = open.link;
    let channel = open.thread.unwrap_or(open.chat);
    link.key = channel.to_string();
    link.pace = Pace::Answers(&link.shared.discord);
    let channel = Channel {
        url: format!("{}/channels/{channel}/messages", open.base),
        auth: format!("Bot {}", open.settings[0]),
        flags: if open.silent {
            SUPPRESS_NOTIFICATIONS
        } else {
            0
        },
        link,
    };
    ready(channel)
}

/// Discord's message flag for a message that notifies nobody.
const SUPPRESS_NOTIFICATIONS: u64 = 1 << 12;

/// A channel (or thread) of the bot's.
struct Channel<'a> {
    url: String,
    auth: String,
    /// Message flags every message carries (none: 0).
    flags: u64,
    link: Link<'a>,
}

impl Channel<'_> {
    /// A message: its content (none for a file's), no mentions, and the silent flag
    /// when set.
    fn message(&self, content: Option<&str>) -> serde_json::Value {
        let mut message = match content {
            Some(content) => json!({"content": content, "allowed_mentions": {"parse": []}}),
            None => json!({"allowed_mentions": {"parse": []}}),
        };
        if self.flags != 0 {
            message["flags"] = json!(self.flags);
        }
        message
    }
}

impl Sender for Channel<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = self.message(Some(&part.rendered));
        Box::pin(async move { self.post(&|r| r.json(&body)).await })
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let (name, bytes) = read_media(path)?;
            let payload = self.message(None).to_string();
            let form = |r: reqwest::RequestBuilder| {
                r.multipart(
                    reqwest::multipart::Form::new()
                        .text("payload_json", payload.clone())
                        .part(
                            "files[0]",
                            reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                        ),
                )
            };
            self.post(&form).await
        })
    }
}

impl Channel<'_> {
    async fn post(
        &self,
        body: &(dyn Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder + Sync),
    ) -> Result<(), Failure> {
        let build = |client: &reqwest::Client| {
            body(client.post(&self.url).header("Authorization", &self.auth))
        };
        self.link.item(&build, &judge).await.map(drop)
    }
}

/// 2xx taken; a 429 waits `retry_after` (the body's, else the header's); 5xx retried.
fn judge(answer: &Answer) -> (Verdict, String) {
    let described = answer.described(|body| {
        let m = body["message"].as_str()?;
        Some(format!("{m} (code {})", body["code"]))
    });
    let wait = answer.json()["retry_after"]
        .as_f64()
        .map(super::http::seconds)
        .or(answer.retry_after)
        .unwrap_or(Duration::from_secs(1));
    let verdict = match answer.by_status(wait) {
        Verdict::RateLimited(_) => Verdict::RateLimited(wait),
        other => other,
    };
    (verdict, described)
}

/// What Discord said about one rate-limit bucket on its last answer.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    remaining: u32,
    reset_at: Instant,
}

/// What Discord's answers said of its rate limits, shared by every send to Discord of
/// one delivery.
#[derive(Default)]
struct Learnt {
    /// A route's bucket, as the `X-RateLimit-Bucket` header names it: routes that share
    /// a bucket share its count.
    buckets_of_routes: HashMap<String, String>,
    /// The state of each bucket per channel (Discord counts per bucket and channel).
    buckets: HashMap<String, Bucket>,
}

/// The rate limits Discord announced, kept for as long as the delivery lives.
#[derive(Default)]
pub struct Limits {
    /// Guards everything learnt; held only to read or change a bucket, never across an
    /// await.
    learnt: Mutex<Learnt>,
}

impl Limits {
    fn learnt(&self) -> std::sync::MutexGuard<'_, Learnt> {
        self.learnt.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Learnt {
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
async fn take_request(limits: &Limits, route: &str, channel: &str) {
    loop {
        let wait = {
            let mut limits = limits.learnt();
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
fn note_limits(limits: &Limits, route: &str, channel: &str, headers: &reqwest::header::HeaderMap) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let remaining = header("x-ratelimit-remaining").and_then(|v| v.parse::<u32>().ok());
    let reset_after = header("x-ratelimit-reset-after").and_then(|v| v.parse::<f64>().ok());
    let mut limits = limits.learnt();
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
fn hold_bucket(limits: &Limits, route: &str, channel: &str, wait: Duration) {
    let mut limits = limits.learnt();
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

/// Every request of this sender is a message post: the key is its channel.
impl Limiter for Limits {
    fn wait<'a>(&'a self, channel: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(take_request(self, MESSAGES_ROUTE, channel))
    }

    fn learn(&self, channel: &str, headers: &reqwest::header::HeaderMap, verdict: &Verdict) {
        note_limits(self, MESSAGES_ROUTE, channel, headers);
        if let Verdict::RateLimited(wait) = verdict {
            hold_bucket(self, MESSAGES_ROUTE, channel, *wait);
        }
    }
}
