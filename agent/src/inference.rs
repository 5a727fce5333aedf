//! What one agent run is configured with (docs/AGENT.md, "Model and provider", "Retries and fallback"; docs/CONFIG.md, "Config file reference"): model, provider, base
//! URL and key for the primary endpoint and each fallback, the loop budget, the backend
//! and the tool settings. Built before every run from the [`Config`] that run loaded,
//! `<home>/.env` and the real environment; it never writes any of them and never logs a
//! key.
//!
//! Resolution order:
//! * model: job `model` → `cron.model` → `model.default` (or `model:` as a plain string)
//!   → `HERMES_MODEL` → the `custom_providers` entry's `model`;
//! * provider: job `provider` → `model.provider` → inferred: `anthropic` for a Claude
//!   model named without `anthropic/` when `ANTHROPIC_API_KEY` is set; else `custom` when a
//!   base URL is configured (job pin, `model.base_url` or `OPENAI_BASE_URL`: a server you
//!   pointed at is not OpenRouter just because an OpenRouter key is in the environment);
//!   else `openrouter` when `OPENROUTER_API_KEY` is set; else `openai`. The name is looked
//!   up in the registry (`provider_registry`) or `custom_providers`; an unknown one fails;
//! * base URL: job `base_url` → `model.base_url` (when the run's provider is
//!   `model.provider`) → the provider's base-URL variable (`GEMINI_BASE_URL`,
//!   `OPENAI_BASE_URL` for `openai`/`custom`, ...) → the provider's default;
//! * key: `model.api_key` (same condition), else the provider's key variables in
//!   Hermes' order; a `custom_providers` entry has its own `api_key` or `key_env`; none →
//!   no auth header.
//!
//! Variables come from the real environment first, then `<home>/.env`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jobs::{Job, ReasoningEffort};

use super::provider_registry::{self, find_custom, CustomProvider, Provider};
use crate::config::{AgentCommand, Config, FallbackProvider};
/// The `.env` lookups moved to the foundation crate, where `.env` is read.
pub use crate::environment::Vars;

/// Why an agent run cannot start with the configuration it was given; the text is the
/// run's error (and `hermes cron status` shows it).
#[derive(Debug, thiserror::Error)]
pub enum InferenceError {
    #[error("agent.backend is 'command' but agent.command is empty in {}: set it to the program and its arguments, e.g. [\"my-agent\", \"--print\"]", config.display())]
    EmptyCommand { config: PathBuf },
    #[error("agent.backend '{backend}' is unknown in {}: use 'builtin' or 'command'", config.display())]
    UnknownBackend { backend: String, config: PathBuf },
    #[error("provider '{name}' is not in custom_providers in {}: add an entry with its name and base_url, or use one of: {}", config.display(), provider_registry::known_ids())]
    NotACustomProvider { name: String, config: PathBuf },
    #[error("unknown provider '{name}': use one of {}, or custom:<name> for an entry of custom_providers in {}", provider_registry::known_ids(), config.display())]
    UnknownProvider { name: String, config: PathBuf },
    #[error("no model configured: looked at the job's 'model' field, 'cron.model', 'model.default' and 'model' in {}, and HERMES_MODEL in the environment and {}; set one with its provider (e.g. 'model: {{default: <name>, provider: <provider>}}' in config.yaml, or 'hermes cron edit {job} --model <name> --provider <provider>')", config.display(), dotenv.display())]
    NoModel {
        config: PathBuf,
        dotenv: PathBuf,
        job: String,
    },
    #[error("provider '{provider}' needs a base URL: set model.base_url in {} (or OPENAI_BASE_URL)", config.display())]
    NoBaseUrl { provider: String, config: PathBuf },
    #[error("refused: the job's base_url pin {pin} points at another host than provider '{provider}' ({own_base}), and the stored credential {key_source} must not be sent there; remove the job's base_url pin or point model.base_url at that server")]
    CredentialElsewhere {
        pin: String,
        provider: String,
        own_base: String,
        key_source: String,
    },
    #[error("no model: add 'model' to this entry")]
    FallbackNoModel,
    #[error("provider '{provider}' needs a base_url: add 'base_url' to this entry")]
    FallbackNoBaseUrl { provider: String },
}

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiMode {
    ChatCompletions,
    AnthropicMessages,
}

