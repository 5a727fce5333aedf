//! Matrix sender over the Client-Server API as Python Hermes speaks it: `PUT
//! /_matrix/client/v3/rooms/<room>/send/m.room.message/<txn>` on `MATRIX_HOMESERVER`
//! with `MATRIX_ACCESS_TOKEN`, the reply as plain `body` plus HTML `formatted_body`,
//! parts of 16000 characters, a thread as `m.thread`, `MEDIA:` files uploaded to the
//! media repository, `M_LIMIT_EXCEEDED` waited out. It cannot encrypt: an end-to-end
//! encrypted room is refused before anything is sent, never posted to in clear.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{seconds, snippet, Answer, Failure, Link, Pacing, Verdict};
use super::sender::{opened, read_media, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' part size for Matrix (`MATRIX_MAX_MESSAGE_LENGTH`); an event, HTML
/// included, must stay under the homeserver's 64 KiB.
pub const MAX_CHARS: usize = 16_000;

/// Synapse's default `rc_message` allows a user bursts of 10 messages, then one every
/// 5 s; at most 10 in any 50 s never crosses it. The limit is per user, not per room,
/// so the pacing key is the homeserver: every room of the account shares it.
const PACING: Pacing = Pacing::window(Duration::from_secs(50), 10, 50);

pub const DESCRIPTION: Description = Description::new(Platform::Matrix, open)
    .needs(&["MATRIX_HOMESERVER", "MATRIX_ACCESS_TOKEN"])
    .home(Home::var("MATRIX_HOME_ROOM"))
    .names('#')
    // Each part is its Markdown (the `body`) and its HTML (the `formatted_body`),
    // measured on the HTML, the longer of the two.
    .split(Rendering::Html, MAX_CHARS)
    .paced(PACING);

struct Room<'a> {
    homeserver: &'a str,
    token: &'a str,
    id: String,
    thread: Option<&'a str>,
    /// Per send: a retried request reuses its transaction id, so the homeserver
    /// takes it once.
    txn_prefix: String,
    /// Paced per homeserver, looked up per room.
    link: Link<'a>,
}

impl Room<'_> {
    fn path(&self) -> String {
        percent_encoding::utf8_percent_encode(&self.id, percent_encoding::NON_ALPHANUMERIC)
            .to_string()
    }

    fn request(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        url: &str,
    ) -> reqwest::RequestBuilder {
        client.request(method, url).bearer_auth(self.token)
    }
}

/// Opens a room id (`!room:server`), under a thread root when given, after making sure
/// it is not encrypted.
fn open(open: Open<'_>) -> Opened<'_> {
    let mut link = open.link;
    link.key = open.settings[0].to_string();
    let room = Room {
        homeserver: open.settings[0],
        token: open.settings[1],
        id: open.chat.to_string(),
        thread: open.thread,
        txn_prefix: format!("hermes-cron-{:016x}", rand::random::<u64>()),
        link,
    };
    Box::pin(async move {
        refuse_encrypted(&room).await?;
        opened(room)
    })
}

impl Sender for Room<'_> {
    fn text<'a>(&'a mut self, item: usize, part: &'a Part) -> Sending<'a> {
        let content = json!({
            "msgtype": "m.text",
            "body": part.source,
            "format": "org.matrix.custom.html",
            "formatted_body": part.rendered,
        });
        Box::pin(post_event(self, item, content))
    }

    fn file<'a>(&'a mut self, item: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let content = upload(self, path).await?;
            post_event(self, item, content).await
        })
    }
}

