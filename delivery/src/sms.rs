//! SMS sender over Twilio's Messages API as Python Hermes speaks it (`POST
//! /2010-04-01/Accounts/<TWILIO_ACCOUNT_SID>/Messages.json`, HTTP Basic auth, form
//! fields `From`, `To`, `Body`; base `SMS_API_BASE`): Markdown stripped to plain text,
//! parts of 1600 characters (Twilio's body limit), 429 (code 20429) `Retry-After`.
//! Twilio fetches media from public URLs only, so `MEDIA:` files are named, not sent.

use std::time::Duration;

use jobs::target::Platform;

use super::format::{render, Part, Rendering};
use super::http::{Answer, Link, Verdict};
use super::sender::{ready, Attachments, Description, Home, Open, Opened, Sender, Sending};

/// Twilio refuses a `Body` over 1600 characters (error 21617).
pub const MAX_CHARS: usize = 1600;

pub const DESCRIPTION: Description = Description::new(Platform::Sms, open)
    .needs(&[
        "TWILIO_ACCOUNT_SID",
        "TWILIO_AUTH_TOKEN",
        "TWILIO_PHONE_NUMBER",
    ])
    .base("SMS_API_BASE", "https://api.twilio.com")
    .home(Home::var("SMS_HOME_CHANNEL"))
    .split(Rendering::Plain, MAX_CHARS)
    .attachments(Attachments::Named("not sent by SMS"));

/// Markdown as plain text, for platforms that show it literally (SMS, Signal):
/// [`Rendering::Plain`].
pub fn plain_text(markdown: &str) -> String {
    render(markdown, Rendering::Plain)
}

/// Sends to a phone number (E.164). SMS has no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let (sid, token, from) = (open.settings[0], open.settings[1], open.settings[2]);
    let number = Number {
        url: format!("{}/2010-04-01/Accounts/{sid}/Messages.json", open.base),
        sid,
        token,
        from,
        to: open.chat.to_string(),
        link: open.link,
    };
    ready(number)
}

struct Number<'a> {
    url: String,
    sid: &'a str,
    token: &'a str,
    from: &'a str,
    to: String,
    link: Link<'a>,
}

impl Sender for Number<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(async move {
            let form = [
                ("From", self.from),
                ("To", self.to.as_str()),
                ("Body", part.rendered.as_str()),
            ];
            let build = |c: &reqwest::Client| {
                c.post(&self.url)
                    .basic_auth(self.sid, Some(self.token))
                    .form(&form)
            };
            self.link.item(&build, &judge).await.map(drop)
        })
    }
}

/// Twilio answers 201 with the message; errors are `{"code": 20003, "message":
/// "Authenticate", "more_info": …, "status": 401}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let text = answer.described(|body| {
        let m = body["message"].as_str()?;
        Some(format!("{m} (Twilio error {})", body["code"]))
    });
    (answer.by_status(Duration::from_secs(1)), text)
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
