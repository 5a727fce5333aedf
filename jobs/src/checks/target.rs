//! The `deliver` grammar: which platforms exist, what one comma-separated item means
//! ([`Target`]), and the one parser from text to targets and back to the stored text.
//! It never resolves a target to a chat, reads the environment or sends anything:
//! that is delivery's work, done at send time on the [`Target`]s parsed here.

use std::fmt;
use std::str::FromStr;

/// A chat platform a job may name. Names outside this list are refused when a job is
/// created or edited, rather than probed in the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    Telegram,
    Discord,
    Slack,
    WhatsApp,
    Signal,
    Matrix,
    Mattermost,
    Email,
    Sms,
    HomeAssistant,
    /// The official WhatsApp Business Cloud API (`whatsapp` is Hermes' Baileys bridge).
    WhatsAppCloud,
    DingTalk,
    Feishu,
    /// WeCom (Enterprise WeChat) through an AI bot's WebSocket.
    WeCom,
    /// WeCom through a self-built app's access-token API.
    WeComCallback,
    /// WeChat personal accounts through Tencent's iLink bot API.
    Weixin,
    /// iMessage through a BlueBubbles server.
    BlueBubbles,
    QqBot,
    Yuanbao,
}

impl Platform {
    /// Every platform, in the order messages list them.
    pub const ALL: [Platform; 19] = [
        Platform::Telegram,
        Platform::Discord,
        Platform::Slack,
        Platform::WhatsApp,
        Platform::Signal,
        Platform::Matrix,
        Platform::Mattermost,
        Platform::Email,
        Platform::Sms,
        Platform::HomeAssistant,
        Platform::WhatsAppCloud,
        Platform::DingTalk,
        Platform::Feishu,
        Platform::WeCom,
        Platform::WeComCallback,
        Platform::Weixin,
        Platform::BlueBubbles,
        Platform::QqBot,
        Platform::Yuanbao,
    ];

    /// Every platform's name, in [`Platform::ALL`] order.
    pub const NAMES: [&'static str; 19] = {
        let mut names = [""; 19];
        let mut i = 0;
        while i < names.len() {
            names[i] = Platform::ALL[i].as_str();
            i += 1;
        }
        names
    };

    /// The name as stored in `deliver` and `origin.platform`: lowercase ASCII.
    pub const fn as_str(self) -> &'static str {
        match self {
            Platform::Telegram => "telegram",
            Platform::Discord => "discord",
            Platform::Slack => "slack",
            Platform::WhatsApp => "whatsapp",
            Platform::Signal => "signal",
            Platform::Matrix => "matrix",
            Platform::Mattermost => "mattermost",
            Platform::Email => "email",
            Platform::Sms => "sms",
            Platform::HomeAssistant => "homeassistant",
            Platform::WhatsAppCloud => "whatsapp_cloud",
            Platform::DingTalk => "dingtalk",
            Platform::Feishu => "feishu",
            Platform::WeCom => "wecom",
            Platform::WeComCallback => "wecom_callback",
            Platform::Weixin => "weixin",
            Platform::BlueBubbles => "bluebubbles",
            Platform::QqBot => "qqbot",
            Platform::Yuanbao => "yuanbao",
        }
    }

    /// The platform named `name`, ignoring ASCII case. Surrounding whitespace is not
    /// ignored: `" telegram"` names nothing.
    pub fn parse(name: &str) -> Option<Platform> {
        Platform::ALL
            .into_iter()
            .find(|platform| platform.as_str().eq_ignore_ascii_case(name))
    }

    /// Splits the text after `<platform>:` into a chat and an optional thread, by the
    /// platform's id syntax: a Matrix room id holds a colon (`!room:server`), so only a
    /// trailing `:$event` is its thread; a Signal group is `group:<id>`; elsewhere the
    /// thread follows the first colon. `None` when a part is blank or one too many.
    pub fn split_chat(self, rest: &str) -> Option<(&str, Option<&str>)> {
        let blank = |part: &str| part.trim().is_empty();
        let (chat, thread) = match self {
            Platform::Matrix => match rest.rfind(":$") {
                Some(at) if at > 0 => (&rest[..at], Some(&rest[at + 1..])),
                _ => (rest, None),
            },
            Platform::Signal if rest.starts_with("group:") => {
                let group = &rest["group:".len()..];
                if group.contains(':') {
                    return None;
                }
                (rest, None)
            }
            // Yuanbao chats are `direct:<account>` or `group:<code>`, with no threads.
            Platform::Yuanbao if rest.starts_with("group:") || rest.starts_with("direct:") => {
                let (_, id) = rest.split_once(':')?;
                if id.contains(':') || id.trim().is_empty() {
                    return None;
                }
                (rest, None)
            }
            _ => {
                let mut parts = rest.split(':');
                let chat = parts.next().unwrap_or("");
                let thread = parts.next();
                if parts.next().is_some() {
                    return None;
                }
                (chat, thread)
            }
        };
        let chat_blank = blank(chat) || chat.trim() == "group:";
        if chat_blank || thread.is_some_and(blank) {
            return None;
        }
        Some((chat, thread))
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One comma-separated item of `deliver`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// `local`: nothing is sent; the output document is the result.
    Local,
    /// `origin`: the chat the job was created from.
    Origin,
    /// `all`: every platform that has a home channel.
    All,
    /// A bare platform name: that platform's home channel.
    Home(Platform),
    /// `<platform>:<chat>[:<thread>]`: an explicit chat. `chat` and `thread` hold the
    /// text between the colons exactly as written (never blank, never containing `:`),
    /// so the stored value keeps its bytes; trim them before use.
    Chat {
        platform: Platform,
        chat: String,
        thread: Option<String>,
    },
    /// `webhook:<url>` with an `http://` or `https://` URL, kept as written.
    Webhook { url: String },
}