/// One model behind one URL with one credential: the primary or a fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// With no key found: the variable(s) that would hold one, for the messages that
    /// tell the user what to set (`None` when the provider needs no key, or has one).
    pub missing_key: Option<String>,
    pub mode: ApiMode,
}

impl Endpoint {
    /// `provider model` for messages (never the key).
    pub fn label(&self) -> String {
        format!("{} {} at {}", self.provider, self.model, self.base_url)
    }
}

/// Which agent carries out the prompt (docs/AGENT.md, "External command agent").
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    BuiltIn,
    /// `agent.backend: command`: this argv, prompt on stdin, reply on stdout.
    Command(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub backend: Backend,
    /// The primary endpoint, then `fallback_providers` in order.
    pub endpoints: Vec<Endpoint>,
    pub max_turns: u32,
    pub api_max_retries: u32,
    pub request_timeout: Duration,
    pub disabled_toolsets: Vec<String>,
    pub allow_private_fetch: bool,
    /// The reasoning effort every call asks for: the job's `reasoning_effort`, else
    /// `agent.reasoning_effort`; `None` leaves it to the server.
    pub reasoning: Option<ReasoningEffort>,
}

/// A count from the file, as the loop's counters hold it.
fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The host (and port) of a URL, for the credential guard.
fn host_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    Some(format!(
        "{}:{}",
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default().unwrap_or(0)
    ))
}

fn is_claude(model: &str) -> bool {
    model.to_ascii_lowercase().contains("claude") && !model.starts_with("anthropic/")
}

/// Resolves everything an agent run needs.
pub fn resolve(
    job: &Job,
    config: &Config,
    vars: &Vars,
    home: &Path,
) -> Result<AgentConfig, InferenceError> {
    let agent = &config.agent;
    let backend = match agent.backend.as_deref() {
        None | Some("builtin" | "built-in" | "hermes") => Backend::BuiltIn,
        Some("command") => {
            let argv = match &agent.command {
                Some(AgentCommand::Shell(line)) => {
                    vec!["sh".to_string(), "-c".to_string(), line.clone()]
                }
                Some(AgentCommand::Argv(argv)) => argv.clone(),
                None => Vec::new(),
            };
            if argv.is_empty() {
                return Err(InferenceError::EmptyCommand {
                    config: home.join("config.yaml"),
                });
            }
            Backend::Command(argv)
        }
        Some(other) => {
            return Err(InferenceError::UnknownBackend {
                backend: other.to_string(),
                config: home.join("config.yaml"),
            })
        }
    };
    let max_turns = agent.max_turns.map_or(90, clamp_u32).max(1);
    let api_max_retries = agent.api_max_retries.map_or(3, clamp_u32).max(1);
    let request_timeout =
        Duration::from_secs(agent.request_timeout_seconds.map_or(300, clamp_u32).max(1) as u64);
    let disabled_toolsets = agent.disabled_toolsets.clone();
    let allow_private_fetch = config.tools.web_fetch.allow_private == Some(true);
    let reasoning = job.reasoning_effort().or_else(|| configured_effort(config));
    let common = |endpoints| AgentConfig {
        backend: backend.clone(),
        endpoints,
        max_turns,
        api_max_retries,
        request_timeout,
        disabled_toolsets: disabled_toolsets.clone(),
        allow_private_fetch,
        reasoning,
    };
    if backend != Backend::BuiltIn {
        return Ok(common(Vec::new()));
    }
    let mut endpoints = vec![primary(job, config, vars, home)?];
    for (n, item) in config.fallback_providers.iter().enumerate() {
        match fallback(item, config, vars, home) {
            Ok(ep) => endpoints.push(ep),
            Err(e) => tracing::warn!("fallback_providers[{n}] ignored: {e}"),
        }
    }
    Ok(common(endpoints))
}

