//! Noticing that the database failed over, and remembering it in the database.
//!
//! A URL that lists several servers (`?host=/a,/b&target_session_attrs=read-write`, or
//! `postgresql://h1,h2/db?…`) lets the pool reconnect to whichever one accepts writes
//! when the primary goes away and a standby is promoted. Promotion starts a new WAL
//! timeline, so each new connection reads the timeline it writes on: a higher one than
//! this process saw before is a failover. The first process to notice one records it in
//! `hermes_cron_failovers`, with whether the old primary waited for its standby on each
//! commit (synchronous replication) — the one fact that decides whether anything was
//! lost with it. `doctor` reads those rows back ([`Failover`]).
//!
//! With synchronous replication every commit a host was told of is on the new primary,
//! so nothing runs twice. With asynchronous replication the commits the standby had not
//! received are gone: an occurrence claimed or recorded in those last moments is due
//! again on the new primary and runs again. Those repeats are among the runs the
//! failover row lists: occurrences due before the failover was noticed that started
//! after it.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio_postgres::Client;

use crate::store::{Failover, StoreError};

/// What the connections of one process saw of the database's timeline.
pub(super) struct TimelineWatch {
    instance: String,
    seen: Mutex<Option<Seen>>,
}

#[derive(Clone, Copy)]
struct Seen {
    timeline: i32,
    /// The server waited for a standby on each commit (`synchronous_standby_names` set
    /// and `synchronous_commit` at least `remote_write`).
    synchronous: bool,
}

/// The timeline the server writes on (the first 8 hex digits of its current WAL file's
/// name) and whether its commits wait for a standby. Fails on a standby (no WAL of its
/// own to write), which a read-write session never is.
const READ: &str =
    "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int,
       current_setting('synchronous_standby_names') <> ''
       AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')";

impl TimelineWatch {
    pub(super) fn new(instance: &str) -> Arc<TimelineWatch> {
        Arc::new(TimelineWatch {
            instance: instance.to_string(),
            seen: Mutex::new(None),
        })
    }

    /// Reads a new connection's timeline; when it is past the one seen before, records
    /// the failover (once per timeline, whoever notices first) and says so in the log.
    /// Best effort: a connection that cannot tell is used all the same.
    pub(super) async fn check(&self, client: &Client) {
        let Ok(row) = client.query_one(READ, &[]).await else {
            return;
        };
        let now = Seen {
            timeline: row.get(0),
            synchronous: row.get(1),
        };
        let before = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let before = *seen;
            if before.is_none_or(|b| now.timeline >= b.timeline) {
                *seen = Some(now);
            }
            before
        };
        let Some(before) = before.filter(|b| now.timeline > b.timeline) else {
            return;
        };
        let replication = if before.synchronous {
            "synchronous: nothing a host was told was written is lost"
        } else {
            "asynchronous: what the standby had not received is lost, and occurrences \
             claimed or recorded in those last moments run again"
        };
        tracing::warn!(
            "the PostgreSQL store failed over: now writing on timeline {} (was {}); the old \
             primary's replication was {replication}",
            now.timeline,
            before.timeline
        );
        let recorded = client
            .execute(
                "INSERT INTO hermes_cron_failovers (timeline, previous, noticed_by, synchronous)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (timeline) DO NOTHING",
                &[
                    &now.timeline,
                    &before.timeline,
                    &self.instance,
                    &before.synchronous,
                ],
            )
            .await;
        if let Err(e) = recorded {
            tracing::warn!("cannot record the failover in the store: {e}");
        }
    }
}

/// How far back `doctor` looks for failovers: a day.
const RECENT_S: f64 = 86_400.0;
/// How long before a failover an occurrence may have been due to be listed as one that
/// may have run twice (a standby more than this far behind loses more, and says so in
/// `pg_stat_replication` long before).
const REPEAT_WINDOW_S: f64 = 600.0;
/// Runs started this close before the failover was noticed count as after it: the
/// hosts' clocks and the database's differ a little.
const SKEW_S: f64 = 1.0;
/// The most repeats listed per failover.
const MAX_LISTED: i64 = 200;

/// The failovers of the last day, newest first, each with the runs that may repeat an
/// occurrence the old primary had already seen run.
pub(super) async fn recent(
    client: &Client,
    fail: impl Fn(tokio_postgres::Error) -> StoreError,
) -> Result<Vec<Failover>, StoreError> {
    let rows = client
        .query(
            "SELECT timeline, previous, noticed_at, noticed_by, synchronous
             FROM hermes_cron_failovers
             WHERE noticed_at > now() - make_interval(secs => $1)
             ORDER BY noticed_at DESC",
            &[&RECENT_S],
        )
        .await
        .map_err(&fail)?;
    let mut failovers = Vec::with_capacity(rows.len());
    for row in rows {
        let noticed_at: DateTime<Utc> = row.get("noticed_at");
        let repeats = client
            .query(
                "SELECT occurrence FROM hermes_cron_runs
                 WHERE scheduled_at < $1
                   AND scheduled_at > $1 - make_interval(secs => $2)
                   AND started_at >= $1 - make_interval(secs => $3)
                 ORDER BY scheduled_at, id LIMIT $4",
                &[&noticed_at, &REPEAT_WINDOW_S, &SKEW_S, &MAX_LISTED],
            )
            .await
            .map_err(&fail)?;
        failovers.push(Failover {
            timeline: row.get("timeline"),
            previous: row.get("previous"),
            noticed_at,
            noticed_by: row.get("noticed_by"),
            synchronous: row.get("synchronous"),
            may_repeat: repeats.iter().map(|r| r.get(0)).collect(),
        });
    }
    Ok(failovers)
}
