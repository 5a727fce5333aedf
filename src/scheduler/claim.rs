//! Find due and claim: one pass asks the store to decide what is due and to claim each
//! occurrence before anything runs, then turns the claims into work. Missed one-shots
//! get a note in their output, skipped ones a log line; under the global pause nothing
//! is claimed. Nothing here runs a job.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use jobs::due::{run_claim_ttl, Decision, ScanOptions};
use jobs::estop::GlobalPause;
use jobs::ledger::{occurrence_key, RunSource, RunStatus};
use jobs::output::{missed_note, OutputDocument};
use jobs::store::{Claimed, DueScan, Occurrence};
use jobs::{Context, Job};

use super::execute::ClaimedRun;
use super::settings::CronSettings;
use super::{lock, PassReport, Pending, RunReport, Scheduler, SchedulerError};
use crate::global_pause;
use crate::logged::logged;

/// Ledger rows kept per job.
const RUNS_KEPT_PER_JOB: usize = 1000;
/// How soon a paused scheduler looks whether it was resumed (a resume on PostgreSQL
/// also wakes it at once).
const PAUSED_LOOK: std::time::Duration = std::time::Duration::from_secs(1);

impl Scheduler {
    /// One scheduler pass: claims due occurrences and due delivery retries. Returns at
    /// once when another scheduler is in the middle of a pass on the same store.
    pub async fn pass(self: &Arc<Self>) -> Result<PassReport, SchedulerError> {
        let (ctx, settings) = self.context()?;
        if let Some(pause) = global_pause::engaged(&self.parts.home, self.store()).await? {
            return Ok(self.paused_pass(&pause, ctx.now).await);
        }
        self.pause_noted.store(false, Ordering::Relaxed);
        let running = lock(&self.running).ids();
        let scan = DueScan {
            options: ScanOptions {
                catch_up_missed: settings.catch_up_missed,
                claim_owner: &self.parts.claim_owner,
                run_claim_ttl: run_claim_ttl(settings.inactivity_timeout.map(|t| t.as_secs())),
                catch_up_spread: settings.catch_up_spread,
            },
            completed_retention: chrono::Duration::days(settings.completed_retention_days.max(0)),
            running_here: &running,
            free_slots: self.free_slots(),
        };
        let started = std::time::Instant::now();
        let due = self.store().claim_due(&ctx, &scan).await?;
        let claimed_in = started.elapsed();
        let occurrences = due.occurrences.len();
        if !due.ran {
            return Ok(PassReport {
                pending: Vec::new(),
                recorded: Vec::new(),
                next_wake: None,
                ran: false,
                backlog: false,
            });
        }
        let mut pending: Vec<Pending> = Vec::new();
        let mut recorded: Vec<RunReport> = Vec::new();
        for occurrence in due.occurrences {
            match self.settle(occurrence, &ctx, &settings).await {
                Settled::Work(work) => pending.push(work),
                Settled::Recorded(report) => recorded.push(report),
                Settled::Nothing => {}
            }
        }
        pending.extend(self.claim_chains(&ctx, &settings).await);
        let (retries, retry_wake) = self.claim_redeliveries(ctx.now).await;
        pending.extend(retries.into_iter().map(Pending::Redeliver));
        let week_ago = ctx.now - chrono::Duration::days(7);
        let spend_since = ctx.now - chrono::Duration::days(jobs::spend::SPEND_KEPT_DAYS);
        if let Err(e) = self
            .store()
            .prune_history(week_ago, RUNS_KEPT_PER_JOB, spend_since)
            .await
        {
            tracing::warn!("cannot prune the run history: {e}");
        }
        // A store with its own clock (a database) says when jobs are due by that clock:
        // the wake-up moves onto this host's clock, so a host whose clock runs ahead
        // neither spins nor fires early.
        // What one pass costs this host (the PostgreSQL bench reads it from a daemon's
        // log: `RUST_LOG=hermes::scheduler=debug`).
        tracing::debug!(
            pass_ms = started.elapsed().as_secs_f64() * 1000.0,
            claim_ms = claimed_in.as_secs_f64() * 1000.0,
            occurrences,
            "pass done"
        );
        let skew = due
            .decided_at
            .map_or(chrono::Duration::zero(), |t| t - ctx.now);
        Ok(PassReport {
            pending,
            recorded,
            next_wake: [due.next_wake.map(|at| at - skew), retry_wake]
                .into_iter()
                .flatten()
                .min(),
            ran: true,
            backlog: due.backlog,
        })
    }

    /// A pass under the global pause: no due job is claimed (each stays due, its
    /// schedule unmoved, and fires at the first pass after the resume); deliveries of
    /// runs that already happened are still retried. The pause is looked at again soon.
    async fn paused_pass(&self, pause: &GlobalPause, now: DateTime<Utc>) -> PassReport {
        if !self.pause_noted.swap(true, Ordering::Relaxed) {
            let reason = pause.reason.as_deref().unwrap_or("none given");
            tracing::info!("paused by `hermes pause` (reason: {}): no due job is claimed until `hermes resume`", logged(reason));
        }
        let (retries, retry_wake) = self.claim_redeliveries(now).await;
        let look_again = now + chrono::Duration::from_std(PAUSED_LOOK).unwrap_or_default();
        PassReport {
            pending: retries.into_iter().map(Pending::Redeliver).collect(),
            recorded: Vec::new(),
            next_wake: Some(retry_wake.map_or(look_again, |at| at.min(look_again))),
            ran: true,
            backlog: false,
        }
    }

