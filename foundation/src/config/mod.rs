//! config.yaml, typed: the one reader of the file and the one place that knows its shape.
//! It reads the forgiving forms people write by hand ("4", "yes") and keeps every key it
//! does not use, because the file is shared with Python Hermes; a value it cannot read
//! under a key it uses is an error naming the key and the line. It never writes the file,
//! never looks at the environment and never fills in defaults: callers decide those.

mod forgiving;
mod typos;

pub use typos::likely_typos;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use crate::redact::is_secret_name;

// Every section below derives `Deserialize` for the keys it uses; each of those keys is
// read by `forgiving::read` in the forms people write, and the section itself through
// `forgiving` too (an empty section, the keys it does not use kept in `extra`).
// `Config::parse` is the reader: the derived impls alone leave `extra` empty and refuse
// an empty section.

/// Everything this program reads from config.yaml. A key that is missing (or empty) is
/// `None`, an empty list or an empty section.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `timezone`: the IANA zone schedules are read in (checked where it is used).
    #[serde(deserialize_with = "forgiving::read")]
    pub timezone: Option<String>,
    /// `model`: the default model and the server that runs it.
    #[serde(deserialize_with = "forgiving::read")]
    pub model: ModelSection,
    /// `fallback_providers`: tried in order when the primary model keeps failing.
    #[serde(deserialize_with = "forgiving::read")]
    pub fallback_providers: Vec<FallbackProvider>,
    /// `agent`: the agent loop and which program carries it out.
    #[serde(deserialize_with = "forgiving::read")]
    pub agent: AgentSection,
    /// `cron`: the scheduler.
    #[serde(deserialize_with = "forgiving::read")]
    pub cron: CronSection,
    /// `tools`: settings of individual tools.
    #[serde(deserialize_with = "forgiving::read")]
    pub tools: ToolsSection,
    /// `delivery`: where deliveries to user-supplied URLs may go.
    #[serde(deserialize_with = "forgiving::read")]
    pub delivery: DeliverySection,
    /// `mcp_servers`: the MCP servers whose tools a run may use, in the file's order.
    #[serde(deserialize_with = "forgiving::read")]
    pub mcp_servers: Vec<McpServer>,
    /// `approvals`: what an agent may do with nobody there to approve it.
    #[serde(deserialize_with = "forgiving::read")]
    pub approvals: ApprovalsSection,
    /// `code_execution`: the `execute_code` tool.
    #[serde(deserialize_with = "forgiving::read")]
    pub code_execution: CodeExecutionSection,
    /// `pricing`: what models cost, by model name, over the built-in prices
    /// (docs/CONFIG.md, "pricing"), in the file's order.
    #[serde(deserialize_with = "forgiving::read")]
    pub pricing: Vec<ModelPrice>,
    /// Top-level keys this program does not use (most of Python Hermes' settings), as written.
    #[serde(skip)]
    pub extra: Mapping,
}

