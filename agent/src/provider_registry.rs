//! The providers a job may name (docs/AGENT.md, "Providers"): Hermes' provider registry
//! reduced to the ids that speak an OpenAI-compatible or the Anthropic API, each with
//! its default base URL and the variables Hermes reads for its key and base URL, plus
//! the user's own `custom_providers` (`custom:<name>`). It only describes providers;
//! choosing one for a run and reading the variables is `inference`'s job.

use serde_yaml_ng::{Mapping, Value};

use super::inference::ApiMode;

/// One provider of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider {
    /// The id Hermes uses (`--provider`, `model.provider`).
    pub id: &'static str,
    /// Other names Hermes accepts for it.
    pub aliases: &'static [&'static str],
    pub mode: ApiMode,
    /// Where it answers when nothing else is configured; empty = the user must say.
    pub base_url: &'static str,
    /// The variables that may hold its key, first set wins (Hermes' order).
    pub key_vars: &'static [&'static str],
    /// The variable that moves its base URL, if Hermes reads one.
    pub base_url_var: Option<&'static str>,
}

/// A provider of the registry that speaks OpenAI-compatible chat completions.
const fn provider(
    id: &'static str,
    aliases: &'static [&'static str],
    base_url: &'static str,
    key_vars: &'static [&'static str],
    base_url_var: Option<&'static str>,
) -> Provider {
    Provider {
        id,
        aliases,
        mode: ApiMode::ChatCompletions,
        base_url,
        key_vars,
        base_url_var,
    }
}

impl Provider {
    /// Whether a request without a key is bound to be refused: true for hosted APIs,
    /// false for the local-server kinds (`custom` and its aliases, `lmstudio`), which
    /// often run without one.
    pub fn needs_key(&self) -> bool {
        !self.key_vars.is_empty() && !matches!(self.id, "custom" | "lmstudio")
    }

    /// The same provider speaking the Anthropic Messages API instead.
    const fn anthropic_messages(self) -> Provider {
        Provider {
            mode: ApiMode::AnthropicMessages,
            ..self
        }
    }
}

