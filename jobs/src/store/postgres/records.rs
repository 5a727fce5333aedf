//! The PostgreSQL store's jobs and claims ([`JobRecords`]): one row per job, a pass
//! claimed with `FOR UPDATE SKIP LOCKED` on the database's clock, and the work of dead or
//! busy hosts taken over. Every change is one transaction.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::Row;

use super::patience::{Failed, Patience};
use super::{columns, healed_jobs, job_of, PgStore, CHANNEL, CLAIM_BATCH, LEASE};
use crate::due::{earliest_next_run, plan_pass, Decision};
use crate::fields::Layout;
use crate::job::{Context, Job};
use crate::ledger::{RunRequest, RunStatus};
use crate::lifecycle::JobError;
use crate::store::{
    prepare_claims, BatchChange, ChangeMark, Claimed, DuePass, DueScan, JobChange, JobPage,
    JobRecords, JobViews, Occurrence, OwnedClaim, PageQuery, PendingClaim, StoreError,
};

#[async_trait::async_trait]
impl JobRecords for PgStore {
    async fn load_jobs(&self, ctx: &Context) -> Result<Vec<Job>, StoreError> {
        self.load(ctx).await
    }

    async fn get_job(&self, _ctx: &Context, id: &str) -> Result<Option<Job>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT record FROM hermes_cron_jobs WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.fail(e))?;
        row.map(|row| job_of(&row, "record")).transpose()
    }

    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        let client = self.client().await?;
        let c = columns(&job, ctx);
        let record = Value::Object(job.record().clone());
        let inserted = client
            .execute(
                "INSERT INTO hermes_cron_jobs
                     (id, record, next_run_at, runnable, done_since, state, name)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                &[
                    &job.id(),
                    &record,
                    &c.next_run_at,
                    &c.runnable,
                    &c.done_since,
                    &c.state,
                    &c.name,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        self.changed();
        match inserted {
            1 => Ok(()),
            _ => Err(JobError::Invalid(format!(
                "A job with id {} is already stored; nothing was changed",
                job.id()
            ))),
        }
    }

    async fn update_job(
        &self,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        let select = "SELECT record FROM hermes_cron_jobs WHERE id = $1 FOR UPDATE";
        let mut job = self.job_row(&tx, select, id).await?;
        job.heal(ctx);
        change(&mut job)?;
        self.write_jobs(&tx, std::slice::from_ref(&job), ctx)
            .await
            .map_err(StoreError::from)?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        self.changed();
        Ok(job)
    }

    /// The outcome of finished runs is written even when it falls in a failover, as
    /// their ledger rows are (`patience.rs`): each attempt reads the jobs afresh in its
    /// own transaction and applies `change` to them, so nothing is applied twice. After
    /// an asynchronous failover the run's ledger row is recorded again too
    /// (`finish_run`), so the outcome written here matches a row.
    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let patience = Patience::start();
        while let Err(failed) = self.try_update_jobs(ctx, &ids, &mut change).await {
            patience.after(failed).await?;
        }
        self.changed();
        Ok(())
    }

    async fn remove_job(&self, _ctx: &Context, id: &str) -> Result<Job, JobError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        let delete = "DELETE FROM hermes_cron_jobs WHERE id = $1 RETURNING record";
        let job = self.job_row(&tx, delete, id).await?;
        tx.execute("DELETE FROM hermes_cron_outputs WHERE job_id = $1", &[&id])
            .await
            .map_err(|e| self.fail(e))?;
        self.pg_clear_notes(&tx, id).await?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        self.changed();
        Ok(job)
    }

    async fn change_mark(&self) -> ChangeMark {
        ChangeMark(self.changes.load(Ordering::Relaxed))
    }

    fn backlog_mark(&self) -> ChangeMark {
        ChangeMark(self.backlog.load(Ordering::Relaxed))
    }

    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        self.claim(ctx, scan).await
    }

    async fn start_run(
        &self,
        run: i64,
        _now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let started = client
            .execute(
                "UPDATE hermes_cron_runs
                     SET status = 'running',
                         started_at = CASE status WHEN 'claimed' THEN now() ELSE started_at END,
                         run_prompt = $3, run_model = $4, replay_of = $5,
                         source = CASE WHEN $5::bigint IS NULL THEN source ELSE 'replay' END
                     WHERE id = $1 AND status IN ('claimed', 'running') AND instance = $2",
                &[
                    &run,
                    &self.instance,
                    &request.prompt,
                    &request.model,
                    &request.replay_of,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(started == 1)
    }

    async fn claim_chained(
        &self,
        job_id: &str,
        occurrence: &str,
        _now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let client = self.client().await?;
        let live = self.live(&client).await?;
        // One statement: the occurrence is claimed only while no live process runs the
        // job, and never twice (its key is unique).
        let row = client
            .query_opt(
                "INSERT INTO hermes_cron_runs (job_id, occurrence, source, instance, host,
                         pid, status, started_at)
                     SELECT $1, $2, 'chain', $3, $4, $5, 'running', now()
                     WHERE NOT EXISTS (SELECT 1 FROM hermes_cron_runs WHERE job_id = $1
                         AND status IN ('claimed', 'running') AND instance = ANY($6))
                     ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &job_id,
                    &occurrence,
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                    &live,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        if row.is_some() {
            self.note_runs_added([job_id.to_string()]);
        }
        Ok(row.map(|r| r.get(0)))
    }

    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let client = self.client().await?;
        let live = self.live(&client).await?;
        let busy: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM hermes_cron_runs WHERE job_id = $1
                         AND status IN ('claimed', 'running') AND instance = ANY($2))",
                &[&job_id, &live],
            )
            .await
            .map_err(|e| self.fail(e))?
            .get(0);
        if busy {
            return Err(JobError::Running(job_id.to_string()));
        }
        let occurrence = crate::store::manual_occurrence(job_id, now);
        self.note_runs_added([job_id.to_string()]);
        let row = client
            .query_opt(
                "INSERT INTO hermes_cron_runs (job_id, occurrence, source, instance, host,
                         pid, status, started_at)
                     VALUES ($1, $2, 'manual', $3, $4, $5, 'running', now())
                     ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &job_id,
                    &occurrence,
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        row.map(|r| r.get(0)).ok_or_else(|| {
            JobError::Invalid("a manual run was started at the same millisecond; try again".into())
        })
    }
}

