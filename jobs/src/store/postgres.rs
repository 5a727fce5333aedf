//! The store for several hosts: everything in one PostgreSQL database. Due jobs are
//! claimed with `FOR UPDATE SKIP LOCKED` against the database's clock, the schedule moved
//! and the occurrence inserted in one transaction, so no leader is needed and a host whose
//! clock is off neither fires early nor late. Each process heartbeats its own row (a
//! lease); runs a dead process claimed but never started are taken over, runs it had
//! started are recorded `interrupted`, never re-run; runs a live process claimed but has
//! no free slot for yet are taken by one that has. Job changes are NOTIFYed so sleeping
//! daemons wake; polling stays the safety net. It never leaves a job half-written: every
//! change is one transaction.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::Value;
use tokio_postgres::Row;

use super::{
    prepare_claims, BatchChange, Beat, ChangeMark, Claimed, DuePass, DueScan, Flight, Heartbeat,
    JobChange, LiveHost, Occurrence, OwnedClaim, Owner, PendingClaim, Store, StoreError, StoreInfo,
};
use crate::due::{earliest_next_run, plan_pass, Decision};
use crate::estop::GlobalPause;
use crate::fields::Layout;
use crate::incident::{Incident, IncidentState, NewIncident, Transition};
use crate::job::{is_safe_id, Context, Job, JobState};
use crate::ledger::{ledger_time, RunEnd, RunRow, RunStatus, SPEND_COLUMNS};
use crate::lifecycle::JobError;
use crate::notepad::Note;
use crate::outbox::{retry_delay, NewOutboxItem, OutboxItem, OutboxState};
use crate::output::{OutputDocument, MONITOR_SNAPSHOT_FILE};
use crate::spend::Spend;

mod tls;
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
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One process's handle on a PostgreSQL store. It runs on the runtime of whoever
/// connected it: its connections, its LISTEN task and its heartbeat are tasks there.
pub struct PgStore {
    pool: Pool,
    /// The LISTEN task and the heartbeat, stopped when the store closes or is dropped.
    background: Vec<tokio::task::AbortHandle>,
    /// [`Store::close`] was called: the lease is gone already.
    closed: AtomicBool,
    owner: Owner,
    /// This process's row in `hermes_cron_hosts`: host, pid and a random part, so that
    /// several daemons on one machine (or a restart that reuses a pid) never collide.
    instance: String,
    /// The URL without its password, for messages.
    location: String,
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
    /// A completed one-shot: since when (its last run, else creation), for pruning.
    done_since: Option<DateTime<Utc>>,
}

