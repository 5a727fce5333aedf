//! WeCom (Enterprise WeChat) AI bot sender over the bot's WebSocket, as Python Hermes'
//! wecom adapter sends out of process: connect to `WECOM_WEBSOCKET_URL` (default
//! `wss://openws.work.weixin.qq.com`), subscribe with `WECOM_BOT_ID` and `WECOM_SECRET`,
//! then `aibot_send_msg` each Markdown part (4000 characters) and each `MEDIA:` file
//! (uploaded first in 512 KiB chunks); every frame is answered by one with its `req_id`.
//! One connection per delivery; it never answers or reads the chats' messages.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use md5::Digest;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as Frame;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{report, Failure, Flight, Link, Pacing, Request, Verdict};
use super::sender::{read_media, ready, Description, Home, Open, Opened, Sender, Sending};
use super::websocket::{connect, Lost, Socket};
use crate::BoxFuture;

/// Hermes' WeCom message limit, in characters.
pub const MAX_CHARS: usize = 4000;

const DEFAULT_URL: &str = "wss://openws.work.weixin.qq.com";
/// Hermes waits 20 s for the connection and its subscription, 15 s for each answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Uploads go in chunks of 512 KiB; WeCom takes files up to 20 MB, images and videos up
/// to 10 MB and AMR voice up to 2 MB (bigger ones, and other audio, go as plain files).
const CHUNK: usize = 512 * 1024;
const MB: usize = 1024 * 1024;
const MAX_FILE: usize = 20 * MB;

/// A bot may send about 30 messages a minute to one chat.
const PACING: Pacing = Pacing::window(Duration::from_millis(60_500), 30, 20);

/// Frequency limits: wait a minute.
const RATE_LIMITED: &[i64] = &[45009, 45033];
/// "System busy, try again".
const BUSY: i64 = -1;

pub const DESCRIPTION: Description = Description::new(Platform::WeCom, open)
    .needs(&["WECOM_BOT_ID", "WECOM_SECRET"])
    .home(Home::var("WECOM_HOME_CHANNEL"))
    .split(Rendering::Markdown, MAX_CHARS)
    .paced(PACING);

/// Opens a user or group chat id; the connection itself opens with the first frame.
/// WeCom has no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let bot = Bot {
        url: open.env.get("WECOM_WEBSOCKET_URL").unwrap_or(DEFAULT_URL),
        bot_id: open.settings[0],
        secret: open.settings[1],
        chat: open.chat.to_string(),
        socket: None,
        link: open.link,
    };
    ready(bot)
}

impl Sender for Bot<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"chatid": self.chat, "msgtype": "markdown", "markdown": {"content": part.rendered}});
        Box::pin(async move {
            self.call("aibot_send_msg", &body, Request::Item)
                .await
                .map(drop)
        })
    }

    fn file<'a>(&'a mut self, _: usize, path: &'a Path) -> Sending<'a> {
        Box::pin(self.send_file(path))
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(mut socket) = self.socket.take() {
                let _ = socket.close(None).await;
            }
        })
    }
}

/// One delivery's connection to the bot gateway, opened on first use and again after
/// it broke.
struct Bot<'a> {
    url: &'a str,
    bot_id: &'a str,
    secret: &'a str,
    chat: String,
    socket: Option<Socket>,
    link: Link<'a>,
}

