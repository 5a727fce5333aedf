//! The tools a cron agent may use (docs/AGENT.md, "Tools"): a small registry of name, JSON
//! schema, availability and handler, with Python Hermes' names and argument schemas.
//! Built in: `terminal`, `read_file`, `write_file`, `patch`, `list_directory`,
//! `search_files`, `web_fetch`, `skills_list`, `skill_view`, `todo`, and `execute_code`
//! when `approvals.cron_mode: approve`. Results are JSON strings; a refused call says it
//! was refused and why, so the model can tell the user. The handlers of the newer tools
//! live in `tools/` (`patch`, `skills`, `todo`, `code`; `child` holds the guards of
//! every child process a tool starts).
//!
//! Nobody is there to approve a dangerous command in a cron run, so `terminal` refuses
//! them outright; `web_fetch` refuses private and loopback addresses unless
//! `tools.web_fetch.allow_private: true`. There are no cron-management, messaging or
//! clarify tools here at all. Toolsets (for `enabled_toolsets` on the job and
//! `agent.disabled_toolsets`), as Hermes groups them: `terminal`, `file` (the file tools),
//! `web`, `skills`, `todo`, `code_execution`; a tool's own name works as well.
//!
//! The tools of the run's MCP servers (`mcp__<server>__<tool>`, see `mcp`) are offered
//! after the built-in ones and their calls are handed to `mcp`.

mod child;
mod code;
mod patch;
mod search;
mod skills;
mod todo;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use regex::Regex;
use serde_json::{json, Value};

use super::mcp::McpServers;
use super::model_api::ToolSpec;
use crate::runner::Activity;

pub use self::code::DEFAULT_TIMEOUT as DEFAULT_CODE_TIMEOUT;
pub use self::todo::TodoList;

/// At most this much of a tool's output goes back to the model.
const RESULT_CAP: usize = 50_000;
const FETCH_CAP: usize = 200_000;
const DEFAULT_TERMINAL_TIMEOUT: u64 = 180;
const MAX_TERMINAL_TIMEOUT: u64 = 600;

/// What the tools of one run may touch.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The job's workdir, else the Hermes home: relative paths start here.
    pub workdir: PathBuf,
    pub allow_private_fetch: bool,
    pub activity: Activity,
    /// The MCP servers started for this run, if any.
    pub mcp: Option<Arc<McpServers>>,
    /// The Hermes home: skills are read from `<home>/skills/`.
    pub home: PathBuf,
    /// The `todo` list of this run. The lock guards the list alone and is held only
    /// while one call reads or rewrites it.
    pub todos: Arc<Mutex<TodoList>>,
    /// Whether `execute_code` is offered (`approvals.cron_mode: approve`).
    pub execute_code: bool,
    /// How long one `execute_code` script may run (`code_execution.timeout`).
    pub code_timeout: Duration,
}

/// The toolset a built-in tool belongs to, as Hermes names them.
fn toolset_of(name: &str) -> &'static str {
    match name {
        "terminal" => "terminal",
        "web_fetch" => "web",
        "skills_list" | "skill_view" => "skills",
        "todo" => "todo",
        "execute_code" => "code_execution",
        _ => "file",
    }
}

