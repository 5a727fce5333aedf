//! The file store's run ledger ([`RunLedger`]): runs, their spend and the budget
//! notices in the SQLite `cron/executions.db`. It never creates the database to answer a
//! read.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::ledger::spend::Spend;
use crate::ledger::{CancelTarget, Ledger, RunEnd, RunRequest, RunRow, RunStatus};
use crate::store::{RunLedger, StoreError};

use super::{FileStore, Files};

impl Files {
    fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        self.with_ledger(|ledger| ledger.finish(run, status, now, end))
    }

    fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        let own = i64::from(self.owner.pid);
        let alive = |pid: i64| !(except_own && pid == own) && (self.alive)(pid);
        self.with_ledger(|ledger| ledger.mark_interrupted(&self.owner.host, now, &alive))
    }

    fn recent_runs(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(Vec::new());
        }
        // Python Hermes, on a store both share, records its own attempts in the same
        // database: show them too, merged newest first.
        let (mut rows, theirs) = self.with_ledger(|ledger| {
            Ok((
                ledger.recent(job_id, limit)?,
                ledger.python_executions(job_id, limit)?,
            ))
        })?;
        if theirs.is_empty() {
            return Ok(rows);
        }
        let started = |row: &RunRow| {
            row.started_at
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        rows.extend(theirs);
        rows.sort_by_key(|row| std::cmp::Reverse(started(row)));
        rows.truncate(limit);
        Ok(rows)
    }

    fn latest_runs(&self, only: Option<&[String]>) -> Result<HashMap<String, RunRow>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(HashMap::new());
        }
        let rows = self.with_ledger(Ledger::latest_per_job)?;
        Ok(rows
            .into_iter()
            .filter(|r| only.is_none_or(|ids| ids.contains(&r.job_id)))
            .map(|r| (r.job_id.clone(), r))
            .collect())
    }

    fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.with_ledger(|ledger| ledger.prune(keep_runs, spend_since))?;
        self.with_outbox(|outbox| outbox.prune(before))?;
        Ok(())
    }

    fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(Vec::new());
        }
        self.with_ledger(|ledger| ledger.spend_since(since))
    }
}

#[async_trait::async_trait]
impl RunLedger for FileStore {
    async fn claim_backfill(
        &self,
        job_id: &str,
        scheduled_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let occurrence = crate::ledger::occurrence_key(job_id, scheduled_at);
        let row = crate::store::backfill_claim(job_id, &occurrence, scheduled_at, now);
        self.blocking(move |files| {
            files.with_ledger(|ledger| ledger.claim(&files.stamped(&row.request())))
        })
        .await
    }

    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        let end = end.clone();
        self.blocking(move |files| files.finish_run(run, status, now, &end))
            .await
    }

    async fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        self.blocking(move |files| files.interrupt_dead_runs(now, except_own))
            .await
    }

    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let job_id = job_id.map(str::to_string);
        self.blocking(move |files| files.recent_runs(job_id.as_deref(), limit))
            .await
    }

    async fn latest_runs(
        &self,
        only: Option<&[String]>,
    ) -> Result<HashMap<String, RunRow>, StoreError> {
        let only = only.map(<[String]>::to_vec);
        self.blocking(move |files| files.latest_runs(only.as_deref()))
            .await
    }

    async fn run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        self.blocking(move |files| {
            // Reading history never creates the database.
            if !files.db_exists(&files.ledger, &files.db_path()) {
                return Ok(None);
            }
            files.with_ledger(|ledger| ledger.one(id))
        })
        .await
    }

    async fn set_run_delivery(&self, id: i64, delivery: &str) -> Result<(), StoreError> {
        let delivery = delivery.to_string();
        self.blocking(move |files| files.with_ledger(|ledger| ledger.set_delivery(id, &delivery)))
            .await
    }

    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.blocking(move |files| files.prune_history(before, keep_runs, spend_since))
            .await
    }

    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        self.blocking(move |files| files.spend_since(since)).await
    }

    async fn claim_budget_notice(
        &self,
        window: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let window = window.to_string();
        self.blocking(move |files| {
            files.with_ledger(|ledger| ledger.claim_budget_notice(&window, now))
        })
        .await
    }

    async fn request_cancel(
        &self,
        target: CancelTarget<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<i64>, StoreError> {
        let (job, run) = target.parts();
        let job = job.map(str::to_string);
        self.blocking(move |files| {
            // Nothing runs without a ledger: asking never creates it.
            if !files.db_exists(&files.ledger, &files.db_path()) {
                return Ok(Vec::new());
            }
            let target = match (&job, run) {
                (Some(job), _) => CancelTarget::Job(job),
                (None, Some(run)) => CancelTarget::Run(run),
                (None, None) => return Ok(Vec::new()),
            };
            files.with_ledger(|ledger| ledger.request_cancel(target, now))
        })
        .await
    }

    async fn cancels_requested(&self, runs: &[i64]) -> Result<Vec<i64>, StoreError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let runs = runs.to_vec();
        self.blocking(move |files| files.with_ledger(|ledger| ledger.cancels_requested(&runs)))
            .await
    }

    async fn note_run_request(&self, run: i64, request: &RunRequest) -> Result<(), StoreError> {
        let request = request.clone();
        self.blocking(move |files| files.with_ledger(|ledger| ledger.note_request(run, &request)))
            .await
    }

    async fn run_request(&self, run: i64) -> Result<Option<(String, RunRequest)>, StoreError> {
        self.blocking(move |files| {
            if !files.db_exists(&files.ledger, &files.db_path()) {
                return Ok(None);
            }
            files.with_ledger(|ledger| ledger.request_of(run))
        })
        .await
    }

    async fn take_queued(
        &self,
        job_id: &str,
        after: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<(i64, DateTime<Utc>)>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| {
            let (pid, host) = (files.owner.pid, files.owner.host.clone());
            files.with_ledger(|ledger| ledger.take_queued(&job_id, after, now, pid, &host))
        })
        .await
    }
}
