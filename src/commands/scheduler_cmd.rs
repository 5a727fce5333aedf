//! `daemon`, `tick` and `run`: the verbs that run jobs, all through [`Scheduler`].

use std::sync::Arc;

use jobs::ledger::{RunSource, RunStatus};
use jobs::{find_job, JobState, JobStore};

use super::Session;
use crate::error::CliError;
use crate::hermes_runner::HermesRunner;
use crate::home::Home;
use crate::scheduler::{RunReport, Scheduler};

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::internal(format!("cannot start the async runtime: {e}")))
}

fn open_scheduler(session: Session) -> Result<Arc<Scheduler>, CliError> {
    let home = Home {
        root: session.home.root,
    };
    Scheduler::open(home, Arc::new(HermesRunner))
}

pub fn daemon(session: Session) -> Result<(), CliError> {
    let scheduler = open_scheduler(session)?;
    runtime()?.block_on(crate::daemon::run_daemon(scheduler))
}

fn print_report(report: &RunReport) {
    let status = report.status.as_str();
    say!(
        "{} {} ({}): {status}",
        report.occurrence,
        report.job_name,
        report.job_id
    );
    if let Some(error) = &report.error {
        say!("  error: {error}");
    }
    if let Some(path) = &report.output_path {
        say!("  output: {}", path.display());
    }
    if let Some(delivery) = &report.delivery {
        say!("  delivery: {delivery}");
    }
}

pub fn tick(session: Session) -> Result<(), CliError> {
    let scheduler = open_scheduler(session)?;
    runtime()?.block_on(async move {
        let report = scheduler.pass().await?;
        if !report.ran {
            say!("Another scheduler is running a pass; nothing done.");
            return Ok(());
        }
        if report.pending.is_empty() {
            say!("Nothing due.");
        }
        let mut handles = Vec::new();
        for pending in report.pending {
            handles.push(tokio::spawn(pending.run(Arc::clone(&scheduler))));
        }
        for handle in handles {
            match handle.await {
                Ok(report) => print_report(&report),
                Err(e) => eprintln!("error: a run failed to complete: {e}"),
            }
        }
        Ok(())
    })
}

pub fn run(session: Session, reference: &str) -> Result<(), CliError> {
    let jobs = session.store.load_jobs(&session.ctx)?;
    let job = find_job(&jobs, reference)?.clone();
    if job.state() == JobState::Paused {
        return Err(CliError::user(format!(
            "Job {} is paused; resume it first with 'hermes cron resume {}'",
            job.id(),
            job.id()
        )));
    }
    let scheduler = open_scheduler(session)?;
    let (ctx, settings) = scheduler.context()?;
    let row = scheduler.claim_manual(&job, ctx.now)?;
    let report = runtime()?.block_on(Arc::clone(&scheduler).execute(
        job,
        None,
        row,
        RunSource::Manual,
        settings,
    ));
    print_report(&report);
    if let Some(response) = &report.response {
        say!("\n{response}");
    }
    if report.status == RunStatus::Ok {
        Ok(())
    } else {
        Err(CliError::user(format!(
            "the run failed: {}",
            report.error.as_deref().unwrap_or("unknown error")
        )))
    }
}
