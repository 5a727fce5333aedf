//! WhatsApp sender over Meta's Cloud API (Graph `POST /<version>/<phone number id>/
//! messages` with `WHATSAPP_CLOUD_ACCESS_TOKEN`, as Python Hermes' whatsapp_cloud
//! adapter speaks it; base `WHATSAPP_CLOUD_API_BASE`): text in WhatsApp's own markup,
//! parts of 4096 characters, `MEDIA:` files uploaded to `/media` and sent by id, paced
//! under Meta's pair rate limit, and Graph errors told apart by their `code`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{snippet, Answer, Failure, Link, Pacing, Verdict};
use super::sender::{as_parts, read_media, ready, Description, Open, Opened, Sender, Sending};

/// The Cloud API's limit on a text body.
pub const MAX_CHARS: usize = 4096;
/// Hermes' Graph API version.
const DEFAULT_VERSION: &str = "v20.0";

/// Graph error codes that mean "too many, slow down" (throughput, pair rate, API
/// call rate) and "try again" (temporary, unknown server error).
const RATE_LIMITED: &[i64] = &[4, 80007, 130429, 131048, 131056];
const TEMPORARY: &[i64] = &[1, 2, 131000, 131016];

pub const DESCRIPTION: Description = Description::new(Platform::WhatsAppCloud, open)
    .needs(&[
        "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
        "WHATSAPP_CLOUD_ACCESS_TOKEN",
    ])
    .base("WHATSAPP_CLOUD_API_BASE", "https://graph.facebook.com")
    .home(super::sender::Home::var("WHATSAPP_CLOUD_HOME_CHANNEL"))
    .cut(|text, _| as_parts(parts(text)))
    // Meta's pair rate limit: one message every 6 s to one user on average, in bursts
    // of up to 45; and 80 messages a second per business number.
    .paced(Pacing::window(Duration::from_secs(270), 45, 80));

/// Markdown in WhatsApp's markup: `*bold*`, `~strike~`, headings bold, links as
/// `text (url)`; code blocks and inline code are WhatsApp's own syntax already.
pub fn whatsapp_markup(markdown: &str) -> String {
    static RULES: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> =
        std::sync::OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (r"\*\*([^*\n]+)\*\*", "*$1*"),
            (r"__([^_\n]+)__", "*$1*"),
            (r"~~([^~\n]+)~~", "~$1~"),
            (r"(?m)^#{1,6} +(.+)$", "*$1*"),
            (r"\[([^\]]+)\]\(([^)\s]+)\)", "$1 ($2)"),
        ]
        .into_iter()
        .map(|(pattern, with)| (regex::Regex::new(pattern).expect("a constant regex"), with))
        .collect()
    });
    let mut out = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || line.trim_start().starts_with("```") {
            out.push(line.to_string());
            continue;
        }
        let mut line = line.to_string();
        for (rule, with) in rules {
            line = rule.replace_all(&line, *with).into_owned();
        }
        out.push(line);
    }
    out.join("\n")
}

pub fn parts(text: &str) -> Vec<String> {
    let text = whatsapp_markup(text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(&text, MAX_CHARS, &|s| s.chars().count())
}

/// Opens a WhatsApp id (the phone number with country code, no `+`) for the business
/// number.
fn open(open: Open<'_>) -> Opened<'_> {
    let version = open
        .env
        .get("WHATSAPP_CLOUD_API_VERSION")
        .unwrap_or(DEFAULT_VERSION);
    let number = Number {
        base: format!("{}/{version}/{}", open.base, open.settings[0]),
        token: open.settings[1],
        to: open.chat.to_string(),
        link: open.link,
    };
    ready(number)
}

struct Number<'a> {
    base: String,
    token: &'a str,
    to: String,
    link: Link<'a>,
}

impl Sender for Number<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let content =
            json!({"type": "text", "text": {"body": part.rendered, "preview_url": false}});
        Box::pin(self.message(content))
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let content = upload(self, path).await?;
            self.message(content).await
        })
    }
}

