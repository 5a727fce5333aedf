//! What one agent run is configured with (docs/AGENT.md, "Model and provider", "Retries and fallback"; docs/CONFIG.md, "Config file reference"): model, provider, base
//! URL and key for the primary endpoint and each fallback, the loop budget, the backend
//! and the tool settings. Built before every run from the [`Config`] that run loaded,
//! `<home>/.env` and the real environment; it never writes any of them and never logs a
//! key.
//!
//! Resolution order:
//! * model: job `model` → `cron.model` → `model.default` (or `model:` as a plain string)
//!   → `HERMES_MODEL`;
//! * provider: job `provider` → `model.provider` → inferred: `anthropic` for a Claude
//!   model named without `anthropic/` when `ANTHROPIC_API_KEY` is set; else `custom` when a
//!   base URL is configured (job pin, `model.base_url` or `OPENAI_BASE_URL`: a server you
//!   pointed at is not OpenRouter just because an OpenRouter key is in the environment);
//!   else `openrouter` when `OPENROUTER_API_KEY` is set; else `openai`;
//! * base URL: job `base_url` → `model.base_url` → `OPENAI_BASE_URL` → provider default;
//! * key: `model.api_key`, else the provider's variable (`OPENROUTER_API_KEY`,
//!   `OPENAI_API_KEY` for `openai`/`custom`, `ANTHROPIC_API_KEY`); none → no auth header.
//!
//! Any other provider name (`ollama`, `vllm`, `llamacpp`, ...) is an OpenAI-compatible
//! server and needs a base URL. Variables come from the real environment first, then
//! `<home>/.env`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use jobs::Job;

use crate::config::{AgentCommand, Config, FallbackProvider};
use crate::environment::parse_dotenv;

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
}

/// Environment lookups: the real environment wins over `<home>/.env`.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    dotenv: HashMap<String, String>,
}

impl Vars {
    /// Reads `<home>/.env` (a missing file is empty).
    pub fn load(home: &Path) -> Vars {
        let text = std::fs::read_to_string(home.join(".env")).unwrap_or_default();
        Vars {
            dotenv: parse_dotenv(&text),
        }
    }

    /// The `.env` pairs the real environment does not already set.
    pub fn dotenv_missing_from_env(&self) -> Vec<(String, String)> {
        self.dotenv
            .iter()
            .filter(|(k, _)| std::env::var_os(k).is_none())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .or_else(|| self.dotenv.get(name).cloned())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }
}

/// A count from the file, as the loop's counters hold it.
fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn default_base_url(provider: &str) -> Option<&'static str> {
    match provider {
        "openrouter" => Some("https://openrouter.ai/api/v1"),
        "openai" => Some("https://api.openai.com/v1"),
        "anthropic" => Some("https://api.anthropic.com"),
        _ => None,
    }
}

/// The variable that holds a provider's key.
fn key_var(provider: &str) -> &'static str {
    match provider {
        "openrouter" => "OPENROUTER_API_KEY",
        "anthropic" => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    }
}

fn mode_for(provider: &str) -> ApiMode {
    if provider == "anthropic" {
        ApiMode::AnthropicMessages
    } else {
        ApiMode::ChatCompletions
    }
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

/// Resolves everything an agent run needs. `Err` is the run's error text.
pub fn resolve(
    job: &Job,
    config: &Config,
    vars: &Vars,
    home: &Path,
) -> Result<AgentConfig, String> {
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
                return Err(format!(
                    "agent.backend is 'command' but agent.command is empty in {}: set it to the program and its arguments, e.g. [\"my-agent\", \"--print\"]",
                    home.join("config.yaml").display()
                ));
            }
            Backend::Command(argv)
        }
        Some(other) => {
            return Err(format!(
                "agent.backend '{other}' is unknown in {}: use 'builtin' or 'command'",
                home.join("config.yaml").display()
            ))
        }
    };
    let max_turns = agent.max_turns.map_or(90, clamp_u32).max(1);
    let api_max_retries = agent.api_max_retries.map_or(3, clamp_u32).max(1);
    let request_timeout =
        Duration::from_secs(agent.request_timeout_seconds.map_or(300, clamp_u32).max(1) as u64);
    let disabled_toolsets = agent.disabled_toolsets.clone();
    let allow_private_fetch = config.tools.web_fetch.allow_private == Some(true);
    let common = |endpoints| AgentConfig {
        backend: backend.clone(),
        endpoints,
        max_turns,
        api_max_retries,
        request_timeout,
        disabled_toolsets: disabled_toolsets.clone(),
        allow_private_fetch,
    };
    if backend != Backend::BuiltIn {
        return Ok(common(Vec::new()));
    }
    let mut endpoints = vec![primary(job, config, vars, home)?];
    for (n, item) in config.fallback_providers.iter().enumerate() {
        match fallback(item, vars) {
            Ok(ep) => endpoints.push(ep),
            Err(e) => tracing::warn!("fallback_providers[{n}] ignored: {e}"),
        }
    }
    Ok(common(endpoints))
}

