//! iMessage sender through a BlueBubbles server, as Python Hermes' bluebubbles adapter
//! speaks its REST API: the password in the `password` query parameter of every call
//! on `BLUEBUBBLES_SERVER_URL`, a chat named by GUID or looked up by its identifier
//! (`POST /api/v1/chat/query`), plain text with one bubble per paragraph (`POST
//! /api/v1/message/text`), files uploaded to `/api/v1/message/attachment`. The
//! password is never shown: errors carry the server's words, not the URL.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{snippet, Answer, Failure, Link, Verdict};
use super::sender::{
    as_parts, opened, read_media, Description, Home, Open, Opened, Sender, Sending,
};
use super::sms::plain_text;

/// Hermes' bubble size.
pub const MAX_CHARS: usize = 4000;

pub const DESCRIPTION: Description = Description::new(Platform::BlueBubbles, open)
    .needs(&["BLUEBUBBLES_SERVER_URL", "BLUEBUBBLES_PASSWORD"])
    .home(Home::var("BLUEBUBBLES_HOME_CHANNEL"))
    .cut(|text, _| as_parts(bubbles(text)));

/// The bubbles of a reply, as Hermes cuts them: plain text, one bubble per paragraph
/// (a code block stays one bubble), a paragraph over the limit cut into pieces without
/// part markers — bubbles read as a conversation, not as numbered parts.
pub fn bubbles(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in paragraphs(markdown) {
        let plain = plain_text(&block).trim().to_string();
        if plain.is_empty() {
            continue;
        }
        for piece in split(&plain, MAX_CHARS, &|s| s.chars().count()) {
            out.push(strip_marker(&piece));
        }
    }
    out
}

/// Paragraphs split on blank lines, a fenced code block kept whole with its fences.
fn paragraphs(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        if !in_code && line.trim().is_empty() {
            if !current.is_empty() {
                out.push(current.join("\n"));
                current.clear();
            }
            continue;
        }
        current.push(line);
        in_code ^= fence;
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// Drops the `(n/m)` marker [`split`] appends.
fn strip_marker(piece: &str) -> String {
    match piece.rfind("\n\n(") {
        Some(at) if piece.ends_with(')') => piece[..at].trim_end().to_string(),
        _ => piece.to_string(),
    }
}

/// Opens a chat GUID or a chat identifier (phone number, email) on the server.
fn open(open: Open<'_>) -> Opened<'_> {
    let raw = open.settings[0].trim_end_matches('/');
    let lower = raw.to_ascii_lowercase();
    let has_scheme = lower.starts_with("http://") || lower.starts_with("https://");
    let mut server = Server {
        base: match has_scheme {
            true => raw.to_string(),
            false => format!("http://{raw}"),
        },
        password: open.settings[1],
        chat: open.chat.to_string(),
        guid: String::new(),
        link: open.link,
    };
    Box::pin(async move {
        server.guid = server.chat_guid().await?;
        opened(server)
    })
}

struct Server<'a> {
    base: String,
    password: &'a str,
    chat: String,
    guid: String,
    link: Link<'a>,
}

impl Sender for Server<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let url = self.url("message/text");
        let body =
            json!({"chatGuid": self.guid, "tempGuid": temp_guid(), "message": part.rendered});
        Box::pin(async move {
            let build = |c: &reqwest::Client| c.post(&url).json(&body);
            self.link.item(&build, &judge).await.map(drop)
        })
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(self.attachment(path))
    }
}

impl Server<'_> {
    fn url(&self, path: &str) -> String {
        let password = percent_encoding::utf8_percent_encode(
            self.password,
            percent_encoding::NON_ALPHANUMERIC,
        );
        format!("{}/api/v1/{path}?password={password}", self.base)
    }

    /// The chat's GUID: as given when it holds `;` (`iMessage;-;+15551234567`), else the
    /// chat whose identifier is exactly the target (never a group that merely has the
    /// contact in it, so a message for one person cannot land in a group).
    async fn chat_guid(&self) -> Result<String, Failure> {
        if self.chat.contains(';') {
            return Ok(self.chat.clone());
        }
        let url = self.url("chat/query");
        let query = json!({"limit": 100, "offset": 0});
        let build = |c: &reqwest::Client| c.post(&url).json(&query);
        let answer = self.link.step(&build, &judge).await?;
        let body = answer.json();
        let chats = body["data"].as_array().cloned().unwrap_or_default();
        let found = chats.iter().find(|chat| {
            let identifier = chat["chatIdentifier"]
                .as_str()
                .or(chat["identifier"].as_str());
            identifier == Some(self.chat.as_str())
        });
        found
            .and_then(|chat| chat["guid"].as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                Failure::Final(format!(
                    "BlueBubbles chat not found for target: {} (name it by its GUID, e.g. iMessage;-;{})",
                    self.chat, self.chat
                ))
            })
    }

    async fn attachment(&self, path: &Path) -> Result<(), Failure> {
        let (name, bytes) = read_media(path)?;
        let url = self.url("message/attachment");
        let temp = temp_guid();
        let build = |c: &reqwest::Client| {
            let file = reqwest::multipart::Part::bytes(bytes.clone())
                .file_name(name.clone())
                .mime_str("application/octet-stream")
                .unwrap_or_else(|_| reqwest::multipart::Part::bytes(bytes.clone()));
            let form = reqwest::multipart::Form::new()
                .part("attachment", file)
                .text("chatGuid", self.guid.clone())
                .text("name", name.clone())
                .text("tempGuid", temp.clone());
            c.post(&url).multipart(form)
        };
        self.link.item(&build, &judge).await.map(drop)
    }
}

/// The client-side id the server echoes back for a message being sent.
fn temp_guid() -> String {
    format!("temp-{}", hex::encode(rand::random::<[u8; 16]>()))
}

/// The server answers `{"status": 200, "message": "Message sent!", "data": {…}}`;
/// errors are `{"status": 401, "message": "Unauthorized", "error": {"type": …,
/// "message": …}}`. A 500 is the server's own send failing (AppleScript, Private
/// API), which may have put the message out: it is not repeated. 502–504 come from the
/// proxy or tunnel in front of the Mac: nothing reached it, so they are retried.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body = answer.json();
    let text = match (body["message"].as_str(), body["error"]["message"].as_str()) {
        (Some(message), Some(detail)) if detail != message => {
            format!("{} {message}: {detail}", answer.status)
        }
        (Some(message), _) => format!("{} {message}", answer.status),
        _ => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        502..=504 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_paragraph_is_a_plain_bubble_and_code_stays_whole() {
        let text = "**Hi** there\n\n```sh\nls\n\nls -l\n```\n\n# Done\nbye";
        // A heading and the line under it are two blocks of the plain rendering.
        assert_eq!(bubbles(text), ["Hi there", "ls\n\nls -l", "Done\n\nbye"]);
        let long = "word ".repeat(1000);
        let pieces = bubbles(&long);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| p.chars().count() <= MAX_CHARS));
        assert!(!pieces[0].ends_with(')'), "{}", pieces[0]);
    }
}
