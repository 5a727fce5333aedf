//! MCP servers as tools of one run (docs/AGENT.md, "MCP servers"): which configured
//! servers a job gets, starting them, offering their tools as `mcp__<server>__<tool>`,
//! calling them, and stopping each (its whole process group) when the run ends. A server
//! that cannot start, crashes or hangs is a tool error and a notice naming it, never a
//! hung run. It never passes a server a credential it was not given.
//!
//! Starting a server and its session is `connect.rs`; what the model is offered of it,
//! `offer.rs`; what a call gives back to the model, `answers.rs`.

mod answers;
mod connect;
mod offer;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, JsonObject, ReadResourceRequestParams,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{json, Value};

use super::inference::Vars;
use super::model_api::ToolSpec;
use crate::config::{McpServer, Seconds};
use crate::logged::logged;
use crate::process::GroupKill;
use crate::runner::{Activity, RunEnv, RunOutcome, RunResult};
use answers::{got_prompt, listed_prompts, listed_resources, read_resource, render};
use connect::{connect, Connected, ExitReason, StartError};
use offer::offer;

/// Python Hermes' defaults: a tool call may take 300 s, starting a server 60 s.
const DEFAULT_TOOL_TIMEOUT: f64 = 300.0;
const DEFAULT_CONNECT_TIMEOUT: f64 = 60.0;
/// At most this much of a result goes back to the model (as for the built-in tools).
const RESULT_CAP: usize = 50_000;
/// Lines of a stdio server's stderr kept to explain why it stopped.
const STDERR_LINES: usize = 5;
/// How long a stdio server gets to exit after its input is closed, before its group is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Variables of our own environment a stdio server gets (Python Hermes' safe set, plus
/// the locale and XDG directories); everything else only through its `env:`.
const SAFE_VARIABLES: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "SHELL", "TMPDIR", "TZ",
];
/// The toolset that names every server at once in Hermes: a job listing it gets none.
const NO_MCP: &str = "no_mcp";

/// A name as Python Hermes puts it in a tool name: everything outside `[A-Za-z0-9_]`
/// becomes `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name the model sees for tool `tool` of server `server`: `mcp__<server>__<tool>`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(tool))
}

fn names(list: &[String], server: &str) -> bool {
    list.iter()
        .any(|entry| entry == server || entry.strip_prefix("mcp-") == Some(server))
}

/// The servers a job's run starts, in the file's order, as Hermes 0.22 resolves them
/// for cron: a server with `enabled: false` never; with the job's `enabled_toolsets`
/// set, the servers it names (by name or `mcp-<name>`) when it names any, none when it
/// holds `no_mcp` or is empty (an explicit zero-tool allowlist: the run gets no tools at
/// all), else every enabled server; without it, every enabled server. Then
/// `agent.disabled_toolsets` removes the servers it names.
pub fn chosen<'a>(
    servers: &'a [McpServer],
    enabled_toolsets: Option<&[String]>,
    disabled_toolsets: &[String],
) -> Vec<&'a McpServer> {
    let on: Vec<&McpServer> = servers
        .iter()
        .filter(|s| s.enabled != Some(false))
        .collect();
    let job = enabled_toolsets;
    let named_by_job = |s: &&McpServer| job.is_some_and(|list| names(list, &s.name));
    let picked: Vec<&McpServer> = match job {
        Some([]) => Vec::new(),
        Some(list) if list.iter().any(|e| e == NO_MCP) || on.iter().any(named_by_job) => {
            on.into_iter().filter(named_by_job).collect()
        }
        _ => on,
    };
    picked
        .into_iter()
        .filter(|s| !names(disabled_toolsets, &s.name))
        .collect()
}

/// What one run may use of the MCP servers: where relative paths and variables come from.
pub struct Setup<'a> {
    pub vars: &'a Vars,
    /// The run's work directory: stdio servers start there.
    pub workdir: &'a Path,
    /// Tool names in `agent.disabled_toolsets` are not offered.
    pub disabled_toolsets: &'a [String],
    pub activity: &'a Activity,
}

/// The MCP servers started for one run and the tools they offer. Dropping it (a run
/// cancelled or timed out) kills every stdio server's process group, through each
/// `Process`'s `GroupKill`; [`McpServers::stop`] first lets them exit.
pub struct McpServers {
    servers: Vec<Server>,
    /// Lines for the run's output: each server that could not be used, and why. Pushed
    /// by `start` and by calls that find a server crashed or hung.
    notices: Mutex<Vec<String>>,
    activity: Activity,
}

