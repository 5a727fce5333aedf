//! Where Hermes keeps its files, its configuration and its time zone (docs/STORE.md, "Files under the home"; docs/SCHEDULES.md, "Time zones"; docs/CONFIG.md, "Config file reference").
//! Resolved at call time so that each test can set its own HERMES_HOME. It reads
//! config.yaml only through [`Config::read`] and never writes it.

use std::path::{Path, PathBuf};

use crate::config::{Config, ConfigError};
use chrono::{DateTime, Utc};
use jobs::Context;

// The zones are read where a run's world is made (the runner crate).
pub use runner::zone::{configured_zone, system_zone};

pub struct Home {
    pub root: PathBuf,
}

/// Why the home of a command cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("Cannot find your home directory: set HERMES_HOME or HOME")]
    NoHome,
    #[error("Invalid profile name '{0}': use lowercase letters, digits, '-' and '_' (at most 64)")]
    InvalidProfile(String),
    #[error("Profile '{name}' does not exist: create its directory with `mkdir -p {dir}` (or, with Python Hermes, `hermes profile create {name}`)")]
    NoProfile { name: String, dir: String },
}

impl Home {
    /// The home of this command, by Python Hermes' profile rule: `--profile NAME` is
    /// `<root>/profiles/NAME` (`default` is the root itself); without it, a HERMES_HOME
    /// that already is a profile directory is used as it is, else the root's sticky
    /// `active_profile` applies. The root is `$HERMES_HOME`, else `~/.hermes`. A profile
    /// that does not exist is an error, as in Python Hermes.
    pub fn resolve(profile: Option<&str>) -> Result<Home, HomeError> {
        let env_home = std::env::var_os("HERMES_HOME").filter(|d| !d.is_empty());
        let given = match &env_home {
            Some(dir) => PathBuf::from(dir),
            None => {
                let home = std::env::var_os("HOME")
                    .filter(|d| !d.is_empty())
                    .ok_or(HomeError::NoHome)?;
                Path::new(&home).join(".hermes")
            }
        };
        let in_profile = given
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|name| name == "profiles");
        let root = match (in_profile, given.parent().and_then(Path::parent)) {
            (true, Some(root)) => root.to_path_buf(),
            _ => given.clone(),
        };
        let name = match profile {
            Some(name) => Some(name.to_string()),
            None if in_profile => return Ok(Home { root: given }),
            None => std::fs::read_to_string(root.join("active_profile"))
                .ok()
                .map(|text| text.trim().to_string())
                .filter(|name| !name.is_empty()),
        };
        let Some(name) = name else {
            return Ok(Home { root: given });
        };
        Ok(Home {
            root: profile_dir(&root, &name)?,
        })
    }

    pub fn cron_dir(&self) -> PathBuf {
        self.root.join("cron")
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// config.yaml, read now: a missing file is an empty config; an unparsable file or a
    /// value that cannot be read is an error that says what to fix.
    pub fn config(&self) -> Result<Config, ConfigError> {
        Config::read(&self.config_path())
    }
}

/// "Now" and the zones for one operation, with the config it was read from. Called per
/// CLI command and per scheduler pass, so config edits apply without a restart.
pub fn load_context(home: &Home, now: DateTime<Utc>) -> Result<(Context, Config), ConfigError> {
    let config = home.config()?;
    let ctx = Context {
        now,
        zone: configured_zone(&config),
        legacy_zone: system_zone(),
    };
    Ok((ctx, config))
}

/// `<root>/profiles/<name>` (the root itself for `default`), which must exist.
fn profile_dir(root: &Path, name: &str) -> Result<PathBuf, HomeError> {
    let trimmed = name.trim();
    if trimmed.eq_ignore_ascii_case("default") {
        return Ok(root.to_path_buf());
    }
    let canon = trimmed.to_lowercase();
    let valid = canon.len() <= 64
        && canon
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && canon
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid {
        return Err(HomeError::InvalidProfile(trimmed.to_string()));
    }
    let dir = root.join("profiles").join(&canon);
    if !dir.is_dir() {
        return Err(HomeError::NoProfile {
            dir: dir.display().to_string(),
            name: canon,
        });
    }
    Ok(dir)
}
