//! Scheduler settings from config.yaml (`cron:` section) and the environment, re-read
//! on every pass so an edit applies without a restart. Environment variables win.

use std::time::Duration;

use crate::config::Config;
use crate::logged::logged;

#[derive(Debug, Clone)]
pub struct CronSettings {
    /// `cron.max_parallel_jobs` / `HERMES_CRON_MAX_PARALLEL`; `None` = unbounded (0).
    pub max_parallel: Option<usize>,
    pub catch_up_missed: bool,
    /// `cron.catch_up_spread` (default 5 minutes; 0 = none): overdue runs found by one
    /// pass start spread over it (docs/SCHEDULES.md, "Missed runs and catch-up").
    pub catch_up_spread: chrono::Duration,
    /// `cron.output_retention` (default 50) documents kept per job; 0 keeps every one
    /// (Hermes' meaning), which is `usize::MAX` here so no store has to know the rule.
    pub output_retention: usize,
    pub completed_retention_days: i64,
    /// `HERMES_CRON_SCRIPT_TIMEOUT`, else `cron.script_timeout_seconds`, else 300 s; a value
    /// that is not positive falls through to the next, as in Hermes.
    pub script_timeout: Duration,
    /// `HERMES_CRON_TIMEOUT`: a run with no activity this long is stopped; `None` = never.
    pub inactivity_timeout: Option<Duration>,
    /// `cron.wrap_response` (default true): deliver replies inside the response wrapper (docs/DELIVERY.md, "The response wrapper").
    pub wrap_response: bool,
    /// `cron.delivery_retry_hours` (default 6): how long failed deliveries are retried
    /// from the outbox.
    pub delivery_retry: Duration,
    /// `cron.preflight` (default true): check an agent job's provider, skills and
    /// delivery before its agent starts (docs/AGENT.md, "The pre-run check").
    pub preflight: bool,
    /// `cron.retry_unreachable` (default true): re-run a fire that never reached the
    /// model at +5, +15 and +30 minutes (docs/AGENT.md, "Unreachable model").
    pub retry_unreachable: bool,
    /// `cron.delivery.notify` (default true): `false` sends silently where the platform
    /// allows it (docs/DELIVERY.md, "Silent sends").
    pub notify: bool,
    /// `cron.failure_repeat_alert_hours` (default 6): an incident alerted less than this
    /// long ago withholds the notice of another failure; `None` (0 or less) alerts on
    /// every one.
    pub failure_repeat_alert: Option<chrono::Duration>,
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!(
                "{name}='{}' is not a whole number; ignoring it",
                logged(&text)
            );
            None
        }
    }
}

/// The pre-run script's time limit: `HERMES_CRON_SCRIPT_TIMEOUT` (seconds, fractions
/// allowed and cut, as Hermes reads it), else the configured value, else 300 s. Zero or
/// an unreadable value counts as unset.
fn script_timeout(from_env: Option<&str>, configured: Option<u64>) -> Duration {
    let from_env = from_env.and_then(|text| match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 1.0 => Some(secs as u64),
        Ok(_) => None,
        Err(_) => {
            tracing::warn!(
                "HERMES_CRON_SCRIPT_TIMEOUT='{}' is not a number of seconds; ignoring it",
                logged(text)
            );
            None
        }
    });
    let secs = from_env.or(configured.filter(|&s| s > 0)).unwrap_or(300);
    Duration::from_secs(secs)
}

/// `HERMES_CRON_TIMEOUT` (seconds, default 600, 0 = never): how long a run may show no
/// activity before it is stopped. Only the environment sets it.
pub fn inactivity_timeout() -> Option<Duration> {
    let timeout = env_number("HERMES_CRON_TIMEOUT").unwrap_or(600);
    (timeout > 0).then(|| Duration::from_secs(timeout))
}

/// The default `cron.catch_up_spread`.
const CATCH_UP_SPREAD_SECS: u64 = 300;

