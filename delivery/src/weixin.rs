//! Weixin (personal WeChat) sender over Tencent's iLink bot API, as Python Hermes sends
//! out of process: `POST ilink/bot/sendmessage` with the bot token (`WEIXIN_TOKEN`,
//! `WEIXIN_ACCOUNT_ID`, base `WEIXIN_BASE_URL`), the text in parts of 2000 characters,
//! then each `MEDIA:` file encrypted with AES-128-ECB, uploaded to the CDN
//! (`getuploadurl`, then `WEIXIN_CDN_BASE_URL/upload`) and sent as a media item.
//! It reads the conversation tokens Hermes' gateway keeps, and never writes them.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use aes::cipher::{block_padding::Pkcs7, BlockEncryptMut, KeyInit};
use base64::Engine;
use md5::Digest;
use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{snippet, Answer, Failure, Link, Pace, Pacing, Request, Verdict};
use super::sender::{
    as_parts, read_media, ready, Description, Home, Open, Opened, Sender, Sending,
};

/// Hermes' Weixin message limit, in characters.
pub const MAX_CHARS: usize = 2000;

const DEFAULT_CDN: &str = "https://novac2c.cdn.weixin.qq.com/c2c";
/// Who we say we are, as Hermes' iLink client does (channel 2.2.0).
const APP_ID: &str = "bot";
const CLIENT_VERSION: u32 = (2 << 16) | (2 << 8);
const CHANNEL_VERSION: &str = "2.2.0";

/// iLink's frequency limit; with errmsg "unknown error" it means a stale session instead.
const RATE_LIMITED: i64 = -2;
/// The session (the bot's login, or the conversation token) expired.
const SESSION_EXPIRED: i64 = -14;
/// Marks a session-expired refusal, so that a send with a conversation token is tried
/// once more without it (iLink takes tokenless pushes).
const SESSION_HINT: &str = "the bot's iLink session expired";

/// Lines longer than this are wrapped (hard to copy in WeChat clients).
const COPY_LINE_WIDTH: usize = 120;

/// Message item and media kinds of the iLink protocol.
const ITEM_TEXT: u8 = 1;
const ITEM_IMAGE: u8 = 2;
const ITEM_VOICE: u8 = 3;
const ITEM_FILE: u8 = 4;
const ITEM_VIDEO: u8 = 5;

/// Paced when opened: Hermes leaves `WEIXIN_SEND_CHUNK_DELAY_SECONDS` (1.5 s) between
/// the parts of a reply.
pub const DESCRIPTION: Description = Description::new(Platform::Weixin, open)
    .needs(&["WEIXIN_TOKEN", "WEIXIN_ACCOUNT_ID"])
    .base("WEIXIN_BASE_URL", "https://ilinkai.weixin.qq.com")
    .home(Home::var("WEIXIN_HOME_CHANNEL"))
    .cut(|text, _| as_parts(parts(text)));

/// Where the sender talks to: the API, the CDN, the token, and how long iLink's
/// rate-limit cooldown lasts (`WEIXIN_RATE_LIMIT_CIRCUIT_OPEN_SECONDS`, as Hermes reads it).
struct Ilink<'a> {
    base: &'a str,
    cdn: &'a str,
    token: &'a str,
    chat: String,
    context_token: Option<String>,
    cooldown: Duration,
    link: Link<'a>,
}

/// The parts a reply becomes: Hermes' Weixin rendering (blank runs collapsed, long
/// lines wrapped), one message when it fits, a short chatty reply one bubble per line.
pub fn parts(text: &str) -> Vec<String> {
    let text = wrap_long_lines(&normalize(text));
    if text.trim().is_empty() {
        return Vec::new();
    }
    let count = |s: &str| s.chars().count();
    if count(&text) <= MAX_CHARS {
        return match is_short_chat(&text) {
            true => chat_lines(&text),
            false => vec![text],
        };
    }
    split(&text, MAX_CHARS, &count)
}

