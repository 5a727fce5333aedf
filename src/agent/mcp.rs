//! MCP servers as tools of one run (docs/AGENT.md, "MCP servers"): which configured
//! servers a job gets, starting them, offering their tools as `mcp__<server>__<tool>`,
//! calling them, and stopping each (its whole process group) when the run ends. A server
//! that cannot start, crashes or hangs is a tool error and a notice naming it, never a
//! hung run. It never passes a server a credential it was not given.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, JsonObject,
    ReadResourceRequestParams,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::inference::Vars;
use super::model_api::ToolSpec;
use crate::config::{McpServer, Seconds};
use crate::logged::logged;
use crate::process::GroupKill;
use crate::runner::{Activity, RunEnv, RunOutcome, RunResult};

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

/// Why a server cannot be used in this run. The text completes "MCP server '<name>'
/// could not be used in this run: ", so it speaks of the server as "it".
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("it has neither 'command' (a stdio server) nor 'url' (an HTTP server); add one to its entry under mcp_servers in config.yaml")]
    NoCommandOrUrl,
    #[error("cannot start '{}': {source}; check 'command' (and PATH in its 'env')", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot connect to its standard input and output")]
    NoStdio,
    #[error("{0}")]
    Exited(ExitReason),
    #[error(transparent)]
    Stdio(Handshake),
    #[error("it did not answer within {0}s (its connect_timeout); it was stopped with its child processes")]
    StdioTimeout(f64),
    #[error("cannot set up TLS: {0}")]
    Tls(rustls::Error),
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(reqwest_mcp::Error),
    #[error("its url '{0}' is not an http(s) URL")]
    NotHttp(String),
    #[error("'{0}' under its headers is not a valid header name")]
    HeaderName(String),
    #[error("the value of header '{0}' is not valid in an HTTP header")]
    HeaderValue(String),
    #[error("{url}: {source}")]
    Http { url: String, source: Handshake },
    #[error("{url} did not answer within {secs}s (its connect_timeout)")]
    HttpTimeout { url: String, secs: f64 },
    #[error("its start-up task failed")]
    TaskFailed,
}

/// Why the MCP session with a started server could not be set up, in one line without
/// the transport's Rust type names.
#[derive(Debug, thiserror::Error)]
enum Handshake {
    #[error("{0}")]
    Initialize(String),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
}

/// How a stdio server ended: its exit status and the last line it wrote on stderr.
#[derive(Debug)]
struct ExitReason {
    status: std::process::ExitStatus,
    last_stderr: Option<String>,
}

impl std::fmt::Display for ExitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it exited with {}", self.status)?;
        match &self.last_stderr {
            Some(last) => write!(f, "; its last error output: {last}"),
            None => Ok(()),
        }
    }
}

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

/// The servers a job's run starts, in the file's order, as Hermes resolves them for
/// cron: a server with `enabled: false` never; with the job's `enabled_toolsets` set,
/// the servers it names (by name or `mcp-<name>`) when it names any, none when it
/// holds `no_mcp`, else every enabled server; without it, every enabled server. Then
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
    let job = enabled_toolsets.filter(|list| !list.is_empty());
    let named_by_job = |s: &&McpServer| job.is_some_and(|list| names(list, &s.name));
    let picked: Vec<&McpServer> = match job {
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

/// `${VAR}` and `${env:VAR}` replaced from the environment, then `<home>/.env`; an
/// unknown variable stays as written (as in Hermes).
fn expand(text: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let reference = rest[start + 2..start + len].trim();
        let variable = reference.strip_prefix("env:").unwrap_or(reference).trim();
        match vars.get(variable) {
            Some(value) => out.push_str(&value),
            None => out.push_str(&rest[start..start + len + 1]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// A stdio server's environment: the safe variables of ours (and every `LC_*` and
/// `XDG_*`), then its own `env:`.
fn server_environment(config: &McpServer, vars: &Vars) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            SAFE_VARIABLES.contains(&name.as_str())
                || name.starts_with("LC_")
                || name.starts_with("XDG_")
        })
        .collect();
    for (name, value) in &config.env {
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), expand(value, vars)));
    }
    env
}

