//! The `todo` tool (Hermes' `tools/todo_tool.py`, same schema and result): the agent's own
//! task list for one run. It lives in the run's `ToolContext` and dies with it: nothing
//! is written to disk, nothing is shared between runs or jobs.

use serde_json::{json, Map, Value};

use super::{error, ready, Schema, Tool, ToolContext, ToolFuture};

const STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "cancelled"];
/// Hermes' bounds: one item's text, and the number of items kept (the head: order is priority).
const MAX_CONTENT_CHARS: usize = 4000;
const MAX_ITEMS: usize = 256;
const TRUNCATION_MARKER: &str = "… [truncated]";

pub struct Todo;

impl Tool for Todo {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        ready(run(args, &ctx.todos))
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("todo", "todo", DESCRIPTION, parameters())
    }
}

/// One item, always complete and valid.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    id: String,
    content: String,
    status: String,
}

/// The list of one run.
#[derive(Debug, Default)]
pub struct TodoList {
    items: Vec<Item>,
}

/// A field of a model-given item as text (`"7"` for `7`), trimmed; `None` when absent.
fn field(item: &Map<String, Value>, key: &str) -> Option<String> {
    match item.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.trim().to_string()),
        other => Some(other.to_string()),
    }
}

fn cap_content(content: &str) -> String {
    if content.chars().count() <= MAX_CONTENT_CHARS {
        return content.to_string();
    }
    let keep = MAX_CONTENT_CHARS - TRUNCATION_MARKER.chars().count();
    content.chars().take(keep).collect::<String>() + TRUNCATION_MARKER
}

fn known_status(status: Option<String>) -> Option<String> {
    status
        .map(|s| s.to_lowercase())
        .filter(|s| STATUSES.contains(&s.as_str()))
}

/// A model-given item made whole, as Hermes does: `?` for a missing id,
/// `(no description)` for missing text, `pending` for an unknown status.
fn validate(value: &Value) -> Item {
    let Some(item) = value.as_object() else {
        return Item {
            id: "?".into(),
            content: "(invalid item)".into(),
            status: "pending".into(),
        };
    };
    let id = field(item, "id").filter(|s| !s.is_empty());
    let content = field(item, "content").filter(|s| !s.is_empty());
    Item {
        id: id.unwrap_or_else(|| "?".into()),
        content: content.map_or_else(|| "(no description)".into(), |c| cap_content(&c)),
        status: known_status(field(item, "status")).unwrap_or_else(|| "pending".into()),
    }
}

/// The items with duplicate ids collapsed to the last one, in its position.
fn dedupe_by_id(items: &[Value]) -> Vec<&Value> {
    let key = |n: usize, v: &Value| match v.as_object() {
        Some(o) => field(o, "id")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "?".into()),
        None => format!("\0invalid {n}"),
    };
    let last: std::collections::HashMap<String, usize> = items
        .iter()
        .enumerate()
        .map(|(n, v)| (key(n, v), n))
        .collect();
    let mut keep: Vec<usize> = last.into_values().collect();
    keep.sort_unstable();
    keep.into_iter().map(|n| &items[n]).collect()
}

impl TodoList {
    fn write(&mut self, todos: &[Value], merge: bool) {
        let todos = dedupe_by_id(todos);
        if !merge {
            self.items = todos.into_iter().map(validate).collect();
        } else {
            for given in todos {
                let Some(object) = given.as_object() else {
                    continue;
                };
                let Some(id) = field(object, "id").filter(|s| !s.is_empty()) else {
                    continue; // nothing to merge on
                };
                match self.items.iter_mut().find(|i| i.id == id) {
                    Some(existing) => {
                        if let Some(content) = field(object, "content").filter(|s| !s.is_empty()) {
                            existing.content = cap_content(&content);
                        }
                        if let Some(status) = known_status(field(object, "status")) {
                            existing.status = status;
                        }
                    }
                    None => self.items.push(validate(given)),
                }
            }
        }
        self.items.truncate(MAX_ITEMS);
    }

    fn result(&self) -> String {
        let count = |s: &str| self.items.iter().filter(|i| i.status == s).count();
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|i| json!({"id": i.id, "content": i.content, "status": i.status}))
            .collect();
        json!({
            "todos": items,
            "summary": {
                "total": self.items.len(),
                "pending": count("pending"),
                "in_progress": count("in_progress"),
                "completed": count("completed"),
                "cancelled": count("cancelled"),
            },
        })
        .to_string()
    }
}

