//! The listener's settings, read from the environment over `<home>/.env` like every other
//! setting (real variables win): `API_SERVER_KEY`, `API_SERVER_HOST`, `API_SERVER_PORT`,
//! `API_SERVER_CORS_ORIGINS`, `API_SERVER_ALLOWED_HOSTS` and `API_SERVER_MAX_CONNECTIONS`. It decides whether the API is
//! served at all; it must never log, print or return the key's value.

use std::fmt;
use std::net::IpAddr;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::environment::Environment;

pub const DEFAULT_HOST: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 8642;
/// Python Hermes' minimum for a usable API key (`hermes_cli/auth.py`).
const MIN_KEY_CHARS: usize = 16;
/// Values that are obviously not a secret (Python Hermes' `_PLACEHOLDER_SECRET_VALUES`),
/// compared trimmed and lower-cased.
const PLACEHOLDERS: &[&str] = &[
    "*",
    "**",
    "***",
    "changeme",
    "your_api_key",
    "your_api_key_here",
    "your-api-key",
    "placeholder",
    "example",
    "dummy",
    "null",
    "none",
];

/// The API key. Its `Debug` never shows the value; it is compared in constant time.
#[derive(Clone)]
pub struct ApiKey {
    /// SHA-256 of the key: comparing digests takes the same time whatever the length or
    /// content of what a client sent.
    digest: [u8; 32],
}

impl ApiKey {
    fn new(value: &str) -> ApiKey {
        ApiKey {
            digest: Sha256::digest(value.as_bytes()).into(),
        }
    }

    /// True when `given` is the key.
    pub fn matches(&self, given: &str) -> bool {
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        self.digest.ct_eq(&given).into()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where and how the API is served.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub key: ApiKey,
    pub host: String,
    pub port: u16,
    /// Browser origins allowed to call the API (`API_SERVER_CORS_ORIGINS`); exact
    /// matches only, never a wildcard.
    pub cors_origins: Vec<String>,
    /// Extra names a client may use in `Host` (`API_SERVER_ALLOWED_HOSTS`), lower-cased.
    pub allowed_hosts: Vec<String>,
    /// `API_SERVER_MAX_CONNECTIONS`: lowers the cap the file budget gives, never raises it.
    pub max_connections: Option<usize>,
}

/// Why the API is not served. The messages name the variable, never its value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotServed {
    #[error("API_SERVER_KEY is not set; the API is not served (set a strong secret, e.g. `openssl rand -hex 32`, to serve it)")]
    NoKey,
    #[error("refusing to serve the API: API_SERVER_KEY is a placeholder or shorter than 16 characters; set a strong secret, e.g. `openssl rand -hex 32`")]
    WeakKey,
    #[error("refusing to serve the API: API_SERVER_PORT '{0}' is not a port number (1-65535, or 0 for any free port)")]
    BadPort(String),
    #[error("refusing to serve the API: API_SERVER_MAX_CONNECTIONS '{0}' is not a positive whole number")]
    BadMaxConnections(String),
}

/// True when `value` is usable as a secret: at least 16 characters once trimmed and not
/// a placeholder.
pub fn is_strong_key(value: &str) -> bool {
    let cleaned = value.trim();
    cleaned.chars().count() >= MIN_KEY_CHARS
        && !PLACEHOLDERS.contains(&cleaned.to_lowercase().as_str())
}

fn list(env: &Environment, name: &str) -> Vec<String> {
    env.get(name)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

impl ApiSettings {
    /// The settings in `env`, or why the API is not served.
    pub fn from_env(env: &Environment) -> Result<ApiSettings, NotServed> {
        let key = env.get("API_SERVER_KEY").ok_or(NotServed::NoKey)?;
        if !is_strong_key(key) {
            return Err(NotServed::WeakKey);
        }
        let port = match env.get("API_SERVER_PORT") {
            None => DEFAULT_PORT,
            Some(text) => text
                .parse::<u16>()
                .map_err(|_| NotServed::BadPort(text.to_string()))?,
        };
        let max_connections = match env.get("API_SERVER_MAX_CONNECTIONS") {
            None => None,
            Some(text) => Some(
                text.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| NotServed::BadMaxConnections(text.to_string()))?,
            ),
        };
        let mut cors_origins = list(env, "API_SERVER_CORS_ORIGINS");
        // `null` is the origin of every sandboxed frame and local file: allowing it would
        // allow any page that puts itself in one.
        for never in ["*", "null"] {
            if cors_origins.iter().any(|o| o.eq_ignore_ascii_case(never)) {
                tracing::warn!(
                    "API_SERVER_CORS_ORIGINS contains '{never}', which is never honoured; list the origins"
                );
                cors_origins.retain(|o| !o.eq_ignore_ascii_case(never));
            }
        }
        Ok(ApiSettings {
            key: ApiKey::new(key),
            host: env
                .get("API_SERVER_HOST")
                .unwrap_or(DEFAULT_HOST)
                .to_string(),
            port,
            cors_origins,
            allowed_hosts: list(env, "API_SERVER_ALLOWED_HOSTS")
                .into_iter()
                .map(|h| h.to_lowercase())
                .collect(),
            max_connections,
        })
    }

    /// True when the bind address only accepts connections from this machine.
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_must_be_long_and_not_a_placeholder() {
        assert!(!is_strong_key("short"));
        assert!(!is_strong_key("  changeme  "));
        assert!(!is_strong_key("YOUR_API_KEY_HERE"));
        assert!(!is_strong_key("               x"));
        assert!(is_strong_key("0123456789abcdef"));
    }

    #[test]
    fn the_key_matches_only_itself_and_never_shows() {
        let env = Environment::from_pairs(&[("API_SERVER_KEY", "0123456789abcdef-secret")]);
        let settings = ApiSettings::from_env(&env).unwrap();
        assert!(settings.key.matches("0123456789abcdef-secret"));
        assert!(!settings.key.matches("0123456789abcdef-secreT"));
        assert!(!settings.key.matches(""));
        assert!(!format!("{settings:?}").contains("secret"));
    }

    #[test]
    fn a_weak_key_or_a_bad_port_is_refused_by_name() {
        let weak = Environment::from_pairs(&[("API_SERVER_KEY", "placeholder")]);
        assert_eq!(
            ApiSettings::from_env(&weak).unwrap_err(),
            NotServed::WeakKey
        );
        let port = Environment::from_pairs(&[
            ("API_SERVER_KEY", "0123456789abcdef"),
            ("API_SERVER_PORT", "http"),
        ]);
        assert!(ApiSettings::from_env(&port)
            .unwrap_err()
            .to_string()
            .contains("API_SERVER_PORT"));
    }
}
