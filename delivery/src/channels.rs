//! Channel names in delivery targets — `discord:#engineering`, `slack:#general`,
//! `telegram:@channel`, `mattermost:~town-square`, `matrix:#room:server` — resolved to
//! the ids the send APIs take, through each platform's own directory API, at send
//! time. Answers are cached in memory for as long as the delivery lives ([`Cache`], see
//! [`TTL`]); nothing is written to disk. It never sends a message: every request here is
//! a lookup.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use sha2::Digest;
use tokio::time::Instant;

use jobs::target::Platform;

use super::http::{seconds, snippet, Answer, Failure, Judge, Link, Pace, Verdict};
use super::sender::{base, settings, Description};
use super::Shared;
use foundation::environment::Environment;

/// How long a resolved name is trusted. A name missing from the cache, or older than
/// this, is looked up again, so a channel renamed or recreated under the same name is
/// followed within this time; a lookup is one or two cheap requests.
pub const TTL: Duration = Duration::from_secs(600);

/// At most this many channel names are listed in an "unknown channel" error.
const LISTED: usize = 25;

/// Whether `chat` is a name to resolve on its platform (it starts with the platform's
/// sigil).
pub fn is_name(description: &Description, chat: &str) -> bool {
    description
        .sigil
        .is_some_and(|s| chat.starts_with(s) && chat.len() > 1)
}

/// The resolved names of one account (platform, API base, token) in this process.
#[derive(Default)]
struct Account {
    /// Name (as written, lowercased where the platform ignores case) → id, and when
    /// it was learnt.
    ids: HashMap<String, (String, Instant)>,
}

/// The names resolved by one delivery, per account.
#[derive(Default)]
pub struct Cache {
    /// Guards the accounts; held only to read or add names, never across an await.
    accounts: Mutex<HashMap<String, Account>>,
}

impl Cache {
    fn cached(&self, account: &str, name: &str) -> Option<String> {
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        let (id, at) = accounts.get(account)?.ids.get(name)?;
        (at.elapsed() < TTL).then(|| id.clone())
    }

    fn remember(&self, account: &str, names: impl IntoIterator<Item = (String, String)>) {
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        let ids = &mut accounts.entry(account.to_string()).or_default().ids;
        let now = Instant::now();
        for (name, id) in names {
            ids.insert(name, (id, now));
        }
    }
}

/// The cache key of an account: never the token itself.
fn account_key(platform: Platform, base: &str, token: &str) -> String {
    let digest = sha2::Sha256::digest(token.as_bytes());
    format!("{platform}|{base}|{}", hex::encode(&digest[..8]))
}

/// What a directory lookup found: the id, or the names that exist (for the error).
enum Found {
    Id(String),
    Missing(Vec<String>),
}

/// The id to send to for `chat`: `chat` itself unless it is a name, else the id its
/// platform's directory gives (from the cache when fresh). An unknown name is a final
/// failure naming the channels that exist where the platform can list them.
pub async fn resolve(
    shared: &Shared,
    env: &Environment,
    description: &Description,
    chat: &str,
) -> Result<String, Failure> {
    if !is_name(description, chat) {
        return Ok(chat.to_string());
    }
    let platform = description.platform;
    let (base, token) = account(env, description)?;
    let account = account_key(platform, base, token);
    let key = normalized(platform, chat);
    if let Some(id) = shared.channels.cached(&account, &key) {
        return Ok(id);
    }
    let directory = Directory {
        link: Link::new(shared, platform.as_str(), "directory", Pace::Free),
        base,
        token,
    };
    let found = match platform {
        Platform::Discord => directory.discord(&key).await?,
        Platform::Slack => directory.slack(&key).await?,
        Platform::Telegram => directory.telegram(chat).await?,
        Platform::Mattermost => directory.mattermost(&key).await?,
        Platform::Matrix => directory.matrix(chat).await?,
        _ => return Ok(chat.to_string()),
    };
    match found {
        Found::Id(id) => {
            shared.channels.remember(&account, [(key, id.clone())]);
            tracing::debug!(%platform, name = chat, id, "channel name resolved");
            Ok(id)
        }
        Found::Missing(names) => Err(Failure::Final(unknown(platform, chat, &names))),
    }
}