/// Why a `deliver` value was refused; the message tells the user what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Nothing but commas and whitespace.
    #[error("Empty delivery target: use local, origin, all or a platform name")]
    Empty,
    /// One item (trimmed, as typed) that is none of the accepted forms.
    #[error(
        "Unknown delivery target '{target}'. Use local, origin, all, a platform ({}), \
         <platform>:<chat_id>[:<thread_id>] or webhook:<https-url>",
        Platform::NAMES.join(", ")
    )]
    Unknown { target: String },
    /// Hermes 0.22's `bot-chat[:profile]`: delivered into a local profile's Bot Chat by
    /// Hermes' own gateway process, which this program is not.
    #[error(
        "Delivery target '{target}' needs Hermes' own gateway (it delivers into a profile's Bot Chat), which hermes-cron does not run: deliver to a platform, e.g. telegram, or to local"
    )]
    NeedsHermesGateway { target: String },
}

impl FromStr for Target {
    type Err = TargetError;

    /// Parses one item of `deliver` (surrounding whitespace ignored). Keywords, platform
    /// names and the `webhook` prefix and URL scheme ignore ASCII case; chat ids, thread
    /// ids and the rest of a URL are kept as written.
    fn from_str(item: &str) -> Result<Target, TargetError> {
        let item = item.trim();
        if item.is_empty() {
            return Err(TargetError::Empty);
        }
        let unknown = || TargetError::Unknown {
            target: item.to_string(),
        };
        let kind = item.split(':').next().unwrap_or("");
        if kind.eq_ignore_ascii_case("bot-chat") {
            return Err(TargetError::NeedsHermesGateway {
                target: item.to_string(),
            });
        }
        let Some((head, rest)) = item.split_once(':') else {
            return match item.to_ascii_lowercase().as_str() {
                "local" => Ok(Target::Local),
                "origin" => Ok(Target::Origin),
                "all" => Ok(Target::All),
                name => Platform::parse(name).map(Target::Home).ok_or_else(unknown),
            };
        };
        if head.eq_ignore_ascii_case("webhook") {
            let has_scheme = ["https://", "http://"].iter().any(|scheme| {
                rest.get(..scheme.len())
                    .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
            });
            if !has_scheme {
                return Err(unknown());
            }
            return Ok(Target::Webhook {
                url: rest.to_string(),
            });
        }
        let platform = Platform::parse(head).ok_or_else(unknown)?;
        let (chat, thread) = platform.split_chat(rest).ok_or_else(unknown)?;
        Ok(Target::Chat {
            platform,
            chat: chat.to_string(),
            thread: thread.map(str::to_string),
        })
    }
}

