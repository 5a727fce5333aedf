//! The PostgreSQL store's run ledger ([`RunLedger`]): every host's runs, spend and
//! budget notices in one database.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::patience::{Failed, Patience};
use super::PgStore;
use crate::ledger::{
    ledger_time, CancelTarget, RunEnd, RunRequest, RunRow, RunStatus, SPEND_COLUMNS,
};
use crate::spend::Spend;
use crate::store::{RunLedger, StoreError};

fn run_row(row: &Row) -> RunRow {
    let time = |name: &str| row.get::<_, Option<DateTime<Utc>>>(name).map(ledger_time);
    RunRow {
        id: row.get("id"),
        job_id: row.get("job_id"),
        occurrence: row.get("occurrence"),
        source: row.get("source"),
        pid: row.get("pid"),
        host: row.get("host"),
        status: RunStatus::parse(row.get("status")),
        scheduled_at: time("scheduled_at"),
        started_at: time("started_at"),
        finished_at: time("finished_at"),
        error: row.get("error"),
        delivery: row.get("delivery"),
        prompt_tokens: row.get("prompt_tokens"),
        completion_tokens: row.get("completion_tokens"),
        cost_usd: row.get("cost_usd"),
        model: row.get("model"),
        replay_of: row.get("replay_of"),
    }
}

#[async_trait::async_trait]
impl RunLedger for PgStore {
    async fn claim_backfill(
        &self,
        job_id: &str,
        scheduled_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let occurrence = crate::ledger::occurrence_key(job_id, scheduled_at);
        let client = self.client().await?;
        self.note_runs_added([job_id.to_string()]);
        let row = client
            .query_opt(
                "INSERT INTO hermes_cron_runs (job_id, occurrence, scheduled_at, source,
                         instance, host, pid, status, started_at)
                     VALUES ($1, $2, $3, 'backfill', $4, $5, $6, 'running', $7)
                     ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &job_id,
                    &occurrence,
                    &scheduled_at,
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                    &now,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// A run that ended is recorded even when its end falls in a failover: while the
    /// database cannot be reached, or answers that it is shutting down or read-only (a
    /// standby not promoted yet), the write is tried again every half second for up to
    /// 30 s (it sets the row to the same values each time; `patience.rs`). Only the row
    /// this process claimed is written. When it is gone — an asynchronous failover lost
    /// it with the old primary, and maybe gave its id to another run — the run is
    /// recorded again from its identity, unless its occurrence has a row already (it
    /// was claimed again there).
    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        // The spend windows are read by the clock that decides: a pinned process clock
        // stamps the end of its own runs.
        let pinned = self.caller_clock.then_some(now);
        let patience = Patience::start();
        loop {
            let written = match self.client().await {
                Ok(client) => {
                    self.try_finish_run(&client, run, &status, pinned, end)
                        .await
                }
                Err(e) => Err(Failed::unreachable(e)),
            };
            match written {
                Ok(()) => return Ok(()),
                Err(failed) => patience.after(failed).await?,
            }
        }
    }

