//! The run ledger, `cron/executions.db` (SQLite, WAL): one row per attempt, keyed by the
//! occurrence it fired for. The unique occurrence key is what makes a fire exactly-once
//! across processes and crashes: a claim that finds its key taken runs nothing.
//! It never deletes a row that is still `running`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{params, Connection};
use serde::Serialize;

use crate::ledger::spend::Spend;
pub use crate::ledger::status::RunStatus;

#[derive(Debug, thiserror::Error)]
#[error("run ledger {path}: {source}")]
pub struct LedgerError {
    pub path: PathBuf,
    #[source]
    pub source: rusqlite::Error,
}

/// Who started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSource {
    Scheduler,
    Manual,
    /// A chained run: a run of the job its `after` names ended ([`crate::model::chain`]).
    Chain,
    /// An occurrence in the past run by `hermes cron backfill`.
    Backfill,
    /// `hermes cron replay RUN`: a manual run repeating an earlier run's prompt and model.
    Replay,
}

impl RunSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RunSource::Scheduler => "scheduler",
            RunSource::Manual => "manual",
            RunSource::Chain => "chain",
            RunSource::Backfill => "backfill",
            RunSource::Replay => "replay",
        }
    }
}

/// One row, as `hermes cron runs --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub job_id: String,
    pub occurrence: String,
    pub source: String,
    pub pid: Option<i64>,
    pub host: Option<String>,
    pub status: RunStatus,
    /// The row's times stay the ledger's text, deliberately: `runs --json` prints them as
    /// stored, and the rows Python Hermes records beside ours
    /// ([`Ledger::python_executions`]) carry its own ISO text (microseconds, its offset),
    /// which a typed time would rewrite. Ours are [`ledger_time`] (UTC, milliseconds,
    /// `Z`); the few readers that need an instant parse them where they use them.
    pub scheduled_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
    pub delivery: Option<String>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    /// What the run's model requests cost in US dollars, priced when it was recorded;
    /// `null` when unknown (no usage reported, or a model without a price).
    pub cost_usd: Option<f64>,
    /// The model that answered the run's last request.
    pub model: Option<String>,
    /// A replay: the run it repeats (`hermes cron replay`).
    pub replay_of: Option<i64>,
}

/// How a run ended, for [`Ledger::finish`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunEnd {
    pub error: Option<String>,
    pub delivery: Option<String>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    /// The run's cost, priced now: a later price change does not rewrite it.
    pub cost_usd: Option<f64>,
    pub model: Option<String>,
    /// Where the run's output document was saved (as the store's `save_output` said).
    pub output: Option<String>,
    /// Who the run was, for a store that may have lost its row (PostgreSQL after an
    /// asynchronous failover) and records it again; `None` for an end that only
    /// updates a row (a run skipped, cancelled before it started…).
    pub identity: Option<RunIdentity>,
}

/// A run's ledger identity: what its row said before it started.
#[derive(Debug, Clone, PartialEq)]
pub struct RunIdentity {
    pub job_id: String,
    pub occurrence: String,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub started_at: DateTime<Utc>,
    pub source: RunSource,
}

/// Which runs a cancel request is for: every running run of a job, or one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelTarget<'a> {
    Job(&'a str),
    Run(i64),
}

impl CancelTarget<'_> {
    /// The job id and the run id the request matches (one of them).
    pub fn parts(&self) -> (Option<&str>, Option<i64>) {
        match *self {
            CancelTarget::Job(job) => (Some(job), None),
            CancelTarget::Run(run) => (None, Some(run)),
        }
    }
}

/// What a run was asked with, kept so that `hermes cron replay` can ask the same:
/// the prompt as sent (a per-run prompt included) and the model the job asked for
/// (`None`: the configured default). Runs recorded before these were kept have neither.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRequest {
    pub prompt: Option<String>,
    pub model: Option<String>,
    /// A replay: the run it repeats.
    pub replay_of: Option<i64>,
}

