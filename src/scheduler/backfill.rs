//! Backfill (`hermes cron backfill JOB --from ISO --to ISO`, docs/COMMANDS.md): each
//! occurrence of a job's schedule in a past window runs once, oldest first, at most
//! `cron.max_parallel_jobs` at a time, each told in its prompt which occurrence it
//! stands for. An occurrence is claimed in the run ledger under the key the scheduler's
//! own fire of it has, so running the command again — or an occurrence the scheduler
//! already ran — runs nothing twice. The job's schedule and counters are not moved.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use jobs::ledger::RunSource;
use jobs::Job;

use super::execute::ClaimedRun;
use super::{RunReport, Scheduler, SchedulerError};

/// One occurrence of a backfill: when it was due, and the instant its ledger key
/// carries (the occurrence moved by the job's jitter, as the scheduler fires it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillOccurrence {
    pub occurrence: DateTime<Utc>,
    pub key_at: DateTime<Utc>,
}

/// What became of one occurrence.
#[derive(Debug)]
pub enum Backfilled {
    Ran(RunReport),
    /// The ledger had it already (an earlier backfill, or the scheduler): not run.
    AlreadyRun(BackfillOccurrence),
}

/// The per-run context that tells the agent which occurrence it stands for.
pub fn occurrence_context(occurrence: DateTime<Utc>, zone: chrono_tz::Tz) -> String {
    let local = occurrence.with_timezone(&zone);
    format!(
        "This is a backfill run for the scheduled occurrence of {} ({}), which did not run at its time. Do the work as of that occurrence.",
        schedules::format_instant(occurrence, zone),
        local.format("%A %-d %B %Y, %H:%M %Z")
    )
}

impl Scheduler {
    /// Runs `occurrences` of `job`, oldest first, at most `parallel` at a time (`None`:
    /// all at once); returns what became of each, in that order.
    pub async fn backfill(
        self: &Arc<Self>,
        job: &Job,
        occurrences: &[BackfillOccurrence],
        parallel: Option<usize>,
    ) -> Result<Vec<Backfilled>, SchedulerError> {
        let slots = Arc::new(Semaphore::new(parallel.unwrap_or(occurrences.len()).max(1)));
        let mut running = JoinSet::new();
        let mut outcomes: Vec<Option<Backfilled>> = Vec::new();
        for (index, &at) in occurrences.iter().enumerate() {
            // Taken before the claim: occurrences start in order, a claim is never left
            // waiting for a slot.
            let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            let (ctx, settings) = self.context()?;
            let claimed = self
                .store()
                .claim_backfill(job.id(), at.key_at, ctx.now)
                .await?;
            let Some(run) = claimed else {
                outcomes.push(Some(Backfilled::AlreadyRun(at)));
                continue;
            };
            outcomes.push(None);
            let context = occurrence_context(at.occurrence, job.zone(&ctx));
            let claimed = ClaimedRun {
                job: job.clone().with_run_context(&context),
                scheduled_at: Some(at.key_at),
                claimed_at: ctx.now,
                run,
                source: RunSource::Backfill,
                replay_of: None,
                settings,
                queued: None,
                upstream: None,
            };
            let this = Arc::clone(self);
            running.spawn(async move {
                let report = this.execute(claimed).await;
                drop(permit);
                (index, report)
            });
        }
        while let Some(done) = running.join_next().await {
            match done {
                Ok((index, report)) => {
                    if let Some(slot) = outcomes.get_mut(index) {
                        *slot = Some(Backfilled::Ran(report));
                    }
                }
                Err(e) => tracing::error!("a backfill run failed to complete: {e}"),
            }
        }
        Ok(outcomes.into_iter().flatten().collect())
    }
}