/// Opens a user or group (`…@chatroom`). Weixin has no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let (token, account) = (open.settings[0], open.settings[1]);
    let env = open.env;
    let seconds = |var: &str, default: f64| {
        let value = env.get(var).and_then(|v| v.parse::<f64>().ok());
        super::http::seconds(value.filter(|v| v.is_finite()).unwrap_or(default))
    };
    let mut link = open.link;
    link.pace = Pace::Chat(Pacing::spaced(
        seconds("WEIXIN_SEND_CHUNK_DELAY_SECONDS", 1.5),
        20,
    ));
    let ilink = Ilink {
        base: open.base,
        cdn: env
            .get("WEIXIN_CDN_BASE_URL")
            .unwrap_or(DEFAULT_CDN)
            .trim_end_matches('/'),
        token,
        chat: open.chat.to_string(),
        context_token: env
            .home()
            .and_then(|home| context_token(home, account, open.chat)),
        cooldown: seconds("WEIXIN_RATE_LIMIT_CIRCUIT_OPEN_SECONDS", 30.0),
        link,
    };
    ready(ilink)
}

impl Sender for Ilink<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let item = json!({"type": ITEM_TEXT, "text_item": {"text": part.rendered}});
        Box::pin(self.send_item(item))
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(async move {
            let item = self.upload(path).await?;
            self.send_item(item).await
        })
    }
}