/// `~/` at the start of a command means the home directory.
fn expand_home(command: &str) -> PathBuf {
    match (command.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(command),
    }
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

/// A started server: its connection, the tools it listed, and whether it advertises
/// resources and prompts.
struct Connected {
    link: Link,
    tools: Vec<rmcp::model::Tool>,
    resources: bool,
    prompts: bool,
}

impl Connected {
    fn new(
        service: RunningService<RoleClient, ()>,
        tools: Vec<rmcp::model::Tool>,
        process: Option<Process>,
    ) -> Connected {
        let info = service
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&*info).ok())
            .unwrap_or(Value::Null);
        let advertised = |what: &str| !info["capabilities"][what].is_null();
        Connected {
            resources: advertised("resources"),
            prompts: advertised("prompts"),
            link: Link {
                peer: service.peer().clone(),
                service: tokio::sync::Mutex::new(Some(service)),
                process,
            },
            tools,
        }
    }
}

async fn connect(config: &McpServer, vars: &Vars, workdir: &Path) -> Result<Connected, StartError> {
    let limit = seconds(config.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
    match (&config.command, &config.url) {
        (Some(command), _) => connect_stdio(config, command, vars, workdir, limit).await,
        (None, Some(url)) => connect_http(config, url, vars, limit).await,
        (None, None) => Err(StartError::NoCommandOrUrl),
    }
}

/// Initialises the session and lists every tool, within `limit`.
async fn handshake<T, E, A>(
    transport: T,
    limit: Duration,
) -> Result<
    Result<(RunningService<RoleClient, ()>, Vec<rmcp::model::Tool>), Handshake>,
    tokio::time::error::Elapsed,
>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let work = async {
        let service = ().serve(transport).await.map_err(|e| start_failure(&e))?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| Handshake::ListTools(one_line(&e.to_string())))?;
        Ok((service, tools))
    };
    tokio::time::timeout(limit, work).await
}

/// Why the session could not be set up, without the transport's Rust type names that
/// rmcp's own message carries.
fn start_failure(e: &rmcp::service::ClientInitializeError) -> Handshake {
    Handshake::Initialize(match e {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            one_line(&format!("{} ({context})", error.error))
        }
        other => one_line(&other.to_string()),
    })
}

async fn connect_stdio(
    config: &McpServer,
    command: &str,
    vars: &Vars,
    workdir: &Path,
    limit: Duration,
) -> Result<Connected, StartError> {
    let program = expand_home(&expand(command, vars));
    let args: Vec<String> = config.args.iter().map(|a| expand(a, vars)).collect();
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&args)
        .current_dir(workdir)
        .env_clear()
        .envs(server_environment(config, vars))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = crate::process::spawn_dying_with_process(cmd)
        .await
        .map_err(|source| StartError::Spawn {
            program: program.clone(),
            source,
        })?;
    let group = GroupKill::new(child.id());
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(StartError::NoStdio);
    };
    let process = Process {
        child: tokio::sync::Mutex::new(child),
        group: Mutex::new(group),
        stderr: Arc::new(Mutex::new(Vec::new())),
    };
    let tail = Arc::clone(&process.stderr);
    let server = config.name.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %server, "MCP server stderr: {}", logged(&line));
            if let Ok(mut tail) = tail.lock() {
                if tail.len() == STDERR_LINES {
                    tail.remove(0);
                }
                tail.push(one_line(&line));
            }
        }
    });
    match handshake((stdout, stdin), limit).await {
        Ok(Ok((service, tools))) => Ok(Connected::new(service, tools, Some(process))),
        Ok(Err(why)) => {
            let reason = process.exit_reason(Duration::from_millis(500)).await;
            process.kill();
            Err(reason.map_or(StartError::Stdio(why), StartError::Exited))
        }
        Err(_) => {
            process.kill();
            Err(StartError::StdioTimeout(limit.as_secs_f64()))
        }
    }
}

