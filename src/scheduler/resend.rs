//! Send it again (`hermes cron redeliver RUN [--to TARGET]`): a finished run's stored
//! output goes out once more — to the job's own targets, or to the one given — with no
//! model request. It is delivered as the run's own delivery was (write-ahead in the
//! outbox under its own key, so a crash mid-send never resends what may have arrived,
//! and passing failures are retried on later passes), and the outcome replaces the run's
//! `delivery` in the ledger. What the run sends:
//!
//! * a run that ended `ok`: its answer (the `## Response` of its output document); an
//!   answer that was `[SILENT]` is refused (there is nothing to send);
//! * any other finished run: its failure notice (its error), as a failure is sent.
//!
//! A run still going, a run that left no document (or whose document was pruned) and a
//! run whose job was removed are refused with what to do.

use std::sync::Arc;

use jobs::ledger::{ledger_time, RunRow, RunStatus};
use jobs::JobError;

use super::record::Bookkeeping;
use super::{RunReport, Scheduler, SchedulerError};
use crate::agent::prompt::{is_silent, response_part};
use crate::delivery::{Delivered, HomeFiles, RunDelivery};

fn refused(message: String) -> SchedulerError {
    SchedulerError::Job(JobError::Invalid(message))
}

impl Scheduler {
    /// Delivers finished run `row` again, to `to` (a `deliver` value) or its job's
    /// targets, and records the outcome on the run.
    pub async fn resend(
        self: &Arc<Self>,
        row: &RunRow,
        to: Option<&str>,
    ) -> Result<RunReport, SchedulerError> {
        let id = row.id;
        if row.status.is_open() {
            return Err(refused(format!(
                "Run {id} has not finished: redeliver it once it has"
            )));
        }
        let to = to
            .map(|to| jobs::target::validate_deliver(to).map_err(|e| refused(format!("--to: {e}"))))
            .transpose()?;
        let (ctx, settings, world) = self.loaded()?;
        let store = self.store();
        let Some(mut job) = store.get_job(&ctx, &row.job_id).await? else {
            return Err(refused(format!(
                "Job {} of run {id} no longer exists: there are no targets to send its output to",
                row.job_id
            )));
        };
        let Some(Some(document)) = store.run_output(id).await? else {
            return Err(refused(format!(
                "Run {id} left no output to send (it saved no document, or the document was pruned)"
            )));
        };
        let answer = response_part(&document).to_string();
        let error = row.error.clone().unwrap_or_else(|| answer.clone());
        let result = match row.status {
            RunStatus::Ok if is_silent(&answer) || answer.is_empty() => {
                return Err(refused(format!(
                "Run {id} answered nothing to send ([SILENT]): there is nothing to deliver again"
            )))
            }
            RunStatus::Ok => Delivered::Reply(&answer),
            _ => Delivered::Failed(&error),
        };
        if let Some(to) = &to {
            job.set_deliver(to);
            job.set_text(jobs::job::TextField::FailureDeliver, None);
        }

        let zone = job.zone(&ctx);
        let books = Bookkeeping {
            // Its own outbox key: each redelivery is a delivery of its own.
            key: format!("{}#resend-{}", row.occurrence, ledger_time(ctx.now)),
            job: &job,
            run_at: ctx.now,
            run_zone: zone,
            now: ctx.now,
            expires: ctx.now
                + chrono::Duration::from_std(settings.delivery_retry)
                    .unwrap_or(chrono::Duration::hours(6)),
        };
        let report = self
            .parts
            .delivery
            .deliver(RunDelivery {
                home: &self.parts.home,
                files: HomeFiles {
                    environment: &world.environment,
                    redactor: &world.redactor,
                    config: &world.config,
                },
                job: &job,
                scheduled_at: scheduled_at(row).unwrap_or(ctx.now),
                result,
                failure_streak: 0,
                wrap_response: settings.wrap_response,
                notify: settings.notify,
                track: Some(&|target, payload| self.track(&books, &job, target, payload)),
            })
            .await;
        self.keep_outcomes(&report, &books).await;
        if let Err(e) = store.set_run_delivery(id, &report.summary).await {
            tracing::error!(job = %row.job_id, run = id, "cannot record the redelivery on the run: {e}");
        }
        tracing::info!(
            job = %row.job_id, run = id, delivery = %report.summary,
            error = report.error.as_deref().unwrap_or(""),
            "run delivered again"
        );
        Ok(RunReport {
            job_id: job.id().to_string(),
            job_name: job.name().to_string(),
            occurrence: row.occurrence.clone(),
            status: if report.error.is_some() {
                RunStatus::Error
            } else {
                RunStatus::Ok
            },
            error: report.error,
            output: None,
            response: None,
            delivery: Some(report.summary),
        })
    }
}

/// The instant the run was due, else when it started.
fn scheduled_at(row: &RunRow) -> Option<chrono::DateTime<chrono::Utc>> {
    row.scheduled_at
        .as_deref()
        .or(row.started_at.as_deref())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
}
