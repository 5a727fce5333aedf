//! Where Hermes keeps its files, its configuration and its time zone (SPEC §1, §3.2, §8).
//! Resolved at call time so that each test can set its own HERMES_HOME.

use std::path::{Path, PathBuf};

use chrono_tz::Tz;
use jobs::Context;
use serde_yaml_ng::Value as Yaml;

use crate::clock::{Clock, SystemClock};
use crate::error::CliError;

pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$HERMES_HOME`, else `~/.hermes`.
    pub fn resolve() -> Result<Home, CliError> {
        if let Some(dir) = std::env::var_os("HERMES_HOME").filter(|d| !d.is_empty()) {
            return Ok(Home {
                root: PathBuf::from(dir),
            });
        }
        let home = std::env::var_os("HOME")
            .filter(|d| !d.is_empty())
            .ok_or_else(|| {
                CliError::user("Cannot find your home directory: set HERMES_HOME or HOME")
            })?;
        Ok(Home {
            root: Path::new(&home).join(".hermes"),
        })
    }

    pub fn cron_dir(&self) -> PathBuf {
        self.root.join("cron")
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// config.yaml as YAML; a missing file is an empty config, an unparsable one an error.
    pub fn config(&self) -> Result<Yaml, CliError> {
        let path = self.config_path();
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Ok(Yaml::Null),
            Ok(text) => serde_yaml_ng::from_str(&text).map_err(|e| {
                CliError::user(format!(
                    "Cannot read {}: {}; fix the YAML or move the file aside",
                    path.display(),
                    one_line(&e.to_string())
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Yaml::Null),
            Err(e) => Err(CliError::internal(format!(
                "Cannot read {}: {e}",
                path.display()
            ))),
        }
    }
}

/// "Now" and the zones for one operation, with the config it was read from. Called per
/// CLI command and per scheduler pass, so config edits apply without a restart.
pub fn load_context(home: &Home) -> Result<(Context, Yaml), CliError> {
    let config = home.config()?;
    let now = SystemClock::from_env().map_err(CliError::user)?.now();
    let ctx = Context {
        now,
        zone: configured_zone(&config),
        legacy_zone: system_zone(),
    };
    Ok((ctx, config))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The system's IANA zone: `TZ` when it names one, else the OS setting, else UTC.
pub fn system_zone() -> Tz {
    std::env::var("TZ")
        .ok()
        .and_then(|tz| tz.trim_start_matches(':').parse::<Tz>().ok())
        .or_else(|| {
            iana_time_zone::get_timezone()
                .ok()
                .and_then(|name| name.parse().ok())
        })
        .unwrap_or(Tz::UTC)
}

/// The configured zone (SPEC §3.2): HERMES_TIMEZONE → config `timezone:` → system → UTC.
/// An invalid name is a warning on stderr, then the next source is tried.
pub fn configured_zone(config: &Yaml) -> Tz {
    let from_env = std::env::var("HERMES_TIMEZONE").ok();
    let from_config = config
        .get("timezone")
        .and_then(Yaml::as_str)
        .map(str::to_string);
    for (source, name) in [
        ("HERMES_TIMEZONE", from_env),
        ("config.yaml timezone", from_config),
    ] {
        let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
            continue;
        };
        match name.trim().parse::<Tz>() {
            Ok(zone) => return zone,
            Err(_) => eprintln!(
                "warning: {source} '{name}' is not an IANA time zone (e.g. Europe/Berlin); ignoring it"
            ),
        }
    }
    system_zone()
}