/// The conversation token Hermes' gateway stored for this peer
/// (`<home>/weixin/accounts/<account>.context-tokens.json`), if any.
fn context_token(home: &Path, account: &str, chat: &str) -> Option<String> {
    if account.contains(['/', '\\']) || account.starts_with('.') {
        return None;
    }
    let path = home
        .join("weixin")
        .join("accounts")
        .join(format!("{account}.context-tokens.json"));
    let text = std::fs::read_to_string(path).ok()?;
    let tokens: HashMap<String, Value> = serde_json::from_str(&text).ok()?;
    tokens
        .get(chat)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

impl Ilink<'_> {
    /// Posts one message item; a session refusal while using a conversation token is
    /// tried once more without it, as Hermes does.
    async fn send_item(&self, item: Value) -> Result<(), Failure> {
        let client_id = format!("hermes-weixin-{}", hex::encode(rand::random::<[u8; 16]>()));
        let mut context = self.context_token.as_deref();
        loop {
            let mut msg = json!({
                "from_user_id": "", "to_user_id": self.chat, "client_id": client_id,
                "message_type": 2, "message_state": 2, "item_list": [item],
            });
            if let Some(token) = context {
                msg["context_token"] = json!(token);
            }
            let body = json!({"msg": msg});
            let sent = self
                .post("ilink/bot/sendmessage", &body, Request::Item)
                .await;
            match sent {
                Err(Failure::Final(text)) if context.is_some() && text.contains(SESSION_HINT) => {
                    context = None;
                }
                other => return other.map(drop),
            }
        }
    }

    /// One iLink call with Hermes' headers; the body gets iLink's `base_info`.
    async fn post(&self, endpoint: &str, body: &Value, kind: Request) -> Result<Value, Failure> {
        let mut body = body.clone();
        body["base_info"] = json!({"channel_version": CHANNEL_VERSION});
        let url = format!("{}/{endpoint}", self.base);
        let build = |c: &reqwest::Client| {
            // A random uin per request, as the official client sends it.
            let uin = rand::random::<u32>().to_string();
            c.post(&url)
                .header("AuthorizationType", "ilink_bot_token")
                .header("Authorization", format!("Bearer {}", self.token))
                .header(
                    "X-WECHAT-UIN",
                    base64::engine::general_purpose::STANDARD.encode(uin),
                )
                .header("iLink-App-Id", APP_ID)
                .header("iLink-App-ClientVersion", CLIENT_VERSION.to_string())
                .json(&body)
        };
        let judge = |answer: &Answer| judge(answer, endpoint, self.cooldown);
        let answer = self.link.exchange(kind, &build, &judge).await?;
        Ok(answer.json())
    }

    /// Encrypts a file with a fresh key, uploads it to the CDN and returns the message
    /// item that points at it (Hermes' kinds: image, video, `.silk` voice, else file).
    async fn upload(&self, path: &Path) -> Result<Value, Failure> {
        let (name, plain) = read_media(path)?;
        let key: [u8; 16] = rand::random();
        let filekey = hex::encode(rand::random::<[u8; 16]>());
        let md5 = hex::encode(md5::Md5::digest(&plain));
        let ciphertext =
            ecb::Encryptor::<aes::Aes128>::new(&key.into()).encrypt_padded_vec_mut::<Pkcs7>(&plain);
        let mime = mime_guess::from_path(path).first_or_octet_stream();
        let (media_type, item_type) = match mime.type_().as_str() {
            "image" => (1, ITEM_IMAGE),
            "video" => (2, ITEM_VIDEO),
            _ if path.to_string_lossy().ends_with(".silk") => (4, ITEM_VOICE),
            _ => (3, ITEM_FILE),
        };
        let request = json!({
            "filekey": filekey, "media_type": media_type, "to_user_id": self.chat,
            "rawsize": plain.len(), "rawfilemd5": md5, "filesize": ciphertext.len(),
            "no_need_thumb": true, "aeskey": hex::encode(key),
        });
        let answer = self
            .post("ilink/bot/getuploadurl", &request, Request::Step)
            .await?;
        let param = |field: &str| answer[field].as_str().filter(|s| !s.is_empty());
        let url = match (param("upload_full_url"), param("upload_param")) {
            (Some(full), _) => full.to_string(),
            (None, Some(param)) => format!(
                "{}/upload?encrypted_query_param={}&filekey={filekey}",
                self.cdn,
                percent_encoding::utf8_percent_encode(param, percent_encoding::NON_ALPHANUMERIC)
            ),
            (None, None) => {
                return Err(Failure::Final(format!(
                    "iLink getuploadurl returned neither upload_param nor upload_full_url: {}",
                    snippet(&answer.to_string())
                )))
            }
        };
        let encrypted = upload_ciphertext(&self.link, &url, ciphertext.clone()).await?;
        // iLink wants the key as base64 of its hex text, not of its bytes.
        let media = json!({
            "encrypt_query_param": encrypted,
            "aes_key": base64::engine::general_purpose::STANDARD.encode(hex::encode(key)),
            "encrypt_type": 1,
        });
        Ok(match item_type {
            ITEM_IMAGE => json!({"type": ITEM_IMAGE,
                "image_item": {"media": media, "mid_size": ciphertext.len()}}),
            ITEM_VIDEO => json!({"type": ITEM_VIDEO, "video_item": {"media": media,
                "video_size": ciphertext.len(), "play_length": 0, "video_md5": md5}}),
            ITEM_VOICE => json!({"type": ITEM_VOICE, "voice_item": {"media": media,
                "encode_type": 6, "bits_per_sample": 16, "sample_rate": 24000, "playtime": 0}}),
            _ => json!({"type": ITEM_FILE, "file_item": {"media": media,
                "file_name": name, "len": plain.len().to_string()}}),
        })
    }
}

/// POSTs the ciphertext to the CDN; its answer names the uploaded file in the
/// `x-encrypted-param` header. An upload posts nothing visible, so every failure of it
/// may be retried.
async fn upload_ciphertext(
    link: &Link<'_>,
    url: &str,
    ciphertext: Vec<u8>,
) -> Result<String, Failure> {
    let mut retrier = link.retrier();
    loop {
        let sent = link
            .client()
            .post(url)
            .header("Content-Type", "application/octet-stream")
            .timeout(Duration::from_secs(120))
            .body(ciphertext.clone())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                let e = e.without_url();
                retrier
                    .transient(format!("CDN upload failed ({e})"))
                    .await?;
                continue;
            }
        };
        let status = response.status().as_u16();
        let param = response
            .headers()
            .get("x-encrypted-param")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.text().await.unwrap_or_default();
        match (status, param) {
            (200, Some(param)) => return Ok(param),
            (200, None) => {
                return Err(Failure::Final(format!(
                    "CDN upload missing x-encrypted-param header: {}",
                    snippet(&body)
                )))
            }
            (429 | 500..=599, _) => {
                let text = format!("CDN upload HTTP {status}: {}", snippet(&body));
                retrier.transient(text).await?;
            }
            _ => {
                return Err(Failure::Final(format!(
                    "CDN upload HTTP {status}: {}",
                    snippet(&body)
                )))
            }
        }
    }
}