/// An encrypted room has an `m.room.encryption` state event; without one the answer
/// is 404 `M_NOT_FOUND`.
async fn refuse_encrypted(room: &Room<'_>) -> Result<(), Failure> {
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/state/m.room.encryption/",
        room.homeserver,
        room.path()
    );
    let build = |c: &reqwest::Client| room.request(c, reqwest::Method::GET, &url);
    let judge_state = |answer: &Answer| match answer.status {
        404 => (Verdict::Done, String::new()),
        _ => judge(answer),
    };
    let answer = room.link.step(&build, &judge_state).await?;
    if answer.status == 404 {
        return Ok(());
    }
    Err(Failure::Final(format!(
        "room {} is end-to-end encrypted and hermes-cron cannot encrypt: deliver to an unencrypted room",
        room.id
    )))
}

async fn post_event(room: &Room<'_>, index: usize, mut content: Value) -> Result<(), Failure> {
    if let Some(root) = room.thread {
        content["m.relates_to"] = json!({
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": true,
            "m.in_reply_to": {"event_id": root},
        });
    }
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/send/m.room.message/{}-{index}",
        room.homeserver,
        room.path(),
        room.txn_prefix
    );
    let build = |c: &reqwest::Client| room.request(c, reqwest::Method::PUT, &url).json(&content);
    room.link.item(&build, &judge).await.map(drop)
}

/// Uploads a file to the media repository; returns the message content that shows it.
async fn upload(room: &Room<'_>, path: &Path) -> Result<Value, Failure> {
    let (name, bytes) = read_media(path)?;
    let mime = mime_guess::from_path(&name).first_or_octet_stream();
    let url = format!("{}/_matrix/media/v3/upload", room.homeserver);
    let build = |c: &reqwest::Client| {
        room.request(c, reqwest::Method::POST, &url)
            .query(&[("filename", name.as_str())])
            .header(reqwest::header::CONTENT_TYPE, mime.essence_str())
            .body(bytes.clone())
    };
    let answer = room.link.step(&build, &judge).await?;
    let reply = answer.json();
    let Some(uri) = reply["content_uri"].as_str() else {
        return Err(Failure::Transient(format!(
            "the media upload answered without a content_uri: {}",
            snippet(&answer.body)
        )));
    };
    let msgtype = match mime.type_().as_str() {
        "image" => "m.image",
        "video" => "m.video",
        "audio" => "m.audio",
        _ => "m.file",
    };
    Ok(json!({
        "msgtype": msgtype,
        "body": name,
        "url": uri,
        "info": {"mimetype": mime.essence_str(), "size": bytes.len()},
    }))
}

/// Matrix errors are `{"errcode": "M_UNKNOWN_TOKEN", "error": "…"}`; a 429
/// `M_LIMIT_EXCEEDED` names `retry_after_ms` (or a `Retry-After` header).
fn judge(answer: &Answer) -> (Verdict, String) {
    let text = answer.described(|body| {
        let (code, error) = (body["errcode"].as_str()?, body["error"].as_str()?);
        Some(format!("{code}: {error}"))
    });
    let wait = answer.json()["retry_after_ms"]
        .as_f64()
        .map(|ms| seconds(ms / 1000.0))
        .unwrap_or(Duration::from_secs(1));
    (answer.by_status(wait), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Vec<Part> {
        DESCRIPTION.parts(text, &[])
    }

    #[test]
    fn a_part_is_its_markdown_body_and_its_html() {
        let parts = parts("a **b**\nc\n\n```\nx\ny\n```\nd");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].source, "a **b**\nc\n\n```\nx\ny\n```\nd");
        assert_eq!(
            parts[0].rendered,
            "a <b>b</b><br>c\n<pre><code>x\ny</code></pre>\nd"
        );
    }

    #[test]
    fn a_rate_limit_waits_retry_after_ms() {
        let answer = Answer {
            status: 429,
            retry_after: None,
            body: r#"{"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": 2500}"#.into(),
        };
        let (verdict, text) = judge(&answer);
        assert!(
            matches!(verdict, Verdict::RateLimited(w) if w == std::time::Duration::from_millis(2500))
        );
        assert_eq!(text, "429 M_LIMIT_EXCEEDED: Too Many Requests");
    }
}