/// The reason of an occurrence that came due while its job's run went on, under
/// `overlap: queue`: recorded `skipped`, and run right after the run ends (the newest one
/// waiting; [`Ledger::take_queued`]).
pub const QUEUED: &str =
    "queued (still running): runs right after the current run ends (overlap: queue)";
/// What an older queued occurrence becomes when a newer one runs in its place.
pub const QUEUED_SUPERSEDED: &str =
    "skipped (still running): a later occurrence ran in its place (overlap: queue)";

/// The key of one fire: `<job_id>@<scheduled instant, UTC>`.
pub fn occurrence_key(job_id: &str, scheduled_at: DateTime<Utc>) -> String {
    format!(
        "{job_id}@{}",
        scheduled_at.to_rfc3339_opts(SecondsFormat::Secs, true)
    )
}

pub fn ledger_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id            TEXT NOT NULL,
    occurrence        TEXT NOT NULL,
    source            TEXT NOT NULL,
    pid               INTEGER,
    host              TEXT,
    status            TEXT NOT NULL,
    scheduled_at      TEXT,
    started_at        TEXT,
    finished_at       TEXT,
    error             TEXT,
    delivery          TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_occurrence ON runs(occurrence);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job_id, id);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS budget_notices (
    window_key TEXT PRIMARY KEY,
    sent_at    TEXT NOT NULL
);
";

/// The columns of a [`RunRow`], in its field order.
const RUN_COLUMNS: &str = "id, job_id, occurrence, source, pid, host, status, scheduled_at, \
    started_at, finished_at, error, delivery, prompt_tokens, completion_tokens, cost_usd, model, \
    replay_of";

/// The sums of [`Ledger::spend_since`], in [`Spend`]'s field order: the same SQL for
/// SQLite and PostgreSQL (whose sums of integers are numeric without the casts).
pub(crate) const SPEND_COLUMNS: &str = "job_id, model, COUNT(*), \
    CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT), \
    CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT), SUM(cost_usd), \
    CAST(SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END) AS BIGINT)";

pub struct Ledger {
    conn: Connection,
    path: PathBuf,
}

/// What a claim needs to say about the attempt.
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    pub job_id: &'a str,
    pub occurrence: &'a str,
    pub source: RunSource,
    pub status: RunStatus,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub started_at: DateTime<Utc>,
    pub pid: u32,
    pub host: &'a str,
    pub error: Option<&'a str>,
}

/// Opens `executions.db` in WAL mode, readable by its owner only: a new database is
/// created 0600 before SQLite opens it, so the `-wal` and `-shm` files SQLite makes
/// beside it take the same mode; files an older build left 0644 are narrowed.
/// How long a connection waits for another process's lock.
const BUSY_WAIT: Duration = Duration::from_secs(10);
const BUSY_STEP: Duration = Duration::from_millis(20);

pub(crate) fn open_private(path: &Path) -> rusqlite::Result<Connection> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Best effort: a failure here is reported by the open below.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_WAIT)?;
    // Switching a new database to WAL while another process does the same is refused
    // at once (SQLite's busy handler does not wait for it): tried again, within the
    // same 10 s as any other lock.
    let mut waited = Duration::ZERO;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && waited < BUSY_WAIT =>
            {
                std::thread::sleep(BUSY_STEP);
                waited += BUSY_STEP;
            }
            done => break done?,
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
        }
    }
    Ok(conn)
}

