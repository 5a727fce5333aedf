//! Budgets in the scheduler (docs/AGENT.md, "Budgets" and "Global spend caps"): a run's
//! wall-clock cap (`max_runtime_seconds`: the run is cancelled with its tools and child
//! processes), the global daily and monthly caps looked at before an agent job is sent to
//! the model, and where the one notice of a spent window goes. What is spent and when a
//! cap is reached are [`jobs::spend`]'s decisions on the store's sums; nothing here
//! reads the wall clock or prices a request (the agent does, per request).

use std::time::Duration;

use jobs::caps::duration_text;
use jobs::ledger::RunStatus;
use jobs::spend::{self, GlobalCaps};
use jobs::Job;

use super::execute::{run_watched, ClaimedRun};
use super::Scheduler;
use crate::config::Config;
use crate::runner::{BudgetCap, OverBudget, RunEnv, RunOutcome, RunResult};

/// The global caps of config.yaml's `cron.budget`.
fn global_caps(config: &Config) -> GlobalCaps {
    let budget = &config.cron.budget;
    GlobalCaps {
        daily_usd: budget.daily_usd.map(|usd| usd.0),
        monthly_usd: budget.monthly_usd.map(|usd| usd.0),
    }
}

/// The ledger status of a run stopped by a cap, `None` for any other outcome.
pub(super) fn status_of(outcome: &RunOutcome) -> Option<RunStatus> {
    match &outcome.result {
        RunResult::OverBudget(OverBudget {
            cap: BudgetCap::Job,
            ..
        }) => Some(RunStatus::BudgetExceeded),
        RunResult::OverBudget(OverBudget {
            cap: BudgetCap::Global { .. },
            ..
        }) => Some(RunStatus::BudgetExhausted),
        _ => None,
    }
}

/// For a run the global budget kept from the model: whether it carries its window's one
/// notice.
pub(super) fn exhausted_notice(outcome: &RunOutcome) -> Option<bool> {
    match &outcome.result {
        RunResult::OverBudget(OverBudget {
            cap: BudgetCap::Global { notice },
            ..
        }) => Some(*notice),
        _ => None,
    }
}

/// Where the notice of a spent window goes: `cron.budget.notify` when set (the job as
/// delivered then carries it as both its targets), else the job's own failure lane.
pub(super) fn notice_job(job: &Job, config: &Config) -> Job {
    let Some(target) = config.cron.budget.notify.as_deref() else {
        return job.clone();
    };
    let mut notified = job.clone();
    notified.set_deliver(target);
    notified.set_text(jobs::job::TextField::FailureDeliver, Some(target));
    notified
}

impl Scheduler {
    /// Tells the observer what a recorded run spent (runs that reported usage only).
    pub(super) fn observe_spend(&self, job: &Job, outcome: &RunOutcome) {
        let spent = (
            outcome.model.as_deref(),
            outcome.prompt_tokens,
            outcome.completion_tokens,
        );
        if let (Some(model), Some(prompt), Some(completion)) = spent {
            self.observe(|o| o.run_spent(job.id(), model, prompt, completion, outcome.cost_usd));
        }
    }

    /// Runs a claimed job within its budgets: an agent job is not run at all while a
    /// global cap is spent; any job is watched for inactivity as always and cancelled
    /// at its `max_runtime_seconds`.
    pub(super) async fn run_within_budget(&self, claimed: &ClaimedRun, env: &RunEnv) -> RunOutcome {
        let job = &claimed.job;
        if job.kind().runs_agent() {
            if let Some(kept) = self.global_budget_spent(job, env).await {
                return kept;
            }
        }
        let run = run_watched(self.parts.runner.as_ref(), job, env);
        let Some(seconds) = job.caps().max_runtime_seconds else {
            return run.await;
        };
        match tokio::time::timeout(Duration::from_secs(seconds), run).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // The run's future is dropped: its tools and children stop with it.
                let (so_far, spent) = env.progress.so_far();
                let stop = OverBudget {
                    cap: BudgetCap::Job,
                    error: format!(
                        "max_runtime {} reached: the run was stopped with its tools and child processes",
                        duration_text(seconds)
                    ),
                    so_far,
                };
                RunOutcome::of(job.prompt().to_string(), RunResult::OverBudget(stop))
                    .with_spent(spent)
            }
        }
    }

    /// The outcome of an agent run kept from the model because a global cap of the
    /// window it falls in is spent (`None`: there is room, or no cap). The first such
    /// run of a window on the store carries the window's one notice.
    async fn global_budget_spent(&self, job: &Job, env: &RunEnv) -> Option<RunOutcome> {
        let caps = global_caps(&env.world.config);
        let now = self.now();
        let mut spent = Vec::new();
        for (window, cap) in caps.windows(now) {
            match self.store().spend_since(window.start).await {
                Ok(rows) => spent.push((window, cap, spend::total_cost(&rows))),
                Err(e) => {
                    return Some(RunOutcome::failed(
                        job.prompt().to_string(),
                        format!("cannot read what cron runs spent, so the run was not sent to the model: {e}"),
                    ))
                }
            }
        }
        let exhausted = spend::exhausted(&spent)?;
        let key = exhausted.window.key();
        let notice = match self.store().claim_budget_notice(&key, now).await {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(window = %key, "cannot record the budget notice: {e}");
                false
            }
        };
        tracing::info!(job = job.id(), window = %key, "not sent to the model: {}", exhausted.message());
        let stop = OverBudget {
            cap: BudgetCap::Global { notice },
            error: exhausted.message(),
            so_far: String::new(),
        };
        Some(RunOutcome::of(
            job.prompt().to_string(),
            RunResult::OverBudget(stop),
        ))
    }
}
