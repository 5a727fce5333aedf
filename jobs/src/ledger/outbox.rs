//! The delivery outbox: a table in `cron/executions.db` holding deliveries that failed
//! for a reason that may pass (connection refused, 429, 5xx), retried on later scheduler
//! passes until `cron.delivery_retry_hours` after the run. One row per occurrence and
//! target (a unique key), and a row is claimed (`pending` → `sending`) in one statement
//! before it is sent, so no two processes ever send the same row. The claimer (host and
//! pid) is recorded, and every request of a retry marks the row in flight until its
//! answer comes back. A row left `sending` by a process that died is given back to
//! `pending` when nothing was in flight (it died between attempts: nothing can have
//! arrived), and closed as `failed` when a request was out (it may have arrived: at most
//! once beats at least once for chat messages).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, OptionalExtension};

use crate::ledger::{ledger_time, LedgerError};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    occurrence      TEXT NOT NULL,
    target          TEXT NOT NULL,
    job_id          TEXT NOT NULL,
    run_at          TEXT,
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL,
    sent_parts      INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    next_attempt_at TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    finished_at     TEXT,
    last_error      TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS outbox_occurrence_target ON outbox(occurrence, target);
CREATE INDEX IF NOT EXISTS outbox_state ON outbox(state);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox(state, next_attempt_at);
-- Every pass expires the pending rows whose window closed; without this index that
-- reads every queued row (payload included) on every pass.
CREATE INDEX IF NOT EXISTS outbox_expiry ON outbox(state, expires_at);
-- Likewise for pruning the finished rows, also done on every pass.
CREATE INDEX IF NOT EXISTS outbox_finished ON outbox(state, created_at);
";

/// Closes the pending rows whose retry window has closed (run on every claim).
const EXPIRE: &str = "UPDATE outbox SET state = 'expired', finished_at = ?1
                      WHERE state = 'pending' AND expires_at <= ?1";

/// Drops the finished rows (sent, failed, expired) created before ?1. Naming the states
/// (not "NOT IN pending, sending") lets it read the index instead of every row.
const PRUNE: &str = "DELETE FROM outbox WHERE state IN ('sent', 'failed', 'expired')
                     AND created_at < ?1";

/// Where a row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxState {
    /// Waiting for its next attempt.
    Pending,
    /// Claimed by a process that is sending it (or died while sending: never resent).
    Sending,
    /// Delivered.
    Sent,
    /// The platform refused it for good (403, bad chat) on a retry.
    Failed,
    /// Still failing when the retry window closed.
    Expired,
}

impl OutboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Sending => "sending",
            OutboxState::Sent => "sent",
            OutboxState::Failed => "failed",
            OutboxState::Expired => "expired",
        }
    }
}

/// A delivery to keep for later.
#[derive(Debug, Clone)]
pub struct NewOutboxItem<'a> {
    pub occurrence: &'a str,
    /// The resolved destination, e.g. `telegram:-1001234567890:17`.
    pub target: &'a str,
    pub job_id: &'a str,
    /// The job's `last_run_at` as that run recorded it: a later successful retry only
    /// clears the job's delivery error while this is still the job's last run.
    pub run_at: DateTime<Utc>,
    /// The zone `run_at` is kept in: the job's, as its `last_run_at` is written
    /// ([`NewOutboxItem::run_at_text`]).
    pub run_zone: Tz,
    /// What to send (the delivery module's own JSON).
    pub payload: &'a str,
    /// Parts already delivered (a long message split in parts resumes after them).
    pub sent_parts: i64,
    pub error: &'a str,
    pub now: DateTime<Utc>,
    pub first_retry: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl NewOutboxItem<'_> {
    /// `run_at` as the outbox keeps it: zoned ISO text, as the job's `last_run_at`.
    pub fn run_at_text(&self) -> String {
        schedules::format_instant(self.run_at, self.run_zone)
    }
}

/// One claimed row.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxItem {
    pub id: i64,
    pub occurrence: String,
    pub target: String,
    pub job_id: String,
    pub run_at: Option<String>,
    pub payload: String,
    pub sent_parts: i64,
    pub attempts: i64,
    pub expires_at: DateTime<Utc>,
    pub last_error: Option<String>,
}

