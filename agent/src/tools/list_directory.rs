//! `list_directory`: the entries of one directory (at most 1,000), sorted by name, each
//! with its kind and size. Reading only.

use std::path::Path;

use serde_json::{json, Value};

use super::{error, ready, resolve, sandboxed, text, Schema, Tool, ToolContext, ToolFuture};

pub struct ListDirectory;

impl Tool for ListDirectory {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        let path = resolve(&ctx.workdir, text(args, "path").unwrap_or("."));
        match sandboxed(ctx, path, false) {
            Ok(path) => ready(list_directory(&path)),
            Err(refusal) => ready(refusal),
        }
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("list_directory", "file", DESCRIPTION, parameters())
    }
}

fn list_directory(path: &Path) -> String {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) => return error(format!("cannot list {}: {e}", path.display())),
    };
    let mut items: Vec<Value> = entries
        .filter_map(Result::ok)
        .take(1000)
        .map(|e| {
            let meta = e.metadata().ok();
            let kind = match &meta {
                Some(m) if m.is_dir() => "dir",
                Some(m) if m.is_file() => "file",
                _ => "other",
            };
            json!({"name": e.file_name().to_string_lossy(), "type": kind, "size": meta.map(|m| m.len())})
        })
        .collect();
    items.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    json!({"path": path.display().to_string(), "entries": items}).to_string()
}

/// What the model reads about `list_directory` (Hermes' words).
const DESCRIPTION: &str = "List the entries of a directory.";

/// The JSON schema of `list_directory`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}
