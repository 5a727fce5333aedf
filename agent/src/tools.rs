//! The tools a cron agent may use (docs/AGENT.md, "Tools"), with Python Hermes' names and
//! argument schemas. Each built-in tool is one file under `tools/` implementing [`Tool`]
//! (name, toolset, schema, handler) and one line of [`BUILT_IN`]; what a run is offered
//! and where a call goes are both read from that list. Built in: `terminal`,
//! `read_file`, `write_file`, `patch`, `list_directory`, `search_files`, `web_fetch`,
//! `skills_list`, `skill_view`, `todo`, and `execute_code` when `approvals.cron_mode:
//! approve`; `tools/child.rs` holds the guards of every child process a tool starts.
//! Results are JSON strings; a refused call says it was refused and why, so the model
//! can tell the user. Every result is redacted (`redact`) before the model sees it, and
//! under a sandbox level other than `off` every process a tool starts is confined and
//! the file tools check paths against the same policy (`crate::sandbox`).
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

pub mod backend;
mod child;
mod execute_code;
mod list_directory;
mod patch;
mod read_file;
mod search_files;
mod skill_view;
mod skills_list;
mod terminal;
mod todo;
mod web_fetch;
mod write_file;

use std::borrow::Cow;
use std::ffi::OsStr;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::mcp::McpServers;
use super::model_api::ToolSpec;
use crate::redact::Redactor;
use crate::runner::Activity;
use crate::sandbox::{Level, Policy};

pub use self::execute_code::DEFAULT_TIMEOUT as DEFAULT_CODE_TIMEOUT;
pub use self::todo::TodoList;

/// At most this much of a tool's output goes back to the model.
const RESULT_CAP: usize = 50_000;

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
    /// Masks every secret in a tool's result before the model sees it.
    pub redactor: Arc<Redactor>,
    /// The run's confinement; `None` under `sandbox: off`.
    pub sandbox: Option<RunSandbox>,
    /// Where tool processes start (`terminal.backend`).
    pub backend: backend::Backend,
    /// Under `strict`: no network for tool processes (also in a container).
    pub network: bool,
}

/// The confinement of one run (docs/SAFETY.md, "Sandbox").
#[derive(Debug, Clone)]
pub struct RunSandbox {
    pub level: Level,
    /// The job's work directory (or its private one): the one writable directory,
    /// whatever `terminal`'s `workdir` argument says.
    pub workdir: PathBuf,
}

impl ToolContext {
    /// The policy the file tools check paths against (no temporary directory of their
    /// own: they may write in the work directory only).
    pub fn file_policy(&self) -> Option<Policy> {
        let sandbox = self.sandbox.as_ref()?;
        Some(Policy::new(
            sandbox.level,
            &self.home,
            &sandbox.workdir,
            &sandbox.workdir,
        ))
    }
}

/// What a tool call comes to: the JSON text the model gets back.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = String> + Send + 'a>>;

/// What the model is told about a built-in tool, and the toolset it belongs to.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The name the model calls it by (Hermes' name).
    pub name: &'static str,
    /// The toolset it is enabled and disabled with (Hermes' grouping).
    pub toolset: &'static str,
    pub description: Cow<'static, str>,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

impl Schema {
    pub fn new(
        name: &'static str,
        toolset: &'static str,
        description: impl Into<Cow<'static, str>>,
        parameters: Value,
    ) -> Schema {
        Schema {
            name,
            toolset,
            description: description.into(),
            parameters,
        }
    }
}

/// One built-in tool: what the model is told about it and what a call of it does.
pub trait Tool: Sync {
    /// Its name, toolset, description and argument schema in a run with `ctx`.
    fn schema(&self, ctx: &ToolContext) -> Schema;

    /// Whether this run may have it at all, whatever the toolsets say.
    fn offered(&self, _ctx: &ToolContext) -> bool {
        true
    }

    /// One call; `args` is a JSON object.
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a>;
}

/// Every built-in tool, in the order they are offered (the order is part of the bytes
/// providers cache). A new tool is its file under `tools/` and one line here.
const BUILT_IN: &[&dyn Tool] = &[
    &terminal::Terminal,
    &read_file::ReadFile,
    &write_file::WriteFile,
    &patch::Patch,
    &list_directory::ListDirectory,
    &search_files::SearchFiles,
    &web_fetch::WebFetch,
    &skills_list::SkillsList,
    &skill_view::SkillView,
    &todo::Todo,
    &execute_code::ExecuteCode,
];

/// The built-in tools offered to this run: the job's `enabled_toolsets` (when set)
/// narrows the set, `agent.disabled_toolsets` removes from it.
fn available(enabled: Option<&[String]>, disabled: &[String], ctx: &ToolContext) -> Vec<ToolSpec> {
    let listed = |list: &[String], tool: &Schema| {
        list.iter()
            .any(|e| e.eq_ignore_ascii_case(tool.name) || e.eq_ignore_ascii_case(tool.toolset))
    };
    BUILT_IN
        .iter()
        .filter(|tool| tool.offered(ctx))
        .map(|tool| tool.schema(ctx))
        .filter(|tool| enabled.is_none_or(|e| listed(e, tool)))
        .filter(|tool| !listed(disabled, tool))
        .map(|tool| ToolSpec {
            name: tool.name.into(),
            description: tool.description,
            parameters: tool.parameters,
        })
        .collect()
}

