//! From a job's parsed `deliver` targets to the places a message goes, resolved at send
//! time: `origin` (else the first platform with a home channel, in the order of
//! [`super::platforms::ALL`], else nothing),
//! a bare platform (its home channel, unless the job's origin is on it), an explicit
//! chat, `all`, a webhook. Parsing belongs to [`jobs::target`]; this module only reads
//! the job and the [`Environment`], and never probes variables of names that are not a
//! [`Platform`].

use serde_json::Value;

use jobs::target::{deliver_items, Platform, Target};
use jobs::Job;

use super::platforms;
use foundation::environment::Environment;

/// One resolved place to send to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    Chat {
        platform: Platform,
        chat: String,
        thread: Option<String>,
    },
    Webhook {
        url: String,
    },
}

impl Destination {
    /// The stable text form, also the outbox key: `telegram:-100123:17`, `webhook:https://…`.
    pub fn key(&self) -> String {
        match self {
            Destination::Chat {
                platform,
                chat,
                thread: Some(thread),
            } => format!("{platform}:{chat}:{thread}"),
            Destination::Chat { platform, chat, .. } => format!("{platform}:{chat}"),
            Destination::Webhook { url } => format!("webhook:{url}"),
        }
    }

    /// Reads back [`Destination::key`] (chat ids split by their platform's syntax, as
    /// in `deliver`); `None` for a platform this build does not know.
    pub fn from_key(key: &str) -> Option<Destination> {
        if let Some(url) = key.strip_prefix("webhook:") {
            return Some(Destination::Webhook {
                url: url.to_string(),
            });
        }
        let (head, rest) = key.split_once(':')?;
        let platform = Platform::parse(head)?;
        let (chat, thread) = platform.split_chat(rest)?;
        Some(Destination::Chat {
            platform,
            chat: chat.to_string(),
            thread: thread.map(str::to_string),
        })
    }
}

/// What a `deliver` value resolved to.
#[derive(Debug, Default, PartialEq)]
pub struct Resolution {
    pub destinations: Vec<Destination>,
    /// One message per target that resolved to nothing or could not be read.
    pub errors: Vec<String>,
}

impl Resolution {
    /// Adds a destination unless an earlier target already reached it.
    fn push(&mut self, destination: Destination) {
        if !self.destinations.contains(&destination) {
            self.destinations.push(destination);
        }
    }
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An origin on a platform this build does not know (written by another Hermes).
#[derive(Debug, thiserror::Error)]
#[error("{platform}:{chat}{thread}: {}", super::cannot_send(.platform))]
struct UnknownOrigin {
    platform: String,
    chat: String,
    /// `:<thread>`, or nothing.
    thread: String,
}

/// The job's origin chat, when it has one. An origin on a platform this build does not
/// know is the delivery error for it.
fn origin_of(job: &Job) -> Option<Result<Destination, UnknownOrigin>> {
    let origin = job.origin()?;
    let name = text_of(origin.get("platform"))?;
    let chat = text_of(origin.get("chat_id"))?;
    let thread = text_of(origin.get("thread_id"));
    Some(match Platform::parse(&name) {
        Some(platform) => Ok(Destination::Chat {
            platform,
            chat,
            thread,
        }),
        None => Err(UnknownOrigin {
            platform: name.to_ascii_lowercase(),
            chat,
            thread: thread.map(|t| format!(":{t}")).unwrap_or_default(),
        }),
    })
}

/// The variable naming a platform's home channel, as Python Hermes names it
/// (`_HOME_TARGET_ENV_VARS`): `MATRIX_HOME_ROOM`, `EMAIL_HOME_ADDRESS`, else
/// `<PLATFORM>_HOME_CHANNEL`. Home Assistant, WeCom callback apps and Yuanbao have
/// none in Hermes' cron: their targets are explicit.
pub fn home_var(platform: Platform) -> Option<String> {
    let home = platforms::describe(platform)?.home?;
    Some(home.var.to_string())
}

/// The home channel with its thread: the platform's cron thread variable first
/// (`TELEGRAM_CRON_THREAD_ID`), then `<HOME VAR>_THREAD_ID`. A former name of the home
/// variable (`QQ_HOME_CHANNEL`) is still read when the current one is unset, as Hermes
/// does.
pub fn home_channel(platform: Platform, env: &Environment) -> Option<Destination> {
    let home = platforms::describe(platform)?.home?;
    let chat = env
        .get(home.var)
        .or_else(|| home.former.and_then(|var| env.get(var)))?
        .to_string();
    let thread = home
        .cron_thread
        .and_then(|var| env.get(var))
        .or_else(|| env.get(&format!("{}_THREAD_ID", home.var)))
        .map(str::to_string);
    Some(Destination::Chat {
        platform,
        chat,
        thread,
    })
}

/// Why a job's delivery cannot work as things are set now (for `hermes cron doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unready {
    /// A target that resolves to nothing or to a platform this build cannot send to.
    Target(String),
    /// A variable the platform needs (a credential, or the home channel a bare
    /// platform target reads) is not set.
    Unset { platform: Platform, var: String },
}

