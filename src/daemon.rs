//! `hermes cron daemon`: sleep until the earliest due job (never more than 60 s), wake
//! within a second when jobs.json changes, run passes, keep the heartbeat files, and on
//! SIGTERM/SIGINT stop taking work and let running jobs finish for up to 30 s.
//! A failed pass is logged and recorded; the loop never dies of it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::Utc;
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinSet;

use crate::error::CliError;
use crate::scheduler::{write_ticker_file, RunReport, Scheduler};

/// The longest the daemon sleeps between passes.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// How often jobs.json is checked for changes while sleeping.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long running jobs may finish after a stop signal.
const DRAIN: Duration = Duration::from_secs(30);

fn modified(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn epoch_now() -> String {
    let now = Utc::now();
    format!("{}.{:03}", now.timestamp(), now.timestamp_subsec_millis())
}

pub async fn run_daemon(scheduler: Arc<Scheduler>) -> Result<(), CliError> {
    let cron_dir = scheduler.cron_dir();
    let jobs_path = cron_dir.join("jobs.json");
    let mut sigterm = signal(SignalKind::terminate())
        .map_err(|e| CliError::internal(format!("cannot listen for SIGTERM: {e}")))?;
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| CliError::internal(format!("cannot listen for SIGINT: {e}")))?;
    match scheduler.recover_interrupted() {
        Ok(0) => {}
        Ok(n) => tracing::warn!("{n} run(s) left running by a stopped process marked interrupted"),
        Err(e) => tracing::error!("cannot check the ledger for interrupted runs: {e}"),
    }
    write_ticker_file(
        &cron_dir,
        "daemon.pid",
        &format!("{}\n", std::process::id()),
    );
    tracing::info!(pid = std::process::id(), home = %cron_dir.display(), "scheduler started");
    let mut running: JoinSet<RunReport> = JoinSet::new();
    'main: loop {
        write_ticker_file(&cron_dir, "ticker_heartbeat", &epoch_now());
        let mut next_wake = None;
        match scheduler.pass().await {
            Ok(report) => {
                for pending in report.pending {
                    running.spawn(pending.run(Arc::clone(&scheduler)));
                }
                next_wake = report.next_wake;
                if report.ran {
                    write_ticker_file(&cron_dir, "ticker_last_success", &epoch_now());
                }
            }
            Err(e) => {
                tracing::error!("scheduler pass failed: {e}");
                write_ticker_file(
                    &cron_dir,
                    "ticker_last_error",
                    &format!("{}\n{e}\n", epoch_now()),
                );
            }
        }
        while running.try_join_next().is_some() {}
        let sleep_for = next_wake
            .map(|at| (at - Utc::now()).to_std().unwrap_or(Duration::ZERO))
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        let deadline = tokio::time::Instant::now() + sleep_for;
        let seen = modified(&jobs_path);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                _ = tokio::time::sleep(WATCH_EVERY) => {
                    if modified(&jobs_path) != seen {
                        break;
                    }
                }
                Some(_) = running.join_next() => {}
                _ = sigterm.recv() => break 'main,
                _ = sigint.recv() => break 'main,
            }
        }
    }
    tracing::info!(
        running = running.len(),
        "stopping: no new runs; waiting up to 30 s for running jobs"
    );
    let drained = tokio::time::timeout(DRAIN, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            "{} run(s) still going after 30 s; stopping them",
            running.len()
        );
        running.abort_all();
        while running.join_next().await.is_some() {}
    }
    // Whatever did not finish is recorded as interrupted (its process is this one).
    let _ = scheduler.mark_own_running_interrupted();
    write_ticker_file(&cron_dir, "ticker_heartbeat", "0");
    tracing::info!("scheduler stopped");
    Ok(())
}
