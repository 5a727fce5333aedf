//! The PostgreSQL store's control room ([`Control`]): the global pause one `hermes
//! pause` sets for every host, each process's heartbeat row (its lease), and the end of
//! its session.

use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

use super::{forget, PgStore, LEASE};
use crate::estop::GlobalPause;
use crate::store::{Beat, Control, Heartbeat, LiveHost, StoreError, StoreInfo};

#[async_trait::async_trait]
impl Control for PgStore {
    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        self.pg_global_pause().await
    }

    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        self.pg_set_global_pause(pause).await
    }

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let (sql, error): (&str, Option<&str>) = match beat {
            Beat::Started { .. } => (
                "UPDATE hermes_cron_hosts SET kind = 'daemon', heartbeat_at = now() WHERE instance = $1",
                None,
            ),
            Beat::Alive(_) => (
                "UPDATE hermes_cron_hosts SET heartbeat_at = now() WHERE instance = $1",
                None,
            ),
            Beat::PassSucceeded(_) => (
                "UPDATE hermes_cron_hosts SET last_success = now() WHERE instance = $1",
                None,
            ),
            Beat::PassFailed(_, why) => (
                "UPDATE hermes_cron_hosts SET last_error_at = now(), last_error = $2
                 WHERE instance = $1",
                Some(why.as_str()),
            ),
            Beat::Stopped => (
                "UPDATE hermes_cron_hosts SET kind = 'stopped' WHERE instance = $1",
                None,
            ),
        };
        let client = self.client().await?;
        let result = match error {
            Some(why) => client.execute(sql, &[&self.instance, &why]).await,
            None => client.execute(sql, &[&self.instance]).await,
        };
        result.map(drop).map_err(|e| self.fail(e))
    }

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT host, pid, kind, heartbeat_at, last_success, last_error_at, last_error,
                         heartbeat_at > now() - make_interval(secs => $1) AS alive
                     FROM hermes_cron_hosts WHERE kind IN ('daemon', 'stopped')
                     ORDER BY heartbeat_at DESC",
                &[&LEASE.as_secs_f64()],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut beat = Heartbeat {
            seen: !rows.is_empty(),
            failovers: super::failover::recent(&client, |e| self.fail(e)).await?,
            ..Heartbeat::default()
        };
        for row in &rows {
            let kind: String = row.get("kind");
            let at: DateTime<Utc> = row.get("heartbeat_at");
            if kind == "daemon" && row.get::<_, bool>("alive") {
                beat.alive_at = Some(beat.alive_at.map_or(at, |a: DateTime<Utc>| a.max(at)));
                beat.hosts.push(LiveHost {
                    host: row.get("host"),
                    pid: row.get("pid"),
                    heartbeat_at: at,
                });
            }
            let success: Option<DateTime<Utc>> = row.get("last_success");
            beat.last_success = beat.last_success.max(success);
            let error_at: Option<DateTime<Utc>> = row.get("last_error_at");
            if let Some(error_at) = error_at {
                if beat.last_error.as_ref().is_none_or(|(t, _)| error_at > *t) {
                    let why: Option<String> = row.get("last_error");
                    beat.last_error = Some((error_at, why.unwrap_or_default()));
                }
            }
        }
        Ok(beat)
    }

    async fn describe(&self) -> Result<StoreInfo, StoreError> {
        let version: i64 = self
            .scalar(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM hermes_cron_schema_migrations",
                &[],
            )
            .await?;
        Ok(StoreInfo {
            backend: "postgresql",
            location: self.location.clone(),
            schema_version: Some(version),
        })
    }

    async fn close(&self) {
        for task in &self.background {
            task.abort();
        }
        if !self.closed.swap(true, Ordering::Relaxed) {
            forget(self.pool.clone(), self.instance.clone()).await;
        }
    }
}

impl PgStore {
    pub(super) async fn pg_global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT engaged_at, reason FROM hermes_cron_pause", &[])
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| GlobalPause {
            engaged_at: r.get(0),
            reason: r.get(1),
        }))
    }

    /// A change NOTIFYs every host (the table's trigger), so sleeping daemons pass
    /// again at once: a resume fires what is due without waiting for a wake-up.
    pub(super) async fn pg_set_global_pause(
        &self,
        pause: Option<&GlobalPause>,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let was = match pause {
            Some(p) => client
                .query_one(
                    "WITH before AS (SELECT count(*) AS n FROM hermes_cron_pause)
                     INSERT INTO hermes_cron_pause (id, engaged_at, reason) VALUES (1, $1, $2)
                     ON CONFLICT (id) DO UPDATE SET engaged_at = excluded.engaged_at,
                         reason = excluded.reason
                     RETURNING (SELECT n FROM before) > 0",
                    &[&p.engaged_at, &p.reason],
                )
                .await
                .map(|r| r.get::<_, bool>(0)),
            None => client
                .execute("DELETE FROM hermes_cron_pause", &[])
                .await
                .map(|n| n > 0),
        };
        was.map_err(|e| self.fail(e))
    }
}
