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

use super::format::split;
use super::http::{
    client, exchange, seconds, settings, snippet, Answer, Failure, Pacing, Request, Verdict,
};
use super::telegram::read_media;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Feishu;

/// Hermes' Feishu part size.
pub const MAX_CHARS: usize = 8000;

/// A bot may send 5 messages a second to one chat, 50 a second in all.
const PACING: Pacing = Pacing {
    spacing: Duration::from_millis(210),
    window: Duration::from_secs(1),
    window_max: usize::MAX,
    global_per_sec: 50,
};
/// "Request trigger frequency limit".
const RATE_LIMITED: i64 = 99_991_400;

pub fn parts(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(text, MAX_CHARS, &|s| s.chars().count())
}

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

struct Bot {
    base: String,
    token: String,
    chat: String,
    thread: Option<String>,
}

impl Bot {
    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        client()
            .post(format!("{}/open-apis/{path}", self.base))
            .bearer_auth(&self.token)
    }

    /// Sends one message; `uuid` makes a retried request post once.
    async fn message(&self, msg_type: &str, content: String, uuid: &str) -> Result<(), Failure> {
        let (id_type, receive_id) = match &self.thread {
            Some(thread) => ("thread_id", thread.as_str()),
            None if self.chat.starts_with("ou_") => ("open_id", self.chat.as_str()),
            None => ("chat_id", self.chat.as_str()),
        };
        let body = json!({"receive_id": receive_id, "msg_type": msg_type, "content": content, "uuid": uuid});
        let build = || {
            self.post("im/v1/messages")
                .query(&[("receive_id_type", id_type)])
                .json(&body)
        };
        exchange(
            PLATFORM,
            &self.chat,
            Some(PACING),
            Request::Item,
            &build,
            &judge,
        )
        .await
        .map(drop)
    }
}

/// Sends to a chat (`oc_…`) or user (`ou_…`), into a thread when given, skipping
/// `skip` items already delivered; see [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    chat: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let base = match env.get("FEISHU_API_BASE") {
        Some(base) => base.trim_end_matches('/').to_string(),
        None if env.get("FEISHU_DOMAIN") == Some("lark") => "https://open.larksuite.com".into(),
        None => "https://open.feishu.cn".into(),
    };
    let parts = parts(text);
    let total = parts.len() + media.len();
    if skip >= total {
        return Ok(total);
    }
    let token = tenant_token(&base, vars[0], vars[1], chat)
        .await
        .map_err(|f| (f, skip))?;
    let bot = Bot {
        base,
        token,
        chat: chat.to_string(),
        thread: thread.map(str::to_string),
    };
    let send_id = format!("{:016x}", rand::random::<u64>());
    for (index, part) in parts.iter().enumerate().skip(skip) {
        bot.message("post", post_content(part), &format!("{send_id}-{index}"))
            .await
            .map_err(|f| (f, index))?;
    }
    for (offset, path) in media.iter().enumerate() {
        let index = parts.len() + offset;
        if index < skip {
            continue;
        }
        let (msg_type, content) = upload(&bot, Path::new(path))
            .await
            .map_err(|f| (f, index))?;
        bot.message(msg_type, content, &format!("{send_id}-{index}"))
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(total)
}

/// `POST /open-apis/auth/v3/tenant_access_token/internal`: `{"code": 0,
/// "tenant_access_token": "t-…", "expire": 7200}`.
async fn tenant_token(
    base: &str,
    app_id: &str,
    secret: &str,
    chat: &str,
) -> Result<String, Failure> {
    let url = format!("{base}/open-apis/auth/v3/tenant_access_token/internal");
    let body = json!({"app_id": app_id, "app_secret": secret});
    let build = || client().post(&url).json(&body);
    let answer = exchange(PLATFORM, chat, None, Request::Step, &build, &judge).await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    reply["tenant_access_token"]
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
async fn upload(bot: &Bot, path: &Path) -> Result<(&'static str, String), Failure> {
    let (name, bytes) = read_media(path)?;
    let mime = mime_guess::from_path(&name).first_or_octet_stream();
    let image = mime.type_() == "image";
    let build = || {
        let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone());
        if image {
            let form = reqwest::multipart::Form::new()
                .text("image_type", "message")
                .part("image", part);
            bot.post("im/v1/images").multipart(form)
        } else {
            let form = reqwest::multipart::Form::new()
                .text("file_type", "stream")
                .text("file_name", name.clone())
                .part("file", part);
            bot.post("im/v1/files").multipart(form)
        }
    };
    let answer = exchange(
        PLATFORM,
        &bot.chat,
        Some(PACING),
        Request::Step,
        &build,
        &judge,
    )
    .await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
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
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
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
