//! The `cronjob` tool's arguments as a model sends them, read leniently where models
//! are known to stray from the schema (a number for a chat id, a list for `deliver`, the
//! `{model, provider}` object Python Hermes' schema uses) and turned into the texts the
//! job lifecycle takes. Never touches the store.

use serde::Deserialize;
use serde_json::{Map, Value};

use jobs::Platform;

/// Why a call's arguments cannot be read; each message says what to send instead.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    #[error("Invalid argument '{path}': {reason}")]
    WrongType { path: String, reason: String },
    #[error("Invalid repeat {0}: use a whole number")]
    Repeat(Value),
    #[error("Invalid deliver {0}: use a text such as 'origin' or 'telegram:-100123:17'")]
    Deliver(Value),
    #[error("Invalid failure_deliver {0}: use a text such as 'local' or 'telegram:-100123:17'")]
    FailureDeliver(Value),
    #[error("Invalid jitter {0}: give a duration such as '5m', or a whole number of seconds")]
    Jitter(Value),
    #[error("Invalid context_from {0}: use a list of job ids, e.g. [\"a1b2c3d4e5f6\"]")]
    ContextFrom(Value),
    #[error("Invalid enabled_toolsets {0}: use a list of toolset names, e.g. [\"web\", \"file\"], or [] for no tool")]
    Toolsets(Value),
    /// A spending cap that is not a number (the lifecycle judges the number).
    #[error("Invalid argument: {0}")]
    Cap(String),
    #[error("A job's model and provider are its owner's to choose: this tool cannot set them. Ask the user to run 'hermes cron edit JOB --model …', or pass pinned=true when the user asks to pin the configured model")]
    ModelPin,
    #[error("origin needs platform and chat_id, e.g. {{\"platform\": \"telegram\", \"chat_id\": \"-1001234567890\"}}")]
    NoOriginPlatform,
    #[error("Unknown origin platform '{0}': use one of {known}", known = known_platforms())]
    UnknownOriginPlatform(String),
    #[error("origin needs chat_id: the id of the chat the request came from")]
    NoOriginChat,
    #[error("origin chat_id '{chat}'{thread} is not a {platform} chat: outside Matrix rooms and Signal groups an id holds no ':', and a Matrix thread is an event id ('$…')")]
    OriginChatShape {
        chat: String,
        /// ` with thread_id '…'`, or empty.
        thread: String,
        platform: String,
    },
}

fn known_platforms() -> String {
    let known: Vec<&str> = Platform::ALL.iter().map(|p| p.as_str()).collect();
    known.join(", ")
}

/// Every argument of the tool; unknown keys are ignored, as Python Hermes does.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Arguments {
    pub action: String,
    pub job_id: Option<String>,
    pub schedule: Option<String>,
    pub prompt: Option<String>,
    pub name: Option<String>,
    pub repeat: Option<Value>,
    pub deliver: Option<Value>,
    pub skills: Option<Vec<String>>,
    pub script: Option<String>,
    pub no_agent: Option<bool>,
    pub workdir: Option<String>,
    /// `strict`, `standard` or `off` (docs/SAFETY.md, "Sandbox").
    pub sandbox: Option<String>,
    pub model: Option<Value>,
    pub provider: Option<String>,
    pub timezone: Option<String>,
    pub reason: Option<String>,
    pub include_disabled: Option<bool>,
    pub origin: Option<Map<String, Value>>,
    pub paused: Option<bool>,
    pub paused_reason: Option<String>,
    pub failure_deliver: Option<Value>,
    /// Hermes 0.22's one monitor field: an http(s) URL, else a script path.
    pub monitor: Option<String>,
    /// The stored fields `monitor` splits into, accepted too as Hermes 0.22 does.
    pub monitor_script: Option<String>,
    pub monitor_url: Option<String>,
    pub continuity: Option<bool>,
    pub overlap: Option<String>,
    pub pinned: Option<bool>,
    /// `{"job": ID, "on": "success"}`, or a job id; on update `""` removes the chain.
    pub after: Option<Value>,
    /// For redeliver: the finished run to send again, and where instead of its targets.
    pub run_id: Option<i64>,
    pub to: Option<String>,
    pub max_turns: Option<Value>,
    pub max_runtime_seconds: Option<Value>,
    pub max_tokens: Option<Value>,
    pub max_cost_usd: Option<Value>,
    pub start_at: Option<String>,
    pub until: Option<String>,
    /// A span (`"5m"`) or whole seconds.
    pub jitter: Option<Value>,
    /// Jobs whose newest output each run is given: a list of ids (one id as a text
    /// too, as Hermes 0.22 takes it).
    pub context_from: Option<Value>,
    /// The only toolsets the job's agent gets; `[]` none. On update `""` gives every
    /// tool again.
    pub enabled_toolsets: Option<Value>,
}

