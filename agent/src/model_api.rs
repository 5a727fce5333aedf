//! One model call over HTTP in either API mode (docs/AGENT.md, "Model and provider"): OpenAI-compatible chat
//! completions or the native Anthropic Messages API. Both are converted to and from one
//! internal conversation form, so the loop never knows which it talks to. Every failure
//! is classified (docs/AGENT.md, "Retries and fallback"); retrying is not done here but in `retry`.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{json, Value};

use super::inference::{ApiMode, Endpoint};
use super::reasoning;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The system message: first, at most one.
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call the model asked for; `arguments` is the JSON text it sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of the conversation, in the form both API modes convert to.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant messages: the tools it asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: which call this answers.
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Message {
        Message {
            role: Role::System,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The model's turn: what it said and the tools it asked for.
    pub fn assistant(content: String, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            content,
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: &str, content: String) -> Message {
        Message {
            role: Role::Tool,
            content,
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.to_string()),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Every prompt token, the ones read from or written to the provider's cache too.
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// The part of `prompt_tokens` read from the provider's cache (billed lower).
    pub cache_read_tokens: i64,
}

/// The model's answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    pub message: Message,
    pub usage: Option<Usage>,
}

/// A tool as offered to the model. Built-in tools have static names; an MCP server's
/// are made at run time.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub parameters: Value,
}

/// What is sent on one call. `tools` empty = a call without tools.
pub struct ChatRequest<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// The reasoning effort to ask for (`None`: the server's own default).
    pub reasoning: Option<jobs::ReasoningEffort>,
}

/// The failure classes (docs/AGENT.md, "Retries and fallback"); their names appear in the job's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    RateLimit,
    Timeout,
    Auth,
    Server,
    Network,
    ContextLength,
    InvalidResponse,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Auth => "auth",
            ErrorClass::Server => "server",
            ErrorClass::Network => "network",
            ErrorClass::ContextLength => "context_length",
            ErrorClass::InvalidResponse => "invalid_response",
        }
    }
}

/// A failed call: its class, the HTTP status if there was one, the server's
/// `Retry-After`, and a short description.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", class.as_str())]
pub struct CallError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub retry_after: Option<Duration>,
    pub message: String,
}

/// What an answer with a success status lacks (an `invalid_response`).
#[derive(Debug, thiserror::Error)]
enum Missing {
    #[error("the answer has no choices")]
    Choices,
    #[error("a tool call has no function")]
    Function,
    #[error("a tool call has no name")]
    ToolName,
    #[error("the answer has no content")]
    Content,
    #[error("a tool_use block has no name")]
    ToolUseName,
}

impl CallError {
    fn new(class: ErrorClass, status: Option<u16>, message: impl Into<String>) -> CallError {
        CallError {
            class,
            status,
            retry_after: None,
            message: message.into(),
        }
    }
}

/// A fresh HTTP client (a fresh connection pool).
pub fn build_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(30).min(timeout))
        .user_agent(concat!("hermes-cron/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path)
}

fn messages_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        join_url(base, "messages")
    } else {
        join_url(base, "v1/messages")
    }
}