/// What a tool of a server does when called.
#[derive(Debug, Clone, PartialEq)]
enum Route {
    /// The server's own tool of this name.
    Tool(String),
    /// Hermes' helper tools, offered when the server advertises resources or prompts.
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
}

impl Route {
    fn label(&self) -> &str {
        match self {
            Route::Tool(name) => name,
            Route::ListResources => "list_resources",
            Route::ReadResource => "read_resource",
            Route::ListPrompts => "list_prompts",
            Route::GetPrompt => "get_prompt",
        }
    }
}

/// One configured server, started or not.
struct Server {
    /// Its name under `mcp_servers:`.
    name: String,
    /// `mcp__<sanitised name>__`: every tool of this server starts with it.
    prefix: String,
    timeout: Duration,
    /// The tools offered to the model, and what each does.
    tools: Vec<(ToolSpec, Route)>,
    link: Option<Link>,
    /// Why the server cannot be used any more; set once, when it failed to start,
    /// crashed or was stopped for hanging.
    down: Mutex<Option<String>>,
    /// Held during a call: one call at a time per server, as in Hermes.
    turn: tokio::sync::Mutex<()>,
}

/// A running connection.
struct Link {
    peer: Peer<RoleClient>,
    /// Taken by `stop` to close the session.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    /// A stdio server's process; `None` for HTTP.
    process: Option<Process>,
}

/// A stdio server's process group and what it said on stderr. Dropping it kills the
/// group.
struct Process {
    child: tokio::sync::Mutex<tokio::process::Child>,
    group: Mutex<GroupKill>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Process {
    fn kill(&self) {
        if let Ok(mut group) = self.group.lock() {
            group.kill_now();
        }
    }

    /// How the process ended, once it has, waiting up to `grace` for it.
    async fn exit_reason(&self, grace: Duration) -> Option<ExitReason> {
        let status = {
            let mut child = self.child.lock().await;
            tokio::time::timeout(grace, child.wait()).await.ok()?.ok()?
        };
        // Give the stderr reader a moment to take the last lines.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let last_stderr = self.stderr.lock().ok().and_then(|l| l.last().cloned());
        Some(ExitReason {
            status,
            last_stderr,
        })
    }
}

impl Server {
    fn failed(config: &McpServer, why: String) -> Server {
        Server {
            name: config.name.clone(),
            prefix: format!("mcp__{}__", sanitize(&config.name)),
            timeout: seconds(config.timeout, DEFAULT_TOOL_TIMEOUT),
            tools: Vec::new(),
            link: None,
            down: Mutex::new(Some(why)),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    fn down(&self) -> Option<String> {
        self.down.lock().ok().and_then(|d| d.clone())
    }

    /// Marks the server unusable; true the first time.
    fn set_down(&self, why: String) -> bool {
        match self.down.lock() {
            Ok(mut down) if down.is_none() => {
                *down = Some(why);
                true
            }
            _ => false,
        }
    }
}

fn seconds(value: Option<Seconds>, default: f64) -> Duration {
    Duration::try_from_secs_f64(value.map_or(default, |s| s.0)).unwrap_or(Duration::MAX)
}

fn error(text: impl Into<String>) -> String {
    json!({"error": text.into()}).to_string()
}

/// Starts the MCP servers a job's run may use (see [`chosen`]); `None` when it has none.
pub async fn for_run(
    env: &RunEnv,
    enabled_toolsets: Option<&[String]>,
    disabled_toolsets: &[String],
    workdir: &Path,
) -> Option<Arc<McpServers>> {
    let servers = chosen(
        &env.world.config.mcp_servers,
        enabled_toolsets,
        disabled_toolsets,
    );
    if servers.is_empty() {
        return None;
    }
    let setup = Setup {
        vars: &env.world.vars,
        workdir,
        disabled_toolsets,
        activity: &env.activity,
    };
    Some(Arc::new(McpServers::start(&servers, &setup).await))
}

/// Stops the run's servers and puts their notices in the run's output: after the
/// reply (delivered with it, so the user learns why a tool was missing), after a
/// silent reply (saved only) or after the error of a failed run.
pub async fn finish(mcp: Option<Arc<McpServers>>, mut outcome: RunOutcome) -> RunOutcome {
    let Some(mcp) = mcp else {
        return outcome;
    };
    mcp.stop().await;
    let notices = mcp.notices();
    if notices.is_empty() {
        return outcome;
    }
    let block = notices
        .iter()
        .map(|n| format!("Note: {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    outcome.result = match outcome.result {
        RunResult::Reply(text) => RunResult::Reply(format!("{text}\n\n{block}")),
        RunResult::Silent(text) => RunResult::Silent(format!("{text}\n\n{block}")),
        RunResult::Failed(e) => RunResult::Failed(format!("{e}; {}", notices.join("; "))),
        RunResult::OverBudget(mut stop) => {
            stop.so_far = format!("{}\n\n{block}", stop.so_far);
            RunResult::OverBudget(stop)
        }
    };
    outcome
}

impl McpServers {
    /// Starts the servers `chosen` picked, all at once, each bounded by its
    /// `connect_timeout`. Never fails: a server that cannot be used is a notice, and
    /// calls of its tools get its error.
    pub async fn start(servers: &[&McpServer], setup: &Setup<'_>) -> McpServers {
        let mut tasks = tokio::task::JoinSet::new();
        for (index, config) in servers.iter().enumerate() {
            let config = (*config).clone();
            let vars = setup.vars.clone();
            let workdir = setup.workdir.to_path_buf();
            tasks.spawn(async move { (index, connect(&config, &vars, &workdir).await) });
        }
        let mut started: Vec<Option<Result<Connected, StartError>>> =
            (0..servers.len()).map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((index, result)) => started[index] = Some(result),
                Err(e) => tracing::error!("starting an MCP server failed: {e}"),
            }
        }
        let mut mcp = McpServers {
            servers: Vec::new(),
            notices: Mutex::new(Vec::new()),
            activity: setup.activity.clone(),
        };
        let mut offered: Vec<String> = Vec::new();
        for (config, result) in servers.iter().zip(started) {
            let result = result.unwrap_or(Err(StartError::TaskFailed));
            let server = match result {
                Ok(connected) => {
                    let helpers = (connected.resources, connected.prompts);
                    let tools = offer(
                        config,
                        connected.tools,
                        helpers,
                        setup.disabled_toolsets,
                        &offered,
                    );
                    offered.extend(tools.iter().map(|(spec, _)| spec.name.to_string()));
                    tracing::info!(
                        server = %config.name,
                        "MCP server started with {} tool(s)",
                        tools.len()
                    );
                    Server {
                        name: config.name.clone(),
                        prefix: format!("mcp__{}__", sanitize(&config.name)),
                        timeout: seconds(config.timeout, DEFAULT_TOOL_TIMEOUT),
                        tools,
                        link: Some(connected.link),
                        down: Mutex::new(None),
                        turn: tokio::sync::Mutex::new(()),
                    }
                }
                Err(why) => {
                    mcp.notice(format!(
                        "MCP server '{}' could not be used in this run: {why}",
                        config.name
                    ));
                    Server::failed(config, why.to_string())
                }
            };
            mcp.servers.push(server);
        }
        mcp
    }

    /// The tools offered to the model, server by server in the file's order.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .flat_map(|s| s.tools.iter().map(|(spec, _)| spec.clone()))
            .collect()
    }

