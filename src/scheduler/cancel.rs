//! Cancel: a run stops when its ledger row carries a cancel request (`hermes cron
//! cancel`, `POST /api/jobs/{id}/cancel`, the MCP `cancel` action, or a newer occurrence
//! under `overlap: replace`). The request is written to the store, so the process
//! running the run sees it wherever it runs — this host, or another host on a shared
//! PostgreSQL store: one look a second asks the store about every run going in this
//! process ([`CancelWatch`]). Stopping drops the run's future, and with it the agent's
//! request, its tools and their process groups (every child a tool starts is killed with
//! its group when dropped).
//!
//! A cancelled run is recorded `cancelled`: its output document keeps what it produced
//! so far, no failure incident is opened and nothing is delivered; the job gets its
//! `last_run_at` and `last_status: cancelled`, its schedule, its error streak and its
//! re-run plans untouched.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use chrono::{DateTime, Utc};

use jobs::ledger::{RunEnd, RunStatus};
use jobs::output::OutputDocument;

use super::execute::ClaimedRun;
use super::record::JobRecord;
use super::{lock, RunReport, Scheduler};
use crate::runner::{RunEnv, RunOutcome};

/// How often the running runs' cancel marks are looked at.
const CANCEL_LOOK: Duration = Duration::from_secs(1);

/// The error a cancelled run is recorded with.
pub const CANCELLED: &str =
    "cancelled on request: the run was stopped with its tools and child processes";

/// The runs going in this process and how each is told to stop. A watcher task looks at
/// the store once a second for all of them while there are any, and ends when there
/// are none.
#[derive(Default)]
pub(super) struct CancelWatch {
    runs: Mutex<HashMap<i64, Arc<Notify>>>,
    watching: AtomicBool,
}

/// Takes a run off the watch when its future ends, however it ends.
struct Watched<'a> {
    watch: &'a CancelWatch,
    run: i64,
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        lock(&self.watch.runs).remove(&self.run);
    }
}

impl Scheduler {
    /// Runs `work` to its end, unless a cancel of ledger row `run` is requested first:
    /// then `work` is dropped (stopping everything it started) and `None` returned.
    pub(super) async fn unless_cancelled(
        self: &Arc<Self>,
        run: i64,
        work: impl Future<Output = RunOutcome>,
    ) -> Option<RunOutcome> {
        let stop = Arc::new(Notify::new());
        lock(&self.cancels.runs).insert(run, Arc::clone(&stop));
        let _watched = Watched {
            watch: &self.cancels,
            run,
        };
        if !self.cancels.watching.swap(true, Ordering::AcqRel) {
            tokio::spawn(Arc::clone(self).watch_cancels());
        }
        tokio::select! {
            outcome = work => Some(outcome),
            () = stop.notified() => None,
        }
    }

    /// The watcher: every [`CANCEL_LOOK`], one question to the store for all the runs
    /// going here; each run asked to stop is told so. Ends when no run is left.
    async fn watch_cancels(self: Arc<Self>) {
        let mut look = tokio::time::interval(CANCEL_LOOK);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        look.tick().await;
        loop {
            look.tick().await;
            let runs: Vec<i64> = lock(&self.cancels.runs).keys().copied().collect();
            if runs.is_empty() {
                self.cancels.watching.store(false, Ordering::Release);
                // A run that came in meanwhile either saw the watcher still on (and
                // counts on this one) or started another.
                let empty = lock(&self.cancels.runs).is_empty();
                if empty || self.cancels.watching.swap(true, Ordering::AcqRel) {
                    return;
                }
                continue;
            }
            match self.store().cancels_requested(&runs).await {
                Ok(asked) => {
                    let watched = lock(&self.cancels.runs);
                    for run in asked {
                        if let Some(stop) = watched.get(&run) {
                            // Kept for the run if it is not waiting yet.
                            stop.notify_one();
                        }
                    }
                }
                // The runs go on: a store that cannot be read cannot ask them to stop.
                Err(e) => tracing::warn!("cannot look for cancel requests: {e}"),
            }
        }
    }

    /// Records a cancelled run: its document with what it produced so far, the ledger
    /// row `cancelled` with what it spent, the job's last run and status. No incident,
    /// no delivery.
    pub(super) async fn record_cancelled(
        &self,
        claimed: &ClaimedRun,
        env: &RunEnv,
        started: DateTime<Utc>,
    ) -> RunReport {
        let job = &claimed.job;
        let ctx = jobs::Context {
            now: self.now(),
            ..env.ctx
        };
        let zone = job.zone(&ctx);
        let (so_far, spent) = env.progress.so_far();
        let redactor = &env.world.redactor;
        let text = match so_far.trim() {
            "" => CANCELLED.to_string(),
            so_far => format!("{CANCELLED}\n\n### Produced so far\n\n{so_far}"),
        };
        let text = redactor.redact(&text);
        let prompt = redactor.redact(job.prompt());
        let schedule = job
            .schedule(&ctx)
            .map(|s| s.display().to_string())
            .unwrap_or_default();
        let doc = OutputDocument {
            job_id: job.id(),
            job_name: job.name(),
            schedule: &schedule,
            run_time: started,
            zone,
            prompt: &prompt,
            result: Err(&text),
            gate: None,
        };
        let output = self
            .store()
            .save_output(&doc, claimed.settings.output_retention)
            .await
            .map_err(|e| tracing::error!(job = job.id(), "cannot save the output document: {e}"))
            .ok();
        self.record_in_store(JobRecord::cancelled(
            job.id(),
            started,
            zone,
            claimed.source,
        ))
        .await;
        let delivery = "none: the run was cancelled".to_string();
        let end = RunEnd {
            error: Some(CANCELLED.to_string()),
            delivery: Some(delivery.clone()),
            prompt_tokens: spent.prompt_tokens,
            completion_tokens: spent.completion_tokens,
            cost_usd: spent.cost_usd,
            model: spent.model.clone(),
            output: output.clone(),
            identity: Some(claimed.identity(started)),
        };
        if let Err(e) = self
            .store()
            .finish_run(claimed.run, RunStatus::Cancelled, self.now(), &end)
            .await
        {
            tracing::error!(job = job.id(), "cannot record the run in the ledger: {e}");
        }
        self.observe(|o| o.run_ended(&RunStatus::Cancelled));
        let outcome = RunOutcome::failed(String::new(), String::new()).with_spent(spent);
        self.observe_spend(job, &outcome);
        RunReport {
            job_id: job.id().to_string(),
            job_name: job.name().to_string(),
            occurrence: claimed.occurrence(),
            status: RunStatus::Cancelled,
            error: Some(CANCELLED.to_string()),
            output,
            response: None,
            delivery: Some(delivery),
        }
    }
}