/// One call to the endpoint, no retries.
pub async fn call(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    request: &ChatRequest<'_>,
) -> Result<ModelReply, CallError> {
    let (url, mut body) = match endpoint.mode {
        ApiMode::ChatCompletions => (
            join_url(&endpoint.base_url, "chat/completions"),
            openai_body(&endpoint.model, request),
        ),
        ApiMode::AnthropicMessages => (
            messages_url(&endpoint.base_url),
            anthropic_body(&endpoint.model, request),
        ),
    };
    if let Some(effort) = request.reasoning {
        match endpoint.mode {
            ApiMode::ChatCompletions => reasoning::chat_completions(&mut body, endpoint, effort),
            ApiMode::AnthropicMessages => {
                reasoning::anthropic_messages(&mut body, &endpoint.model, effort)
            }
        }
    }
    let mut builder = client.post(&url).json(&body);
    match (endpoint.mode, &endpoint.api_key) {
        (ApiMode::ChatCompletions, Some(key)) => builder = builder.bearer_auth(key),
        (ApiMode::AnthropicMessages, Some(key)) => builder = builder.header("x-api-key", key),
        (_, None) => {}
    }
    if endpoint.mode == ApiMode::AnthropicMessages {
        builder = builder.header("anthropic-version", "2023-06-01");
    }
    let response = builder.send().await.map_err(transport_error)?;
    let status = response.status().as_u16();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
    };
    let retry_after = header(reqwest::header::RETRY_AFTER)
        .and_then(|text| parse_retry_after(text, header(reqwest::header::DATE)));
    let text = response.text().await.map_err(transport_error)?;
    if !(200..300).contains(&status) {
        let mut error = http_error(status, &text);
        error.retry_after = retry_after;
        // A 402 that says when to come back is a money error that passes (a top-up under
        // way, a spend window): waited out like a rate limit, or the job held past it,
        // never a permanent failure. Without `Retry-After` the credit is simply gone.
        if status == 402 && retry_after.is_some() {
            error.class = ErrorClass::RateLimit;
        }
        if let (ErrorClass::Auth, Some(vars)) = (error.class, &endpoint.missing_key) {
            error.message = format!(
                "{} (no API key was sent: set {vars} in the environment or the home's .env)",
                error.message
            );
        }
        return Err(error);
    }
    let value: Value = serde_json::from_str(&text).map_err(|_| {
        CallError::new(
            ErrorClass::InvalidResponse,
            Some(status),
            format!("the server's answer is not JSON: {}", snippet(&text)),
        )
    })?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(CallError::new(
            ErrorClass::InvalidResponse,
            Some(status),
            format!(
                "the server answered with an error: {}",
                snippet(&error.to_string())
            ),
        ));
    }
    match endpoint.mode {
        ApiMode::ChatCompletions => parse_openai(&value),
        ApiMode::AnthropicMessages => parse_anthropic(&value),
    }
    .map_err(|e| CallError::new(ErrorClass::InvalidResponse, Some(status), e.to_string()))
}

fn transport_error(e: reqwest::Error) -> CallError {
    let class = if e.is_timeout() {
        ErrorClass::Timeout
    } else {
        ErrorClass::Network
    };
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    CallError::new(class, None, text)
}

fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// `Retry-After` as seconds (fractions allowed) or an HTTP date. A date is measured
/// against the response's own `Date` (the server's clock, so a skewed local clock
/// changes nothing); without one, the date form is not used.
pub fn parse_retry_after(text: &str, server_date: Option<&str>) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(text).ok()?;
    let server_now = chrono::DateTime::parse_from_rfc2822(server_date?.trim()).ok()?;
    let wait = when.signed_duration_since(server_now);
    Some(
        wait.to_std()
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(3600)),
    )
}

fn http_error(status: u16, body: &str) -> CallError {
    let lower = body.to_ascii_lowercase();
    let context = status == 413
        || lower.contains("context_length")
        || lower.contains("context length")
        || lower.contains("maximum context")
        || lower.contains("too many tokens")
        || lower.contains("prompt is too long");
    let class = match status {
        429 => ErrorClass::RateLimit,
        401 | 403 => ErrorClass::Auth,
        _ if context && (400..500).contains(&status) => ErrorClass::ContextLength,
        408 => ErrorClass::Timeout,
        500..=599 => ErrorClass::Server,
        _ => ErrorClass::InvalidResponse,
    };
    CallError::new(
        class,
        Some(status),
        format!("HTTP {status}: {}", snippet(body)),
    )
}

fn openai_body(model: &str, request: &ChatRequest<'_>) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| match m.role {
            Role::System => json!({"role": "system", "content": m.content}),
            Role::User => json!({"role": "user", "content": m.content}),
            Role::Tool => json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": m.content,
            }),
            Role::Assistant if m.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": m.content})
            }
            Role::Assistant => json!({
                "role": "assistant",
                "content": if m.content.is_empty() { Value::Null } else { json!(m.content) },
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
        })
        .collect();
    let mut body = json!({"model": model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
    }
    body
}