impl Arguments {
    /// Reads the call's arguments; a value of the wrong type is named in the error.
    pub fn parse(arguments: Option<Map<String, Value>>) -> Result<Arguments, ArgumentError> {
        let value = Value::Object(arguments.unwrap_or_default());
        serde_path_to_error::deserialize(value).map_err(|e| ArgumentError::WrongType {
            path: e.path().to_string(),
            reason: e.into_inner().to_string(),
        })
    }

    /// `context_from` as a list of references (`None`: not given).
    pub fn context_from_list(&self) -> Result<Option<Vec<String>>, ArgumentError> {
        match &self.context_from {
            None | Some(Value::Null) => Ok(None),
            Some(value) => jobs::reach::refs_json(value)
                .map(Some)
                .map_err(|_| ArgumentError::ContextFrom(value.clone())),
        }
    }

    /// `enabled_toolsets`: `None` not given, `Some(None)` every tool (`""`),
    /// `Some(Some(names))` only those (`[]`: none; a comma text is read as its list).
    pub fn toolsets(&self) -> Result<Option<Option<Vec<String>>>, ArgumentError> {
        match &self.enabled_toolsets {
            None | Some(Value::Null) => Ok(None),
            Some(value) => jobs::reach::toolsets_json(value)
                .map(Some)
                .map_err(|_| ArgumentError::Toolsets(value.clone())),
        }
    }

    /// `repeat` as the lifecycle reads it: a count, or "forever" for 0 and below
    /// (Python Hermes' rule); a word ("once", "forever") passes through.
    pub fn repeat_text(&self) -> Result<Option<String>, ArgumentError> {
        match &self.repeat {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(count) if count <= 0 => Ok(Some("forever".into())),
                Some(count) => Ok(Some(count.to_string())),
                None => Err(ArgumentError::Repeat(Value::Number(n.clone()))),
            },
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(ArgumentError::Repeat(other.clone())),
        }
    }

    /// `deliver` as one comma-separated text; a list is joined (some clients send one).
    pub fn deliver_text(&self) -> Result<Option<String>, ArgumentError> {
        targets_text(&self.deliver, ArgumentError::Deliver)
    }

    /// Refuses a model or provider pin: per-job pins are the user's (Hermes 0.22's
    /// tool does not forward them either). Empty values pass, as a model re-sending
    /// every field with its default would send them.
    pub fn refuse_model_pins(&self) -> Result<(), ArgumentError> {
        let given = |value: Option<&Value>| match value {
            None | Some(Value::Null) => false,
            Some(Value::String(text)) => !text.trim().is_empty(),
            Some(Value::Object(pins)) => !pins.is_empty(),
            Some(_) => true,
        };
        let provider = self.provider.as_ref().map(|p| Value::String(p.clone()));
        if given(self.model.as_ref()) || given(provider.as_ref()) {
            return Err(ArgumentError::ModelPin);
        }
        Ok(())
    }

    /// The spending caps given, as the lifecycle reads them (`0` clears one on update).
    pub fn caps(&self) -> Result<jobs::CapTexts, ArgumentError> {
        jobs::CapTexts::from_json(|key| match key {
            "max_turns" => self.max_turns.as_ref(),
            "max_runtime_seconds" => self.max_runtime_seconds.as_ref(),
            "max_tokens" => self.max_tokens.as_ref(),
            "max_cost_usd" => self.max_cost_usd.as_ref(),
            _ => None,
        })
        .map_err(ArgumentError::Cap)
    }

    /// `start_at`, `until` and `jitter` as the lifecycle reads them (`''` clears one on
    /// update; a number of seconds is a jitter too).
    pub fn window(&self) -> Result<jobs::WindowTexts, ArgumentError> {
        let jitter = match &self.jitter {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(n)) if n.as_u64().is_some() => Some(format!("{n}s")),
            Some(other) => return Err(ArgumentError::Jitter(other.clone())),
        };
        Ok(jobs::WindowTexts {
            start_at: self.start_at.clone(),
            until: self.until.clone(),
            jitter,
        })
    }

    /// `failure_deliver` as one comma-separated text, like `deliver`.
    pub fn failure_deliver_text(&self) -> Result<Option<String>, ArgumentError> {
        targets_text(&self.failure_deliver, ArgumentError::FailureDeliver)
    }

    /// `monitor` split into the stored `(monitor_script, monitor_url)` as Hermes 0.22
    /// splits it: an http(s) URL is the URL, anything else the script; setting one clears
    /// the other, `""` clears both; without `monitor`, the two fields as given.
    pub fn monitor_pair(&self) -> (Option<String>, Option<String>) {
        let Some(monitor) = &self.monitor else {
            return (self.monitor_script.clone(), self.monitor_url.clone());
        };
        let value = monitor.trim();
        let lower = value.to_ascii_lowercase();
        if value.is_empty() {
            (Some(String::new()), Some(String::new()))
        } else if lower.starts_with("http://") || lower.starts_with("https://") {
            (Some(String::new()), Some(value.to_string()))
        } else {
            (Some(value.to_string()), Some(String::new()))
        }
    }

    /// The origin as the lifecycle's `PLATFORM:CHAT[:THREAD]`, checked so that the text
    /// splits back into exactly the chat and thread given.
    pub fn origin_text(&self) -> Result<Option<String>, ArgumentError> {
        let Some(origin) = &self.origin else {
            return Ok(None);
        };
        let field = |key: &str| {
            origin
                .get(key)
                .and_then(scalar_text)
                .map(|text| text.trim().to_string())
                .filter(|text| !text.is_empty())
        };
        let Some(name) = field("platform") else {
            return Err(ArgumentError::NoOriginPlatform);
        };
        let Some(platform) = Platform::parse(&name) else {
            return Err(ArgumentError::UnknownOriginPlatform(name));
        };
        let Some(chat) = field("chat_id") else {
            return Err(ArgumentError::NoOriginChat);
        };
        let thread = field("thread_id");
        let rest = match &thread {
            Some(thread) => format!("{chat}:{thread}"),
            None => chat.clone(),
        };
        if platform.split_chat(&rest) != Some((chat.as_str(), thread.as_deref())) {
            let thread = thread
                .map(|t| format!(" with thread_id '{t}'"))
                .unwrap_or_default();
            return Err(ArgumentError::OriginChatShape {
                chat,
                thread,
                platform: platform.to_string(),
            });
        }
        Ok(Some(format!("{}:{rest}", platform.as_str())))
    }
}