/// One call: `todos` given writes (replacing, or merging by id), absent reads.
fn run(args: &Value, list: &std::sync::Mutex<TodoList>) -> String {
    let Ok(mut list) = list.lock() else {
        return error("the todo list of this run is unusable after a failed call");
    };
    let todos = match args.get("todos") {
        None | Some(Value::Null) => return list.result(),
        // Models sometimes send the list as a JSON string (Hermes accepts that too).
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed) => parsed,
            Err(_) => return error("todos must be a list of objects, got unparseable string"),
        },
        Some(other) => other.clone(),
    };
    let Value::Array(todos) = todos else {
        return error(format!("todos must be a list, got {}", kind(&todos)));
    };
    let merge = args.get("merge").and_then(Value::as_bool).unwrap_or(false);
    list.write(&todos, merge);
    list.result()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// What the model reads about `todo` (Hermes' words).
const DESCRIPTION: &str = "Manage your task list for the current session. Use for complex tasks with 3+ steps or when the user provides multiple tasks. Call with no parameters to read the current list.\n\nWriting:\n- Provide 'todos' array to create/update items\n- merge=false (default): replace the entire list with a fresh plan\n- merge=true: update existing items by id, add any new ones\n\nEach item: {id: string, content: string, status: pending|in_progress|completed|cancelled}\nList order is priority. Only ONE item in_progress at a time.\nMark items completed immediately when done. If something fails, cancel it and add a revised item.\n\nAlways returns the full current list.";

/// The JSON schema of `todo`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "todos": {"type": "array", "description": "Task items to write. Omit to read current list.", "items": {
            "type": "object", "properties": {
                "id": {"type": "string", "description": "Unique item identifier"},
                "content": {"type": "string", "description": "Task description"},
                "status": {"type": "string", "enum": STATUSES, "description": "Current status"}
            }, "required": ["id", "content", "status"]}},
        "merge": {"type": "boolean", "description": "true: update existing items by id, add new ones. false (default): replace the entire list.", "default": false}
    }, "required": []})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn call(list: &Mutex<TodoList>, args: Value) -> Value {
        serde_json::from_str(&run(&args, list)).unwrap()
    }

    #[test]
    fn write_merge_and_read_keep_order_and_count() {
        let list = Mutex::new(TodoList::default());
        assert_eq!(call(&list, json!({}))["summary"]["total"], 0);
        let v = call(
            &list,
            json!({"todos": [
                {"id": "1", "content": "fetch", "status": "in_progress"},
                {"id": "2", "content": "sum", "status": "bogus"},
                {"id": "1", "content": "fetch again", "status": "pending"}
            ]}),
        );
        assert_eq!(
            v["todos"],
            json!([{"id": "2", "content": "sum", "status": "pending"},
                   {"id": "1", "content": "fetch again", "status": "pending"}])
        );
        let v = call(
            &list,
            json!({"merge": true, "todos": [{"id": "2", "status": "COMPLETED"}, {"id": 3, "content": "send"}]}),
        );
        assert_eq!(
            v["todos"][0],
            json!({"id": "2", "content": "sum", "status": "completed"})
        );
        assert_eq!(
            v["todos"][2],
            json!({"id": "3", "content": "send", "status": "pending"})
        );
        assert_eq!(
            v["summary"],
            json!({"total": 3, "pending": 2, "in_progress": 0, "completed": 1, "cancelled": 0})
        );
        assert_eq!(call(&list, json!({}))["todos"], v["todos"]);
    }

    #[test]
    fn bad_shapes_are_errors_or_made_whole() {
        let list = Mutex::new(TodoList::default());
        assert_eq!(
            call(&list, json!({"todos": "nope"}))["error"],
            "todos must be a list of objects, got unparseable string"
        );
        assert_eq!(
            call(&list, json!({"todos": 4}))["error"],
            "todos must be a list, got number"
        );
        let v = call(&list, json!({"todos": "[{\"id\": \"a\"}, 7]"}));
        assert_eq!(
            v["todos"][0],
            json!({"id": "a", "content": "(no description)", "status": "pending"})
        );
        assert_eq!(
            v["todos"][1],
            json!({"id": "?", "content": "(invalid item)", "status": "pending"})
        );
        let long = "x".repeat(5000);
        let v = call(
            &list,
            json!({"todos": [{"id": "l", "content": long, "status": "pending"}]}),
        );
        let content = v["todos"][0]["content"].as_str().unwrap_or_default();
        assert_eq!(content.chars().count(), MAX_CONTENT_CHARS);
        assert!(content.ends_with(TRUNCATION_MARKER));
    }
}
