//! WeCom (Enterprise WeChat) sender for a self-built app, as Python Hermes'
//! wecom_callback adapter sends: an access token from `GET /cgi-bin/gettoken`
//! (`WECOM_CALLBACK_CORP_ID`, `WECOM_CALLBACK_CORP_SECRET`), then `POST
//! /cgi-bin/message/send` as the app (`WECOM_CALLBACK_AGENT_ID`) with a `text` message.
//! Plain text in parts of 2048 bytes (WeCom's limit); a refused token is fetched again
//! once; the app cannot attach files here, so `MEDIA:` paths are named in the text.

use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{Answer, Failure, Link, Pacing, Verdict};
use super::sender::{as_parts, opened, Attachments, Description, Open, Opened, Sender, Sending};
use super::sms::plain_text;

/// WeCom's limit on a text message, in UTF-8 bytes.
pub const MAX_BYTES: usize = 2048;

/// An app may call message/send about 30 times a minute per member before errcode
/// 45009; staying under it avoids a lockout.
const PACING: Pacing = Pacing::window(Duration::from_millis(60_500), 30, 20);

/// Token refused (invalid, expired): fetch a new one and send again.
const TOKEN_REFUSED: &[i64] = &[40001, 40014, 42001];
/// API frequency and concurrency limits.
const RATE_LIMITED: &[i64] = &[45009, 45033];
/// "System busy, try again".
const BUSY: i64 = -1;

pub const DESCRIPTION: Description = Description::new(Platform::WeComCallback, open)
    .needs(&[
        "WECOM_CALLBACK_CORP_ID",
        "WECOM_CALLBACK_CORP_SECRET",
        "WECOM_CALLBACK_AGENT_ID",
    ])
    .base("WECOM_CALLBACK_API_BASE", "https://qyapi.weixin.qq.com")
    .cut(|text, media| as_parts(parts(&DESCRIPTION.with_names(text, media))))
    .attachments(Attachments::Named("not sent to WeCom"))
    .paced(PACING);

pub fn parts(text: &str) -> Vec<String> {
    let text = plain_text(text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(&text, MAX_BYTES, &str::len)
}

/// Opens a member (`user`, or `corp:user` as Hermes scopes its ids, the corp part
/// naming the app's corp) with a fresh access token.
fn open(open: Open<'_>) -> Opened<'_> {
    let (corp, secret, agent) = (open.settings[0], open.settings[1], open.settings[2]);
    Box::pin(async move {
        let agent: i64 = agent.parse().map_err(|_| {
            Failure::Final(format!(
                "WECOM_CALLBACK_AGENT_ID must be the app's numeric AgentId, not '{agent}'"
            ))
        })?;
        let touser = open.thread.unwrap_or(open.chat).to_string();
        let mut link = open.link;
        link.key = touser.clone();
        let mut app = App {
            base: open.base,
            corp,
            secret,
            agent,
            touser,
            token: String::new(),
            link,
        };
        app.token = app.access_token().await?;
        opened(app)
    })
}

struct App<'a> {
    base: &'a str,
    corp: &'a str,
    secret: &'a str,
    agent: i64,
    touser: String,
    token: String,
    link: Link<'a>,
}

impl Sender for App<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"touser": self.touser, "msgtype": "text", "agentid": self.agent,
                          "text": {"content": part.rendered}, "safe": 0});
        Box::pin(async move {
            let mut refreshed = false;
            loop {
                let url = format!(
                    "{}/cgi-bin/message/send?access_token={}",
                    self.base, self.token
                );
                let build = |c: &reqwest::Client| c.post(&url).json(&body);
                match self.link.item(&build, &judge).await {
                    Ok(_) => return Ok(()),
                    Err(Failure::Final(text)) if !refreshed && token_refused(&text) => {
                        refreshed = true;
                        self.token = self.access_token().await?;
                    }
                    Err(other) => return Err(other),
                }
            }
        })
    }
}

fn token_refused(text: &str) -> bool {
    TOKEN_REFUSED
        .iter()
        .any(|code| text.starts_with(&format!("errcode {code}:")))
}

impl App<'_> {
    /// `{"errcode": 0, "access_token": "…", "expires_in": 7200}`, or an errcode: 40013
    /// (invalid corpid), 40001 (invalid credential: the secret).
    async fn access_token(&self) -> Result<String, Failure> {
        let url = format!("{}/cgi-bin/gettoken", self.base);
        let query = [("corpid", self.corp), ("corpsecret", self.secret)];
        let build = |c: &reqwest::Client| c.get(&url).query(&query);
        let answer = self.link.step(&build, &judge).await?;
        answer.json()["access_token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Failure::Transient("WeCom answered without an access_token".into()))
    }
}

/// WeCom answers HTTP 200 with `{"errcode": 0, "errmsg": "ok", …}` or an error code in
/// the body; the status itself only fails at the edge (5xx).
fn judge(answer: &Answer) -> (Verdict, String) {
    let (code, text) = answer.errcode();
    let verdict = match (answer.status, code) {
        (200, Some(0)) => Verdict::Done,
        (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        (_, Some(c)) if RATE_LIMITED.contains(&c) => Verdict::RateLimited(Duration::from_secs(60)),
        (500..=599, _) | (_, Some(BUSY)) => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