/// `agent.reasoning_effort` as Hermes reads it: a level, or `false`/`none` for no
/// reasoning. A value Hermes does not know is ignored with a warning, as Hermes 0.22
/// does, and never makes the configuration unreadable.
fn configured_effort(config: &Config) -> Option<ReasoningEffort> {
    let text = match config.agent.extra.get("reasoning_effort")? {
        serde_yaml_ng::Value::Bool(false) => return Some(ReasoningEffort::None),
        serde_yaml_ng::Value::String(text) => text.clone(),
        _ => return None,
    };
    ReasoningEffort::parse(&text)
        .map_err(|e| tracing::warn!("agent.reasoning_effort ignored: {e}"))
        .ok()
        .flatten()
}

/// A provider a run may use: an id of the registry, or a `custom_providers` entry.
enum Named {
    Registry(&'static Provider),
    Custom(CustomProvider),
}

impl Named {
    /// How it appears in messages and the run's endpoint label.
    fn label(&self) -> String {
        match self {
            Named::Registry(p) => p.id.to_string(),
            Named::Custom(c) => format!("custom:{}", c.name),
        }
    }
}

/// Finds the provider `name` names: `custom:<name>` is a `custom_providers` entry; any
/// other name is a registry id or alias, else a `custom_providers` entry by its bare
/// name. Unknown names fail with the list of known ones.
fn lookup(name: &str, config: &Config, home: &Path) -> Result<Named, InferenceError> {
    let config_path = home.join("config.yaml");
    if name.trim().to_ascii_lowercase().starts_with("custom:") {
        return find_custom(&config.extra, name)
            .map(Named::Custom)
            .ok_or_else(|| InferenceError::NotACustomProvider {
                name: name.to_string(),
                config: config_path,
            });
    }
    if let Some(provider) = provider_registry::find(name) {
        return Ok(Named::Registry(provider));
    }
    find_custom(&config.extra, name)
        .map(Named::Custom)
        .ok_or_else(|| InferenceError::UnknownProvider {
            name: name.to_string(),
            config: config_path,
        })
}

/// A registry provider's base URL from its own variable. A Gemini URL given as the
/// native API root (`…/v1beta`) gets the OpenAI-compatible path this client speaks.
fn base_url_from_var(provider: &Provider, vars: &Vars) -> Option<String> {
    let url = vars.get(provider.base_url_var?)?;
    let trimmed = url.trim_end_matches('/');
    Some(if provider.id == "gemini" && trimmed.ends_with("/v1beta") {
        format!("{trimmed}/openai")
    } else {
        url
    })
}

/// The first of a provider's key variables that is set, with its name.
fn key_from_vars(provider: &Provider, vars: &Vars) -> Option<(String, &'static str)> {
    provider
        .key_vars
        .iter()
        .find_map(|var| vars.get(var).map(|key| (key, *var)))
}

fn primary(
    job: &Job,
    config: &Config,
    vars: &Vars,
    home: &Path,
) -> Result<Endpoint, InferenceError> {
    let section = &config.model;
    let model = job
        .model()
        .map(|m| m.trim().to_string())
        .or_else(|| config.cron.model.clone())
        .or_else(|| section.default.clone())
        .or_else(|| vars.get("HERMES_MODEL"));
    let job_base = job.base_url().map(|s| s.trim().to_string());
    let configured = section
        .provider
        .as_ref()
        .map(|p| p.trim().to_ascii_lowercase());
    let requested = job
        .provider()
        .map(|p| p.trim().to_ascii_lowercase())
        .or_else(|| configured.clone());
    let name = requested.unwrap_or_else(|| {
        let any_base = job_base.is_some()
            || section.base_url.is_some()
            || vars.get("OPENAI_BASE_URL").is_some();
        if model.as_deref().is_some_and(is_claude) && vars.get("ANTHROPIC_API_KEY").is_some() {
            "anthropic".into()
        } else if any_base {
            "custom".into()
        } else if vars.get("OPENROUTER_API_KEY").is_some() {
            "openrouter".into()
        } else {
            "openai".into()
        }
    });
    let named = lookup(&name, config, home)?;
    // `model.base_url` and `model.api_key` belong to `model.provider`: a job that pins
    // another provider does not carry them there.
    let same_as_config = match (&configured, job.provider()) {
        (_, None) => true,
        (Some(configured), Some(_)) => {
            lookup(configured, config, home).is_ok_and(|c| c.label() == named.label())
        }
        (None, Some(_)) => false,
    };
    let config_base = section.base_url.clone().filter(|_| same_as_config);
    let model = model
        .or_else(|| match &named {
            Named::Custom(c) => c.model.clone(),
            Named::Registry(_) => None,
        })
        .ok_or_else(|| InferenceError::NoModel {
            config: home.join("config.yaml"),
            dotenv: home.join(".env"),
            job: job.id().to_string(),
        })?;
    let (own_base, api_key, key_source, mode) = match &named {
        Named::Registry(p) => {
            let own_base = config_base
                .or_else(|| base_url_from_var(p, vars))
                .or_else(|| (!p.base_url.is_empty()).then(|| p.base_url.to_string()));
            let (key, source) = match section.api_key.clone().filter(|_| same_as_config) {
                Some(key) => (Some(key), "model.api_key".to_string()),
                None => match key_from_vars(p, vars) {
                    Some((key, var)) => (Some(key), var.to_string()),
                    None => (None, p.key_vars.join(" or ")),
                },
            };
            (own_base, key, source, p.mode)
        }
        Named::Custom(c) => {
            let (key, source) = match (&c.api_key, &c.key_env) {
                (Some(key), _) => (
                    Some(key.clone()),
                    format!("custom_providers '{}' api_key", c.name),
                ),
                (None, Some(var)) => (vars.get(var), var.clone()),
                (None, None) => (None, String::new()),
            };
            (Some(c.base_url.clone()), key, source, c.mode)
        }
    };
    let provider = named.label();
    let base_url = job_base
        .clone()
        .or_else(|| own_base.clone())
        .ok_or_else(|| InferenceError::NoBaseUrl {
            provider: provider.clone(),
            config: home.join("config.yaml"),
        })?;
    if let (Some(pin), Some(_)) = (&job_base, &api_key) {
        let own_host = own_base.as_deref().and_then(host_of);
        if host_of(pin).is_none() || host_of(pin) != own_host {
            return Err(InferenceError::CredentialElsewhere {
                pin: pin.clone(),
                provider,
                own_base: own_base.unwrap_or_else(|| "no configured URL".to_string()),
                key_source,
            });
        }
    }
    let missing_key = missing_key(&named, api_key.is_some());
    Ok(Endpoint {
        model: strip_anthropic_prefix(&provider, model),
        mode,
        provider,
        base_url,
        api_key,
        missing_key,
    })
}

/// The variable(s) to set when no key was found and the provider is bound to refuse a
/// request without one (see [`Endpoint::missing_key`]).
fn missing_key(named: &Named, has_key: bool) -> Option<String> {
    match named {
        _ if has_key => None,
        Named::Registry(p) => p.needs_key().then(|| p.key_vars.join(" or ")),
        Named::Custom(c) => c.key_env.clone(),
    }
}

/// Anthropic's own API knows its models without the `anthropic/` of OpenRouter names.
fn strip_anthropic_prefix(provider: &str, model: String) -> String {
    match model.strip_prefix("anthropic/") {
        Some(bare) if provider == "anthropic" => bare.to_string(),
        _ => model,
    }
}

fn fallback(
    item: &FallbackProvider,
    config: &Config,
    vars: &Vars,
    home: &Path,
) -> Result<Endpoint, InferenceError> {
    let name = item
        .provider
        .as_ref()
        .map(|p| p.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "custom".into());
    let named = lookup(&name, config, home)?;
    let model = item.model.clone().ok_or(InferenceError::FallbackNoModel)?;
    let provider = named.label();
    let (own_base, own_key, mode) = match &named {
        Named::Registry(p) => (
            base_url_from_var(p, vars)
                .or_else(|| (!p.base_url.is_empty()).then(|| p.base_url.to_string())),
            key_from_vars(p, vars).map(|(key, _)| key),
            p.mode,
        ),
        Named::Custom(c) => (
            Some(c.base_url.clone()),
            c.api_key
                .clone()
                .or_else(|| c.key_env.as_deref().and_then(|var| vars.get(var))),
            c.mode,
        ),
    };
    let base_url =
        item.base_url
            .clone()
            .or(own_base)
            .ok_or_else(|| InferenceError::FallbackNoBaseUrl {
                provider: provider.clone(),
            })?;
    let (api_key, missing_key) = match &item.api_key_env {
        Some(var) => {
            let key = vars.get(var);
            let missing = key.is_none().then(|| var.clone());
            (key, missing)
        }
        None => {
            let missing = missing_key(&named, own_key.is_some());
            (own_key, missing)
        }
    };
    Ok(Endpoint {
        model: strip_anthropic_prefix(&provider, model),
        mode,
        provider,
        base_url,
        api_key,
        missing_key,
    })
}

/// What an agent job that pins neither provider nor model would be snapshotted with
/// at creation, written as Hermes writes it so its drift guard reads the same value
/// back: the model is `model.default` (or `model.model`); the provider is known when
/// Hermes' resolution needs no credential store — `openrouter` (configured, or chosen
/// because `OPENROUTER_API_KEY` or `model.base_url` is set), `custom` with a base URL,
/// or another registry id whose key variable is set. Anything else is `None` (Hermes'
/// guard then stays off for that axis).
pub fn inference_now(config: &Config, vars: &Vars, home: &Path) -> jobs::InferenceNow {
    let section = &config.model;
    let model = section.default.clone().or_else(|| {
        section
            .extra
            .get("model")
            .and_then(serde_yaml_ng::Value::as_str)
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
    });
    let configured = section
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let provider = match configured {
        None if vars.get("OPENROUTER_API_KEY").is_some() || section.base_url.is_some() => {
            Some("openrouter".to_string())
        }
        None => None,
        Some(name) => match lookup(name, config, home) {
            Ok(Named::Registry(p)) if p.id == "openrouter" => Some(p.id.to_string()),
            Ok(Named::Registry(p)) if p.id == "custom" => {
                section.base_url.as_ref().map(|_| "custom".to_string())
            }
            Ok(Named::Registry(p)) if p.id != "openai" => key_from_vars(p, vars)
                .or_else(|| section.api_key.clone().map(|k| (k, "")))
                .map(|_| p.id.to_string()),
            _ => None,
        },
    };
    jobs::InferenceNow { provider, model }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::parse_dotenv;
    use serde_json::json;

    fn job(fields: serde_json::Value) -> Job {
        let mut record = serde_json::Map::new();
        record.insert("id".into(), json!("abcdefabcdef"));
        for (k, v) in fields.as_object().unwrap() {
            record.insert(k.clone(), v.clone());
        }
        Job::from_record(record)
    }

    fn yaml(text: &str) -> Config {
        Config::parse(text, Path::new("/h/config.yaml")).unwrap()
    }

    /// `resolve` for a job with `fields` in the home `/h`, with the variables `env`.
    fn run(
        fields: serde_json::Value,
        config: &Config,
        env: &[(&str, &str)],
    ) -> Result<AgentConfig, InferenceError> {
        resolve(&job(fields), config, &vars(env), Path::new("/h"))
    }

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        Vars::from_dotenv(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn the_job_pin_wins_then_cron_model_then_model_default() {
        let config =
            yaml("cron: {model: cronm}\nmodel: {default: defm, base_url: 'http://127.0.0.1:9/v1'}");
        let c = run(json!({"model": "jobm"}), &config, &[]).unwrap();
        assert_eq!(c.endpoints[0].model, "jobm");
        assert_eq!(c.endpoints[0].provider, "custom");
        let c = run(json!({}), &config, &[]).unwrap();
        assert_eq!(c.endpoints[0].model, "cronm");
        let c = run(json!({}), &yaml("model: plain"), &[]).unwrap();
        assert_eq!(c.endpoints[0].model, "plain");
        assert_eq!(c.endpoints[0].provider, "openai");
        assert_eq!(c.max_turns, 90);
        assert_eq!(c.api_max_retries, 3);
    }

    #[test]
    fn no_model_names_every_place_looked() {
        let e = run(json!({}), &Config::default(), &[])
            .unwrap_err()
            .to_string();
        for place in [
            "'model' field",
            "cron.model",
            "model.default",
            "HERMES_MODEL",
            ".env",
        ] {
            assert!(e.contains(place), "{e}");
        }
    }

    #[test]
    fn providers_are_inferred_from_keys() {
        let c = run(
            json!({"model": "claude-sonnet-4"}),
            &Config::default(),
            &[("ANTHROPIC_API_KEY", "a"), ("OPENROUTER_API_KEY", "o")],
        )
        .unwrap();
        assert_eq!(c.endpoints[0].provider, "anthropic");
        assert_eq!(c.endpoints[0].mode, ApiMode::AnthropicMessages);
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("a"));
        let c = run(
            json!({"model": "anthropic/claude-sonnet-4"}),
            &Config::default(),
            &[("ANTHROPIC_API_KEY", "a"), ("OPENROUTER_API_KEY", "o")],
        )
        .unwrap();
        assert_eq!(c.endpoints[0].provider, "openrouter");
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("o"));
    }