    /// The server a tool name belongs to (the longest matching prefix), offered or not.
    fn server_of(&self, name: &str) -> Option<&Server> {
        self.servers
            .iter()
            .filter(|s| name.starts_with(&s.prefix))
            .max_by_key(|s| s.prefix.len())
    }

    /// Does this tool name belong to one of the run's MCP servers (even one that could
    /// not start)?
    pub fn owns(&self, name: &str) -> bool {
        self.server_of(name).is_some()
    }

    /// What the user should know about the servers of this run, one line each.
    pub fn notices(&self) -> Vec<String> {
        self.notices.lock().map(|n| n.clone()).unwrap_or_default()
    }

    fn notice(&self, line: String) {
        tracing::warn!("{}", logged(&line));
        if let Ok(mut notices) = self.notices.lock() {
            if !notices.contains(&line) {
                notices.push(line);
            }
        }
    }

    /// Calls tool `name` with `arguments` (a JSON object). The result is a JSON text
    /// as Hermes gives it: `{"result": ...}` (with `structuredContent` when the server
    /// sent one) or `{"error": ...}`.
    pub async fn call(&self, name: &str, arguments: JsonObject) -> String {
        let Some(server) = self.server_of(name) else {
            return error(format!(
                "'{name}' is not a tool of an MCP server of this run"
            ));
        };
        if let Some(why) = server.down() {
            return error(format!(
                "MCP server '{}' is not available in this run: {why}",
                server.name
            ));
        }
        let (Some(link), Some((_, route))) = (
            server.link.as_ref(),
            server.tools.iter().find(|(spec, _)| spec.name == name),
        ) else {
            return error(format!(
                "MCP server '{}' offers no tool '{name}' in this run",
                server.name
            ));
        };
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let (uri, prompt) = (text("uri"), text("name"));
        match route {
            Route::ReadResource if uri.is_none() => {
                return error("Missing required parameter 'uri'")
            }
            Route::GetPrompt if prompt.is_none() => {
                return error("Missing required parameter 'name'")
            }
            _ => {}
        }
        let peer = &link.peer;
        let work = async {
            let _turn = server.turn.lock().await;
            match route {
                Route::Tool(tool) => {
                    let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
                    peer.call_tool(params).await.map(|r| render(&r))
                }
                Route::ListResources => peer
                    .list_all_resources()
                    .await
                    .map(|r| listed_resources(&r)),
                Route::ReadResource => {
                    let params = ReadResourceRequestParams::new(uri.unwrap_or_default());
                    peer.read_resource(params).await.map(|r| read_resource(&r))
                }
                Route::ListPrompts => peer.list_all_prompts().await.map(|p| listed_prompts(&p)),
                Route::GetPrompt => {
                    let mut params = GetPromptRequestParams::new(prompt.unwrap_or_default());
                    if let Some(Value::Object(args)) = arguments.get("arguments") {
                        params = params.with_arguments(args.clone());
                    }
                    peer.get_prompt(params).await.map(|p| got_prompt(&p))
                }
            }
        };
        let tool = route.label();
        let outcome = tokio::time::timeout(server.timeout, work).await;
        self.activity.touch();
        match outcome {
            Ok(Ok(text)) => text,
            // The server answered with a protocol error: it is alive.
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                error(format!("MCP call failed: {}", one_line(&e.message)))
            }
            Ok(Err(e)) => self.lost(server, link, tool, &e.to_string()).await,
            Err(_) => self.hung(server, link, tool),
        }
    }

