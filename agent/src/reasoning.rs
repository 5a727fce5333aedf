//! The reasoning effort on the wire (docs/AGENT.md, "Reasoning effort"), as Hermes 0.22
//! sends it to each kind of endpoint: OpenRouter's `reasoning` object, Anthropic's
//! thinking parameters, and the top-level `reasoning_effort` of every other
//! OpenAI-compatible server. Levels no wire accepts are lowered the way Hermes lowers
//! them (`ultra` is asked as `max`). It only adds keys to a request body being built.

use serde_json::{json, Value};

use jobs::ReasoningEffort;

use super::inference::Endpoint;

/// The widest level set of OpenAI-compatible servers: `ultra` is Hermes' own tier.
fn chat_level(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::Ultra => "max",
        other => other.as_str(),
    }
}

fn is_openrouter(endpoint: &Endpoint) -> bool {
    endpoint.provider == "openrouter"
        || reqwest::Url::parse(&endpoint.base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|host| host == "openrouter.ai" || host.ends_with(".openrouter.ai"))
}

/// Adds the effort to a chat-completions body.
pub fn chat_completions(body: &mut Value, endpoint: &Endpoint, effort: ReasoningEffort) {
    if is_openrouter(endpoint) {
        body["reasoning"] = match effort {
            ReasoningEffort::None => json!({"enabled": false}),
            level => json!({"enabled": true, "effort": chat_level(level)}),
        };
    } else {
        body["reasoning_effort"] = json!(chat_level(effort));
    }
}

/// Claude models before adaptive thinking, which take a token budget instead.
const MANUAL_THINKING: &[&str] = &[
    "claude-3",
    "claude-opus-4-0",
    "claude-opus-4.0",
    "claude-opus-4-1",
    "claude-opus-4.1",
    "claude-sonnet-4-0",
    "claude-sonnet-4.0",
    "claude-opus-4-2025",
    "claude-sonnet-4-2025",
    "claude-opus-4-5",
    "claude-opus-4.5",
    "claude-sonnet-4-5",
    "claude-sonnet-4.5",
    "claude-haiku-4-5",
    "claude-haiku-4.5",
];
/// Adaptive models that refuse `xhigh` (asked as `max` there).
const NO_XHIGH: &[&str] = &[
    "claude-opus-4-6",
    "claude-opus-4.6",
    "claude-sonnet-4-6",
    "claude-sonnet-4.6",
];
/// Adaptive models that must think: a disable is refused, so none is sent.
const MUST_THINK: &[&str] = &["claude-fable", "claude-opus-5-5", "claude-opus-5.5"];
/// Adaptive models whose "off" is thinking only between tool calls.
const BETWEEN_TOOLS_OFF: &[&str] = &["claude-sonnet-5-5", "claude-sonnet-5.5"];

fn matches(model: &str, families: &[&str]) -> bool {
    families.iter().any(|family| model.contains(family))
}

/// Haiku generations that never get a thinking request (through 4.5).
fn haiku_without_thinking(model: &str) -> bool {
    model.contains("haiku")
        && !["haiku-5-5", "haiku-5.5", "haiku-6", "haiku-7"]
            .iter()
            .any(|newer| model.contains(newer))
}

/// Adds the effort to an Anthropic Messages body: adaptive thinking with
/// `output_config.effort` for Claude 4.6 and later (and Kimi), a thinking budget for
/// older models and other Anthropic-compatible ones, nothing for the Haiku generations
/// that cannot think.
pub fn anthropic_messages(body: &mut Value, model: &str, effort: ReasoningEffort) {
    let model = model.to_ascii_lowercase();
    let claude = model.contains("claude");
    let adaptive = model.contains("kimi") || (claude && !matches(&model, MANUAL_THINKING));
    if effort == ReasoningEffort::None {
        if claude && adaptive && matches(&model, BETWEEN_TOOLS_OFF) {
            body["thinking"] = json!({"type": "between_tools"});
        } else if claude && adaptive && !matches(&model, MUST_THINK) {
            body["thinking"] = json!({"type": "disabled"});
        }
        return;
    }
    if haiku_without_thinking(&model) {
        return;
    }
    if adaptive {
        let level = match effort {
            ReasoningEffort::Ultra | ReasoningEffort::Max => "max",
            ReasoningEffort::Xhigh if matches(&model, NO_XHIGH) => "max",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::High => "high",
            ReasoningEffort::Low | ReasoningEffort::Minimal => "low",
            _ => "medium",
        };
        body["thinking"] = json!({"type": "adaptive", "display": "summarized"});
        body["output_config"] = json!({"effort": level});
        return;
    }
    let budget: u64 = match effort {
        ReasoningEffort::Xhigh => 32_000,
        ReasoningEffort::High => 16_000,
        ReasoningEffort::Low => 4_000,
        _ => 8_000,
    };
    let max_tokens = body["max_tokens"].as_u64().unwrap_or(4096);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    body["temperature"] = json!(1);
    body["max_tokens"] = json!(max_tokens.max(budget + 4096));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::ApiMode;

    fn endpoint(provider: &str, base_url: &str) -> Endpoint {
        Endpoint {
            provider: provider.into(),
            model: "m".into(),
            base_url: base_url.into(),
            api_key: None,
            missing_key: None,
            mode: ApiMode::ChatCompletions,
        }
    }

    #[test]
    fn chat_servers_get_a_top_level_effort_and_openrouter_its_reasoning_object() {
        let mut body = json!({});
        chat_completions(
            &mut body,
            &endpoint("custom", "http://127.0.0.1:9/v1"),
            ReasoningEffort::Ultra,
        );
        assert_eq!(body, json!({"reasoning_effort": "max"}));
        let mut body = json!({});
        chat_completions(
            &mut body,
            &endpoint("custom", "https://openrouter.ai/api/v1"),
            ReasoningEffort::High,
        );
        assert_eq!(
            body,
            json!({"reasoning": {"enabled": true, "effort": "high"}})
        );
        let mut body = json!({});
        chat_completions(
            &mut body,
            &endpoint("openrouter", "http://127.0.0.1:9/v1"),
            ReasoningEffort::None,
        );
        assert_eq!(body, json!({"reasoning": {"enabled": false}}));
    }

    #[test]
    fn anthropic_models_think_adaptively_or_on_a_budget_by_generation() {
        let body = |model: &str, effort| {
            let mut body = json!({"max_tokens": 4096});
            anthropic_messages(&mut body, model, effort);
            body
        };
        assert_eq!(
            body("claude-sonnet-4-6", ReasoningEffort::Xhigh),
            json!({"max_tokens": 4096, "thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "max"}})
        );
        assert_eq!(
            body("claude-opus-4-7", ReasoningEffort::Minimal)["output_config"],
            json!({"effort": "low"})
        );
        assert_eq!(
            body("claude-sonnet-4-5", ReasoningEffort::High),
            json!({"max_tokens": 20096, "thinking": {"type": "enabled", "budget_tokens": 16000}, "temperature": 1})
        );
        assert_eq!(
            body("claude-haiku-4-5", ReasoningEffort::High),
            json!({"max_tokens": 4096})
        );
        assert_eq!(
            body("claude-opus-4-7", ReasoningEffort::None)["thinking"],
            json!({"type": "disabled"})
        );
        assert_eq!(
            body("claude-sonnet-4-5", ReasoningEffort::None),
            json!({"max_tokens": 4096})
        );
    }
}
