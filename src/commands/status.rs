//! `status`, `runs` and `doctor`: read-only views of the scheduler's health and history.

use std::path::Path;

use chrono::Utc;
use serde_json::json;

use jobs::due::earliest_next_run;
use jobs::ledger::Ledger;
use jobs::{find_job, JobState, JobStore};

use super::timefmt::absolute_and_relative;
use super::Session;
use crate::error::CliError;
use crate::process::pid_alive;

/// A heartbeat older than this means the daemon is gone (it writes one at least every
/// 60 s, before each sleep).
const STALE_AFTER_S: f64 = 120.0;

struct DaemonState {
    running: bool,
    pid: Option<i64>,
    heartbeat_age_s: Option<f64>,
    last_error: Option<String>,
}

fn read_epoch(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .next()?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|t| *t > 0.0)
}

fn daemon_state(cron_dir: &Path) -> DaemonState {
    let now = Utc::now().timestamp_millis() as f64 / 1000.0;
    let heartbeat_age_s =
        read_epoch(&cron_dir.join("ticker_heartbeat")).map(|t| (now - t).max(0.0));
    let pid = std::fs::read_to_string(cron_dir.join("daemon.pid"))
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok());
    let fresh = heartbeat_age_s.is_some_and(|age| age < STALE_AFTER_S);
    let running = fresh && pid.is_none_or(pid_alive);
    let error_time = read_epoch(&cron_dir.join("ticker_last_error"));
    let success_time = read_epoch(&cron_dir.join("ticker_last_success"));
    let last_error = match (error_time, success_time) {
        (Some(e), s) if s.is_none_or(|s| e > s) => {
            std::fs::read_to_string(cron_dir.join("ticker_last_error"))
                .ok()
                .map(|t| {
                    t.lines()
                        .skip(1)
                        .collect::<Vec<_>>()
                        .join(" ")
                        .trim()
                        .to_string()
                })
                .filter(|t| !t.is_empty())
        }
        _ => None,
    };
    DaemonState {
        running,
        pid: if running { pid } else { None },
        heartbeat_age_s,
        last_error,
    }
}

pub fn status(session: &Session, as_json: bool) -> Result<(), CliError> {
    let ctx = &session.ctx;
    let jobs = session.store.load_jobs(ctx)?;
    let daemon = daemon_state(&session.home.cron_dir());
    let active = jobs
        .iter()
        .filter(|j| j.state() == JobState::Scheduled)
        .count();
    let next = earliest_next_run(
        &jobs,
        ctx,
        jobs::due::run_claim_ttl(crate::settings::inactivity_timeout().map(|t| t.as_secs())),
    );
    if as_json {
        let out = json!({
            "daemon": {"running": daemon.running, "pid": daemon.pid, "heartbeat_age_s": daemon.heartbeat_age_s},
            "last_tick_error": daemon.last_error,
            "active_jobs": active,
            "next_run_at": next.map(|t| schedules::format_instant(t, ctx.zone)),
        });
        say!("{out}");
        return Ok(());
    }
    match (daemon.running, daemon.heartbeat_age_s) {
        (true, Some(age)) => say!(
            "Scheduler: running (pid {}, heartbeat {age:.0}s ago)",
            daemon.pid.map_or("?".to_string(), |p| p.to_string())
        ),
        (false, Some(age)) => say!(
            "Scheduler: NOT running (last heartbeat {age:.0}s ago). Start it with: hermes cron daemon"
        ),
        _ if session.home.cron_dir().join("ticker_heartbeat").exists() => {
            say!("Scheduler: NOT running (it stopped cleanly). Start it with: hermes cron daemon")
        }
        _ => say!("Scheduler: NOT running (never started here). Start it with: hermes cron daemon"),
    }
    if let Some(error) = &daemon.last_error {
        say!("Last pass error: {error}");
    }
    say!("Active jobs: {active}");
    match next {
        Some(next) => say!(
            "Next run: {}",
            absolute_and_relative(next, ctx.now, ctx.zone)
        ),
        None => say!("Next run: none"),
    }
    Ok(())
}

fn open_ledger(session: &Session) -> Result<Option<Ledger>, CliError> {
    let path = session.home.cron_dir().join("executions.db");
    if !path.exists() {
        return Ok(None);
    }
    Ledger::open(&path)
        .map(Some)
        .map_err(|e| CliError::internal(e.to_string()))
}