/// Everything that keeps the job's targets from being delivered to now: unset home
/// channels named by their variable, platforms without a sender, unset credentials.
pub fn unready(job: &Job, env: &Environment) -> Vec<Unready> {
    let resolution = resolve(job, &job.deliver(), env);
    let mut found = Vec::new();
    let mut explained = Vec::new();
    let mut found_on: Vec<Platform> = Vec::new();
    for item in deliver_items(&job.deliver()) {
        let Ok(Target::Home(platform)) = item.parse::<Target>() else {
            continue;
        };
        let on_origin = origin_of(job)
            .and_then(Result::ok)
            .is_some_and(|o| matches!(o, Destination::Chat { platform: on, .. } if on == platform));
        if on_origin || home_channel(platform, env).is_some() {
            continue;
        }
        explained.push(format!("no delivery target resolved for deliver={item}"));
        found_on.push(platform);
        found.push(match home_var(platform) {
            Some(var) => Unready::Unset { platform, var },
            None => Unready::Target(format!(
                "{platform} has no home channel: name the target, e.g. {platform}:notify_target"
            )),
        });
    }
    for error in resolution.errors {
        if !explained.contains(&error) {
            found.push(Unready::Target(error));
        }
    }
    for destination in &resolution.destinations {
        if let Destination::Chat { platform, .. } = destination {
            if !found_on.contains(platform) {
                found_on.push(*platform);
            }
        }
    }
    for platform in found_on {
        for var in platforms::required_vars(platform) {
            if super::sender::setting(env, var).is_none() {
                found.push(Unready::Unset {
                    platform,
                    var: var.to_string(),
                });
            }
        }
    }
    found
}

/// Resolves every target of `deliver` for this job, now. Each item is parsed on its
/// own, so one item edited by hand into something unreadable is reported while the
/// others are still delivered; a repeated target is resolved once.
pub fn resolve(job: &Job, deliver: &str, env: &Environment) -> Resolution {
    let mut out = Resolution::default();
    let mut seen: Vec<Target> = Vec::new();
    for item in deliver_items(deliver) {
        match item.parse::<Target>() {
            Ok(target) if seen.contains(&target) => {}
            Ok(target) => {
                resolve_target(job, item, &target, env, &mut out);
                seen.push(target);
            }
            Err(_) => out.errors.push(format!(
                "unknown delivery target '{item}' (edit the job's --deliver)"
            )),
        }
    }
    out
}

