//! Signal sender, through a signal-cli daemon's JSON-RPC endpoint as Python Hermes
//! speaks it (`POST <SIGNAL_HTTP_URL>/api/v1/rpc`, method `send`, from
//! `SIGNAL_ACCOUNT` to a `+E.164` number or `group:<id>`): plain text in parts of 8000
//! characters, `MEDIA:` files as data-URI attachments, and signal-cli's errors (HTTP 200
//! with a JSON-RPC `error`) told apart: a rate limit is waited out, the rest are final.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{seconds, snippet, Answer, Failure, Link, Verdict};
use super::sender::{read_media, ready, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' Signal limit on one message.
pub const MAX_CHARS: usize = 8000;
/// signal-cli's JSON-RPC code for a rate limit (RateLimitException, v0.14.3+).
const RATE_LIMITED: i64 = -5;
/// signal-cli's wait when it names none (its token refill interval).
const DEFAULT_WAIT: Duration = Duration::from_secs(4);

pub const DESCRIPTION: Description = Description::new(Platform::Signal, open)
    .needs(&["SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT"])
    .home(Home::var("SIGNAL_HOME_CHANNEL"))
    .split(Rendering::Plain, MAX_CHARS);

/// Sends to a number or `group:<id>`. Signal has no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let daemon = Daemon {
        url: format!("{}/api/v1/rpc", open.settings[0]),
        account: open.settings[1],
        chat: open.chat.to_string(),
        link: open.link,
    };
    ready(daemon)
}

/// The signal-cli daemon of one account, sending to one chat.
struct Daemon<'a> {
    url: String,
    account: &'a str,
    chat: String,
    link: Link<'a>,
}

impl Sender for Daemon<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(self.rpc(json!({"message": part.rendered})))
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let (name, bytes) = read_media(path)?;
            let attachments = [data_uri(&name, &bytes)];
            self.rpc(json!({"message": "", "attachments": attachments}))
                .await
        })
    }
}

impl Daemon<'_> {
    async fn rpc(&self, extra: Value) -> Result<(), Failure> {
        let params = params(self.account, &self.chat, extra);
        let body =
            json!({"jsonrpc": "2.0", "method": "send", "params": params, "id": "hermes-cron"});
        let build = |c: &reqwest::Client| c.post(&self.url).json(&body);
        self.link.item(&build, &judge).await.map(drop)
    }
}

/// The `send` parameters: the account, the recipient or group, and `extra`.
fn params(account: &str, chat: &str, extra: Value) -> Value {
    let mut params = json!({"account": account});
    match chat.strip_prefix("group:") {
        Some(group) => params["groupId"] = json!(group),
        None => params["recipient"] = json!([chat]),
    }
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    params
}

/// signal-cli reads an attachment from a path on its own machine or from a data URI;
/// a data URI works wherever the daemon runs.
fn data_uri(name: &str, bytes: &[u8]) -> String {
    let mime = mime_guess::from_path(name).first_or_octet_stream();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!("data:{mime};filename={name};base64,{data}")
}

/// Reads signal-cli's answer: `{"result": …}` is sent; `{"error": {"code", "message",
/// "data": {"response": {"results": [{"retryAfterSeconds": …}]}}}}` is not.
fn judge(answer: &Answer) -> (Verdict, String) {
    let reply = answer.json();
    let error = &reply["error"];
    if answer.status >= 500 {
        return (
            Verdict::Retry,
            format!("{} {}", answer.status, snippet(&answer.body)),
        );
    }
    if answer.status != 200 {
        return (
            Verdict::Final,
            format!("{} {}", answer.status, snippet(&answer.body)),
        );
    }
    if error.is_null() && !reply["result"].is_null() {
        return (Verdict::Done, String::new());
    }
    let message = error["message"].as_str().unwrap_or("").to_string();
    let text = format!("signal-cli error {}: {message}", error["code"]);
    let lower = message.to_ascii_lowercase();
    let rate_limited = error["code"].as_i64() == Some(RATE_LIMITED)
        || message.contains("[429]")
        || lower.contains("ratelimit")
        || lower.contains("retry after");
    if !rate_limited {
        return (Verdict::Final, text);
    }
    let named = error["data"]["response"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["retryAfterSeconds"].as_f64())
        .fold(None, |most: Option<f64>, s| {
            Some(most.map_or(s, |m| m.max(s)))
        });
    let wait = named.map(seconds).unwrap_or(DEFAULT_WAIT);
    (Verdict::RateLimited(wait), text)
}
