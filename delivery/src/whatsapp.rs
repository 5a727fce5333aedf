//! WhatsApp sender through Hermes' local Baileys bridge, as Python Hermes' whatsapp
//! plugin speaks to it: `POST /send` (`chatId`, `message`) and `POST /send-media`
//! (`chatId`, `filePath`, `mediaType`, `caption`, `fileName`) on the bridge
//! (`WHATSAPP_API_BASE`, default `http://localhost:3000`), enabled by `WHATSAPP_ENABLED`.
//! The bridge reads `MEDIA:` files from disk itself, so only their paths travel.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{snippet, Answer, Failure, Link, Pacing, Verdict};
use super::sender::{
    as_parts, opened, read_media, Description, Home, Open, Opened, Sender, Sending,
};

/// Hermes' part size for the bridge (its `max_message_length`).
pub const MAX_CHARS: usize = 4096;

/// Files that carry a caption on their bubble (Hermes' captionable kinds): a reply with
/// exactly one of these rides on it instead of going as a message of its own.
const CAPTIONABLE: &[&str] = &[
    "jpg", "jpeg", "png", "webp", "gif", "mp4", "mov", "avi", "mkv", "3gp", "pdf", "doc", "docx",
    "txt", "md", "csv", "xlsx", "zip",
];

pub const DESCRIPTION: Description = Description::new(Platform::WhatsApp, open)
    .needs(&["WHATSAPP_ENABLED"])
    // The bridge Hermes starts listens on loopback port 3000 unless told otherwise.
    .base("WHATSAPP_API_BASE", "http://localhost:3000")
    .home(Home::var("WHATSAPP_HOME_CHANNEL"))
    .cut(parts)
    // Hermes leaves 0.3 s between the parts of one reply so WhatsApp does not flag the
    // account for bursts.
    .paced(Pacing::spaced(Duration::from_millis(300), 20));

/// The parts of a reply: none when it rides on its only file as a caption.
fn parts(text: &str, media: &[String]) -> Vec<Part> {
    if text.trim().is_empty() || caption_for(text, media).is_some() {
        return Vec::new();
    }
    as_parts(split(text, MAX_CHARS, &|s| s.chars().count()))
}

/// A chat as the bridge wants it: a bare phone number becomes `<digits>@s.whatsapp.net`,
/// a `user:device@server` id loses its device, any other JID is kept.
pub fn jid(chat: &str) -> String {
    let chat = chat.trim();
    if let Some((user, server)) = chat.split_once('@') {
        let user = user.split(':').next().unwrap_or(user);
        return format!("{user}@{server}");
    }
    let phone_like = chat
        .chars()
        .all(|c| c.is_ascii_digit() || " ().-+".contains(c))
        && chat.chars().skip(1).all(|c| c != '+');
    let digits: String = chat.chars().filter(char::is_ascii_digit).collect();
    match phone_like && !digits.is_empty() {
        true => format!("{digits}@s.whatsapp.net"),
        false => chat.to_string(),
    }
}

fn extension(path: &str) -> String {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The bridge's `mediaType` for a file: it picks the native bubble by it.
fn media_type(path: &str) -> &'static str {
    match extension(path).as_str() {
        "jpg" | "jpeg" | "png" | "webp" | "gif" => "image",
        "mp4" | "mov" | "avi" | "mkv" | "webm" | "3gp" => "video",
        "ogg" | "opus" | "mp3" | "wav" | "m4a" | "flac" => "audio",
        _ => "document",
    }
}

/// The caption a reply becomes when it rides on its only file, as Hermes decides it.
fn caption_for(text: &str, media: &[String]) -> Option<String> {
    let text = text.trim();
    let [path] = media else { return None };
    let fits = !text.is_empty() && text.chars().count() <= MAX_CHARS;
    (fits && CAPTIONABLE.contains(&extension(path).as_str())).then(|| text.to_string())
}

/// Opens a chat (phone number or JID) on the bridge, once it is enabled. WhatsApp has
/// no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let enabled = open.settings[0];
    let bridge = Bridge {
        base: open.base,
        chat: jid(open.chat),
        caption: caption_for(open.text, open.media),
        link: open.link,
    };
    Box::pin(async move {
        if !matches!(enabled.to_ascii_lowercase().as_str(), "true" | "1" | "yes") {
            return Err(Failure::Final(format!(
                "WHATSAPP_ENABLED is '{enabled}', not true (set WHATSAPP_ENABLED=true once the bridge is paired)"
            )));
        }
        opened(bridge)
    })
}

struct Bridge<'a> {
    base: &'a str,
    chat: String,
    /// The reply, when it rides on its only file.
    caption: Option<String>,
    link: Link<'a>,
}

impl Sender for Bridge<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"chatId": self.chat, "message": part.rendered});
        Box::pin(async move { self.post("send", &body).await })
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(self.media(path))
    }
}

impl Bridge<'_> {
    async fn post(&self, endpoint: &str, body: &Value) -> Result<(), Failure> {
        let url = format!("{}/{endpoint}", self.base);
        let build = |c: &reqwest::Client| c.post(&url).json(body);
        self.link.item(&build, &judge).await.map(drop)
    }

    /// Sends one file as its native bubble; a document keeps its file name.
    async fn media(&self, path: &Path) -> Result<(), Failure> {
        // The bridge reads the file itself; this only applies our refusals (a
        // credential file, a missing or oversized file) before asking it to.
        let (name, _) = read_media(path)?;
        let path = path.to_string_lossy();
        let kind = media_type(&path);
        let mut body = json!({"chatId": self.chat, "filePath": path, "mediaType": kind});
        if kind == "document" {
            body["fileName"] = json!(name);
        }
        if let Some(caption) = &self.caption {
            body["caption"] = json!(caption);
        }
        self.post("send-media", &body).await
    }
}

/// The bridge answers `{"success": true, "messageId": …}`, or `{"error": "…"}` with 503
/// while WhatsApp is not connected (nothing left: worth retrying), 400 for a bad
/// request, 404 for a missing file and 500 when the send failed inside Baileys — which
/// includes its send timeout, after which the message may still arrive, so a 500 is
/// never repeated.
fn judge(answer: &Answer) -> (Verdict, String) {
    let error = answer.json()["error"]
        .as_str()
        .map_or_else(|| snippet(&answer.body), str::to_string);
    let text = format!("WhatsApp bridge error ({}): {error}", answer.status);
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        502..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_become_bridge_jids() {
        assert_eq!(jid("+1 (555) 765-4321"), "15557654321@s.whatsapp.net");
        assert_eq!(jid("15557654321"), "15557654321@s.whatsapp.net");
        assert_eq!(jid("120363040@g.us"), "120363040@g.us");
        assert_eq!(
            jid("15557654321:12@s.whatsapp.net"),
            "15557654321@s.whatsapp.net"
        );
        assert_eq!(jid("team-room"), "team-room");
        assert_eq!(jid("1+2"), "1+2");
    }

    #[test]
    fn only_one_captionable_file_takes_the_text_as_caption() {
        let one = |p: &str| vec![p.to_string()];
        assert_eq!(
            caption_for(" hi ", &one("/a/chart.png")),
            Some("hi".to_string())
        );
        assert_eq!(caption_for("hi", &one("/a/voice.ogg")), None);
        assert_eq!(caption_for("", &one("/a/chart.png")), None);
        assert_eq!(
            caption_for("hi", &["/a.png".to_string(), "/b.png".to_string()]),
            None
        );
        assert_eq!(caption_for(&"x".repeat(4097), &one("/a/chart.png")), None);
    }
}
