//! One function per `hermes cron` verb. Each builds its [`Session`] (home, store, clock,
//! zones), does its work through the `jobs` crate, and prints what the user asked for.

mod backfill_cmd;
mod cost_cmd;
pub mod error;
mod gateway_cmd;
mod incidents_cmd;
mod jobs_cmd;
mod list;
mod next;
mod pause_cmd;
mod runs_cmd;
mod sandbox_cmd;
pub mod scheduler_cmd;
mod status;
mod store_cmd;
pub mod timefmt;

use std::sync::Arc;

use chrono_tz::Tz;
use jobs::store::{FileStore, Owner, PgStore, Store};
use jobs::Context;

use crate::cli::CronVerb;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::home::{load_context, Home};
use crate::job_service::JobService;
use crate::process::{host_name, pid_alive};
use error::CliError;

/// What every verb needs: where the files are, the store, the clock and what "now" is.
pub struct Session {
    pub home: Home,
    /// config.yaml as this command read it (once).
    pub config: Config,
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub ctx: Context,
}

impl Session {
    pub async fn open(profile: Option<&str>) -> Result<Session, CliError> {
        let home = Home::resolve(profile)?;
        let clock: Arc<dyn Clock> =
            Arc::new(SystemClock::from_env().map_err(|e| CliError::user(e.to_string()))?);
        let (ctx, config) = load_context(&home, clock.now())?;
        let store = open_store(&home, &config).await?;
        Ok(Session {
            home,
            config,
            store,
            clock,
            ctx,
        })
    }

    pub fn zone(&self) -> Tz {
        self.ctx.zone
    }

    /// The job service on this session's home, store and clock: every verb that changes
    /// a job goes through it.
    pub fn service(&self) -> JobService {
        JobService::new(
            &self.home.root,
            Arc::clone(&self.store),
            Arc::clone(&self.clock),
            Arc::new(crate::wiring::AgentFacts),
        )
    }
}

/// The store this home uses: `HERMES_CRON_STORE`, else `cron.store` in config.yaml, a
/// `postgresql://` (or `postgres://`) URL for a database shared by several hosts; unset,
/// the embedded jobs.json with its ledger and outputs under `cron/`.
pub async fn open_store(home: &Home, config: &Config) -> Result<Arc<dyn Store>, CliError> {
    let chosen = std::env::var("HERMES_CRON_STORE")
        .ok()
        .map(|url| ("HERMES_CRON_STORE", url))
        .or_else(|| config.cron.store.clone().map(|url| ("cron.store", url)))
        .filter(|(_, url)| !url.trim().is_empty());
    let owner = Owner {
        host: machine_name(),
        pid: std::process::id(),
    };
    match chosen {
        None => Ok(Arc::new(FileStore::new(
            home.cron_dir(),
            Owner {
                host: host_name(),
                ..owner
            },
            Arc::new(pid_alive),
        ))),
        Some((_, url)) if url.starts_with("postgresql://") || url.starts_with("postgres://") => {
            let store = PgStore::connect(url.trim(), owner).await?;
            // A pinned clock (HERMES_NOW) decides what is due, as it does on jobs.json.
            let pinned = std::env::var_os("HERMES_NOW").is_some();
            Ok(Arc::new(if pinned {
                store.deciding_on_caller_clock()
            } else {
                store
            }))
        }
        Some((source, url)) => Err(CliError::user(format!(
            "{source} '{url}' is not a PostgreSQL URL: use postgresql://USER@HOST/DB, or leave it unset for jobs.json"
        ))),
    }
}

/// Who this host is on a shared store: `HERMES_MACHINE_ID`, else the host name.
pub fn machine_name() -> String {
    std::env::var("HERMES_MACHINE_ID")
        .ok()
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(host_name)
}

