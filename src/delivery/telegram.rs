//! Telegram Bot API sender: `sendMessage` in parts of at most 4096 characters (as
//! Telegram counts them, after HTML parsing), Markdown rendered as Telegram HTML with a
//! plain-text resend when Telegram "can't parse entities", `retry_after` on 429, 403 as
//! final, `migrate_to_chat_id` followed, the General topic (thread 1) omitted, and
//! `MEDIA:` files uploaded with sendPhoto/sendDocument/sendAudio/sendVideo.
//! The bot token only ever appears in the request URL, never in an error message.

use std::path::Path;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split_parts, utf16_len, Part, Rendering};
use super::http::{
    client, credentials, pace, send_once, snippet, Answer, Failure, Pacing, Retrier,
    TELEGRAM_GROUP, TELEGRAM_PRIVATE,
};
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Telegram;

/// Telegram's limit on a message's text.
pub const MAX_CHARS: usize = 4096;
/// Bots may upload files up to 50 MB.
const MAX_UPLOAD: u64 = 50 * 1024 * 1024;

/// The parts a text is sent in (a pure function of the text: the outbox relies on it),
/// measured as Telegram HTML in UTF-16 units.
pub fn parts(text: &str) -> Vec<Part> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split_parts(text, Rendering::TelegramHtml, MAX_CHARS, &utf16_len)
}

fn pacing(chat: &str) -> Pacing {
    // Negative ids are groups, supergroups and channels; `@name` is a public one.
    if chat.starts_with('-') || chat.starts_with('@') {
        TELEGRAM_GROUP
    } else {
        TELEGRAM_PRIVATE
    }
}

/// A chat id as JSON: a number when it is one (Telegram accepts both), else `@name`.
fn chat_value(chat: &str) -> Value {
    chat.parse::<i64>()
        .map_or_else(|_| json!(chat), |n| json!(n))
}

struct Chat {
    base: String,
    token: String,
    id: String,
    thread: Option<String>,
}

impl Chat {
    fn url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.base, self.token)
    }
}

/// Telegram's error answer: `{"ok":false,"error_code":429,"description":"…",
/// "parameters":{"retry_after":2}}`.
struct ApiError {
    description: String,
    retry_after: Option<f64>,
    migrate_to: Option<String>,
}

fn api_error(answer: &Answer) -> ApiError {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let params = &body["parameters"];
    ApiError {
        description: body["description"]
            .as_str()
            .map_or_else(|| snippet(&answer.body), str::to_string),
        retry_after: params["retry_after"]
            .as_f64()
            .or(answer.retry_after.map(|d| d.as_secs_f64())),
        migrate_to: match &params["migrate_to_chat_id"] {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) => Some(s.clone()),
            _ => None,
        },
    }
}

fn succeeded(answer: &Answer) -> bool {
    answer.status == 200
        && serde_json::from_str::<Value>(&answer.body)
            .map(|b| b["ok"] == json!(true))
            .unwrap_or(false)
}

