//! Slack sender: `chat.postMessage` with `channel`, `text` (mrkdwn) and `thread_ts`,
//! one message per second per channel, 429 `Retry-After`, and Slack's
//! `{"ok":false,"error":…}` answers (HTTP 200) told apart: `ratelimited` and
//! server-side errors are retried, the rest (`channel_not_found`, `not_in_channel`,
//! `invalid_auth`…) are final. `MEDIA:` files go up through Slack's external upload
//! flow. The bot token is never sent to the upload URL Slack hands out.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{snippet, Answer, Failure, Link, Pacing, Verdict};
use super::sender::{read_media, ready, Description, Home, Open, Opened, Sender, Sending};

/// Slack truncates very long messages; parts stay well under its guidance.
pub const MAX_CHARS: usize = 3900;

pub const DESCRIPTION: Description = Description::new(Platform::Slack, open)
    .needs(&["SLACK_BOT_TOKEN"])
    .base("SLACK_API_BASE", "https://slack.com/api")
    .home(Home::var("SLACK_HOME_CHANNEL"))
    .names('#')
    // As mrkdwn, escaped, so `<`, `>` and `&` in the reply stay text.
    .split(Rendering::SlackMrkdwn, MAX_CHARS)
    // chat.postMessage: one message per second per channel.
    .paced(Pacing::spaced(Duration::from_millis(1050), 50));

const TRANSIENT_ERRORS: &[&str] = &[
    "ratelimited",
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

fn open(open: Open<'_>) -> Opened<'_> {
    let channel = Channel {
        token: open.settings[0],
        base: open.base,
        id: open.chat.to_string(),
        thread: open.thread,
        link: open.link,
    };
    ready(channel)
}

/// One channel of one workspace (threaded under `thread_ts` when given).
struct Channel<'a> {
    token: &'a str,
    base: &'a str,
    id: String,
    thread: Option<&'a str>,
    link: Link<'a>,
}

impl Sender for Channel<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let mut body = json!({"channel": self.id, "text": part.rendered, "unfurl_links": false});
        if let Some(ts) = self.thread {
            body["thread_ts"] = json!(ts);
        }
        Box::pin(async move {
            let url = format!("{}/chat.postMessage", self.base);
            let build = |c: &reqwest::Client| c.post(&url).bearer_auth(self.token).json(&body);
            self.link.item(&build, &judge).await.map(drop)
        })
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(upload(self, path))
    }
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
    let build = |c: &reqwest::Client| c.post(&url).bearer_auth(channel.token).form(&form);
    let answer = channel.link.step(&build, &judge).await?;
    let reply = answer.json();
    let (Some(upload_url), Some(file_id)) =
        (reply["upload_url"].as_str(), reply["file_id"].as_str())
    else {
        return Err(Failure::Transient(format!(
            "files.getUploadURLExternal answered without an upload URL: {}",
            snippet(&answer.body)
        )));
    };
    let build = |c: &reqwest::Client| {
        c.post(upload_url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(bytes.clone())
    };
    let judge_upload = |answer: &Answer| match answer.status {
        200..=299 => (Verdict::Done, String::new()),
        _ => judge(answer),
    };
    channel.link.step(&build, &judge_upload).await?;
    let files = json!([{"id": file_id, "title": name}]).to_string();
    let mut form = vec![("files", files), ("channel_id", channel.id.clone())];
    if let Some(ts) = channel.thread {
        form.push(("thread_ts", ts.to_string()));
    }
    let url = format!("{}/files.completeUploadExternal", channel.base);
    let build = |c: &reqwest::Client| c.post(&url).bearer_auth(channel.token).form(&form);
    channel.link.item(&build, &judge).await.map(drop)
}

/// Slack answers HTTP 200 with `{"ok": false, "error": "channel_not_found"}` for most
/// refusals; a 429 names its wait in `Retry-After`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let reply = answer.json();
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