fn primary(job: &Job, config: &Config, vars: &Vars, home: &Path) -> Result<Endpoint, String> {
    let section = &config.model;
    let model = job
        .text_field("model")
        .map(|m| m.trim().to_string())
        .or_else(|| config.cron.model.clone())
        .or_else(|| section.default.clone())
        .or_else(|| vars.get("HERMES_MODEL"))
        .ok_or_else(|| {
            format!(
                "no model configured: looked at the job's 'model' field, 'cron.model', 'model.default' and 'model' in {}, and HERMES_MODEL in the environment and {}; set one (e.g. 'hermes cron edit {} --model <name>' or 'model: {{default: <name>}}' in config.yaml)",
                home.join("config.yaml").display(),
                home.join(".env").display(),
                job.id()
            )
        })?;
    let job_base = job.text_field("base_url").map(|s| s.trim().to_string());
    let config_base = section
        .base_url
        .clone()
        .or_else(|| vars.get("OPENAI_BASE_URL"));
    let provider = job
        .text_field("provider")
        .map(|p| p.trim().to_ascii_lowercase())
        .or_else(|| section.provider.as_ref().map(|p| p.to_ascii_lowercase()))
        .unwrap_or_else(|| {
            if is_claude(&model) && vars.get("ANTHROPIC_API_KEY").is_some() {
                "anthropic".into()
            } else if job_base.is_some() || config_base.is_some() {
                "custom".into()
            } else if vars.get("OPENROUTER_API_KEY").is_some() {
                "openrouter".into()
            } else {
                "openai".into()
            }
        });
    let own_base = config_base
        .clone()
        .or_else(|| default_base_url(&provider).map(str::to_string));
    let base_url = job_base
        .clone()
        .or_else(|| own_base.clone())
        .ok_or_else(|| {
            format!(
                "provider '{provider}' needs a base URL: set model.base_url in {} (or OPENAI_BASE_URL)",
                home.join("config.yaml").display()
            )
        })?;
    let (api_key, key_source) = match &section.api_key {
        Some(key) => (Some(key.clone()), "model.api_key".to_string()),
        None => (vars.get(key_var(&provider)), key_var(&provider).to_string()),
    };
    if let (Some(pin), Some(_)) = (&job_base, &api_key) {
        let own_host = own_base.as_deref().and_then(host_of);
        if host_of(pin).is_none() || host_of(pin) != own_host {
            return Err(format!(
                "refused: the job's base_url pin {pin} points at another host than provider '{provider}' ({}), and the stored credential {key_source} must not be sent there; remove the job's base_url pin or point model.base_url at that server",
                own_base.as_deref().unwrap_or("no configured URL")
            ));
        }
    }
    let model = if provider == "anthropic" {
        model
            .strip_prefix("anthropic/")
            .unwrap_or(&model)
            .to_string()
    } else {
        model
    };
    Ok(Endpoint {
        mode: mode_for(&provider),
        provider,
        model,
        base_url,
        api_key,
    })
}

