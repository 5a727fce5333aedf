//! `status`, `runs` and `doctor`: read-only views of the scheduler's health and history.

use serde_json::json;

use jobs::due::earliest_next_run;
use jobs::ledger::RunStatus;
use jobs::{find_job, JobState};

use super::error::CliError;
use super::timefmt::absolute_and_relative;
use super::Session;
use crate::process::pid_alive;
use crate::readiness;

/// A heartbeat older than this means the daemon is gone (it writes one at least every
/// 60 s, before each sleep).
const STALE_AFTER_S: f64 = 120.0;

struct DaemonState {
    /// The scheduler processes alive on a shared store (empty for jobs.json).
    hosts: Vec<jobs::store::LiveHost>,
    running: bool,
    /// A daemon ever ran here.
    seen: bool,
    pid: Option<i64>,
    heartbeat_age_s: Option<f64>,
    last_error: Option<String>,
    /// The database failovers of the last day (a shared PostgreSQL store).
    failovers: Vec<jobs::store::Failover>,
}

async fn daemon_state(session: &Session) -> Result<DaemonState, CliError> {
    let beat = session.store.heartbeat().await?;
    let now = session.ctx.now;
    let age =
        |t: chrono::DateTime<chrono::Utc>| ((now - t).num_milliseconds() as f64 / 1000.0).max(0.0);
    let heartbeat_age_s = beat.alive_at.map(age);
    let fresh = heartbeat_age_s.is_some_and(|age| age < STALE_AFTER_S);
    let running = fresh && beat.pid.is_none_or(pid_alive);
    let last_error = match (beat.last_error, beat.last_success) {
        (Some((at, why)), success) if success.is_none_or(|s| at > s) => {
            Some(why).filter(|t| !t.is_empty())
        }
        _ => None,
    };
    Ok(DaemonState {
        hosts: beat.hosts,
        running,
        seen: beat.seen,
        pid: if running { beat.pid } else { None },
        heartbeat_age_s,
        last_error,
        failovers: beat.failovers,
    })
}