fn spec(name: &'static str, description: &'static str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

/// Every built-in tool, in the order they are offered (the order is part of the bytes
/// providers cache). `execute_code` only when `code_timeout` is given.
fn all_specs(code_timeout: Option<Duration>) -> Vec<ToolSpec> {
    let mut specs = vec![
        spec(
            "terminal",
            "Run a shell command (bash) in the job's working directory and return its output and exit code. Commands run in the foreground only: background processes (background, notify_on_complete, watch_patterns) are not available in scheduled runs, and pty is ignored.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "The command to execute"},
                "background": {"type": "boolean", "description": "Not available in scheduled runs: must be false.", "default": false},
                "timeout": {"type": "integer", "description": "Max seconds to wait (default: 180, max: 600). Returns as soon as the command finishes.", "minimum": 1},
                "workdir": {"type": "string", "description": "Working directory for this command (absolute path). Defaults to the session working directory."},
                "pty": {"type": "boolean", "description": "Ignored in scheduled runs (no pseudo-terminal).", "default": false},
                "notify_on_complete": {"type": "boolean", "description": "Only with background=true, which scheduled runs do not have.", "default": false},
                "watch_patterns": {"type": "array", "items": {"type": "string"}, "description": "Only with background=true, which scheduled runs do not have."}
            }, "required": ["command"]}),
        ),
        spec(
            "read_file",
            "Read a text file with line numbers and pagination. Use this instead of cat/head/tail in terminal. Output format: 'LINE_NUM|CONTENT'. Use offset and limit for large files: a read that stops before the end says where to continue.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Path to the file to read (absolute, relative, or ~/path)"},
                "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed, default: 1)", "default": 1, "minimum": 1},
                "limit": {"type": "integer", "description": "Maximum number of lines to read (default: 500, max: 2000)", "default": 500, "maximum": 2000}
            }, "required": ["path"]}),
        ),
        spec(
            "write_file",
            "Write content to a file, completely replacing existing content. Creates parent directories automatically. OVERWRITES the entire file: use 'patch' for targeted edits.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Path to the file to write (will be created if it doesn't exist, overwritten if it does)"},
                "content": {"type": "string", "description": "Complete content to write to the file"},
                "cross_profile": {"type": "boolean", "description": "Accepted for compatibility; has no effect in scheduled runs.", "default": false}
            }, "required": ["path", "content"]}),
        ),
        patch::spec(),
        spec(
            "list_directory",
            "List the entries of a directory.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        search::spec(),
        spec(
            "web_fetch",
            "GET a web page or text resource (http/https) and return its text.",
            json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
        ),
    ];
    specs.extend(skills::specs());
    specs.push(todo::spec());
    specs.extend(code_timeout.map(code::spec));
    specs
}

/// The tools offered to this run: the job's `enabled_toolsets` (when set) narrows the
/// set, `agent.disabled_toolsets` removes from it. `execute_code` is among them only
/// when `code_timeout` is given (the run may execute code, and for how long).
pub fn available(
    enabled: Option<&[String]>,
    disabled: &[String],
    code_timeout: Option<Duration>,
) -> Vec<ToolSpec> {
    let listed = |list: &[String], name: &str| {
        list.iter()
            .any(|e| e.eq_ignore_ascii_case(name) || e.eq_ignore_ascii_case(toolset_of(name)))
    };
    all_specs(code_timeout)
        .into_iter()
        .filter(|t| enabled.is_none_or(|e| listed(e, &t.name)))
        .filter(|t| !listed(disabled, &t.name))
        .collect()
}

/// Every tool this run offers: the built-in ones `available` keeps, then the tools of
/// the run's MCP servers (chosen and filtered by `mcp`).
pub fn offered(
    enabled: Option<&[String]>,
    disabled: &[String],
    ctx: &ToolContext,
) -> Vec<ToolSpec> {
    let code = ctx.execute_code.then_some(ctx.code_timeout);
    let mut tools = available(enabled, disabled, code);
    if let Some(mcp) = &ctx.mcp {
        tools.extend(mcp.tools());
    }
    tools
}

fn error(text: impl Into<String>) -> String {
    json!({"error": text.into()}).to_string()
}

fn refused(why: impl Into<String>) -> String {
    json!({"refused": true, "error": format!("refused: {}", why.into())}).to_string()
}

fn cap(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}\n[... truncated at {limit} characters]", &text[..at]),
        None => text.to_string(),
    }
}