/// The registry, from `hermes_cli/auth.py` and the model-provider plugins of Hermes
/// 0.19. Left out, because they need more than a key and a URL: OAuth-only ids
/// (`openai-codex`, `xai-oauth`, `qwen-oauth`, `minimax-oauth`), `copilot` (token
/// exchange), `copilot-acp` (a subprocess), `bedrock` (AWS signing), `azure-foundry`
/// and `vertex` (their own auth). Gemini is spoken to through its OpenAI-compatible
/// path, `/v1beta/openai`; xAI through chat completions (Hermes uses its Responses
/// API). Anthropic takes `ANTHROPIC_API_KEY` only: Hermes' other two variables hold
/// OAuth tokens, which need another kind of authentication.
pub const REGISTRY: &[Provider] = &[
    provider(
        "openrouter",
        &["or"],
        "https://openrouter.ai/api/v1",
        &["OPENROUTER_API_KEY"],
        None,
    ),
    provider(
        "openai",
        &["openai-api"],
        "https://api.openai.com/v1",
        &["OPENAI_API_KEY"],
        Some("OPENAI_BASE_URL"),
    ),
    provider(
        "anthropic",
        &["claude"],
        "https://api.anthropic.com",
        &["ANTHROPIC_API_KEY"],
        Some("ANTHROPIC_BASE_URL"),
    )
    .anthropic_messages(),
    provider(
        "nous",
        &["nous-portal", "nousresearch"],
        "https://inference-api.nousresearch.com/v1",
        &["NOUS_API_KEY"],
        Some("NOUS_INFERENCE_BASE_URL"),
    ),
    provider(
        "gemini",
        &["google", "google-gemini", "google-ai-studio"],
        "https://generativelanguage.googleapis.com/v1beta/openai",
        &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        Some("GEMINI_BASE_URL"),
    ),
    provider(
        "deepseek",
        &["deepseek-chat"],
        "https://api.deepseek.com/v1",
        &["DEEPSEEK_API_KEY"],
        Some("DEEPSEEK_BASE_URL"),
    ),
    provider(
        "xai",
        &["grok", "x-ai", "x.ai"],
        "https://api.x.ai/v1",
        &["XAI_API_KEY"],
        Some("XAI_BASE_URL"),
    ),
    provider(
        "zai",
        &["glm", "z-ai", "z.ai", "zhipu"],
        "https://api.z.ai/api/paas/v4",
        &["GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"],
        Some("GLM_BASE_URL"),
    ),
    provider(
        "kimi-coding",
        &["kimi", "moonshot", "kimi-for-coding"],
        "https://api.moonshot.ai/v1",
        &["KIMI_API_KEY", "KIMI_CODING_API_KEY"],
        Some("KIMI_BASE_URL"),
    ),
    provider(
        "kimi-coding-cn",
        &["kimi-cn", "moonshot-cn"],
        "https://api.moonshot.cn/v1",
        &["KIMI_CN_API_KEY"],
        None,
    ),
    provider(
        "stepfun",
        &["step", "stepfun-coding-plan"],
        "https://api.stepfun.ai/step_plan/v1",
        &["STEPFUN_API_KEY"],
        Some("STEPFUN_BASE_URL"),
    ),
    provider(
        "arcee",
        &["arcee-ai", "arceeai"],
        "https://api.arcee.ai/api/v1",
        &["ARCEEAI_API_KEY"],
        Some("ARCEE_BASE_URL"),
    ),
    provider(
        "gmi",
        &["gmi-cloud", "gmicloud"],
        "https://api.gmi-serving.com/v1",
        &["GMI_API_KEY"],
        Some("GMI_BASE_URL"),
    ),
    provider(
        "minimax",
        &["mini-max"],
        "https://api.minimax.io/anthropic",
        &["MINIMAX_API_KEY"],
        Some("MINIMAX_BASE_URL"),
    )
    .anthropic_messages(),
    provider(
        "minimax-cn",
        &["minimax-china", "minimax_cn"],
        "https://api.minimaxi.com/anthropic",
        &["MINIMAX_CN_API_KEY"],
        Some("MINIMAX_CN_BASE_URL"),
    )
    .anthropic_messages(),
    provider(
        "alibaba",
        &["dashscope", "alibaba-cloud", "qwen-dashscope"],
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        &["DASHSCOPE_API_KEY"],
        Some("DASHSCOPE_BASE_URL"),
    ),
    provider(
        "alibaba-coding-plan",
        &["alibaba_coding", "alibaba-coding", "dashscope-coding"],
        "https://coding-intl.dashscope.aliyuncs.com/v1",
        &["ALIBABA_CODING_PLAN_API_KEY", "DASHSCOPE_API_KEY"],
        Some("ALIBABA_CODING_PLAN_BASE_URL"),
    ),
    provider(
        "nvidia",
        &["nvidia-nim"],
        "https://integrate.api.nvidia.com/v1",
        &["NVIDIA_API_KEY"],
        Some("NVIDIA_BASE_URL"),
    ),
    provider(
        "opencode-zen",
        &["opencode", "opencode_zen", "zen"],
        "https://opencode.ai/zen/v1",
        &["OPENCODE_ZEN_API_KEY"],
        Some("OPENCODE_ZEN_BASE_URL"),
    ),
    provider(
        "opencode-go",
        &["opencode_go", "go", "opencode-go-sub"],
        "https://opencode.ai/zen/go/v1",
        &["OPENCODE_GO_API_KEY"],
        Some("OPENCODE_GO_BASE_URL"),
    ),
    provider(
        "kilocode",
        &["kilo-code", "kilo", "kilo-gateway"],
        "https://api.kilo.ai/api/gateway",
        &["KILOCODE_API_KEY"],
        Some("KILOCODE_BASE_URL"),
    ),
    provider(
        "huggingface",
        &["hf", "hugging-face", "huggingface-hub"],
        "https://router.huggingface.co/v1",
        &["HF_TOKEN"],
        Some("HF_BASE_URL"),
    ),
    provider(
        "xiaomi",
        &["mimo", "xiaomi-mimo"],
        "https://api.xiaomimimo.com/v1",
        &["XIAOMI_API_KEY"],
        Some("XIAOMI_BASE_URL"),
    ),
    provider(
        "tencent-tokenhub",
        &[],
        "https://tokenhub.tencentmaas.com/v1",
        &["TOKENHUB_API_KEY"],
        Some("TOKENHUB_BASE_URL"),
    ),
    provider(
        "ollama-cloud",
        &["ollama_cloud"],
        "https://ollama.com/v1",
        &["OLLAMA_API_KEY"],
        Some("OLLAMA_BASE_URL"),
    ),
    provider(
        "lmstudio",
        &["lm-studio"],
        "http://127.0.0.1:1234/v1",
        &["LM_API_KEY"],
        Some("LM_BASE_URL"),
    ),
    provider(
        "deepinfra",
        &["deep-infra", "deepinfra-ai"],
        "https://api.deepinfra.com/v1/openai",
        &["DEEPINFRA_API_KEY"],
        Some("DEEPINFRA_BASE_URL"),
    ),
    provider(
        "fireworks",
        &["fireworks-ai", "fw"],
        "https://api.fireworks.ai/inference/v1",
        &["FIREWORKS_API_KEY"],
        None,
    ),
    provider(
        "novita",
        &["novita-ai", "novitaai"],
        "https://api.novita.ai/openai/v1",
        &["NOVITA_API_KEY"],
        Some("NOVITA_BASE_URL"),
    ),
    provider(
        "upstage",
        &["solar"],
        "https://api.upstage.ai/v1",
        &["UPSTAGE_API_KEY"],
        Some("UPSTAGE_BASE_URL"),
    ),
    // Any OpenAI-compatible server you point at (`model.base_url`); the local-server
    // names are Hermes' aliases for it.
    provider(
        "custom",
        &[
            "ollama",
            "local",
            "vllm",
            "llamacpp",
            "llama.cpp",
            "llama-cpp",
        ],
        "",
        &["OPENAI_API_KEY"],
        Some("OPENAI_BASE_URL"),
    ),
];

