//! `write_file` (Hermes' schema): a whole file written, parent folders created. It never
//! writes under /etc; under a sandbox, only inside the work directory (after `..` and
//! symlinks are resolved).

use std::path::Path;

use serde_json::{json, Value};

use super::{
    error, ready, refused, resolve, sandboxed, text, Schema, Tool, ToolContext, ToolFuture,
};

pub struct WriteFile;

impl Tool for WriteFile {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        ready(match (text(args, "path"), text(args, "content")) {
            (Some(path), Some(content)) => {
                match sandboxed(ctx, resolve(&ctx.workdir, path), true) {
                    Ok(path) => write_file(&path, content),
                    Err(refusal) => refusal,
                }
            }
            _ => error("write_file needs 'path' and 'content'"),
        })
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("write_file", "file", DESCRIPTION, parameters())
    }
}

fn write_file(path: &Path, content: &str) -> String {
    if path.starts_with("/etc") {
        return refused("writing to /etc is not allowed in scheduled (cron) mode");
    }
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match std::fs::write(path, content) {
        Ok(()) => {
            json!({"path": path.display().to_string(), "bytes_written": content.len()}).to_string()
        }
        Err(e) => error(format!("cannot write {}: {e}", path.display())),
    }
}

/// What the model reads about `write_file` (Hermes' words).
const DESCRIPTION: &str = "Write content to a file, completely replacing existing content. Creates parent directories automatically. OVERWRITES the entire file: use 'patch' for targeted edits.";

/// The JSON schema of `write_file`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "Path to the file to write (will be created if it doesn't exist, overwritten if it does)"},
        "content": {"type": "string", "description": "Complete content to write to the file"},
        "cross_profile": {"type": "boolean", "description": "Accepted for compatibility; has no effect in scheduled runs.", "default": false}
    }, "required": ["path", "content"]})
}