impl Bot<'_> {
    /// Sends one command until WeCom takes it, within the run's retry budget: a broken
    /// connection before the frame left, "busy" and 5xx-like failures are retried, a
    /// frequency limit waited out, the rest final.
    async fn call(&mut self, cmd: &str, body: &Value, kind: Request) -> Result<Value, Failure> {
        let link = self.link.clone();
        let mut retrier = link.retrier();
        loop {
            let slot = link.turn(kind).await;
            let sent = self.request(cmd, body, kind).await;
            if let Some(slot) = slot {
                slot.answered();
            }
            let judged = sent.map(|answer| {
                let (verdict, text) = judge(&answer);
                (answer, verdict, text)
            });
            if let Some(answer) = retrier.judged(&link, judged).await? {
                return Ok(answer);
            }
        }
    }

    /// One frame and its answer. A frame that could not be written never reached WeCom
    /// (transient); a connection lost after it was written leaves the outcome unknown.
    async fn request(&mut self, cmd: &str, body: &Value, kind: Request) -> Result<Value, Failure> {
        if self.socket.is_none() {
            self.socket = Some(self.open().await?);
        }
        let Some(socket) = self.socket.as_mut() else {
            return Err(Failure::Transient("no WeCom connection".into()));
        };
        let req_id = new_req_id(cmd);
        let frame = json!({"cmd": cmd, "headers": {"req_id": req_id}, "body": body});
        let item = kind == Request::Item;
        let note = |flight| async move {
            if item {
                report(flight).await
            }
        };
        note(Flight::Out).await;
        if let Err(e) = socket.send(Frame::text(frame.to_string())).await {
            note(Flight::Back { delivered: false }).await;
            self.socket = None;
            return Err(Failure::Transient(format!(
                "the WeCom connection failed ({e})"
            )));
        }
        match answer_to(socket, &req_id, REQUEST_TIMEOUT).await {
            Ok(answer) => {
                note(Flight::Back {
                    delivered: code_of(&answer).is_none(),
                })
                .await;
                Ok(answer)
            }
            Err(gone) => {
                self.socket = None;
                Err(match item {
                    true => gone.after_sending(),
                    false => Failure::Transient(gone.to_string()),
                })
            }
        }
    }

    /// Connects and subscribes as the bot.
    async fn open(&self) -> Result<Socket, Failure> {
        let mut socket = connect(self.url, CONNECT_TIMEOUT, "WeCom", "WECOM_WEBSOCKET_URL").await?;
        let req_id = new_req_id("aibot_subscribe");
        let device_id = hex::encode(rand::random::<[u8; 16]>());
        let frame = json!({"cmd": "aibot_subscribe", "headers": {"req_id": req_id},
            "body": {"bot_id": self.bot_id, "secret": self.secret, "device_id": device_id}});
        if let Err(e) = socket.send(Frame::text(frame.to_string())).await {
            return Err(Failure::Transient(format!(
                "the WeCom connection failed ({e})"
            )));
        }
        let answer = answer_to(&mut socket, &req_id, CONNECT_TIMEOUT)
            .await
            .map_err(|gone| Failure::Transient(format!("WeCom subscribe: {gone}")))?;
        match judge(&answer) {
            (Verdict::Done, _) => Ok(socket),
            (Verdict::Final, text) => Err(Failure::Final(format!(
                "the bot's subscription was refused ({text}); check WECOM_BOT_ID and WECOM_SECRET"
            ))),
            (_, text) => Err(Failure::Transient(format!(
                "the bot's subscription failed ({text})"
            ))),
        }
    }

    /// Uploads a file (init, chunks, finish) and sends it as its kind of message.
    async fn send_file(&mut self, path: &Path) -> Result<(), Failure> {
        let (name, data) = read_media(path)?;
        let kind = media_kind(&path.to_string_lossy(), data.len())?;
        let chunks: Vec<&[u8]> = data.chunks(CHUNK).collect();
        let init = json!({"type": kind, "filename": name, "total_size": data.len(),
            "total_chunks": chunks.len(), "md5": hex::encode(md5::Md5::digest(&data))});
        let answer = self
            .call("aibot_upload_media_init", &init, Request::Step)
            .await?;
        let upload_id = field(&answer, "upload_id", "media upload init")?;
        for (index, chunk) in chunks.iter().enumerate() {
            // 0-based, as WeCom's own SDK numbers them.
            let body = json!({"upload_id": upload_id, "chunk_index": index,
                "base64_data": base64::engine::general_purpose::STANDARD.encode(chunk)});
            self.call("aibot_upload_media_chunk", &body, Request::Step)
                .await?;
        }
        let finish = json!({"upload_id": upload_id});
        let answer = self
            .call("aibot_upload_media_finish", &finish, Request::Step)
            .await?;
        let media_id = field(&answer, "media_id", "media upload finish")?;
        let kind = answer["body"]["type"].as_str().unwrap_or(kind);
        let message = json!({"chatid": self.chat, "msgtype": kind, kind: {"media_id": media_id}});
        self.call("aibot_send_msg", &message, Request::Item)
            .await
            .map(drop)
    }
}