    #[test]
    fn a_base_url_pin_may_not_carry_a_stored_key_elsewhere() {
        let e = run(
            json!({"model": "m", "provider": "openai", "base_url": "https://evil.example/v1"}),
            &Config::default(),
            &[("OPENAI_API_KEY", "sk-x")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("refused") && e.contains("OPENAI_API_KEY"), "{e}");
        assert!(!e.contains("sk-x"));
        // Same host as the provider's own: fine. No key: fine.
        assert!(run(
            json!({"model": "m", "provider": "openai", "base_url": "https://api.openai.com/v1/"}),
            &Config::default(),
            &[("OPENAI_API_KEY", "sk-x")]
        )
        .is_ok());
        assert!(run(
            json!({"model": "m", "base_url": "http://127.0.0.1:8080/v1"}),
            &Config::default(),
            &[]
        )
        .is_ok());
    }

    #[test]
    fn fallbacks_and_agent_settings_are_read() {
        let config = yaml(
            "model: {default: m, base_url: 'http://127.0.0.1:1/v1'}\nagent: {max_turns: 5, api_max_retries: 0, disabled_toolsets: [web]}\nfallback_providers:\n  - {provider: anthropic, model: anthropic/claude-x, api_key_env: MY_KEY}\ntools: {web_fetch: {allow_private: true}}",
        );
        let c = run(json!({}), &config, &[("MY_KEY", "k")]).unwrap();
        assert_eq!(c.max_turns, 5);
        assert_eq!(c.api_max_retries, 1);
        assert_eq!(c.disabled_toolsets, vec!["web"]);
        assert!(c.allow_private_fetch);
        assert_eq!(c.endpoints[1].model, "claude-x");
        assert_eq!(c.endpoints[1].api_key.as_deref(), Some("k"));
        assert_eq!(c.endpoints[1].base_url, "https://api.anthropic.com");
    }

    #[test]
    fn registry_providers_resolve_to_their_url_and_key() {
        let resolve_one = |provider: &str, env: &[(&str, &str)]| {
            run(
                json!({"model": "m", "provider": provider}),
                &Config::default(),
                env,
            )
            .map(|c| c.endpoints[0].clone())
        };
        let gemini = resolve_one("gemini", &[("GEMINI_API_KEY", "g")]).unwrap();
        assert_eq!(
            gemini.base_url,
            "https://generativelanguage.googleapis.com/v1beta/openai"
        );
        assert_eq!(gemini.api_key.as_deref(), Some("g"));
        assert_eq!(gemini.mode, ApiMode::ChatCompletions);
        // GOOGLE_API_KEY comes first, as in Hermes; the native root gets the OpenAI path.
        let gemini = resolve_one(
            "google",
            &[
                ("GEMINI_API_KEY", "g"),
                ("GOOGLE_API_KEY", "goo"),
                ("GEMINI_BASE_URL", "http://127.0.0.1:9/v1beta"),
            ],
        )
        .unwrap();
        assert_eq!(
            (gemini.provider.as_str(), gemini.api_key.as_deref()),
            ("gemini", Some("goo"))
        );
        assert_eq!(gemini.base_url, "http://127.0.0.1:9/v1beta/openai");
        let deepseek = resolve_one(
            "deepseek",
            &[
                ("DEEPSEEK_API_KEY", "d"),
                ("DEEPSEEK_BASE_URL", "http://127.0.0.1:7/v1"),
            ],
        )
        .unwrap();
        assert_eq!(
            (deepseek.base_url.as_str(), deepseek.api_key.as_deref()),
            ("http://127.0.0.1:7/v1", Some("d"))
        );
        let claude =
            resolve_one("anthropic", &[("ANTHROPIC_BASE_URL", "http://127.0.0.1:8")]).unwrap();
        assert_eq!(
            (claude.base_url.as_str(), claude.mode),
            ("http://127.0.0.1:8", ApiMode::AnthropicMessages)
        );
        for (id, url, var) in [
            (
                "nous",
                "https://inference-api.nousresearch.com/v1",
                "NOUS_API_KEY",
            ),
            ("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
            (
                "fireworks",
                "https://api.fireworks.ai/inference/v1",
                "FIREWORKS_API_KEY",
            ),
            (
                "minimax",
                "https://api.minimax.io/anthropic",
                "MINIMAX_API_KEY",
            ),
        ] {
            let e = resolve_one(id, &[(var, "k")]).unwrap();
            assert_eq!(
                (e.base_url.as_str(), e.api_key.as_deref()),
                (url, Some("k")),
                "{id}"
            );
        }
        let e = resolve_one("groq", &[]).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "unknown provider 'groq': use one of openrouter, openai, anthropic, nous, gemini"
            ),
            "{e}"
        );
    }

