//! The store for several hosts: everything in one PostgreSQL database. Due jobs are
//! claimed with `FOR UPDATE SKIP LOCKED` against the database's clock, the schedule moved
//! and the occurrence inserted in one transaction, so no leader is needed and a host whose
//! clock is off neither fires early nor late. Each process heartbeats its own row (a
//! lease); runs a dead process claimed but never started are taken over, runs it had
//! started are recorded `interrupted`, never re-run; runs a live process claimed but has
//! no free slot for yet are taken by one that has. Job changes are NOTIFYed so sleeping
//! daemons wake; polling stays the safety net. It never leaves a job half-written: every
//! change is one transaction.
//!
//! This file holds the connection pool, the schema and its migrations, the LISTEN task
//! and the heartbeat; each room of [`crate::store::Store`] is its own file
//! (`records.rs`, `ledger.rs`, `outbox.rs`, `outputs.rs`, `notes.rs`, `control.rs`), and
//! `tls.rs` makes the connections.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::Value;
use tokio_postgres::Row;

use super::{Owner, StoreError};
use crate::job::{Context, Job, JobState};
use crate::lifecycle::JobError;

mod control;
mod failover;
mod ledger;
mod notes;
mod outbox;
mod outputs;
mod patience;
mod records;
mod tls;

use failover::TimelineWatch;
use patience::Failed;
use tls::{PoolConnect, Tls};

/// A process whose heartbeat is older than this is dead: its claims go to others.
pub const LEASE: Duration = Duration::from_secs(10);
/// How often a process renews its lease and looks for the claims of dead ones.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// The NOTIFY channel of job changes.
const CHANNEL: &str = "hermes_cron_jobs";
/// Due jobs claimed per pass at most (the rest are the next pass's, at once).
const CLAIM_BATCH: i64 = 1000;

/// The schema, one migration per version; the applied version is kept in
/// `hermes_cron_schema_migrations`. Append, never edit.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE hermes_cron_jobs (
    position     bigserial,
    id           text PRIMARY KEY,
    record       json NOT NULL,
    next_run_at  timestamptz,
    runnable     boolean NOT NULL,
    done_since   timestamptz
);
CREATE INDEX hermes_cron_jobs_due ON hermes_cron_jobs (next_run_at) WHERE runnable;
CREATE INDEX hermes_cron_jobs_position ON hermes_cron_jobs (position);
CREATE TABLE hermes_cron_runs (
    id                bigserial PRIMARY KEY,
    job_id            text NOT NULL,
    occurrence        text NOT NULL UNIQUE,
    scheduled_at      timestamptz,
    source            text NOT NULL,
    instance          text,
    host              text,
    pid               bigint,
    status            text NOT NULL,
    started_at        timestamptz,
    finished_at       timestamptz,
    error             text,
    delivery          text,
    prompt_tokens     bigint,
    completion_tokens bigint,
    output            text
);
CREATE UNIQUE INDEX hermes_cron_runs_scheduled ON hermes_cron_runs (job_id, scheduled_at)
    WHERE source = 'scheduler';
CREATE INDEX hermes_cron_runs_job ON hermes_cron_runs (job_id, id);
CREATE INDEX hermes_cron_runs_open ON hermes_cron_runs (status) WHERE status IN ('claimed', 'running');
CREATE TABLE hermes_cron_outbox (
    id               bigserial PRIMARY KEY,
    occurrence       text NOT NULL,
    target           text NOT NULL,
    job_id           text NOT NULL,
    run_at           text,
    payload          text NOT NULL,
    state            text NOT NULL,
    sent_parts       bigint NOT NULL DEFAULT 0,
    attempts         bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    next_attempt_at  timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    last_error       text,
    claimed_instance text,
    in_flight        boolean NOT NULL DEFAULT false,
    UNIQUE (occurrence, target)
);
CREATE INDEX hermes_cron_outbox_due ON hermes_cron_outbox (state, next_attempt_at);
CREATE TABLE hermes_cron_outputs (
    id         bigserial PRIMARY KEY,
    job_id     text NOT NULL,
    name       text NOT NULL,
    body       text NOT NULL,
    UNIQUE (job_id, name)
);
CREATE TABLE hermes_cron_hosts (
    instance      text PRIMARY KEY,
    host          text NOT NULL,
    pid           bigint NOT NULL,
    kind          text NOT NULL DEFAULT 'client',
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    last_success  timestamptz,
    last_error_at timestamptz,
    last_error    text
);
CREATE FUNCTION hermes_cron_jobs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hermes_cron_jobs', '');
    RETURN NULL;
