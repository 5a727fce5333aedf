//! The `patch` tool (Hermes' `tools/file_tools.py` schema, `replace` mode): a
//! find-and-replace edit of one file inside the job's work directory, answered with a
//! unified diff, or with Hermes' own words for a miss or an ambiguous match. It never
//! touches a file outside the work directory (symlinks resolved) nor one under /etc.

use std::path::Path;

use serde_json::{json, Value};

use super::{
    error, ready, refused, resolve, sandboxed, text, Schema, Tool, ToolContext, ToolFuture,
};

/// Why a replacement cannot be made, in Hermes' words (the model reads them).
#[derive(Debug, thiserror::Error, PartialEq)]
enum ReplaceError {
    #[error("old_string cannot be empty")]
    EmptyOld,
    #[error("old_string and new_string are identical")]
    Identical,
    #[error("Could not find a match for old_string in the file")]
    NoMatch,
    #[error("Found {0} matches for old_string. Provide more context to make it unique, or use replace_all=True.")]
    Ambiguous(usize),
}

pub struct Patch;

impl Tool for Patch {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        if let Some(path) = text(args, "path").filter(|p| !p.is_empty()) {
            if let Err(refusal) = sandboxed(ctx, resolve(&ctx.workdir, path), true) {
                return ready(refusal);
            }
        }
        ready(run(args, &ctx.workdir))
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("patch", "file", DESCRIPTION, parameters())
    }
}

/// A failed edit, shaped as Hermes' `PatchResult`.
fn failed(why: impl Into<String>) -> String {
    json!({"success": false, "error": why.into()}).to_string()
}

/// One call of `patch`.
fn run(args: &Value, workdir: &Path) -> String {
    match text(args, "mode").unwrap_or("replace") {
        "replace" => {}
        "patch" => return error("mode 'patch' (V4A multi-file patches) is not available in scheduled runs: use mode='replace' with path, old_string and new_string, one call per edit"),
        other => return error(format!("Unknown mode: {other}")),
    }
    let Some(path) = text(args, "path").filter(|p| !p.is_empty()) else {
        return error("path required");
    };
    let (Some(old), Some(new)) = (text(args, "old_string"), text(args, "new_string")) else {
        return error("old_string and new_string required");
    };
    let replace_all = args
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let target = resolve(workdir, path);
    let Ok(real) = std::fs::canonicalize(&target) else {
        return failed(format!("Failed to read file: {}", target.display()));
    };
    let inside = std::fs::canonicalize(workdir).is_ok_and(|root| real.starts_with(root));
    if !inside || real.starts_with("/etc") {
        return refused(format!(
            "{} is outside the job's work directory {}; patch edits files inside it only",
            target.display(),
            workdir.display()
        ));
    }
    let Ok(bytes) = std::fs::read(&real) else {
        return failed(format!("Failed to read file: {}", target.display()));
    };
    let Ok(original) = String::from_utf8(bytes) else {
        return failed(format!("{} is not UTF-8 text", target.display()));
    };
    let (bom, content) = match original.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", original.as_str()),
    };
    let edited = match replace(content, old, new, replace_all) {
        Ok(edited) => edited,
        Err(why) => return failed(why.to_string()),
    };
    if let Err(e) = std::fs::write(&real, format!("{bom}{edited}")) {
        return failed(format!("Failed to write changes: {e}"));
    }
    let shown = target.display().to_string();
    let resolved = real.display().to_string();
    json!({
        "success": true,
        "diff": unified_diff(content, &edited, &shown),
        "files_modified": [resolved],
        "resolved_path": resolved,
    })
    .to_string()
}

