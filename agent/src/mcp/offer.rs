//! What the model is offered of one MCP server: its tools as `mcp__<server>__<tool>`
//! after the server's `tools` filter and `agent.disabled_toolsets`, Hermes' resource and
//! prompt helpers, and input schemas repaired so every provider accepts them.

use serde_json::{json, Map, Value};

use super::{tool_name, Route};
use crate::config::McpServer;
use crate::logged::logged;
use crate::model_api::ToolSpec;

/// The tools of one server the run offers: `tools.include` (wins) or `tools.exclude`
/// by the server's own names, then Hermes' resource and prompt helpers when the server
/// advertises those and `tools.resources` / `tools.prompts` are not false; less the
/// names in `agent.disabled_toolsets` and any name an earlier server already took.
pub(super) fn offer(
    config: &McpServer,
    tools: Vec<rmcp::model::Tool>,
    (resources, prompts): (bool, bool),
    disabled: &[String],
    taken: &[String],
) -> Vec<(ToolSpec, Route)> {
    let filter = &config.tools;
    let wanted = |tool: &str| {
        if !filter.include.is_empty() {
            filter.include.iter().any(|t| t == tool)
        } else {
            !filter.exclude.iter().any(|t| t == tool)
        }
    };
    let mut candidates: Vec<(String, String, Value, Route)> = Vec::new();
    for tool in tools {
        let own = tool.name.to_string();
        if !wanted(&own) {
            continue;
        }
        let description = match tool.description.as_deref() {
            Some(d) if !d.trim().is_empty() => d.to_string(),
            _ => format!("MCP tool {own} from {}", config.name),
        };
        let schema = normalize_schema(Value::Object(tool.input_schema.as_ref().clone()));
        candidates.push((
            tool_name(&config.name, &own),
            description,
            schema,
            Route::Tool(own),
        ));
    }
    let server = &config.name;
    let no_arguments = json!({"type": "object", "properties": {}});
    if resources && filter.resources != Some(false) {
        candidates.push((
            tool_name(server, "list_resources"),
            format!("List available resources from MCP server '{server}'"),
            no_arguments.clone(),
            Route::ListResources,
        ));
        candidates.push((
            tool_name(server, "read_resource"),
            format!("Read a resource by URI from MCP server '{server}'"),
            json!({"type": "object", "properties": {"uri": {"type": "string", "description": "URI of the resource to read"}}, "required": ["uri"]}),
            Route::ReadResource,
        ));
    }
    if prompts && filter.prompts != Some(false) {
        candidates.push((
            tool_name(server, "list_prompts"),
            format!("List available prompts from MCP server '{server}'"),
            no_arguments,
            Route::ListPrompts,
        ));
        candidates.push((
            tool_name(server, "get_prompt"),
            format!("Get a prompt by name from MCP server '{server}'"),
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "Name of the prompt to retrieve"},
                "arguments": {"type": "object", "description": "Optional arguments to pass to the prompt", "properties": {}, "additionalProperties": true}
            }, "required": ["name"]}),
            Route::GetPrompt,
        ));
    }
    let mut offered: Vec<(ToolSpec, Route)> = Vec::new();
    for (name, description, parameters, route) in candidates {
        if disabled.iter().any(|d| d == &name) {
            continue;
        }
        if taken.contains(&name) || offered.iter().any(|(spec, _)| spec.name == name) {
            tracing::warn!(server = %config.name, "MCP tool '{}' is named '{}' like a tool offered before it; skipped", logged(route.label()), logged(&name));
            continue;
        }
        let spec = ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        };
        offered.push((spec, route));
    }
    offered
}

/// An input schema every provider accepts, as Hermes repairs it: an empty one is an
/// object without properties, an object node has `type` and `properties`, `required`
/// names only properties that exist, and `definitions` refs become `$defs`.
pub fn normalize_schema(schema: Value) -> Value {
    fn repair(node: Value, property_names: bool) -> Value {
        match node {
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|n| repair(n, false)).collect())
            }
            Value::Object(map) if property_names => Value::Object(
                map.into_iter()
                    .map(|(name, schema)| (name, repair(schema, false)))
                    .collect(),
            ),
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, value) in map {
                    let names_follow = matches!(key.as_str(), "properties" | "patternProperties");
                    let key = if key == "definitions" {
                        "$defs".to_string()
                    } else {
                        key
                    };
                    out.insert(key, repair(value, names_follow));
                }
                if let Some(Value::String(r)) = out.get_mut("$ref") {
                    if let Some(rest) = r.strip_prefix("#/definitions/") {
                        *r = format!("#/$defs/{rest}");
                    }
                }
                let untyped = out.get("type").is_none_or(Value::is_null);
                if untyped && (out.contains_key("properties") || out.contains_key("required")) {
                    out.insert("type".into(), json!("object"));
                }
                if out.get("type") == Some(&json!("object")) {
                    if !out.get("properties").is_some_and(Value::is_object) {
                        out.insert("properties".into(), json!({}));
                    }
                    let known: Vec<String> = out["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    if let Some(Value::Array(required)) = out.get("required") {
                        let kept: Vec<Value> = required
                            .iter()
                            .filter(|r| r.as_str().is_some_and(|r| known.iter().any(|k| k == r)))
                            .cloned()
                            .collect();
                        if kept.is_empty() {
                            out.remove("required");
                        } else {
                            out.insert("required".into(), Value::Array(kept));
                        }
                    }
                }
                Value::Object(out)
            }
            other => other,
        }
    }
    match repair(schema, false) {
        Value::Object(map) if map.is_empty() => json!({"type": "object", "properties": {}}),
        Value::Object(map) => Value::Object(map),
        _ => json!({"type": "object", "properties": {}}),
    }
}
