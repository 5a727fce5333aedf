//! SMS sender over Twilio's Messages API as Python Hermes speaks it (`POST
//! /2010-04-01/Accounts/<TWILIO_ACCOUNT_SID>/Messages.json`, HTTP Basic auth, form
//! fields `From`, `To`, `Body`; base `SMS_API_BASE`): Markdown stripped to plain text,
//! parts of 1600 characters (Twilio's body limit), 429 (code 20429) `Retry-After`.
//! Twilio fetches media from public URLs only, so `MEDIA:` files are named, not sent.

use serde_json::Value;

use jobs::target::Platform;

use super::format::{render, split_rendered, Rendering};
use super::http::{client, exchange, settings, snippet, Answer, Failure, Request, Verdict};
use crate::environment::Environment;

/// The platform this module sends to.
const PLATFORM: Platform = Platform::Sms;

/// Twilio refuses a `Body` over 1600 characters (error 21617).
pub const MAX_CHARS: usize = 1600;

/// Markdown as plain text, for platforms that show it literally (SMS, Signal):
/// [`Rendering::Plain`].
pub fn plain_text(markdown: &str) -> String {
    render(markdown, Rendering::Plain)
}

pub fn parts(text: &str) -> Vec<String> {
    plain_parts(text, MAX_CHARS)
}

/// A reply as plain text in parts of at most `max` characters (none when it is empty):
/// the parts of every platform that takes plain text.
pub fn plain_parts(text: &str, max: usize) -> Vec<String> {
    if plain_text(text).trim().is_empty() {
        return Vec::new();
    }
    split_rendered(text, Rendering::Plain, max, &|s| s.chars().count())
}

/// Sends to a phone number (E.164), skipping `skip` parts already delivered; see
/// [`super::telegram::send`] for the contract. SMS has no threads.
pub async fn send(
    env: &Environment,
    to: &str,
    _thread: Option<&str>,
    text: &str,
    media: &[String],
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let vars = settings(env, PLATFORM).map_err(|f| (f, skip))?;
    let (sid, token, from) = (vars[0], vars[1], vars[2]);
    let base = env
        .get("SMS_API_BASE")
        .unwrap_or("https://api.twilio.com")
        .trim_end_matches('/');
    let url = format!("{base}/2010-04-01/Accounts/{sid}/Messages.json");
    let mut text = text.to_string();
    for path in media {
        text.push_str(&format!("\n(attachment not sent by SMS: {path})"));
    }
    let parts = parts(&text);
    for (index, part) in parts.iter().enumerate().skip(skip) {
        let form = [("From", from), ("To", to), ("Body", part.as_str())];
        let build = || client().post(&url).basic_auth(sid, Some(token)).form(&form);
        exchange(PLATFORM, to, None, Request::Item, &build, &judge)
            .await
            .map_err(|f| (f, index))?;
    }
    Ok(parts.len())
}

/// Twilio answers 201 with the message; errors are `{"code": 20003, "message":
/// "Authenticate", "more_info": …, "status": 401}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let text = match body["message"].as_str() {
        Some(m) => format!("{} {m} (Twilio error {})", answer.status, body["code"]),
        None => format!("{} {}", answer.status, snippet(&answer.body)),
    };
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(
            answer
                .retry_after
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
    fn markdown_becomes_plain_text_without_touching_code_or_snake_case() {
        let text = "## Totals\n**up** 3% in `api_gateway`, see [graph](https://x.test/g)\n\
                    ```python\nprint(a_b * 2)  # **not bold**\n```\n#hashtag stays";
        assert_eq!(
            plain_text(text),
            "Totals\n\nup 3% in api_gateway, see graph (https://x.test/g)\n\n\
             print(a_b * 2)  # **not bold**\n\n#hashtag stays"
        );
    }

    #[test]
    fn twilio_errors_are_read_from_their_json() {
        let answer = Answer {
            status: 400,
            retry_after: None,
            body: r#"{"code": 21211, "message": "The 'To' number +1 is not a valid phone number.", "status": 400}"#.into(),
        };
        let (verdict, text) = judge(&answer);
        assert!(matches!(verdict, Verdict::Final));
        assert_eq!(
            text,
            "400 The 'To' number +1 is not a valid phone number. (Twilio error 21211)"
        );
    }
}
