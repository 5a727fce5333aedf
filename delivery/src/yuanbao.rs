//! Yuanbao bot sender, as Python Hermes' gateway sends: sign a token over HTTP
//! (`YUANBAO_API_DOMAIN` + `/api/v5/robotLogic/sign-token`, HMAC-SHA256 of nonce,
//! timestamp and app key), open the WebSocket (`YUANBAO_WS_URL`), bind with AUTH_BIND,
//! then send each text part as a protobuf `send_c2c_message` / `send_group_message`
//! frame and wait for the response carrying its msg_id. One connection per delivery; it
//! never reads, answers or acknowledges the chats' messages.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use tokio_tungstenite::tungstenite::Message as Frame;

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{report, snippet, Answer, Failure, Flight, Link, Verdict};
use super::sender::{as_parts, opened, Attachments, Description, Open, Opened, Sender, Sending};
use super::websocket::{connect, Lost, Socket};
use super::yuanbao_proto::{self as pb, Head, Login};
use crate::BoxFuture;

/// Hermes' Yuanbao message limit, in characters.
pub const MAX_CHARS: usize = 4000;

const DEFAULT_WS_URL: &str = "wss://bot-wss.yuanbao.tencent.com/wss/connection";
const DEFAULT_API_DOMAIN: &str = "https://bot.yuanbao.tencent.com";
const TOKEN_PATH: &str = "/api/v5/robotLogic/sign-token";
/// Hermes waits 15 s for the connection, 10 s for the bind, 30 s for each answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The code Yuanbao answers when it is busy: "try again".
const RETRYABLE: u64 = 10099;

pub const DESCRIPTION: Description = Description::new(Platform::Yuanbao, open)
    .needs(&["YUANBAO_APP_ID", "YUANBAO_APP_SECRET"])
    .aliases(&[("YUANBAO_APP_ID", "YUANBAO_APP_KEY")])
    // The wrapper goes before the files are named.
    .cut(|text, media| as_parts(parts(&DESCRIPTION.with_names(strip_wrapper(text), media))))
    // Yuanbao files go through a Tencent Cloud upload this sender does not make.
    .attachments(Attachments::Named("not sent to Yuanbao"));

/// The parts of a reply: Hermes drops the response wrapper for Yuanbao and sends its
/// parts without `(1/3)` markers.
pub fn parts(text: &str) -> Vec<String> {
    let body = strip_wrapper(text);
    if body.trim().is_empty() {
        return Vec::new();
    }
    split(body, MAX_CHARS, &|s| s.chars().count())
        .into_iter()
        .map(|part| strip_marker(&part).to_string())
        .collect()
}

/// Opens `direct:<account>` (or a bare account) or `group:<code>` with a signed token;
/// the connection itself opens with the first frame.
fn open(open: Open<'_>) -> Opened<'_> {
    let env = open.env;
    let (app_id, secret) = (open.settings[0], open.settings[1]);
    let domain = env.get("YUANBAO_API_DOMAIN").unwrap_or(DEFAULT_API_DOMAIN);
    let route_env = env.get("YUANBAO_ROUTE_ENV").unwrap_or("");
    let chat = open.chat;
    let (group, to) = match chat.strip_prefix("group:") {
        Some(code) => (true, code),
        None => (false, chat.strip_prefix("direct:").unwrap_or(chat)),
    };
    Box::pin(async move {
        let domain = domain.trim_end_matches('/');
        let signed = sign_token(&open.link, domain, app_id, secret, route_env).await?;
        let bot = Bot {
            url: env.get("YUANBAO_WS_URL").unwrap_or(DEFAULT_WS_URL),
            bot_id: env.get("YUANBAO_BOT_ID").map(str::to_string),
            signed,
            route_env,
            group,
            to: to.to_string(),
            socket: None,
            link: open.link,
        };
        opened(bot)
    })
}

impl Sender for Bot<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(self.call(&part.rendered))
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(mut socket) = self.socket.take() {
                let _ = socket.close(None).await;
            }
        })
    }
}

/// What sign-token answers: `{"code": 0, "data": {"token", "bot_id", "source", …}}`.
struct Signed {
    token: String,
    bot_id: String,
    source: String,
}