pub struct Outbox {
    conn: Connection,
    path: PathBuf,
}

fn parse_time(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The wait before attempt `attempts + 1`: 30 s, 1 min, 2 min … capped at 30 min.
pub fn retry_delay(attempts: i64) -> chrono::Duration {
    let seconds = 30i64.saturating_mul(1 << attempts.clamp(0, 6));
    chrono::Duration::seconds(seconds.min(30 * 60))
}

impl Outbox {
    /// Opens the outbox table in the ledger database (creating it if needed).
    pub fn open(path: &Path) -> Result<Outbox, LedgerError> {
        // Columns added after the first release.
        let added = [
            ("claimed_host", "TEXT"),
            ("claimed_pid", "INTEGER"),
            ("in_flight", "INTEGER NOT NULL DEFAULT 0"),
        ];
        let conn = crate::ledger::open_table(path, SCHEMA, "outbox", &added)?;
        Ok(Outbox {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn wrap(&self, source: rusqlite::Error) -> LedgerError {
        LedgerError {
            path: self.path.clone(),
            source,
        }
    }

    /// Keeps a failed delivery for later. Returns false when this occurrence and target
    /// are already in the outbox (it is then left as it is).
    pub fn enqueue(&self, item: &NewOutboxItem<'_>) -> Result<bool, LedgerError> {
        Ok(self.insert(item, None)?.is_some())
    }

    /// Keeps a delivery *before* its first request, claimed by this process (`sending`,
    /// one attempt, retried from `first_retry` if it fails): a crash in the middle of
    /// it leaves a row for [`Outbox::release_orphans`]. Returns the row, or `None` when
    /// this occurrence and target are already in the outbox (nothing is inserted).
    pub fn enqueue_claimed(
        &self,
        item: &NewOutboxItem<'_>,
        host: &str,
        pid: u32,
    ) -> Result<Option<i64>, LedgerError> {
        self.insert(item, Some((host, pid)))
    }

    /// One new row, `pending` or (with a claimer) `sending`; `None` when the occurrence
    /// and target are already there.
    fn insert(
        &self,
        item: &NewOutboxItem<'_>,
        claimer: Option<(&str, u32)>,
    ) -> Result<Option<i64>, LedgerError> {
        let state = if claimer.is_some() {
            OutboxState::Sending
        } else {
            OutboxState::Pending
        };
        let inserted = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO outbox (occurrence, target, job_id, run_at, payload, state,
                     sent_parts, attempts, created_at, next_attempt_at, expires_at, last_error,
                     claimed_host, claimed_pid, in_flight)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12, ?13, 0)",
                params![
                    item.occurrence,
                    item.target,
                    item.job_id,
                    item.run_at_text(),
                    item.payload,
                    state.as_str(),
                    item.sent_parts,
                    ledger_time(item.now),
                    ledger_time(item.first_retry),
                    ledger_time(item.expires_at),
                    Some(item.error).filter(|e| !e.is_empty()),
                    claimer.map(|(host, _)| host),
                    claimer.map(|(_, pid)| pid),
                ],
            )
            .map_err(|e| self.wrap(e))?;
        Ok((inserted == 1).then(|| self.conn.last_insert_rowid()))
    }

    /// Claims every row due at `now` (at most `limit`), moving it to `sending`. Rows
    /// whose window has closed are marked expired instead and not returned.
    pub fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
        host: &str,
        pid: u32,
    ) -> Result<Vec<OutboxItem>, LedgerError> {
        let now_text = ledger_time(now);
        self.conn
            .execute(EXPIRE, params![now_text])
            .map_err(|e| self.wrap(e))?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, occurrence, target, job_id, run_at, payload, sent_parts, attempts,
                        expires_at, last_error
                 FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.wrap(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let candidates: Vec<OutboxItem> = stmt
            .query_map(params![now_text, limit], |r| {
                Ok(OutboxItem {
                    id: r.get(0)?,
                    occurrence: r.get(1)?,
                    target: r.get(2)?,
                    job_id: r.get(3)?,
                    run_at: r.get(4)?,
                    payload: r.get(5)?,
                    sent_parts: r.get(6)?,
                    attempts: r.get(7)?,
                    expires_at: parse_time(&r.get::<_, String>(8)?),
                    last_error: r.get(9)?,
                })
            })
            .map_err(|e| self.wrap(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.wrap(e))?;
        let mut claimed = Vec::new();
        for item in candidates {
            // Another process may have claimed it between the select and here.
            let won = self
                .conn
                .execute(
                    "UPDATE outbox SET state = 'sending', attempts = attempts + 1,
                         claimed_host = ?2, claimed_pid = ?3, in_flight = 0
                     WHERE id = ?1 AND state = 'pending'",
                    params![item.id, host, pid],
                )
                .map_err(|e| self.wrap(e))?;
            if won == 1 {
                claimed.push(item);
            }
        }
        Ok(claimed)
    }

    /// A request of this claimed row is going out: until its answer is recorded, a crash
    /// leaves the row's outcome unknown.
    pub fn request_going_out(&self, id: i64) -> Result<(), LedgerError> {
        self.conn
            .execute("UPDATE outbox SET in_flight = 1 WHERE id = ?1", params![id])
            .map(drop)
            .map_err(|e| self.wrap(e))
    }

    /// The answer to the row's request came back (or it never left); `delivered` counts
    /// one more item as arrived, so a retry after a crash resumes after it.
    pub fn answer_came_back(&self, id: i64, delivered: bool) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "UPDATE outbox SET in_flight = 0, sent_parts = sent_parts + ?2 WHERE id = ?1",
                params![id, i64::from(delivered)],
            )
            .map(drop)
            .map_err(|e| self.wrap(e))
    }

    /// Rows left `sending` by dead processes of this host: back to `pending` (due now)
    /// when no request was out, `failed` with outcome unknown when one was. Returns
    /// (given back, closed).
    pub fn release_orphans(
        &self,
        host: &str,
        alive: &dyn Fn(i64) -> bool,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, claimed_pid, in_flight FROM outbox
                 WHERE state = 'sending' AND claimed_host = ?1 AND claimed_pid IS NOT NULL",
            )
            .map_err(|e| self.wrap(e))?;
        let rows: Vec<(i64, i64, i64)> = stmt
            .query_map(params![host], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.wrap(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.wrap(e))?;
        let now_text = ledger_time(now);
        let (mut released, mut closed) = (0, 0);
        for (id, pid, in_flight) in rows {
            if alive(pid) {
                continue;
            }
            let changed = if in_flight == 0 {
                self.conn.execute(
                    "UPDATE outbox SET state = 'pending', next_attempt_at = ?2
                     WHERE id = ?1 AND state = 'sending'",
                    params![id, now_text],
                )
            } else {
                self.conn.execute(
                    "UPDATE outbox SET state = 'failed', finished_at = ?2, last_error =
                         'outcome unknown: the process sending it died while a request was out; not resent, to never post twice'
                     WHERE id = ?1 AND state = 'sending'",
                    params![id, now_text],
                )
            }
            .map_err(|e| self.wrap(e))?;
            if changed == 1 {
                if in_flight == 0 {
                    released += 1;
                } else {
                    closed += 1;
                }
            }
        }
        Ok((released, closed))
    }

    /// Ends a claimed row: sent, failed for good, or back to pending for another try.
    pub fn finish(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), LedgerError> {
        let attempts: i64 = self
            .conn
            .query_row(
                "SELECT attempts FROM outbox WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.wrap(e))?
            .unwrap_or(1);
        let next = ledger_time(now + retry_delay(attempts - 1));
        let finished = (state != OutboxState::Pending).then(|| ledger_time(now));
        self.conn
            .execute(
                "UPDATE outbox SET state = ?2, sent_parts = ?3,
                     last_error = COALESCE(?4, last_error), next_attempt_at = ?5, finished_at = ?6
                 WHERE id = ?1",
                params![id, state.as_str(), sent_parts, error, next, finished],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Rows of this occurrence not yet delivered nor given up (pending or being sent).
    pub fn open_for_occurrence(&self, occurrence: &str) -> Result<usize, LedgerError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM outbox WHERE occurrence = ?1
                     AND state IN ('pending', 'sending')",
                params![occurrence],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(|e| self.wrap(e))
    }

    /// How many rows are waiting to go out or being sent (the outbox depth).
    pub fn depth(&self) -> Result<usize, LedgerError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM outbox WHERE state IN ('pending', 'sending')",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(|e| self.wrap(e))
    }

    /// When the earliest pending row is due, so a sleeping scheduler wakes for it.
    pub fn earliest_due(&self) -> Result<Option<DateTime<Utc>>, LedgerError> {
        let next: Option<String> = self
            .conn
            .query_row(
                "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'pending'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.wrap(e))?;
        Ok(next.as_deref().map(parse_time))
    }

    /// The state of one occurrence's delivery to one target (for tests and `doctor`).
    pub fn state_of(&self, occurrence: &str, target: &str) -> Result<Option<String>, LedgerError> {
        self.conn
            .query_row(
                "SELECT state FROM outbox WHERE occurrence = ?1 AND target = ?2",
                params![occurrence, target],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.wrap(e))
    }

    /// Drops finished rows older than `before`.
    pub fn prune(&self, before: DateTime<Utc>) -> Result<usize, LedgerError> {
        self.conn
            .execute(PRUNE, params![ledger_time(before)])
            .map_err(|e| self.wrap(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn item<'a>(occurrence: &'a str, target: &'a str) -> NewOutboxItem<'a> {
        NewOutboxItem {
            occurrence,
            target,
            job_id: "abc",
            run_at: at("2026-03-01T10:00:00Z"),
            run_zone: chrono_tz::UTC,
            payload: "{}",
            sent_parts: 0,
            error: "connection refused",
            now: at("2026-03-01T10:00:00Z"),
            first_retry: at("2026-03-01T10:00:30Z"),
            expires_at: at("2026-03-01T16:00:00Z"),
        }
    }

    #[test]
    fn an_occurrence_and_target_is_kept_once_and_claimed_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("executions.db");
        let a = Outbox::open(&path).unwrap();
        let b = Outbox::open(&path).unwrap();
        assert!(a.enqueue(&item("abc@1", "telegram:1")).unwrap());
        assert!(!b.enqueue(&item("abc@1", "telegram:1")).unwrap());
        assert!(a.enqueue(&item("abc@1", "discord:2")).unwrap());
        assert!(a
            .claim_due(at("2026-03-01T10:00:10Z"), 10, "host", 1)
            .unwrap()
            .is_empty());
        assert_eq!(a.earliest_due().unwrap(), Some(at("2026-03-01T10:00:30Z")));
        let claimed = a
            .claim_due(at("2026-03-01T10:01:00Z"), 10, "host", 1)
            .unwrap();
        assert_eq!(claimed.len(), 2);
        assert!(b
            .claim_due(at("2026-03-01T10:01:00Z"), 10, "host", 1)
            .unwrap()
            .is_empty());
        a.finish(
            claimed[0].id,
            OutboxState::Sent,
            at("2026-03-01T10:01:01Z"),
            1,
            None,
        )
        .unwrap();
        a.finish(
            claimed[1].id,
            OutboxState::Pending,
            at("2026-03-01T10:01:01Z"),
            0,
            Some("503"),
        )
        .unwrap();
        assert_eq!(a.open_for_occurrence("abc@1").unwrap(), 1);
        assert_eq!(
            a.state_of("abc@1", "telegram:1").unwrap().as_deref(),
            Some("sent")
        );
        // The window closes: the pending row expires instead of being sent.
        assert!(a
            .claim_due(at("2026-03-01T17:00:00Z"), 10, "host", 1)
            .unwrap()
            .is_empty());
        assert_eq!(
            a.state_of("abc@1", "discord:2").unwrap().as_deref(),
            Some("expired")
        );
    }

    /// SQLite's plan for `sql`, one line per step.
    fn plan(outbox: &Outbox, sql: &str) -> Vec<String> {
        outbox
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(params!["2026-03-01T10:00:00Z"], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_pass_expires_and_prunes_through_indexes_not_every_queued_row() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = Outbox::open(&dir.path().join("executions.db")).unwrap();
        let expire = plan(&outbox, EXPIRE);
        assert!(
            expire.iter().any(|s| s.contains("outbox_expiry")),
            "{expire:?}"
        );
        let prune = plan(&outbox, PRUNE);
        assert!(
            prune.iter().any(|s| s.contains("outbox_finished")),
            "{prune:?}"
        );
        assert!(!prune.iter().any(|s| s.starts_with("SCAN")), "{prune:?}");
    }

    #[test]
    fn retry_delays_grow_and_are_capped() {
        assert_eq!(retry_delay(0).num_seconds(), 30);
        assert_eq!(retry_delay(1).num_seconds(), 60);
        assert_eq!(retry_delay(20).num_seconds(), 1800);
    }

    #[test]
    fn rows_of_a_dead_claimer_go_back_unless_a_request_was_out() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = Outbox::open(&dir.path().join("executions.db")).unwrap();
        for target in ["telegram:1", "telegram:2", "telegram:3", "telegram:4"] {
            outbox.enqueue(&item("abc@1", target)).unwrap();
        }
        let mut claimed = outbox
            .claim_due(at("2026-03-01T10:01:00Z"), 2, "host", 41)
            .unwrap();
        claimed.extend(
            outbox
                .claim_due(at("2026-03-01T10:01:00Z"), 2, "host", 42)
                .unwrap(),
        );
        // Row 1: between attempts, one part already delivered. Row 2: a request out.
        outbox.request_going_out(claimed[0].id).unwrap();
        outbox.answer_came_back(claimed[0].id, true).unwrap();
        outbox.request_going_out(claimed[1].id).unwrap();
        // pid 41 died; pid 42 (rows 3 and 4) is alive.
        let alive = |pid: i64| pid == 42;
        let now = at("2026-03-01T10:02:00Z");
        assert_eq!(outbox.release_orphans("host", &alive, now).unwrap(), (1, 1));
        assert_eq!(
            outbox.release_orphans("other", &|_| false, now).unwrap(),
            (0, 0)
        );
        let state = |target| outbox.state_of("abc@1", target).unwrap().unwrap();
        assert_eq!(state("telegram:1"), "pending");
        assert_eq!(state("telegram:2"), "failed");
        assert_eq!(state("telegram:3"), "sending");
        let again = outbox.claim_due(now, 10, "host", 43).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].target, "telegram:1");
        assert_eq!(again[0].sent_parts, 1, "resumes after the delivered part");
    }

    #[test]
    fn a_database_of_an_older_build_gets_the_claim_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("executions.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, occurrence TEXT NOT NULL,
                target TEXT NOT NULL, job_id TEXT NOT NULL, run_at TEXT, payload TEXT NOT NULL,
                state TEXT NOT NULL, sent_parts INTEGER NOT NULL DEFAULT 0,
                attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
                next_attempt_at TEXT NOT NULL, expires_at TEXT NOT NULL, finished_at TEXT,
                last_error TEXT);
             INSERT INTO outbox (occurrence, target, job_id, payload, state, created_at,
                next_attempt_at, expires_at)
             VALUES ('abc@1', 'telegram:1', 'abc', '{}', 'pending', '2026-03-01T10:00:00Z',
                '2026-03-01T10:00:30Z', '2026-03-01T16:00:00Z');",
        )
        .unwrap();
        drop(conn);
        let outbox = Outbox::open(&path).unwrap();
        let claimed = outbox
            .claim_due(at("2026-03-01T10:01:00Z"), 10, "host", 7)
            .unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(
            outbox
                .release_orphans("host", &|_| false, at("2026-03-01T10:02:00Z"))
                .unwrap(),
            (1, 0)
        );
    }
}