/// Resolves one target, written as `item` in the job.
fn resolve_target(job: &Job, item: &str, target: &Target, env: &Environment, out: &mut Resolution) {
    let unresolved = || format!("no delivery target resolved for deliver={item}");
    match target {
        Target::Local => {}
        Target::Origin => match origin_of(job) {
            Some(Ok(destination)) => out.push(destination),
            Some(Err(error)) => out.errors.push(error.to_string()),
            None => {
                let home = platforms::ALL
                    .iter()
                    .find_map(|d| home_channel(d.platform, env));
                if let Some(destination) = home {
                    out.push(destination);
                }
            }
        },
        Target::All => {
            let homes: Vec<Destination> = platforms::ALL
                .iter()
                .filter_map(|d| home_channel(d.platform, env))
                .collect();
            if homes.is_empty() {
                out.errors.push(unresolved());
            }
            for destination in homes {
                out.push(destination);
            }
        }
        Target::Home(platform) => {
            let from_origin = origin_of(job).and_then(Result::ok).filter(
                |origin| matches!(origin, Destination::Chat { platform: on, .. } if on == platform),
            );
            match from_origin.or_else(|| home_channel(*platform, env)) {
                Some(destination) => out.push(destination),
                None => out.errors.push(unresolved()),
            }
        }
        Target::Chat {
            platform,
            chat,
            thread,
        } => out.push(Destination::Chat {
            platform: *platform,
            chat: chat.trim().to_string(),
            thread: thread.as_deref().map(|t| t.trim().to_string()),
        }),
        Target::Webhook { url } => out.push(Destination::Webhook { url: url.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(origin: Value) -> Job {
        let mut record = serde_json::Map::new();
        record.insert("id".into(), json!("abcdef012345"));
        record.insert("origin".into(), origin);
        Job::from_record(record)
    }

    fn chat(platform: Platform, chat: &str, thread: Option<&str>) -> Destination {
        Destination::Chat {
            platform,
            chat: chat.into(),
            thread: thread.map(Into::into),
        }
    }

    #[test]
    fn resolves_the_grammar() {
        let env = Environment::from_pairs(&[
            ("TELEGRAM_HOME_CHANNEL", "111"),
            ("TELEGRAM_HOME_CHANNEL_THREAD_ID", "5"),
            ("SLACK_HOME_CHANNEL", "C42"),
        ]);
        let plain = job(Value::Null);
        let r = resolve(
            &plain,
            "local,telegram,telegram:-1001234567890:17,all,origin",
            &env,
        );
        assert_eq!(
            r.destinations,
            vec![
                chat(Platform::Telegram, "111", Some("5")),
                chat(Platform::Telegram, "-1001234567890", Some("17")),
                chat(Platform::Slack, "C42", None),
            ]
        );
        assert!(r.errors.is_empty());
        let r = resolve(&plain, "discord", &env);
        assert_eq!(
            r.errors,
            vec!["no delivery target resolved for deliver=discord"]
        );
    }

    #[test]
    fn origin_wins_on_its_platform_and_cron_thread_overrides() {
        let env = Environment::from_pairs(&[
            ("TELEGRAM_HOME_CHANNEL", "111"),
            ("TELEGRAM_CRON_THREAD_ID", "9"),
            ("TELEGRAM_HOME_CHANNEL_THREAD_ID", "5"),
        ]);
        let from_tg = job(json!({"platform": "telegram", "chat_id": "-100", "thread_id": 3}));
        let r = resolve(&from_tg, "telegram,origin", &env);
        assert_eq!(
            r.destinations,
            vec![chat(Platform::Telegram, "-100", Some("3"))]
        );
        let from_dc = job(json!({"platform": "discord", "chat_id": "77"}));
        let r = resolve(&from_dc, "telegram", &env);
        assert_eq!(
            r.destinations,
            vec![chat(Platform::Telegram, "111", Some("9"))]
        );
    }

    #[test]
    fn an_originless_origin_without_home_channels_is_nothing_not_an_error() {
        let r = resolve(&job(Value::Null), "origin", &Environment::default());
        assert_eq!(r, Resolution::default());
        let r = resolve(&job(Value::Null), "all", &Environment::default());
        assert_eq!(
            r.errors,
            vec!["no delivery target resolved for deliver=all"]
        );
    }

    #[test]
    fn keys_round_trip() {
        for d in [
            chat(Platform::Telegram, "-100", Some("3")),
            chat(Platform::Slack, "C1", None),
            chat(Platform::Matrix, "!room:example.org", Some("$event")),
            chat(Platform::Matrix, "!room:example.org", None),
            chat(Platform::Signal, "group:aGk=", None),
            Destination::Webhook {
                url: "https://x.test/a:b".into(),
            },
        ] {
            assert_eq!(Destination::from_key(&d.key()), Some(d));
        }
    }

    #[test]
    fn keys_are_the_stored_outbox_text() {
        assert_eq!(
            chat(Platform::Telegram, "-100123", Some("17")).key(),
            "telegram:-100123:17"
        );
        assert_eq!(
            chat(Platform::HomeAssistant, "x", None).key(),
            "homeassistant:x"
        );
        assert_eq!(Destination::from_key("pigeon:1"), None);
    }

    #[test]
    fn an_unreadable_item_is_reported_and_the_others_still_resolve() {
        let env = Environment::from_pairs(&[("SLACK_HOME_CHANNEL", "C42")]);
        let r = resolve(
            &job(Value::Null),
            "telegram:1:2:3, slack,slack, telegram: 5 ",
            &env,
        );
        assert_eq!(
            r.destinations,
            vec![
                chat(Platform::Slack, "C42", None),
                chat(Platform::Telegram, "5", None)
            ]
        );
        assert_eq!(
            r.errors,
            vec!["unknown delivery target 'telegram:1:2:3' (edit the job's --deliver)"]
        );
    }

    #[test]
    fn an_origin_on_an_unknown_platform_is_an_error_not_a_fallback() {
        let env = Environment::from_pairs(&[("TELEGRAM_HOME_CHANNEL", "111")]);
        let from_irc = job(json!({"platform": "IRC", "chat_id": "#ops", "thread_id": 4}));
        let r = resolve(&from_irc, "origin", &env);
        assert!(r.destinations.is_empty());
        assert_eq!(
            r.errors,
            vec![format!("irc:#ops:4: {}", super::super::cannot_send("irc"))]
        );
        let r = resolve(&from_irc, "telegram", &env);
        assert_eq!(r.destinations, vec![chat(Platform::Telegram, "111", None)]);
    }
}
