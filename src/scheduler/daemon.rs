//! The scheduler loop: pass, then sleep until the earliest due instant (never more than
//! 60 s), waking within a quarter second when the store changes, or when a run ends
//! while other hosts hold occurrences waiting for a slot; keep the heartbeat; on
//! shutdown stop taking work and let running jobs finish for up to 30 s. A failed pass
//! is logged and recorded; the loop never dies of it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jobs::store::Beat;
use tokio::task::JoinSet;

use super::{RunReport, Scheduler, SchedulerError};

/// The longest the loop sleeps between passes.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// How often the store is checked for changes while sleeping.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long running jobs may finish after shutdown begins.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs `scheduler` until `shutdown` completes, then drains.
pub async fn run(
    scheduler: Arc<Scheduler>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), SchedulerError> {
    match scheduler.recover_interrupted().await {
        Ok(0) => {}
        Ok(n) => tracing::warn!("{n} run(s) left running by a stopped process marked interrupted"),
        Err(e) => tracing::error!("cannot check the ledger for interrupted runs: {e}"),
    }
    scheduler
        .beat(Beat::Started {
            pid: std::process::id(),
        })
        .await;
    tracing::info!(pid = std::process::id(), home = %scheduler.parts.home.display(), "scheduler started");
    let mut running: JoinSet<RunReport> = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // Marked before the pass reads the store: a change written while the pass decides
        // (a job added or edited) is then seen at the first look, not lost until the next
        // wake-up. The pass's own writes cost one more, idle, pass.
        let seen = scheduler.store().change_mark().await;
        let seen_backlog = scheduler.store().backlog_mark();
        let (next_wake, backlog) = scheduler.loop_pass(&mut running).await;
        let sleep_for = next_wake
            .map(|at| (at - scheduler.now()).to_std().unwrap_or(Duration::ZERO))
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        let deadline = tokio::time::Instant::now() + sleep_for;
        let stop = loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break false,
                _ = tokio::time::sleep(WATCH_EVERY) => {
                    if scheduler.store().change_mark().await != seen {
                        break false;
                    }
                    // Others' waiting claims matter only with a slot to run one here
                    // (one freed by a run that ended counts at the next look).
                    if scheduler.store().backlog_mark() != seen_backlog
                        && scheduler.free_slots().is_none_or(|free| free > 0)
                    {
                        break false;
                    }
                }
                Some(_) = running.join_next() => {
                    // A run ended: while other hosts hold occurrences waiting for a slot,
                    // a freed one here takes some now rather than at the next wake-up.
                    if backlog && scheduler.free_slots().is_none_or(|free| free > 0) {
                        break false;
                    }
                }
                () = &mut shutdown => break true,
            }
        };
        if stop {
            break;
        }
    }
    scheduler.drain(running).await;
    Ok(())
}

impl Scheduler {
    async fn beat(&self, beat: Beat) {
        if let Err(e) = self.store().beat(&beat).await {
            tracing::warn!("cannot write the heartbeat: {e}");
        }
    }

    /// One pass of the loop: heartbeat, claim, spawn what was claimed. Returns when to
    /// wake next, and whether other hosts hold occurrences waiting for a run slot.
    async fn loop_pass(
        self: &Arc<Self>,
        running: &mut JoinSet<RunReport>,
    ) -> (Option<chrono::DateTime<chrono::Utc>>, bool) {
        self.beat(Beat::Alive(self.now())).await;
        let timer = std::time::Instant::now();
        let pass = self.pass().await;
        self.observe(|o| o.pass_took(timer.elapsed()));
        let woke = match pass {
            Ok(report) => {
                self.observe(|o| o.pass_ended(None));
                for pending in report.pending {
                    running.spawn(pending.run(Arc::clone(self)));
                }
                if report.ran {
                    self.beat(Beat::PassSucceeded(self.now())).await;
                }
                (report.next_wake, report.backlog)
            }
            Err(e) => {
                tracing::error!("scheduler pass failed: {e}");
                self.observe(|o| o.pass_ended(Some(&e.to_string())));
                self.beat(Beat::PassFailed(self.now(), e.to_string())).await;
                (None, false)
            }
        };
        while running.try_join_next().is_some() {}
        woke
    }

    /// No new runs; running ones get [`DRAIN`] to finish, the rest are stopped and
    /// recorded as interrupted.
    async fn drain(&self, mut running: JoinSet<RunReport>) {
        // Manual runs (the API's "run now") drain with the scheduled ones.
        let mut manual = std::mem::take(&mut *super::lock(&self.manual));
        tracing::info!(
            running = running.len() + manual.len(),
            "stopping: no new runs; waiting up to 30 s for running jobs"
        );
        let drained = tokio::time::timeout(DRAIN, async {
            while running.join_next().await.is_some() {}
            while manual.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                "{} run(s) still going after 30 s; stopping them",
                running.len() + manual.len()
            );
            running.abort_all();
            manual.abort_all();
            while running.join_next().await.is_some() {}
            while manual.join_next().await.is_some() {}
        }
        if let Err(e) = self.interrupt_own_runs().await {
            tracing::error!("cannot record the stopped runs as interrupted: {e}");
        }
        self.beat(Beat::Stopped).await;
        tracing::info!("scheduler stopped");
    }
}
