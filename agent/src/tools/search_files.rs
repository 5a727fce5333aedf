//! `search_files` (Hermes' `tools/file_tools.py` schema): a regular-expression search of
//! file contents, or a glob search of file names, under a directory, with Hermes'
//! paging (`limit`, `offset`), output modes and result fields. Reading only; it skips
//! `.git`, `node_modules`, `target` and files over 2 MB, and stops after 20,000 files.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use regex::Regex;
use serde_json::{json, Map, Value};

use super::{
    cap, error, files_below, resolve, sandboxed, text, Schema, Tool, ToolContext, ToolFuture,
};

const MAX_FILES: usize = 20_000;
const MAX_FILE_BYTES: u64 = 2_000_000;
/// Matches collected before counting stops (the total is then "at least").
const MAX_MATCHES: usize = 10_000;

pub struct SearchFiles;

impl Tool for SearchFiles {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        let root = resolve(&ctx.workdir, text(args, "path").unwrap_or("."));
        let root = match sandboxed(ctx, root, false) {
            Ok(root) => root,
            Err(refusal) => return Box::pin(std::future::ready(refusal)),
        };
        // Under a sandbox, what lies below the root in a hidden path is not searched.
        let hidden = ctx.file_policy().map(|p| p.hidden).unwrap_or_default();
        let args = args.clone();
        // The walk reads up to 20,000 files: off the runtime's threads.
        Box::pin(async move {
            tokio::task::spawn_blocking(move || run(&args, &root, &hidden))
                .await
                .unwrap_or_else(|e| error(format!("search failed: {e}")))
        })
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("search_files", "file", DESCRIPTION, parameters())
    }
}

/// Why a pattern cannot be searched for.
#[derive(Debug, thiserror::Error)]
enum PatternError {
    #[error("'{0}' is not a usable glob pattern")]
    Glob(String),
    #[error("'{pattern}' is not a valid regular expression: {source}")]
    Regex {
        pattern: String,
        source: regex::Error,
    },
}

/// A shell glob (`*`, `?`, `[…]`) as an anchored regular expression.
fn glob(pattern: &str) -> Option<Regex> {
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' | ']' => re.push(c),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).ok()
}

/// Does `path` (under `root`) match `glob`: by name, or by relative path when the glob has a `/`.
fn glob_matches(glob: &Regex, has_slash: bool, root: &Path, path: &Path) -> bool {
    if has_slash {
        let rel = path.strip_prefix(root).unwrap_or(path);
        glob.is_match(&rel.to_string_lossy())
    } else {
        path.file_name()
            .is_some_and(|n| glob.is_match(&n.to_string_lossy()))
    }
}

/// Every searchable file under `root` in path order, and whether the walk stopped early.
fn walk(root: &Path, hidden: &[PathBuf]) -> (Vec<PathBuf>, bool) {
    if root.is_file() {
        return (vec![root.to_path_buf()], false);
    }
    let skipped = |name: &OsStr| matches!(name.to_str(), Some(".git" | "node_modules" | "target"));
    let (mut files, stopped) = files_below(root, skipped, MAX_FILES);
    if !hidden.is_empty() {
        files.retain(|f| {
            let real = crate::sandbox::real(f);
            !real.starts_with("/proc") && !hidden.iter().any(|h| real.starts_with(h))
        });
    }
    files.sort();
    (files, stopped)
}

/// The paging and shape a call asked for.
struct Page {
    limit: usize,
    offset: usize,
}

impl Page {
    fn of<T: Clone>(&self, items: &[T]) -> Vec<T> {
        items
            .iter()
            .skip(self.offset)
            .take(self.limit)
            .cloned()
            .collect()
    }

    fn truncated(&self, total: usize) -> bool {
        total > self.offset + self.limit
    }
}

