//! The memory store's run ledger ([`RunLedger`]): runs, spend and budget notices in
//! memory.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use crate::ledger::outbox::OutboxState;
use crate::ledger::spend::Spend;
use crate::ledger::{ledger_time, CancelTarget, RunEnd, RunRequest, RunRow, RunStatus};
use crate::store::{RunLedger, StoreError};

use super::MemoryStore;

#[async_trait::async_trait]
impl RunLedger for MemoryStore {
    async fn claim_backfill(
        &self,
        job_id: &str,
        scheduled_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let occurrence = crate::ledger::occurrence_key(job_id, scheduled_at);
        let row = crate::store::backfill_claim(job_id, &occurrence, scheduled_at, now);
        let owner = self.owner.clone();
        Ok(self.lock().insert_run(&owner, &row.request()))
    }

    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(row) = inner.runs.iter_mut().find(|r| r.id == run) {
            row.status = status;
            row.finished_at = Some(ledger_time(now));
            row.error = end.error.clone();
            row.delivery = end.delivery.clone();
            row.prompt_tokens = end.prompt_tokens;
            row.completion_tokens = end.completion_tokens;
            row.cost_usd = end.cost_usd;
            row.model = end.model.clone();
        }
        if let Some(output) = &end.output {
            inner.run_outputs.insert(run, output.clone());
        }
        Ok(())
    }

    async fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let own = i64::from(self.owner.pid);
        let stale: Vec<usize> = (0..inner.runs.len())
            .filter(|&i| {
                let r = &inner.runs[i];
                r.status == RunStatus::Running
                    && r.host.as_deref() == Some(self.owner.host.as_str())
                    && ((except_own && r.pid == Some(own)) || !inner.alive(r.pid))
            })
            .collect();
        for &i in &stale {
            let row = &mut inner.runs[i];
            row.status = RunStatus::Interrupted;
            row.finished_at = Some(ledger_time(now));
            row.error
                .get_or_insert_with(|| "the process running it stopped before it finished".into());
        }
        Ok(stale.len())
    }

    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        Ok(self
            .lock()
            .runs
            .iter()
            .rev()
            .filter(|r| job_id.is_none_or(|id| r.job_id == id))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        Ok(self.lock().runs.iter().find(|r| r.id == id).cloned())
    }

    async fn set_run_delivery(&self, id: i64, delivery: &str) -> Result<(), StoreError> {
        if let Some(row) = self.lock().runs.iter_mut().find(|r| r.id == id) {
            row.delivery = Some(delivery.to_string());
        }
        Ok(())
    }

    async fn latest_runs(
        &self,
        only: Option<&[String]>,
    ) -> Result<HashMap<String, RunRow>, StoreError> {
        let mut latest = HashMap::new();
        let wanted = |run: &&RunRow| only.is_none_or(|ids| ids.contains(&run.job_id));
        for run in self.lock().runs.iter().rev().filter(wanted) {
            latest
                .entry(run.job_id.clone())
                .or_insert_with(|| run.clone());
        }
        Ok(latest)
    }

    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        Ok(crate::ledger::spend::sum_rows(&self.lock().runs, since))
    }

    async fn claim_budget_notice(
        &self,
        window: &str,
        _now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.lock().budget_notices.insert(window.to_string()))
    }

    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let spend_since = crate::ledger::ledger_time(spend_since);
        let mut inner = self.lock();
        inner.deliveries.retain(|d| {
            matches!(d.state, OutboxState::Pending | OutboxState::Sending) || d.created_at >= before
        });
        let mut kept: BTreeMap<String, usize> = BTreeMap::new();
        let mut keep = vec![true; inner.runs.len()];
        for (i, row) in inner.runs.iter().enumerate().rev() {
            if row.status == RunStatus::Running {
                continue;
            }
            let n = kept.entry(row.job_id.clone()).or_default();
            *n += 1;
            let spent = row.prompt_tokens.is_some() || row.cost_usd.is_some();
            let counted = spent && row.finished_at.as_deref() >= Some(spend_since.as_str());
            keep[i] = *n <= keep_runs || counted;
        }
        let mut flags = keep.into_iter();
        inner.runs.retain(|_| flags.next().unwrap_or(true));
        Ok(())
    }

    async fn request_cancel(
        &self,
        target: CancelTarget<'_>,
        _now: DateTime<Utc>,
    ) -> Result<Vec<i64>, StoreError> {
        let (job, run) = target.parts();
        let mut inner = self.lock();
        let ids: Vec<i64> = inner
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Running)
            .filter(|r| job.is_some_and(|j| r.job_id == j) || run == Some(r.id))
            .map(|r| r.id)
            .collect();
        inner.cancels.extend(ids.iter().copied());
        Ok(ids)
    }

    async fn cancels_requested(&self, runs: &[i64]) -> Result<Vec<i64>, StoreError> {
        let inner = self.lock();
        Ok(runs
            .iter()
            .copied()
            .filter(|run| inner.cancels.contains(run))
            .collect())
    }

    async fn note_run_request(&self, run: i64, request: &RunRequest) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(replay_of) = request.replay_of {
            if let Some(row) = inner.runs.iter_mut().find(|r| r.id == run) {
                row.source = crate::ledger::RunSource::Replay.as_str().to_string();
                row.replay_of = Some(replay_of);
            }
        }
        inner.requests.insert(run, request.clone());
        Ok(())
    }

    async fn run_request(&self, run: i64) -> Result<Option<(String, RunRequest)>, StoreError> {
        let inner = self.lock();
        let Some(row) = inner.runs.iter().find(|r| r.id == run) else {
            return Ok(None);
        };
        let request = inner.requests.get(&run).cloned().unwrap_or_default();
        Ok(Some((row.job_id.clone(), request)))
    }

    async fn take_queued(
        &self,
        job_id: &str,
        after: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<(i64, DateTime<Utc>)>, StoreError> {
        use crate::ledger::{QUEUED, QUEUED_SUPERSEDED};
        let mut inner = self.lock();
        let queued = |r: &RunRow| {
            r.job_id == job_id
                && r.id > after
                && r.status == RunStatus::Skipped
                && r.error.as_deref() == Some(QUEUED)
        };
        let Some(newest) = inner.runs.iter().rev().find(|r| queued(r)).map(|r| r.id) else {
            return Ok(None);
        };
        let (pid, host) = (self.owner.pid, self.owner.host.clone());
        let mut taken = None;
        for row in inner.runs.iter_mut() {
            if row.id == newest {
                row.status = RunStatus::Running;
                row.error = None;
                row.finished_at = None;
                row.started_at = Some(ledger_time(now));
                row.pid = Some(i64::from(pid));
                row.host = Some(host.clone());
                taken = row
                    .scheduled_at
                    .as_deref()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| (newest, t.with_timezone(&Utc)));
            } else if queued(row) && row.id < newest {
                row.error = Some(QUEUED_SUPERSEDED.to_string());
            }
        }
        Ok(taken)
    }
}