    #[test]
    fn model_base_url_and_key_stay_with_model_provider() {
        let config = yaml("model: {default: m, provider: custom, base_url: 'http://127.0.0.1:1/v1', api_key: local-key}");
        let c = run(
            json!({"provider": "gemini"}),
            &config,
            &[("GEMINI_API_KEY", "g")],
        )
        .unwrap();
        assert_eq!(
            c.endpoints[0].base_url,
            "https://generativelanguage.googleapis.com/v1beta/openai"
        );
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("g"));
        let c = run(json!({"provider": "custom"}), &config, &[]).unwrap();
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("local-key"));
    }

    #[test]
    fn custom_providers_are_named_custom_colon_name() {
        let config = yaml("model: {default: m}\ncustom_providers:\n  - {name: box, base_url: 'http://10.0.0.2:8000/v1', key_env: BOX_KEY}\n");
        let c = run(
            json!({"provider": "custom:box"}),
            &config,
            &[("BOX_KEY", "b")],
        )
        .unwrap();
        assert_eq!(c.endpoints[0].provider, "custom:box");
        assert_eq!(c.endpoints[0].base_url, "http://10.0.0.2:8000/v1");
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("b"));
        let e = run(json!({"provider": "custom:nope"}), &config, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not in custom_providers"), "{e}");
    }

    #[test]
    fn snapshots_follow_what_hermes_would_resolve() {
        let home = Path::new("/h");
        let now = |text: &str, env: &[(&str, &str)]| {
            let n = inference_now(&yaml(text), &vars(env), home);
            (n.provider, n.model)
        };
        assert_eq!(
            now("model: {default: m1, provider: openrouter}", &[]),
            (Some("openrouter".into()), Some("m1".into()))
        );
        assert_eq!(
            now("model: {default: m1, provider: gemini}", &[]),
            (None, Some("m1".into()))
        );
        assert_eq!(
            now(
                "model: {default: m1, provider: gemini}",
                &[("GEMINI_API_KEY", "g")]
            ),
            (Some("gemini".into()), Some("m1".into()))
        );
        assert_eq!(
            now(
                "model: {default: m1, provider: custom, base_url: 'http://x/v1'}",
                &[]
            )
            .0,
            Some("custom".into())
        );
        assert_eq!(
            now("model: plain", &[("OPENROUTER_API_KEY", "o")]),
            (Some("openrouter".into()), Some("plain".into()))
        );
        assert_eq!(now("model: plain", &[]), (None, Some("plain".into())));
        assert_eq!(now("{}", &[]), (None, None));
    }

    #[test]
    fn dotenv_lines_are_parsed() {
        let v = parse_dotenv("# c\nexport A=1\nB = \"two words\"\nC=x # note\nbad\n");
        assert_eq!(v["A"], "1");
        assert_eq!(v["B"], "two words");
        assert_eq!(v["C"], "x");
        assert_eq!(v.len(), 3);
    }
}