/// The registry entry for an id or alias (any case, surrounding space ignored).
pub fn find(name: &str) -> Option<&'static Provider> {
    let name = name.trim().to_ascii_lowercase();
    REGISTRY
        .iter()
        .find(|p| p.id == name || p.aliases.contains(&name.as_str()))
}

/// The ids, for the error that lists them.
pub fn known_ids() -> String {
    REGISTRY.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
}

/// One entry of `custom_providers` in config.yaml: a named server of your own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomProvider {
    pub name: String,
    pub base_url: String,
    /// `api_key` written in the file.
    pub api_key: Option<String>,
    /// `key_env`: the variable holding the key.
    pub key_env: Option<String>,
    pub mode: ApiMode,
    /// `model`: the model it runs when the job names none.
    pub model: Option<String>,
}

/// Hermes' spelling of a custom provider's name: trimmed, lower case, spaces as dashes.
fn normalise(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "-")
}

fn text(entry: &Mapping, key: &str) -> Option<String> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The `custom_providers` entry that `requested` names: `custom:<name>` or the bare
/// name, matched on Hermes' spelling. Entries without a name or base URL are skipped,
/// as Hermes skips them. `config_extra` is config.yaml's top level as kept.
pub fn find_custom(config_extra: &Mapping, requested: &str) -> Option<CustomProvider> {
    let wanted = normalise(requested);
    let wanted = wanted.strip_prefix("custom:").unwrap_or(&wanted);
    let entries = config_extra.get("custom_providers")?.as_sequence()?;
    entries
        .iter()
        .filter_map(Value::as_mapping)
        .find_map(|entry| {
            let name = text(entry, "name")?;
            let base_url = text(entry, "base_url")?;
            (normalise(&name) == wanted).then(|| CustomProvider {
                mode: match text(entry, "api_mode").as_deref() {
                    Some("anthropic_messages") => ApiMode::AnthropicMessages,
                    _ => ApiMode::ChatCompletions,
                },
                api_key: text(entry, "api_key"),
                key_env: text(entry, "key_env"),
                model: text(entry, "model"),
                name,
                base_url,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_aliases_are_unique() {
        let mut names: Vec<&str> = REGISTRY
            .iter()
            .flat_map(|p| std::iter::once(p.id).chain(p.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name is listed twice");
    }

    #[test]
    fn every_listed_provider_has_its_url_and_key_variable() {
        // (id, default base URL, first key variable, base-URL variable), from Hermes 0.19.
        let expected: &[(&str, &str, &str, Option<&str>)] = &[
            (
                "nous",
                "https://inference-api.nousresearch.com/v1",
                "NOUS_API_KEY",
                Some("NOUS_INFERENCE_BASE_URL"),
            ),
            (
                "gemini",
                "https://generativelanguage.googleapis.com/v1beta/openai",
                "GOOGLE_API_KEY",
                Some("GEMINI_BASE_URL"),
            ),
            (
                "deepseek",
                "https://api.deepseek.com/v1",
                "DEEPSEEK_API_KEY",
                Some("DEEPSEEK_BASE_URL"),
            ),
            (
                "xai",
                "https://api.x.ai/v1",
                "XAI_API_KEY",
                Some("XAI_BASE_URL"),
            ),
            (
                "anthropic",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
                Some("ANTHROPIC_BASE_URL"),
            ),
            (
                "fireworks",
                "https://api.fireworks.ai/inference/v1",
                "FIREWORKS_API_KEY",
                None,
            ),
            (
                "zai",
                "https://api.z.ai/api/paas/v4",
                "GLM_API_KEY",
                Some("GLM_BASE_URL"),
            ),
            (
                "kimi-coding",
                "https://api.moonshot.ai/v1",
                "KIMI_API_KEY",
                Some("KIMI_BASE_URL"),
            ),
            (
                "alibaba",
                "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                "DASHSCOPE_API_KEY",
                Some("DASHSCOPE_BASE_URL"),
            ),
            (
                "minimax",
                "https://api.minimax.io/anthropic",
                "MINIMAX_API_KEY",
                Some("MINIMAX_BASE_URL"),
            ),
            (
                "nvidia",
                "https://integrate.api.nvidia.com/v1",
                "NVIDIA_API_KEY",
                Some("NVIDIA_BASE_URL"),
            ),
            (
                "huggingface",
                "https://router.huggingface.co/v1",
                "HF_TOKEN",
                Some("HF_BASE_URL"),
            ),
            (
                "deepinfra",
                "https://api.deepinfra.com/v1/openai",
                "DEEPINFRA_API_KEY",
                Some("DEEPINFRA_BASE_URL"),
            ),
            (
                "novita",
                "https://api.novita.ai/openai/v1",
                "NOVITA_API_KEY",
                Some("NOVITA_BASE_URL"),
            ),
            (
                "upstage",
                "https://api.upstage.ai/v1",
                "UPSTAGE_API_KEY",
                Some("UPSTAGE_BASE_URL"),
            ),
            (
                "ollama-cloud",
                "https://ollama.com/v1",
                "OLLAMA_API_KEY",
                Some("OLLAMA_BASE_URL"),
            ),
            (
                "lmstudio",
                "http://127.0.0.1:1234/v1",
                "LM_API_KEY",
                Some("LM_BASE_URL"),
            ),
            (
                "openrouter",
                "https://openrouter.ai/api/v1",
                "OPENROUTER_API_KEY",
                None,
            ),
            (
                "openai",
                "https://api.openai.com/v1",
                "OPENAI_API_KEY",
                Some("OPENAI_BASE_URL"),
            ),
        ];
        for (id, url, key, url_var) in expected {
            let p = find(id).unwrap_or_else(|| panic!("{id} missing"));
            assert_eq!(
                (p.base_url, p.key_vars[0], p.base_url_var),
                (*url, *key, *url_var),
                "{id}"
            );
        }
        assert_eq!(find("GOOGLE").map(|p| p.id), Some("gemini"));
        assert_eq!(find("fw").map(|p| p.id), Some("fireworks"));
        assert_eq!(find("vllm").map(|p| p.id), Some("custom"));
        assert_eq!(
            find("minimax").map(|p| p.mode),
            Some(ApiMode::AnthropicMessages)
        );
        assert!(find("groq").is_none());
        assert!(known_ids().contains("gemini, deepseek"));
    }

    #[test]
    fn custom_providers_are_found_by_name() {
        let config: Mapping = serde_yaml_ng::from_str(
            "custom_providers:\n  - {name: My Box, base_url: 'http://10.0.0.2:8000/v1', key_env: BOX_KEY, model: qwen}\n  - {name: claude-proxy, base_url: 'http://proxy', api_key: k, api_mode: anthropic_messages}\n  - {name: broken}\n",
        )
        .unwrap_or_default();
        let box_ = find_custom(&config, "custom:my-box").unwrap_or_else(|| panic!("not found"));
        assert_eq!(box_.base_url, "http://10.0.0.2:8000/v1");
        assert_eq!(box_.key_env.as_deref(), Some("BOX_KEY"));
        assert_eq!(box_.model.as_deref(), Some("qwen"));
        let proxy = find_custom(&config, "Claude-Proxy").unwrap_or_else(|| panic!("not found"));
        assert_eq!(proxy.mode, ApiMode::AnthropicMessages);
        assert!(find_custom(&config, "custom:broken").is_none());
        assert!(find_custom(&Mapping::new(), "custom:x").is_none());
    }
}