fn fallback(item: &FallbackProvider, vars: &Vars) -> Result<Endpoint, String> {
    let provider = item
        .provider
        .as_ref()
        .map(|p| p.to_ascii_lowercase())
        .unwrap_or_else(|| "custom".into());
    let model = item.model.clone().ok_or("no model")?;
    let base_url = item
        .base_url
        .clone()
        .or_else(|| default_base_url(&provider).map(str::to_string))
        .ok_or_else(|| format!("provider '{provider}' needs a base_url"))?;
    let api_key = match &item.api_key_env {
        Some(var) => vars.get(var),
        None => vars.get(key_var(&provider)),
    };
    let model = match provider.as_str() {
        "anthropic" => model
            .strip_prefix("anthropic/")
            .unwrap_or(&model)
            .to_string(),
        _ => model,
    };
    Ok(Endpoint {
        mode: mode_for(&provider),
        provider,
        model,
        base_url,
        api_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        Vars {
            dotenv: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_job_pin_wins_then_cron_model_then_model_default() {
        let home = Path::new("/h");
        let config =
            yaml("cron: {model: cronm}\nmodel: {default: defm, base_url: 'http://127.0.0.1:9/v1'}");
        let c = resolve(&job(json!({"model": "jobm"})), &config, &vars(&[]), home).unwrap();
        assert_eq!(c.endpoints[0].model, "jobm");
        assert_eq!(c.endpoints[0].provider, "custom");
        let c = resolve(&job(json!({})), &config, &vars(&[]), home).unwrap();
        assert_eq!(c.endpoints[0].model, "cronm");
        let c = resolve(&job(json!({})), &yaml("model: plain"), &vars(&[]), home).unwrap();
        assert_eq!(c.endpoints[0].model, "plain");
        assert_eq!(c.endpoints[0].provider, "openai");
        assert_eq!(c.max_turns, 90);
        assert_eq!(c.api_max_retries, 3);
    }

    #[test]
    fn no_model_names_every_place_looked() {
        let e = resolve(
            &job(json!({})),
            &Config::default(),
            &vars(&[]),
            Path::new("/h"),
        )
        .unwrap_err();
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
        let home = Path::new("/h");
        let c = resolve(
            &job(json!({"model": "claude-sonnet-4"})),
            &Config::default(),
            &vars(&[("ANTHROPIC_API_KEY", "a"), ("OPENROUTER_API_KEY", "o")]),
            home,
        )
        .unwrap();
        assert_eq!(c.endpoints[0].provider, "anthropic");
        assert_eq!(c.endpoints[0].mode, ApiMode::AnthropicMessages);
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("a"));
        let c = resolve(
            &job(json!({"model": "anthropic/claude-sonnet-4"})),
            &Config::default(),
            &vars(&[("ANTHROPIC_API_KEY", "a"), ("OPENROUTER_API_KEY", "o")]),
            home,
        )
        .unwrap();
        assert_eq!(c.endpoints[0].provider, "openrouter");
        assert_eq!(c.endpoints[0].api_key.as_deref(), Some("o"));
    }

    #[test]
    fn a_base_url_pin_may_not_carry_a_stored_key_elsewhere() {
        let home = Path::new("/h");
        let e = resolve(
            &job(
                json!({"model": "m", "provider": "openai", "base_url": "https://evil.example/v1"}),
            ),
            &Config::default(),
            &vars(&[("OPENAI_API_KEY", "sk-x")]),
            home,
        )
        .unwrap_err();
        assert!(e.contains("refused") && e.contains("OPENAI_API_KEY"), "{e}");
        assert!(!e.contains("sk-x"));
        // Same host as the provider's own: fine. No key: fine.
        assert!(resolve(
            &job(json!({"model": "m", "provider": "openai", "base_url": "https://api.openai.com/v1/"})),
            &Config::default(),
            &vars(&[("OPENAI_API_KEY", "sk-x")]),
            home,
        )
        .is_ok());
        assert!(resolve(
            &job(json!({"model": "m", "base_url": "http://127.0.0.1:8080/v1"})),
            &Config::default(),
            &vars(&[]),
            home,
        )
        .is_ok());
    }

    #[test]
    fn fallbacks_and_agent_settings_are_read() {
        let config = yaml(
            "model: {default: m, base_url: 'http://127.0.0.1:1/v1'}\nagent: {max_turns: 5, api_max_retries: 0, disabled_toolsets: [web]}\nfallback_providers:\n  - {provider: anthropic, model: anthropic/claude-x, api_key_env: MY_KEY}\ntools: {web_fetch: {allow_private: true}}",
        );
        let c = resolve(
            &job(json!({})),
            &config,
            &vars(&[("MY_KEY", "k")]),
            Path::new("/h"),
        )
        .unwrap();
        assert_eq!(c.max_turns, 5);
        assert_eq!(c.api_max_retries, 1);
        assert_eq!(c.disabled_toolsets, vec!["web"]);
        assert!(c.allow_private_fetch);
        assert_eq!(c.endpoints[1].model, "claude-x");
        assert_eq!(c.endpoints[1].api_key.as_deref(), Some("k"));
        assert_eq!(c.endpoints[1].base_url, "https://api.anthropic.com");
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