/// One call of `search_files`.
fn run(args: &Value, root: &Path, hidden: &[PathBuf]) -> String {
    let number = |key: &str, default: u64| args.get(key).and_then(Value::as_u64).unwrap_or(default);
    let Some(pattern) = text(args, "pattern").filter(|p| !p.is_empty()) else {
        return error("search_files needs 'pattern'");
    };
    let page = Page {
        limit: usize::try_from(number("limit", 50))
            .unwrap_or(50)
            .clamp(1, 1000),
        offset: usize::try_from(number("offset", 0)).unwrap_or(0),
    };
    let (files, stopped) = walk(root, hidden);
    let result = match text(args, "target").unwrap_or("content") {
        "files" | "find" => find_files(pattern, root, &files, &page),
        "content" | "grep" => {
            let context = usize::try_from(number("context", 0)).unwrap_or(0).min(20);
            let mode = text(args, "output_mode").unwrap_or("content");
            grep(
                pattern,
                root,
                &files,
                text(args, "file_glob"),
                mode,
                context,
                &page,
            )
        }
        other => {
            return error(format!(
                "Unknown target '{other}': use 'content' or 'files'"
            ))
        }
    };
    let mut result = match result {
        Ok(result) => result,
        Err(why) => return error(why.to_string()),
    };
    if stopped {
        result.insert(
            "limit_reason".into(),
            json!(format!("stopped after {MAX_FILES} files")),
        );
    }
    if result.get("truncated") == Some(&Value::Bool(true)) {
        result.insert("hint".into(), json!(format!("Results truncated. Use offset={} to see more, or narrow with a more specific pattern or file_glob.", page.offset + page.limit)));
    }
    Value::Object(result).to_string()
}

fn find_files(
    pattern: &str,
    root: &Path,
    files: &[PathBuf],
    page: &Page,
) -> Result<Map<String, Value>, PatternError> {
    let re = glob(pattern).ok_or_else(|| PatternError::Glob(pattern.to_string()))?;
    let mut found: Vec<(SystemTime, String)> = files
        .iter()
        .filter(|p| glob_matches(&re, pattern.contains('/'), root, p))
        .map(|p| {
            let modified = std::fs::metadata(p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, p.display().to_string())
        })
        .collect();
    // Newest first, as Hermes sorts; path order among equals keeps results stable.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let names: Vec<String> = found.into_iter().map(|(_, p)| p).collect();
    let mut result = Map::new();
    result.insert("total_count".into(), json!(names.len()));
    result.insert("files".into(), json!(page.of(&names)));
    if page.truncated(names.len()) {
        result.insert("truncated".into(), json!(true));
    }
    Ok(result)
}

/// One line shown: its file, number and text.
#[derive(Clone)]
struct Hit {
    path: String,
    line: usize,
    content: String,
}

fn grep(
    pattern: &str,
    root: &Path,
    files: &[PathBuf],
    file_glob: Option<&str>,
    mode: &str,
    context: usize,
    page: &Page,
) -> Result<Map<String, Value>, PatternError> {
    let re = Regex::new(pattern).map_err(|source| PatternError::Regex {
        pattern: pattern.to_string(),
        source,
    })?;
    let only = match file_glob.filter(|g| !g.is_empty()) {
        Some(g) => Some((
            glob(g).ok_or_else(|| PatternError::Glob(g.to_string()))?,
            g.contains('/'),
        )),
        None => None,
    };
    let mut hits: Vec<Hit> = Vec::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for path in files {
        if only
            .as_ref()
            .is_some_and(|(g, slash)| !glob_matches(g, *slash, root, path))
        {
            continue;
        }
        if std::fs::metadata(path).map_or(true, |m| m.len() > MAX_FILE_BYTES) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let matching: Vec<usize> = (0..lines.len())
            .filter(|n| re.is_match(lines[*n]))
            .collect();
        if matching.is_empty() {
            continue;
        }
        let shown = path.display().to_string();
        counts.push((shown.clone(), matching.len()));
        // Each matching line with `context` lines either side, every line once.
        let mut next = 0;
        for n in &matching {
            let from = n.saturating_sub(context).max(next);
            let to = (n + context + 1).min(lines.len());
            for (k, line) in lines.iter().enumerate().take(to).skip(from) {
                hits.push(Hit {
                    path: shown.clone(),
                    line: k + 1,
                    content: cap(line, 500),
                });
            }
            next = next.max(to);
        }
        if hits.len() >= MAX_MATCHES {
            break;
        }
    }
    let mut result = Map::new();
    let total = match mode {
        "files_only" => {
            let names: Vec<String> = counts.iter().map(|(p, _)| p.clone()).collect();
            result.insert("files".into(), json!(page.of(&names)));
            names.len()
        }
        "count" => {
            let shown: Map<String, Value> = page
                .of(&counts)
                .into_iter()
                .map(|(p, n)| (p, json!(n)))
                .collect();
            result.insert("counts".into(), Value::Object(shown));
            counts.len()
        }
        _ => {
            let shown = page.of(&hits);
            if shown.len() >= 5 {
                result.insert("matches_format".into(), json!("path-grouped: each file path on its own line, followed by indented '<line>: <content>' rows for matches in that file"));
                result.insert("matches_text".into(), json!(dense(&shown)));
            } else if !shown.is_empty() {
                let listed: Vec<Value> = shown
                    .iter()
                    .map(|h| json!({"path": h.path, "line": h.line, "content": h.content}))
                    .collect();
                result.insert("matches".into(), json!(listed));
            }
            hits.len()
        }
    };
    let mut out = Map::new();
    out.insert("total_count".into(), json!(total));
    out.extend(result);
    if page.truncated(total) {
        out.insert("truncated".into(), json!(true));
    }
    Ok(out)
}