/// Names are matched without their sigil; Discord, Slack and Mattermost channel names
/// are lowercase, so case is ignored there. A Telegram username or Matrix alias is
/// kept whole.
fn normalized(platform: Platform, chat: &str) -> String {
    match platform {
        Platform::Discord | Platform::Slack | Platform::Mattermost => {
            chat[1..].trim().to_lowercase()
        }
        _ => chat.trim().to_string(),
    }
}

fn unknown(platform: Platform, chat: &str, names: &[String]) -> String {
    let what = match platform {
        Platform::Telegram => "chat",
        Platform::Matrix => "room alias",
        _ => "channel",
    };
    let mut text = format!("unknown {platform} {what} {chat}");
    if names.is_empty() {
        match platform {
            Platform::Telegram => text.push_str(
                " (Telegram finds public @usernames only: use the numeric chat id of a private chat)",
            ),
            _ => text.push_str(" (the bot sees no channels: invite it to one)"),
        }
        return text;
    }
    let shown: Vec<&str> = names.iter().take(LISTED).map(String::as_str).collect();
    let more = names.len().saturating_sub(LISTED);
    text.push_str(&format!(": the bot sees {}", shown.join(", ")));
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// The API base and token of the platform's account, as its sender reads them: a
/// token and a base variable, or a server and a token.
fn account<'e>(
    env: &'e Environment,
    description: &Description,
) -> Result<(&'e str, &'e str), Failure> {
    let vars = settings(env, description)?;
    Ok(match description.base {
        Some(_) => (base(env, description), vars[0]),
        None => (vars[0], vars.get(1).copied().unwrap_or_default()),
    })
}

/// A directory request's answer: 2xx taken, 429 waited out, 5xx retried, the rest
/// final with the platform's words.
fn judge(answer: &Answer) -> (Verdict, String) {
    let body = answer.json();
    let said = ["message", "description", "error"]
        .iter()
        .find_map(|k| body[*k].as_str())
        .map_or_else(|| snippet(&answer.body), str::to_string);
    let text = format!("channel lookup failed: {} {said}", answer.status);
    let verdict = match answer.status {
        200..=299 => Verdict::Done,
        429 => Verdict::RateLimited(
            answer
                .retry_after
                .or(body["retry_after"].as_f64().map(seconds))
                .unwrap_or(Duration::from_secs(1)),
        ),
        500..=599 => Verdict::Retry,
        _ => Verdict::Final,
    };
    (verdict, text)
}

/// One account's directory: where its lookups go and the token they carry.
struct Directory<'a> {
    link: Link<'a>,
    base: &'a str,
    token: &'a str,
}

