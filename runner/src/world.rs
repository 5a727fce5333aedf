//! What a run needs from the home's files, read once and passed down: config.yaml, the
//! variables of `.env` over the process environment, and what is made of them (the
//! zones, the cron settings, the secret redactor). The scheduler asks for it for every
//! pass and every run; the files are read again only when one of them changed (its
//! inode, size, modification or change time), so an edit applies from the next run
//! without a restart, and a burst of a thousand runs reads them once.
//!
//! Nothing under a run reads config.yaml or `.env` itself: the run's [`World`] travels
//! in its [`crate::RunEnv`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono_tz::Tz;

use crate::config::{Config, ConfigError};
use crate::environment::{parse_dotenv, Environment, Vars};
use crate::redact::Redactor;
use crate::settings::CronSettings;
use crate::zone::{configured_zone, system_zone};

/// The home's files as one run sees them.
#[derive(Debug)]
pub struct World {
    pub config: Arc<Config>,
    /// `.env` overlaid with the process environment (real variables win).
    pub environment: Arc<Environment>,
    /// `.env` alone, for the model and tool calls that pass on what the process lacks.
    pub vars: Arc<Vars>,
    pub redactor: Arc<Redactor>,
    pub settings: CronSettings,
    /// The configured zone and the system's (the zone of records written before zones).
    pub zone: Tz,
    pub legacy_zone: Tz,
}

impl World {
    /// Reads the home's files now.
    pub fn read(home: &Path) -> Result<World, ConfigError> {
        let config = Config::read(&home.join("config.yaml"))?;
        let settings = CronSettings::from_config(&config);
        let zone = configured_zone(&config);
        Ok(World::over_dotenv(
            home,
            config,
            settings,
            zone,
            system_zone(),
        ))
    }

    /// The home's `.env` without its config.yaml (one that cannot be read): the
    /// defaults of an empty config.
    pub fn without_config(home: &Path) -> World {
        let config = Config::default();
        let (settings, zone) = (CronSettings::from_config(&config), configured_zone(&config));
        World::over_dotenv(home, config, settings, zone, system_zone())
    }

    /// A world of fixed settings over the home's `.env`, every time in UTC and no
    /// config.yaml (tests).
    pub fn fixed(home: &Path, settings: CronSettings) -> World {
        World::over_dotenv(
            home,
            Config::default(),
            settings,
            chrono_tz::UTC,
            chrono_tz::UTC,
        )
    }

    /// `config` with the home's `.env`, read once for the environment, the variables and
    /// the redactor.
    fn over_dotenv(
        home: &Path,
        config: Config,
        settings: CronSettings,
        zone: Tz,
        legacy_zone: Tz,
    ) -> World {
        let dotenv = match std::fs::read_to_string(home.join(".env")) {
            Ok(text) => parse_dotenv(&text),
            Err(_) => HashMap::new(),
        };
        let environment = Environment::over_dotenv(dotenv.clone(), home);
        World {
            redactor: Arc::new(Redactor::from_sources(&environment, &config)),
            vars: Arc::new(Vars::from_dotenv(dotenv)),
            environment: Arc::new(environment),
            config: Arc::new(config),
            settings,
            zone,
            legacy_zone,
        }
    }
}

/// Which version of a file was read: `None` when it did not exist.
type Stamp = Option<(u64, u64, u64, i64, i64, i64, i64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).ok().map(|m| {
        (
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    })
}

/// The last [`World`] read from a home, kept while its files stay as they were.
#[derive(Debug)]
pub struct WorldCache {
    home: PathBuf,
    last: Mutex<Option<([Stamp; 2], Arc<World>)>>,
}

impl WorldCache {
    pub fn new(home: &Path) -> WorldCache {
        WorldCache {
            home: home.to_path_buf(),
            last: Mutex::new(None),
        }
    }

    /// The home's world: the one kept when neither file changed since it was read,
    /// else read afresh. A config.yaml that cannot be read is an error every time it is
    /// asked for (never kept), so fixing it applies at once.
    pub fn get(&self) -> Result<Arc<World>, ConfigError> {
        let stamps = [
            stamp(&self.home.join("config.yaml")),
            stamp(&self.home.join(".env")),
        ];
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, world)) = last.as_ref() {
            if *seen == stamps {
                return Ok(Arc::clone(world));
            }
        }
        let world = Arc::new(World::read(&self.home)?);
        *last = Some((stamps, Arc::clone(&world)));
        Ok(world)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_read_again_only_when_one_changes() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".env"),
            "HERMES_TEST_TOKEN=first-secret-value\n",
        )
        .unwrap();
        let cache = WorldCache::new(home.path());
        let first = cache.get().unwrap();
        assert_eq!(
            first.environment.get("HERMES_TEST_TOKEN"),
            Some("first-secret-value")
        );
        assert!(Arc::ptr_eq(&first, &cache.get().unwrap()), "read again");

        std::fs::write(
            home.path().join(".env"),
            "HERMES_TEST_TOKEN=second-secret-value-longer\n",
        )
        .unwrap();
        let second = cache.get().unwrap();
        assert_eq!(
            second.environment.get("HERMES_TEST_TOKEN"),
            Some("second-secret-value-longer")
        );
        assert_eq!(
            second.redactor.redact("token second-secret-value-longer"),
            "token [REDACTED]"
        );

        std::fs::write(home.path().join("config.yaml"), "timezone: Europe/Berlin\n").unwrap();
        let third = cache.get().unwrap();
        assert_eq!(third.zone, chrono_tz::Europe::Berlin);
        assert!(Arc::ptr_eq(&third, &cache.get().unwrap()));
    }

    #[test]
    fn an_unreadable_config_is_an_error_each_time_and_never_kept() {
        let home = tempfile::tempdir().unwrap();
        let cache = WorldCache::new(home.path());
        assert!(cache.get().is_ok());
        std::fs::write(home.path().join("config.yaml"), "cron: [not, a, map\n").unwrap();
        assert!(cache.get().is_err());
        assert!(cache.get().is_err());
        std::fs::write(home.path().join("config.yaml"), "timezone: UTC\n").unwrap();
        assert_eq!(cache.get().unwrap().zone, chrono_tz::UTC);
    }
}
