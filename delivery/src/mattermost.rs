//! Mattermost sender over the v4 REST API as Python Hermes speaks it: `POST
//! /api/v4/posts` on `MATTERMOST_URL` with `MATTERMOST_TOKEN` (`channel_id`,
//! `message`, `root_id` for a thread), Markdown as is (Mattermost renders it), parts of
//! 4000 characters, `MEDIA:` files uploaded with `POST /api/v4/files` and attached by
//! id, paced under the server's default 10 requests a second; 429 `Retry-After`.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{snippet, Answer, Failure, Link, Pacing, Request, Verdict};
use super::sender::{read_media, ready, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' part size (the server takes up to 16383, 4000 reads well).
pub const MAX_CHARS: usize = 4000;

pub const DESCRIPTION: Description = Description::new(Platform::Mattermost, open)
    .needs(&["MATTERMOST_URL", "MATTERMOST_TOKEN"])
    .home(Home::var("MATTERMOST_HOME_CHANNEL"))
    .names('~')
    .split(Rendering::Markdown, MAX_CHARS)
    // Mattermost's rate limiter defaults to 10 requests a second per user (burst 100).
    .paced(Pacing::window(Duration::from_secs(1), usize::MAX, 10));

/// Opens a channel id (replying under `root_id` when a thread is given).
fn open(open: Open<'_>) -> Opened<'_> {
    let channel = Channel {
        base: open.settings[0],
        token: open.settings[1],
        id: open.chat.to_string(),
        root: open.thread,
        link: open.link,
    };
    ready(channel)
}

struct Channel<'a> {
    base: &'a str,
    token: &'a str,
    id: String,
    root: Option<&'a str>,
    link: Link<'a>,
}

impl Sender for Channel<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(self.post(&part.rendered, Vec::new()))
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let file_id = self.upload(path).await?;
            self.post("", vec![file_id]).await
        })
    }
}

impl Channel<'_> {
    async fn post(&self, message: &str, file_ids: Vec<String>) -> Result<(), Failure> {
        let mut body = json!({"channel_id": self.id, "message": message});
        if let Some(root) = self.root {
            body["root_id"] = json!(root);
        }
        if !file_ids.is_empty() {
            body["file_ids"] = json!(file_ids);
        }
        let url = format!("{}/api/v4/posts", self.base);
        let build = |c: &reqwest::Client| c.post(&url).bearer_auth(self.token).json(&body);
        self.link.item(&build, &judge).await.map(drop)
    }

    /// Uploads a file to the channel; returns its file id.
    async fn upload(&self, path: &Path) -> Result<String, Failure> {
        let (name, bytes) = read_media(path)?;
        let url = format!("{}/api/v4/files", self.base);
        let build = |c: &reqwest::Client| {
            let form = reqwest::multipart::Form::new()
                .text("channel_id", self.id.clone())
                .part(
                    "files",
                    reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                );
            c.post(&url).bearer_auth(self.token).multipart(form)
        };
        let answer = self
            .link
            .exchange(Request::PacedStep, &build, &judge)
            .await?;
        answer.json()["file_infos"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| {
                Failure::Transient(format!(
                    "the file upload answered without a file id: {}",
                    snippet(&answer.body)
                ))
            })
    }
}

/// Mattermost errors are `{"id": "api.context.session_expired.app_error", "message":
/// "…", "status_code": 401}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let text = answer.described(|body| {
        let m = body["message"].as_str()?;
        Some(format!("{m} ({})", body["id"].as_str().unwrap_or("")))
    });
    (answer.by_status(Duration::from_secs(1)), text)
}