END $$;
CREATE TRIGGER hermes_cron_jobs_changed AFTER INSERT OR UPDATE OR DELETE ON hermes_cron_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION hermes_cron_jobs_changed();
"#,
    // Every pass removes completed one-shots past their retention and week-old finished
    // deliveries, and expires queued ones past their retry window; without these indexes
    // each was a scan of the whole table (or of every queued row) on every pass of every
    // host (40 ms at 100,000 jobs for the first).
    r#"
CREATE INDEX hermes_cron_jobs_done ON hermes_cron_jobs (done_since) WHERE done_since IS NOT NULL;
CREATE INDEX hermes_cron_outbox_created ON hermes_cron_outbox (created_at);
CREATE INDEX hermes_cron_outbox_expiring ON hermes_cron_outbox (expires_at) WHERE state = 'pending';
"#,
    // Failure incidents and job notepads, shaped as Python Hermes' tables on a home, and
    // the global pause; a pause or resume wakes every host as a job change does.
    r#"
CREATE TABLE hermes_cron_incidents (
    id            text PRIMARY KEY,
    job_id        text NOT NULL,
    error_sig     text NOT NULL,
    state         text NOT NULL,
    failure_type  text NOT NULL DEFAULT 'unknown',
    first_seen_at text NOT NULL,
    last_seen_at  text NOT NULL,
    acked_at      text,
    alerted_at    text,
    closed_at     text,
    error         text NOT NULL,
    output_file   text
);
CREATE INDEX hermes_cron_incidents_job ON hermes_cron_incidents (job_id);
CREATE TABLE hermes_cron_notepad (
    job_id     text NOT NULL,
    key        text NOT NULL,
    value      text NOT NULL,
    updated_at text NOT NULL,
    PRIMARY KEY (job_id, key)
);
CREATE TABLE hermes_cron_pause (
    id         integer PRIMARY KEY CHECK (id = 1),
    engaged_at text,
    reason     text
);
CREATE TRIGGER hermes_cron_pause_changed AFTER INSERT OR UPDATE OR DELETE ON hermes_cron_pause
    FOR EACH STATEMENT EXECUTE FUNCTION hermes_cron_jobs_changed();
"#,
    // What each run cost, priced when it was recorded, and the model it is counted under;
    // the spend windows read the runs that spent by when they finished; the one notice of
    // a spent global budget per window, shared by every host.
    r#"
ALTER TABLE hermes_cron_runs ADD COLUMN cost_usd double precision, ADD COLUMN model text;
CREATE INDEX hermes_cron_runs_spend ON hermes_cron_runs (finished_at)
    WHERE prompt_tokens IS NOT NULL OR cost_usd IS NOT NULL;
CREATE TABLE hermes_cron_budget_notices (
    window_key text PRIMARY KEY,
    sent_at    timestamptz NOT NULL
);
"#,
    // The failovers the hosts noticed (a promoted standby writes on a new timeline),
    // for `doctor`; `occurrence` ranges of the ledger are read by when they were due.
    r#"
CREATE TABLE hermes_cron_failovers (
    timeline    integer PRIMARY KEY,
    previous    integer NOT NULL,
    noticed_at  timestamptz NOT NULL DEFAULT now(),
    noticed_by  text NOT NULL,
    synchronous boolean NOT NULL
);
CREATE INDEX hermes_cron_runs_due ON hermes_cron_runs (scheduled_at);
"#,
    // A job's effective state and name beside its record, for pages of the listing and
    // the counts by state without reading every record (a million jobs); filled in for
    // the rows already there by `PgStore::fill_listing_columns` after the migration.
    // The jobs per state ('' for a row without one yet) are kept by statement triggers
    // that add each statement's net change: a claim that leaves every state as it was
    // writes nothing there, so hosts do not queue on the counts.
    r#"
ALTER TABLE hermes_cron_jobs ADD COLUMN state text, ADD COLUMN name text;
CREATE INDEX hermes_cron_jobs_state ON hermes_cron_jobs (state, position);
CREATE INDEX hermes_cron_jobs_chained ON hermes_cron_jobs (position)
    WHERE json_typeof(record -> 'after') = 'object';