/// `model:`, written either as a plain model name or as a mapping.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelSection {
    /// `model.default`, or the whole `model:` value when it is a plain name.
    #[serde(deserialize_with = "forgiving::read")]
    pub default: Option<String>,
    /// `model.provider`: `openrouter`, `openai`, `anthropic`, `custom`, `ollama`, ...
    #[serde(deserialize_with = "forgiving::read")]
    pub provider: Option<String>,
    /// `model.base_url`: the server's OpenAI-compatible (or Anthropic) endpoint.
    #[serde(deserialize_with = "forgiving::read")]
    pub base_url: Option<String>,
    /// `model.api_key`: a key written into the file instead of the environment.
    #[serde(deserialize_with = "forgiving::read")]
    pub api_key: Option<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// One entry of `fallback_providers`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FallbackProvider {
    #[serde(deserialize_with = "forgiving::read")]
    pub provider: Option<String>,
    #[serde(deserialize_with = "forgiving::read")]
    pub model: Option<String>,
    #[serde(deserialize_with = "forgiving::read")]
    pub base_url: Option<String>,
    /// The environment variable that holds this provider's key.
    #[serde(deserialize_with = "forgiving::read")]
    pub api_key_env: Option<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `agent:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct AgentSection {
    /// `agent.max_turns`: model calls per run.
    #[serde(deserialize_with = "forgiving::read")]
    pub max_turns: Option<u64>,
    /// `agent.api_max_retries`: attempts per model call.
    #[serde(deserialize_with = "forgiving::read")]
    pub api_max_retries: Option<u64>,
    /// `agent.request_timeout_seconds`: how long one model call may take.
    #[serde(deserialize_with = "forgiving::read")]
    pub request_timeout_seconds: Option<u64>,
    /// `agent.backend`: `builtin` or `command` (checked where it is used).
    #[serde(deserialize_with = "forgiving::read")]
    pub backend: Option<String>,
    /// `agent.command`: the program `backend: command` runs.
    #[serde(deserialize_with = "forgiving::read")]
    pub command: Option<AgentCommand>,
    /// `agent.disabled_toolsets`: a list, or one comma-separated text.
    #[serde(deserialize_with = "forgiving::read")]
    pub disabled_toolsets: Vec<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// How `agent.command` was written.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentCommand {
    /// One line of text, run by `sh -c`.
    Shell(String),
    /// The program and its arguments, run directly.
    Argv(Vec<String>),
}

/// `cron:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CronSection {
    #[serde(deserialize_with = "forgiving::read")]
    pub max_parallel_jobs: Option<u64>,
    #[serde(deserialize_with = "forgiving::read")]
    pub wrap_response: Option<bool>,
    #[serde(deserialize_with = "forgiving::read")]
    pub catch_up_missed: Option<bool>,
    /// `cron.catch_up_spread`: the window over which overdue runs found at start or
    /// after a pause start (a span such as `5m`; `0` starts them at once).
    #[serde(deserialize_with = "forgiving::read")]
    pub catch_up_spread: Option<String>,
    #[serde(deserialize_with = "forgiving::read")]
    pub output_retention: Option<u64>,
    #[serde(deserialize_with = "forgiving::read")]
    pub completed_retention_days: Option<u64>,
    #[serde(deserialize_with = "forgiving::read")]
    pub script_timeout_seconds: Option<u64>,
    #[serde(deserialize_with = "forgiving::read")]
    pub delivery_retry_hours: Option<u64>,
    /// `cron.failure_repeat_alert_hours` (default 6): how long an alerted incident stays
    /// quiet before one reminder; 0 or less alerts on every failure.
    #[serde(deserialize_with = "forgiving::read")]
    pub failure_repeat_alert_hours: Option<f64>,
    /// `cron.metrics_job_series` (default 500): how many jobs get spend series of their
    /// own in `/metrics`; the spend of the others is counted as `job="_other"`.
    #[serde(deserialize_with = "forgiving::read")]
    pub metrics_job_series: Option<u64>,
    /// `cron.model`: the model for cron runs, before `model.default`.
    #[serde(deserialize_with = "forgiving::read")]
    pub model: Option<String>,
    /// `cron.store`: a `postgresql://` URL for a store shared by several hosts (unset:
    /// jobs.json). `HERMES_CRON_STORE` wins over it.
    #[serde(deserialize_with = "forgiving::read")]
    pub store: Option<String>,
    /// `cron.bare_duration`: `once` or `every`, how a schedule like `30m` reads
    /// (checked where it is used).
    #[serde(deserialize_with = "forgiving::read")]
    pub bare_duration: Option<String>,
    /// `cron.budget`: the spending caps of all cron runs together.
    #[serde(deserialize_with = "forgiving::read")]
    pub budget: BudgetSection,
    /// `cron.preflight`: the pre-run configuration check (default on).
    #[serde(deserialize_with = "forgiving::read")]
    pub preflight: Option<bool>,
    /// `cron.retry_unreachable`: re-run a fire that never reached the model (default on).
    #[serde(deserialize_with = "forgiving::read")]
    pub retry_unreachable: Option<bool>,
    /// `cron.delivery`: how results are sent.
    #[serde(deserialize_with = "forgiving::read")]
    pub delivery: CronDeliverySection,
    /// `cron.sandbox`: `strict`, `standard` (the default) or `off`, the confinement of
    /// a job without its own `sandbox` (docs/SAFETY.md, "Sandbox"; checked where used).
    #[serde(deserialize_with = "forgiving::read")]
    pub sandbox: Option<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `cron.delivery:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CronDeliverySection {
    /// `cron.delivery.notify`: `false` sends without a notification where the platform
    /// allows it (default true).
    #[serde(deserialize_with = "forgiving::read")]
    pub notify: Option<bool>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `cron.budget:` (docs/CONFIG.md, "cron.budget").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BudgetSection {
    /// `cron.budget.daily_usd`: the spend of one UTC day at which agent runs stop.
    #[serde(deserialize_with = "forgiving::read")]
    pub daily_usd: Option<Usd>,
    /// `cron.budget.monthly_usd`: the same for one calendar month (UTC).
    #[serde(deserialize_with = "forgiving::read")]
    pub monthly_usd: Option<Usd>,
    /// `cron.budget.notify`: where the one notice of a spent budget goes (a deliver
    /// target); unset, the failure lane of the first job it stops.
    #[serde(deserialize_with = "forgiving::read")]
    pub notify: Option<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// One entry of `pricing:`: US dollars per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelPrice {
    /// The model name it prices, as written under `pricing:`.
    #[serde(skip)]
    pub model: String,
    /// `input_per_mtok`: prompt tokens.
    #[serde(deserialize_with = "forgiving::read")]
    pub input_per_mtok: Option<Usd>,
    /// `output_per_mtok`: completion tokens.
    #[serde(deserialize_with = "forgiving::read")]
    pub output_per_mtok: Option<Usd>,
    /// `cache_read_per_mtok`: prompt tokens read from the provider's cache (default: the
    /// input price).
    #[serde(deserialize_with = "forgiving::read")]
    pub cache_read_per_mtok: Option<Usd>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// An amount of US dollars, 0 or more (`0.15`, `"2.50"`, `$3`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usd(pub f64);

/// `tools:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolsSection {
    #[serde(deserialize_with = "forgiving::read")]
    pub web_fetch: WebFetchSection,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `tools.web_fetch:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct WebFetchSection {
    /// `tools.web_fetch.allow_private`: may the tool reach private and loopback addresses.
    #[serde(deserialize_with = "forgiving::read")]
    pub allow_private: Option<bool>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `delivery:` (docs/SAFETY.md, "Outbound addresses").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DeliverySection {
    /// `delivery.allow_private_targets`: may webhooks reach loopback, private and other
    /// non-public addresses (never link-local or cloud metadata ones).
    #[serde(deserialize_with = "forgiving::read")]
    pub allow_private_targets: Option<bool>,
    /// `delivery.allowed_private_targets`: addresses and networks (`10.0.0.5`,
    /// `192.168.1.0/24`) webhooks may reach even so.
    #[serde(deserialize_with = "forgiving::read")]
    pub allowed_private_targets: Vec<String>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `approvals:` (Python Hermes' `tools/approval.py`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApprovalsSection {
    /// `approvals.cron_mode`: `approve` lets a cron run do what needs approval (here:
    /// `execute_code`); anything else, or nothing, denies it.
    #[serde(deserialize_with = "forgiving::read")]
    pub cron_mode: Option<CronApproval>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `approvals.cron_mode`, read as Hermes reads it: `approve` or `allow` (any case) allow,
/// every other value denies. Hermes also counts `yes` and `off`, but its YAML reader
/// turns those words, unquoted, into booleans and then denies: so do we, so one file
/// means the same to both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronApproval {
    Approve,
    Deny,
}

/// `code_execution:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CodeExecutionSection {
    /// `code_execution.timeout`: seconds one `execute_code` script may run.
    #[serde(deserialize_with = "forgiving::read")]
    pub timeout: Option<u64>,
    #[serde(skip)]
    pub extra: Mapping,
}

// `mcp_servers:` (docs/CONFIG.md, "mcp_servers"), with Python Hermes' keys. Whether an
// entry is a stdio or an HTTP server, and what `${VAR}` references stand for, is decided
// where the servers are started (src/agent/mcp/): this part only reads what is written.

/// One entry of `mcp_servers:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct McpServer {
    /// Its name under `mcp_servers:`, as written.
    #[serde(skip)]
    pub name: String,
    /// `command`: the program of a stdio server.
    #[serde(deserialize_with = "forgiving::read")]
    pub command: Option<String>,
    /// `args`: its arguments, as written.
    #[serde(deserialize_with = "forgiving::arguments")]
    pub args: Vec<String>,
    /// `env`: variables the stdio server gets on top of a safe base.
    #[serde(deserialize_with = "forgiving::read")]
    pub env: Vec<(String, String)>,
    /// `url`: the endpoint of a Streamable HTTP server.
    #[serde(deserialize_with = "forgiving::read")]
    pub url: Option<String>,
    /// `headers`: sent with every request to the HTTP server.
    #[serde(deserialize_with = "forgiving::read")]
    pub headers: Vec<(String, String)>,
    /// `timeout`: seconds one tool call may take.
    #[serde(deserialize_with = "forgiving::read")]
    pub timeout: Option<Seconds>,
    /// `connect_timeout`: seconds to start, initialise and list the tools.
    #[serde(deserialize_with = "forgiving::read")]
    pub connect_timeout: Option<Seconds>,
    /// `enabled`: `false` leaves the server out without removing its entry.
    #[serde(deserialize_with = "forgiving::read")]
    pub enabled: Option<bool>,
    /// `tools`: which of its tools are offered.
    #[serde(deserialize_with = "forgiving::read")]
    pub tools: McpToolFilter,
    #[serde(skip)]
    pub extra: Mapping,
}

/// `mcp_servers.<name>.tools:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct McpToolFilter {
    /// `include`: only these tools (by the server's own names); wins over `exclude`.
    #[serde(deserialize_with = "forgiving::read")]
    pub include: Vec<String>,
    /// `exclude`: every tool but these.
    #[serde(deserialize_with = "forgiving::read")]
    pub exclude: Vec<String>,
    /// `resources`: offer the resource tools when the server has resources (default on).
    #[serde(deserialize_with = "forgiving::read")]
    pub resources: Option<bool>,
    /// `prompts`: offer the prompt tools when the server has prompts (default on).
    #[serde(deserialize_with = "forgiving::read")]
    pub prompts: Option<bool>,
    #[serde(skip)]
    pub extra: Mapping,
}