/// iLink answers HTTP 200 with `{"ret": 0}` (or no `ret` at all) when it took the
/// request, else a `ret`/`errcode` and an `errmsg`: -2 is its frequency limit (Hermes
/// cools down, 30 s by default), -14 an expired session. Other statuses fail at the edge.
fn judge(answer: &Answer, endpoint: &str, cooldown: Duration) -> (Verdict, String) {
    if !(200..300).contains(&answer.status) {
        let text = format!(
            "iLink POST {endpoint} HTTP {}: {}",
            answer.status,
            snippet(&answer.body)
        );
        let verdict = match answer.status {
            429 => Verdict::RateLimited(answer.retry_after.unwrap_or(cooldown)),
            500..=599 => Verdict::Retry,
            _ => Verdict::Final,
        };
        return (verdict, text);
    }
    let Ok(body) = serde_json::from_str::<Value>(&answer.body) else {
        let text = format!("iLink {endpoint} answered: {}", snippet(&answer.body));
        return (Verdict::Final, text);
    };
    let code = |field: &str| body[field].as_i64().filter(|c| *c != 0);
    let (ret, errcode) = (code("ret"), code("errcode"));
    let Some(failed) = ret.or(errcode) else {
        return (Verdict::Done, String::new());
    };
    let errmsg = [&body["errmsg"], &body["msg"]]
        .into_iter()
        .find_map(|v| v.as_str().filter(|s| !s.is_empty()))
        .unwrap_or("unknown error");
    let codes = match (ret, errcode) {
        (Some(r), Some(e)) => format!("ret={r} errcode={e}"),
        (Some(r), None) => format!("ret={r}"),
        (None, _) => format!("errcode={failed}"),
    };
    let stale = [ret, errcode].contains(&Some(RATE_LIMITED)) && errmsg == "unknown error";
    if [ret, errcode].contains(&Some(SESSION_EXPIRED)) || stale {
        let text = format!(
            "iLink {endpoint} error: {codes} errmsg={errmsg} ({SESSION_HINT}: log the bot in again and update WEIXIN_TOKEN)"
        );
        return (Verdict::Final, text);
    }
    if [ret, errcode].contains(&Some(RATE_LIMITED)) {
        let text = format!("iLink {endpoint} rate limited: {codes} errmsg={errmsg}");
        return (Verdict::RateLimited(cooldown), text);
    }
    let text = format!("iLink {endpoint} error: {codes} errmsg={errmsg}");
    (Verdict::Final, text)
}

fn is_fence(line: &str) -> bool {
    line.trim().starts_with("```")
}

/// Lines right-trimmed and runs of blank lines outside code blocks cut to one.
fn normalize(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let (mut in_code, mut blank_run) = (false, 0);
    for line in text.lines().map(str::trim_end) {
        if is_fence(line) {
            in_code = !in_code;
        } else if !in_code && line.is_empty() {
            blank_run += 1;
            if blank_run == 1 {
                out.push("");
            }
            continue;
        }
        blank_run = 0;
        out.push(line);
    }
    out.join("\n").trim().to_string()
}