CREATE TABLE hermes_cron_job_counts (
    state text PRIMARY KEY,
    jobs  bigint NOT NULL
);
INSERT INTO hermes_cron_job_counts (state, jobs)
    SELECT COALESCE(state, ''), count(*) FROM hermes_cron_jobs GROUP BY 1;
CREATE FUNCTION hermes_cron_jobs_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO hermes_cron_job_counts AS c (state, jobs)
            SELECT COALESCE(state, ''), count(*) FROM added GROUP BY 1
            ON CONFLICT (state) DO UPDATE SET jobs = c.jobs + EXCLUDED.jobs;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE hermes_cron_job_counts AS c SET jobs = c.jobs - d.n
            FROM (SELECT COALESCE(state, '') AS state, count(*) AS n FROM removed GROUP BY 1) d
            WHERE c.state = d.state;
    ELSE
        INSERT INTO hermes_cron_job_counts AS c (state, jobs)
            SELECT state, sum(n) FROM (
                SELECT COALESCE(state, '') AS state, 1 AS n FROM added
                UNION ALL SELECT COALESCE(state, ''), -1 FROM removed) d
            GROUP BY state HAVING sum(n) <> 0
            ON CONFLICT (state) DO UPDATE SET jobs = c.jobs + EXCLUDED.jobs;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER hermes_cron_jobs_counted_insert AFTER INSERT ON hermes_cron_jobs
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION hermes_cron_jobs_counted();
CREATE TRIGGER hermes_cron_jobs_counted_update AFTER UPDATE ON hermes_cron_jobs
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION hermes_cron_jobs_counted();
CREATE TRIGGER hermes_cron_jobs_counted_delete AFTER DELETE ON hermes_cron_jobs
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION hermes_cron_jobs_counted();
"#,
    // A cancel request on a running run, seen by whichever host runs it; what each run
    // was asked with (its prompt and model), and the run a replay repeats.
    r#"
ALTER TABLE hermes_cron_runs ADD COLUMN cancel_requested timestamptz,
    ADD COLUMN run_prompt text, ADD COLUMN run_model text, ADD COLUMN replay_of bigint;
"#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One process's handle on a PostgreSQL store. It runs on the runtime of whoever
/// connected it: its connections, its LISTEN task and its heartbeat are tasks there.
pub struct PgStore {
    pool: Pool,
    /// The LISTEN task and the heartbeat, stopped when the store closes or is dropped.
    background: Vec<tokio::task::AbortHandle>,
    /// [`Control::close`](crate::store::Control::close) was called: the lease is gone
    /// already.
    closed: AtomicBool,
    owner: Owner,
    /// This process's row in `hermes_cron_hosts`: host, pid and a random part, so that
    /// several daemons on one machine (or a restart that reuses a pid) never collide.
    instance: String,
    /// The URL without its password, for messages.
    location: String,
    /// How many servers the URL lists: with several, a lost connection is made again to
    /// whichever of them accepts it (the one that accepts writes, with
    /// `target_session_attrs=read-write`).
    servers: usize,
    /// Whether a connection could be had, and since when none can: the log says once
    /// that a store this process was using is lost, and once that it is back (a command
    /// that cannot reach it at all just fails with the reason).
    reach: std::sync::Mutex<Reach>,
    /// How connections are made (sslmode and its certificates): names the mode when a
    /// connection fails for TLS.
    tls: Tls,
    /// Bumped by NOTIFY, by this process's own writes and when a dead host's claims
    /// wait to be taken over: what the daemon watches to wake up.
    changes: Arc<AtomicU64>,
    /// Bumped when live processes hold claims they have not started (a `backlog`
    /// NOTIFY, or seen by the heartbeat): only a daemon with a free slot wakes for it.
    backlog: Arc<AtomicU64>,
    /// Whose "now" decides what is due: the database's (always, but for a pinned
    /// process clock; see [`PgStore::deciding_on_caller_clock`]).
    caller_clock: bool,
    /// The jobs this process added runs for since its last history prune: only their
    /// runs are trimmed (trimming every job's runs ranked the whole runs table on every
    /// pass). Every run row is added by some process, which trims that job next.
    unpruned: std::sync::Mutex<HashSet<String>>,
}

