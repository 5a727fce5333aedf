//! Secret redaction (docs/SAFETY.md, "Redaction") for everything that leaves a run: delivered text, output
//! documents, recorded errors. Two layers: the exact values of every configured key and
//! token (environment, `<home>/.env`, config.yaml), then common shapes (`sk-...`,
//! `Bearer ...`, Telegram bot tokens, Slack `xox?-` tokens, URL passwords). Every tool
//! result is redacted too before the model sees it (docs/SAFETY.md). It only ever replaces text
//! with `[REDACTED]`; it never reads a file other than `.env` and config.yaml.

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use crate::config::Config;
use crate::environment::Environment;

/// What a secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Values shorter than this are not treated as secrets: `MAX_TOKENS=4096` is not one,
/// and masking every "true" in a report would make it unreadable.
const MIN_SECRET_LEN: usize = 8;

/// Words that make an environment variable or config key a credential.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
    // A robot's webhook URL carries its token (DINGTALK_WEBHOOK_URL's access_token).
    "WEBHOOK_URL",
];

/// Does this variable or key name look like a credential? One rule for redaction, for
/// the environment scripts and tools get, and for the agent.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// Variables a tool's process never gets, whatever their names: the store's URL
/// (`HERMES_CRON_STORE`, `DATABASE_URL`) and any value that is a URL with a password.
pub fn is_kept_from_tools(name: &str, value: &str) -> bool {
    is_secret_name(name)
        || matches!(name, "HERMES_CRON_STORE" | "DATABASE_URL")
        || url_password().is_match(value)
}

/// `scheme://user:password@`: the password is group 2.
fn url_password() -> &'static Regex {
    static URL: OnceLock<Regex> = OnceLock::new();
    URL.get_or_init(|| {
        Regex::new(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)@")
            .expect("valid URL password pattern")
    })
}

fn shapes() -> &'static [(Regex, &'static str)] {
    static SHAPES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        [
            // OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-v1-) keys.
            (r"\bsk-[A-Za-z0-9_\-]{16,}", MASK),
            (
                r"(?i)\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}",
                "Bearer [REDACTED]",
            ),
            // Telegram bot tokens: `<bot id>:<35 url-safe chars>`, also inside /bot<token>/ URLs.
            (r"\d{6,12}:[A-Za-z0-9_\-]{30,}", MASK),
            (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", MASK),
        ]
        .into_iter()
        .map(|(pattern, mask)| (Regex::new(pattern).expect("valid redaction pattern"), mask))
        .collect()
    })
}

/// Masks secrets in text. A run gets one built with the home's files (the binary's
/// `World`, rebuilt when config.yaml or `.env` changes; a door builds one with
/// [`Redactor::for_home`]) so a key added
/// to `.env` is masked from the next run on.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Exact secret values, longest first (so a key that contains another is masked whole).
    values: Vec<String>,
}

impl Redactor {
    /// The secrets configured for this home: credential-named variables of the
    /// environment and `<home>/.env`, and the credentials written in config.yaml (plus the
    /// variables its `*_env` keys name). For callers that do not hold the run's
    /// [`Config`]: it reads config.yaml itself. A config that cannot be read adds none of
    /// its secrets (the run that uses it fails on the same error before any model call);
    /// the environment's secrets and the known shapes are still masked.
    pub fn for_home(home: &Path) -> Redactor {
        let env = Environment::load(home);
        let config = Config::read(&home.join("config.yaml")).unwrap_or_else(|e| {
            tracing::warn!("redacting without config.yaml's secrets: {e}");
            Config::default()
        });
        Redactor::from_sources(&env, &config)
    }

    pub fn from_sources(env: &Environment, config: &Config) -> Redactor {
        let mut values: Vec<String> = env
            .iter()
            .filter(|(name, _)| is_secret_name(name))
            .map(|(_, value)| value.trim().to_string())
            .collect();
        let written = config.written_secrets();
        values.extend(written.values);
        values.extend(
            written
                .variables
                .iter()
                .filter_map(|name| env.get(name).map(str::to_string)),
        );
        values.retain(|v| v.chars().count() >= MIN_SECRET_LEN);
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        Redactor { values }
    }

    /// The text with every known secret value and secret-shaped token masked.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), MASK);
            }
        }
        if url_password().is_match(&out) {
            out = url_password()
                .replace_all(&out, format!("${{1}}{MASK}@"))
                .into_owned();
        }
        for (pattern, mask) in shapes() {
            if pattern.is_match(&out) {
                out = pattern.replace_all(&out, *mask).into_owned();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_configured_values_and_known_shapes() {
        let env = Environment::from_pairs(&[
            ("OPENAI_API_KEY", "plain-looking-secret-value"),
            (
                "DINGTALK_WEBHOOK_URL",
                "https://oapi.dingtalk.com/robot/send?access_token=dt0123456789",
            ),
            ("MAX_TOKENS", "4096"),
            ("MY_LLM", "custom-provider-key-42"),
            ("HOME", "/home/someone"),
        ]);
        let config = Config::parse(
            "model:\n  api_key: cfg-secret-123456\nfallback_providers:\n  - api_key_env: MY_LLM\n",
            Path::new("config.yaml"),
        )
        .unwrap();
        let r = Redactor::from_sources(&env, &config);
        let text = "d=https://oapi.dingtalk.com/robot/send?access_token=dt0123456789 \
                    k=plain-looking-secret-value c=cfg-secret-123456 m=custom-provider-key-42 \
                    n=4096 sk-proj-abcdefghijklmnopqrstuv Authorization: Bearer abc.def.ghijkl \
                    https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage \
                    xoxb-1234-5678-abcdefghij /home/someone \
                    postgresql://hermes:pg-pass-w0rd@db.internal/cron";
        let out = r.redact(text);
        for secret in [
            "dt0123456789",
            "plain-looking",
            "cfg-secret",
            "custom-provider",
            "sk-proj",
            "abc.def",
            "AAHdq",
            "xoxb-",
            "pg-pass-w0rd",
        ] {
            assert!(!out.contains(secret), "{secret} left in {out}");
        }
        assert!(out.contains("n=4096"), "{out}");
        assert!(out.contains("/home/someone"), "{out}");
        assert!(out.contains("Bearer [REDACTED]"), "{out}");
        assert!(
            out.contains("postgresql://hermes:[REDACTED]@db.internal/cron"),
            "{out}"
        );
    }

    #[test]
    fn store_urls_and_url_passwords_are_kept_from_tools() {
        assert!(is_kept_from_tools(
            "HERMES_CRON_STORE",
            "postgresql://h@x/db"
        ));
        assert!(is_kept_from_tools(
            "DATABASE_URL",
            "postgres://localhost/db"
        ));
        assert!(is_kept_from_tools("MIRROR", "https://u:p4ss@example.org/"));
        assert!(is_kept_from_tools("GITHUB_TOKEN", "x"));
        assert!(!is_kept_from_tools("PATH", "/usr/bin:/bin"));
        assert!(!is_kept_from_tools("SITE", "https://example.org/a:b"));
    }
}
