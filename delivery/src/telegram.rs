//! Telegram Bot API sender: `sendMessage` in parts of at most 4096 characters (as
//! Telegram counts them, after HTML parsing), Markdown rendered as Telegram HTML with a
//! plain-text resend when Telegram "can't parse entities", `retry_after` on 429, 403 as
//! final, `migrate_to_chat_id` followed, the General topic (thread 1) omitted, and
//! `MEDIA:` files uploaded with sendPhoto/sendDocument/sendAudio/sendVideo; every
//! request carries `disable_notification` when the delivery is silent.
//! The bot token only ever appears in the request URL, never in an error message.

use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{Answer, Failure, Link, Pace, Verdict, TELEGRAM_GROUP, TELEGRAM_PRIVATE};
use super::sender::{read_media, ready, Description, Home, Measure, Open, Opened, Sender, Sending};

/// Telegram's limit on a message's text.
pub const MAX_CHARS: usize = 4096;

pub const DESCRIPTION: Description = Description::new(Platform::Telegram, open)
    .needs(&["TELEGRAM_BOT_TOKEN"])
    .base("TELEGRAM_API_BASE", "https://api.telegram.org")
    .home(Home {
        var: "TELEGRAM_HOME_CHANNEL",
        former: None,
        cron_thread: Some("TELEGRAM_CRON_THREAD_ID"),
    })
    .names('@')
    .split(Rendering::TelegramHtml, MAX_CHARS)
    .measured(Measure::Utf16)
    // Set per chat when opened: groups are paced harder than private chats.
    .paced(TELEGRAM_PRIVATE);

/// A chat id as JSON: a number when it is one (Telegram accepts both), else `@name`.
fn chat_value(chat: &str) -> Value {
    chat.parse::<i64>()
        .map_or_else(|_| json!(chat), |n| json!(n))
}

fn open(open: Open<'_>) -> Opened<'_> {
    let mut link = open.link;
    // Negative ids are groups, supergroups and channels; `@name` is a public one.
    if open.chat.starts_with('-') || open.chat.starts_with('@') {
        link.pace = Pace::Chat(TELEGRAM_GROUP);
    }
    let bot = Bot {
        link,
        base: open.base.to_string(),
        token: open.settings[0].to_string(),
        silent: open.silent,
        chat: Mutex::new(Chat {
            id: open.chat.to_string(),
            // The General topic of a forum is thread 1, and Telegram refuses it by id.
            thread: open.thread.filter(|t| t.trim() != "1").map(str::to_string),
            plain: false,
            migrated: false,
        }),
    };
    ready(bot)
}

struct Bot<'a> {
    link: Link<'a>,
    base: String,
    token: String,
    /// Sent with `disable_notification`.
    silent: bool,
    /// Where the items go, as Telegram's answers may change it (a migrated group, a
    /// topic that is gone) and how the item under way is sent; locked only to build a
    /// request or read its answer.
    chat: Mutex<Chat>,
}

struct Chat {
    id: String,
    thread: Option<String>,
    /// The part under way goes as plain text: Telegram refused its HTML.
    plain: bool,
    /// The item under way followed a migration already.
    migrated: bool,
}

impl Sender for Bot<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(self.send_text(part))
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(self.send_file(path))
    }
}

impl Bot<'_> {
    fn chat(&self) -> std::sync::MutexGuard<'_, Chat> {
        self.chat.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.base, self.token)
    }

    fn starting_item(&self) {
        let mut chat = self.chat();
        chat.plain = false;
        chat.migrated = false;
    }

    async fn send_text(&self, part: &Part) -> Result<(), Failure> {
        self.starting_item();
        let url = self.url("sendMessage");
        let build = |client: &reqwest::Client| {
            let chat = self.chat();
            let mut body = json!({"chat_id": chat_value(&chat.id)});
            if chat.plain {
                body["text"] = json!(part.source);
            } else {
                body["text"] = json!(part.rendered);
                body["parse_mode"] = json!("HTML");
            }
            if let Some(thread) = &chat.thread {
                body["message_thread_id"] = chat_value(thread);
            }
            if self.silent {
                body["disable_notification"] = json!(true);
            }
            client.post(&url).json(&body)
        };
        let judge = |answer: &Answer| {
            let mut chat = self.chat();
            let refused_html = answer.status == 400
                && !chat.plain
                && api_error(answer)
                    .description
                    .to_ascii_lowercase()
                    .contains("can't parse entities");
            if refused_html && !succeeded(answer) {
                tracing::info!(chat = %chat.id, "Telegram refused the HTML; resending as plain text");
                chat.plain = true;
                return (Verdict::Changed, String::new());
            }
            judge(answer, &mut chat)
        };
        self.link.item(&build, &judge).await.map(drop)
    }

    async fn send_file(&self, path: &Path) -> Result<(), Failure> {
        self.starting_item();
        let (name, bytes) = read_media(path)?;
        let (method, field) = media_method(path);
        let url = self.url(method);
        let build = |client: &reqwest::Client| {
            let chat = self.chat();
            let mut form = reqwest::multipart::Form::new()
                .text("chat_id", chat.id.clone())
                .part(
                    field,
                    reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                );
            if let Some(thread) = &chat.thread {
                form = form.text("message_thread_id", thread.clone());
            }
            if self.silent {
                form = form.text("disable_notification", "true");
            }
            client.post(&url).multipart(form)
        };
        let judge = |answer: &Answer| judge(answer, &mut self.chat());
        self.link.item(&build, &judge).await.map(drop)
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
    let body = answer.json();
    let params = &body["parameters"];
    ApiError {
        description: body["description"]
            .as_str()
            .map_or_else(|| super::http::snippet(&answer.body), str::to_string),
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
    answer.status == 200 && answer.json()["ok"] == json!(true)
}

/// Any method's answer: taken; a 429 waited out; a migrated group or a topic that is
/// gone followed (the request changes); 403 final; 5xx retried; the rest final.
fn judge(answer: &Answer, chat: &mut Chat) -> (Verdict, String) {
    if succeeded(answer) {
        return (Verdict::Done, String::new());
    }
    let error = api_error(answer);
    let described = format!("{} {}", answer.status, error.description);
    if answer.status == 429 {
        let wait = super::http::seconds(error.retry_after.unwrap_or(1.0));
        return (Verdict::RateLimited(wait), described);
    }
    if let Some(new_id) = error.migrate_to.filter(|_| !chat.migrated) {
        tracing::warn!(
            old = %chat.id, new = %new_id,
            "Telegram chat was upgraded to a supergroup; sending to the new id — update TELEGRAM_HOME_CHANNEL or the job's --deliver"
        );
        chat.id = new_id;
        chat.migrated = true;
        return (Verdict::Changed, described);
    }
    let lower = error.description.to_ascii_lowercase();
    if lower.contains("message thread not found") && chat.thread.is_some() {
        tracing::warn!(chat = %chat.id, "Telegram topic not found; sending to the chat without a topic");
        chat.thread = None;
        return (Verdict::Changed, described);
    }
    match answer.status {
        403 => (Verdict::Final, format!("{described} (not retried)")),
        500..=599 => (Verdict::Retry, described),
        _ => (Verdict::Final, described),
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