/// Waits for the frame answering `req_id`, skipping pings and pushed messages.
async fn answer_to(socket: &mut Socket, req_id: &str, limit: Duration) -> Result<Value, Lost> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let next = tokio::time::timeout_at(deadline, socket.next()).await;
        let frame = Lost::read("WeCom", limit, next)?;
        let Ok(text) = frame.to_text() else { continue };
        let payload: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        if payload["headers"]["req_id"].as_str() == Some(req_id) {
            return Ok(payload);
        }
    }
}

fn new_req_id(cmd: &str) -> String {
    format!("{cmd}-{}", hex::encode(rand::random::<[u8; 16]>()))
}

/// A non-zero `errcode` and its `errmsg`.
fn code_of(answer: &Value) -> Option<(i64, &str)> {
    let code = answer["errcode"].as_i64().filter(|c| *c != 0)?;
    Some((code, answer["errmsg"].as_str().unwrap_or("unknown error")))
}

/// WeCom answers `{"headers": {"req_id"}, "errcode": 0, "errmsg": "ok", "body": …}`.
fn judge(answer: &Value) -> (Verdict, String) {
    let Some((code, message)) = code_of(answer) else {
        return (Verdict::Done, String::new());
    };
    let text = format!("WeCom errcode {code}: {message}");
    let verdict = match code {
        c if RATE_LIMITED.contains(&c) => Verdict::RateLimited(Duration::from_secs(60)),
        BUSY => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}

fn field<'v>(answer: &'v Value, name: &str, step: &str) -> Result<&'v str, Failure> {
    answer["body"][name]
        .as_str()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| Failure::Final(format!("{step} failed: WeCom answered without {name}")))
}

/// WeCom's kind for a file, as Hermes picks it: image, video, voice (AMR only) or file,
/// bigger images, videos and voice notes going as files; over 20 MB is refused.
fn media_kind(path: &str, size: usize) -> Result<&'static str, Failure> {
    if size == 0 || size > MAX_FILE {
        return Err(Failure::Final(format!(
            "MEDIA file {path} is empty or over WeCom's 20 MB limit; not sent"
        )));
    }
    let mime = match path.to_ascii_lowercase().ends_with(".amr") {
        true => "audio/amr".to_string(),
        false => mime_guess::from_path(path)
            .first_or_octet_stream()
            .essence_str()
            .to_string(),
    };
    Ok(match mime.split('/').next().unwrap_or("") {
        "image" if size <= 10 * MB => "image",
        "video" if size <= 10 * MB => "video",
        "audio" if mime == "audio/amr" && size <= 2 * MB => "voice",
        _ => "file",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_take_wecoms_kinds_and_limits() {
        assert_eq!(media_kind("/a/chart.png", 100).ok(), Some("image"));
        assert_eq!(media_kind("/a/chart.png", 11 * MB).ok(), Some("file"));
        assert_eq!(media_kind("/a/clip.mp4", 100).ok(), Some("video"));
        assert_eq!(media_kind("/a/note.amr", 100).ok(), Some("voice"));
        assert_eq!(media_kind("/a/note.amr", 3 * MB).ok(), Some("file"));
        assert_eq!(media_kind("/a/song.mp3", 100).ok(), Some("file"));
        assert_eq!(media_kind("/a/run.log", 100).ok(), Some("file"));
        assert!(media_kind("/a/huge.zip", 21 * MB).is_err());
    }

    #[test]
    fn answers_are_read_by_errcode() {
        assert!(matches!(
            judge(&json!({"errcode": 0, "errmsg": "ok"})).0,
            Verdict::Done
        ));
        assert!(matches!(judge(&json!({"errcode": -1})).0, Verdict::Retry));
        assert!(matches!(
            judge(&json!({"errcode": 45009, "errmsg": "freq"})).0,
            Verdict::RateLimited(_)
        ));
        let (verdict, text) =
            judge(&json!({"errcode": 853000, "errmsg": "invalid bot_id or secret"}));
        assert!(matches!(verdict, Verdict::Final));
        assert_eq!(text, "WeCom errcode 853000: invalid bot_id or secret");
    }
}
