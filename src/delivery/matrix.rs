//! Matrix sender over the Client-Server API as Python Hermes speaks it: `PUT
//! /_matrix/client/v3/rooms/<room>/send/m.room.message/<txn>` on `MATRIX_HOMESERVER`
//! with `MATRIX_ACCESS_TOKEN`, the reply as plain `body` plus HTML `formatted_body`,
//! parts of 16000 characters, a thread as `m.thread`, `MEDIA:` files uploaded to the
//! media repository, `M_LIMIT_EXCEEDED` waited out. It cannot encrypt: an end-to-end
//! encrypted room is refused before anything is sent, never posted to in clear.

use std::path::Path;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split_parts, Part, Rendering};
use super::http::{
    client, exchange, seconds, settings, snippet, Answer, Failure, Pacing, Request, Verdict,
};
use super::telegram::read_media;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Matrix;

/// Hermes' part size for Matrix (`MATRIX_MAX_MESSAGE_LENGTH`); an event, HTML
/// included, must stay under the homeserver's 64 KiB.
pub const MAX_CHARS: usize = 16_000;

/// Synapse's default `rc_message` allows a user bursts of 10 messages, then one every
/// 5 s; at most 10 in any 50 s never crosses it. The limit is per user, not per room,
/// so the pacing key is the homeserver: every room of the account shares it.
const PACING: Pacing = Pacing {
    spacing: std::time::Duration::ZERO,
    window: std::time::Duration::from_secs(50),
    window_max: 10,
    global_per_sec: 50,
};

/// The parts a text is sent in: each its Markdown (the `body`) and its HTML (the
/// `formatted_body`), measured on the HTML, the longer of the two.
pub fn parts(text: &str) -> Vec<Part> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split_parts(text, Rendering::Html, MAX_CHARS, &|s| s.chars().count())
}

struct Room<'a> {
    homeserver: &'a str,
    token: &'a str,
    id: &'a str,
    thread: Option<&'a str>,
    /// Per send: a retried request reuses its transaction id, so the homeserver
    /// takes it once.
    txn_prefix: String,
}

impl Room<'_> {
    fn path(&self) -> String {
        percent_encoding::utf8_percent_encode(self.id, percent_encoding::NON_ALPHANUMERIC)
            .to_string()
    }

    fn request(&self, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
        client().request(method, url).bearer_auth(self.token)
    }
}

/// Sends to a room id (`!room:server`), under a thread root when given, skipping
/// `skip` items already delivered; see [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    room: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let room = &super::channels::resolve(env, PLATFORM, room)
        .await
        .map_err(|f| (f, skip))?;
    let room = Room {
        homeserver: vars[0],
        token: vars[1],
        id: room,
        thread,
        txn_prefix: format!("hermes-cron-{:016x}", rand::random::<u64>()),
    };
    let parts = parts(text);
    let total = parts.len() + media.len();
    if skip < total {
        refuse_encrypted(&room).await.map_err(|f| (f, skip))?;
    }
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let content = json!({
            "msgtype": "m.text",
            "body": part.source,
            "format": "org.matrix.custom.html",
            "formatted_body": part.rendered,
        });
        post_event(&room, index, content)
            .await
            .map_err(|f| (f, index))?;
    }
    for (offset, path) in media.iter().enumerate() {
        let index = parts.len() + offset;
        if index < skip {
            continue;
        }
        let content = upload(&room, Path::new(path))
            .await
            .map_err(|f| (f, index))?;
        post_event(&room, index, content)
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(total)
}

/// An encrypted room has an `m.room.encryption` state event; without one the answer
/// is 404 `M_NOT_FOUND`.
async fn refuse_encrypted(room: &Room<'_>) -> Result<(), Failure> {
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/state/m.room.encryption/",
        room.homeserver,
        room.path()
    );
    let build = || room.request(reqwest::Method::GET, url.clone());
    let judge_state = |answer: &Answer| match answer.status {
        404 => (Verdict::Done, String::new()),
        _ => judge(answer),
    };
    let answer = exchange(PLATFORM, room.id, None, Request::Step, &build, &judge_state).await?;
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
    let build = || {
        room.request(reqwest::Method::PUT, url.clone())
            .json(&content)
    };
    exchange(
        PLATFORM,
        room.homeserver,
        Some(PACING),
        Request::Item,
        &build,
        &judge,
    )
    .await
    .map(drop)
}

/// Uploads a file to the media repository; returns the message content that shows it.
async fn upload(room: &Room<'_>, path: &Path) -> Result<Value, Failure> {
    let (name, bytes) = read_media(path)?;
    let mime = mime_guess::from_path(&name).first_or_octet_stream();
    let url = format!("{}/_matrix/media/v3/upload", room.homeserver);
    let build = || {
        room.request(reqwest::Method::POST, url.clone())
            .query(&[("filename", name.as_str())])
            .header(reqwest::header::CONTENT_TYPE, mime.essence_str())
            .body(bytes.clone())
    };
    let answer = exchange(PLATFORM, room.id, None, Request::Step, &build, &judge).await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
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
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let text = match (body["errcode"].as_str(), body["error"].as_str()) {
        (Some(code), Some(error)) => format!("{} {code}: {error}", answer.status),
        _ => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(
            answer
                .retry_after
                .or(body["retry_after_ms"]
                    .as_f64()
                    .map(|ms| seconds(ms / 1000.0)))
                .unwrap_or(std::time::Duration::from_secs(1)),
        ),
        500..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}

#[cfg(test)]
mod tests {
    use super::*;

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
