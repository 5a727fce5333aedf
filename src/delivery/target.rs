//! From a job's `deliver` value to the places a message goes, resolved at send time
//! (SPEC §7): `local`, `origin` (else the first platform with a home channel, else
//! nothing), a bare platform (its home channel, unless the job's origin is on it),
//! `platform:chat[:thread]`, `all`, `webhook:<url>`. Duplicates collapse to one send.
//! Only reads the job and the [`Environment`]; never probes variables of platforms
//! that are not in [`jobs::deliver::PLATFORMS`].

use serde_json::Value;

use jobs::Job;

use crate::environment::Environment;

/// Platforms this build can send to, in the order `origin` falls back through.
pub const SENDABLE: &[&str] = &["telegram", "discord", "slack"];

/// One resolved place to send to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    Chat {
        platform: String,
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

    /// Reads back [`Destination::key`].
    pub fn from_key(key: &str) -> Option<Destination> {
        if let Some(url) = key.strip_prefix("webhook:") {
            return Some(Destination::Webhook {
                url: url.to_string(),
            });
        }
        let mut parts = key.splitn(3, ':');
        let platform = parts.next()?.to_string();
        let chat = parts.next()?.to_string();
        let thread = parts.next().map(str::to_string);
        Some(Destination::Chat {
            platform,
            chat,
            thread,
        })
    }
}

/// What a `deliver` value resolved to.
#[derive(Debug, Default, PartialEq)]
pub struct Resolution {
    pub destinations: Vec<Destination>,
    /// One message per target that resolved to nothing.
    pub errors: Vec<String>,
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The job's origin chat, when it has one.
fn origin_of(job: &Job) -> Option<Destination> {
    let origin = job.origin()?;
    let platform = text_of(origin.get("platform"))?.to_ascii_lowercase();
    let chat = text_of(origin.get("chat_id"))?;
    Some(Destination::Chat {
        platform,
        chat,
        thread: text_of(origin.get("thread_id")),
    })
}

/// `<PLATFORM>_HOME_CHANNEL` with its thread: `TELEGRAM_CRON_THREAD_ID` first for
/// Telegram, then `<PLATFORM>_HOME_CHANNEL_THREAD_ID`.
fn home_channel(platform: &str, env: &Environment) -> Option<Destination> {
    let var = format!("{}_HOME_CHANNEL", platform.to_ascii_uppercase());
    let chat = env.get(&var)?.to_string();
    let cron_thread = (platform == "telegram")
        .then(|| env.get("TELEGRAM_CRON_THREAD_ID"))
        .flatten();
    let thread = cron_thread
        .or_else(|| env.get(&format!("{var}_THREAD_ID")))
        .map(str::to_string);
    Some(Destination::Chat {
        platform: platform.to_string(),
        chat,
        thread,
    })
}

/// Resolves every comma-separated target of `deliver` for this job, now.
pub fn resolve(job: &Job, deliver: &str, env: &Environment) -> Resolution {
    let mut out = Resolution::default();
    let push = |out: &mut Resolution, d: Destination| {
        if !out.destinations.contains(&d) {
            out.destinations.push(d);
        }
    };
    for raw in deliver.split(',') {
        let target = raw.trim();
        if target.is_empty() {
            continue;
        }
        let lower = target.to_ascii_lowercase();
        let unresolved = || format!("no delivery target resolved for deliver={target}");
        match lower.as_str() {
            "local" => {}
            "origin" => {
                let found = origin_of(job).or_else(|| {
                    SENDABLE
                        .iter()
                        .find_map(|platform| home_channel(platform, env))
                });
                if let Some(d) = found {
                    push(&mut out, d);
                }
            }
            "all" => {
                let homes: Vec<Destination> = SENDABLE
                    .iter()
                    .filter_map(|platform| home_channel(platform, env))
                    .collect();
                if homes.is_empty() {
                    out.errors.push(unresolved());
                }
                for d in homes {
                    push(&mut out, d);
                }
            }
            _ if lower.starts_with("webhook:") => push(
                &mut out,
                Destination::Webhook {
                    url: target["webhook:".len()..].trim().to_string(),
                },
            ),
            _ => match lower.split_once(':') {
                None if jobs::deliver::PLATFORMS.contains(&lower.as_str()) => {
                    let from_origin = origin_of(job).filter(
                        |d| matches!(d, Destination::Chat { platform, .. } if *platform == lower),
                    );
                    match from_origin.or_else(|| home_channel(&lower, env)) {
                        Some(d) => push(&mut out, d),
                        None => out.errors.push(unresolved()),
                    }
                }
                Some((platform, _)) if jobs::deliver::PLATFORMS.contains(&platform) => {
                    let rest = &target[platform.len() + 1..];
                    let mut parts = rest.splitn(2, ':').map(str::trim);
                    let chat = parts.next().unwrap_or("");
                    let thread = parts.next().filter(|t| !t.is_empty());
                    if chat.is_empty() {
                        out.errors.push(unresolved());
                    } else {
                        push(
                            &mut out,
                            Destination::Chat {
                                platform: platform.to_string(),
                                chat: chat.to_string(),
                                thread: thread.map(str::to_string),
                            },
                        );
                    }
                }
                _ => out.errors.push(format!(
                    "unknown delivery target '{target}' (edit the job's --deliver)"
                )),
            },
        }
    }
    out
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

    fn chat(platform: &str, chat: &str, thread: Option<&str>) -> Destination {
        Destination::Chat {
            platform: platform.into(),
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
                chat("telegram", "111", Some("5")),
                chat("telegram", "-1001234567890", Some("17")),
                chat("slack", "C42", None),
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
        assert_eq!(r.destinations, vec![chat("telegram", "-100", Some("3"))]);
        let from_dc = job(json!({"platform": "discord", "chat_id": "77"}));
        let r = resolve(&from_dc, "telegram", &env);
        assert_eq!(r.destinations, vec![chat("telegram", "111", Some("9"))]);
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
            chat("telegram", "-100", Some("3")),
            chat("slack", "C1", None),
            Destination::Webhook {
                url: "https://x.test/a:b".into(),
            },
        ] {
            assert_eq!(Destination::from_key(&d.key()), Some(d));
        }
    }
}