impl fmt::Display for Target {
    /// The canonical stored text of the item.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Local => f.write_str("local"),
            Target::Origin => f.write_str("origin"),
            Target::All => f.write_str("all"),
            Target::Home(platform) => f.write_str(platform.as_str()),
            Target::Chat {
                platform,
                chat,
                thread: None,
            } => write!(f, "{platform}:{chat}"),
            Target::Chat {
                platform,
                chat,
                thread: Some(thread),
            } => write!(f, "{platform}:{chat}:{thread}"),
            Target::Webhook { url } => write!(f, "webhook:{url}"),
        }
    }
}

/// The items of a `deliver` value as written: split on commas, trimmed, blanks
/// skipped. For callers that must judge each item on its own (delivery of a value
/// edited by hand); everyone else wants [`parse_deliver`].
pub fn deliver_items(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

/// Parses a whole `deliver` value: every item must be a [`Target`]; duplicates are
/// dropped, the first occurrence keeping its place. At least one target is required.
pub fn parse_deliver(value: &str) -> Result<Vec<Target>, TargetError> {
    let mut targets: Vec<Target> = Vec::new();
    for item in deliver_items(value) {
        let target = item.parse()?;
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    if targets.is_empty() {
        return Err(TargetError::Empty);
    }
    Ok(targets)
}

/// The stored text of a list of targets: their canonical forms joined by commas.
pub fn format_deliver(targets: &[Target]) -> String {
    targets
        .iter()
        .map(Target::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks a `deliver` value as typed at create or edit; returns the text to store.
pub fn validate_deliver(value: &str) -> Result<String, String> {
    parse_deliver(value)
        .map(|targets| format_deliver(&targets))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(platform: Platform, chat: &str, thread: Option<&str>) -> Target {
        Target::Chat {
            platform,
            chat: chat.into(),
            thread: thread.map(Into::into),
        }
    }

    fn webhook(url: &str) -> Target {
        Target::Webhook { url: url.into() }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(
            parse_deliver("local, origin ,all,telegram,slack:C42,telegram:-1001234567890:17,webhook:https://x.test/h"),
            Ok(vec![
                Target::Local,
                Target::Origin,
                Target::All,
                Target::Home(Platform::Telegram),
                chat(Platform::Slack, "C42", None),
                chat(Platform::Telegram, "-1001234567890", Some("17")),
                webhook("https://x.test/h"),
            ])
        );
    }

    #[test]
    fn the_canonical_form_round_trips() {
        for canonical in [
            "local",
            "origin,all",
            "telegram,discord,slack,whatsapp,signal,matrix,mattermost,email,sms,homeassistant,whatsapp_cloud,dingtalk,feishu",
            "matrix:!room:example.org:$event1",
            "signal:group:aGVsbG8=",
            "sms:+15551234567",
            "telegram:-1001234567890:17",
            "discord:123456789012345678",
            "matrix:!room:example.org",
            "webhook:https://example.com/Hook?token=A:b",
            "webhook:http://127.0.0.1:8080/hook",
            "telegram: 12 : 3 ",
        ] {
            let targets = parse_deliver(canonical).unwrap();
            assert_eq!(format_deliver(&targets), canonical.trim());
            assert_eq!(validate_deliver(canonical).as_deref(), Ok(canonical.trim()));
        }
    }

    #[test]
    fn case_is_folded_in_keywords_platforms_and_schemes_only() {
        assert_eq!(
            validate_deliver("LOCAL,Origin,ALL,TeleGram,HomeAssistant").as_deref(),
            Ok("local,origin,all,telegram,homeassistant")
        );
        assert_eq!(
            validate_deliver("Slack:CAbC:1712.5").as_deref(),
            Ok("slack:CAbC:1712.5")
        );
        assert_eq!(
            validate_deliver("WEBHOOK:HTTPS://Example.com/Hook").as_deref(),
            Ok("webhook:HTTPS://Example.com/Hook")
        );
        assert_eq!(Platform::parse("SMS"), Some(Platform::Sms));
        assert_eq!(Platform::parse(" sms"), None);
    }

    #[test]
    fn duplicates_are_dropped_in_order() {
        assert_eq!(
            validate_deliver("Telegram, origin,telegram").as_deref(),
            Ok("telegram,origin")
        );
        assert_eq!(
            validate_deliver("telegram:1:2,TELEGRAM:1:2,telegram:1,telegram:1:3").as_deref(),
            Ok("telegram:1:2,telegram:1,telegram:1:3")
        );
        // Chat ids and URLs are compared as written.
        assert_eq!(
            validate_deliver("webhook:https://a.test/X,webhook:https://a.test/x").as_deref(),
            Ok("webhook:https://a.test/X,webhook:https://a.test/x")
        );
    }

    #[test]
    fn thread_ids_are_optional_and_never_blank() {
        assert_eq!(
            "telegram:-100:17".parse(),
            Ok(chat(Platform::Telegram, "-100", Some("17")))
        );
        assert_eq!("slack:C1".parse(), Ok(chat(Platform::Slack, "C1", None)));
        for bad in [
            "telegram:",
            "telegram::5",
            "telegram:1:",
            "telegram:1: ",
            "telegram:1:2:3",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn webhooks_need_an_http_url() {
        assert_eq!(
            "webhook:https://x.test/a:b".parse(),
            Ok(webhook("https://x.test/a:b"))
        );
        assert_eq!("Webhook:http://x".parse(), Ok(webhook("http://x")));
        for bad in [
            "webhook",
            "webhook:",
            "webhook:ftp://x",
            "webhook: https://x",
            "webhook:https:/x",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_name_the_item_and_what_is_accepted() {
        assert_eq!(
            validate_deliver("local, pigeon ,telegram"),
            Err(
                "Unknown delivery target 'pigeon'. Use local, origin, all, a platform \
                 (telegram, discord, slack, whatsapp, signal, matrix, mattermost, email, sms, \
                 homeassistant, whatsapp_cloud, dingtalk, feishu, wecom, wecom_callback, weixin, \
                 bluebubbles, qqbot, yuanbao), <platform>:<chat_id>[:<thread_id>] or webhook:<https-url>"
                    .to_string()
            )
        );
        for bad in ["myspace:42", "telegram :1", "local:1", "all:1", "origin:x"] {
            assert_eq!(
                parse_deliver(bad),
                Err(TargetError::Unknown {
                    target: bad.to_string()
                }),
                "{bad}"
            );
        }
        for empty in ["", " ", ",", " , ,"] {
            assert_eq!(parse_deliver(empty), Err(TargetError::Empty), "{empty:?}");
        }
        assert_eq!(
            validate_deliver(","),
            Err("Empty delivery target: use local, origin, all or a platform name".to_string())
        );
    }

    #[test]
    fn platforms_know_their_names() {
        for platform in Platform::ALL {
            assert_eq!(Platform::parse(platform.as_str()), Some(platform));
        }
        assert_eq!(Platform::NAMES[9], "homeassistant");
    }

    #[test]
    fn chat_ids_follow_each_platforms_syntax() {
        assert_eq!(
            "matrix:!abc:example.org".parse(),
            Ok(chat(Platform::Matrix, "!abc:example.org", None))
        );
        assert_eq!(
            "matrix:!abc:example.org:$ev:example.org".parse(),
            Ok(chat(
                Platform::Matrix,
                "!abc:example.org",
                Some("$ev:example.org")
            ))
        );
        assert_eq!(
            "signal:group:aGk=".parse(),
            Ok(chat(Platform::Signal, "group:aGk=", None))
        );
        assert_eq!(
            "signal:+15551234567".parse(),
            Ok(chat(Platform::Signal, "+15551234567", None))
        );
        assert_eq!(
            "yuanbao:direct:10001".parse(),
            Ok(chat(Platform::Yuanbao, "direct:10001", None))
        );
        assert_eq!(
            "yuanbao:group:328306697".parse(),
            Ok(chat(Platform::Yuanbao, "group:328306697", None))
        );
        for bad in [
            "signal:group:",
            "signal:group:a:b",
            "yuanbao:direct:",
            "yuanbao:group:1:2",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }
}
