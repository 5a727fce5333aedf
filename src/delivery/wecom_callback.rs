//! WeCom (Enterprise WeChat) sender for a self-built app, as Python Hermes'
//! wecom_callback adapter sends: an access token from `GET /cgi-bin/gettoken`
//! (`WECOM_CALLBACK_CORP_ID`, `WECOM_CALLBACK_CORP_SECRET`), then `POST
//! /cgi-bin/message/send` as the app (`WECOM_CALLBACK_AGENT_ID`) with a `text` message.
//! Plain text in parts of 2048 bytes (WeCom's limit); a refused token is fetched again
//! once; the app cannot attach files here, so `MEDIA:` paths are named in the text.

use std::time::Duration;

use serde_json::{json, Value};

use jobs::target::Platform;

use super::format::split;
use super::http::{client, exchange, settings, snippet, Answer, Failure, Pacing, Request, Verdict};
use super::sms::plain_text;
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::WeComCallback;

/// WeCom's limit on a text message, in UTF-8 bytes.
pub const MAX_BYTES: usize = 2048;

const DEFAULT_BASE: &str = "https://qyapi.weixin.qq.com";

/// An app may call message/send about 30 times a minute per member before errcode
/// 45009; staying under it avoids a lockout.
const PACING: Pacing = Pacing {
    spacing: Duration::ZERO,
    window: Duration::from_millis(60_500),
    window_max: 30,
    global_per_sec: 20,
};

/// Token refused (invalid, expired): fetch a new one and send again.
const TOKEN_REFUSED: &[i64] = &[40001, 40014, 42001];
/// API frequency and concurrency limits.
const RATE_LIMITED: &[i64] = &[45009, 45033];
/// "System busy, try again".
const BUSY: i64 = -1;

pub fn parts(text: &str) -> Vec<String> {
    let text = plain_text(text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(&text, MAX_BYTES, &str::len)
}

/// Sends to a member (`user`, or `corp:user` as Hermes scopes its ids, the corp part
/// naming the app's corp), skipping `skip` parts already delivered; see
/// [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    chat: &str,
    thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let (corp, secret) = (vars[0], vars[1]);
    let agent: i64 = vars[2].parse().map_err(|_| {
        let error = format!(
            "WECOM_CALLBACK_AGENT_ID must be the app's numeric AgentId, not '{}'",
            vars[2]
        );
        (Failure::Final(error), skip)
    })?;
    let base = env
        .get("WECOM_CALLBACK_API_BASE")
        .unwrap_or(DEFAULT_BASE)
        .trim_end_matches('/');
    let touser = thread.unwrap_or(chat);
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!("\n(attachment not sent to WeCom: {path})"));
    }
    let parts = parts(&text);
    if skip >= parts.len() {
        return Ok(parts.len());
    }
    let mut token = access_token(base, corp, secret, touser)
        .await
        .map_err(|f| (f, skip))?;
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = json!({"touser": touser, "msgtype": "text", "agentid": agent,
                          "text": {"content": part}, "safe": 0});
        let mut refreshed = false;
        loop {
            let url = format!("{base}/cgi-bin/message/send?access_token={token}");
            let build = || client().post(&url).json(&body);
            match exchange(
                PLATFORM,
                touser,
                Some(PACING),
                Request::Item,
                &build,
                &judge,
            )
            .await
            {
                Ok(_) => break,
                Err(Failure::Final(text)) if !refreshed && token_refused(&text) => {
                    refreshed = true;
                    token = access_token(base, corp, secret, touser)
                        .await
                        .map_err(|f| (f, index))?;
                }
                Err(other) => return Err((other, index)),
            }
        }
    }
    Ok(parts.len())
}

fn token_refused(text: &str) -> bool {
    TOKEN_REFUSED
        .iter()
        .any(|code| text.starts_with(&format!("errcode {code}:")))
}

/// `{"errcode": 0, "access_token": "…", "expires_in": 7200}`, or an errcode: 40013
/// (invalid corpid), 40001 (invalid credential: the secret).
async fn access_token(base: &str, corp: &str, secret: &str, chat: &str) -> Result<String, Failure> {
    let url = format!("{base}/cgi-bin/gettoken");
    let build = || {
        client()
            .get(&url)
            .query(&[("corpid", corp), ("corpsecret", secret)])
    };
    let answer = exchange(PLATFORM, chat, None, Request::Step, &build, &judge).await?;
    let reply: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    reply["access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Failure::Transient("WeCom answered without an access_token".into()))
}

/// WeCom answers HTTP 200 with `{"errcode": 0, "errmsg": "ok", …}` or an error code in
/// the body; the status itself only fails at the edge (5xx).
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let code = body["errcode"].as_i64();
    let text = match body["errmsg"].as_str() {
        Some(m) => format!("errcode {}: {m}", body["errcode"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match (answer.status, code) {
        (200, Some(0)) => Verdict::Done,
        (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        (_, Some(c)) if RATE_LIMITED.contains(&c) => Verdict::RateLimited(Duration::from_secs(60)),
        (500..=599, _) | (_, Some(BUSY)) => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
