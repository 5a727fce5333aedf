//! Chains: each pass claims the chained runs that upstream runs owe ([`jobs::chain`]).
//! A job with `after` gets one run per upstream run that ended with the outcome it waits
//! for, oldest first, one at a time (a chained job that is running waits: the next pass
//! claims the next one). The trigger is the upstream run's finished ledger row, so a
//! scheduler killed between the two runs fires the chained one on its next pass, and
//! the occurrence key `<job>@after-<upstream run>` keeps it to once across hosts.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use jobs::chain::{self, After, AFTER, AFTER_SINCE};
use jobs::ledger::{RunRow, RunSource};
use jobs::store::ChangeMark;
use jobs::{Context, Job, JobState};

use super::execute::ClaimedRun;
use super::settings::CronSettings;
use super::{lock, Pending, Scheduler};
use crate::runner::Upstream;

/// How many of the upstream job's newest runs a pass looks through for a chained run
/// still owed: more upstream runs than this ending between two passes lose the oldest.
const UPSTREAM_LOOKBACK: usize = 20;
/// How many of the chained job's newest runs are read to see which are done already.
const OWN_LOOKBACK: usize = 200;

/// How long a read of the chained jobs is trusted while the store's change mark stays:
/// a change another host made that this process was not told of is seen this late.
const CHAINED_FRESH: std::time::Duration = std::time::Duration::from_secs(60);

/// The chained jobs (reduced to what a chain needs), read at a change mark.
pub(super) struct Chained {
    mark: ChangeMark,
    read_at: std::time::Instant,
    jobs: Arc<Vec<Job>>,
    /// The upstream jobs' names by id, for the heading of their output.
    names: Arc<HashMap<String, String>>,
}

/// The upstream run a chained job owes a run for.
struct Owed {
    upstream: Upstream,
    occurrence: String,
}

impl Scheduler {
    /// Claims, for every chained job that is neither paused nor running, the oldest
    /// chained run it owes. Errors are logged: a chain that cannot be read is tried
    /// again on the next pass.
    pub(super) async fn claim_chains(
        &self,
        ctx: &Context,
        settings: &CronSettings,
    ) -> Vec<Pending> {
        let Some((chained, names)) = self.chained_jobs(ctx).await else {
            return Vec::new();
        };
        let mut pending = Vec::new();
        for job in chained.iter() {
            let Some(after) = After::of(job) else {
                continue;
            };
            if matches!(job.state(), JobState::Paused | JobState::Completed) || !job.enabled() {
                continue;
            }
            if lock(&self.running).contains(job.id()) {
                continue;
            }
            let Some(owed) = self.oldest_owed(job, &after, &names).await else {
                continue;
            };
            if let Some(claimed) = self.claim_owed(job.id(), owed, ctx, settings).await {
                pending.push(Pending::Run(claimed));
            }
        }
        pending
    }

    /// The jobs that have a chain, and every job's name: read again only when a job
    /// changed since the last read (or it is older than [`CHAINED_FRESH`]), so a pass on
    /// a store without changes reads no job for its chains. `None` when none can be read.
    async fn chained_jobs(
        &self,
        ctx: &Context,
    ) -> Option<(Arc<Vec<Job>>, Arc<HashMap<String, String>>)> {
        let store = self.store();
        let mark = store.change_mark().await;
        if let Some(kept) = lock(&self.chained).as_ref() {
            if kept.mark == mark && kept.read_at.elapsed() < CHAINED_FRESH {
                return Some((Arc::clone(&kept.jobs), Arc::clone(&kept.names)));
            }
        }
        let (jobs, names) = match read_chained(store, ctx).await {
            Ok(read) => read,
            Err(e) => {
                tracing::error!("cannot read the jobs for their chains: {e}");
                return None;
            }
        };
        let (jobs, names) = (Arc::new(jobs), Arc::new(names));
        *lock(&self.chained) = Some(Chained {
            mark,
            read_at: std::time::Instant::now(),
            jobs: Arc::clone(&jobs),
            names: Arc::clone(&names),
        });
        Some((jobs, names))
    }