#[async_trait::async_trait]
impl JobViews for PgStore {
    async fn layout(&self, _ctx: &Context) -> Result<Layout, StoreError> {
        // The first record with `monitor_state` settles it (on a store of 0.22's layout,
        // the first row read); only without one is `provider_snapshot` looked for. `->`
        // gives SQL NULL only for a missing key (a JSON null is 'null').
        let row = self
            .client()
            .await?
            .query_one(
                "SELECT CASE
                     WHEN EXISTS (SELECT 1 FROM hermes_cron_jobs
                                   WHERE record -> 'monitor_state' IS NOT NULL) THEN 2
                     WHEN EXISTS (SELECT 1 FROM hermes_cron_jobs
                                   WHERE record -> 'provider_snapshot' IS NOT NULL) THEN 1
                     ELSE 0 END",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let found: i32 = row.get(0);
        Ok(Layout::of_keys(found == 2, found == 1))
    }

    async fn job_page(&self, _ctx: &Context, query: &PageQuery) -> Result<JobPage, StoreError> {
        // A row a build without these columns wrote has no state yet: listed, never
        // taken for completed.
        const MATCHING: &str = "($1 OR state IS DISTINCT FROM 'completed')
             AND (cardinality($2::text[]) = 0 OR state = ANY($2))
             AND ($3::text IS NULL OR strpos(lower(id), $3) > 0
                  OR strpos(lower(name), $3) > 0)
             AND (NOT $4 OR json_typeof(record -> 'after') = 'object')";
        let state: Vec<&str> = query.states.iter().map(|s| s.as_str()).collect();
        let search = query.search.as_deref().map(str::to_lowercase);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        let client = self.client().await?;
        // Without a search the count is the kept counts' sum (a million rows are not
        // counted for it); a search counts its matches.
        let total: i64 = if search.is_none() && !query.chained {
            client
                .query_one(
                    "SELECT COALESCE(sum(jobs), 0)::bigint FROM hermes_cron_job_counts
                     WHERE ($1 OR state <> 'completed')
                       AND (cardinality($2::text[]) = 0 OR state = ANY($2))",
                    &[&query.completed, &state],
                )
                .await
        } else {
            client
                .query_one(
                    &format!("SELECT count(*) FROM hermes_cron_jobs WHERE {MATCHING}"),
                    &[&query.completed, &state, &search, &query.chained],
                )
                .await
        }
        .map_err(|e| self.fail(e))?
        .get(0);
        let rows = if limit == 0 {
            Vec::new()
        } else {
            client
                .query(
                    &format!(
                        "SELECT record FROM hermes_cron_jobs WHERE {MATCHING}
                         ORDER BY position LIMIT $5 OFFSET $6"
                    ),
                    &[
                        &query.completed,
                        &state,
                        &search,
                        &query.chained,
                        &limit,
                        &offset,
                    ],
                )
                .await
                .map_err(|e| self.fail(e))?
        };
        Ok(JobPage {
            jobs: rows
                .iter()
                .map(|row| job_of(row, "record"))
                .collect::<Result<_, _>>()?,
            total: usize::try_from(total).unwrap_or(0),
        })
    }
}

impl PgStore {
    /// One pass in one transaction: the database's "now", the due jobs claimed, the
    /// unstarted claims of dead processes taken over, work shared with the live ones,
    /// the runs of dead processes closed, all before the commit.
    async fn claim(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        let now: DateTime<Utc> = if self.caller_clock {
            ctx.now
        } else {
            tx.query_one("SELECT now()", &[])
                .await
                .map_err(|e| self.fail(e))?
                .get(0)
        };
        let ctx = Context { now, ..*ctx };
        let live = self.live(&tx).await?;
        let (jobs, mut occurrences) = self.claim_due_jobs(&tx, &ctx, scan, &live).await?;
        occurrences.extend(self.take_over(&tx, &live, &ctx).await?);
        let backlog = self
            .share_work(&tx, &live, &ctx, scan, &mut occurrences)
            .await?;
        tx.execute(
            "UPDATE hermes_cron_runs SET status = 'interrupted', finished_at = now(),
                 error = COALESCE(error, 'the process running it stopped before it finished')
             WHERE status = 'running' AND NOT (instance = ANY($1))",
            &[&live],
        )
        .await
        .map_err(|e| self.fail(e))?;
        let wake: Option<DateTime<Utc>> = tx
            .query_one(
                "SELECT MIN(next_run_at) FROM hermes_cron_jobs WHERE runnable",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?
            .get(0);
        tx.commit().await.map_err(|e| self.fail(e))?;
        self.changed();
        let fresh_wake = earliest_next_run(&jobs, &ctx, scan.options.run_claim_ttl);
        Ok(DuePass {
            occurrences,
            next_wake: [wake, fresh_wake].into_iter().flatten().min(),
            ran: true,
            decided_at: Some(now),
            backlog,
        })
    }

    /// Claims the due jobs: completed one-shots past their retention removed, the due
    /// rows locked (skipping rows another host holds), decided, their schedules moved
    /// and their occurrences inserted. Returns the jobs as written and what became of
    /// each.
    async fn claim_due_jobs(
        &self,
        tx: &impl GenericClient,
        ctx: &Context,
        scan: &DueScan<'_>,
        live: &[String],
    ) -> Result<(Vec<Job>, Vec<Occurrence>), StoreError> {
        let retention_start = ctx.now - scan.completed_retention;
        tx.execute(
            "DELETE FROM hermes_cron_jobs WHERE done_since < $1",
            &[&retention_start],
        )
        .await
        .map_err(|e| self.fail(e))?;
        let batch = self.share_of_due(tx, ctx, scan).await?;
        let rows = tx
            .query(
                "SELECT record FROM hermes_cron_jobs
                 WHERE runnable AND (next_run_at IS NULL OR next_run_at <= $1)
                 ORDER BY next_run_at NULLS FIRST, position LIMIT $2
                 FOR UPDATE SKIP LOCKED",
                &[&ctx.now, &batch],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut jobs = healed_jobs(&rows, ctx)?;
        // A `run_claim` keeps Python Hermes off a one-shot on a shared jobs.json; nothing
        // else reads a database store, and the ledger's claim does that job here, so a
        // dispatched one-shot is settled at once (also when its host died running it).
        let options = crate::due::ScanOptions {
            run_claim_ttl: chrono::Duration::zero(),
            ..scan.options
        };
        let planned = plan_pass(&mut jobs, ctx, options);
        self.write_jobs(tx, &jobs, ctx).await?;
        let ids: Vec<&str> = jobs.iter().map(Job::id).collect();
        let busy: HashSet<String> = tx
            .query(
                "SELECT DISTINCT job_id FROM hermes_cron_runs
                 WHERE job_id = ANY($1) AND status IN ('claimed', 'running')
                   AND instance = ANY($2)",
                &[&ids, &live],
            )
            .await
            .map_err(|e| self.fail(e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let pending = prepare_claims(planned, ctx, scan, &mut |id| busy.contains(id));
        let occurrences = self.insert_claims(tx, pending).await?;
        self.note_runs_added(ids.iter().map(|id| id.to_string()));
        Ok((jobs, occurrences))
    }

    /// How many due jobs this pass claims. A daemon alone, or without a limit on its
    /// runs, claims every due job (up to [`CLAIM_BATCH`]). With several daemons alive, a
    /// burst is split from the first pass: each claims its share of what is due (and
    /// never fewer than its free run slots), the others — woken by the NOTIFY of this
    /// claim — take theirs, and whatever is still due is claimed by the next pass of
    /// whichever daemon comes first, which follows at once. Everything due is claimed
    /// within a few passes, as before; only who claims it changes, so no occurrence
    /// waits behind one host's full slots while another host idles.
    async fn share_of_due(
        &self,
        tx: &impl GenericClient,
        ctx: &Context,
        scan: &DueScan<'_>,
    ) -> Result<i64, StoreError> {
        let Some(free) = scan.free_slots else {
            return Ok(CLAIM_BATCH);
        };
        let row = tx
            .query_one(
                "SELECT (SELECT count(*) FROM hermes_cron_hosts
                         WHERE kind = 'daemon'
                           AND heartbeat_at > now() - make_interval(secs => $3)),
                        (SELECT count(*) FROM (SELECT 1 FROM hermes_cron_jobs
                         WHERE runnable AND (next_run_at IS NULL OR next_run_at <= $1)
                         LIMIT $2) AS due)",
                &[&ctx.now, &CLAIM_BATCH, &LEASE.as_secs_f64()],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let (daemons, due): (i64, i64) = (row.get(0), row.get(1));
        if daemons <= 1 {
            return Ok(CLAIM_BATCH);
        }
        let share = (due + daemons - 1) / daemons;
        let free = i64::try_from(free).unwrap_or(CLAIM_BATCH);
        Ok(share.max(free).clamp(1, CLAIM_BATCH))
    }

    /// Inserts the ledger rows of a pass in one statement and settles each occurrence:
    /// its new row, or `Taken` when the occurrence was in the ledger already (another
    /// host recorded it first).
    async fn insert_claims(
        &self,
        client: &impl GenericClient,
        pending: Vec<PendingClaim>,
    ) -> Result<Vec<Occurrence>, StoreError> {
        let claims: Vec<&OwnedClaim> = pending.iter().filter_map(|p| p.request.as_ref()).collect();
        let mut inserted: HashMap<String, i64> = HashMap::new();
        if !claims.is_empty() {
            // A fire is `claimed` until the process starts it (see `start_run`).
            let status: Vec<&str> = claims
                .iter()
                .map(|c| match &c.status {
                    RunStatus::Running => RunStatus::Claimed.as_str(),
                    other => other.as_str(),
                })
                .collect();
            let finished: Vec<Option<DateTime<Utc>>> = claims
                .iter()
                .map(|c| (c.status != RunStatus::Running).then_some(c.started_at))
                .collect();
            let job_ids: Vec<&str> = claims.iter().map(|c| c.job_id.as_str()).collect();
            let keys: Vec<&str> = claims.iter().map(|c| c.occurrence.as_str()).collect();
            let scheduled: Vec<DateTime<Utc>> = claims.iter().map(|c| c.scheduled_at).collect();
            let started: Vec<DateTime<Utc>> = claims.iter().map(|c| c.started_at).collect();
            let errors: Vec<Option<&str>> = claims.iter().map(|c| c.error.as_deref()).collect();
            let rows = client
                .query(
                    "INSERT INTO hermes_cron_runs (job_id, occurrence, scheduled_at, source,
                         instance, host, pid, status, started_at, finished_at, error)
                     SELECT u.job_id, u.occurrence, u.scheduled_at, 'scheduler', $8, $9, $10,
                         u.status, u.started_at, u.finished_at, u.error
                     FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[],
                                 $5::timestamptz[], $6::timestamptz[], $7::text[])
                         AS u(job_id, occurrence, scheduled_at, status, started_at,
                              finished_at, error)
                     ON CONFLICT DO NOTHING RETURNING id, occurrence",
                    &[
                        &job_ids,
                        &keys,
                        &scheduled,
                        &status,
                        &started,
                        &finished,
                        &errors,
                        &self.instance,
                        &self.owner.host,
                        &i64::from(self.owner.pid),
                    ],
                )
                .await
                .map_err(|e| self.fail(e))?;
            inserted = rows.iter().map(|r| (r.get(1), r.get(0))).collect();
        }
        Ok(pending
            .into_iter()
            .map(|p| {
                let run = p
                    .request
                    .as_ref()
                    .and_then(|r| inserted.get(&r.occurrence).copied());
                p.settle(Ok(run))
            })
            .collect())
    }

    /// Occurrences claimed by processes whose lease ran out before they started them:
    /// this process takes them over (each row moves once: the update locks it).
    async fn take_over(
        &self,
        client: &impl GenericClient,
        live: &[String],
        ctx: &Context,
    ) -> Result<Vec<Occurrence>, StoreError> {
        let rows = client
            .query(
                "UPDATE hermes_cron_runs r SET instance = $1, host = $2, pid = $3
                 FROM hermes_cron_jobs j
                 WHERE r.status = 'claimed' AND r.job_id = j.id AND NOT (r.instance = ANY($4))
                 RETURNING r.id, r.scheduled_at, j.record",
                &[
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                    &live,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        rows.iter().map(|row| handed_over(row, ctx)).collect()
    }

    /// Work sharing between live processes. One with run slots left after its own
    /// claims takes occurrences others claimed but have not started (they wait for a
    /// slot there): at most one per free slot, the longest due first. One that claimed
    /// more than it can start tells the others at commit, so an idle host comes for them
    /// at once (the heartbeat notices them too, should the notification be lost).
    /// Returns whether others may still hold occurrences they have not started.
    async fn share_work(
        &self,
        client: &impl GenericClient,
        live: &[String],
        ctx: &Context,
        scan: &DueScan<'_>,
        occurrences: &mut Vec<Occurrence>,
    ) -> Result<bool, StoreError> {
        let mine = occurrences
            .iter()
            .filter(|o| matches!(o.claimed, Claimed::Run { .. }))
            .count();
        if scan.free_slots.is_some_and(|free| mine > free) {
            client
                .execute("SELECT pg_notify($1, 'backlog')", &[&CHANNEL])
                .await
                .map_err(|e| self.fail(e))?;
        }
        let waiting: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM hermes_cron_runs WHERE status = 'claimed'
                     AND instance <> $1 AND instance = ANY($2))",
                &[&self.instance, &live],
            )
            .await
            .map_err(|e| self.fail(e))?
            .get(0);
        let room = scan.free_slots.map_or(CLAIM_BATCH, |free| {
            i64::try_from(free.saturating_sub(mine)).map_or(CLAIM_BATCH, |n| n.min(CLAIM_BATCH))
        });
        if !waiting || room == 0 {
            return Ok(waiting);
        }
        let taken = self.take_waiting(client, live, ctx, scan, room).await?;
        // Fewer than there was room for: what still waits is being started or taken by
        // others right now (locked), or is of a job running here.
        let more = i64::try_from(taken.len()).is_ok_and(|n| n >= room);
        occurrences.extend(taken);
        Ok(more)
    }

    /// Takes up to `room` occurrences other live processes claimed and have not started.
    /// The row update is the lock: the owner's `start_run` either went first (the row is
    /// `running`, not taken) or finds the row gone to this process and runs nothing.
    /// Among occurrences due at the same instant the last claimed go first: the owner
    /// starts its own in claim order, so the two rarely reach for the same row. A job
    /// already running here is left to its owner.
    async fn take_waiting(
        &self,
        client: &impl GenericClient,
        live: &[String],
        ctx: &Context,
        scan: &DueScan<'_>,
        room: i64,
    ) -> Result<Vec<Occurrence>, StoreError> {
        let running: Vec<&str> = scan.running_here.iter().map(String::as_str).collect();
        let rows = client
            .query(
                "UPDATE hermes_cron_runs r SET instance = $1, host = $2, pid = $3
                 FROM hermes_cron_jobs j
                 WHERE r.id IN (SELECT id FROM hermes_cron_runs
                                WHERE status = 'claimed' AND instance <> $1
                                  AND instance = ANY($4) AND NOT (job_id = ANY($5))
                                ORDER BY scheduled_at, id DESC LIMIT $6
                                FOR UPDATE SKIP LOCKED)
                   AND r.status = 'claimed' AND r.job_id = j.id
                 RETURNING r.id, r.scheduled_at, j.record",
                &[
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                    &live,
                    &running,
                    &room,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        rows.iter().map(|row| handed_over(row, ctx)).collect()
    }
}

/// A claimed occurrence another process held, now this one's to run.
fn handed_over(row: &Row, ctx: &Context) -> Result<Occurrence, StoreError> {
    let scheduled_at: Option<DateTime<Utc>> = row.get("scheduled_at");
    Ok(Occurrence {
        job: job_of(row, "record")?,
        decision: Decision::Fire {
            scheduled_at: scheduled_at.unwrap_or(ctx.now),
            late: false,
        },
        claimed: Claimed::Run { run: row.get("id") },
    })
}

impl PgStore {
    /// One attempt at [`JobRecords::update_jobs`], in one transaction.
    async fn try_update_jobs(
        &self,
        ctx: &Context,
        ids: &[&str],
        change: &mut BatchChange,
    ) -> Result<(), Failed> {
        let mut client = self.client().await.map_err(Failed::unreachable)?;
        let tx = client.transaction().await.map_err(|e| self.failed(e))?;
        let rows = tx
            .query(
                "SELECT record FROM hermes_cron_jobs WHERE id = ANY($1)
                 ORDER BY position FOR UPDATE",
                &[&ids],
            )
            .await
            .map_err(|e| self.failed(e))?;
        let mut jobs = healed_jobs(&rows, ctx)?;
        for job in &mut jobs {
            change(job);
        }
        self.write_jobs(&tx, &jobs, ctx).await?;
        tx.commit().await.map_err(|e| self.failed(e))
    }
}