/// A SQLite error as the error of the database at `path`.
pub(crate) fn in_file(path: &Path) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
    move |source| LedgerError {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens the database at `path` ([`open_private`]), runs `schema`, and gives `table` the
/// `columns` (name, definition) a database written by an older build lacks.
pub(crate) fn open_table(
    path: &Path,
    schema: &str,
    table: &str,
    columns: &[(&str, &str)],
) -> Result<Connection, LedgerError> {
    let wrap = in_file(path);
    let conn = open_private(path).map_err(&wrap)?;
    conn.execute_batch(schema).map_err(&wrap)?;
    let existing = |conn: &Connection| -> Result<Vec<String>, rusqlite::Error> {
        conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<_, _>>()
            })
    };
    let lacks = |have: &[String]| {
        columns
            .iter()
            .filter(|(name, _)| !have.iter().any(|c| c == name))
            .copied()
            .collect::<Vec<_>>()
    };
    if lacks(&existing(&conn).map_err(&wrap)?).is_empty() {
        return Ok(conn);
    }
    // Two processes opening an older database at once must not both add a column: the
    // columns are read again and added under the write lock.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(&wrap)?;
    let added = existing(&conn).and_then(|have| {
        for (name, definition) in lacks(&have) {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {name} {definition}"
            ))?;
        }
        conn.execute_batch("COMMIT")
    });
    if let Err(e) = added {
        let _ = conn.execute_batch("ROLLBACK");
        return Err(wrap(e));
    }
    Ok(conn)
}