/// A count under `path` in a usage object (0 when absent).
fn count(usage: &Value, path: &[&str]) -> i64 {
    path.iter()
        .try_fold(usage, |value, key| value.get(key))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Chat completions' `usage`: `prompt_tokens` counts the cached ones, which
/// `prompt_tokens_details.cached_tokens` names.
fn openai_usage(value: &Value) -> Option<Usage> {
    let usage = value.get("usage")?;
    Some(Usage {
        prompt_tokens: count(usage, &["prompt_tokens"]),
        completion_tokens: count(usage, &["completion_tokens"]),
        cache_read_tokens: count(usage, &["prompt_tokens_details", "cached_tokens"]),
    })
}

/// The Messages API's `usage`: `input_tokens` leaves out the tokens read from and
/// written to the cache, which are prompt tokens all the same (as Hermes counts them).
fn anthropic_usage(value: &Value) -> Option<Usage> {
    let usage = value.get("usage")?;
    let cache_read = count(usage, &["cache_read_input_tokens"]);
    let cache_write = count(usage, &["cache_creation_input_tokens"]);
    Some(Usage {
        prompt_tokens: count(usage, &["input_tokens"]) + cache_read + cache_write,
        completion_tokens: count(usage, &["output_tokens"]),
        cache_read_tokens: cache_read,
    })
}

fn parse_openai(value: &Value) -> Result<ModelReply, Missing> {
    let message = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| c.get("message"))
        .ok_or(Missing::Choices)?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let mut tool_calls = Vec::new();
    for (n, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let function = call.get("function").ok_or(Missing::Function)?;
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => "{}".to_string(),
            Some(other) => other.to_string(),
        };
        tool_calls.push(ToolCall {
            id: call
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{n}")),
            name: function
                .get("name")
                .and_then(Value::as_str)
                .ok_or(Missing::ToolName)?
                .to_string(),
            arguments,
        });
    }
    Ok(ModelReply {
        message: Message::assistant(content, tool_calls),
        usage: openai_usage(value),
    })
}

/// Anthropic's prompt-cache breakpoint; Hermes' default five-minute lifetime.
fn cache_marker() -> Value {
    json!({"type": "ephemeral"})
}

/// Anthropic allows four cache breakpoints: Hermes puts one on the system prompt and
/// one on each of the last three messages ("system_and_3"), so every call reuses the
/// cached prefix of the one before.
const CACHED_MESSAGES: usize = 3;

fn anthropic_body(model: &str, request: &ChatRequest<'_>) -> Value {
    // Anthropic wants alternating user/assistant turns: tool results are user-turn
    // `tool_result` blocks, and consecutive ones share one user message. `last_block`
    // remembers where each of our messages ended up, for the cache breakpoints.
    let mut messages: Vec<Value> = Vec::new();
    let mut system: Vec<Value> = Vec::new();
    let mut last_block: Vec<(usize, usize)> = Vec::new();
    for m in request.messages {
        let (role, blocks) = match m.role {
            Role::System => {
                system.push(json!({"type": "text", "text": m.content}));
                continue;
            }
            Role::User => ("user", vec![json!({"type": "text", "text": m.content})]),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input: Value =
                        serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if blocks.is_empty() {
                    // Nothing to say and nothing asked: Anthropic refuses empty blocks.
                    continue;
                }
                ("assistant", blocks)
            }
        };
        let open = messages.len().wrapping_sub(1);
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                    last_block.push((open, content.len() - 1));
                }
            }
            _ => {
                last_block.push((messages.len(), blocks.len() - 1));
                messages.push(json!({"role": role, "content": blocks}));
            }
        }
    }
    for &(message, block) in last_block.iter().rev().take(CACHED_MESSAGES) {
        messages[message]["content"][block]["cache_control"] = cache_marker();
    }
    let mut body = json!({"model": model, "max_tokens": 4096, "messages": messages});
    if let Some(last) = system.last_mut() {
        last["cache_control"] = cache_marker();
        body["system"] = Value::Array(system);
    }
    let history_has_tools = request.messages.iter().any(|m| !m.tool_calls.is_empty());
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    } else if history_has_tools {
        // A history with tool blocks must still declare a tool; `none` forbids using it.
        body["tools"] = json!([{"name": "unavailable", "description": "No tools are available now.", "input_schema": {"type": "object", "properties": {}}}]);
        body["tool_choice"] = json!({"type": "none"});
    }
    body
}

