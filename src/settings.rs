//! Scheduler settings from config.yaml (`cron:` section) and the environment, re-read
//! on every pass so an edit applies without a restart. Environment variables win.

use std::time::Duration;

use serde_yaml_ng::Value as Yaml;

#[derive(Debug, Clone)]
pub struct CronSettings {
    /// `cron.max_parallel_jobs` / `HERMES_CRON_MAX_PARALLEL`; `None` = unbounded (0).
    pub max_parallel: Option<usize>,
    pub catch_up_missed: bool,
    pub output_retention: usize,
    pub completed_retention_days: i64,
    pub script_timeout: Duration,
    /// `HERMES_CRON_TIMEOUT`: a run with no activity this long is stopped; `None` = never.
    pub inactivity_timeout: Option<Duration>,
    /// `cron.wrap_response` (default true): deliver replies inside the §7 wrapper.
    pub wrap_response: bool,
    /// `cron.delivery_retry_hours` (default 6): how long failed deliveries are retried
    /// from the outbox.
    pub delivery_retry: Duration,
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!("{name}='{text}' is not a whole number; ignoring it");
            None
        }
    }
}

fn yaml_number(section: &Yaml, key: &str) -> Option<u64> {
    match section.get(key)? {
        Yaml::Number(n) => n.as_u64(),
        Yaml::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn yaml_bool(section: &Yaml, key: &str) -> Option<bool> {
    match section.get(key)? {
        Yaml::Bool(b) => Some(*b),
        Yaml::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => Some(true),
            "false" | "no" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

impl CronSettings {
    pub fn from_config(config: &Yaml) -> CronSettings {
        let cron = config.get("cron").cloned().unwrap_or(Yaml::Null);
        let parallel = env_number("HERMES_CRON_MAX_PARALLEL")
            .or_else(|| yaml_number(&cron, "max_parallel_jobs"))
            .unwrap_or(4);
        let timeout = env_number("HERMES_CRON_TIMEOUT").unwrap_or(600);
        CronSettings {
            max_parallel: (parallel > 0).then_some(parallel as usize),
            catch_up_missed: yaml_bool(&cron, "catch_up_missed").unwrap_or(true),
            output_retention: yaml_number(&cron, "output_retention").unwrap_or(50) as usize,
            completed_retention_days: yaml_number(&cron, "completed_retention_days").unwrap_or(7)
                as i64,
            script_timeout: Duration::from_secs(
                yaml_number(&cron, "script_timeout_seconds").unwrap_or(300),
            ),
            inactivity_timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
            wrap_response: yaml_bool(&cron, "wrap_response").unwrap_or(true),
            delivery_retry: Duration::from_secs(
                yaml_number(&cron, "delivery_retry_hours").unwrap_or(6) * 3600,
            ),
        }
    }
}