/// Signs in with the app key and secret; 10099 ("retry") and 5xx are retried.
async fn sign_token(
    link: &Link<'_>,
    domain: &str,
    app_id: &str,
    secret: &str,
    route_env: &str,
) -> Result<Signed, Failure> {
    let url = format!("{domain}{TOKEN_PATH}");
    let build = |c: &reqwest::Client| {
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        // Beijing time, as Hermes signs it.
        let timestamp = (chrono::Utc::now() + chrono::Duration::hours(8))
            .format("%Y-%m-%dT%H:%M:%S+08:00")
            .to_string();
        let signature = signature(&nonce, &timestamp, app_id, secret);
        let body = json!({"app_key": app_id, "nonce": nonce, "signature": signature,
                          "timestamp": timestamp});
        let request = c
            .post(&url)
            .json(&body)
            .header("X-AppVersion", env!("CARGO_PKG_VERSION"))
            .header("X-OperationSystem", std::env::consts::OS)
            .header("X-Instance-Id", "17")
            .header("X-Bot-Version", env!("CARGO_PKG_VERSION"));
        match route_env.is_empty() {
            true => request,
            false => request.header("X-Route-Env", route_env),
        }
    };
    let answer = link.step(&build, &judge_token).await?;
    let reply = answer.json();
    let data = &reply["data"];
    let field = |name: &str| data[name].as_str().unwrap_or("").to_string();
    Ok(Signed {
        token: field("token"),
        bot_id: match &data["bot_id"] {
            Value::Number(n) => n.to_string(),
            _ => field("bot_id"),
        },
        source: field("source"),
    })
}

/// `hex(HMAC-SHA256(key = secret, nonce + timestamp + app key + secret))`.
pub fn signature(nonce: &str, timestamp: &str, app_id: &str, secret: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(format!("{nonce}{timestamp}{app_id}{secret}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn judge_token(answer: &Answer) -> (Verdict, String) {
    let reply = answer.json();
    if answer.status != 200 {
        let text = format!(
            "Yuanbao sign-token returned {}: {}",
            answer.status,
            snippet(&answer.body)
        );
        return match answer.status {
            429 | 500..=599 => (Verdict::Retry, text),
            _ => (Verdict::Final, text),
        };
    }
    let code = reply["code"].as_u64();
    let text = format!(
        "Yuanbao sign-token refused: code={}, msg={}; check YUANBAO_APP_ID and YUANBAO_APP_SECRET",
        reply["code"],
        reply["msg"].as_str().unwrap_or("")
    );
    match code {
        Some(0) if reply["data"]["token"].is_string() => (Verdict::Done, String::new()),
        Some(RETRYABLE) => (Verdict::Retry, text),
        _ => (Verdict::Final, text),
    }
}

/// One delivery's connection, opened on first use and again after it broke.
struct Bot<'a> {
    url: &'a str,
    bot_id: Option<String>,
    signed: Signed,
    route_env: &'a str,
    /// A group (`group:<code>`), else one account.
    group: bool,
    to: String,
    socket: Option<Socket>,
    link: Link<'a>,
}

impl Bot<'_> {
    /// Sends one part until Yuanbao takes it, within the run's retry budget: a broken
    /// connection before the frame left and the busy code are retried, the rest final.
    async fn call(&mut self, text: &str) -> Result<(), Failure> {
        let link = self.link.clone();
        let mut retrier = link.retrier();
        loop {
            let judged = self.request(text).await.map(|(code, message)| {
                let verdict = match code {
                    0 => Verdict::Done,
                    RETRYABLE => Verdict::Retry,
                    _ => Verdict::Final,
                };
                ((), verdict, format!("Yuanbao code {code}: {message}"))
            });
            if retrier.judged(&link, judged).await?.is_some() {
                return Ok(());
            }
        }
    }

    /// One message frame and its answer's code. A frame that could not be written never
    /// reached Yuanbao (transient); a connection lost after it left leaves the outcome
    /// unknown, never resent.
    async fn request(&mut self, text: &str) -> Result<(u64, String), Failure> {
        let (group, to) = (self.group, self.to.as_str());
        if self.socket.is_none() {
            self.socket = Some(self.open().await?);
        }
        let Some(socket) = self.socket.as_mut() else {
            return Err(Failure::Transient("no Yuanbao connection".into()));
        };
        let (cmd, prefix) = match group {
            true => ("send_group_message", "grp"),
            false => ("send_c2c_message", "c2c"),
        };
        let msg_id = format!("{prefix}_{}", hex::encode(rand::random::<[u8; 12]>()));
        let from = self.bot_id.as_deref().unwrap_or(&self.signed.bot_id);
        let body = pb::send_text(group, to, from, &msg_id, text);
        let head = request_head(cmd, &msg_id, pb::BIZ_MODULE);
        report(Flight::Out).await;
        if let Err(e) = socket.send(Frame::binary(pb::conn_msg(&head, &body))).await {
            report(Flight::Back { delivered: false }).await;
            self.socket = None;
            return Err(Failure::Transient(format!(
                "the Yuanbao connection failed ({e})"
            )));
        }
        match answer_to(socket, &msg_id, SEND_TIMEOUT).await {
            Ok((head, data)) => {
                let (code, message) = outcome(&head, &data);
                report(Flight::Back {
                    delivered: code == 0,
                })
                .await;
                Ok((code, message))
            }
            Err(gone) => {
                self.socket = None;
                Err(gone.after_sending())
            }
        }
    }

    /// Connects and binds as the bot.
    async fn open(&self) -> Result<Socket, Failure> {
        let mut socket = connect(self.url, CONNECT_TIMEOUT, "Yuanbao", "YUANBAO_WS_URL").await?;
        let msg_id = hex::encode(rand::random::<[u8; 16]>());
        let login = Login {
            uid: self.bot_id.as_deref().unwrap_or(&self.signed.bot_id),
            source: match self.signed.source.is_empty() {
                true => "bot",
                false => &self.signed.source,
            },
            token: &self.signed.token,
            route_env: self.route_env,
            version: env!("CARGO_PKG_VERSION"),
        };
        let head = request_head("auth-bind", &msg_id, "conn_access");
        let frame = pb::conn_msg(&head, &pb::auth_bind(&login));
        if let Err(e) = socket.send(Frame::binary(frame)).await {
            return Err(Failure::Transient(format!(
                "the Yuanbao connection failed ({e})"
            )));
        }
        let (_, data) = answer_to(&mut socket, &msg_id, AUTH_TIMEOUT)
            .await
            .map_err(|gone| Failure::Transient(format!("Yuanbao AUTH_BIND: {gone}")))?;
        match pb::code_message(&data) {
            Some((0, _, connect_id)) if !connect_id.is_empty() => Ok(socket),
            Some((code, message, _)) => Err(Failure::Final(format!(
                "Yuanbao refused the bot's AUTH_BIND (code {code}: {message})"
            ))),
            None => Err(Failure::Transient(
                "Yuanbao AUTH_BIND: unreadable answer".into(),
            )),
        }
    }
}