/// A positive number of seconds, whole or not (`30`, `2.5`, `"10"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

/// Credentials written in the file, for redaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WrittenSecrets {
    /// Text under credential-named keys: `model.api_key`, `providers.x.api_key`, a token.
    pub values: Vec<String>,
    /// Variables that credential-named `*_env` keys name (`api_key_env: MY_KEY`).
    pub variables: Vec<String>,
}

/// Why config.yaml could not be used. Every message says what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read from disk.
    #[error("Cannot read {}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    /// The file is not YAML, or not a mapping of settings at the top.
    #[error("Cannot read {}: {reason}; fix the YAML or move the file aside", path.display())]
    Syntax { path: PathBuf, reason: String },
    /// A key this program uses holds a value it cannot read.
    #[error(
        "Cannot read {}: {key}{}: {reason}; fix the value or remove the key",
        path.display(),
        at_line(*line)
    )]
    WrongValue {
        path: PathBuf,
        /// Where the value sits, e.g. `cron.max_parallel_jobs`, `fallback_providers[1].model`.
        key: String,
        line: Option<usize>,
        reason: String,
    },
}

fn at_line(line: Option<usize>) -> String {
    line.map(|line| format!(" at line {line}"))
        .unwrap_or_default()
}

impl Config {
    /// Reads the file at `path`. A missing or empty file is an empty config.
    pub fn read(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(ConfigError::Unreadable {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }),
        }
    }

    /// Reads config.yaml's text; `path` is only named in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        // The YAML itself first, read as a plain value: its errors are about the file
        // (a bad indent, a duplicate key), not about one setting.
        serde_yaml_ng::from_str::<Value>(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            reason: one_line(&e.to_string()),
        })?;
        let mut track = serde_path_to_error::Track::new();
        let document = serde_yaml_ng::Deserializer::from_str(text);
        let config: Config =
            forgiving::read(serde_path_to_error::Deserializer::new(document, &mut track))
                .map_err(|e| wrong_value(path, &track.path().to_string(), &e))?;
        let unused: Vec<String> = config
            .unknown_keys()
            .into_iter()
            .flat_map(|(place, keys)| {
                keys.keys().map(move |key| {
                    let key = key.as_str().unwrap_or("?");
                    match place.as_str() {
                        "" => key.to_string(),
                        place => format!("{place}.{key}"),
                    }
                })
            })
            .collect();
        if !unused.is_empty() {
            tracing::debug!("config.yaml keys not used here: {}", unused.join(", "));
        }
        Ok(config)
    }

    /// Every mapping of keys this program does not use, with the place it sits: `""` for
    /// the top level, then `model`, `fallback_providers[0]`, `agent`, `cron`,
    /// `cron.delivery`, `tools`, `tools.web_fetch`, and for each MCP server
    /// `mcp_servers.<name>.tools` and `mcp_servers.<name>`.
    pub fn unknown_keys(&self) -> Vec<(String, &Mapping)> {
        let mut places = vec![
            (String::new(), &self.extra),
            ("model".to_string(), &self.model.extra),
        ];
        for (n, fallback) in self.fallback_providers.iter().enumerate() {
            places.push((format!("fallback_providers[{n}]"), &fallback.extra));
        }
        places.extend([
            ("agent".to_string(), &self.agent.extra),
            ("cron".to_string(), &self.cron.extra),
            ("cron.delivery".to_string(), &self.cron.delivery.extra),
            ("tools".to_string(), &self.tools.extra),
            ("tools.web_fetch".to_string(), &self.tools.web_fetch.extra),
            ("delivery".to_string(), &self.delivery.extra),
            ("approvals".to_string(), &self.approvals.extra),
            ("code_execution".to_string(), &self.code_execution.extra),
            ("cron.budget".to_string(), &self.cron.budget.extra),
        ]);
        for price in &self.pricing {
            places.push((format!("pricing.{}", price.model), &price.extra));
        }
        for server in &self.mcp_servers {
            let place = format!("mcp_servers.{}", server.name);
            places.push((format!("{place}.tools"), &server.tools.extra));
            places.push((place, &server.extra));
        }
        places
    }

    /// The credentials written anywhere in the file. Of the keys read here
    /// `model.api_key` and the credential-named `env` and `headers` of MCP servers hold
    /// one, `fallback_providers[].api_key_env` and `${VAR}` references there name one; among
    /// the keys kept as written, text under any credential-named key counts (custom
    /// providers, platform tokens, ...), as do the variables credential-named `*_env`
    /// keys name.
    pub fn written_secrets(&self) -> WrittenSecrets {
        let mut secrets = WrittenSecrets::default();
        secrets.values.extend(self.model.api_key.iter().cloned());
        secrets.variables.extend(
            self.fallback_providers
                .iter()
                .filter_map(|f| f.api_key_env.clone()),
        );
        for server in &self.mcp_servers {
            server.collect_secrets(&mut secrets);
        }
        for (_, keys) in self.unknown_keys() {
            collect_mapping_secrets(keys, &mut secrets);
        }
        secrets
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The error for a value that could not be read at `key`, naming the key and its line.
fn wrong_value(path: &Path, key: &str, error: &serde_yaml_ng::Error) -> ConfigError {
    let line = error.location().map(|l| l.line());
    // serde_yaml_ng prints "<key>: <reason> at line L column C"; the key and the line
    // are given separately here.
    let text = one_line(&error.to_string());
    let reason = text
        .strip_prefix(key)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(&text);
    let reason = reason
        .rsplit_once(" at line ")
        .map_or(reason, |(reason, _)| reason)
        .to_string();
    if key == "." {
        return ConfigError::Syntax {
            path: path.to_path_buf(),
            reason: match line {
                Some(line) => format!("{reason} at line {line}"),
                None => reason,
            },
        };
    }
    ConfigError::WrongValue {
        path: path.to_path_buf(),
        key: key.to_string(),
        line,
        reason,
    }
}

/// Text under credential-named keys, and the variables their `*_env` keys name.
fn collect_mapping_secrets(keys: &Mapping, secrets: &mut WrittenSecrets) {
    for (key, value) in keys {
        let name = key.as_str().unwrap_or("");
        let secret = is_secret_name(name);
        if secret && name.to_ascii_lowercase().ends_with("_env") {
            if let Some(var) = value.as_str() {
                secrets.variables.push(var.trim().to_string());
            }
            continue;
        }
        collect_value_secrets(value, secret, secrets);
    }
}

fn collect_value_secrets(value: &Value, under_secret_key: bool, secrets: &mut WrittenSecrets) {
    match value {
        Value::Mapping(keys) => collect_mapping_secrets(keys, secrets),
        Value::Sequence(items) => {
            for item in items {
                collect_value_secrets(item, under_secret_key, secrets);
            }
        }
        Value::String(s) if under_secret_key => secrets.values.push(s.trim().to_string()),
        Value::Tagged(tagged) => collect_value_secrets(&tagged.value, under_secret_key, secrets),
        _ => {}
    }
}

impl McpServer {
    /// Credential-named `env` and `headers` values, and the variables their `${VAR}`
    /// references name.
    fn collect_secrets(&self, secrets: &mut WrittenSecrets) {
        for (name, value) in self.env.iter().chain(&self.headers) {
            if !is_secret_name(name) {
                continue;
            }
            secrets.values.push(value.trim().to_string());
            let mut rest = value.as_str();
            while let Some(start) = rest.find("${") {
                let Some(len) = rest[start..].find('}') else {
                    break;
                };
                let reference = rest[start + 2..start + len].trim();
                let variable = reference.strip_prefix("env:").unwrap_or(reference).trim();
                secrets.variables.push(variable.to_string());
                rest = &rest[start + len..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/home/x/.hermes/config.yaml";

    fn parse(text: &str) -> Config {
        match Config::parse(text, Path::new(PATH)) {
            Ok(config) => config,
            Err(e) => panic!("{e}"),
        }
    }

    fn error(text: &str) -> String {
        match Config::parse(text, Path::new(PATH)) {
            Ok(config) => panic!("read without error: {config:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn empty_and_comment_only_files_are_an_empty_config() {
        assert_eq!(parse(""), Config::default());
        assert_eq!(parse("  \n\n"), Config::default());
        assert_eq!(parse("# nothing yet\n"), Config::default());
        assert_eq!(parse("cron:\nagent: ~\n"), Config::default());
    }

    #[test]
    fn a_missing_file_is_an_empty_config() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Config::read(&dir.path().join("config.yaml")),
            Ok(Config::default())
        );
    }

    #[test]
    fn hand_written_forms_are_read() {
        let config = parse(
            "cron:\n  max_parallel_jobs: \"4\"\n  wrap_response: 'yes'\n  catch_up_missed: Off\n  output_retention: 10\n  script_timeout_seconds: ''\n  delivery_retry_hours: ' 2 '\nagent:\n  max_turns: ' 12 '\n  disabled_toolsets: 'web, terminal'\ntools:\n  web_fetch:\n    allow_private: on\n",
        );
        assert_eq!(config.cron.max_parallel_jobs, Some(4));
        assert_eq!(config.cron.wrap_response, Some(true));
        assert_eq!(config.cron.catch_up_missed, Some(false));
        assert_eq!(config.cron.output_retention, Some(10));
        assert_eq!(config.cron.script_timeout_seconds, None);
        assert_eq!(config.cron.delivery_retry_hours, Some(2));
        assert_eq!(config.agent.max_turns, Some(12));
        assert_eq!(config.agent.disabled_toolsets, vec!["web", "terminal"]);
        assert_eq!(config.tools.web_fetch.allow_private, Some(true));
        let config = parse(
            "approvals:\n  cron_mode: Approve\n  mode: manual\ncode_execution:\n  timeout: '30'\n",
        );
        assert_eq!(config.approvals.cron_mode, Some(CronApproval::Approve));
        assert_eq!(config.code_execution.timeout, Some(30));
        for denied in ["deny", "off", "yes", "true", "7"] {
            let config = parse(&format!("approvals:\n  cron_mode: {denied}\n"));
            assert_eq!(
                config.approvals.cron_mode,
                Some(CronApproval::Deny),
                "{denied}"
            );
        }
        let config = parse("agent:\n  disabled_toolsets: [web, ~, 3]\ncron:\n  model: 4.5\n");
        assert_eq!(config.agent.disabled_toolsets, vec!["web", "3"]);
        assert_eq!(config.cron.model.as_deref(), Some("4.5"));
    }

    #[test]
    fn model_is_a_plain_name_or_a_mapping() {
        assert_eq!(
            parse("model: gpt-x\n").model.default.as_deref(),
            Some("gpt-x")
        );
        assert_eq!(parse("model: '  '\n").model, ModelSection::default());
        let model = parse(
            "model:\n  default: anthropic/claude-x\n  provider: openrouter\n  base_url: http://127.0.0.1:1/v1\n  api_key: sk-abc\n  streaming: true\n",
        )
        .model;
        assert_eq!(model.default.as_deref(), Some("anthropic/claude-x"));
        assert_eq!(model.provider.as_deref(), Some("openrouter"));
        assert_eq!(model.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
        assert_eq!(model.api_key.as_deref(), Some("sk-abc"));
        assert_eq!(model.extra.len(), 1);
        assert!(error("model: [a, b]\n").contains("model at line 1: expected a model name"));
    }

    #[test]
    fn unknown_keys_are_kept_at_the_top_and_in_every_section() {
        let config = parse(
            "_config_version: 50\nterminal:\n  backend: local\n  timeout: 180\n1: numbered\ncron:\n  catch_up_missed: true\n  future_knob: [1, 2]\nagent:\n  reasoning_effort: high\nfallback_providers:\n  - provider: openrouter\n    model: m\n    extra_headers: {X-Name: hermes}\ntools:\n  browser: {enabled: false}\n  web_fetch: {allow_private: false, timeout: 3}\n",
        );
        assert_eq!(config.extra.len(), 3);
        assert_eq!(config.extra["_config_version"], Value::from(50));
        assert_eq!(config.extra["terminal"]["backend"], Value::from("local"));
        assert_eq!(config.cron.catch_up_missed, Some(true));
        assert!(config.cron.extra.contains_key("future_knob"));
        assert!(config.agent.extra.contains_key("reasoning_effort"));
        assert!(config.fallback_providers[0]
            .extra
            .contains_key("extra_headers"));
        assert!(config.tools.extra.contains_key("browser"));
        assert!(config.tools.web_fetch.extra.contains_key("timeout"));
        let places: Vec<String> = config
            .unknown_keys()
            .into_iter()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|(place, _)| place)
            .collect();
        assert_eq!(
            places,
            [
                "",
                "fallback_providers[0]",
                "agent",
                "cron",
                "tools",
                "tools.web_fetch"
            ]
        );
    }

    #[test]
    fn a_wrongly_typed_key_is_named_with_its_line() {
        assert_eq!(
            error("timezone: UTC\ncron:\n  max_parallel_jobs: [1, 2]\n"),
            "Cannot read /home/x/.hermes/config.yaml: cron.max_parallel_jobs at line 3: expected a whole number, got a sequence; fix the value or remove the key"
        );
        assert_eq!(
            error("model: m\nagent:\n  api_max_retries: 2\n  max_turns: lots\n"),
            "Cannot read /home/x/.hermes/config.yaml: agent.max_turns at line 4: expected a whole number, got \"lots\"; fix the value or remove the key"
        );
        let e = error("cron:\n  wrap_response: maybe\n");
        assert!(
            e.contains("cron.wrap_response at line 2: expected true or false, got \"maybe\""),
            "{e}"
        );
        let e = error("cron:\n  output_retention: -1\n");
        assert!(e.contains("cron.output_retention at line 2"), "{e}");
        let e = error(
            "fallback_providers:\n  - {provider: a, model: b}\n  - provider: c\n    model: {name: x}\n",
        );
        assert!(
            e.contains(
                "fallback_providers[1].model at line 4: expected a text value, got a mapping"
            ),
            "{e}"
        );
        let e = error("tools:\n  web_fetch:\n    allow_private: [yes]\n");
        assert!(e.contains("tools.web_fetch.allow_private at line 3"), "{e}");
        let e = error("cron: every hour\n");
        assert!(
            e.contains("cron at line 1: expected a mapping of cron settings, got \"every hour\""),
            "{e}"
        );
    }

    #[test]
    fn empty_tagged_and_fractional_values() {
        let e = error("cron:\n  max_parallel_jobs: !int 4\n");
        assert!(
            e.contains(
                "cron.max_parallel_jobs at line 2: expected a whole number, got a tagged value"
            ),
            "{e}"
        );
        let e = error("cron:\n  output_retention: 4.5\n");
        assert!(
            e.contains("cron.output_retention at line 2: expected a whole number, got 4.5"),
            "{e}"
        );
        let e = error("mcp_servers:\n  mail:\n    args: [-m, ~]\n");
        assert!(
            e.contains("mcp_servers.mail.args[1] at line 3: expected a text argument, got nothing"),
            "{e}"
        );
        let e = error("mcp_servers:\n  mail:\n    env:\n      PORT:\n");
        assert!(
            e.contains("mcp_servers.mail.env.PORT at line 4: expected a text value, got nothing"),
            "{e}"
        );
        let e = error("cron: ''\n");
        assert!(
            e.contains("cron at line 1: expected a mapping of cron settings, got \"\""),
            "{e}"
        );
        let e = error("model: true\n");
        assert!(e.contains("model at line 1: expected a model name"), "{e}");
        let e = error("mcp_servers:\n  [a, b]: {command: x}\n");
        assert!(e.contains("expected a server name"), "{e}");
        let config = parse("limit: &n 5\ncron: {max_parallel_jobs: *n, model: ~, store: ''}\n");
        assert_eq!(config.cron.max_parallel_jobs, Some(5));
        assert_eq!((config.cron.model, config.cron.store), (None, None));
    }

    #[test]
    fn keys_that_are_not_text_are_kept_never_read_as_a_setting() {
        // serde numbers a struct's fields; a key `0` must not stand for the first one.
        let config = parse("cron: {0: 9, 1: true, '2': x, max_parallel_jobs: 3}\n0: gpt-x\n");
        assert_eq!(config.cron.max_parallel_jobs, Some(3));
        assert_eq!(config.cron.wrap_response, None);
        assert_eq!(config.cron.extra.len(), 3);
        assert_eq!(config.model, ModelSection::default());
        assert_eq!(config.timezone, None);
        assert_eq!(config.extra.len(), 1);
        let config = parse("mcp_servers:\n  7: {command: x, 0: y}\n");
        assert_eq!(config.mcp_servers[0].name, "7");
        assert_eq!(config.mcp_servers[0].extra.len(), 1);
    }

    #[test]
    fn unparsable_yaml_and_a_non_mapping_file_say_to_fix_the_yaml() {
        let e = error("cron:\n  max_parallel_jobs: 4\n   wrap_response: true\n");
        assert!(e.starts_with(&format!("Cannot read {PATH}: ")), "{e}");
        assert!(e.ends_with("; fix the YAML or move the file aside"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = error("just some words\n");
        assert!(e.contains("expected a mapping of settings"), "{e}");
        assert!(e.ends_with("; fix the YAML or move the file aside"), "{e}");
    }

    #[test]
    fn agent_command_is_a_line_or_an_argv() {
        assert_eq!(
            parse("agent: {command: 'my-agent --print'}").agent.command,
            Some(AgentCommand::Shell("my-agent --print".into()))
        );
        assert_eq!(
            parse("agent: {command: [my-agent, --print]}").agent.command,
            Some(AgentCommand::Argv(vec![
                "my-agent".into(),
                "--print".into()
            ]))
        );
        assert_eq!(parse("agent: {command: []}").agent.command, None);
    }

    #[test]
    fn mcp_servers_are_read_with_hermes_keys_in_file_order() {
        let config = parse(
            "mcp_servers:\n  mail:\n    command: python3\n    args: [\"-m\", mail, '', 8080]\n    env: {MAIL_TOKEN: '${MAIL_SECRET}', PORT: 993}\n    timeout: 2.5\n    connect_timeout: '10'\n    tools:\n      include: [list_unread]\n      exclude: delete_all\n      resources: false\n    sampling: {enabled: false}\n  remote:\n    url: https://mcp.example.com/mcp\n    headers:\n      Authorization: Bearer abc-secret-123456\n    enabled: no\n",
        );
        let names: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mail", "remote"]);
        let mail = &config.mcp_servers[0];
        assert_eq!(mail.command.as_deref(), Some("python3"));
        assert_eq!(mail.args, ["-m", "mail", "", "8080"]);
        assert_eq!(
            mail.env,
            [
                ("MAIL_TOKEN".to_string(), "${MAIL_SECRET}".to_string()),
                ("PORT".to_string(), "993".to_string())
            ]
        );
        assert_eq!(mail.timeout, Some(Seconds(2.5)));
        assert_eq!(mail.connect_timeout, Some(Seconds(10.0)));
        assert_eq!(mail.tools.include, ["list_unread"]);
        assert_eq!(mail.tools.exclude, ["delete_all"]);
        assert_eq!(mail.tools.resources, Some(false));
        assert!(mail.extra.contains_key("sampling"));
        let remote = &config.mcp_servers[1];
        assert_eq!(remote.url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(remote.enabled, Some(false));
        let secrets = config.written_secrets();
        assert!(secrets
            .values
            .contains(&"Bearer abc-secret-123456".to_string()));
        assert!(secrets.values.contains(&"${MAIL_SECRET}".to_string()));
        assert_eq!(secrets.variables, ["MAIL_SECRET"]);
        assert!(config
            .unknown_keys()
            .iter()
            .any(|(place, keys)| place == "mcp_servers.mail" && keys.contains_key("sampling")));
    }

    #[test]
    fn a_wrongly_typed_mcp_key_is_named_with_its_line() {
        let e = error("mcp_servers:\n  mail:\n    command: x\n    timeout: soon\n");
        assert!(
            e.contains("mcp_servers.mail.timeout at line 4: expected a number of seconds greater than 0, got \"soon\""),
            "{e}"
        );
        let e = error("mcp_servers:\n  mail:\n    args: -m mail\n");
        assert!(
            e.contains("mcp_servers.mail.args at line 3: expected a list of arguments"),
            "{e}"
        );
        let e = error("mcp_servers:\n  mail:\n    env: [A, B]\n");
        assert!(
            e.contains(
                "mcp_servers.mail.env at line 3: expected a mapping of names to text values"
            ),
            "{e}"
        );
        let e = error("mcp_servers:\n  remote:\n    url: u\n    connect_timeout: 0\n");
        assert!(
            e.contains("mcp_servers.remote.connect_timeout at line 4"),
            "{e}"
        );
        let e = error("mcp_servers: [mail]\n");
        assert!(
            e.contains("mcp_servers at line 1: expected a mapping of MCP server names"),
            "{e}"
        );
    }

    #[test]
    fn secrets_are_found_under_credential_names_anywhere() {
        let config = parse(
            "model:\n  api_key: cfg-secret-123456\n  default: m\nfallback_providers:\n  - {provider: x, model: y, api_key_env: MY_LLM}\nproviders:\n  proxy:\n    key_env: PROXY_KEY\n    api_key: proxy-secret-98765\n    base_url: http://proxy\nplatforms:\n  telegram: {bot_token: tg-token-abcdef}\n",
        );
        let secrets = config.written_secrets();
        assert_eq!(
            secrets.values,
            ["cfg-secret-123456", "proxy-secret-98765", "tg-token-abcdef"]
        );
        assert_eq!(secrets.variables, ["MY_LLM", "PROXY_KEY"]);
    }
}