/// The client for HTTP servers: rustls on ring with the webpki roots (as our model
/// calls), same-origin 307/308 redirects only (anything else would drop the request
/// body or send the configured headers to another host).
fn http_client(limit: Duration) -> Result<reqwest_mcp::Client, StartError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(StartError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest_mcp::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(limit)
        .redirect(reqwest_mcp::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if keeps_body && same_origin && attempt.previous().len() <= 10 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(StartError::HttpClient)
}

async fn connect_http(
    config: &McpServer,
    url: &str,
    vars: &Vars,
    limit: Duration,
) -> Result<Connected, StartError> {
    let url = expand(url, vars);
    match reqwest_mcp::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => return Err(StartError::NotHttp(url)),
    }
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let header = reqwest_mcp::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| StartError::HeaderName(name.clone()))?;
        if matches!(
            header.as_str(),
            "accept" | "mcp-session-id" | "last-event-id" | "mcp-protocol-version"
        ) {
            tracing::warn!(server = %config.name, "MCP header '{name}' is set by the protocol; the configured value is ignored");
            continue;
        }
        let value = reqwest_mcp::header::HeaderValue::from_str(&expand(value, vars))
            .map_err(|_| StartError::HeaderValue(name.clone()))?;
        headers.insert(header, value);
    }
    let client = http_client(limit)?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(headers),
    );
    match handshake(transport, limit).await {
        Ok(Ok((service, tools))) => Ok(Connected::new(service, tools, None)),
        Ok(Err(source)) => Err(StartError::Http { url, source }),
        Err(_) => Err(StartError::HttpTimeout {
            url,
            secs: limit.as_secs_f64(),
        }),
    }
}

/// The tools of one server the run offers: `tools.include` (wins) or `tools.exclude`
/// by the server's own names, then Hermes' resource and prompt helpers when the server
/// advertises those and `tools.resources` / `tools.prompts` are not false; less the
/// names in `agent.disabled_toolsets` and any name an earlier server already took.
fn offer(
    config: &McpServer,
    tools: Vec<rmcp::model::Tool>,
    (resources, prompts): (bool, bool),
    disabled: &[String],
    taken: &[String],
) -> Vec<(ToolSpec, Route)> {
    let filter = &config.tools;
    let wanted = |tool: &str| {
        if !filter.include.is_empty() {
            filter.include.iter().any(|t| t == tool)
        } else {
            !filter.exclude.iter().any(|t| t == tool)
        }
    };
    let mut candidates: Vec<(String, String, Value, Route)> = Vec::new();
    for tool in tools {
        let own = tool.name.to_string();
        if !wanted(&own) {
            continue;
        }
        let description = match tool.description.as_deref() {
            Some(d) if !d.trim().is_empty() => d.to_string(),
            _ => format!("MCP tool {own} from {}", config.name),
        };
        let schema = normalize_schema(Value::Object(tool.input_schema.as_ref().clone()));
        candidates.push((
            tool_name(&config.name, &own),
            description,
            schema,
            Route::Tool(own),
        ));
    }
    let server = &config.name;
    let no_arguments = json!({"type": "object", "properties": {}});
    if resources && filter.resources != Some(false) {
        candidates.push((
            tool_name(server, "list_resources"),
            format!("List available resources from MCP server '{server}'"),
            no_arguments.clone(),
            Route::ListResources,
        ));
        candidates.push((
            tool_name(server, "read_resource"),
            format!("Read a resource by URI from MCP server '{server}'"),
            json!({"type": "object", "properties": {"uri": {"type": "string", "description": "URI of the resource to read"}}, "required": ["uri"]}),
            Route::ReadResource,
        ));
    }
    if prompts && filter.prompts != Some(false) {
        candidates.push((
            tool_name(server, "list_prompts"),
            format!("List available prompts from MCP server '{server}'"),
            no_arguments,
            Route::ListPrompts,
        ));
        candidates.push((
            tool_name(server, "get_prompt"),
            format!("Get a prompt by name from MCP server '{server}'"),
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "Name of the prompt to retrieve"},
                "arguments": {"type": "object", "description": "Optional arguments to pass to the prompt", "properties": {}, "additionalProperties": true}
            }, "required": ["name"]}),
            Route::GetPrompt,
        ));
    }
    let mut offered: Vec<(ToolSpec, Route)> = Vec::new();
    for (name, description, parameters, route) in candidates {
        if disabled.iter().any(|d| d == &name) {
            continue;
        }
        if taken.contains(&name) || offered.iter().any(|(spec, _)| spec.name == name) {
            tracing::warn!(server = %config.name, "MCP tool '{}' is named '{}' like a tool offered before it; skipped", logged(route.label()), logged(&name));
            continue;
        }
        let spec = ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        };
        offered.push((spec, route));
    }
    offered
}