    /// The oldest upstream run that fires `job`'s chain and has no chained run yet.
    async fn oldest_owed(
        &self,
        job: &Job,
        after: &After,
        names: &HashMap<String, String>,
    ) -> Option<Owed> {
        let store = self.store();
        let since = chain::since(job);
        let upstream_runs = store
            .recent_runs(Some(&after.job), UPSTREAM_LOOKBACK)
            .await
            .map_err(|e| tracing::error!(job = job.id(), "cannot read the upstream runs: {e}"))
            .ok()?;
        let mut firing: Vec<&RunRow> = upstream_runs
            .iter()
            // Runs Python Hermes records beside ours carry no id of ours: they fire
            // nothing.
            .filter(|row| row.id > 0 && after.on.fires_on(&row.status))
            .filter(|row| finished_since(row, since))
            .collect();
        if firing.is_empty() {
            return None;
        }
        firing.sort_by_key(|row| row.id);
        let own = store
            .recent_runs(Some(job.id()), OWN_LOOKBACK)
            .await
            .map_err(|e| tracing::error!(job = job.id(), "cannot read the job's runs: {e}"))
            .ok()?;
        let name = names.get(&after.job).cloned().unwrap_or_default();
        firing.into_iter().find_map(|row| {
            let occurrence = chain::occurrence(job.id(), row.id);
            let done = own.iter().any(|r| r.occurrence == occurrence);
            (!done).then(|| Owed {
                upstream: Upstream {
                    job_id: after.job.clone(),
                    job_name: name.clone(),
                    run: row.id,
                    status: row.status.clone(),
                },
                occurrence,
            })
        })
    }

    /// Claims one owed chained run in the ledger and hands it out to run.
    async fn claim_owed(
        &self,
        job_id: &str,
        owed: Owed,
        ctx: &Context,
        settings: &CronSettings,
    ) -> Option<ClaimedRun> {
        let store = self.store();
        let run = match store.claim_chained(job_id, &owed.occurrence, ctx.now).await {
            Ok(Some(run)) => run,
            Ok(None) => return None,
            Err(e) => {
                tracing::error!(job = job_id, "cannot claim the chained run: {e}");
                return None;
            }
        };
        let job = match store.get_job(ctx, job_id).await {
            Ok(Some(job)) => job,
            found => {
                let why = match found {
                    Err(e) => format!("cannot read the job: {e}"),
                    _ => "the job was removed".to_string(),
                };
                let end = jobs::ledger::RunEnd {
                    error: Some(why),
                    ..Default::default()
                };
                let status = jobs::ledger::RunStatus::Skipped;
                if let Err(e) = store.finish_run(run, status, ctx.now, &end).await {
                    tracing::error!(job = job_id, "cannot record the chained run: {e}");
                }
                return None;
            }
        };
        lock(&self.running).insert(job_id.to_string());
        tracing::info!(
            job = job_id,
            upstream = %owed.upstream.job_id,
            upstream_run = owed.upstream.run,
            upstream_status = %owed.upstream.status,
            "chained run claimed"
        );
        Some(ClaimedRun {
            job,
            scheduled_at: None,
            claimed_at: ctx.now,
            run,
            source: RunSource::Chain,
            replay_of: None,
            settings: settings.clone(),
            queued: self.enqueue(),
            upstream: Some(owed.upstream),
        })
    }
}

/// Whether an upstream run finished at or after the chain was set.
fn finished_since(row: &RunRow, since: Option<DateTime<Utc>>) -> bool {
    let Some(since) = since else {
        return true;
    };
    row.finished_at
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|finished| finished.with_timezone(&Utc) >= since)
}

/// The chained jobs (reduced to what a chain needs where the store reads views) and the
/// names of the jobs they wait on. jobs.json is read whole as a light view; a database
/// is asked for the chained rows only and then for each upstream job (a store of a
/// million jobs has a handful of chains: the rest are never read).
async fn read_chained(
    store: &dyn jobs::store::Store,
    ctx: &Context,
) -> Result<(Vec<Job>, HashMap<String, String>), jobs::store::StoreError> {
    let chained = |job: &Job| job.get(AFTER).is_some_and(serde_json::Value::is_object);
    if store.listing().is_some() {
        let keys = ["id", "name", "state", "enabled", AFTER, AFTER_SINCE];
        let view = store.load_view(ctx, &keys).await?;
        let jobs: Vec<Job> = view.iter().filter(|j| chained(j)).cloned().collect();
        let upstream: std::collections::HashSet<String> =
            jobs.iter().filter_map(After::of).map(|a| a.job).collect();
        let names = view
            .iter()
            .filter(|j| upstream.contains(j.id()))
            .map(|j| (j.id().to_string(), j.name().to_string()))
            .collect();
        return Ok((jobs, names));
    }
    let query = jobs::store::PageQuery {
        limit: usize::MAX,
        chained: true,
        ..jobs::store::PageQuery::count_all()
    };
    let jobs = store.job_page(ctx, &query).await?.jobs;
    let upstream: std::collections::HashSet<String> =
        jobs.iter().filter_map(After::of).map(|a| a.job).collect();
    let mut names = HashMap::with_capacity(upstream.len());
    for id in upstream {
        if let Some(job) = store.get_job(ctx, &id).await? {
            names.insert(id, job.name().to_string());
        }
    }
    Ok((jobs, names))
}