    /// What to do about one decided occurrence: the work to run, an outcome recorded
    /// without a run (missed, skipped), or nothing (logged).
    async fn settle(
        &self,
        occurrence: Occurrence,
        ctx: &Context,
        settings: &CronSettings,
    ) -> Settled {
        let Occurrence {
            job,
            decision,
            claimed,
        } = occurrence;
        let id = job.id().to_string();
        match (&decision, claimed) {
            (Decision::Fire { scheduled_at, .. }, Claimed::Run { run }) => {
                lock(&self.running).insert(id);
                let late = (ctx.now - *scheduled_at).to_std().unwrap_or_default();
                self.observe(|o| o.fired_late(late));
                Settled::Work(Pending::Run(ClaimedRun {
                    job,
                    scheduled_at: Some(*scheduled_at),
                    claimed_at: ctx.now,
                    run,
                    source: RunSource::Scheduler,
                    settings: settings.clone(),
                    queued: self.enqueue(),
                    upstream: None,
                    replay_of: None,
                }))
            }
            (Decision::Missed { scheduled_at }, Claimed::Recorded { status, reason }) => {
                self.observe(|o| o.run_ended(&status));
                self.leave_missed_note(&job, *scheduled_at, ctx, settings)
                    .await;
                tracing::info!(job = %id, outcome = status.as_str(), "{reason}");
                Settled::Recorded(recorded_report(
                    &job,
                    occurrence_key(&id, *scheduled_at),
                    status,
                    reason,
                ))
            }
            (decision, Claimed::Recorded { status, reason }) => {
                self.observe(|o| o.run_ended(&status));
                tracing::info!(job = %id, outcome = status.as_str(), "{reason}");
                let occurrence = match decision {
                    Decision::Fire { scheduled_at, .. } => occurrence_key(&id, *scheduled_at),
                    _ => id.clone(),
                };
                Settled::Recorded(recorded_report(&job, occurrence, status, reason))
            }
            (_, Claimed::Taken) => {
                tracing::info!(job = %id, "occurrence already in the ledger; not running it again");
                Settled::Nothing
            }
            (_, Claimed::Failed { error }) => {
                tracing::error!(job = %id, "cannot claim occurrence, not running it: {error}");
                Settled::Nothing
            }
            (Decision::Broken { reason }, _) => {
                tracing::error!(job = %id, "cannot schedule job: {reason}");
                Settled::Nothing
            }
            (Decision::Deferred { scheduled_at, to }, _) => {
                tracing::info!(
                    job = %id,
                    scheduled = %scheduled_at,
                    "overdue; starts at {to} (its turn in cron.catch_up_spread, or its --start-at)"
                );
                Settled::Nothing
            }
            (Decision::Completed { scheduled_at }, _) => {
                tracing::info!(
                    job = %id,
                    scheduled = %scheduled_at,
                    "one-shot dispatched before by a run that never recorded its end; marked completed, not run again"
                );
                Settled::Nothing
            }
            (_, Claimed::Settled | Claimed::Run { .. }) => Settled::Nothing,
        }
    }

    /// A missed one-shot's output tells the user what happened to it.
    async fn leave_missed_note(
        &self,
        job: &Job,
        scheduled_at: DateTime<Utc>,
        ctx: &Context,
        settings: &CronSettings,
    ) {
        let zone = job.zone(ctx);
        let when = schedules::format_instant(scheduled_at, zone);
        let note = missed_note(&when);
        let doc = OutputDocument {
            job_id: job.id(),
            job_name: job.name(),
            schedule: &when,
            run_time: ctx.now,
            zone,
            prompt: "",
            result: Err(&note),
            gate: None,
        };
        if let Err(e) = self
            .store()
            .save_output(&doc, settings.output_retention)
            .await
        {
            tracing::warn!(job = job.id(), "cannot write the missed note: {e}");
        }
    }

    /// Claims a manual run of a job: refused while the job runs in this process or
    /// anywhere the store can see.
    pub(super) async fn claim_manual(&self, job: Job) -> Result<ClaimedRun, SchedulerError> {
        if lock(&self.running).contains(job.id()) {
            return Err(SchedulerError::AlreadyRunning(job.id().to_string()));
        }
        let (ctx, settings) = self.context()?;
        let run = self.store().claim_manual(job.id(), ctx.now).await?;
        lock(&self.running).insert(job.id().to_string());
        Ok(ClaimedRun {
            job,
            scheduled_at: None,
            claimed_at: ctx.now,
            run,
            source: RunSource::Manual,
            settings,
            queued: None,
            upstream: None,
            replay_of: None,
        })
    }
}

/// What settling one occurrence came to.
enum Settled {
    Work(Pending),
    Recorded(RunReport),
    Nothing,
}

/// The report of an outcome recorded without a run, for `hermes cron tick` to print.
fn recorded_report(job: &Job, occurrence: String, status: RunStatus, reason: String) -> RunReport {
    RunReport {
        job_id: job.id().to_string(),
        job_name: job.name().to_string(),
        occurrence,
        status,
        error: Some(reason),
        output: None,
        response: None,
        delivery: None,
    }
}