/// An input schema every provider accepts, as Hermes repairs it: an empty one is an
/// object without properties, an object node has `type` and `properties`, `required`
/// names only properties that exist, and `definitions` refs become `$defs`.
pub fn normalize_schema(schema: Value) -> Value {
    fn repair(node: Value, property_names: bool) -> Value {
        match node {
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|n| repair(n, false)).collect())
            }
            Value::Object(map) if property_names => Value::Object(
                map.into_iter()
                    .map(|(name, schema)| (name, repair(schema, false)))
                    .collect(),
            ),
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, value) in map {
                    let names_follow = matches!(key.as_str(), "properties" | "patternProperties");
                    let key = if key == "definitions" {
                        "$defs".to_string()
                    } else {
                        key
                    };
                    out.insert(key, repair(value, names_follow));
                }
                if let Some(Value::String(r)) = out.get_mut("$ref") {
                    if let Some(rest) = r.strip_prefix("#/definitions/") {
                        *r = format!("#/$defs/{rest}");
                    }
                }
                let untyped = out.get("type").is_none_or(Value::is_null);
                if untyped && (out.contains_key("properties") || out.contains_key("required")) {
                    out.insert("type".into(), json!("object"));
                }
                if out.get("type") == Some(&json!("object")) {
                    if !out.get("properties").is_some_and(Value::is_object) {
                        out.insert("properties".into(), json!({}));
                    }
                    let known: Vec<String> = out["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    if let Some(Value::Array(required)) = out.get("required") {
                        let kept: Vec<Value> = required
                            .iter()
                            .filter(|r| r.as_str().is_some_and(|r| known.iter().any(|k| k == r)))
                            .cloned()
                            .collect();
                        if kept.is_empty() {
                            out.remove("required");
                        } else {
                            out.insert("required".into(), Value::Array(kept));
                        }
                    }
                }
                Value::Object(out)
            }
            other => other,
        }
    }
    match repair(schema, false) {
        Value::Object(map) if map.is_empty() => json!({"type": "object", "properties": {}}),
        Value::Object(map) => Value::Object(map),
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// A tool's result as Hermes hands it to the model: the text of its content blocks (an
/// embedded text resource by its text, anything binary by a short description), with
/// `structuredContent` beside it when the server sent one; an error result as `error`.
fn render(result: &CallToolResult) -> String {
    let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let mut parts: Vec<String> = Vec::new();
    for block in blocks.as_array().into_iter().flatten() {
        let text = |v: &Value| v.as_str().filter(|t| !t.is_empty()).map(str::to_string);
        let part = match block["type"].as_str() {
            Some("text") => text(&block["text"]),
            Some("resource") => text(&block["resource"]["text"]).or_else(|| {
                Some(format!(
                    "[resource {}: {} binary data, not shown]",
                    block["resource"]["uri"].as_str().unwrap_or("?"),
                    block["resource"]["mimeType"].as_str().unwrap_or("")
                ))
            }),
            Some("resource_link") => Some(format!(
                "[resource link: {}]",
                block["uri"].as_str().unwrap_or("?")
            )),
            Some(kind @ ("image" | "audio")) => Some(format!(
                "[{kind} ({}), not shown]",
                block["mimeType"].as_str().unwrap_or("unknown type")
            )),
            _ => None,
        };
        parts.extend(part);
    }
    let text = cap(&parts.join("\n"));
    if result.is_error == Some(true) {
        let text = if text.is_empty() {
            "MCP tool returned an error".to_string()
        } else {
            text
        };
        return error(text);
    }
    match &result.structured_content {
        Some(structured) if !text.is_empty() => {
            json!({"result": text, "structuredContent": structured}).to_string()
        }
        Some(structured) => json!({"result": structured}).to_string(),
        None => json!({"result": text}).to_string(),
    }
}

/// `{"resources": [{uri, name, description?, mimeType?}]}`, as Hermes lists them.
fn listed_resources<T: serde::Serialize>(resources: &[T]) -> String {
    let keep = ["uri", "name", "description", "mimeType"];
    let items: Vec<Value> = resources
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .map(|r| picked(&r, &keep))
        .collect();
    json!({"resources": items}).to_string()
}

/// The texts of a resource's contents (binary ones by their size), as `result`.
fn read_resource<T: serde::Serialize>(result: &T) -> String {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let parts: Vec<String> = items(&result, "contents")
        .filter_map(|c| match (c["text"].as_str(), c["blob"].as_str()) {
            (Some(text), _) => Some(text.to_string()),
            (None, Some(blob)) => Some(format!("[binary data, {} bytes]", blob.len() / 4 * 3)),
            _ => None,
        })
        .collect();
    json!({"result": cap(&parts.join("\n"))}).to_string()
}

/// `{"prompts": [{name, description?, arguments: [{name, description?, required}]}]}`.
fn listed_prompts<T: serde::Serialize>(prompts: &[T]) -> String {
    let items: Vec<Value> = prompts
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .map(|p| {
            let mut item = picked(&p, &["name", "description"]);
            let arguments: Vec<Value> = items(&p, "arguments")
                .map(|a| {
                    let mut argument = picked(a, &["name", "description"]);
                    argument["required"] = json!(a["required"].as_bool().unwrap_or(false));
                    argument
                })
                .collect();
            item["arguments"] = json!(arguments);
            item
        })
        .collect();
    json!({"prompts": items}).to_string()
}

/// `{"messages": [{role, content}], "description"?}`: each message's text.
fn got_prompt<T: serde::Serialize>(result: &T) -> String {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let messages: Vec<Value> = items(&result, "messages")
        .map(|m| {
            let content = &m["content"];
            let text = content["text"]
                .as_str()
                .map(str::to_string)
                .or_else(|| content.as_str().map(str::to_string))
                .unwrap_or_else(|| content.to_string());
            json!({"role": m["role"], "content": text})
        })
        .collect();
    let mut out = json!({"messages": messages});
    if let Some(description) = result["description"].as_str().filter(|d| !d.is_empty()) {
        out["description"] = json!(description);
    }
    out.to_string()
}

/// The elements of the list `value[key]`; none when it is not a list.
fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value[key].as_array().into_iter().flatten()
}

/// The keys of `value` among `keys` that hold something.
fn picked(value: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        match &value[*key] {
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            v => {
                out.insert(key.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn cap(text: &str) -> String {
    match text.char_indices().nth(RESULT_CAP) {
        Some((at, _)) => format!(
            "{}\n[... truncated at {RESULT_CAP} characters]",
            &text[..at]
        ),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
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
        // An empty list counts as no list.
        assert_eq!(picked(&servers, Some(&[]), &[]), ["mail", "calendar"]);
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