/// Sends `text` (Markdown) and then `media` to a chat, skipping the first `skip` items
/// (parts, then files) that an earlier attempt already delivered. Returns how many
/// items exist in all; on failure, the failure and how many items were delivered.
pub async fn send(
    env: &Environment,
    chat: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let (token, base) =
        credentials(env, PLATFORM, "https://api.telegram.org").map_err(|f| (f, skip))?;
    let chat = &super::channels::resolve(env, PLATFORM, chat)
        .await
        .map_err(|f| (f, skip))?;
    let mut target = Chat {
        base: base.to_string(),
        token: token.to_string(),
        id: chat.to_string(),
        // The General topic of a forum is thread 1, and Telegram refuses it by id.
        thread: thread.filter(|t| t.trim() != "1").map(str::to_string),
    };
    let parts = parts(text);
    let total = parts.len() + media.len();
    for (index, part) in parts.iter().enumerate().skip(skip) {
        send_text(&mut target, part).await.map_err(|f| (f, index))?;
    }
    for (offset, path) in media.iter().enumerate() {
        let index = parts.len() + offset;
        if index < skip {
            continue;
        }
        send_file(&mut target, Path::new(path))
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(total)
}

/// What to do after an unsuccessful answer.
enum Next {
    Again,
    Fail(Failure),
}

/// The shared handling of an error answer for any method.
async fn after_error(
    target: &mut Chat,
    answer: &Answer,
    retrier: &mut Retrier,
    migrated: &mut bool,
) -> Next {
    let error = api_error(answer);
    let described = format!("{} {}", answer.status, error.description);
    if answer.status == 429 {
        let wait = super::http::seconds(error.retry_after.unwrap_or(1.0));
        return match retrier
            .rate_limited(PLATFORM.as_str(), &target.id, wait, described)
            .await
        {
            Ok(()) => Next::Again,
            Err(f) => Next::Fail(f),
        };
    }
    if let Some(new_id) = error.migrate_to.filter(|_| !*migrated) {
        tracing::warn!(
            old = %target.id, new = %new_id,
            "Telegram chat was upgraded to a supergroup; sending to the new id — update TELEGRAM_HOME_CHANNEL or the job's --deliver"
        );
        target.id = new_id;
        *migrated = true;
        return Next::Again;
    }
    let lower = error.description.to_ascii_lowercase();
    if lower.contains("message thread not found") && target.thread.is_some() {
        tracing::warn!(chat = %target.id, "Telegram topic not found; sending to the chat without a topic");
        target.thread = None;
        return Next::Again;
    }
    match answer.status {
        403 => Next::Fail(Failure::Final(format!("{described} (not retried)"))),
        500..=599 => match retrier.transient(described).await {
            Ok(()) => Next::Again,
            Err(f) => Next::Fail(f),
        },
        _ => Next::Fail(Failure::Final(described)),
    }
}

async fn send_text(target: &mut Chat, part: &Part) -> Result<(), Failure> {
    let mut plain = false;
    let mut migrated = false;
    let mut retrier = Retrier::default();
    loop {
        let slot = pace(PLATFORM.as_str(), &target.id, pacing(&target.id)).await;
        let mut body = json!({"chat_id": chat_value(&target.id)});
        if plain {
            body["text"] = json!(part.source);
        } else {
            body["text"] = json!(part.rendered);
            body["parse_mode"] = json!("HTML");
        }
        if let Some(thread) = &target.thread {
            body["message_thread_id"] = chat_value(thread);
        }
        let sent = send_once(client().post(target.url("sendMessage")).json(&body)).await;
        slot.answered();
        let answer = match sent {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        if succeeded(&answer) {
            return Ok(());
        }
        if answer.status == 400
            && !plain
            && api_error(&answer)
                .description
                .to_ascii_lowercase()
                .contains("can't parse entities")
        {
            tracing::info!(chat = %target.id, "Telegram refused the HTML; resending as plain text");
            plain = true;
            continue;
        }
        match after_error(target, &answer, &mut retrier, &mut migrated).await {
            Next::Again => continue,
            Next::Fail(f) => return Err(f),
        }
    }
}

/// The upload method and field for a file, by extension.
fn media_method(path: &Path) -> (&'static str, &'static str) {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "jpg" | "jpeg" | "png" | "webp" => ("sendPhoto", "photo"),
        "mp3" | "m4a" | "ogg" | "oga" | "wav" | "flac" | "aac" | "opus" => ("sendAudio", "audio"),
        "mp4" | "mov" | "webm" | "mkv" | "avi" => ("sendVideo", "video"),
        _ => ("sendDocument", "document"),
    }
}

/// Reads a `MEDIA:` file, refusing what should never leave the machine by accident.
pub fn read_media(path: &Path) -> Result<(String, Vec<u8>), Failure> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_string();
    let lower = name.to_ascii_lowercase();
    let secret = lower == ".env"
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || matches!(
            lower.as_str(),
            ".netrc" | ".pgpass" | "credentials" | "authorized_keys"
        );
    if secret {
        return Err(Failure::Final(format!(
            "MEDIA file {} looks like a credential; not sent",
            path.display()
        )));
    }
    let meta = std::fs::metadata(path).map_err(|e| {
        Failure::Final(format!("MEDIA file {} cannot be read: {e}", path.display()))
    })?;
    if !meta.is_file() || meta.len() > MAX_UPLOAD {
        return Err(Failure::Final(format!(
            "MEDIA file {} is not a regular file under 50 MB; not sent",
            path.display()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::Final(format!("MEDIA file {} cannot be read: {e}", path.display()))
    })?;
    Ok((name, bytes))
}

async fn send_file(target: &mut Chat, path: &Path) -> Result<(), Failure> {
    let (name, bytes) = read_media(path)?;
    let (method, field) = media_method(path);
    let mut migrated = false;
    let mut retrier = Retrier::default();
    loop {
        let slot = pace(PLATFORM.as_str(), &target.id, pacing(&target.id)).await;
        let mut form = reqwest::multipart::Form::new()
            .text("chat_id", target.id.clone())
            .part(
                field,
                reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
            );
        if let Some(thread) = &target.thread {
            form = form.text("message_thread_id", thread.clone());
        }
        let sent = send_once(client().post(target.url(method)).multipart(form)).await;
        slot.answered();
        let answer = match sent {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        if succeeded(&answer) {
            return Ok(());
        }
        match after_error(target, &answer, &mut retrier, &mut migrated).await {
            Next::Again => continue,
            Next::Fail(f) => return Err(f),
        }
    }
}
