//! Execute: run one claimed occurrence with the runner, within the parallelism limit,
//! stopping it when it shows no activity for `HERMES_CRON_TIMEOUT`, and keeping a
//! running one-shot's `run_claim` fresh for other schedulers on the store. What the run
//! produced goes to [`super::record`]; nothing here writes an outcome.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use jobs::ledger::{occurrence_key, RunRequest, RunSource};
use jobs::Job;

use super::settings::CronSettings;
use super::{lock, RunReport, Scheduler, SchedulerError};
use crate::runner::{Activity, RunEnv, RunOutcome, Runner};
use crate::world::World;

/// How often a running one-shot's `run_claim` is refreshed (Python Hermes: every minute).
const RUN_CLAIM_HEARTBEAT: Duration = Duration::from_secs(60);
/// How often a run's activity is checked against the inactivity limit.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// An occurrence claimed in the ledger, ready to run.
pub struct ClaimedRun {
    pub job: Job,
    /// The instant it was due (`None`: a manual run).
    pub scheduled_at: Option<DateTime<Utc>>,
    /// When it was claimed: a manual run's occurrence key carries it, as its ledger row does.
    pub claimed_at: DateTime<Utc>,
    /// Its ledger row.
    pub run: i64,
    pub source: RunSource,
    pub settings: CronSettings,
    /// Counted as waiting for a run slot until it holds one.
    pub(crate) queued: Option<super::Queued>,
    /// The upstream run a chained run follows (`source` is then `Chain`).
    pub upstream: Option<crate::runner::Upstream>,
    /// A replay: the run it repeats.
    pub replay_of: Option<i64>,
}

impl ClaimedRun {
    /// Who this run is in the ledger, so that a store that lost its row (an
    /// asynchronous database failover) can record it again.
    pub fn identity(&self, started: DateTime<Utc>) -> jobs::ledger::RunIdentity {
        jobs::ledger::RunIdentity {
            job_id: self.job.id().to_string(),
            occurrence: self.occurrence(),
            scheduled_at: self.scheduled_at,
            started_at: started,
            source: self.source,
        }
    }

    /// `<job_id>@<instant>`, `<job_id>@manual-<claimed at>` or
    /// `<job_id>@after-<upstream run>`: the ledger's key.
    pub fn occurrence(&self) -> String {
        if let Some(upstream) = &self.upstream {
            return jobs::chain::occurrence(self.job.id(), upstream.run);
        }
        self.scheduled_at.map_or_else(
            || jobs::store::manual_occurrence(self.job.id(), self.claimed_at),
            |at| occurrence_key(self.job.id(), at),
        )
    }
}

impl Scheduler {
    /// Runs one claimed occurrence to the end: run, save, deliver, record.
    pub(super) async fn execute_one(self: Arc<Self>, mut claimed: ClaimedRun) -> RunReport {
        // `overlap: replace`: the run it replaces stops first, before this one waits
        // for a run slot that run may hold (overlap.rs).
        self.replace_running(&claimed).await;
        let _permit = match (&self.permits, claimed.source) {
            (Some(permits), RunSource::Scheduler | RunSource::Chain) => {
                Arc::clone(permits).acquire_owned().await.ok()
            }
            _ => None,
        };
        drop(claimed.queued.take());
        // A manual run Hermes 0.22 forwarded through the store left its per-run prompt
        // on the job: this fire appends it, and removes it once recorded.
        let forwarded = match claimed.source {
            RunSource::Scheduler => claimed.job.manual_run_prompt().map(str::to_string),
            _ => None,
        };
        if let Some(context) = &forwarded {
            claimed.job = claimed.job.clone().with_run_context(context);
        }
        // What the run is asked with, for a later `hermes cron replay` of it: noted by
        // the same write that starts it.
        let request = RunRequest {
            prompt: Some(claimed.job.prompt().to_string()),
            model: claimed.job.model().map(str::to_string),
            replay_of: claimed.replay_of,
        };
        // A shared store may have given the occurrence to another host while this one
        // waited (for a permit, or stopped): then it is theirs to run.
        match self
            .store()
            .start_run(claimed.run, self.now(), &request)
            .await
        {
            Ok(true) => {}
            Ok(false) => return self.not_ours(&claimed, "taken over by another host".into()),
            Err(e) => return self.not_ours(&claimed, format!("cannot start the run: {e}")),
        }
        let started = self.now();
        let timer = tokio::time::Instant::now();
        let loaded = self.loaded();
        let (ctx, world) = match &loaded {
            Ok((ctx, _, world)) => (*ctx, Arc::clone(world)),
            Err(_) => (
                self.context_or_default(&claimed.settings).0,
                Arc::new(World::fixed(&self.parts.home, claimed.settings.clone())),
            ),
        };
        let env = RunEnv {
            home: self.parts.home.clone(),
            settings: claimed.settings.clone(),
            activity: Activity::new(),
            store: crate::runner::StoreReads::new(Arc::clone(&self.parts.store)),
            reports: Arc::new(super::StoreReports {
                store: Arc::clone(&self.parts.store),
                ctx,
            }),
            ctx,
            world,
            progress: crate::runner::Progress::default(),
            upstream: claimed.upstream.clone(),
        };
        let heartbeat =
            (claimed.source == RunSource::Scheduler && claimed.job.is_one_shot()).then(|| {
                let this = Arc::clone(&self);
                let id = claimed.job.id().to_string();
                tokio::spawn(async move { this.keep_run_claim_fresh(id).await })
            });
        // A config.yaml that cannot be read fails the run with its error.
        // A cancel request stops the run wherever it runs (cancel.rs).
        let outcome = match loaded {
            Ok(_) => {
                let work = self.run_within_budget(&claimed, &env);
                self.unless_cancelled(claimed.run, work).await
            }
            Err(e) => Some(RunOutcome::failed(
                claimed.job.prompt().to_string(),
                e.to_string(),
            )),
        };
        if let Some(heartbeat) = heartbeat {
            heartbeat.abort();
        }
        let report = match outcome {
            Some(outcome) => self.record(&claimed, &env, started, outcome).await,
            None => self.record_cancelled(&claimed, &env, started).await,
        };
        if let Some(context) = forwarded {
            self.clear_forwarded_prompt(claimed.job.id(), context).await;
        }
        lock(&self.running).remove(claimed.job.id());
        tracing::info!(
            job = claimed.job.id(),
            occurrence = %report.occurrence,
            outcome = report.status.as_str(),
            duration_ms = timer.elapsed().as_millis() as u64,
            error = report.error.as_deref().unwrap_or(""),
            "run finished"
        );
        report
    }

