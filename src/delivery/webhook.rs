//! `webhook:<url>` delivery: POST `{job_id, name, scheduled_at, status, text}` as JSON,
//! signed with `X-Hermes-Signature: sha256=<hex HMAC-SHA256 of the body>` when
//! `WEBHOOK_SECRET` is set. 429 and 5xx are retried; other statuses are final.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::http::{client, send_once, snippet, Failure, Retrier};
use crate::environment::Environment;

/// The signature header value for a body.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

pub async fn send(
    env: &Environment,
    url: &str,
    payload: &serde_json::Value,
) -> Result<(), Failure> {
    let body = serde_json::to_vec(payload).expect("JSON payload");
    let mut retrier = Retrier::default();
    loop {
        let mut request = client()
            .post(url)
            .header("Content-Type", "application/json")
            .body(body.clone());
        if let Some(secret) = env.get("WEBHOOK_SECRET") {
            request = request.header("X-Hermes-Signature", signature(secret, &body));
        }
        let answer = match send_once(request).await {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        let described = format!("{} {}", answer.status, snippet(&answer.body));
        match answer.status {
            200..=299 => return Ok(()),
            429 => {
                let wait = answer
                    .retry_after
                    .unwrap_or(std::time::Duration::from_secs(1));
                retrier
                    .rate_limited("webhook", url, wait, described)
                    .await?;
            }
            500..=599 => retrier.transient(described).await?,
            _ => return Err(Failure::Final(described)),
        }
    }
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
