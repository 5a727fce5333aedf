//! Home Assistant sender as Python Hermes speaks it: the `notify.notify` service
//! (`POST /api/services/notify/notify` on `HASS_URL` with the long-lived `HASS_TOKEN`,
//! `{"message", "target"}`), parts of 4096 characters, plain Markdown (the companion
//! apps show text). Notifications carry no files: `MEDIA:` paths are named instead.
//! Home Assistant has no home channel: targets are explicit (`homeassistant:<target>`).

use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{Answer, Link, Verdict};
use super::sender::{ready, Attachments, Description, Open, Opened, Sender, Sending};

/// Hermes' notification cap.
pub const MAX_CHARS: usize = 4096;

pub const DESCRIPTION: Description = Description::new(Platform::HomeAssistant, open)
    .needs(&["HASS_URL", "HASS_TOKEN"])
    .split(Rendering::Markdown, MAX_CHARS)
    .attachments(Attachments::Named("not sent to Home Assistant"));

/// Notifies `target` (the chat of `homeassistant:<target>`).
fn open(open: Open<'_>) -> Opened<'_> {
    let notify = Notify {
        url: format!("{}/api/services/notify/notify", open.settings[0]),
        token: open.settings[1],
        target: open.chat.to_string(),
        link: open.link,
    };
    ready(notify)
}

struct Notify<'a> {
    url: String,
    token: &'a str,
    target: String,
    link: Link<'a>,
}

impl Sender for Notify<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"message": part.rendered, "target": self.target});
        Box::pin(async move {
            let build = |c: &reqwest::Client| c.post(&self.url).bearer_auth(self.token).json(&body);
            self.link.item(&build, &judge).await.map(drop)
        })
    }
}

/// Home Assistant answers 200 with the changed states; a bad token is `401:
/// Unauthorized` (text), an unknown service `400` with `{"message": "…"}`.
fn judge(answer: &Answer) -> (Verdict, String) {
    let text = answer.described(|body| body["message"].as_str().map(str::to_string));
    (answer.by_status(Duration::from_secs(1)), text)
}