/// Hermes' dense form: each path once, then `  <line>: <content>` rows.
fn dense(hits: &[Hit]) -> String {
    let mut lines = Vec::new();
    let mut current: Option<&str> = None;
    for hit in hits {
        if current != Some(hit.path.as_str()) {
            lines.push(hit.path.clone());
            current = Some(&hit.path);
        }
        lines.push(format!("  {}: {}", hit.line, hit.content.trim_end()));
    }
    lines.join("\n")
}

/// What the model reads about `search_files` (Hermes' words).
const DESCRIPTION: &str = "Search file contents or find files by name. Use this instead of grep/rg/find/ls in terminal.\n\nContent search (target='content'): Regex search inside files. Output modes: full matches with line numbers, file paths only, or match counts.\n\nFile search (target='files'): Find files by glob pattern (e.g., '*.py', '*config*'). Also use this instead of ls — results sorted by modification time.";

/// The JSON schema of `search_files`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "pattern": {"type": "string", "description": "Regex pattern for content search, or glob pattern (e.g., '*.py') for file search"},
        "target": {"type": "string", "enum": ["content", "files"], "description": "'content' searches inside file contents, 'files' searches for files by name", "default": "content"},
        "path": {"type": "string", "description": "Directory or file to search in (default: current working directory)", "default": "."},
        "file_glob": {"type": "string", "description": "Filter files by pattern in grep mode (e.g., '*.py' to only search Python files)"},
        "limit": {"type": "integer", "description": "Maximum number of results to return (default: 50)", "default": 50},
        "offset": {"type": "integer", "description": "Skip first N results for pagination (default: 0)", "default": 0},
        "output_mode": {"type": "string", "enum": ["content", "files_only", "count"], "description": "Output format for grep mode: 'content' shows matching lines with line numbers, 'files_only' lists file paths, 'count' shows match counts per file", "default": "content"},
        "context": {"type": "integer", "description": "Number of context lines before and after each match (grep mode only)", "default": 0}
    }, "required": ["pattern"]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(root: &Path, args: Value) -> Value {
        serde_json::from_str(&run(&args, root, &[])).unwrap()
    }

    #[test]
    fn content_files_and_counts_page_like_hermes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "import os\nx = 1\nimport re\n").unwrap();
        std::fs::write(root.join("b.txt"), "import nothing\n").unwrap();
        std::fs::create_dir(root.join("target")).unwrap();
        std::fs::write(root.join("target/c.py"), "import skipped\n").unwrap();
        let a = root.join("a.py").display().to_string();
        let v = call(root, json!({"pattern": "^import", "file_glob": "*.py"}));
        assert_eq!(v["total_count"], 2);
        assert_eq!(
            v["matches"],
            json!([{"path": a, "line": 1, "content": "import os"}, {"path": a, "line": 3, "content": "import re"}])
        );
        let v = call(root, json!({"pattern": "import", "limit": 1, "offset": 1}));
        assert_eq!(v["matches"][0]["line"], 3);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["hint"], "Results truncated. Use offset=2 to see more, or narrow with a more specific pattern or file_glob.");
        let v = call(root, json!({"pattern": "import", "output_mode": "count"}));
        assert_eq!(v["counts"][&a], 2);
        let v = call(root, json!({"pattern": "x", "context": 1}));
        assert_eq!(v["total_count"], 3, "the match and a line either side: {v}");
        let v = call(root, json!({"pattern": "*.py", "target": "files"}));
        assert_eq!(v["files"], json!([a]));
        assert!(call(root, json!({"pattern": "("}))["error"]
            .as_str()
            .is_some_and(|e| e.contains("not a valid regular expression")));
        assert!(
            call(root, json!({"pattern": "x", "target": "web"}))["error"]
                .as_str()
                .is_some_and(|e| e.contains("Unknown target"))
        );
    }
}