    async fn interrupt_dead_runs(
        &self,
        _now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        let client = self.client().await?;
        let mut live = self.live(&client).await?;
        if except_own {
            live.retain(|instance| *instance != self.instance);
        }
        let marked = client
                .execute(
                    "UPDATE hermes_cron_runs SET status = 'interrupted', finished_at = now(),
                         error = COALESCE(error, 'the process running it stopped before it finished')
                     WHERE status = 'running' AND NOT (instance = ANY($1))",
                    &[&live],
                )
                .await
                .map_err(|e| self.fail(e))?;
        Ok(marked as usize)
    }

    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT * FROM hermes_cron_runs WHERE ($1::text IS NULL OR job_id = $1)
                     ORDER BY id DESC LIMIT $2",
                &[&job_id, &limit],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(run_row).collect())
    }

    async fn run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT * FROM hermes_cron_runs WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.as_ref().map(run_row))
    }

    async fn set_run_delivery(&self, id: i64, delivery: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE hermes_cron_runs SET delivery = $2 WHERE id = $1",
                &[&id, &delivery],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn latest_runs(
        &self,
        only: Option<&[String]>,
    ) -> Result<HashMap<String, RunRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT ON (job_id) * FROM hermes_cron_runs
                 WHERE $1::text[] IS NULL OR job_id = ANY($1)
                 ORDER BY job_id, id DESC",
                &[&only],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows
            .iter()
            .map(run_row)
            .map(|r| (r.job_id.clone(), r))
            .collect())
    }

    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {SPEND_COLUMNS} FROM hermes_cron_runs
                     WHERE finished_at >= $1 AND (prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL)
                     GROUP BY job_id, model ORDER BY job_id, model"
                ),
                &[&since],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows
            .iter()
            .map(|row| Spend {
                job_id: row.get(0),
                model: row.get(1),
                runs: row.get(2),
                prompt_tokens: row.get(3),
                completion_tokens: row.get(4),
                cost_usd: row.get(5),
                unpriced_runs: row.get(6),
            })
            .collect())
    }

    async fn claim_budget_notice(
        &self,
        window: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let inserted = client
            .execute(
                "INSERT INTO hermes_cron_budget_notices (window_key, sent_at) VALUES ($1, $2)
                     ON CONFLICT DO NOTHING",
                &[&window, &now],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(inserted == 1)
    }

    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let keep = i64::try_from(keep_runs).unwrap_or(i64::MAX);
        let jobs: Vec<String> = {
            let mut unpruned = self.unpruned.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut *unpruned).into_iter().collect()
        };
        let result = async {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM hermes_cron_outbox WHERE state NOT IN ('pending', 'sending')
                         AND created_at < $1",
                    &[&before],
                )
                .await
                .map_err(|e| self.fail(e))?;
            if jobs.is_empty() {
                return Ok(());
            }
            client
                .execute(
                    "DELETE FROM hermes_cron_runs WHERE id IN (
                         SELECT id FROM (
                             SELECT id, ROW_NUMBER() OVER (PARTITION BY job_id ORDER BY id DESC) AS n
                             FROM hermes_cron_runs
                             WHERE job_id = ANY($2) AND status NOT IN ('claimed', 'running')
                         ) ranked WHERE n > $1)
                     AND NOT ((prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL)
                              AND finished_at >= $3)",
                    &[&keep, &jobs, &spend_since],
                )
                .await
                .map_err(|e| self.fail(e))?;
            Ok(())
        }.await;
        if result.is_err() {
            // Trimmed on a later pass instead.
            self.note_runs_added(jobs);
        }
        result
    }

    async fn request_cancel(
        &self,
        target: CancelTarget<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<i64>, StoreError> {
        let (job, run) = target.parts();
        let client = self.client().await?;
        let rows = client
            .query(
                "UPDATE hermes_cron_runs SET cancel_requested = COALESCE(cancel_requested, $3)
                     WHERE status IN ('claimed', 'running')
                       AND (($1::text IS NOT NULL AND job_id = $1) OR id = $2)
                     RETURNING id",
                &[&job, &run, &now],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    async fn cancels_requested(&self, runs: &[i64]) -> Result<Vec<i64>, StoreError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id FROM hermes_cron_runs
                  WHERE id = ANY($1) AND cancel_requested IS NOT NULL",
                &[&runs],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn note_run_request(&self, run: i64, request: &RunRequest) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE hermes_cron_runs SET run_prompt = $2, run_model = $3, replay_of = $4,
                         source = CASE WHEN $4::bigint IS NULL THEN source ELSE 'replay' END
                     WHERE id = $1",
                &[&run, &request.prompt, &request.model, &request.replay_of],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn run_request(&self, run: i64) -> Result<Option<(String, RunRequest)>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT job_id, run_prompt, run_model, replay_of FROM hermes_cron_runs WHERE id = $1",
                &[&run],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| {
            (
                r.get(0),
                RunRequest {
                    prompt: r.get(1),
                    model: r.get(2),
                    replay_of: r.get(3),
                },
            )
        }))
    }

    async fn take_queued(
        &self,
        job_id: &str,
        after: i64,
        _now: DateTime<Utc>,
    ) -> Result<Option<(i64, DateTime<Utc>)>, StoreError> {
        use crate::ledger::{QUEUED, QUEUED_SUPERSEDED};
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        let taken = tx
            .query_opt(
                "UPDATE hermes_cron_runs SET status = 'running', error = NULL,
                         finished_at = NULL, started_at = now(), instance = $4, host = $5,
                         pid = $6
                     WHERE id = (SELECT id FROM hermes_cron_runs WHERE job_id = $1 AND id > $2
                                     AND status = 'skipped' AND error = $3
                                 ORDER BY id DESC LIMIT 1 FOR UPDATE SKIP LOCKED)
                     RETURNING id, scheduled_at",
                &[
                    &job_id,
                    &after,
                    &QUEUED,
                    &self.instance,
                    &self.owner.host,
                    &i64::from(self.owner.pid),
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let Some(row) = taken else {
            return Ok(None);
        };
        let id: i64 = row.get(0);
        let at: Option<DateTime<Utc>> = row.get(1);
        tx.execute(
            "UPDATE hermes_cron_runs SET error = $4 WHERE job_id = $1 AND id > $2 AND id < $3
                 AND status = 'skipped' AND error = $5",
            &[&job_id, &after, &id, &QUEUED_SUPERSEDED, &QUEUED],
        )
        .await
        .map_err(|e| self.fail(e))?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(at.map(|at| (id, at)))
    }
}

impl PgStore {
    /// One attempt at [`RunLedger::finish_run`].
    async fn try_finish_run(
        &self,
        client: &deadpool_postgres::Object,
        run: i64,
        status: &RunStatus,
        pinned: Option<DateTime<Utc>>,
        end: &RunEnd,
    ) -> Result<(), Failed> {
        // What the end says, in the order both statements below take it.
        let status = status.as_str();
        let ended: [&(dyn ToSql + Sync); 9] = [
            &status,
            &pinned,
            &end.error,
            &end.delivery,
            &end.prompt_tokens,
            &end.completion_tokens,
            &end.output,
            &end.cost_usd,
            &end.model,
        ];
        let mine: [&(dyn ToSql + Sync); 2] = [&run, &self.instance];
        let updated = client
            .execute(
                "UPDATE hermes_cron_runs SET status = $1, finished_at = COALESCE($2, now()),
                     error = $3, delivery = $4, prompt_tokens = $5, completion_tokens = $6,
                     output = $7, cost_usd = $8, model = $9
                 WHERE id = $10 AND instance = $11",
                &[&ended[..], &mine[..]].concat(),
            )
            .await
            .map_err(|e| self.failed(e))?;
        let Some(who) = end.identity.as_ref().filter(|_| updated == 0) else {
            return Ok(());
        };
        let source = who.source.as_str();
        let pid = i64::from(self.owner.pid);
        let identity: [&(dyn ToSql + Sync); 7] = [
            &who.job_id,
            &who.occurrence,
            &who.scheduled_at,
            &source,
            &self.instance,
            &self.owner.host,
            &pid,
        ];
        let again = client
            .execute(
                "INSERT INTO hermes_cron_runs (status, finished_at, error, delivery,
                     prompt_tokens, completion_tokens, output, cost_usd, model,
                     job_id, occurrence, scheduled_at, source, instance, host, pid, started_at)
                 VALUES ($1, COALESCE($2, now()), $3, $4, $5, $6, $7, $8, $9,
                     $10, $11, $12, $13, $14, $15, $16, $17)
                 ON CONFLICT DO NOTHING",
                &[&ended[..], &identity[..], &[&who.started_at]].concat(),
            )
            .await
            .map_err(|e| self.failed(e))?;
        tracing::warn!(
            occurrence = %who.occurrence,
            "the run's ledger row was gone from the database (lost in a failover?): {}",
            if again == 1 {
                "recorded it again"
            } else {
                "its occurrence was claimed again there, so that row stands"
            }
        );
        Ok(())
    }
}
