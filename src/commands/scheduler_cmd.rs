//! `daemon`, `tick` and `run`: the verbs that run jobs. Each builds the scheduler from
//! the same parts ([`scheduler_for`]) and drives it its own way.

use std::sync::Arc;

use jobs::ledger::RunStatus;
use tokio::signal::unix::{signal, SignalKind};

use super::error::CliError;
use super::Session;
use crate::delivery::platform_delivery::PlatformDelivery;
use crate::hermes_runner::HermesRunner;
use crate::job_service::WhenPaused;
use crate::process::host_name;
use crate::scheduler::{self, Parts, RunReport, Scheduler};

/// The scheduler of this home: its store, the system clock, the Hermes runner and
/// delivery over the real platform APIs, settings read from the home on every pass.
pub(crate) fn scheduler_for(
    session: &Session,
    observer: Option<Arc<dyn scheduler::Observer>>,
) -> Result<Arc<Scheduler>, CliError> {
    let home = session.home.root.clone();
    Ok(Scheduler::new(Parts {
        store: Arc::clone(&session.store),
        clock: Arc::clone(&session.clock),
        runner: Arc::new(HermesRunner),
        delivery: Arc::new(PlatformDelivery::new(home.clone())),
        settings: None,
        claim_owner: jobs::due::run_claim_owner(
            std::env::var("HERMES_MACHINE_ID").ok().as_deref(),
            &host_name(),
            std::process::id(),
        ),
        home,
        observer,
    })?)
}

/// Completes on SIGTERM or SIGINT.
pub(crate) async fn stop_signal() -> Result<impl std::future::Future<Output = ()>, CliError> {
    let mut sigterm = signal(SignalKind::terminate())
        .map_err(|e| CliError::internal(format!("cannot listen for SIGTERM: {e}")))?;
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| CliError::internal(format!("cannot listen for SIGINT: {e}")))?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
    })
}

/// The scheduler until SIGTERM or SIGINT, and beside it the HTTP API when
/// `API_SERVER_KEY` asks for it; one signal stops both.
pub async fn daemon(session: Session) -> Result<(), CliError> {
    let job_series = session
        .config
        .cron
        .metrics_job_series
        .map_or(crate::api::spend_metrics::DEFAULT_JOB_SERIES, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    let metrics = Arc::new(crate::api::Metrics::with_job_series(job_series));
    let observer: Arc<dyn scheduler::Observer> = metrics.clone();
    let scheduler = scheduler_for(&session, Some(observer))?;
    // Both HTTP route families address jobs by id.
    let jobs = session
        .service()
        .addressed_by(crate::job_service::Addressing::Id);
    {
        let signal = stop_signal().await?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let api_state = crate::api::ApiState {
            jobs,
            scheduler: Arc::clone(&scheduler),
            home: session.home.root.clone(),
            metrics,
        };
        let mut api_stopped = stopped.clone();
        let api = crate::api::start(api_state, async move {
            let _ = api_stopped.wait_for(|stop| *stop).await;
        })
        .await;
        let result = scheduler::run(scheduler, async move {
            signal.await;
            let _ = stop.send(true);
        })
        .await;
        if let Some(api) = api {
            let _ = api.await;
        }
        drop(stopped);
        Ok(result?)
    }
}

pub(crate) fn print_report(report: &RunReport) {
    let status = report.status.as_str();
    say!(
        "{} {} ({}): {status}",
        report.occurrence,
        report.job_name,
        report.job_id
    );
    if let Some(error) = &report.error {
        // A missed or skipped occurrence did not fail: say why, not "error".
        let label = match report.status {
            RunStatus::Missed | RunStatus::Skipped | RunStatus::Cancelled => "reason",
            _ => "error",
        };
        say!("  {label}: {error}");
    }
    if let Some(output) = &report.output {
        say!("  output: {output}");
    }
    if let Some(delivery) = &report.delivery {
        say!("  delivery: {delivery}");
    }
}

pub async fn tick(session: Session) -> Result<(), CliError> {
    let scheduler = scheduler_for(&session, None)?;
    let paused = session.service().global_pause().await?;
    let reports = scheduler.tick().await?;
    match (reports, paused) {
        (None, _) => say!("Another scheduler is running a pass; nothing done."),
        (Some(reports), Some(pause)) if reports.is_empty() => say!(
            "Hermes is paused{}: no due job was claimed. Lift it with: hermes resume",
            pause
                .reason
                .map_or(String::new(), |r| format!(" (reason: {r})"))
        ),
        (Some(reports), _) if reports.is_empty() => say!("Nothing due."),
        (Some(reports), _) => reports.iter().for_each(print_report),
    }
    Ok(())
}

/// `hermes cron redeliver RUN [--to TARGET]`: the run's output sent again; fails
/// (exit 1) when nothing arrived.
pub async fn redeliver(session: Session, run: i64, to: Option<&str>) -> Result<(), CliError> {
    let service = session.service();
    let scheduler = scheduler_for(&session, None)?;
    let report = service.redeliver(&scheduler, run, to).await?;
    let delivery = report.delivery.as_deref().unwrap_or("");
    match &report.error {
        None => {
            say!("Run {run} of {} delivered again: {delivery}", report.job_id);
            Ok(())
        }
        Some(error) => Err(CliError::user(format!(
            "Run {run} of {} was not delivered again: {error} ({delivery})",
            report.job_id
        ))),
    }
}

pub async fn run(session: Session, reference: &str) -> Result<(), CliError> {
    let service = session.service();
    let scheduler = scheduler_for(&session, None)?;
    let report = service
        .run_now(&scheduler, reference, WhenPaused::Refuse, None)
        .await?;
    print_report(&report);
    if let Some(response) = &report.response {
        say!("\n{response}");
    }
    if report.status == RunStatus::Ok {
        Ok(())
    } else {
        // The error is printed above with the report; the exit status says it failed.
        Err(CliError::user(format!(
            "the run of {} failed (above)",
            report.job_id
        )))
    }
}
