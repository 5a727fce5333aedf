//! Home Assistant sender as Python Hermes speaks it: the `notify.notify` service
//! (`POST /api/services/notify/notify` on `HASS_URL` with the long-lived `HASS_TOKEN`,
//! `{"message", "target"}`), parts of 4096 characters, plain Markdown (the companion
//! apps show text). Notifications carry no files: `MEDIA:` paths are named instead.
//! Home Assistant has no home channel: targets are explicit (`homeassistant:<target>`).

use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::split;
use super::http::{client, exchange, settings, snippet, Answer, Failure, Request, Verdict};
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::HomeAssistant;

/// Hermes' notification cap.
pub const MAX_CHARS: usize = 4096;

pub fn parts(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split(text, MAX_CHARS, &|s| s.chars().count())
}

/// Notifies `target`, skipping `skip` parts already delivered; see
/// [`super::telegram::send`] for the contract.
pub async fn send(
    env: &Environment,
    target: &str,
    _thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let (base, token) = (vars[0], vars[1]);
    let url = format!("{base}/api/services/notify/notify");
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!(
            "\n(attachment not sent to Home Assistant: {path})"
        ));
    }
    let parts = parts(&text);
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let body = json!({"message": part, "target": target});
        let build = || client().post(&url).bearer_auth(token).json(&body);
        exchange(PLATFORM, target, None, Request::Item, &build, &judge)
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(parts.len())
}

/// Home Assistant answers 200 with the changed states; a bad token is `401:
/// Unauthorized` (text), an unknown service `400` with `{"message": "…"}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    let text = match body["message"].as_str() {
        Some(m) => format!("{} {m}", answer.status),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        500..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
