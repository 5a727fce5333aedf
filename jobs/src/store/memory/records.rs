//! The memory store's jobs and claims ([`JobRecords`]): the same rules as the file
//! store's, on the jobs and runs it keeps in memory.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::ledger::{ledger_time, RunRequest, RunStatus};
use crate::lifecycle::JobError;
use crate::model::job::{Context, Job};
use crate::store::RunLedger;
use crate::store::{
    BatchChange, ChangeMark, DuePass, DueScan, JobChange, JobRecords, JobViews, StoreError,
};

use super::MemoryStore;

#[async_trait::async_trait]
impl JobRecords for MemoryStore {
    async fn load_jobs(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        Ok(self.lock().jobs.clone())
    }

    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        let mut inner = self.lock();
        inner.heal_all(ctx);
        inner.jobs.push(job);
        inner.changes += 1;
        Ok(())
    }

    async fn update_job(
        &self,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let mut inner = self.lock();
        let Some(index) = inner.jobs.iter().position(|j| j.id() == id) else {
            return Err(JobError::NotFound(id.to_string()));
        };
        let mut job = inner.jobs[index].clone();
        job.heal(ctx);
        change(&mut job)?;
        inner.heal_all(ctx);
        inner.jobs[index] = job.clone();
        inner.changes += 1;
        Ok(job)
    }

    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        for job in inner.jobs.iter_mut().filter(|j| ids.contains(j.id())) {
            job.heal(ctx);
            change(job);
        }
        inner.changes += 1;
        Ok(())
    }

    async fn remove_job(&self, _ctx: &Context, id: &str) -> Result<Job, JobError> {
        let mut inner = self.lock();
        let index = inner
            .jobs
            .iter()
            .position(|j| j.id() == id)
            .ok_or_else(|| JobError::NotFound(id.to_string()))?;
        inner.outputs.remove(id);
        inner.monitor_snapshots.remove(id);
        inner.notes.remove(id);
        inner.changes += 1;
        Ok(inner.jobs.remove(index))
    }

    async fn change_mark(&self) -> ChangeMark {
        ChangeMark(self.lock().changes)
    }

    fn backlog_mark(&self) -> ChangeMark {
        ChangeMark(self.lock().backlog)
    }

    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let pass = self.decide_and_claim(ctx, scan);
        let after = self.lock().after_pass.take();
        if let Some(change) = after {
            change().await;
        }
        pass
    }

    async fn claim_chained(
        &self,
        job_id: &str,
        occurrence: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let mut inner = self.lock();
        if inner.is_running(job_id, &self.owner.host) {
            return Ok(None);
        }
        let claim = crate::store::chain_claim(job_id, occurrence, now);
        Ok(inner.insert_run(&self.owner, &claim))
    }

    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let mut inner = self.lock();
        if inner.is_running(job_id, &self.owner.host) {
            return Err(JobError::Running(job_id.to_string()));
        }
        let occurrence = crate::store::manual_occurrence(job_id, now);
        let claim = crate::store::manual_claim(job_id, &occurrence, now);
        inner.insert_run(&self.owner, &claim).ok_or_else(|| {
            JobError::Invalid("a manual run was started at the same millisecond; try again".into())
        })
    }

    async fn start_run(
        &self,
        run: i64,
        now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<bool, StoreError> {
        {
            let mut inner = self.lock();
            let now = ledger_time(now);
            if let Some(row) = inner.runs.iter_mut().find(|r| r.id == run) {
                if row.status == RunStatus::Running
                    && row.started_at.as_ref().is_some_and(|at| *at < now)
                {
                    row.started_at = Some(now);
                }
            }
        }
        self.note_run_request(run, request).await?;
        Ok(true)
    }
}

#[async_trait::async_trait]
impl JobViews for MemoryStore {}