fn request_head(cmd: &str, msg_id: &str, module: &str) -> Head {
    Head {
        cmd_type: pb::REQUEST,
        cmd: cmd.to_string(),
        seq_no: u64::from(rand::random::<u32>()),
        msg_id: msg_id.to_string(),
        module: module.to_string(),
        status: 0,
    }
}

/// A send's code and message: a non-zero head status, else the answer's own code.
fn outcome(head: &Head, data: &[u8]) -> (u64, String) {
    match (head.status, pb::code_message(data)) {
        (0, Some((code, message, _))) => (code, message),
        (0, None) => (0, String::new()),
        (status, _) => (status, "request failed".to_string()),
    }
}

/// Waits for the response frame carrying `msg_id`, skipping pushes and other frames.
async fn answer_to(
    socket: &mut Socket,
    msg_id: &str,
    limit: Duration,
) -> Result<(Head, Vec<u8>), Lost> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let next = tokio::time::timeout_at(deadline, socket.next()).await;
        let frame = Lost::read("Yuanbao", limit, next)?;
        let Frame::Binary(bytes) = frame else {
            continue;
        };
        if let Some((head, data)) = pb::decode_conn_msg(&bytes) {
            if head.cmd_type == pb::RESPONSE && head.msg_id == msg_id {
                return Ok((head, data));
            }
        }
    }
}

/// The reply without Hermes' response wrapper, when it has the whole wrapper.
fn strip_wrapper(text: &str) -> &str {
    let divider = "\n-------------\n\n";
    let footer = "\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder ";
    if !text.starts_with("Cronjob Response: ") {
        return text;
    }
    match (text.find(divider), text.rfind(footer)) {
        (Some(d), Some(f)) if f > d && text[..d].contains("\n(job_id: ") => {
            let body = text[d + divider.len()..f].trim();
            if body.is_empty() {
                text
            } else {
                body
            }
        }
        _ => text,
    }
}

/// A part without its trailing `(2/3)` marker.
fn strip_marker(part: &str) -> &str {
    let trimmed = part.trim_end();
    let Some(open) = trimmed.rfind('(') else {
        return part;
    };
    if !trimmed[..open].ends_with(char::is_whitespace) {
        return part;
    }
    let inner = &trimmed[open + 1..];
    let Some(inner) = inner.strip_suffix(')') else {
        return part;
    };
    let numbers: Vec<&str> = inner.split('/').collect();
    let is_marker = numbers.len() == 2
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match is_marker {
        true => trimmed[..open].trim_end(),
        false => part,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hermes_hmac() {
        // hmac.new(b"s", b"n" + b"t" + b"k" + b"s", sha256).hexdigest()
        let expected = {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"s").unwrap();
            mac.update(b"ntks");
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(signature("n", "t", "k", "s"), expected);
    }

    #[test]
    fn the_wrapper_and_markers_are_dropped() {
        let wrapped = super::super::format::wrap("daily", "abc", "hello");
        assert_eq!(strip_wrapper(&wrapped), "hello");
        assert_eq!(strip_wrapper("plain"), "plain");
        assert_eq!(strip_marker("text\n\n(2/3)"), "text");
        assert_eq!(strip_marker("f(2/3)"), "f(2/3)");
        assert_eq!(strip_marker("see (a/b)"), "see (a/b)");
    }
}