/// What this process knows of reaching the database.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reach {
    /// No connection was ever had.
    Never,
    Up,
    /// Reached before, and not since this instant.
    Lost(std::time::Instant),
}

fn unavailable(location: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!(
        "PostgreSQL store {location}: {e}; check that the database is up and reachable"
    ))
}

/// `postgresql://user:secret@host/db` → `postgresql://user@host/db`.
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// What a job row holds beside its record, derived on every write.
struct Columns {
    next_run_at: Option<DateTime<Utc>>,
    runnable: bool,
    /// The effective state (`scheduled`, `paused`, `error`, `completed`).
    state: &'static str,
    name: String,
    /// A completed one-shot: since when (its last run, else creation), for pruning.
    done_since: Option<DateTime<Utc>>,
}

fn columns(job: &Job, ctx: &Context) -> Columns {
    let state = job.state();
    let done = state == JobState::Completed && job.is_one_shot();
    Columns {
        next_run_at: job.next_run_at(ctx),
        runnable: state == JobState::Scheduled,
        state: state.as_str(),
        name: job.name().to_string(),
        done_since: done
            .then(|| {
                job.last_run_at(ctx)
                    .or_else(|| job.instant("created_at", ctx))
            })
            .flatten(),
    }
}

fn job_of(row: &Row, column: &str) -> Result<Job, StoreError> {
    let value: Value = row.get(column);
    match value {
        Value::Object(record) => Ok(Job::from_record(record)),
        other => Err(StoreError::Unreadable(format!(
            "a job record in PostgreSQL is not an object: {other}"
        ))),
    }
}

/// The job records of `rows` (their `record` column), each healed as every read of a
/// job to change it is.
fn healed_jobs(rows: &[Row], ctx: &Context) -> Result<Vec<Job>, StoreError> {
    rows.iter()
        .map(|row| {
            let mut job = job_of(row, "record")?;
            job.heal(ctx);
            Ok(job)
        })
        .collect()
}

/// The instances alive by the database's clock.
const LIVE: &str = "SELECT instance FROM hermes_cron_hosts \
                    WHERE heartbeat_at > now() - make_interval(secs => $1)";

impl PgStore {
    /// Connects, creates or migrates the schema, and registers this process. Called
    /// within a tokio runtime: the store's connections and background tasks run on it.
    pub async fn connect(url: &str, owner: Owner) -> Result<PgStore, StoreError> {
        let location = without_password(url);
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let tls::Target { config, tls } =
            tls::read_url(url, home.as_deref()).map_err(|e| match e {
                tls::UrlError::Syntax(e) => StoreError::Refused(format!(
                    "Cannot read the PostgreSQL URL {location}: {e}; use \
                     postgresql://USER@HOST/DB (or ?host=/socket/dir for a Unix socket)"
                )),
                tls::UrlError::Tls(e) => {
                    StoreError::Refused(format!("PostgreSQL store {location}: {e}"))
                }
            })?;
        let random: u32 = rand::random();
        let instance = format!("{}:{}:{random:08x}", owner.host, owner.pid);
        let servers = config.get_hosts().len().max(config.get_hostaddrs().len());
        let manager = Manager::from_connect(
            config.clone(),
            PoolConnect {
                tls: tls.clone(),
                watch: TimelineWatch::new(&instance),
            },
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(8)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| unavailable(&location, e))?;
        let mut store = PgStore {
            pool,
            background: Vec::new(),
            closed: AtomicBool::new(false),
            instance,
            owner,
            location,
            servers,
            reach: std::sync::Mutex::new(Reach::Never),
            tls: tls.clone(),
            changes: Arc::new(AtomicU64::new(1)),
            backlog: Arc::new(AtomicU64::new(0)),
            caller_clock: false,
            unpruned: std::sync::Mutex::new(HashSet::new()),
        };
        store.migrate().await?;
        store.fill_listing_columns().await?;
        store.register().await?;
        let marks = Marks {
            changes: Arc::clone(&store.changes),
            backlog: Arc::clone(&store.backlog),
        };
        store.background = vec![
            tokio::spawn(listen(config, tls, marks.clone())).abort_handle(),
            tokio::spawn(heartbeat(store.pool.clone(), store.instance.clone(), marks))
                .abort_handle(),
        ];
        Ok(store)
    }