impl Ledger {
    /// Opens (creating if needed) the ledger, in WAL mode with a busy timeout so that
    /// several processes can share it.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        // Columns added after the first release: `output`, then the spend (`cost_usd`,
        // `model`) with its index; rows written before them read as unknown.
        // Then the cancel request (`cancel_requested`) and what a run was asked with, for
        // a replay (`run_prompt`, `run_model`, `replay_of`).
        let columns = [
            ("output", "TEXT"),
            ("cost_usd", "REAL"),
            ("model", "TEXT"),
            ("cancel_requested", "TEXT"),
            ("run_prompt", "TEXT"),
            ("run_model", "TEXT"),
            ("replay_of", "INTEGER"),
        ];
        let conn = open_table(path, SCHEMA, "runs", &columns)?;
        conn.execute_batch(
            "CREATE INDEX IF NOT EXISTS runs_spend ON runs(finished_at) WHERE prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL",
        )
        .map_err(in_file(path))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(in_file(path))?;
        Ok(Ledger {
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

    /// Records an attempt for an occurrence. Returns its row id, or `None` when the
    /// occurrence is already in the ledger (someone else fired it: run nothing).
    pub fn claim(&self, claim: &Claim<'_>) -> Result<Option<i64>, LedgerError> {
        let inserted = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO runs (job_id, occurrence, source, pid, host, status,
                     scheduled_at, started_at, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    claim.job_id,
                    claim.occurrence,
                    claim.source.as_str(),
                    i64::from(claim.pid),
                    claim.host,
                    claim.status.as_str(),
                    claim.scheduled_at.map(ledger_time),
                    ledger_time(claim.started_at),
                    claim.error,
                ],
            )
            .map_err(|e| self.wrap(e))?;
        Ok((inserted == 1).then(|| self.conn.last_insert_rowid()))
    }

    /// Closes a running row with its outcome.
    pub fn finish(
        &self,
        id: i64,
        status: RunStatus,
        finished_at: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, error = ?4, delivery = ?5,
                     prompt_tokens = ?6, completion_tokens = ?7, output = ?8, cost_usd = ?9,
                     model = ?10
                 WHERE id = ?1",
                params![
                    id,
                    status.as_str(),
                    ledger_time(finished_at),
                    end.error,
                    end.delivery,
                    end.prompt_tokens,
                    end.completion_tokens,
                    end.output,
                    end.cost_usd,
                    end.model,
                ],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// The claimed run starts now: its `started_at` becomes `now` when that is later than
    /// the claim (a run waits for a free slot after its claim).
    pub fn start(
        &self,
        id: i64,
        now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<(), LedgerError> {
        let now = ledger_time(now);
        self.conn
            .execute(
                "UPDATE runs SET started_at = CASE WHEN started_at < ?2 THEN ?2 ELSE started_at END,
                     run_prompt = ?3, run_model = ?4, replay_of = ?5,
                     source = CASE WHEN ?5 IS NULL THEN source ELSE 'replay' END
                 WHERE id = ?1 AND status = 'running'",
                params![id, now, request.prompt, request.model, request.replay_of],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Marks `running` rows whose process is gone as `interrupted`. Rows of other hosts
    /// are left alone: we cannot see their processes. Returns how many were marked.
    pub fn mark_interrupted(
        &self,
        host: &str,
        now: DateTime<Utc>,
        is_alive: &dyn Fn(i64) -> bool,
    ) -> Result<usize, LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1")
            .map_err(|e| self.wrap(e))?;
        let rows: Vec<(i64, Option<i64>)> = stmt
            .query_map(params![host], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.wrap(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.wrap(e))?;
        let mut marked = 0;
        for (id, pid) in rows {
            if pid.is_some_and(is_alive) {
                continue;
            }
            marked += self
                .conn
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?2,
                         error = COALESCE(error, 'the process running it stopped before it finished')
                     WHERE id = ?1 AND status = 'running'",
                    params![id, ledger_time(now)],
                )
                .map_err(|e| self.wrap(e))?;
        }
        Ok(marked)
    }

    /// Is a run of this job still going (in a live process on this host, or on another host)?
    pub fn is_running(
        &self,
        job_id: &str,
        host: &str,
        is_alive: &dyn Fn(i64) -> bool,
    ) -> Result<bool, LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT pid, host FROM runs WHERE job_id = ?1 AND status = 'running'")
            .map_err(|e| self.wrap(e))?;
        let rows: Vec<(Option<i64>, Option<String>)> = stmt
            .query_map(params![job_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.wrap(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.wrap(e))?;
        Ok(rows
            .iter()
            .any(|(pid, row_host)| row_host.as_deref() != Some(host) || pid.is_some_and(is_alive)))
    }

    /// Where run `id` saved its output document: `None` for no such run, `Some(None)`
    /// for a run without one.
    pub fn output_of(&self, id: i64) -> Result<Option<Option<String>>, LedgerError> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row("SELECT output FROM runs WHERE id = ?1", params![id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map_err(|e| self.wrap(e))
    }

    /// One row by id.
    pub fn one(&self, id: i64) -> Result<Option<RunRow>, LedgerError> {
        Ok(self
            .select_runs(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                params![id],
            )?
            .pop())
    }

    /// Replaces the delivery summary of row `id`.
    pub fn set_delivery(&self, id: i64, delivery: &str) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "UPDATE runs SET delivery = ?2 WHERE id = ?1",
                params![id, delivery],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Newest rows first, for one job or all.
    pub fn recent(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<RunRow>, LedgerError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.select_runs(
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR job_id = ?1) ORDER BY id DESC LIMIT ?2"),
            params![job_id, limit],
        )
    }

    /// The newest row of every job that has one (one indexed scan, however many jobs).
    pub fn latest_per_job(&self) -> Result<Vec<RunRow>, LedgerError> {
        self.select_runs(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE id IN (SELECT MAX(id) FROM runs GROUP BY job_id)"
            ),
            params![],
        )
    }

    fn select_runs(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<RunRow>, LedgerError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map(params, |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    job_id: r.get(1)?,
                    occurrence: r.get(2)?,
                    source: r.get(3)?,
                    pid: r.get(4)?,
                    host: r.get(5)?,
                    status: RunStatus::parse(&r.get::<_, String>(6)?),
                    scheduled_at: r.get(7)?,
                    started_at: r.get(8)?,
                    finished_at: r.get(9)?,
                    error: r.get(10)?,
                    delivery: r.get(11)?,
                    prompt_tokens: r.get(12)?,
                    completion_tokens: r.get(13)?,
                    cost_usd: r.get(14)?,
                    model: r.get(15)?,
                    replay_of: r.get(16)?,
                })
            })
            .map_err(|e| self.wrap(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.wrap(e))?;
        Ok(rows)
    }

    /// Marks the running rows of `target` cancelled-on-request (the process running
    /// each sees the mark and stops it). Returns the rows marked.
    pub fn request_cancel(
        &self,
        target: CancelTarget<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<i64>, LedgerError> {
        let (job, run) = target.parts();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id FROM runs WHERE status = 'running'
                     AND ((?1 IS NOT NULL AND job_id = ?1) OR id = ?2) ORDER BY id",
            )
            .map_err(|e| self.wrap(e))?;
        let ids: Vec<i64> = stmt
            .query_map(params![job, run], |r| r.get(0))
            .map_err(|e| self.wrap(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.wrap(e))?;
        for id in &ids {
            self.conn
                .execute(
                    "UPDATE runs SET cancel_requested = COALESCE(cancel_requested, ?2)
                     WHERE id = ?1",
                    params![id, ledger_time(now)],
                )
                .map_err(|e| self.wrap(e))?;
        }
        Ok(ids)
    }

    /// Those of runs `ids` whose cancel was requested.
    pub fn cancels_requested(&self, ids: &[i64]) -> Result<Vec<i64>, LedgerError> {
        use rusqlite::OptionalExtension;
        let mut look = self
            .conn
            .prepare_cached("SELECT cancel_requested IS NOT NULL FROM runs WHERE id = ?1")
            .map_err(|e| self.wrap(e))?;
        let mut asked = Vec::new();
        for id in ids {
            let marked: Option<bool> = look
                .query_row(params![id], |r| r.get(0))
                .optional()
                .map_err(|e| self.wrap(e))?;
            if marked == Some(true) {
                asked.push(*id);
            }
        }
        Ok(asked)
    }

    /// Notes what run `id` was asked with; a replay's source becomes `replay`.
    pub fn note_request(&self, id: i64, request: &RunRequest) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "UPDATE runs SET run_prompt = ?2, run_model = ?3, replay_of = ?4,
                     source = CASE WHEN ?4 IS NULL THEN source ELSE 'replay' END
                 WHERE id = ?1",
                params![id, request.prompt, request.model, request.replay_of],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// The job of run `id` and what it was asked with; `None` for no such run.
    pub fn request_of(&self, id: i64) -> Result<Option<(String, RunRequest)>, LedgerError> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row(
                "SELECT job_id, run_prompt, run_model, replay_of FROM runs WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get(0)?,
                        RunRequest {
                            prompt: r.get(1)?,
                            model: r.get(2)?,
                            replay_of: r.get(3)?,
                        },
                    ))
                },
            )
            .optional()
            .map_err(|e| self.wrap(e))
    }

    /// Starts the newest occurrence of `job_id` queued after run `after` (its `skipped`
    /// row becomes `running`, stamped with this process); older ones queued after `after`
    /// are marked superseded. `None` when none waits. Its row id and scheduled instant.
    pub fn take_queued(
        &self,
        job_id: &str,
        after: i64,
        now: DateTime<Utc>,
        pid: u32,
        host: &str,
    ) -> Result<Option<(i64, DateTime<Utc>)>, LedgerError> {
        use rusqlite::OptionalExtension;
        let newest: Option<(i64, Option<String>)> = self
            .conn
            .query_row(
                "SELECT id, scheduled_at FROM runs WHERE job_id = ?1 AND id > ?2
                     AND status = 'skipped' AND error = ?3 ORDER BY id DESC LIMIT 1",
                params![job_id, after, QUEUED],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.wrap(e))?;
        let Some((id, scheduled)) = newest else {
            return Ok(None);
        };
        let taken = self
            .conn
            .execute(
                "UPDATE runs SET status = 'running', error = NULL, finished_at = NULL,
                     started_at = ?2, pid = ?3, host = ?4
                 WHERE id = ?1 AND status = 'skipped'",
                params![id, ledger_time(now), i64::from(pid), host],
            )
            .map_err(|e| self.wrap(e))?;
        self.conn
            .execute(
                "UPDATE runs SET error = ?4 WHERE job_id = ?1 AND id > ?2 AND id < ?3
                     AND status = 'skipped' AND error = ?5",
                params![job_id, after, id, QUEUED_SUPERSEDED, QUEUED],
            )
            .map_err(|e| self.wrap(e))?;
        let at = scheduled
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&Utc));
        Ok(match (taken, at) {
            (1, Some(at)) => Some((id, at)),
            _ => None,
        })
    }

    /// The attempts Python Hermes recorded in its own `executions` table of the same
    /// database (a store both schedulers share), newest first, shaped like ours: `id` 0
    /// (they are not ours to address), the occurrence `python:<its id>`, its states
    /// named as ours (`completed` → ok, `failed` → error, `unknown` → interrupted).
    pub fn python_executions(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, LedgerError> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'executions'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.wrap(e))?;
        if !exists {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, job_id, source, pid, status, claimed_at, started_at, finished_at, error
                 FROM executions WHERE (?1 IS NULL OR job_id = ?1)
                 ORDER BY claimed_at DESC, id DESC LIMIT ?2",
            )
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map(params![job_id, limit], |r| {
                let status: String = r.get(4)?;
                let claimed: Option<String> = r.get(5)?;
                let started: Option<String> = r.get(6)?;
                Ok(RunRow {
                    id: 0,
                    job_id: r.get(1)?,
                    occurrence: format!("python:{}", r.get::<_, String>(0)?),
                    source: format!("python-{}", r.get::<_, String>(2)?),
                    pid: r.get(3)?,
                    host: None,
                    status: match status.as_str() {
                        "completed" => RunStatus::Ok,
                        "failed" => RunStatus::Error,
                        "unknown" => RunStatus::Interrupted,
                        _ => RunStatus::Running,
                    },
                    scheduled_at: None,
                    started_at: started.or(claimed),
                    finished_at: r.get(7)?,
                    error: r.get(8)?,
                    delivery: None,
                    prompt_tokens: None,
                    completion_tokens: None,
                    cost_usd: None,
                    model: None,
                    replay_of: None,
                })
            })
            .map_err(|e| self.wrap(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.wrap(e))?;
        Ok(rows)
    }

    /// Keeps the newest `keep` terminal rows per job, and every row that spent tokens
    /// and finished at or after `spend_since` (the spend windows count them); running
    /// rows are never pruned.
    pub fn prune(&self, keep: usize, spend_since: DateTime<Utc>) -> Result<usize, LedgerError> {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "DELETE FROM runs WHERE status != 'running' AND id IN (
                     SELECT id FROM (
                         SELECT id, ROW_NUMBER() OVER (PARTITION BY job_id ORDER BY id DESC) AS n
                         FROM runs WHERE status != 'running'
                     ) WHERE n > ?1
                 ) AND NOT ((prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL)
                            AND finished_at >= ?2)",
                params![keep, ledger_time(spend_since)],
            )
            .map_err(|e| self.wrap(e))
    }

    /// Tokens and dollars of the runs that spent any and finished at or after `since`,
    /// summed per job and model.
    pub fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {SPEND_COLUMNS} FROM runs
                 WHERE finished_at >= ?1 AND (prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL)
                 GROUP BY job_id, model ORDER BY job_id, model"
            ))
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map(params![ledger_time(since)], |r| {
                Ok(Spend {
                    job_id: r.get(0)?,
                    model: r.get(1)?,
                    runs: r.get(2)?,
                    prompt_tokens: r.get(3)?,
                    completion_tokens: r.get(4)?,
                    cost_usd: r.get(5)?,
                    unpriced_runs: r.get(6)?,
                })
            })
            .map_err(|e| self.wrap(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.wrap(e))?;
        Ok(rows)
    }

    /// Claims the one notice of a spent budget for `window`: true for the first claim,
    /// false ever after.
    pub fn claim_budget_notice(
        &self,
        window: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, LedgerError> {
        let inserted = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO budget_notices (window_key, sent_at) VALUES (?1, ?2)",
                params![window, ledger_time(now)],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(inserted == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn claim<'a>(job: &'a str, occurrence: &'a str, pid: u32) -> Claim<'a> {
        Claim {
            job_id: job,
            occurrence,
            source: RunSource::Scheduler,
            status: RunStatus::Running,
            scheduled_at: Some(at("2026-11-22T09:00:00Z")),
            started_at: at("2026-11-22T09:00:00.250Z"),
            pid,
            host: "host-a",
            error: None,
        }
    }

    /// A new database opened by several processes at once: each adds the later
    /// columns only if no other did (the daemon and a CLI command starting together).
    #[test]
    fn several_openers_of_a_new_database_add_each_column_once() {
        for _ in 0..10 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("executions.db");
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    let path = path.clone();
                    std::thread::spawn(move || Ledger::open(&path).map(|_| ()))
                })
                .collect();
            for opener in openers {
                let opened = opener.join().unwrap();
                assert!(opened.is_ok(), "{opened:?}");
            }
        }
    }

    #[test]
    fn an_occurrence_is_claimed_once_across_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("executions.db");
        let a = Ledger::open(&path).unwrap();
        let b = Ledger::open(&path).unwrap();
        let key = occurrence_key("abc", at("2026-11-22T09:00:00Z"));
        assert_eq!(key, "abc@2026-11-22T09:00:00Z");
        assert!(a.claim(&claim("abc", &key, 1)).unwrap().is_some());
        assert_eq!(b.claim(&claim("abc", &key, 2)).unwrap(), None);
        assert_eq!(a.recent(None, 10).unwrap().len(), 1);
    }

    #[test]
    fn finish_records_the_outcome_and_dead_runs_become_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("executions.db")).unwrap();
        let done = ledger.claim(&claim("abc", "abc@1", 10)).unwrap().unwrap();
        ledger.claim(&claim("abc", "abc@2", 11)).unwrap().unwrap();
        ledger.claim(&claim("xyz", "xyz@1", 12)).unwrap().unwrap();
        let end = RunEnd {
            error: None,
            delivery: Some("local".into()),
            prompt_tokens: Some(12),
            completion_tokens: Some(34),
            output: None,
            ..RunEnd::default()
        };
        ledger
            .finish(done, RunStatus::Ok, at("2026-11-22T09:00:05Z"), &end)
            .unwrap();
        let alive = |pid: i64| pid == 12;
        assert!(!ledger.is_running("abc", "host-a", &|_| false).unwrap());
        assert!(ledger.is_running("xyz", "host-a", &alive).unwrap());
        let marked = ledger
            .mark_interrupted("host-a", at("2026-11-22T10:00:00Z"), &alive)
            .unwrap();
        assert_eq!(marked, 1);
        let rows = ledger.recent(Some("abc"), 10).unwrap();
        assert_eq!(rows[0].status, RunStatus::Interrupted);
        assert_eq!(rows[1].status, RunStatus::Ok);
        assert_eq!(rows[1].completion_tokens, Some(34));
        assert_eq!(
            ledger.recent(Some("xyz"), 10).unwrap()[0].status,
            RunStatus::Running
        );
    }

    #[test]
    fn prune_keeps_the_newest_terminal_rows_per_job() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("executions.db")).unwrap();
        for n in 0..5 {
            let id = ledger
                .claim(&claim("abc", &format!("abc@{n}"), 1))
                .unwrap()
                .unwrap();
            ledger
                .finish(
                    id,
                    RunStatus::Ok,
                    at("2026-11-22T09:00:05Z"),
                    &RunEnd::default(),
                )
                .unwrap();
        }
        ledger.claim(&claim("abc", "abc@live", 1)).unwrap();
        assert_eq!(ledger.prune(2, at("2026-11-23T00:00:00Z")).unwrap(), 3);
        let left: Vec<String> = ledger
            .recent(Some("abc"), 10)
            .unwrap()
            .into_iter()
            .map(|r| r.occurrence)
            .collect();
        assert_eq!(left, ["abc@live", "abc@4", "abc@3"]);
    }
}