/// Lines over [`COPY_LINE_WIDTH`] characters outside code blocks and tables are wrapped
/// at spaces (a longer word keeps its own line).
fn wrap_long_lines(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if is_fence(line) {
            in_code = !in_code;
        }
        let table = line.trim_start().starts_with('|');
        if in_code || is_fence(line) || table || line.chars().count() <= COPY_LINE_WIDTH {
            out.push(line.to_string());
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut current = indent.to_string();
        for word in line.split_whitespace() {
            let fresh = current.trim().is_empty();
            let width = current.chars().count() + usize::from(!fresh) + word.chars().count();
            if !fresh && width > COPY_LINE_WIDTH {
                out.push(std::mem::take(&mut current));
            } else if !fresh {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push(current);
    }
    out.join("\n").trim().to_string()
}

/// Hermes sends a short chatty reply (2 to 6 short plain lines, no heading first) as
/// one bubble per line.
fn is_short_chat(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if !(2..=6).contains(&lines.len()) {
        return false;
    }
    let first = lines[0].trim();
    let heading = first.starts_with('#')
        || (first.chars().count() <= 24 && (first.ends_with(':') || first.ends_with('：')));
    let chatty = |line: &&str| {
        let s = line.trim();
        let numbered = s
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let bold_only = s.len() > 4 && s.starts_with("**") && s.ends_with("**");
        s.chars().count() <= 48
            && !line.starts_with([' ', '\t'])
            && !s.starts_with(['>', '-', '*', '【', '#', '|'])
            && !numbered
            && !bold_only
    };
    !heading && lines.iter().all(chatty)
}

/// One unit per line, a fenced code block kept whole.
fn chat_lines(text: &str) -> Vec<String> {
    let mut units = Vec::new();
    let mut fence: Option<Vec<&str>> = None;
    for line in text.lines() {
        match fence.as_mut() {
            Some(block) => {
                block.push(line);
                if is_fence(line) {
                    units.push(block.join("\n"));
                    fence = None;
                }
            }
            None if is_fence(line) => fence = Some(vec![line]),
            None if !line.trim().is_empty() => units.push(line.trim_end().to_string()),
            None => {}
        }
    }
    if let Some(block) = fence {
        units.push(block.join("\n"));
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_normalized_and_long_lines_wrapped_outside_code() {
        let long = "word ".repeat(40);
        let text = format!("a  \n\n\n\nb\n```\n{long}\n\n\n```\n{long}");
        let parts = parts(&text);
        assert_eq!(parts.len(), 1);
        let lines: Vec<&str> = parts[0].lines().collect();
        assert_eq!(lines[..3], ["a", "", "b"]);
        assert!(parts[0].contains(&format!("```\n{}\n\n\n```", long.trim_end())));
        let wrapped: Vec<&&str> = lines.iter().skip(8).collect();
        assert_eq!(wrapped.len(), 2, "{lines:?}");
        assert!(wrapped.iter().all(|l| l.chars().count() <= COPY_LINE_WIDTH));
    }

    #[test]
    fn a_short_chatty_reply_is_one_bubble_per_line() {
        assert_eq!(parts("Done.\nAll good."), ["Done.", "All good."]);
        assert_eq!(parts("Status:\nAll good."), ["Status:\nAll good."]);
        assert_eq!(parts("- one\n- two"), ["- one\n- two"]);
        assert_eq!(parts("one line"), ["one line"]);
    }

    #[test]
    fn ilink_errors_are_read_from_the_body() {
        let cooldown = Duration::from_secs(30);
        let answer = |status, body: &str| Answer {
            status,
            retry_after: None,
            body: body.to_string(),
        };
        let read = |a: Answer| judge(&a, "ilink/bot/sendmessage", cooldown);
        assert!(matches!(read(answer(200, r#"{"ret":0}"#)).0, Verdict::Done));
        assert!(matches!(read(answer(200, "{}")).0, Verdict::Done));
        let (verdict, text) = read(answer(200, r#"{"ret":-2,"errmsg":"freq limit"}"#));
        assert!(matches!(verdict, Verdict::RateLimited(d) if d == cooldown));
        assert_eq!(
            text,
            "iLink ilink/bot/sendmessage rate limited: ret=-2 errmsg=freq limit"
        );
        let (verdict, text) = read(answer(200, r#"{"ret":-2,"errmsg":"unknown error"}"#));
        assert!(matches!(verdict, Verdict::Final) && text.contains(SESSION_HINT));
        assert!(matches!(read(answer(502, "bad gateway")).0, Verdict::Retry));
        let (verdict, text) = read(answer(403, "forbidden"));
        assert!(matches!(verdict, Verdict::Final));
        assert_eq!(text, "iLink POST ilink/bot/sendmessage HTTP 403: forbidden");
    }
}