/// `cron.catch_up_spread` as configured: a span (`20s`, `5m`, `0`); unreadable is the
/// default, with a warning.
fn catch_up_spread(configured: Option<&str>) -> chrono::Duration {
    let secs = match configured.map(|text| (text, schedules::parse_span_seconds(text))) {
        None => CATCH_UP_SPREAD_SECS,
        Some((_, Some(secs))) => secs,
        Some((text, None)) => {
            tracing::warn!(
                "cron.catch_up_spread '{}' is not a duration such as 5m, 90s or 0; using 5m",
                logged(text)
            );
            CATCH_UP_SPREAD_SECS
        }
    };
    chrono::Duration::seconds(i64::try_from(secs).unwrap_or(0))
}

/// Days of a retention that keeps completed one-shots for good (about 2,700 years).
const KEEP_FOREVER_DAYS: i64 = 1_000_000;

/// Hours as a window; not positive (or not a number) means no window. Capped at a
/// century so the arithmetic cannot overflow on a mistyped number.
fn repeat_alert_window(hours: Option<f64>) -> Option<chrono::Duration> {
    let hours = hours.unwrap_or(6.0);
    (hours > 0.0).then(|| {
        let seconds = (hours.min(876_000.0) * 3600.0) as i64;
        chrono::Duration::seconds(seconds)
    })
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
            catch_up_spread: catch_up_spread(cron.catch_up_spread.as_deref()),
            output_retention: match cron.output_retention.unwrap_or(50) {
                0 => usize::MAX,
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
            // Capped far beyond any real use so the scheduler's date arithmetic cannot
            // overflow on a mistyped number; 0 keeps them for good, as Hermes 0.22 reads it.
            completed_retention_days: match cron.completed_retention_days.unwrap_or(7) {
                0 => KEEP_FOREVER_DAYS,
                days => days.min(KEEP_FOREVER_DAYS as u64) as i64,
            },
            script_timeout: script_timeout(
                std::env::var("HERMES_CRON_SCRIPT_TIMEOUT").ok().as_deref(),
                cron.script_timeout_seconds,
            ),
            inactivity_timeout: inactivity_timeout(),
            wrap_response: cron.wrap_response.unwrap_or(true),
            delivery_retry: Duration::from_secs(
                cron.delivery_retry_hours.unwrap_or(6).saturating_mul(3600),
            ),
            preflight: cron.preflight.unwrap_or(true),
            retry_unreachable: cron.retry_unreachable.unwrap_or(true),
            notify: cron.delivery.notify.unwrap_or(true),
            failure_repeat_alert: repeat_alert_window(cron.failure_repeat_alert_hours),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_timeout_reads_the_variable_then_the_config_as_hermes_does() {
        let secs = |env: Option<&str>, configured| script_timeout(env, configured).as_secs();
        assert_eq!(secs(None, None), 300);
        assert_eq!(secs(None, Some(60)), 60);
        assert_eq!(secs(Some("90"), Some(60)), 90);
        assert_eq!(secs(Some(" 12.9 "), None), 12, "fractions are cut");
        for unset in ["0", "0.5", "-3", "soon", ""] {
            assert_eq!(secs(Some(unset), Some(60)), 60, "{unset:?}");
        }
        assert_eq!(secs(None, Some(0)), 300, "0 in the file counts as unset");
    }

    #[test]
    fn the_catch_up_spread_defaults_to_five_minutes() {
        let spread = |text: &str| {
            let config =
                Config::parse(text, std::path::Path::new("/h/config.yaml")).unwrap_or_default();
            CronSettings::from_config(&config)
                .catch_up_spread
                .num_seconds()
        };
        assert_eq!(spread(""), 300);
        assert_eq!(spread("cron: {catch_up_spread: 20s}"), 20);
        assert_eq!(spread("cron: {catch_up_spread: 0}"), 0);
        assert_eq!(spread("cron: {catch_up_spread: soon}"), 300);
    }

    #[test]
    fn output_retention_zero_keeps_every_document() {
        let settings = |text: &str| {
            let config =
                Config::parse(text, std::path::Path::new("/h/config.yaml")).unwrap_or_default();
            CronSettings::from_config(&config).output_retention
        };
        assert_eq!(settings("cron: {output_retention: 0}"), usize::MAX);
        assert_eq!(settings("cron: {output_retention: 7}"), 7);
        assert_eq!(settings(""), 50);
    }
}
