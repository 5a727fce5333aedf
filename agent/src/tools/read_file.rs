//! `read_file` (Hermes' schema and result): the lines of a text file as `N|text`, paged
//! by `offset` and `limit`, with where to go on when more lines follow. Reading only;
//! a binary file is described, not shown.

use std::path::Path;

use serde_json::{json, Value};

use super::{
    cap, error, ready, resolve, sandboxed, text, Schema, Tool, ToolContext, ToolFuture, RESULT_CAP,
};

pub struct ReadFile;

impl Tool for ReadFile {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        let Some(path) = text(args, "path") else {
            return ready(error("read_file needs 'path'"));
        };
        let number =
            |key: &str, default: i64| args.get(key).and_then(Value::as_i64).unwrap_or(default);
        let lines = Lines {
            offset: usize::try_from(number("offset", 1)).unwrap_or(1).max(1),
            limit: usize::try_from(number("limit", 500))
                .unwrap_or(1)
                .clamp(1, 2000),
        };
        match sandboxed(ctx, resolve(&ctx.workdir, path), false) {
            Ok(path) => ready(read_file(&path, lines)),
            Err(refusal) => ready(refusal),
        }
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("read_file", "file", DESCRIPTION, parameters())
    }
}

/// Which lines `read_file` returns: from `offset` (1-based), at most `limit`.
struct Lines {
    offset: usize,
    limit: usize,
}

/// Hermes' `read_file`: the lines asked for as `N|text` (each cut at 2,000 characters),
/// the file's line count and size, and where to go on when more lines follow.
fn read_file(path: &Path, lines: Lines) -> String {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return error(format!("cannot read {}: {e}", path.display())),
    };
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return json!({"is_binary": true, "file_size": bytes.len(), "error": "Binary file - cannot display as text. Use appropriate tools to handle this file type."}).to_string();
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let total_lines = text.matches('\n').count();
    let end = lines.offset + lines.limit - 1;
    let numbered: Vec<String> = text
        .lines()
        .enumerate()
        .skip(lines.offset - 1)
        .take(lines.limit)
        .map(|(n, line)| match line.char_indices().nth(2000) {
            Some((at, _)) => format!("{}|{}... [truncated]", n + 1, &line[..at]),
            None => format!("{}|{line}", n + 1),
        })
        .collect();
    let mut result = json!({
        "path": path.display().to_string(),
        "content": cap(&numbered.join("\n"), RESULT_CAP),
        "total_lines": total_lines,
        "file_size": bytes.len(),
        "truncated": total_lines > end,
    });
    if total_lines > end {
        result["hint"] = json!(format!(
            "Use offset={} to continue reading (showing {}-{end} of {total_lines} lines)",
            end + 1,
            lines.offset
        ));
    }
    result.to_string()
}

/// What the model reads about `read_file` (Hermes' words).
const DESCRIPTION: &str = "Read a text file with line numbers and pagination. Use this instead of cat/head/tail in terminal. Output format: 'LINE_NUM|CONTENT'. Use offset and limit for large files: a read that stops before the end says where to continue.";

/// The JSON schema of `read_file`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "Path to the file to read (absolute, relative, or ~/path)"},
        "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed, default: 1)", "default": 1, "minimum": 1},
        "limit": {"type": "integer", "description": "Maximum number of lines to read (default: 500, max: 2000)", "default": 500, "maximum": 2000}
    }, "required": ["path"]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_file_numbers_lines_and_pages_like_hermes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "\u{feff}one\ntwo\nthree\n").unwrap();
        let read = |offset, limit| -> Value {
            serde_json::from_str(&read_file(&path, Lines { offset, limit })).unwrap()
        };
        let v = read(1, 500);
        assert_eq!(v["content"], "1|one\n2|two\n3|three");
        assert_eq!(
            (v["total_lines"].as_u64(), v["truncated"].as_bool()),
            (Some(3), Some(false))
        );
        let v = read(2, 1);
        assert_eq!(v["content"], "2|two");
        assert_eq!(
            v["hint"],
            "Use offset=3 to continue reading (showing 2-2 of 3 lines)"
        );
        std::fs::write(&path, b"\x00\x01bin").unwrap();
        assert_eq!(read(1, 5)["is_binary"], true);
        assert!(read_file(
            &dir.path().join("gone"),
            Lines {
                offset: 1,
                limit: 1
            }
        )
        .contains("cannot read"));
    }
}