/// Logs go to stderr: `info` for the daemon, `warn` otherwise; each `-v` raises
/// the level one step; `RUST_LOG` overrides.
fn init_logging(daemon: bool, verbose: u8) {
    let levels = ["error", "warn", "info", "debug", "trace"];
    let base = if daemon { 2 } else { 1 };
    let level = levels[(base + verbose as usize).min(levels.len() - 1)];
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// `hermes gateway …` (without Python Hermes): the scheduler, or its systemd user unit.
pub fn gateway(
    action: crate::cli::GatewayAction,
    verbose: u8,
    profile: Option<&str>,
) -> Result<(), CliError> {
    use crate::cli::GatewayAction;
    match action {
        GatewayAction::Run => run_cron(CronVerb::Daemon, verbose, profile),
        GatewayAction::Status => run_cron(CronVerb::Status { json: false }, verbose, profile),
        service => gateway_cmd::service(service, &Home::resolve(profile)?),
    }
}

/// Runs one `hermes cron` verb on the one runtime of this process: the verbs that run
/// jobs or serve (daemon, tick, run, mcp) on two worker threads, every other verb on
/// the calling thread. The store is closed when the verb is done.
pub fn run_cron(verb: CronVerb, verbose: u8, profile: Option<&str>) -> Result<(), CliError> {
    let scheduler_verb = matches!(
        verb,
        CronVerb::Daemon
            | CronVerb::Tick
            | CronVerb::Run { .. }
            | CronVerb::Redeliver { .. }
            | CronVerb::Backfill { .. }
            | CronVerb::Replay { .. }
    );
    // `tick` and `run` print their own reports; only the daemon logs each run at `info`.
    let verb = match verb {
        // Running or asking about the scheduler are verbs of their own.
        CronVerb::Service {
            action: crate::cli::GatewayAction::Run,
        } => CronVerb::Daemon,
        CronVerb::Service {
            action: crate::cli::GatewayAction::Status,
        } => CronVerb::Status { json: false },
        verb => verb,
    };
    init_logging(matches!(verb, CronVerb::Daemon), verbose);
    let multi_thread = scheduler_verb || matches!(verb, CronVerb::Mcp);
    on_session(multi_thread, profile, |session| run_verb(verb, session))
}

/// `hermes pause [--reason R]`.
pub fn pause(reason: Option<String>, verbose: u8, profile: Option<&str>) -> Result<(), CliError> {
    init_logging(false, verbose);
    on_session(false, profile, |session| async move {
        pause_cmd::pause(&session, reason.as_deref()).await
    })
}

/// `hermes resume`.
pub fn resume(verbose: u8, profile: Option<&str>) -> Result<(), CliError> {
    init_logging(false, verbose);
    on_session(false, profile, |session| async move {
        pause_cmd::resume(&session).await
    })
}

/// Runs `verb` on a session of its own, on the one runtime of this process (two worker
/// threads, or the calling thread); the store is closed when the verb is done.
fn on_session<F, Fut>(multi_thread: bool, profile: Option<&str>, verb: F) -> Result<(), CliError>
where
    F: FnOnce(Session) -> Fut,
    Fut: std::future::Future<Output = Result<(), CliError>>,
{
    let runtime = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .map_err(|e| CliError::internal(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let session = Session::open(profile).await?;
        let store = Arc::clone(&session.store);
        let result = verb(session).await;
        store.close().await;
        result
    })
}

async fn run_verb(verb: CronVerb, session: Session) -> Result<(), CliError> {
    match verb {
        CronVerb::Add(args) => jobs_cmd::add(&session, args).await,
        CronVerb::List {
            all,
            json,
            limit,
            offset,
        } => match (limit, offset) {
            (None, None) => list::list(&session, all, json).await,
            (limit, offset) => {
                let page = list::Page {
                    limit: limit.map_or(list::PAGE_DEFAULT, |n| n as usize),
                    offset: offset.unwrap_or(0) as usize,
                };
                list::list_page(&session, all, json, page).await
            }
        },
        CronVerb::Edit(args) => jobs_cmd::edit(&session, args).await,
        CronVerb::Pause { job, reason } => jobs_cmd::pause(&session, &job, reason.as_deref()).await,
        CronVerb::Resume { job, at, run_now } => {
            jobs_cmd::resume(&session, &job, at, run_now).await
        }
        CronVerb::Remove { job } => jobs_cmd::remove(&session, &job).await,
        CronVerb::Next(args) => next::next(&session, args),
        CronVerb::Daemon => scheduler_cmd::daemon(session).await,
        CronVerb::Tick => scheduler_cmd::tick(session).await,
        CronVerb::Run { job } => scheduler_cmd::run(session, &job).await,
        CronVerb::Backfill {
            job,
            from,
            to,
            dry_run,
        } => backfill_cmd::backfill(session, &job, &from, &to, dry_run).await,
        CronVerb::Cancel { target } => runs_cmd::cancel(&session, &target).await,
        CronVerb::Replay { run } => runs_cmd::replay(session, run).await,
        CronVerb::Status { json } => status::status(&session, json).await,
        CronVerb::Runs { job, limit, json } => {
            // Python Hermes clamps the limit to 1–500; so do we (0 would hide every run).
            let limit = limit.clamp(1, 500) as usize;
            status::runs(&session, job.as_deref(), limit, json).await
        }
        CronVerb::Doctor => status::doctor(&session).await,
        CronVerb::Store { verb } => store_cmd::store(&session, verb).await,
        CronVerb::Sandbox {
            verb: crate::cli::SandboxVerb::Explain { job, json },
        } => sandbox_cmd::explain(&session, &job, json).await,
        CronVerb::Incidents {
            state,
            json,
            action,
            id,
        } => incidents_cmd::incidents(&session, state, action, id.as_deref(), json).await,
        CronVerb::Notepad {
            job,
            action,
            key,
            value,
            json,
        } => incidents_cmd::notepad(&session, &job, action, key, value, json).await,
        CronVerb::Service { action } => gateway_cmd::service(action, &session.home),
        CronVerb::Output { run } => status::output(&session, run).await,
        CronVerb::Redeliver { run, to } => {
            scheduler_cmd::redeliver(session, run, to.as_deref()).await
        }
        CronVerb::Cost { since, by, json } => cost_cmd::cost(&session, &since, by, json).await,
        CronVerb::Mcp => {
            let scheduler = scheduler_cmd::scheduler_for(&session, None)?;
            let stop = scheduler_cmd::stop_signal().await?;
            Ok(crate::mcp_server::serve(session.service(), scheduler, stop).await?)
        }
    }
}
