//! Where Hermes keeps its files, its configuration and its time zone (docs/STORE.md, "Files under the home"; docs/SCHEDULES.md, "Time zones"; docs/CONFIG.md, "Config file reference").
//! Resolved at call time so that each test can set its own HERMES_HOME. It reads
//! config.yaml only through [`Config::read`] and never writes it.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::CliError;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use jobs::Context;

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

    /// config.yaml, read now: a missing file is an empty config; an unparsable file or a
    /// value that cannot be read is an error that says what to fix.
    pub fn config(&self) -> Result<Config, CliError> {
        Ok(Config::read(&self.config_path())?)
    }
}

/// "Now" and the zones for one operation, with the config it was read from. Called per
/// CLI command and per scheduler pass, so config edits apply without a restart.
pub fn load_context(home: &Home, now: DateTime<Utc>) -> Result<(Context, Config), CliError> {
    let config = home.config()?;
    let ctx = Context {
        now,
        zone: configured_zone(&config),
        legacy_zone: system_zone(),
    };
    Ok((ctx, config))
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

/// The configured zone (docs/SCHEDULES.md, "Time zones"): HERMES_TIMEZONE → config `timezone:` → system → UTC.
/// An invalid name is a warning on stderr, then the next source is tried.
pub fn configured_zone(config: &Config) -> Tz {
    let from_env = std::env::var("HERMES_TIMEZONE").ok();
    let from_config = config.timezone.clone();
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