/// The file's text with `old` replaced by `new`: exact matches first, else lines
/// compared without their leading and trailing whitespace (Hermes' first two of its
/// nine strategies). More than one match without `replace_all` is refused.
fn replace(content: &str, old: &str, new: &str, replace_all: bool) -> Result<String, ReplaceError> {
    if old.is_empty() {
        return Err(ReplaceError::EmptyOld);
    }
    if old == new {
        return Err(ReplaceError::Identical);
    }
    let mut matches: Vec<(usize, usize)> = content
        .match_indices(old)
        .map(|(at, m)| (at, at + m.len()))
        .collect();
    if matches.is_empty() {
        matches = line_trimmed_matches(content, old);
    }
    if matches.is_empty() {
        return Err(ReplaceError::NoMatch);
    }
    if matches.len() > 1 && !replace_all {
        return Err(ReplaceError::Ambiguous(matches.len()));
    }
    // The file keeps its own line endings: a model sends bare \n.
    let new = if content.contains("\r\n") && !new.contains("\r\n") {
        new.replace('\n', "\r\n")
    } else {
        new.to_string()
    };
    let mut out = String::with_capacity(content.len() + new.len());
    let mut from = 0;
    for (start, end) in matches {
        out.push_str(&content[from..start]);
        out.push_str(&new);
        from = end;
    }
    out.push_str(&content[from..]);
    Ok(out)
}

/// Byte ranges of runs of whole lines equal to `pattern`'s lines once each side is trimmed.
fn line_trimmed_matches(content: &str, pattern: &str) -> Vec<(usize, usize)> {
    let wanted: Vec<&str> = pattern
        .trim_end_matches('\n')
        .split('\n')
        .map(str::trim)
        .collect();
    // Each line with its byte range, without the line break.
    let mut lines = Vec::new();
    let mut at = 0;
    for line in content.split('\n') {
        let body = line.strip_suffix('\r').unwrap_or(line);
        lines.push((at, at + body.len(), body.trim()));
        at += line.len() + 1;
    }
    let mut found = Vec::new();
    let mut n = 0;
    while n + wanted.len() <= lines.len() {
        let window = &lines[n..n + wanted.len()];
        if window.iter().zip(&wanted).all(|((_, _, l), w)| l == w) {
            found.push((window[0].0, window[window.len() - 1].1));
            n += wanted.len();
        } else {
            n += 1;
        }
    }
    found
}

/// A unified diff of one hunk spanning the changed lines (3 lines of context), as
/// `difflib.unified_diff` labels it: `a/<path>`, `b/<path>`.
fn unified_diff(old: &str, new: &str, path: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let start = prefix.saturating_sub(3);
    let (a_end, b_end) = (a.len() - suffix, b.len() - suffix);
    let (a_ctx_end, b_ctx_end) = ((a_end + 3).min(a.len()), (b_end + 3).min(b.len()));
    let range = |from: usize, to: usize| match to - from {
        0 => format!("{from},0"),
        1 => format!("{}", from + 1),
        n => format!("{},{n}", from + 1),
    };
    let line = |mark: char, text: &str| {
        let mut l = format!("{mark}{text}");
        if !l.ends_with('\n') {
            l.push_str("\n\\ No newline at end of file\n");
        }
        l
    };
    let mut diff = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -{} +{} @@\n",
        range(start, a_ctx_end),
        range(start, b_ctx_end)
    );
    a[start..prefix]
        .iter()
        .for_each(|l| diff.push_str(&line(' ', l)));
    a[prefix..a_end]
        .iter()
        .for_each(|l| diff.push_str(&line('-', l)));
    b[prefix..b_end]
        .iter()
        .for_each(|l| diff.push_str(&line('+', l)));
    a[a_end..a_ctx_end]
        .iter()
        .for_each(|l| diff.push_str(&line(' ', l)));
    diff
}

/// What the model reads about `patch` (Hermes' words).
const DESCRIPTION: &str = "Targeted find-and-replace edits in files. Use this instead of sed/awk in terminal. Matches exactly, else line by line ignoring leading and trailing whitespace. Returns a unified diff.\n\nREPLACE MODE (mode='replace', default): find a unique string and replace it. REQUIRED PARAMETERS: mode, path, old_string, new_string.\nPATCH MODE (mode='patch', V4A multi-file patches) is not available in scheduled runs: make one replace call per edit.";

