//! QQ bot sender over the QQ Bot Open Platform REST API, as Python Hermes sends out of
//! process: an app access token from `getAppAccessToken` (`QQ_APP_ID`,
//! `QQ_CLIENT_SECRET`), then a plain-text message (`msg_type` 0) to the chat as a guild
//! channel, else a user (C2C), else a group — the first endpoint that knows the id.
//! Parts of 4000 characters; QQ's cron path carries no files, so `MEDIA:` paths are
//! named in the text. `QQBOT_API_BASE` points both hosts at one server.

use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{snippet, Answer, Failure, Link, Pacing, Verdict};
use super::sender::{opened, Attachments, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' QQ message limit.
pub const MAX_CHARS: usize = 4000;

const API_BASE: &str = "https://api.sgroup.qq.com";
const TOKEN_URL: &str = "https://bots.qq.com/app/getAppAccessToken";
/// Hermes waits a minute when QQ says "too fast" without saying how long.
const RATE_LIMIT_DELAY: Duration = Duration::from_secs(60);

/// QQ takes at most 5 messages a second in a guild sub-channel (active or passive)
/// before `22009 msg limit exceed`, and a refused part costs Hermes' minute-long wait:
/// the parts of a reply go a little over 0.2 s apart, and no sixth within a second of
/// the answer to the first. QQ names no limit per bot, so the bot-wide rate only keeps
/// many chats from arriving as one burst.
const PACING: Pacing = Pacing {
    spacing: Duration::from_millis(210),
    window: Duration::from_secs(1),
    window_max: 5,
    global_per_sec: 50,
};

/// The endpoints a chat id may belong to, in the order Hermes tries them.
const KINDS: [(&str, &str); 3] = [
    ("channel", "/channels/{id}/messages"),
    ("c2c", "/v2/users/{id}/messages"),
    ("group", "/v2/groups/{id}/messages"),
];

pub const DESCRIPTION: Description = Description::new(Platform::QqBot, open)
    .needs(&["QQ_APP_ID", "QQ_CLIENT_SECRET"])
    .home(Home {
        var: "QQBOT_HOME_CHANNEL",
        former: Some("QQ_HOME_CHANNEL"),
        cron_thread: None,
    })
    .split(Rendering::Plain, MAX_CHARS)
    .attachments(Attachments::Named("not sent to QQ"))
    .paced(PACING);

/// Opens a guild channel, user or group openid with the app's access token.
/// `QQBOT_API_BASE` points both hosts at one server.
fn open(open: Open<'_>) -> Opened<'_> {
    let base = open
        .env
        .get("QQBOT_API_BASE")
        .map(|b| b.trim_end_matches('/'));
    let token_url = base.map_or(TOKEN_URL.to_string(), |b| {
        format!("{b}/app/getAppAccessToken")
    });
    let (app_id, secret) = (open.settings[0], open.settings[1]);
    Box::pin(async move {
        let token = access_token(&open.link, &token_url, app_id, secret).await?;
        let bot = Bot {
            api: base.unwrap_or(API_BASE),
            token,
            chat: open.chat.to_string(),
            kinds: KINDS.to_vec(),
            link: open.link,
        };
        opened(bot)
    })
}

struct Bot<'a> {
    api: &'a str,
    token: String,
    chat: String,
    /// The endpoint kinds still possible for the chat: once one took a part, later
    /// parts go straight to it.
    kinds: Vec<(&'static str, &'static str)>,
    link: Link<'a>,
}

impl Sender for Bot<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"content": part.rendered, "msg_type": 0});
        Box::pin(async move {
            let kinds = self.kinds.clone();
            self.kinds = vec![post_to_first_kind(self, &kinds, &body).await?];
            Ok(())
        })
    }
}

/// Posts `body` to the first endpoint kind that knows the chat; returns that kind. A
/// refusal other than the token's is "not this kind": nothing was posted, so the next
/// kind is tried, and when none knows the chat every refusal is reported.
async fn post_to_first_kind<'k>(
    bot: &Bot<'_>,
    kinds: &[(&'k str, &'k str)],
    body: &Value,
) -> Result<(&'k str, &'k str), Failure> {
    let (chat, token) = (&bot.chat, &bot.token);
    let mut refusals = Vec::new();
    for &(kind, path) in kinds {
        let url = format!("{}{}", bot.api, path.replace("{id}", chat));
        let build = |c: &reqwest::Client| {
            c.post(&url)
                .header("Authorization", format!("QQBot {token}"))
                .json(body)
        };
        match bot.link.item(&build, &judge).await {
            Ok(_) => return Ok((kind, path)),
            Err(Failure::Final(text)) if !text.starts_with("401 ") => {
                refusals.push(format!("{kind}: {text}"));
            }
            Err(other) => return Err(other),
        }
    }
    Err(Failure::Final(format!(
        "no QQ endpoint took chat {chat} ({})",
        refusals.join("; ")
    )))
}

/// The app's access token. QQ answers `{"access_token": "…", "expires_in": "7200"}`, or
/// `{"code": 100016, "message": "invalid appid or secret"}`.
async fn access_token(
    link: &Link<'_>,
    url: &str,
    app_id: &str,
    secret: &str,
) -> Result<String, Failure> {
    let body = json!({"appId": app_id, "clientSecret": secret});
    let build = |c: &reqwest::Client| c.post(url).json(&body);
    let judge_token = |answer: &Answer| {
        let reply = answer.json();
        let text = match reply["message"].as_str() {
            Some(m) => format!("QQ token request failed: code {}: {m}", reply["code"]),
            None => format!(
                "QQ token request failed: {} {}",
                answer.status,
                snippet(&answer.body)
            ),
        };
        let verdict = match (answer.status, reply["access_token"].as_str()) {
            (200, Some(_)) => Verdict::Done,
            (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(RATE_LIMIT_DELAY)),
            (500..=599, _) => Verdict::Retry,
            _ => Verdict::Final,
        };
        (verdict, text)
    };
    let answer = link.step(&build, &judge_token).await?;
    answer.json()["access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Failure::Transient("QQ answered without an access_token".to_string()))
}

/// QQ errors are `{"message": "…", "code": 11241, "err_code": …, "trace_id": …}` with a
/// 4xx or 5xx status; a 401 means the token was refused.
fn judge(answer: &Answer) -> (Verdict, String) {
    let text = answer.described(|body| {
        let m = body["message"].as_str()?;
        Some(format!("{m} (code {})", body["code"]))
    });
    (answer.by_status(RATE_LIMIT_DELAY), text)
}