pub fn runs(
    session: &Session,
    reference: Option<&str>,
    limit: usize,
    as_json: bool,
) -> Result<(), CliError> {
    let job_id = match reference {
        Some(reference) => {
            let jobs = session.store.load_jobs(&session.ctx)?;
            match find_job(&jobs, reference) {
                Ok(job) => Some(job.id().to_string()),
                // A removed job's history is still in the ledger under its id.
                Err(jobs::JobError::NotFound(_)) => Some(reference.to_string()),
                Err(e) => return Err(e.into()),
            }
        }
        None => None,
    };
    let rows = match open_ledger(session)? {
        Some(ledger) => ledger
            .recent(job_id.as_deref(), limit)
            .map_err(|e| CliError::internal(e.to_string()))?,
        None => Vec::new(),
    };
    if as_json {
        let runs: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "id": r.id, "job_id": r.job_id, "occurrence": r.occurrence, "source": r.source,
                    "status": r.status, "scheduled_at": r.scheduled_at, "started_at": r.started_at,
                    "finished_at": r.finished_at, "error": r.error, "delivery": r.delivery,
                    "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                })
            })
            .collect();
        say!("{}", json!({ "runs": runs }));
        return Ok(());
    }
    if rows.is_empty() {
        say!("No runs recorded yet.");
        return Ok(());
    }
    for r in &rows {
        say!(
            "{}  {:<11} {:<9} {}  {}",
            r.started_at.as_deref().unwrap_or("-"),
            r.status,
            r.source,
            r.job_id,
            r.error
                .as_deref()
                .map(|e| e.lines().next().unwrap_or(""))
                .unwrap_or("")
        );
    }
    Ok(())
}

pub fn doctor(session: &Session) -> Result<(), CliError> {
    let ctx = &session.ctx;
    let mut problems: Vec<String> = Vec::new();
    let cron_dir = session.home.cron_dir();
    let daemon = daemon_state(&cron_dir);
    if !daemon.running {
        problems.push("the scheduler is not running: start it with 'hermes cron daemon'".into());
    }
    if let Some(error) = &daemon.last_error {
        problems.push(format!("the last scheduler pass failed: {error}"));
    }
    let jobs = match session.store.load_jobs(ctx) {
        Ok(jobs) => jobs,
        Err(e) => {
            problems.push(e.to_string());
            Vec::new()
        }
    };
    let scripts_dir = session.home.root.join("scripts");
    let root = &session.home.root;
    let env = crate::environment::Environment::load(root);
    let vars = crate::agent::config::Vars::load(root);
    // One read of config.yaml for every job below.
    let config = session.home.config();
    if let Err(e) = &config {
        problems.push(e.to_string());
    }
    for job in &jobs {
        let label = format!("job {} ({})", job.id(), job.name());
        if matches!(job.state(), JobState::Scheduled | JobState::Paused) {
            if !job.no_agent() {
                if let Ok(config) = &config {
                    if let Err(e) = crate::agent::config::resolve(job, config, &vars, root) {
                        problems.push(format!("{label} cannot start its agent: {e}"));
                    }
                }
                let (_, missing) = crate::agent::skills::load_skills(root, &job.skills());
                if !missing.is_empty() {
                    problems.push(format!(
                        "{label} uses missing skill(s): {}",
                        missing.join(", ")
                    ));
                }
            }
            let resolution = crate::delivery::target::resolve(job, &job.deliver(), &env);
            for error in &resolution.errors {
                problems.push(format!("{label}: {error}"));
            }
            for destination in &resolution.destinations {
                if let crate::delivery::target::Destination::Chat { platform, .. } = destination {
                    let var = format!("{}_BOT_TOKEN", platform.to_ascii_uppercase());
                    if env.get(&var).is_none() {
                        problems.push(format!(
                            "{label} delivers to {platform} but {var} is not set: add it to the environment or {}",
                            root.join(".env").display()
                        ));
                    }
                }
            }
        }
        if job.state() == JobState::Scheduled {
            if let Some(next) = job.next_run_at(ctx) {
                if next < ctx.now - chrono::Duration::minutes(15) {
                    problems.push(format!(
                        "{label} is overdue: it was due {}",
                        absolute_and_relative(next, ctx.now, job.zone(ctx))
                    ));
                }
            }
        }
        if job.state() == JobState::Error || job.text_field("last_status") == Some("error") {
            let error = job.text_field("last_error").unwrap_or("unknown error");
            problems.push(format!(
                "{label} failed its last run: {}",
                error.lines().next().unwrap_or("")
            ));
        }
        if let Some(error) = job.text_field("last_delivery_error") {
            problems.push(format!("{label} could not deliver: {error}"));
        }
        if let Some(script) = job.script() {
            if crate::script::resolve_script(&scripts_dir, script).is_err() {
                problems.push(format!(
                    "{label} uses script '{script}', which is missing from {}",
                    scripts_dir.display()
                ));
            }
        }
        if let Some(workdir) = job.text_field("workdir") {
            if !Path::new(workdir).is_dir() {
                problems.push(format!(
                    "{label} has a workdir that does not exist: {workdir}"
                ));
            }
        }
    }
    if problems.is_empty() {
        say!("All good: the scheduler is running and no job needs attention.");
        return Ok(());
    }
    for problem in &problems {
        say!("✗ {problem}");
    }
    Err(CliError::user(format!(
        "{} problem(s) found; see above",
        problems.len()
    )))
}