    /// A call failed on the connection: a stdio server that has exited is down for
    /// the rest of the run (and its group is killed); anything else is this call's error.
    async fn lost(&self, server: &Server, link: &Link, tool: &str, failure: &str) -> String {
        let exited = match &link.process {
            Some(process) => process.exit_reason(Duration::from_millis(200)).await,
            None => None,
        };
        let Some(reason) = exited else {
            return error(format!(
                "MCP server '{}': calling '{tool}' failed: {}",
                server.name,
                one_line(failure)
            ));
        };
        if let Some(process) = &link.process {
            process.kill();
        }
        let why = format!("it stopped during the run ({reason})");
        if server.set_down(why.clone()) {
            self.notice(format!("MCP server '{}': {why}", server.name));
        }
        error(format!(
            "MCP server '{}' stopped while calling '{tool}': {reason}",
            server.name
        ))
    }

    /// A call got no answer within the server's `timeout`: a stdio server is stopped
    /// with its whole process group and is down for the rest of the run; an HTTP server
    /// may answer the next call.
    fn hung(&self, server: &Server, link: &Link, tool: &str) -> String {
        let secs = server.timeout.as_secs_f64();
        let mut why = format!("a call of '{tool}' got no answer within {secs}s (its timeout)");
        match &link.process {
            Some(process) => {
                process.kill();
                why.push_str("; the server was stopped with its child processes");
                if server.set_down(why.clone()) {
                    self.notice(format!("MCP server '{}': {why}", server.name));
                }
            }
            None => self.notice(format!("MCP server '{}': {why}", server.name)),
        }
        error(format!("MCP server '{}': {why}", server.name))
    }