/// Runs one tool call. `offered` is the set this run has; anything else is refused.
pub async fn dispatch(
    name: &str,
    arguments: &str,
    offered: &[ToolSpec],
    ctx: &ToolContext,
) -> String {
    let mcp = ctx.mcp.as_ref().filter(|mcp| mcp.owns(name));
    if mcp.is_none() && !offered.iter().any(|t| t.name == name) {
        return refused(format!(
            "tool '{name}' is not available in this scheduled run"
        ));
    }
    let args: Value = match serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return error(format!(
                "the arguments of '{name}' are not a JSON object: {arguments}"
            ))
        }
    };
    if let (Some(mcp), Value::Object(map)) = (mcp, &args) {
        // A tool of a server that could not start is not offered, but a call of it
        // still gets that server's error rather than a bare refusal.
        return mcp.call(name, map.clone()).await;
    }
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let result = match name {
        "terminal" => match text("command") {
            Some(_) if args.get("background").and_then(Value::as_bool) == Some(true) => error(
                "background processes are not available in scheduled runs: run the command in the foreground (timeout up to 600 seconds)",
            ),
            Some(command) => {
                let timeout = args
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .unwrap_or(DEFAULT_TERMINAL_TIMEOUT)
                    .clamp(1, MAX_TERMINAL_TIMEOUT);
                match text("workdir").map(|dir| resolve(&ctx.workdir, &dir)) {
                    Some(dir) if !dir.is_dir() => {
                        error(format!("workdir {} is not a directory", dir.display()))
                    }
                    Some(dir) => {
                        let here = ToolContext {
                            workdir: dir,
                            ..ctx.clone()
                        };
                        terminal(&command, Duration::from_secs(timeout), &here).await
                    }
                    None => terminal(&command, Duration::from_secs(timeout), ctx).await,
                }
            }
            None => error("terminal needs 'command'"),
        },
        "read_file" => match text("path") {
            Some(p) => {
                let number = |key: &str, default: i64| {
                    args.get(key).and_then(Value::as_i64).unwrap_or(default)
                };
                let lines = Lines {
                    offset: usize::try_from(number("offset", 1)).unwrap_or(1).max(1),
                    limit: usize::try_from(number("limit", 500))
                        .unwrap_or(1)
                        .clamp(1, 2000),
                };
                read_file(&resolve(&ctx.workdir, &p), lines)
            }
            None => error("read_file needs 'path'"),
        },
        "write_file" => match (text("path"), text("content")) {
            (Some(p), Some(c)) => write_file(&resolve(&ctx.workdir, &p), &c),
            _ => error("write_file needs 'path' and 'content'"),
        },
        "list_directory" => {
            list_directory(&resolve(&ctx.workdir, &text("path").unwrap_or(".".into())))
        }
        "search_files" => {
            let root = resolve(&ctx.workdir, &text("path").unwrap_or(".".into()));
            let args = args.clone();
            tokio::task::spawn_blocking(move || search::run(&args, &root))
                .await
                .unwrap_or_else(|e| error(format!("search failed: {e}")))
        }
        "web_fetch" => match text("url") {
            Some(url) => web_fetch(&url, ctx.allow_private_fetch).await,
            None => error("web_fetch needs 'url'"),
        },
        "patch" => patch::run(&args, &ctx.workdir),
        "skills_list" => skills::list(&args, &ctx.home),
        "skill_view" => skills::view(&args, &ctx.home),
        "todo" => todo::run(&args, &ctx.todos),
        "execute_code" => code::run(&args, ctx).await,
        other => refused(format!("unknown tool '{other}'")),
    };
    ctx.activity.touch();
    result
}

fn resolve(workdir: &Path, path: &str) -> PathBuf {
    let path = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(path), |h| Path::new(&h).join(rest)),
        None => PathBuf::from(path),
    };
    if path.is_absolute() {
        path
    } else {
        workdir.join(path)
    }
}

