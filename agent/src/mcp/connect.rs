//! Starting one MCP server of a run and setting up its session: a stdio server spawned
//! in its own process group with a filtered environment, or an HTTP server through
//! rmcp's Streamable HTTP client, each within its `connect_timeout`; and why a start
//! failed, in words that name what to fix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{
    one_line, seconds, Link, Process, DEFAULT_CONNECT_TIMEOUT, SAFE_VARIABLES, STDERR_LINES,
};
use crate::config::McpServer;
use crate::inference::Vars;
use crate::logged::logged;
use crate::process::GroupKill;

/// Why a server cannot be used in this run. The text completes "MCP server '<name>'
/// could not be used in this run: ", so it speaks of the server as "it".
#[derive(Debug, thiserror::Error)]
pub(super) enum StartError {
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
pub(super) enum Handshake {
    #[error("{0}")]
    Initialize(String),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
}

/// How a stdio server ended: its exit status and the last line it wrote on stderr.
#[derive(Debug)]
pub(super) struct ExitReason {
    pub(super) status: std::process::ExitStatus,
    pub(super) last_stderr: Option<String>,
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

/// `${VAR}` and `${env:VAR}` replaced from the environment, then `<home>/.env`; an
/// unknown variable stays as written (as in Hermes).
pub(super) fn expand(text: &str, vars: &Vars) -> String {
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

/// A started server: its connection, the tools it listed, and whether it advertises
/// resources and prompts.
pub(super) struct Connected {
    pub(super) link: Link,
    pub(super) tools: Vec<rmcp::model::Tool>,
    pub(super) resources: bool,
    pub(super) prompts: bool,
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

pub(super) async fn connect(
    config: &McpServer,
    vars: &Vars,
    workdir: &Path,
) -> Result<Connected, StartError> {
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