/// A targets value as one comma-separated text: a text, or a list joined; anything else
/// is refused with `invalid`.
fn targets_text(
    value: &Option<Value>,
    invalid: fn(Value) -> ArgumentError,
) -> Result<Option<String>, ArgumentError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Array(items)) => {
            let parts: Vec<String> = items.iter().filter_map(scalar_text).collect();
            Ok(Some(parts.join(",")))
        }
        Some(other) => Err(invalid(other.clone())),
    }
}

/// A text or a number as text (chat ids are often sent as numbers).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Arguments {
        let Value::Object(map) = value else {
            panic!("an object")
        };
        Arguments::parse(Some(map)).unwrap()
    }

    #[test]
    fn origin_accepts_numeric_ids_and_keeps_a_matrix_room_colon() {
        let telegram = args(
            json!({"action": "create", "origin": {"platform": "Telegram", "chat_id": -1001234567890i64, "thread_id": 17}}),
        );
        assert_eq!(
            telegram.origin_text().unwrap().as_deref(),
            Some("telegram:-1001234567890:17")
        );
        let matrix = args(
            json!({"action": "create", "origin": {"platform": "matrix", "chat_id": "!room:example.org"}}),
        );
        assert_eq!(
            matrix.origin_text().unwrap().as_deref(),
            Some("matrix:!room:example.org")
        );
    }

    #[test]
    fn origin_without_a_chat_or_with_a_colon_in_a_plain_chat_id_is_refused() {
        let missing = args(json!({"action": "create", "origin": {"platform": "telegram"}}));
        assert!(missing
            .origin_text()
            .unwrap_err()
            .to_string()
            .contains("chat_id"));
        let colon = args(
            json!({"action": "create", "origin": {"platform": "slack", "chat_id": "C1:x", "thread_id": "9"}}),
        );
        assert!(colon
            .origin_text()
            .unwrap_err()
            .to_string()
            .contains("holds no ':'"));
        let unknown =
            args(json!({"action": "create", "origin": {"platform": "pigeon", "chat_id": "1"}}));
        assert!(unknown
            .origin_text()
            .unwrap_err()
            .to_string()
            .starts_with("Unknown origin platform 'pigeon'"));
    }

    #[test]
    fn repeat_zero_means_forever_and_a_wrong_type_names_the_argument() {
        assert_eq!(
            args(json!({"action": "update", "repeat": 0}))
                .repeat_text()
                .unwrap()
                .as_deref(),
            Some("forever")
        );
        let Value::Object(map) = json!({"action": "list", "include_disabled": "yes"}) else {
            unreachable!()
        };
        let error = Arguments::parse(Some(map)).unwrap_err().to_string();
        assert!(
            error.starts_with("Invalid argument 'include_disabled'"),
            "{error}"
        );
    }
}
