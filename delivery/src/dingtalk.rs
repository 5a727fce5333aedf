//! DingTalk sender as Python Hermes speaks it out of process: a group robot's webhook
//! (`POST <DINGTALK_WEBHOOK_URL>`, its `access_token` in the URL) with a `text`
//! message, plain text in parts of 20000 characters, paced under the robot's 20
//! messages a minute. The robot decides the group, so the chat id is only a label; it
//! cannot upload files, so `MEDIA:` paths are named. The URL is never shown in errors.

use std::time::Duration;

use serde_json::json;

use jobs::target::Platform;

use super::format::{Part, Rendering};
use super::http::{Answer, Link, Pacing, Verdict};
use super::sender::{ready, Attachments, Description, Home, Open, Opened, Sender, Sending};

/// Hermes' DingTalk message limit.
pub const MAX_CHARS: usize = 20_000;

/// A robot may send 20 messages a minute; past that DingTalk throttles it for 10
/// minutes (errcode 410100).
const PACING: Pacing = Pacing::window(Duration::from_millis(60_500), 20, 20);
const THROTTLED: i64 = 410_100;
const THROTTLED_FOR: Duration = Duration::from_secs(600);
/// "System busy": DingTalk asks to try again.
const BUSY: i64 = -1;

pub const DESCRIPTION: Description = Description::new(Platform::DingTalk, open)
    .needs(&["DINGTALK_WEBHOOK_URL"])
    .home(Home::var("DINGTALK_HOME_CHANNEL"))
    .split(Rendering::Plain, MAX_CHARS)
    .attachments(Attachments::Named("not sent to DingTalk"))
    .paced(PACING);

/// Posts to the robot's group: the chat id is only a label, and the robot is paced.
fn open(open: Open<'_>) -> Opened<'_> {
    let url = open.settings[0];
    let mut link = open.link;
    link.key = robot_key(url);
    let robot = Robot { url, link };
    ready(robot)
}

struct Robot<'a> {
    url: &'a str,
    link: Link<'a>,
}

impl Sender for Robot<'_> {
    fn text<'a>(&'a mut self, _: usize, part: &'a Part) -> Sending<'a> {
        let body = json!({"msgtype": "text", "text": {"content": part.rendered}});
        Box::pin(async move {
            let build = |c: &reqwest::Client| c.post(self.url).json(&body);
            self.link.item(&build, &judge).await.map(drop)
        })
    }
}

/// The robot's name in pacing and logs: a digest of its URL, which holds its token.
fn robot_key(url: &str) -> String {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(url.as_bytes()));
    format!("robot-{}", &digest[..12])
}

/// DingTalk answers HTTP 200 with `{"errcode": 0, "errmsg": "ok"}`, or an error code:
/// 300001 (token is not exist), 310000 (keywords or signature), 410100 (too fast).
fn judge(answer: &Answer) -> (Verdict, String) {
    let (code, text) = answer.errcode();
    let verdict = match (answer.status, code) {
        (200, Some(0)) => Verdict::Done,
        (429, _) => Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
        (_, Some(THROTTLED)) => Verdict::RateLimited(THROTTLED_FOR),
        (500..=599, _) | (_, Some(BUSY)) => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}
