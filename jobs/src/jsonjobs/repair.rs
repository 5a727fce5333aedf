//! What the whole-document reader mends and how it reports what it cannot: jobs given
//! as a bare list or an id-keyed map, raw control characters inside strings, and the
//! position of a syntax error in the user's own bytes.

use std::path::Path;

use serde_json::Value;

use super::{DocumentError, Record};

pub(super) fn records_from_list(entries: Vec<Value>) -> Result<Vec<Record>, String> {
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| match entry {
            Value::Object(record) => Ok(record),
            other => Err(format!(
                "jobs[{index}] is {}, expected a job object",
                kind_of(&other)
            )),
        })
        .collect()
}

pub(super) fn records_from_id_map(by_id: Record) -> Result<Vec<Record>, String> {
    by_id
        .into_iter()
        .map(|(key, entry)| {
            let Value::Object(record) = entry else {
                return Err(format!(
                    "jobs[{}] is {}, expected a job object",
                    Value::String(key),
                    kind_of(&entry)
                ));
            };
            let has_inline_id = match record.get("id") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(_) => true,
            };
            if has_inline_id {
                return Ok(record);
            }
            let mut with_id = Record::new();
            with_id.insert("id".to_string(), Value::String(key));
            with_id.extend(record.into_iter().filter(|(k, _)| k != "id"));
            Ok(with_id)
        })
        .collect()
}

pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Escape raw U+0000–U+001F bytes that sit inside JSON strings (hand edits and old Python
/// builds with `strict=False` leave them). Outside strings they are left alone: there a
/// newline is just whitespace, and anything else is a real syntax error to report.
/// Returns the new bytes and, for each of their positions (plus one past the end), the
/// position in `input` it came from, so errors can point into the user's file.
pub(super) fn escape_control_chars_in_strings(input: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(input.len());
    let mut origin = Vec::with_capacity(input.len() + 1);
    let mut in_string = false;
    let mut after_backslash = false;
    for (i, &b) in input.iter().enumerate() {
        if in_string && !after_backslash && b < 0x20 {
            let escaped = match b {
                b'\n' => "\\n".to_string(),
                b'\r' => "\\r".to_string(),
                b'\t' => "\\t".to_string(),
                _ => format!("\\u{b:04x}"),
            };
            for e in escaped.bytes() {
                out.push(e);
                origin.push(i);
            }
            continue;
        }
        if in_string {
            if after_backslash {
                after_backslash = false;
            } else if b == b'\\' {
                after_backslash = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
        origin.push(i);
    }
    origin.push(input.len());
    (out, origin)
}

/// Turn a serde_json syntax error into `Unreadable`, with the position in the user's own
/// bytes (`original`), counted in characters so it matches what an editor shows.
pub(super) fn unreadable_from_json(
    err: &serde_json::Error,
    parsed: &[u8],
    original: &[u8],
    origin: Option<&[usize]>,
    path: &Path,
) -> DocumentError {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let reason = message
        .strip_suffix(&suffix)
        .unwrap_or(&message)
        .to_string();
    let (line, column) = if err.line() == 0 {
        (None, None)
    } else {
        let index = byte_index_of(parsed, err.line(), err.column());
        let index = match origin {
            Some(map) => map.get(index).copied().unwrap_or(original.len()),
            None => index,
        };
        let (line, column) = line_and_column(original, index);
        (Some(line), Some(column))
    };
    DocumentError::Unreadable {
        path: path.to_path_buf(),
        line,
        column,
        reason,
    }
}

/// Inverse of serde_json's position: `column` bytes after the start of `line` (1-based).
pub(super) fn byte_index_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(line - 2)
            .map_or(bytes.len(), |(i, _)| i + 1)
    };
    line_start.saturating_add(column).min(bytes.len())
}

pub(super) fn line_and_column(bytes: &[u8], index: usize) -> (usize, usize) {
    let before = &bytes[..index.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before[..line_start].iter().filter(|&&b| b == b'\n').count();
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column.max(1))
}