fn columns(job: &Job, ctx: &Context) -> Columns {
    let state = job.state();
    let done = state == JobState::Completed && job.is_one_shot();
    Columns {
        next_run_at: job.next_run_at(ctx),
        runnable: state == JobState::Scheduled,
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

fn run_row(row: &Row) -> RunRow {
    let time = |name: &str| row.get::<_, Option<DateTime<Utc>>>(name).map(ledger_time);
    RunRow {
        id: row.get("id"),
        job_id: row.get("job_id"),
        occurrence: row.get("occurrence"),
        source: row.get("source"),
        pid: row.get("pid"),
        host: row.get("host"),
        status: row.get("status"),
        scheduled_at: time("scheduled_at"),
        started_at: time("started_at"),
        finished_at: time("finished_at"),
        error: row.get("error"),
        delivery: row.get("delivery"),
        prompt_tokens: row.get("prompt_tokens"),
        completion_tokens: row.get("completion_tokens"),
        cost_usd: row.get("cost_usd"),
        model: row.get("model"),
    }
}

fn outbox_item(row: &Row) -> OutboxItem {
    OutboxItem {
        id: row.get("id"),
        occurrence: row.get("occurrence"),
        target: row.get("target"),
        job_id: row.get("job_id"),
        run_at: row.get("run_at"),
        payload: row.get("payload"),
        sent_parts: row.get("sent_parts"),
        attempts: row.get("attempts"),
        expires_at: row.get("expires_at"),
        last_error: row.get("last_error"),
    }
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
        let manager = Manager::from_connect(
            config.clone(),
            PoolConnect(tls.clone()),
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
        let random: u32 = rand::random();
        let mut store = PgStore {
            pool,
            background: Vec::new(),
            closed: AtomicBool::new(false),
            instance: format!("{}:{}:{random:08x}", owner.host, owner.pid),
            owner,
            location,
            tls: tls.clone(),
            changes: Arc::new(AtomicU64::new(1)),
            backlog: Arc::new(AtomicU64::new(0)),
            caller_clock: false,
            unpruned: std::sync::Mutex::new(HashSet::new()),
        };
        store.migrate().await?;
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
        self.pool
            .get()
            .await
            .map_err(|e| match self.tls.explain(&e) {
                Some(tls) => {
                    StoreError::Unavailable(format!("PostgreSQL store {}: {tls}", self.location))
                }
                None => self.fail(e),
            })
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
    ) -> Result<(), StoreError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(jobs.len());
        let mut records = Vec::with_capacity(jobs.len());
        let mut next_runs = Vec::with_capacity(jobs.len());
        let mut runnable = Vec::with_capacity(jobs.len());
        let mut done_since = Vec::with_capacity(jobs.len());
        for job in jobs {
            let c = columns(job, ctx);
            ids.push(job.id());
            records.push(Value::Object(job.record().clone()));
            next_runs.push(c.next_run_at);
            runnable.push(c.runnable);
            done_since.push(c.done_since);
        }
        client
            .execute(
                "UPDATE hermes_cron_jobs j SET record = u.record, next_run_at = u.next_run_at,
                     runnable = u.runnable, done_since = u.done_since
                 FROM unnest($1::text[], $2::json[], $3::timestamptz[], $4::boolean[],
                             $5::timestamptz[])
                     AS u(id, record, next_run_at, runnable, done_since)
                 WHERE j.id = u.id",
                &[&ids, &records, &next_runs, &runnable, &done_since],
            )
            .await
            .map_err(|e| self.fail(e))?;
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
        let rows = tx
            .query(
                "SELECT record FROM hermes_cron_jobs
                 WHERE runnable AND (next_run_at IS NULL OR next_run_at <= $1)
                 ORDER BY next_run_at NULLS FIRST, position LIMIT $2
                 FOR UPDATE SKIP LOCKED",
                &[&ctx.now, &CLAIM_BATCH],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut jobs = rows
            .iter()
            .map(|row| job_of(row, "record"))
            .collect::<Result<Vec<Job>, StoreError>>()?;
        for job in &mut jobs {
            job.heal(ctx);
        }
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

    fn note_runs_added(&self, jobs: impl IntoIterator<Item = String>) {
        let mut unpruned = self.unpruned.lock().unwrap_or_else(|p| p.into_inner());
        unpruned.extend(jobs);
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
                .map(|c| match c.status {
                    RunStatus::Running => "claimed",
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
    /// ([`Store::close`]) is forgotten by the database in the background if the runtime
    /// lives on, else when its lease runs out.
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

#[async_trait::async_trait]
impl Store for PgStore {
    async fn load_jobs(&self, ctx: &Context) -> Result<Vec<Job>, StoreError> {
        self.load(ctx).await
    }

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
                "INSERT INTO hermes_cron_jobs (id, record, next_run_at, runnable, done_since)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                &[
                    &job.id(),
                    &record,
                    &c.next_run_at,
                    &c.runnable,
                    &c.done_since,
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
            .await?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        self.changed();
        Ok(job)
    }

    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        let rows = tx
            .query(
                "SELECT record FROM hermes_cron_jobs WHERE id = ANY($1)
                 ORDER BY position FOR UPDATE",
                &[&ids],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut jobs = rows
            .iter()
            .map(|row| job_of(row, "record"))
            .collect::<Result<Vec<Job>, StoreError>>()?;
        for job in &mut jobs {
            job.heal(ctx);
            change(job);
        }
        self.write_jobs(&tx, &jobs, ctx).await?;
        tx.commit().await.map_err(|e| self.fail(e))?;
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

    async fn start_run(&self, run: i64, _now: DateTime<Utc>) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let started = client
            .execute(
                "UPDATE hermes_cron_runs
                     SET status = 'running',
                         started_at = CASE status WHEN 'claimed' THEN now() ELSE started_at END
                     WHERE id = $1 AND status IN ('claimed', 'running') AND instance = $2",
                &[&run, &self.instance],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(started == 1)
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
        let occurrence = super::manual_occurrence(job_id, now);
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

    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        // The spend windows are read by the clock that decides: a pinned process clock
        // stamps the end of its own runs.
        let pinned = self.caller_clock.then_some(now);
        client
            .execute(
                "UPDATE hermes_cron_runs SET status = $2, finished_at = COALESCE($10, now()),
                         error = $3, delivery = $4, prompt_tokens = $5, completion_tokens = $6,
                         output = $7, cost_usd = $8, model = $9
                     WHERE id = $1",
                &[
                    &run,
                    &status.as_str(),
                    &end.error,
                    &end.delivery,
                    &end.prompt_tokens,
                    &end.completion_tokens,
                    &end.output,
                    &end.cost_usd,
                    &end.model,
                    &pinned,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
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

    async fn latest_runs(&self) -> Result<HashMap<String, RunRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT ON (job_id) * FROM hermes_cron_runs ORDER BY job_id, id DESC",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows
            .iter()
            .map(run_row)
            .map(|r| (r.job_id.clone(), r))
            .collect())
    }

    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let state = if claimed {
            OutboxState::Sending
        } else {
            OutboxState::Pending
        };
        let claimer = claimed.then_some(self.instance.as_str());
        let error = Some(item.error).filter(|e| !e.is_empty());
        let client = self.client().await?;
        let row = client
            .query_opt(
                "INSERT INTO hermes_cron_outbox (occurrence, target, job_id, run_at, payload,
                         state, sent_parts, attempts, created_at, next_attempt_at, expires_at,
                         last_error, claimed_instance)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10, $11, $12)
                     ON CONFLICT DO NOTHING RETURNING id",
                &[
                    &item.occurrence,
                    &item.target,
                    &item.job_id,
                    &item.run_at,
                    &item.payload,
                    &state.as_str(),
                    &item.sent_parts,
                    &item.now,
                    &item.first_retry,
                    &item.expires_at,
                    &error,
                    &claimer,
                ],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get::<_, i64>(0)).filter(|_| claimed))
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        client
            .execute(
                "UPDATE hermes_cron_outbox SET state = 'expired', finished_at = $1
                     WHERE state = 'pending' AND expires_at <= $1",
                &[&now],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let rows = client
            .query(
                "UPDATE hermes_cron_outbox SET state = 'sending', attempts = attempts + 1,
                         claimed_instance = $3, in_flight = false
                     WHERE id IN (SELECT id FROM hermes_cron_outbox
                                  WHERE state = 'pending' AND next_attempt_at <= $1
                                  ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
                     RETURNING *",
                &[&now, &limit, &self.instance],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut items: Vec<OutboxItem> = rows.iter().map(outbox_item).collect();
        // The attempt just counted is this one; report it as the file store does.
        for item in &mut items {
            item.attempts -= 1;
        }
        items.sort_by_key(|item| item.id);
        Ok(items)
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        let client = self.client().await?;
        let result = match flight {
            Flight::Out => {
                client
                    .execute(
                        "UPDATE hermes_cron_outbox SET in_flight = true WHERE id = $1",
                        &[&id],
                    )
                    .await
            }
            Flight::Back { delivered } => {
                client
                    .execute(
                        "UPDATE hermes_cron_outbox SET in_flight = false,
                                 sent_parts = sent_parts + $2 WHERE id = $1",
                        &[&id, &i64::from(delivered)],
                    )
                    .await
            }
        };
        result.map(drop).map_err(|e| self.fail(e))
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        let client = self.client().await?;
        let live = self.live(&client).await?;
        let released = client
                .execute(
                    "UPDATE hermes_cron_outbox SET state = 'pending', next_attempt_at = $2
                     WHERE state = 'sending' AND NOT in_flight AND NOT (claimed_instance = ANY($1))",
                    &[&live, &now],
                )
                .await
                .map_err(|e| self.fail(e))?;
        let closed = client
                .execute(
                    "UPDATE hermes_cron_outbox SET state = 'failed', finished_at = $2, last_error =
                         'outcome unknown: the process sending it died while a request was out; not resent, to never post twice'
                     WHERE state = 'sending' AND in_flight AND NOT (claimed_instance = ANY($1))",
                    &[&live, &now],
                )
                .await
                .map_err(|e| self.fail(e))?;
        Ok((released as usize, closed as usize))
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let finished = (state != OutboxState::Pending).then_some(now);
        let client = self.client().await?;
        let attempts: i64 = client
            .query_opt(
                "SELECT attempts FROM hermes_cron_outbox WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(|e| self.fail(e))?
            .map_or(1, |r| r.get(0));
        let next = now + retry_delay(attempts - 1);
        client
            .execute(
                "UPDATE hermes_cron_outbox SET state = $2, sent_parts = $3,
                         last_error = COALESCE($4, last_error), next_attempt_at = $5,
                         finished_at = $6
                     WHERE id = $1",
                &[&id, &state.as_str(), &sent_parts, &error, &next, &finished],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        let count: i64 = self
            .scalar(
                "SELECT COUNT(*) FROM hermes_cron_outbox WHERE occurrence = $1
                         AND state IN ('pending', 'sending')",
                &[&occurrence],
            )
            .await?;
        Ok(count as usize)
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        let count: i64 = self
            .scalar(
                "SELECT COUNT(*) FROM hermes_cron_outbox WHERE state IN ('pending', 'sending')",
                &[],
            )
            .await?;
        Ok(count as usize)
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.scalar(
            "SELECT MIN(next_attempt_at) FROM hermes_cron_outbox WHERE state = 'pending'",
            &[],
        )
        .await
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT state FROM hermes_cron_outbox WHERE occurrence = $1 AND target = $2",
                &[&occurrence, &target],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
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

    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        if !is_safe_id(doc.job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{}' is not a safe file name",
                doc.job_id
            )));
        }
        let stem = doc.file_stem();
        let body = doc.render();
        let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let mut n = 0;
        let name = loop {
            let name = match n {
                0 => format!("{stem}.md"),
                n => format!("{stem}-{n}.md"),
            };
            let inserted = client
                .execute(
                    "INSERT INTO hermes_cron_outputs (job_id, name, body) VALUES ($1, $2, $3)
                         ON CONFLICT DO NOTHING",
                    &[&doc.job_id, &name, &body],
                )
                .await
                .map_err(|e| self.fail(e))?;
            if inserted == 1 {
                break name;
            }
            n += 1;
        };
        client
            .execute(
                "DELETE FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     AND name NOT IN (
                         SELECT name FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                         ORDER BY name DESC LIMIT $2)",
                &[&doc.job_id, &keep],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(format!("postgresql:output/{}/{name}", doc.job_id))
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     ORDER BY name DESC LIMIT 1",
                &[&job_id],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name LIKE '%.md'
                     ORDER BY name DESC LIMIT $2",
                &[&job_id, &limit],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    // The snapshot is a row of the documents' table under its file's name, which no
    // document has (documents end in `.md`): removed with the job's documents, never
    // counted among them.
    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name = $2",
                &[&job_id, &MONITOR_SNAPSHOT_FILE],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO hermes_cron_outputs (job_id, name, body) VALUES ($1, $2, $3)
                     ON CONFLICT (job_id, name) DO UPDATE SET body = EXCLUDED.body",
                &[&job_id, &MONITOR_SNAPSHOT_FILE, &output],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        let client = self.client().await?;
        let Some(row) = client
            .query_opt("SELECT output FROM hermes_cron_runs WHERE id = $1", &[&run])
            .await
            .map_err(|e| self.fail(e))?
        else {
            return Ok(None);
        };
        let location: Option<String> = row.get(0);
        let Some((job, name)) = location
            .as_deref()
            .and_then(|l| l.strip_prefix("postgresql:output/"))
            .and_then(|l| l.split_once('/'))
        else {
            return Ok(Some(None));
        };
        let body = client
            .query_opt(
                "SELECT body FROM hermes_cron_outputs WHERE job_id = $1 AND name = $2",
                &[&job, &name],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(Some(body.map(|r| r.get(0))))
    }

    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        self.pg_record_incident(new).await
    }

    async fn move_incident(&self, id: &str, to: Transition, at: &str) -> Result<bool, StoreError> {
        self.pg_move_incident(id, to, at).await
    }

    async fn resolve_incidents(&self, job_id: &str, at: &str) -> Result<usize, StoreError> {
        self.pg_resolve_incidents(job_id, at).await
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        self.pg_incidents(state).await
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        self.pg_notes(job_id).await
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        self.pg_set_note(note).await
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        self.pg_delete_note(job_id, key).await
    }

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
