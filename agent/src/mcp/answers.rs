//! What the model gets back from an MCP server: a tool's result, a resource list or
//! text, a prompt list or prompt, as Hermes renders each, capped like the built-in
//! tools' results.

use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};

use super::{error, RESULT_CAP};

/// A tool's result as Hermes hands it to the model: the text of its content blocks (an
/// embedded text resource by its text, anything binary by a short description), with
/// `structuredContent` beside it when the server sent one; an error result as `error`.
pub(super) fn render(result: &CallToolResult) -> String {
    let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let mut parts: Vec<String> = Vec::new();
    for block in blocks.as_array().into_iter().flatten() {
        let text = |v: &Value| v.as_str().filter(|t| !t.is_empty()).map(str::to_string);
        let part = match block["type"].as_str() {
            Some("text") => text(&block["text"]),
            Some("resource") => text(&block["resource"]["text"]).or_else(|| {
                Some(format!(
                    "[resource {}: {} binary data, not shown]",
                    block["resource"]["uri"].as_str().unwrap_or("?"),
                    block["resource"]["mimeType"].as_str().unwrap_or("")
                ))
            }),
            Some("resource_link") => Some(format!(
                "[resource link: {}]",
                block["uri"].as_str().unwrap_or("?")
            )),
            Some(kind @ ("image" | "audio")) => Some(format!(
                "[{kind} ({}), not shown]",
                block["mimeType"].as_str().unwrap_or("unknown type")
            )),
            _ => None,
        };
        parts.extend(part);
    }
    let text = cap(&parts.join("\n"));
    if result.is_error == Some(true) {
        let text = if text.is_empty() {
            "MCP tool returned an error".to_string()
        } else {
            text
        };
        return error(text);
    }
    match &result.structured_content {
        Some(structured) if !text.is_empty() => {
            json!({"result": text, "structuredContent": structured}).to_string()
        }
        Some(structured) => json!({"result": structured}).to_string(),
        None => json!({"result": text}).to_string(),
    }
}

/// `{"resources": [{uri, name, description?, mimeType?}]}`, as Hermes lists them.
pub(super) fn listed_resources<T: serde::Serialize>(resources: &[T]) -> String {
    let keep = ["uri", "name", "description", "mimeType"];
    let items: Vec<Value> = resources
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .map(|r| picked(&r, &keep))
        .collect();
    json!({"resources": items}).to_string()
}

/// The texts of a resource's contents (binary ones by their size), as `result`.
pub(super) fn read_resource<T: serde::Serialize>(result: &T) -> String {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let parts: Vec<String> = items(&result, "contents")
        .filter_map(|c| match (c["text"].as_str(), c["blob"].as_str()) {
            (Some(text), _) => Some(text.to_string()),
            (None, Some(blob)) => Some(format!("[binary data, {} bytes]", blob.len() / 4 * 3)),
            _ => None,
        })
        .collect();
    json!({"result": cap(&parts.join("\n"))}).to_string()
}

/// `{"prompts": [{name, description?, arguments: [{name, description?, required}]}]}`.
pub(super) fn listed_prompts<T: serde::Serialize>(prompts: &[T]) -> String {
    let items: Vec<Value> = prompts
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .map(|p| {
            let mut item = picked(&p, &["name", "description"]);
            let arguments: Vec<Value> = items(&p, "arguments")
                .map(|a| {
                    let mut argument = picked(a, &["name", "description"]);
                    argument["required"] = json!(a["required"].as_bool().unwrap_or(false));
                    argument
                })
                .collect();
            item["arguments"] = json!(arguments);
            item
        })
        .collect();
    json!({"prompts": items}).to_string()
}

/// `{"messages": [{role, content}], "description"?}`: each message's text.
pub(super) fn got_prompt<T: serde::Serialize>(result: &T) -> String {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let messages: Vec<Value> = items(&result, "messages")
        .map(|m| {
            let content = &m["content"];
            let text = content["text"]
                .as_str()
                .map(str::to_string)
                .or_else(|| content.as_str().map(str::to_string))
                .unwrap_or_else(|| content.to_string());
            json!({"role": m["role"], "content": text})
        })
        .collect();
    let mut out = json!({"messages": messages});
    if let Some(description) = result["description"].as_str().filter(|d| !d.is_empty()) {
        out["description"] = json!(description);
    }
    out.to_string()
}

/// The elements of the list `value[key]`; none when it is not a list.
fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value[key].as_array().into_iter().flatten()
}

/// The keys of `value` among `keys` that hold something.
fn picked(value: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        match &value[*key] {
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            v => {
                out.insert(key.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn cap(text: &str) -> String {
    match text.char_indices().nth(RESULT_CAP) {
        Some((at, _)) => format!(
            "{}\n[... truncated at {RESULT_CAP} characters]",
            &text[..at]
        ),
        None => text.to_string(),
    }
}
