//! Cancel: a run stops when its ledger row carries a cancel request (`hermes cron
//! cancel`, `POST /api/jobs/{id}/cancel`, the MCP `cancel` action, or a newer occurrence
//! under `overlap: replace`). The request is written to the store, so the process
//! running the run sees it wherever it runs — this host, or another host on a shared
//! PostgreSQL store: it looks every [`CANCEL_LOOK`] while the run goes on. Stopping
//! drops the run's future, and with it the agent's request, its tools and their process
//! groups (every child a tool starts is killed with its group when dropped).
//!
//! A cancelled run is recorded `cancelled`: its output document keeps what it produced
//! so far, no failure incident is opened and nothing is delivered; the job gets its
//! `last_run_at` and `last_status: cancelled`, its schedule, its error streak and its
//! re-run plans untouched.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};

use jobs::ledger::{RunEnd, RunStatus};
use jobs::output::OutputDocument;

use super::execute::ClaimedRun;
use super::record::JobRecord;
use super::{RunReport, Scheduler};
use crate::environment::Environment;
use crate::redact::Redactor;
use crate::runner::{RunEnv, RunOutcome};

/// How often a running run's cancel mark is looked at.
const CANCEL_LOOK: Duration = Duration::from_secs(1);

/// The error a cancelled run is recorded with.
pub const CANCELLED: &str =
    "cancelled on request: the run was stopped with its tools and child processes";

impl Scheduler {
    /// Runs `work` to its end, unless a cancel of ledger row `run` is requested first:
    /// then `work` is dropped (stopping everything it started) and `None` returned.
    pub(super) async fn unless_cancelled(
        &self,
        run: i64,
        work: impl Future<Output = RunOutcome>,
    ) -> Option<RunOutcome> {
        tokio::pin!(work);
        let mut look = tokio::time::interval(CANCEL_LOOK);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                outcome = &mut work => return Some(outcome),
                _ = look.tick() => match self.store().cancel_requested(run).await {
                    Ok(true) => return None,
                    Ok(false) => {}
                    // The run goes on: a store that cannot be read cannot ask to stop it.
                    Err(e) => tracing::warn!(run, "cannot look for a cancel request: {e}"),
                },
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
        let redactor = Redactor::from_sources(&Environment::load(&self.parts.home), &env.config);
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
        };
        if let Err(e) = self
            .store()
            .finish_run(claimed.run, RunStatus::Cancelled, self.now(), &end)
            .await
        {
            tracing::error!(job = job.id(), "cannot record the run in the ledger: {e}");
        }
        self.observe(|o| o.run_ended(RunStatus::Cancelled));
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