/// Commands refused in cron mode, with the reason shown to the model.
static DANGEROUS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let rm_flags = r"(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)";
    [
        (
            format!(r#"\brm\s+(?:-\S+\s+)*{rm_flags}\s+(?:-\S+\s+)*(?:["']?(?:/|/\*|~|~/|~/\*|\$HOME|\$\{{HOME\}}|\$HOME/\*?)["']?)(?:\s|$|;|&|\|)"#),
            "recursive delete of / or the home directory",
        ),
        (r"--no-preserve-root".to_string(), "recursive delete of /"),
        (r"\bchmod\s+(?:-\S+\s+)*0?777\b".to_string(), "chmod 777"),
        (r"(?i)\bdrop\s+(?:table|database|schema)\b".to_string(), "DROP TABLE/DATABASE"),
        (
            r"\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?python\d?\b".to_string(),
            "piping a download into a shell",
        ),
        (r"\bgit\s+push\b.*(?:\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S)".to_string(), "git force push"),
        (
            r"(?:>>?|\btee\s+(?:-a\s+)?|\b(?:cp|mv|install|ln)\s+(?:\S+\s+)+|\bsed\s+-i\S*\s+(?:\S+\s+)*)\s*/etc/".to_string(),
            "writing to /etc",
        ),
        (r"\bmkfs(?:\.\w+)?\b|\bdd\b[^;&|]*\bof=/dev/".to_string(), "formatting or overwriting a disk"),
        (r":\(\)\s*\{\s*:\|:&\s*\};:".to_string(), "fork bomb"),
    ]
    .into_iter()
    .map(|(re, why)| (Regex::new(&re).expect("dangerous-command pattern compiles"), why))
    .collect()
});

/// Why a command is refused in cron mode, if it is.
pub fn dangerous(command: &str) -> Option<&'static str> {
    DANGEROUS
        .iter()
        .find(|(re, _)| re.is_match(command))
        .map(|(_, why)| *why)
}

async fn terminal(command: &str, timeout: Duration, ctx: &ToolContext) -> String {
    if let Some(why) = dangerous(command) {
        return refused(format!(
            "'{command}' looks like {why}; dangerous commands are not run in scheduled (cron) mode because nobody is there to approve them"
        ));
    }
    let run = child::Child {
        program: "bash",
        args: &["-c", command],
        stdin: None,
        timeout,
        head: RESULT_CAP * 4,
        tail: 0,
        keep_alive: false,
    };
    let (stdout, stderr, code) = match child::run(run, ctx).await {
        Err(why) => return error(why),
        Ok(child::Ended::TimedOut) => {
            return json!({
                "error": format!("the command timed out after {}s and was killed with its child processes", timeout.as_secs()),
                "exit_code": Value::Null,
            })
            .to_string()
        }
        Ok(child::Ended::Exited {
            stdout,
            stderr,
            code,
        }) => (stdout, stderr, code),
    };
    let mut output = String::from_utf8_lossy(&stdout.head).into_owned();
    let stderr = String::from_utf8_lossy(&stderr.head);
    if !stderr.trim().is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&stderr);
    }
    json!({
        "output": cap(&output, RESULT_CAP),
        "exit_code": code,
    })
    .to_string()
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

/// Loopback, private, link-local, unspecified, CGNAT and unique-local addresses.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || o[0] == 0
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

