//! Scheduler settings from config.yaml (`cron:` section) and the environment, re-read
//! on every pass so an edit applies without a restart. Environment variables win.

use std::time::Duration;

use crate::config::Config;

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
    /// `cron.wrap_response` (default true): deliver replies inside the response wrapper (docs/DELIVERY.md, "The response wrapper").
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

/// `HERMES_CRON_TIMEOUT` (seconds, default 600, 0 = never): how long a run may show no
/// activity before it is stopped. Only the environment sets it.
pub fn inactivity_timeout() -> Option<Duration> {
    let timeout = env_number("HERMES_CRON_TIMEOUT").unwrap_or(600);
    (timeout > 0).then(|| Duration::from_secs(timeout))
}

impl CronSettings {
    /// The effective settings: the environment, then config.yaml's `cron:` section, then
    /// the defaults.
    pub fn from_config(config: &Config) -> CronSettings {
        let cron = &config.cron;
        let parallel = env_number("HERMES_CRON_MAX_PARALLEL")
            .or(cron.max_parallel_jobs)
            .unwrap_or(4);
        CronSettings {
            max_parallel: (parallel > 0).then_some(parallel as usize),
            catch_up_missed: cron.catch_up_missed.unwrap_or(true),
            output_retention: cron.output_retention.unwrap_or(50) as usize,
            // Capped far beyond any real use so the scheduler's date arithmetic cannot
            // overflow on a mistyped number.
            completed_retention_days: cron.completed_retention_days.unwrap_or(7).min(1_000_000)
                as i64,
            script_timeout: Duration::from_secs(cron.script_timeout_seconds.unwrap_or(300)),
            inactivity_timeout: inactivity_timeout(),
            wrap_response: cron.wrap_response.unwrap_or(true),
            delivery_retry: Duration::from_secs(
                cron.delivery_retry_hours.unwrap_or(6).saturating_mul(3600),
            ),
        }
    }
}