    /// A claimed run this process does not carry out.
    fn not_ours(&self, claimed: &ClaimedRun, why: String) -> RunReport {
        lock(&self.running).remove(claimed.job.id());
        tracing::info!(job = claimed.job.id(), occurrence = %claimed.occurrence(), "not run: {why}");
        RunReport {
            job_id: claimed.job.id().to_string(),
            job_name: claimed.job.name().to_string(),
            occurrence: claimed.occurrence(),
            status: jobs::ledger::RunStatus::Skipped,
            error: Some(why),
            output: None,
            response: None,
            delivery: None,
        }
    }

    /// Refreshes the `run_claim` of a running one-shot every minute, as Python Hermes
    /// does, so a run longer than the claim's lifetime is not taken for a dead one by
    /// another scheduler on the store. Only a claim this process stamped is refreshed.
    async fn keep_run_claim_fresh(self: Arc<Self>, job_id: String) {
        let mut every = tokio::time::interval(RUN_CLAIM_HEARTBEAT);
        every.tick().await;
        loop {
            every.tick().await;
            if let Err(e) = self.refresh_run_claim(&job_id).await {
                tracing::warn!(job = %job_id, "cannot refresh the run claim: {e}");
            }
        }
    }

    /// Removes the forwarded per-run prompt a run used, unless a newer one replaced it.
    async fn clear_forwarded_prompt(&self, job_id: &str, used: String) {
        let Ok((ctx, _)) = self.context() else {
            return;
        };
        let ids = std::collections::HashSet::from([job_id.to_string()]);
        let clear = Box::new(move |job: &mut Job| {
            if job.manual_run_prompt() == Some(used.as_str()) {
                job.clear_manual_run();
            }
        });
        if let Err(e) = self.store().update_jobs(&ctx, ids, clear).await {
            tracing::warn!(job = %job_id, "cannot clear the forwarded run prompt: {e}");
        }
    }

    async fn refresh_run_claim(&self, job_id: &str) -> Result<(), SchedulerError> {
        let (ctx, _) = self.context()?;
        let owner = self.parts.claim_owner.clone();
        let ids = std::collections::HashSet::from([job_id.to_string()]);
        let refresh = Box::new(move |job: &mut Job| {
            if job.run_claim_by() == Some(owner.as_str()) {
                let zone = job.zone(&ctx);
                job.set_run_claim(Some((ctx.now, &owner)), zone);
            }
        });
        self.store().update_jobs(&ctx, ids, refresh).await?;
        Ok(())
    }
}

/// Runs the job, stopping it when it shows no activity for the configured time.
pub(super) async fn run_watched(runner: &dyn Runner, job: &Job, env: &RunEnv) -> RunOutcome {
    let Some(limit) = env.settings.inactivity_timeout else {
        return runner.run(job, env).await;
    };
    let run = runner.run(job, env);
    tokio::pin!(run);
    let mut tick = tokio::time::interval(WATCH_EVERY);
    loop {
        tokio::select! {
            outcome = &mut run => return outcome,
            _ = tick.tick() => {
                let idle = env.activity.idle();
                if idle >= limit {
                    return RunOutcome::failed(
                        job.prompt().to_string(),
                        format!(
                            "stopped after {}s without activity (HERMES_CRON_TIMEOUT={}); last activity {}s ago",
                            limit.as_secs(), limit.as_secs(), idle.as_secs()
                        ),
                    );
                }
            }
        }
    }
}
