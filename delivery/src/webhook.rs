//! `webhook:<url>` delivery: POST `{job_id, name, scheduled_at, status, text}` as JSON,
//! signed with `X-Hermes-Signature: sha256=<hex HMAC-SHA256 of the body>` when
//! `WEBHOOK_SECRET` is set. 429 and 5xx are retried; other statuses are final. The URL is
//! the user's: only addresses the [`AddressPolicy`] allows are connected to (a refusal is
//! a final failure, nothing sent), and what comes back is masked of the URL's own
//! secrets before it is recorded. A webhook is not a chat platform: it has no parts, no
//! files and no description.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::http::{client_builder, snippet, Answer, Failure, Link, Pace};
use super::{Message, Shared};
use foundation::environment::Environment;
use foundation::outbound::{pinned, redact_url_secrets, AddressPolicy, OutboundError};

/// The signature header value for a body.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC takes a key of any length; this arm is never taken.
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

pub async fn send(
    shared: &Shared,
    env: &Environment,
    policy: &AddressPolicy,
    url: &str,
    message: &Message,
) -> Result<(), Failure> {
    let masked = |text: String| redact_url_secrets(url, &text);
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Failure::Final(masked(format!("'{url}' is not a URL: {e}"))))?;
    let addresses = policy.addresses(&parsed).await.map_err(|e| match e {
        OutboundError::Unresolved { .. } => Failure::Transient(masked(e.to_string())),
        refused => Failure::Final(masked(refused.to_string())),
    })?;
    // Connects to exactly the addresses just checked, never to a second DNS answer.
    let client = pinned(client_builder(), &parsed, &addresses)
        .build()
        .map_err(|e| Failure::Transient(format!("cannot set up the HTTP client: {e}")))?;
    let payload = json!({
        "job_id": message.job_id,
        "name": message.name,
        "scheduled_at": message.scheduled_at,
        "status": message.status,
        "text": message.content,
    });
    let body = payload.to_string().into_bytes();
    let secret = env.get("WEBHOOK_SECRET");
    let build = |_: &reqwest::Client| {
        let request = client
            .post(parsed.clone())
            .header("Content-Type", "application/json")
            .body(body.clone());
        match secret {
            Some(secret) => request.header("X-Hermes-Signature", signature(secret, &body)),
            None => request,
        }
    };
    let judge = |answer: &Answer| {
        let text = format!(
            "{} {}",
            answer.status,
            snippet(&masked(answer.body.clone()))
        );
        (answer.by_status(Duration::from_secs(1)), text)
    };
    Link::new(shared, "webhook", url, Pace::Free)
        .item(&build, &judge)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    #[test]
    fn signature_is_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        assert_eq!(
            super::signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
