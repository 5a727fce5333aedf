//! Feishu / Lark sender over the Open Platform API, as Python Hermes' adapter speaks
//! it: a tenant access token from `FEISHU_APP_ID` and `FEISHU_APP_SECRET`, then `POST
//! /open-apis/im/v1/messages` with a `post` of `md` rows (code blocks in rows of their
//! own), parts of 8000 characters, a `uuid` so a retried request posts once, a thread
//! as `receive_id_type=thread_id`, `MEDIA:` images and files uploaded and sent by key.
//! Base `FEISHU_API_BASE`, else by `FEISHU_DOMAIN` (feishu or lark).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{seconds, snippet, Answer, Failure, Link, Pacing, Request, Verdict};
use super::sender::{opened, read_media, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' Feishu part size.
pub const MAX_CHARS: usize = 8000;

/// "Request trigger frequency limit".
const RATE_LIMITED: i64 = 99_991_400;

pub const DESCRIPTION: Description = Description::new(Platform::Feishu, open)
    .needs(&["FEISHU_APP_ID", "FEISHU_APP_SECRET"])
    .home(Home::var("FEISHU_HOME_CHANNEL"))
    .split(Rendering::Markdown, MAX_CHARS)
    // A bot may send 5 messages a second to one chat, 50 a second in all.
    .paced(Pacing {
        spacing: Duration::from_millis(210),
        window: Duration::from_secs(1),
        window_max: usize::MAX,
        global_per_sec: 50,
    });

/// A `post` message's content: one `md` row per run of prose and per code block,
/// since Feishu's renderer can swallow what follows a fence inside one element.
pub fn post_content(markdown: &str) -> String {
    let mut rows: Vec<Value> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    let mut flush = |current: &mut Vec<&str>| {
        let segment = current.join("\n");
        if !segment.trim().is_empty() {
            rows.push(json!([{"tag": "md", "text": segment}]));
        }
        current.clear();
    };
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        if fence && !in_code {
            flush(&mut current);
        }
        current.push(line);
        if fence {
            in_code = !in_code;
            if !in_code {
                flush(&mut current);
            }
        }
    }
    flush(&mut current);
    json!({"zh_cn": {"content": rows}}).to_string()
}

struct Bot<'a> {
    base: String,
    token: String,
    chat: String,
    thread: Option<String>,
    /// Per send: with the item's place, the `uuid` that makes a retried request post
    /// once.
    send_id: String,
    link: Link<'a>,
}

/// Opens a chat (`oc_…`) or user (`ou_…`), into a thread when given, with a tenant
/// token. Base `FEISHU_API_BASE`, else by `FEISHU_DOMAIN` (feishu or lark).
fn open(open: Open<'_>) -> Opened<'_> {
    let base = match open.env.get("FEISHU_API_BASE") {
        Some(base) => base.trim_end_matches('/').to_string(),
        None if open.env.get("FEISHU_DOMAIN") == Some("lark") => {
            "https://open.larksuite.com".into()
        }
        None => "https://open.feishu.cn".into(),
    };
    Box::pin(async move {
        let token = tenant_token(&open.link, &base, open.settings[0], open.settings[1]).await?;
        let bot = Bot {
            base,
            token,
            chat: open.chat.to_string(),
            thread: open.thread.map(str::to_string),
            send_id: format!("{:016x}", rand::random::<u64>()),
            link: open.link,
        };
        opened(bot)
    })
}

impl Sender for Bot<'_> {
    fn text<'a>(&'a mut self, item: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(self.message("post", post_content(&part.rendered), item))
    }

    fn file<'a>(&'a mut self, item: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let (msg_type, content) = upload(self, path).await?;
            self.message(msg_type, content, item).await
        })
    }
}

impl Bot<'_> {
    fn post(&self, client: &reqwest::Client, path: &str) -> reqwest::RequestBuilder {
        client
            .post(format!("{}/open-apis/{path}", self.base))
            .bearer_auth(&self.token)
    }

    /// Sends one message, the `item`-th of this send.
    async fn message(&self, msg_type: &str, content: String, item: usize) -> Result<(), Failure> {
        let (id_type, receive_id) = match &self.thread {
            Some(thread) => ("thread_id", thread.as_str()),
            None if self.chat.starts_with("ou_") => ("open_id", self.chat.as_str()),
            None => ("chat_id", self.chat.as_str()),
        };
        let uuid = format!("{}-{item}", self.send_id);
        let body = json!({"receive_id": receive_id, "msg_type": msg_type, "content": content, "uuid": uuid});
        let build = |c: &reqwest::Client| {
            self.post(c, "im/v1/messages")
                .query(&[("receive_id_type", id_type)])
                .json(&body)
        };
        self.link.item(&build, &judge).await.map(drop)
    }
}

/// `POST /open-apis/auth/v3/tenant_access_token/internal`: `{"code": 0,
/// "tenant_access_token": "t-…", "expire": 7200}`.
async fn tenant_token(
    link: &Link<'_>,
    base: &str,
    app_id: &str,
    secret: &str,
) -> Result<String, Failure> {
    let url = format!("{base}/open-apis/auth/v3/tenant_access_token/internal");
    let body = json!({"app_id": app_id, "app_secret": secret});
    let build = |c: &reqwest::Client| c.post(&url).json(&body);
    let answer = link.step(&build, &judge).await?;
    answer.json()["tenant_access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            Failure::Transient(format!(
                "no tenant_access_token in {}",
                snippet(&answer.body)
            ))
        })
}

/// Uploads an image (`im/v1/images`) or any other file (`im/v1/files`); returns the
/// message type and content that send it.
async fn upload(bot: &Bot<'_>, path: &Path) -> Result<(&'static str, String), Failure> {
    let (name, bytes) = read_media(path)?;
    let mime = mime_guess::from_path(&name).first_or_octet_stream();
    let image = mime.type_() == "image";
    let build = |c: &reqwest::Client| {
        let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone());
        if image {
            let form = reqwest::multipart::Form::new()
                .text("image_type", "message")
                .part("image", part);
            bot.post(c, "im/v1/images").multipart(form)
        } else {
            let form = reqwest::multipart::Form::new()
                .text("file_type", "stream")
                .text("file_name", name.clone())
                .part("file", part);
            bot.post(c, "im/v1/files").multipart(form)
        }
    };
    let answer = bot
        .link
        .exchange(Request::PacedStep, &build, &judge)
        .await?;
    let reply = answer.json();
    let (msg_type, field) = if image {
        ("image", "image_key")
    } else {
        ("file", "file_key")
    };
    let key = reply["data"][field].as_str().ok_or_else(|| {
        Failure::Transient(format!(
            "the upload answered without a {field}: {}",
            snippet(&answer.body)
        ))
    })?;
    Ok((msg_type, json!({ field: key }).to_string()))
}

/// Feishu answers `{"code": 0, "msg": "success", "data": …}`; errors keep the shape
/// with a non-zero code (10014 app secret invalid, 99991663 invalid token, 230002 bot
/// not in the chat), throttling is 429 or code 99991400, waited `x-ogw-ratelimit-reset`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body = answer.json();
    let code = body["code"].as_i64();
    let text = match body["msg"].as_str() {
        Some(m) => format!("{} {m} (code {})", answer.status, body["code"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match (answer.status, code) {
        (200, Some(0)) => Verdict::Done,
        (429, _) | (_, Some(RATE_LIMITED)) => {
            Verdict::RateLimited(answer.retry_after.unwrap_or(seconds(1.0)))
        }
        (500..=599, _) => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