fn parse_anthropic(value: &Value) -> Result<ModelReply, Missing> {
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or(Missing::Content)?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                content.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("toolu")
                    .to_string(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or(Missing::ToolUseName)?
                    .to_string(),
                arguments: block
                    .get("input")
                    .cloned()
                    .unwrap_or_else(|| json!({}))
                    .to_string(),
            }),
            _ => {}
        }
    }
    Ok(ModelReply {
        message: Message::assistant(content, tool_calls),
        usage: anthropic_usage(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Anthropic request body for `messages`, offering no tools.
    fn anthropic(messages: &[Message]) -> Value {
        anthropic_body(
            "m",
            &ChatRequest {
                messages,
                tools: &[],
                reasoning: None,
            },
        )
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(http_error(429, "").class, ErrorClass::RateLimit);
        assert_eq!(http_error(401, "").class, ErrorClass::Auth);
        assert_eq!(http_error(413, "").class, ErrorClass::ContextLength);
        assert_eq!(
            http_error(400, "{\"error\":{\"code\":\"context_length_exceeded\"}}").class,
            ErrorClass::ContextLength
        );
        assert_eq!(http_error(503, "").class, ErrorClass::Server);
        assert_eq!(http_error(404, "").class, ErrorClass::InvalidResponse);
    }

    #[test]
    fn retry_after_reads_seconds() {
        assert_eq!(parse_retry_after("7", None), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", None),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_retry_after("soon", None), None);
        assert_eq!(
            parse_retry_after(
                "Mon, 23 Nov 2026 10:00:30 GMT",
                Some("Mon, 23 Nov 2026 10:00:00 GMT")
            ),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn anthropic_cache_breakpoints_are_the_system_and_the_last_three_messages() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "x".into(),
            arguments: "{}".into(),
        };
        let messages = vec![
            Message::system("sys"),
            Message::user("task"),
            Message::assistant(String::new(), vec![call("a"), call("b")]),
            Message::tool_result("a", "1".into()),
            Message::tool_result("b", "2".into()),
        ];
        let body = anthropic(&messages);
        assert_eq!(body["system"][0]["text"], "sys");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        let marked: Vec<String> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b.get("cache_control").is_some())
            .map(|b| {
                format!(
                    "{}:{}",
                    b["type"].as_str().unwrap_or(""),
                    b["tool_use_id"].as_str().or(b["id"].as_str()).unwrap_or("")
                )
            })
            .collect();
        // The user task is the fourth-last message: not marked.
        assert_eq!(marked, vec!["tool_use:b", "tool_result:a", "tool_result:b"]);
        let short = vec![Message::system("sys"), Message::user("task")];
        let body = anthropic(&short);
        assert_eq!(
            body["messages"][0]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
    }

    #[test]
    fn anthropic_tool_results_merge_into_one_user_turn() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant(
                String::new(),
                vec![
                    ToolCall {
                        id: "a".into(),
                        name: "x".into(),
                        arguments: "{}".into(),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "y".into(),
                        arguments: "{\"p\":1}".into(),
                    },
                ],
            ),
            Message::tool_result("a", "1".into()),
            Message::tool_result("b", "2".into()),
        ];
        let body = anthropic(&messages);
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(msgs[1]["content"][1]["input"]["p"], 1);
        assert_eq!(body["tool_choice"]["type"], "none");
    }
}