/// Every tool this run offers: the built-in ones `available` keeps, then the tools of
/// the run's MCP servers (chosen and filtered by `mcp`).
pub fn offered(
    enabled: Option<&[String]>,
    disabled: &[String],
    ctx: &ToolContext,
) -> Vec<ToolSpec> {
    let mut tools = available(enabled, disabled, ctx);
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

/// A text argument of a call.
fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The answer of a tool that does its work before returning.
fn ready(answer: String) -> ToolFuture<'static> {
    Box::pin(std::future::ready(answer))
}

/// Runs one call. `offered` is the set this run has; anything else is refused.
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
        return ctx.redactor.redact(&mcp.call(name, map.clone()).await);
    }
    let result = match BUILT_IN.iter().find(|tool| tool.schema(ctx).name == name) {
        Some(tool) => tool.run(&args, ctx).await,
        None => refused(format!("unknown tool '{name}'")),
    };
    ctx.activity.touch();
    // No secret reaches the model: the same rules as output documents.
    ctx.redactor.redact(&result)
}

/// The files below `root`, depth first, not entering the folders `skipped` names: at
/// most `limit`, and whether the walk stopped there. Unreadable folders are passed over.
fn files_below(
    root: &Path,
    skipped: impl Fn(&OsStr) -> bool,
    limit: usize,
) -> (Vec<PathBuf>, bool) {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && !skipped(&entry.file_name()) => {
                    stack.push(entry.path())
                }
                Ok(kind) if kind.is_file() => {
                    files.push(entry.path());
                    if files.len() >= limit {
                        return (files, true);
                    }
                }
                _ => {}
            }
        }
    }
    (files, false)
}

/// `path` as a file tool may use it: under a sandbox, resolved (`..`, symlinks) and
/// checked against the run's policy, else the refusal the model gets; unchanged under
/// `sandbox: off`.
fn sandboxed(ctx: &ToolContext, path: PathBuf, write: bool) -> Result<PathBuf, String> {
    let Some(policy) = ctx.file_policy() else {
        return Ok(path);
    };
    if let Some(conflict) = policy.conflict() {
        return Err(refused(conflict));
    }
    let checked = if write {
        crate::sandbox::paths::writable(&policy, &path)
    } else {
        crate::sandbox::paths::readable(&policy, &path)
    };
    checked.map_err(refused)
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

/// What the tests of every tool build on.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A run's tool context in `workdir` (also its home), allowed to execute code for
    /// `code_timeout`.
    pub fn context(workdir: &Path, code_timeout: Duration) -> ToolContext {
        ToolContext {
            workdir: workdir.to_path_buf(),
            allow_private_fetch: false,
            activity: Activity::new(),
            mcp: None,
            home: workdir.to_path_buf(),
            todos: Arc::default(),
            execute_code: true,
            code_timeout,
            redactor: Arc::default(),
            sandbox: None,
            backend: backend::Backend::Local,
            network: true,
        }
    }

    /// A skill `folder` under `<home>/skills/` whose SKILL.md is `text`.
    pub fn skill(home: &Path, folder: &str, text: &str) {
        let dir = home.join("skills").join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::testing::context;
    use super::*;

    /// The built-in tools a run offers, allowed to execute code for `code_timeout` if given.
    fn built_in(
        enabled: Option<&[String]>,
        disabled: &[String],
        code_timeout: Option<Duration>,
    ) -> Vec<ToolSpec> {
        let ctx = ToolContext {
            execute_code: code_timeout.is_some(),
            ..context(Path::new("/"), code_timeout.unwrap_or(DEFAULT_CODE_TIMEOUT))
        };
        available(enabled, disabled, &ctx)
    }

    #[test]
    fn toolsets_narrow_the_registry() {
        let names = |v: Vec<ToolSpec>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(
            names(built_in(None, &[], None)),
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
            names(built_in(None, &[], code)).last().cloned(),
            Some("execute_code".into())
        );
        assert_eq!(
            names(built_in(Some(&["terminal".into()]), &[], code)),
            vec!["terminal"]
        );
        assert_eq!(
            names(built_in(
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
            names(built_in(Some(&["skills".into(), "todo".into()]), &[], None)),
            vec!["skills_list", "skill_view", "todo"]
        );
    }

    /// Every built-in tool as the model sees it (name, description, parameters, in
    /// order), with `execute_code` offered for 300 s, is exactly the recorded list: a
    /// change here changes the bytes providers cache and the words the model reads.
    #[test]
    fn the_schemas_are_the_recorded_ones() {
        let specs: Vec<Value> = built_in(None, &[], Some(Duration::from_secs(300)))
            .into_iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        let rendered = serde_json::to_string_pretty(&specs).unwrap_or_default() + "\n";
        assert_eq!(rendered, include_str!("tools/testdata/schemas.json"));
    }
}