    /// Closes every session (a stdio server sees its input end and may exit), gives the
    /// stdio servers [`EXIT_GRACE`] in all to exit, then kills their process groups.
    pub async fn stop(&self) {
        let deadline = tokio::time::Instant::now() + EXIT_GRACE;
        let links: Vec<&Link> = self
            .servers
            .iter()
            .filter_map(|s| s.link.as_ref())
            .collect();
        let mut services = Vec::new();
        for link in &links {
            if let Some(service) = link.service.lock().await.take() {
                service.cancellation_token().cancel();
                services.push(service);
            }
        }
        for mut service in services {
            let _ = tokio::time::timeout_at(deadline, service.close()).await;
        }
        for process in links.iter().filter_map(|l| l.process.as_ref()) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let _ = process.exit_reason(left).await;
            process.kill();
        }
    }
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.servers.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("McpServers")
            .field("servers", &names)
            .finish()
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use rmcp::model::CallToolResult;

    use super::connect::expand;
    use super::offer::normalize_schema;
    use super::*;

    fn server(name: &str, enabled: Option<bool>) -> McpServer {
        McpServer {
            name: name.to_string(),
            command: Some("true".into()),
            enabled,
            ..McpServer::default()
        }
    }

    fn picked(servers: &[McpServer], enabled: Option<&[&str]>, disabled: &[&str]) -> Vec<String> {
        let enabled: Option<Vec<String>> =
            enabled.map(|l| l.iter().map(|s| s.to_string()).collect());
        let disabled: Vec<String> = disabled.iter().map(|s| s.to_string()).collect();
        chosen(servers, enabled.as_deref(), &disabled)
            .into_iter()
            .map(|s| s.name.clone())
            .collect()
    }

    #[test]
    fn names_are_sanitised_like_hermes() {
        assert_eq!(tool_name("mail", "list_unread"), "mcp__mail__list_unread");
        assert_eq!(
            tool_name("my-mail.box", "read-msg v2"),
            "mcp__my_mail_box__read_msg_v2"
        );
        assert_eq!(sanitize("ünï"), "_n_");
    }

    #[test]
    fn servers_are_chosen_as_hermes_resolves_them_for_cron() {
        let servers = [
            server("mail", None),
            server("calendar", Some(true)),
            server("off", Some(false)),
        ];
        // No list: every enabled server.
        assert_eq!(picked(&servers, None, &[]), ["mail", "calendar"]);
        // An empty list allows nothing (Hermes 0.22, #82010): no server either.
        assert!(picked(&servers, Some(&[]), &[]).is_empty());
        // A list of native toolsets keeps every enabled server.
        assert_eq!(
            picked(&servers, Some(&["terminal", "file"]), &[]),
            ["mail", "calendar"]
        );
        // A list naming a server is an allowlist of servers.
        assert_eq!(
            picked(&servers, Some(&["terminal", "calendar"]), &[]),
            ["calendar"]
        );
        assert_eq!(picked(&servers, Some(&["mcp-mail"]), &[]), ["mail"]);
        // no_mcp: none, unless named.
        assert!(picked(&servers, Some(&["terminal", "no_mcp"]), &[]).is_empty());
        assert_eq!(picked(&servers, Some(&["no_mcp", "mail"]), &[]), ["mail"]);
        // A disabled server is never started, even when named.
        assert!(picked(&servers, Some(&["off"]), &[]).len() == 2);
        // agent.disabled_toolsets removes servers by name or mcp-<name>.
        assert_eq!(picked(&servers, None, &["mail"]), ["calendar"]);
        assert_eq!(
            picked(&servers, Some(&["mail"]), &["mcp-mail"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn variables_are_expanded_and_unknown_ones_kept() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".env"), "HERMES_MCP_TEST_VALUE=v4lue\n").unwrap();
        let vars = Vars::load(home.path());
        assert_eq!(
            expand(
                "Bearer ${HERMES_MCP_TEST_VALUE}/${env:HERMES_MCP_TEST_VALUE}",
                &vars
            ),
            "Bearer v4lue/v4lue"
        );
        assert_eq!(
            expand("${NOT_SET_ANYWHERE_X} ${", &vars),
            "${NOT_SET_ANYWHERE_X} ${"
        );
    }

    #[test]
    fn schemas_are_repaired_for_every_provider() {
        assert_eq!(
            normalize_schema(json!({})),
            json!({"type": "object", "properties": {}})
        );
        let schema = normalize_schema(json!({
            "properties": {
                "folder": {"type": "string"},
                "definitions": {"$ref": "#/definitions/Ids"}
            },
            "required": ["folder", "ghost"],
            "definitions": {"Ids": {"type": "array"}}
        }));
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["folder"]));
        assert!(schema["$defs"]["Ids"].is_object());
        // A property named "definitions" keeps its name; its ref is rewritten.
        assert_eq!(schema["properties"]["definitions"]["$ref"], "#/$defs/Ids");
    }

    #[test]
    fn results_read_like_hermes() {
        let ok: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "3 unread"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]
        }))
        .unwrap();
        let v: Value = serde_json::from_str(&render(&ok)).unwrap();
        assert_eq!(v["result"], "3 unread\n[image (image/png), not shown]");
        let structured: CallToolResult = serde_json::from_value(json!({
            "content": [], "structuredContent": {"count": 3}
        }))
        .unwrap();
        assert_eq!(render(&structured), r#"{"result":{"count":3}}"#);
        let failed: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "no such folder"}], "isError": true
        }))
        .unwrap();
        assert_eq!(render(&failed), r#"{"error":"no such folder"}"#);
    }
}