    /// Due decisions use the caller's "now" instead of the database's. Only for a
    /// process whose clock is pinned (`HERMES_NOW`: tests and reproductions of a past
    /// pass), where the database's clock would make every job of the pinned past
    /// overdue; hosts that share a database always decide on its clock. Leases and
    /// heartbeats stay on the database's clock either way.
    pub fn deciding_on_caller_clock(mut self) -> PgStore {
        self.caller_clock = true;
        self
    }

    pub(super) fn fail(&self, e: impl std::fmt::Display) -> StoreError {
        unavailable(&self.location, e)
    }

    pub(super) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        let got = self.pool.get().await;
        let mut reach = self.reach.lock().unwrap_or_else(|e| e.into_inner());
        match got {
            Ok(client) => {
                if let Reach::Lost(since) = *reach {
                    tracing::info!(
                        "the PostgreSQL store {} is reachable again after {:.1} s",
                        self.location,
                        since.elapsed().as_secs_f64()
                    );
                }
                *reach = Reach::Up;
                Ok(client)
            }
            Err(e) => {
                let error = match self.tls.explain(&e) {
                    Some(tls) => StoreError::Unavailable(format!(
                        "PostgreSQL store {}: {tls}",
                        self.location
                    )),
                    None if self.servers > 1 => StoreError::Unavailable(format!(
                        "PostgreSQL store {}: none of its {} servers accepted a connection \
                         (the last said: {e}); trying them again on each pass until one \
                         does (a standby being promoted takes a few seconds)",
                        self.location, self.servers
                    )),
                    None => self.fail(e),
                };
                if *reach == Reach::Up {
                    *reach = Reach::Lost(std::time::Instant::now());
                    tracing::warn!("lost the store: {error}");
                }
                Err(error)
            }
        }
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        // One migrator at a time, whichever host starts first.
        tx.batch_execute("SET LOCAL client_min_messages = warning")
            .await
            .map_err(|e| self.fail(e))?;
        tx.execute("SELECT pg_advisory_xact_lock(4861057)", &[])
            .await
            .map_err(|e| self.fail(e))?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS hermes_cron_schema_migrations (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .map_err(|e| self.fail(e))?;
        let row = tx
            .query_one(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM hermes_cron_schema_migrations",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let applied: i64 = row.get(0);
        if applied > SCHEMA_VERSION {
            return Err(StoreError::Refused(format!(
                "The PostgreSQL store {} has schema version {applied}, newer than this build \
                 knows ({SCHEMA_VERSION}): upgrade hermes-cron on this host",
                self.location
            )));
        }
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
            let version = index as i32 + 1;
            tx.batch_execute(migration)
                .await
                .map_err(|e| self.fail(e))?;
            tx.execute(
                "INSERT INTO hermes_cron_schema_migrations (version) VALUES ($1)",
                &[&version],
            )
            .await
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().await.map_err(|e| self.fail(e))
    }

    /// Derives `state` and `name` for the rows written before those columns existed
    /// (or by a build that did not know them), a batch at a time; nothing to do, one
    /// indexed query, on every later start.
    async fn fill_listing_columns(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        let ctx = Context {
            now: Utc::now(),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        };
        loop {
            let rows = client
                .query(
                    "SELECT record FROM hermes_cron_jobs WHERE state IS NULL LIMIT 5000",
                    &[],
                )
                .await
                .map_err(|e| self.fail(e))?;
            if rows.is_empty() {
                return Ok(());
            }
            let mut ids = Vec::with_capacity(rows.len());
            let mut states = Vec::with_capacity(rows.len());
            let mut names = Vec::with_capacity(rows.len());
            for row in &rows {
                let job = job_of(row, "record")?;
                let c = columns(&job, &ctx);
                ids.push(job.id().to_string());
                states.push(c.state);
                names.push(c.name);
            }
            client
                .execute(
                    "UPDATE hermes_cron_jobs j SET state = u.state, name = u.name
                     FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, state, name)
                     WHERE j.id = u.id",
                    &[&ids, &states, &names],
                )
                .await
                .map_err(|e| self.fail(e))?;
        }
    }

