//! `cancel` and `replay`: acting on a run (docs/COMMANDS.md). Both go through the job
//! service, as the API's and the MCP tool's do.

use std::time::Duration;

use jobs::ledger::RunStatus;

use super::error::CliError;
use super::scheduler_cmd::{print_report, scheduler_for};
use super::Session;

/// How long `cancel` waits to see the runs recorded as ended before it returns.
const WAIT_FOR_END: Duration = Duration::from_secs(10);
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// `hermes cron cancel JOB|RUN`: asks the run(s) to stop, then waits up to 10 s for
/// them to be recorded; exit 1 when nothing was running.
pub async fn cancel(session: &Session, target: &str) -> Result<(), CliError> {
    let service = session.service();
    let requested = service.cancel(target).await?;
    say!("{}", requested.message());
    let store = service.store();
    let deadline = tokio::time::Instant::now() + WAIT_FOR_END;
    loop {
        let rows = store
            .recent_runs(Some(&requested.job_id), 500)
            .await
            .unwrap_or_default();
        let open: Vec<i64> = requested
            .runs
            .iter()
            .copied()
            .filter(|id| {
                rows.iter()
                    .any(|r| r.id == *id && r.status == RunStatus::Running)
            })
            .collect();
        if open.is_empty() {
            for id in &requested.runs {
                let status = rows
                    .iter()
                    .find(|r| r.id == *id)
                    .map_or("ended", |r| r.status.as_str());
                say!("Run {id}: {status}");
            }
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let open: Vec<String> = open.iter().map(i64::to_string).collect();
            say!(
                "Run {} not stopped yet: the process running it stops it when it next looks (if that host is down, the run is marked interrupted when its lease ends).",
                open.join(", ")
            );
            return Ok(());
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// `hermes cron replay RUN`: runs it again now and prints the outcome, as `run` does.
pub async fn replay(session: Session, run: i64) -> Result<(), CliError> {
    let service = session.service();
    let scheduler = scheduler_for(&session, None)?;
    let (replay, report) = service.replay_now(&scheduler, run).await?;
    if let Some(note) = replay.note() {
        say!("{note}");
    }
    print_report(&report);
    if let Some(response) = &report.response {
        say!("\n{response}");
    }
    if report.status == RunStatus::Ok {
        Ok(())
    } else {
        Err(CliError::user(format!(
            "the replay of run {run} ({}) failed (above)",
            report.job_id
        )))
    }
}