impl Directory<'_> {
    /// A GET with the account's token, as its platform takes it.
    fn get(&self, client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        match self.link.platform {
            "discord" => client
                .get(url)
                .header("Authorization", format!("Bot {}", self.token)),
            _ => client.get(url).bearer_auth(self.token),
        }
    }

    /// GETs `url` as a lookup step, returning the JSON answer.
    async fn get_json(&self, url: &str, judge: Judge<'_>) -> Result<Value, Failure> {
        let build = |c: &reqwest::Client| self.get(c, url);
        Ok(self.link.step(&build, judge).await?.json())
    }

    /// [`Directory::get_json`] where a 404 means "no such name": `None` then.
    async fn lookup_json(&self, url: &str) -> Result<Option<Value>, Failure> {
        let not_found_is_an_answer = |answer: &Answer| match answer.status {
            404 => (Verdict::Done, String::new()),
            _ => judge(answer),
        };
        let build = |c: &reqwest::Client| self.get(c, url);
        let answer = self.link.step(&build, &not_found_is_an_answer).await?;
        Ok((answer.status != 404).then(|| answer.json()))
    }

    /// Discord: every text, announcement and forum channel of every server the bot is in
    /// (`GET /users/@me/guilds`, then `GET /guilds/<id>/channels`).
    async fn discord(&self, name: &str) -> Result<Found, Failure> {
        let base = self.base;
        let guilds = self
            .get_json(&format!("{base}/users/@me/guilds"), &judge)
            .await?;
        let mut matches = Vec::new();
        let mut names = Vec::new();
        for guild in guilds.as_array().into_iter().flatten() {
            let (Some(guild_id), guild_name) =
                (guild["id"].as_str(), guild["name"].as_str().unwrap_or(""))
            else {
                continue;
            };
            let url = format!("{base}/guilds/{guild_id}/channels");
            let channels = self.get_json(&url, &judge).await?;
            for channel in channels.as_array().into_iter().flatten() {
                let text_like = matches!(channel["type"].as_u64(), Some(0 | 5 | 15));
                let (Some(id), Some(channel_name)) =
                    (channel["id"].as_str(), channel["name"].as_str())
                else {
                    continue;
                };
                if !text_like {
                    continue;
                }
                names.push(format!("#{channel_name} ({guild_name})"));
                if channel_name.to_lowercase() == name {
                    matches.push((id.to_string(), guild_name.to_string()));
                }
            }
        }
        match matches.as_slice() {
            [] => Ok(Found::Missing(names)),
            [(id, _)] => Ok(Found::Id(id.clone())),
            several => Err(Failure::Final(format!(
                "discord channel #{name} exists in several servers ({}): use its channel id",
                several
                    .iter()
                    .map(|(_, g)| g.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Slack: `conversations.list` of public and private channels, page by page
    /// (`response_metadata.next_cursor`). Slack refuses inside HTTP 200 (`ok: false`).
    async fn slack(&self, name: &str) -> Result<Found, Failure> {
        let base = self.base;
        let slack_judge = |answer: &Answer| {
            let body = answer.json();
            match (answer.status, body["ok"].as_bool(), body["error"].as_str()) {
                (200, Some(false), Some("ratelimited")) => (
                    Verdict::RateLimited(answer.retry_after.unwrap_or(Duration::from_secs(1))),
                    "channel lookup failed: ratelimited".to_string(),
                ),
                (200, Some(false), error) => (
                    Verdict::Final,
                    format!(
                        "channel lookup failed: conversations.list: {}",
                        error.unwrap_or("not ok")
                    ),
                ),
                _ => judge(answer),
            }
        };
        let mut names = Vec::new();
        let mut cursor = String::new();
        // Slack pages at most 1000 channels; 50 pages is a workspace far beyond a bot's.
        for _ in 0..50 {
            let mut url = format!(
            "{base}/conversations.list?types=public_channel,private_channel&exclude_archived=true&limit=200"
        );
            if !cursor.is_empty() {
                url.push_str("&cursor=");
                url.push_str(
                    &percent_encoding::utf8_percent_encode(
                        &cursor,
                        percent_encoding::NON_ALPHANUMERIC,
                    )
                    .to_string(),
                );
            }
            let page = self.get_json(&url, &slack_judge).await?;
            for channel in page["channels"].as_array().into_iter().flatten() {
                let (Some(id), Some(channel_name)) =
                    (channel["id"].as_str(), channel["name"].as_str())
                else {
                    continue;
                };
                if channel_name.to_lowercase() == name {
                    return Ok(Found::Id(id.to_string()));
                }
                names.push(format!("#{channel_name}"));
            }
            cursor = page["response_metadata"]["next_cursor"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if cursor.is_empty() {
                break;
            }
        }
        Ok(Found::Missing(names))
    }

    /// Telegram: `getChat` with the `@username` gives the chat's numeric id. Telegram has
    /// no list of a bot's chats, so an unknown one names none.
    async fn telegram(&self, username: &str) -> Result<Found, Failure> {
        let url = format!("{}/bot{}/getChat", self.base, self.token);
        let telegram_judge = |answer: &Answer| match answer.status {
            400 => (Verdict::Done, String::new()),
            _ => judge(answer),
        };
        let body = serde_json::json!({"chat_id": username});
        let build = |c: &reqwest::Client| c.post(&url).json(&body);
        let answer = self.link.step(&build, &telegram_judge).await?;
        match &answer.json()["result"]["id"] {
            Value::Number(id) => Ok(Found::Id(id.to_string())),
            _ => Ok(Found::Missing(Vec::new())),
        }
    }

    /// Mattermost: the channel of that name in each team the bot belongs to
    /// (`GET /api/v4/users/me/teams`, then `GET /api/v4/teams/<team>/channels/name/<name>`);
    /// when none has it, the bot's channels are listed for the error.
    async fn mattermost(&self, name: &str) -> Result<Found, Failure> {
        let base = self.base;
        let teams = self
            .get_json(&format!("{base}/api/v4/users/me/teams"), &judge)
            .await?;
        let team_ids: Vec<&str> = teams
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["id"].as_str())
            .collect();
        let path_name =
            percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        for team in &team_ids {
            let url = format!("{base}/api/v4/teams/{team}/channels/name/{path_name}");
            let channel = self.lookup_json(&url).await?;
            if let Some(id) = channel.as_ref().and_then(|c| c["id"].as_str()) {
                return Ok(Found::Id(id.to_string()));
            }
        }
        let mut names = Vec::new();
        for team in &team_ids {
            let url = format!("{base}/api/v4/users/me/teams/{team}/channels");
            let channels = self.get_json(&url, &judge).await?;
            names.extend(
                channels
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| matches!(c["type"].as_str(), Some("O" | "P")))
                    .filter_map(|c| c["name"].as_str().map(|n| format!("~{n}"))),
            );
        }
        Ok(Found::Missing(names))
    }

    /// Matrix: the room directory maps an alias to its room id
    /// (`GET /_matrix/client/v3/directory/room/<alias>`); an unknown alias lists the
    /// rooms the account has joined.
    async fn matrix(&self, alias: &str) -> Result<Found, Failure> {
        let base = self.base;
        let path = percent_encoding::utf8_percent_encode(alias, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        let url = format!("{base}/_matrix/client/v3/directory/room/{path}");
        let room = self.lookup_json(&url).await?;
        if let Some(id) = room.as_ref().and_then(|r| r["room_id"].as_str()) {
            return Ok(Found::Id(id.to_string()));
        }
        let joined = self
            .get_json(&format!("{base}/_matrix/client/v3/joined_rooms"), &judge)
            .await?;
        let names = joined["joined_rooms"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect();
        Ok(Found::Missing(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_platform_s_own_sigil_marks_a_name() {
        let is_name = |platform, chat| {
            super::super::platforms::describe(platform).is_some_and(|d| is_name(d, chat))
        };
        assert!(is_name(Platform::Discord, "#general"));
        assert!(is_name(Platform::Matrix, "#ops:example.org"));
        assert!(!is_name(Platform::Matrix, "!ops:example.org"));
        assert!(is_name(Platform::Telegram, "@news"));
        assert!(!is_name(Platform::Telegram, "-100123"));
        assert!(is_name(Platform::Mattermost, "~town-square"));
        assert!(!is_name(Platform::Slack, "C0123"));
        assert!(!is_name(Platform::Slack, "#"));
        assert!(!is_name(Platform::Signal, "#x"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_resolved_name_is_trusted_for_the_ttl_then_looked_up_again() {
        let account = account_key(Platform::Slack, "http://x", "token");
        assert!(!account.contains("token"));
        let cache = Cache::default();
        cache.remember(&account, [("general".to_string(), "C1".to_string())]);
        assert_eq!(cache.cached(&account, "general").as_deref(), Some("C1"));
        assert_eq!(cache.cached(&account, "random"), None);
        tokio::time::advance(TTL + Duration::from_secs(1)).await;
        assert_eq!(cache.cached(&account, "general"), None);
    }

    #[test]
    fn an_unknown_name_lists_at_most_a_few_channels() {
        let names: Vec<String> = (0..30).map(|n| format!("#c{n}")).collect();
        let text = unknown(Platform::Slack, "#x", &names);
        assert!(text.starts_with("unknown slack channel #x: the bot sees #c0, #c1"));
        assert!(text.ends_with("#c24 and 5 more"), "{text}");
    }
}