    async fn register(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO hermes_cron_hosts (instance, host, pid) VALUES ($1, $2, $3)",
                &[&self.instance, &self.owner.host, &i64::from(self.owner.pid)],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// The job in the one row `sql` (a statement on `$1` = `id` returning `record`)
    /// gives, in `tx`; `NotFound` when there is none.
    async fn job_row(&self, tx: &impl GenericClient, sql: &str, id: &str) -> Result<Job, JobError> {
        let row = tx.query_opt(sql, &[&id]).await.map_err(|e| self.fail(e))?;
        let Some(row) = row else {
            return Err(JobError::NotFound(id.to_string()));
        };
        Ok(job_of(&row, "record")?)
    }

    /// The first column of the one row `sql` gives.
    pub(super) async fn scalar<T>(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<T, StoreError>
    where
        T: for<'a> tokio_postgres::types::FromSql<'a>,
    {
        let client = self.client().await?;
        let row = client
            .query_one(sql, params)
            .await
            .map_err(|e| self.fail(e))?;
        row.try_get(0).map_err(|e| self.fail(e))
    }

    async fn live(&self, client: &impl GenericClient) -> Result<Vec<String>, StoreError> {
        let rows = client
            .query(LIVE, &[&LEASE.as_secs_f64()])
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Writes jobs back in one statement, each record with the columns derived from it:
    /// a pass that claims a thousand jobs pays one round trip for them, not a thousand.
    async fn write_jobs(
        &self,
        client: &impl GenericClient,
        jobs: &[Job],
        ctx: &Context,
    ) -> Result<(), Failed> {
        if jobs.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(jobs.len());
        let mut records = Vec::with_capacity(jobs.len());
        let mut next_runs = Vec::with_capacity(jobs.len());
        let mut runnable = Vec::with_capacity(jobs.len());
        let mut done_since = Vec::with_capacity(jobs.len());
        let mut states = Vec::with_capacity(jobs.len());
        let mut names = Vec::with_capacity(jobs.len());
        for job in jobs {
            let c = columns(job, ctx);
            ids.push(job.id());
            records.push(Value::Object(job.record().clone()));
            next_runs.push(c.next_run_at);
            runnable.push(c.runnable);
            done_since.push(c.done_since);
            states.push(c.state);
            names.push(c.name);
        }
        client
            .execute(
                "UPDATE hermes_cron_jobs j SET record = u.record, next_run_at = u.next_run_at,
                     runnable = u.runnable, done_since = u.done_since, state = u.state,
                     name = u.name
                 FROM unnest($1::text[], $2::json[], $3::timestamptz[], $4::boolean[],
                             $5::timestamptz[], $6::text[], $7::text[])
                     AS u(id, record, next_run_at, runnable, done_since, state, name)
                 WHERE j.id = u.id",
                &[
                    &ids,
                    &records,
                    &next_runs,
                    &runnable,
                    &done_since,
                    &states,
                    &names,
                ],
            )
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }

    async fn load(&self, ctx: &Context) -> Result<Vec<Job>, StoreError> {
        let _ = ctx;
        let client = self.client().await?;
        let rows = client
            .query("SELECT record FROM hermes_cron_jobs ORDER BY position", &[])
            .await
            .map_err(|e| self.fail(e))?;
        rows.iter().map(|row| job_of(row, "record")).collect()
    }

    fn note_runs_added(&self, jobs: impl IntoIterator<Item = String>) {
        let mut unpruned = self.unpruned.lock().unwrap_or_else(|p| p.into_inner());
        unpruned.extend(jobs);
    }
}

/// What the background tasks bump for the daemon to see: see [`PgStore::changes`] and
/// [`PgStore::backlog`].
#[derive(Clone)]
struct Marks {
    changes: Arc<AtomicU64>,
    backlog: Arc<AtomicU64>,
}

/// Holds one connection that LISTENs for job changes and bumps `changes` on each (or
/// `backlog` for a backlog); on a lost connection it reconnects with backoff (the
/// daemon's polling covers the gap).
async fn listen(config: tokio_postgres::Config, tls: Tls, marks: Marks) {
    let Marks { changes, backlog } = marks;
    let mut backoff = Duration::from_millis(500);
    loop {
        if let Ok((client, mut connection)) = tls.connect(&config).await {
            let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
            let pump = tokio::spawn(async move {
                let mut messages = futures_stream(move |cx| connection.poll_message(cx));
                while let Some(message) = messages.next().await {
                    if sender.send(message).is_err() {
                        break;
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .is_ok()
            {
                backoff = Duration::from_millis(500);
                changes.fetch_add(1, Ordering::Relaxed);
                while let Some(message) = received.recv().await {
                    match message {
                        Ok(tokio_postgres::AsyncMessage::Notification(note))
                            if note.payload() == "backlog" =>
                        {
                            backlog.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {
                            changes.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => break,
                    }
                }
            }
            pump.abort();
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// A `poll_fn` stream (std only): yields until the poll returns `None`.
fn futures_stream<T>(
    poll: impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<T>> + Unpin,
) -> PollStream<impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<T>> + Unpin> {
    PollStream(poll)
}

struct PollStream<F>(F);

impl<F, T> PollStream<F>
where
    F: FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<T>> + Unpin,
{
    async fn next(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| (self.0)(cx)).await
    }
}

/// Renews this process's lease every [`HEARTBEAT_EVERY`], and marks a change when a
/// dead process left claims to take over or when the earliest due time moved, and a
/// backlog when live ones hold claims they have not started (work to share): the
/// safety net under NOTIFY (a notification lost while the database was away is noticed
/// here within one beat), so a sleeping daemon wakes for them.
async fn heartbeat(pool: Pool, instance: String, marks: Marks) {
    let Marks { changes, backlog } = marks;
    let mut every = tokio::time::interval(HEARTBEAT_EVERY);
    let mut earliest: Option<Option<DateTime<Utc>>> = None;
    loop {
        every.tick().await;
        let Ok(client) = pool.get().await else {
            continue;
        };
        let renewed = client
            .execute(
                "UPDATE hermes_cron_hosts SET heartbeat_at = now() WHERE instance = $1",
                &[&instance],
            )
            .await;
        if let Ok(0) = renewed {
            // Removed by someone cleaning up after a long stop: come back.
            let _ = client
                .execute(
                    "INSERT INTO hermes_cron_hosts (instance, host, pid)
                     VALUES ($1, split_part($1, ':', 1), 0) ON CONFLICT DO NOTHING",
                    &[&instance],
                )
                .await;
        }
        // Runs of dead processes to close or take over; and occurrences other processes
        // claimed and have not started: this one may have a free slot for some (work
        // sharing), and the NOTIFY of that backlog may have been lost.
        let open = client
            .query_one(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM hermes_cron_runs
                     WHERE status IN ('claimed', 'running') AND NOT (instance IN ({LIVE}))),
                     EXISTS (SELECT 1 FROM hermes_cron_runs
                     WHERE status = 'claimed' AND instance <> $2)"
                ),
                &[&LEASE.as_secs_f64(), &instance],
            )
            .await;
        if let Ok(row) = open {
            if row.get::<_, bool>(0) {
                changes.fetch_add(1, Ordering::Relaxed);
            }
            if row.get::<_, bool>(1) {
                backlog.fetch_add(1, Ordering::Relaxed);
            }
        }
        let due = client
            .query_one(
                "SELECT MIN(next_run_at) FROM hermes_cron_jobs WHERE runnable",
                &[],
            )
            .await;
        if let Ok(row) = due {
            let now: Option<DateTime<Utc>> = row.get(0);
            if earliest.is_some_and(|seen| seen != now) {
                changes.fetch_add(1, Ordering::Relaxed);
            }
            earliest = Some(now);
        }
    }
}

impl Drop for PgStore {
    /// The listener and the heartbeat stop with the store. A store not closed
    /// ([`Control::close`](crate::store::Control::close)) is forgotten by the database in
    /// the background if the runtime lives on, else when its lease runs out.
    fn drop(&mut self) {
        for task in &self.background {
            task.abort();
        }
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(forget(self.pool.clone(), self.instance.clone()));
        }
    }
}

/// Removes this process's lease: a clean exit leaves none behind (a daemon that stopped
/// cleanly keeps its row, marked `stopped`, for `hermes cron status`); a crash leaves
/// one that runs out.
async fn forget(pool: Pool, instance: String) {
    if let Ok(client) = pool.get().await {
        let _ = client
            .execute(
                "DELETE FROM hermes_cron_hosts WHERE instance = $1 AND kind <> 'stopped'",
                &[&instance],
            )
            .await;
    }
}