impl Number<'_> {
    fn post(&self, client: &reqwest::Client, path: &str) -> reqwest::RequestBuilder {
        client
            .post(format!("{}/{path}", self.base))
            .bearer_auth(self.token)
    }

    async fn message(&self, content: Value) -> Result<(), Failure> {
        let mut body = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": self.to,
        });
        if let (Some(body), Value::Object(content)) = (body.as_object_mut(), content) {
            body.extend(content);
        }
        let build = |c: &reqwest::Client| self.post(c, "messages").json(&body);
        self.link.item(&build, &judge).await.map(drop)
    }
}

/// Uploads a file to the number's media store; returns the message that sends it:
/// `image`, `video` or `audio` by type, else `document` with its file name.
async fn upload(number: &Number<'_>, path: &Path) -> Result<Value, Failure> {
    let (name, bytes) = read_media(path)?;
    let mime = mime_guess::from_path(&name).first_or_octet_stream();
    let kind = match mime.type_().as_str() {
        "image" if matches!(mime.subtype().as_str(), "jpeg" | "png") => "image",
        "video" if mime.subtype() == "mp4" => "video",
        "audio" => "audio",
        _ => "document",
    };
    let build = |c: &reqwest::Client| {
        let part = reqwest::multipart::Part::bytes(bytes.clone())
            .file_name(name.clone())
            .mime_str(mime.essence_str())
            .unwrap_or_else(|_| reqwest::multipart::Part::bytes(bytes.clone()));
        let form = reqwest::multipart::Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", mime.essence_str().to_string())
            .part("file", part);
        number.post(c, "media").multipart(form)
    };
    let answer = number.link.step(&build, &judge).await?;
    let reply = answer.json();
    let Some(id) = reply["id"].as_str() else {
        return Err(Failure::Transient(format!(
            "the media upload answered without an id: {}",
            snippet(&answer.body)
        )));
    };
    let mut media = json!({"id": id});
    if kind == "document" {
        media["filename"] = json!(name);
    }
    Ok(json!({"type": kind, kind: media}))
}

/// Graph errors are `{"error": {"message", "type", "code", "error_subcode",
/// "fbtrace_id"}}`; throttling comes as 429 or 400 with a rate-limit `code`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body = answer.json();
    let error = &body["error"];
    let code = error["code"].as_i64();
    let text = match error["message"].as_str() {
        Some(m) => format!("{} {m} (Graph error {})", answer.status, error["code"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    if (200..300).contains(&answer.status) {
        return (Verdict::Done, text);
    }
    let throttled = answer.status == 429 || code.is_some_and(|c| RATE_LIMITED.contains(&c));
    let verdict = if throttled {
        let pair = code == Some(131056);
        let wait = answer
            .retry_after
            .unwrap_or(Duration::from_secs(if pair { 6 } else { 2 }));
        Verdict::RateLimited(wait)
    } else if answer.status >= 500 || code.is_some_and(|c| TEMPORARY.contains(&c)) {
        Verdict::Retry
    } else {
        Verdict::Final
    };
    (verdict, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_whatsapp_markup_outside_code() {
        let text = "# Report\n**up** ~~down~~ [graph](https://x.test)\n```\n**kept**\n```";
        assert_eq!(
            whatsapp_markup(text),
            "*Report*\n*up* ~down~ graph (https://x.test)\n```\n**kept**\n```"
        );
    }

    #[test]
    fn graph_throttling_waits_and_a_bad_token_is_final() {
        let answer = |status, body: &str| Answer {
            status,
            retry_after: None,
            body: body.to_string(),
        };
        let pair = answer(
            400,
            r#"{"error": {"message": "pair rate limit hit", "code": 131056}}"#,
        );
        assert!(matches!(judge(&pair).0, Verdict::RateLimited(w) if w == Duration::from_secs(6)));
        let token = answer(
            401,
            r#"{"error": {"message": "Invalid OAuth access token", "code": 190}}"#,
        );
        assert!(matches!(judge(&token).0, Verdict::Final));
        let unknown = answer(
            500,
            r#"{"error": {"message": "An unknown error", "code": 1}}"#,
        );
        assert!(matches!(judge(&unknown).0, Verdict::Retry));
    }
}
