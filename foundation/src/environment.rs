//! The environment a run sees: the real environment over `<home>/.env` (real variables
//! win). A run gets it from its world (the runner crate's `world`), read again whenever
//! `.env` changes, so that a new key, token or home channel applies on the next run
//! without a restart. The one `.env` parser. Read-only: nothing here ever
//! writes `.env`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A snapshot of the variables delivery may use.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: HashMap<String, String>,
    /// The home the variables were loaded from: a sender reads the state Hermes'
    /// gateway keeps there (Weixin's conversation tokens).
    home: Option<PathBuf>,
}

impl Environment {
    /// `<home>/.env` overlaid with the process environment.
    pub fn load(home: &Path) -> Environment {
        let dotenv = match std::fs::read_to_string(home.join(".env")) {
            Ok(text) => parse_dotenv(&text),
            Err(_) => HashMap::new(),
        };
        Environment::over_dotenv(dotenv, home)
    }

    /// The process environment over `dotenv`, the pairs of `<home>/.env` as read.
    pub fn over_dotenv(mut dotenv: HashMap<String, String>, home: &Path) -> Environment {
        dotenv.extend(std::env::vars());
        Environment {
            vars: dotenv,
            home: Some(home.to_path_buf()),
        }
    }

    /// A fixed set of variables, loaded from no home (tests of this crate and the
    /// crates that use it build theirs with it).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Environment {
        Environment {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            home: None,
        }
    }

    /// The home this environment was loaded from (`None` in unit tests).
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The value of `name`, when set and not blank.
    /// Where a missing variable can be set, for messages: `<home>/.env`, or "the
    /// environment" when these variables came from no home.
    pub fn dotenv_hint(&self) -> String {
        match &self.home {
            Some(home) => home.join(".env").display().to_string(),
            None => "the environment".to_string(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// `KEY=VALUE` lines; `export ` prefixes, blank lines and `#` comments are skipped; single
/// or double quotes around a value are removed; an unquoted value ends at ` #`.
pub fn parse_dotenv(text: &str) -> HashMap<String, String> {
    let mut vars = HashMap::new();
    for line in text.trim_start_matches('\u{feff}').lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) if value.len() >= 2 && value.ends_with(q) => {
                value[1..value.len() - 1].to_string()
            }
            _ => match value.find(" #") {
                Some(i) => value[..i].trim_end().to_string(),
                None => value.to_string(),
            },
        };
        vars.insert(key.to_string(), value);
    }
    vars
}

/// Environment lookups for the agent's model and tool calls: the real environment wins
/// over `<home>/.env`. Here, beside the one `.env` parser, so that a run's world can hold
/// it without reaching into the agent.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    dotenv: HashMap<String, String>,
}

impl Vars {
    /// Reads `<home>/.env` (a missing file is empty).
    pub fn load(home: &Path) -> Vars {
        let text = std::fs::read_to_string(home.join(".env")).unwrap_or_default();
        Vars::from_dotenv(parse_dotenv(&text))
    }

    /// The pairs of `.env` as read.
    pub fn from_dotenv(dotenv: HashMap<String, String>) -> Vars {
        Vars { dotenv }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_usual_dotenv_shapes() {
        let vars = parse_dotenv(
            "# comment\nexport TELEGRAM_BOT_TOKEN=\"123:abc\"\nA='x y'\nB=plain # note\nbad line\n",
        );
        assert_eq!(vars["TELEGRAM_BOT_TOKEN"], "123:abc");
        assert_eq!(vars["A"], "x y");
        assert_eq!(vars["B"], "plain");
        assert_eq!(vars.len(), 3);
    }
}