/// The JSON schema of `patch`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["replace", "patch"], "description": "Edit mode. 'replace' (default): requires path + old_string + new_string. 'patch': requires patch content only.", "default": "replace"},
        "path": {"type": "string", "description": "REQUIRED when mode='replace'. File path to edit."},
        "old_string": {"type": "string", "description": "REQUIRED when mode='replace'. Exact text to find and replace. Must be unique in the file unless replace_all=true. Include surrounding context lines to ensure uniqueness."},
        "new_string": {"type": "string", "description": "REQUIRED when mode='replace'. Replacement text. Pass empty string '' to delete the matched text."},
        "replace_all": {"type": "boolean", "description": "Replace all occurrences instead of requiring a unique match (default: false)", "default": false},
        "patch": {"type": "string", "description": "REQUIRED when mode='patch'. V4A format patch content. Format:\n*** Begin Patch\n*** Update File: path/to/file\n@@ context hint @@\n context line\n-removed line\n+added line\n*** End Patch"},
        "cross_profile": {"type": "boolean", "description": "Opt out of the cross-profile soft guard. Defaults to false. Set true ONLY after explicit user direction to edit another Hermes profile's skills/plugins/cron/memories.", "default": false}
    }, "required": ["mode"]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(dir: &Path, args: Value) -> Value {
        serde_json::from_str(&run(&args, dir)).unwrap()
    }

    #[test]
    fn a_unique_match_is_replaced_and_a_diff_returned() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let v = call(
            dir.path(),
            json!({"mode": "replace", "path": "a.txt", "old_string": "two", "new_string": "2"}),
        );
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(
            v["diff"],
            "--- a/".to_string()
                + &dir.path().join("a.txt").display().to_string()
                + "\n+++ b/"
                + &dir.path().join("a.txt").display().to_string()
                + "\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\n2\nthree\n"
        );
    }

    #[test]
    fn misses_and_ambiguous_matches_say_so_as_hermes_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x = 1\nx = 1\n").unwrap();
        let args = |old: &str, all: bool| json!({"path": "a.txt", "old_string": old, "new_string": "y", "replace_all": all});
        let v = call(dir.path(), args("x = 1", false));
        assert_eq!(v["success"], false);
        assert_eq!(v["error"], "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True.");
        let v = call(dir.path(), args("zzz", false));
        assert_eq!(
            v["error"],
            "Could not find a match for old_string in the file"
        );
        assert_eq!(
            call(dir.path(), args("", false))["error"],
            "old_string cannot be empty"
        );
        assert_eq!(
            call(dir.path(), args("y", false))["error"],
            "old_string and new_string are identical"
        );
        assert_eq!(
            call(dir.path(), json!({"path": "a.txt"}))["error"],
            "old_string and new_string required"
        );
        assert_eq!(
            call(dir.path(), json!({"old_string": "a", "new_string": "b"}))["error"],
            "path required"
        );
        assert_eq!(
            call(dir.path(), json!({"mode": "zap", "path": "a.txt"}))["error"],
            "Unknown mode: zap"
        );
        assert!(call(
            dir.path(),
            json!({"mode": "patch", "patch": "*** Begin Patch"})
        )["error"]
            .as_str()
            .is_some_and(|e| e.contains("not available")));
        assert_eq!(call(dir.path(), args("x = 1", true))["success"], true);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "y\ny\n"
        );
        let v = call(
            dir.path(),
            json!({"path": "gone.txt", "old_string": "a", "new_string": "b"}),
        );
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("Failed to read file: ")),
            "{v}"
        );
    }

    #[test]
    fn lines_match_ignoring_indentation_and_crlf_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.py"), "def f():\r\n    return 1\r\n").unwrap();
        let v = call(
            dir.path(),
            json!({"path": "c.py", "old_string": "def f():\nreturn 1", "new_string": "def f():\n    return 2"}),
        );
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c.py")).unwrap(),
            "def f():\r\n    return 2\r\n"
        );
    }

    #[test]
    fn files_outside_the_workdir_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "a").unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), work.join("link.txt")).unwrap();
        for path in [
            outside.path().join("o.txt").display().to_string(),
            "link.txt".into(),
            "../work/../../x".into(),
        ] {
            let out = run(
                &json!({"path": path, "old_string": "a", "new_string": "b"}),
                &work,
            );
            assert!(
                out.contains("refused") || out.contains("Failed to read"),
                "{path}: {out}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.txt")).unwrap(),
            "a"
        );
    }
}
