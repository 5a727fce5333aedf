//! One function per `hermes cron` verb. Each builds its [`Session`] (home, store, clock,
//! zones), does its work through the `jobs` crate, and prints what the user asked for.

mod jobs_cmd;
mod list;
mod next;
pub mod timefmt;

use chrono_tz::Tz;
use jobs::{Context, JsonFileStore};

use crate::cli::CronVerb;
use crate::clock::{Clock, SystemClock};
use crate::error::CliError;
use crate::home::{configured_zone, system_zone, Home};

/// What every verb needs: where the files are and what "now" is.
pub struct Session {
    #[allow(dead_code)] // read by the daemon verbs
    pub home: Home,
    pub store: JsonFileStore,
    pub ctx: Context,
}

impl Session {
    pub fn open() -> Result<Session, CliError> {
        let home = Home::resolve()?;
        let config = home.config()?;
        let now = SystemClock::from_env().map_err(CliError::user)?.now();
        let ctx = Context {
            now,
            zone: configured_zone(&config),
            legacy_zone: system_zone(),
        };
        let store = JsonFileStore::new(home.cron_dir());
        Ok(Session { home, store, ctx })
    }

    pub fn zone(&self) -> Tz {
        self.ctx.zone
    }
}

pub fn run_cron(verb: CronVerb) -> Result<(), CliError> {
    let session = Session::open()?;
    match verb {
        CronVerb::Add(args) => jobs_cmd::add(&session, args),
        CronVerb::List { all, json } => list::list(&session, all, json),
        CronVerb::Edit(args) => jobs_cmd::edit(&session, args),
        CronVerb::Pause { job, reason } => jobs_cmd::pause(&session, &job, reason.as_deref()),
        CronVerb::Resume { job } => jobs_cmd::resume(&session, &job),
        CronVerb::Remove { job } => jobs_cmd::remove(&session, &job),
        CronVerb::Next(args) => next::next(&session, args),
    }
}