pub async fn status(session: &Session, as_json: bool) -> Result<(), CliError> {
    let ctx = &session.ctx;
    let jobs = session.store.load_jobs(ctx).await?;
    let daemon = daemon_state(session).await?;
    let paused = session.service().global_pause().await?;
    let active = jobs
        .iter()
        .filter(|j| j.state() == JobState::Scheduled)
        .count();
    let next = earliest_next_run(
        &jobs,
        ctx,
        jobs::due::run_claim_ttl(
            crate::scheduler::settings::inactivity_timeout().map(|t| t.as_secs()),
        ),
    );
    if as_json {
        let out = json!({
            "daemon": {"running": daemon.running, "pid": daemon.pid, "heartbeat_age_s": daemon.heartbeat_age_s},
            "last_tick_error": daemon.last_error,
            "active_jobs": active,
            "next_run_at": next.map(|t| schedules::format_instant(t, ctx.zone)),
            "hosts": daemon.hosts.iter().map(|h| json!({"host": h.host, "pid": h.pid})).collect::<Vec<_>>(),
            "paused": paused,
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
        _ if daemon.seen => {
            say!("Scheduler: NOT running (it stopped cleanly). Start it with: hermes cron daemon")
        }
        _ => say!("Scheduler: NOT running (never started here). Start it with: hermes cron daemon"),
    }
    if let Some(pause) = &paused {
        let since = pause
            .engaged_at
            .as_deref()
            .map_or(String::new(), |at| format!(" since {at}"));
        let reason = pause
            .reason
            .as_deref()
            .map_or(String::new(), |r| format!(" (reason: {r})"));
        say!("Paused{since}{reason}: no due job is claimed. Lift it with: hermes resume");
    }
    if let Some(error) = &daemon.last_error {
        say!("Last pass error: {error}");
    }
    if !daemon.hosts.is_empty() {
        say!("Live hosts: {}", daemon.hosts.len());
        for host in &daemon.hosts {
            say!("  {} (pid {})", host.host, host.pid);
        }
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

/// The delivery column of `hermes cron runs`: the outcome in a word, from the summary
/// the scheduler recorded ("local", "silent", "sent: …", "failed: …", "sent: …; failed: …").
fn delivery_outcome(summary: &str) -> &str {
    match (summary.starts_with("sent: "), summary.contains("failed: ")) {
        (true, true) => "partial",
        (true, false) => "sent",
        (false, true) => "failed",
        (false, false) => summary.split([':', ' ']).next().unwrap_or(summary),
    }
}

pub async fn runs(
    session: &Session,
    reference: Option<&str>,
    limit: usize,
    as_json: bool,
) -> Result<(), CliError> {
    let mut removed = None;
    let job_id = match reference {
        Some(reference) => {
            let jobs = session.store.load_jobs(&session.ctx).await?;
            match find_job(&jobs, reference) {
                Ok(job) => Some(job.id().to_string()),
                // A removed job's history is still in the ledger under its id.
                Err(jobs::JobError::NotFound(_)) => {
                    removed = Some(reference.to_string());
                    Some(reference.to_string())
                }
                Err(e) => return Err(e.into()),
            }
        }
        None => None,
    };
    let rows = session.store.recent_runs(job_id.as_deref(), limit).await?;
    if let (Some(reference), true) = (&removed, rows.is_empty()) {
        return Err(CliError::user(format!(
            "No job or run history matches '{reference}': see `hermes cron list --all` for the jobs there are"
        )));
    }
    if as_json {
        let runs: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "id": r.id, "job_id": r.job_id, "occurrence": r.occurrence, "source": r.source,
                    "host": r.host,
                    "status": r.status, "scheduled_at": r.scheduled_at, "started_at": r.started_at,
                    "finished_at": r.finished_at, "error": r.error, "delivery": r.delivery,
                    "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                    "cost_usd": r.cost_usd, "model": r.model, "replay_of": r.replay_of,
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
    // One line per run (its id is what `hermes cron output` takes), then the first line
    // of what went wrong, if anything did: the run's error, or its delivery's.
    say!(
        "{:>6}  {:<24}  {:<16}  {:<9}  {:<12}  {:<8}  TOKENS",
        "RUN",
        "STARTED",
        "STATUS",
        "SOURCE",
        "JOB",
        "DELIVERY"
    );
    for r in &rows {
        let tokens = match (r.prompt_tokens, r.completion_tokens, r.cost_usd) {
            (Some(p), Some(c), Some(usd)) => {
                format!("{p} in / {c} out, {}", jobs::caps::usd_text(usd))
            }
            (Some(p), Some(c), None) => format!("{p} in / {c} out"),
            _ => "-".to_string(),
        };
        let delivery = r.delivery.as_deref().map_or("-", delivery_outcome);
        say!(
            "{:>6}  {:<24}  {:<16}  {:<9}  {:<12}  {:<8}  {tokens}",
            r.id,
            r.started_at.as_deref().unwrap_or("-"),
            r.status,
            r.source,
            r.job_id,
            delivery,
        );
        let first_line = |text: &str| text.lines().next().unwrap_or("").to_string();
        if let Some(original) = r.replay_of {
            say!("{:>6}  replay of run {original}", "");
        }
        if let Some(error) = r.error.as_deref().filter(|e| !e.trim().is_empty()) {
            say!("{:>6}  {}", "", first_line(error));
        }
        if let Some(failure) = r.delivery.as_deref().filter(|d| d.contains("failed: ")) {
            say!("{:>6}  delivery {}", "", first_line(failure));
        }
    }
    Ok(())
}

/// What `doctor` checks each job against: the home's environment and config.
struct Checkup<'a> {
    session: &'a Session,
    env: crate::environment::Environment,
    vars: crate::agent::inference::Vars,
}

impl Checkup<'_> {
    fn job(&self, job: &jobs::Job, problems: &mut Vec<String>) {
        let label = format!("job {} ({})", job.id(), job.name());
        let found = match job.state() {
            JobState::Scheduled | JobState::Paused => self.readiness(job),
            _ => readiness::files_only(job, &self.session.home.root),
        };
        problems.extend(found.into_iter().map(|f| format!("{label}: {}", f.reason)));
        self.history(job, &label, problems);
    }

    /// What the one readiness judge finds in the job's way (see [`crate::readiness`]).
    fn readiness(&self, job: &jobs::Job) -> Vec<readiness::Finding> {
        let around = readiness::Surroundings {
            home: &self.session.home.root,
            config: &self.session.config,
            env: &self.env,
            vars: &self.vars,
        };
        readiness::judge(job, &around)
    }

    /// Overdue, failed last run, failed delivery.
    fn history(&self, job: &jobs::Job, label: &str, problems: &mut Vec<String>) {
        let ctx = &self.session.ctx;
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
        let last_status = job.last_status();
        let first_line = |error: &str| error.lines().next().unwrap_or("").to_string();
        let error = job.last_error().unwrap_or("unknown error");
        if job.state() == JobState::Error || last_status == Some(RunStatus::Error) {
            problems.push(format!(
                "{label} failed its last run: {}",
                first_line(error)
            ));
        }
        if let Some(stopped) = last_status.filter(RunStatus::is_budget_stop) {
            problems.push(format!(
                "{label} was stopped by a budget on its last run ({stopped}): {}",
                first_line(error)
            ));
        }
        if let Some(error) = job.last_delivery_error() {
            problems.push(format!("{label} could not deliver: {error}"));
        }
    }
}

/// What `doctor` would flag about a job just created or edited (the one readiness
/// judge's findings: provider and key, skills, delivery, script), one line each, for
/// `add` and `edit` to warn about while still saving the job.
pub fn advice(session: &Session, job: &jobs::Job) -> Vec<String> {
    let checkup = Checkup {
        session,
        env: crate::environment::Environment::load(&session.home.root),
        vars: crate::agent::inference::Vars::load(&session.home.root),
    };
    checkup
        .readiness(job)
        .into_iter()
        .map(|f| format!("this job: {}", f.reason))
        .collect()
}

pub async fn doctor(session: &Session) -> Result<(), CliError> {
    let ctx = &session.ctx;
    let mut problems: Vec<String> = Vec::new();
    let daemon = daemon_state(session).await?;
    if !daemon.running {
        problems.push("the scheduler is not running: start it with 'hermes cron daemon'".into());
    }
    if let Some(error) = &daemon.last_error {
        problems.push(format!("the last scheduler pass failed: {error}"));
    }
    for failover in &daemon.failovers {
        match failover_problem(failover) {
            Some(problem) => problems.push(problem),
            None => say!(
                "• the PostgreSQL store failed over at {} (timeline {} → {}) with synchronous \
                 replication: no run was lost or repeated",
                failover.noticed_at.to_rfc3339(),
                failover.previous,
                failover.timeline
            ),
        }
    }
    problems.extend(crate::config::likely_typos(&session.config));
    let jobs = match session.store.load_jobs(ctx).await {
        Ok(jobs) => jobs,
        Err(e) => {
            problems.push(e.to_string());
            Vec::new()
        }
    };
    let checkup = Checkup {
        session,
        env: crate::environment::Environment::load(&session.home.root),
        vars: crate::agent::inference::Vars::load(&session.home.root),
    };
    for job in &jobs {
        checkup.job(job, &mut problems);
    }
    sandbox_checkup(session, &jobs, &mut problems);
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

/// What `doctor` says of a failover with asynchronous replication (`None` for a
/// synchronous one, which lost nothing): when, and each occurrence that may have run
/// twice, one per line.
fn failover_problem(failover: &jobs::store::Failover) -> Option<String> {
    if failover.synchronous {
        return None;
    }
    let mut problem = format!(
        "the PostgreSQL store failed over at {} (timeline {} → {}) with asynchronous \
         replication: what the standby had not received was lost, so an occurrence the old \
         primary had seen run may have run again; {} occurrence(s) were due before the \
         failover and started after it (check their effects; synchronous replication avoids \
         this: docs/STORE.md)",
        failover.noticed_at.to_rfc3339(),
        failover.previous,
        failover.timeline,
        failover.may_repeat.len()
    );
    for occurrence in &failover.may_repeat {
        problem.push_str("\n    ");
        problem.push_str(occurrence);
    }
    Some(problem)
}

/// What `doctor` says of the sandbox (docs/SAFETY.md, "Sandbox"): the kernel's Landlock
/// ABI and seccomp, each job that runs unconfined, and, as a problem, a kernel that
/// cannot confine the jobs that ask for it or a level that is not one.
fn sandbox_checkup(session: &Session, jobs: &[jobs::Job], problems: &mut Vec<String>) {
    use crate::sandbox::{level_of, Level, Support};
    let support = Support::probe();
    say!(
        "Sandbox: Landlock {}, seccomp {}",
        support
            .landlock_abi
            .map_or("absent".to_string(), |abi| format!("ABI {abi}")),
        if support.seccomp { "on" } else { "absent" }
    );
    let mut confined = 0;
    for job in jobs {
        match level_of(job, &session.config) {
            Ok(Level::Off) => say!(
                "! job {} ({}) runs unconfined (sandbox off)",
                job.id(),
                job.name()
            ),
            Ok(_) => confined += 1,
            Err(e) => problems.push(format!("job {} ({}): {e}", job.id(), job.name())),
        }
    }
    if let (Some(missing), true) = (support.missing(), confined > 0) {
        problems.push(format!(
            "{confined} sandboxed job(s) cannot run their tools: {missing}"
        ));
    }
}

/// `hermes cron output RUN`: the output document of one run, wherever the store keeps it.
pub async fn output(session: &Session, run: i64) -> Result<(), CliError> {
    match session.store.run_output(run).await? {
        Some(Some(document)) => {
            say!("{}", document.trim_end());
            Ok(())
        }
        Some(None) => Err(CliError::user(format!(
            "Run {run} has no output document (it saved none, or it was pruned)"
        ))),
        None => Err(CliError::user(format!(
            "No run {run}: see the run ids with 'hermes cron runs'"
        ))),
    }
}