async fn web_fetch(url: &str, allow_private: bool) -> String {
    let mut current = url.to_string();
    for _ in 0..5 {
        let parsed = match reqwest::Url::parse(&current) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => return error(format!("'{current}' is not an http(s) URL")),
        };
        let Some(host) = parsed
            .host_str()
            .map(|h| h.trim_matches(['[', ']']).to_string())
        else {
            return error(format!("'{current}' has no host"));
        };
        let port = parsed.port_or_known_default().unwrap_or(80);
        let lookup = host.clone();
        let addrs: Vec<SocketAddr> = match tokio::task::spawn_blocking(move || {
            (lookup.as_str(), port)
                .to_socket_addrs()
                .map(|a| a.collect::<Vec<_>>())
        })
        .await
        {
            Ok(Ok(addrs)) if !addrs.is_empty() => addrs,
            _ => return error(format!("cannot resolve host '{host}'")),
        };
        if !allow_private {
            if let Some(bad) = addrs.iter().find(|a| is_private(a.ip())) {
                return refused(format!(
                    "{current} resolves to the private or loopback address {}; set tools.web_fetch.allow_private: true in config.yaml to allow it",
                    bad.ip()
                ));
            }
        }
        // Connect to exactly the addresses checked above (no second DNS answer).
        let client = match reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .resolve_to_addrs(&host, &addrs)
            .build()
        {
            Ok(c) => c,
            Err(e) => return error(format!("cannot build the HTTP client: {e}")),
        };
        let response = match client.get(parsed.clone()).send().await {
            Ok(r) => r,
            Err(e) => return error(format!("GET {current} failed: {e}")),
        };
        let status = response.status();
        if status.is_redirection() {
            let Some(next) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| parsed.join(l).ok())
            else {
                return error(format!("{current} redirected without a usable Location"));
            };
            current = next.to_string();
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let textual = content_type.is_empty()
            || content_type.starts_with("text/")
            || ["json", "xml", "javascript", "yaml", "csv"]
                .iter()
                .any(|t| content_type.contains(t));
        if !textual {
            return error(format!(
                "{current} is '{content_type}', not text; web_fetch returns text only"
            ));
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() >= FETCH_CAP {
                break;
            }
        }
        return json!({
            "url": current,
            "status": status.as_u16(),
            "content_type": content_type,
            "content": cap(&String::from_utf8_lossy(&body), FETCH_CAP),
        })
        .to_string();
    }
    error(format!("{url}: too many redirects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangerous_commands_are_recognised() {
        for bad in [
            "rm -rf /",
            "rm -rf / --no-preserve-root",
            "sudo rm -fr ~",
            "rm -r -f $HOME",
            "rm --recursive /*",
            "chmod 777 /srv",
            "chmod -R 0777 .",
            "psql -c 'drop table users'",
            "curl -s https://x.sh | bash",
            "wget -qO- x | sh",
            "git push --force origin main",
            "git push -f",
            "echo x > /etc/hosts",
            "echo x | sudo tee -a /etc/profile",
        ] {
            assert!(dangerous(bad).is_some(), "{bad}");
        }
        for ok in [
            "rm -rf ./build",
            "rm -rf /tmp/x",
            "ls /",
            "cat /etc/hosts",
            "git push origin main",
            "chmod 755 x",
            "curl https://example.com -o page.html",
        ] {
            assert!(dangerous(ok).is_none(), "{ok}");
        }
    }

    #[test]
    fn private_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "169.254.1.1",
            "::1",
            "fd00::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn toolsets_narrow_the_registry() {
        let names = |v: Vec<ToolSpec>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(
            names(available(None, &[], None)),
            vec![
                "terminal",
                "read_file",
                "write_file",
                "patch",
                "list_directory",
                "search_files",
                "web_fetch",
                "skills_list",
                "skill_view",
                "todo"
            ]
        );
        let code = Some(Duration::from_secs(9));
        assert_eq!(
            names(available(None, &[], code)).last().cloned(),
            Some("execute_code".into())
        );
        assert_eq!(
            names(available(Some(&["terminal".into()]), &[], code)),
            vec!["terminal"]
        );
        assert_eq!(
            names(available(
                Some(&["file".into(), "web".into(), "code_execution".into()]),
                &["web_fetch".into(), "patch".into()],
                code
            )),
            vec![
                "read_file",
                "write_file",
                "list_directory",
                "search_files",
                "execute_code"
            ]
        );
        assert_eq!(
            names(available(
                Some(&["skills".into(), "todo".into()]),
                &[],
                None
            )),
            vec!["skills_list", "skill_view", "todo"]
        );
    }

    fn context(workdir: &Path, code_timeout: Duration) -> ToolContext {
        ToolContext {
            workdir: workdir.to_path_buf(),
            allow_private_fetch: false,
            activity: Activity::new(),
            mcp: None,
            home: workdir.to_path_buf(),
            todos: Arc::default(),
            execute_code: true,
            code_timeout,
        }
    }

    #[tokio::test]
    async fn execute_code_runs_python_and_reports_like_hermes() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), Duration::from_secs(20));
        let offered = offered(None, &[], &ctx);
        let call = |code: &str| {
            let args = json!({"code": code}).to_string();
            let offered = offered.clone();
            let ctx = ctx.clone();
            async move {
                serde_json::from_str::<Value>(
                    &dispatch("execute_code", &args, &offered, &ctx).await,
                )
                .unwrap()
            }
        };
        let v = call("import os\nprint(os.getcwd())\nprint(sum(range(5)))").await;
        assert_eq!(v["status"], "success", "{v}");
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(v["output"], format!("{}\n10\n", cwd.display()));
        assert_eq!(v["exit_code"], 0);
        let v = call("print('partial')\nraise SystemExit('boom')").await;
        assert_eq!(v["status"], "error");
        assert_eq!(v["exit_code"], 1);
        assert_eq!(v["error"], "boom\n");
        assert_eq!(v["output"], "partial\n\n--- stderr ---\nboom\n");
        let v = call("print('x' * 60000, end='')").await;
        assert_eq!(v["stdout_truncated"], true);
        assert_eq!(v["stdout_bytes_total"], 60000);
        assert!(
            v["output"]
                .as_str()
                .unwrap_or_default()
                .contains("[OUTPUT TRUNCATED - 10,000 bytes omitted out of 60,000 total]")
                || v["output"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("[OUTPUT TRUNCATED - 10000 bytes omitted out of 60000 total]")
        );
        let v = call("  ").await;
        assert_eq!(v["error"], "No code provided.");
    }

    #[tokio::test]
    async fn a_hanging_script_is_killed_with_its_group_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        // Three seconds for Python to start and write the pid on a loaded host.
        let ctx = context(dir.path(), Duration::from_secs(3));
        let offered = offered(None, &[], &ctx);
        let code = "import subprocess, time\nopen('child.pid', 'w').write(str(subprocess.Popen(['sleep', '60']).pid))\ntime.sleep(60)";
        let started = std::time::Instant::now();
        let out = dispatch(
            "execute_code",
            &json!({"code": code}).to_string(),
            &offered,
            &ctx,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "timeout", "{v}");
        assert_eq!(v["error"], "Script timed out after 3s and was killed.");
        let pid: i64 = std::fs::read_to_string(dir.path().join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !crate::process::pid_alive(pid)
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "the script's child is gone"
        );
    }

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

    #[tokio::test]
    async fn terminal_runs_in_the_workdir_and_refuses_rm_rf_root() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), Duration::from_secs(5));
        let offered = available(None, &[], None);
        let out = dispatch(
            "terminal",
            r#"{"command":"echo hi > f.txt; cat f.txt"}"#,
            &offered,
            &ctx,
        )
        .await;
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["output"], "hi\n");
        assert_eq!(v["exit_code"], 0);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let args = json!({"command": "pwd", "workdir": sub.display().to_string()}).to_string();
        let v: Value =
            serde_json::from_str(&dispatch("terminal", &args, &offered, &ctx).await).unwrap();
        assert_eq!(v["output"], format!("{}\n", sub.display()));
        let args = r#"{"command":"sleep 1","background":true}"#;
        let out = dispatch("terminal", args, &offered, &ctx).await;
        assert!(out.contains("not available in scheduled runs"), "{out}");
        let out = dispatch("terminal", r#"{"command":"rm -rf /"}"#, &offered, &ctx).await;
        assert!(out.contains("refused"), "{out}");
        let out = dispatch(
            "terminal",
            r#"{"command":"sleep 30 & sleep 30","timeout":1}"#,
            &offered,
            &ctx,
        )
        .await;
        assert!(out.contains("timed out"), "{out}");
        let out = dispatch("send_message", "{}", &offered, &ctx).await;
        assert!(out.contains("refused"));
    }
}

#[cfg(test)]
mod schema_golden {
    use super::*;

    /// Every built-in tool as the model sees it (name, description, parameters, in
    /// order), with `execute_code` offered for 300 s, is exactly the recorded list: a
    /// change here changes the bytes providers cache and the words the model reads.
    #[test]
    fn the_schemas_are_the_recorded_ones() {
        let specs: Vec<Value> = available(None, &[], Some(Duration::from_secs(300)))
            .into_iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        let rendered = serde_json::to_string_pretty(&specs).unwrap_or_default() + "\n";
        assert_eq!(rendered, include_str!("tools/testdata/schemas.json"));
    }
}
