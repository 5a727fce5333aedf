//! The embedded store of one Hermes home, shared with Python Hermes: jobs in
//! `cron/jobs.json` (guarded by `.jobs.lock`, see [`crate::jsonjobs`]), passes serialised
//! by `.tick.lock`, runs, the outbox and failure incidents in the SQLite
//! `cron/executions.db`, job notepads in `cron/notepad.db`, output documents under
//! `cron/output/<job_id>/`, heartbeats in small `ticker_*` files, the global pause in the
//! home's `ESTOP`. It never writes jobs.json while it cannot read it.
//!
//! This file holds the store and what every room shares (the lazily opened databases,
//! the tick lock, the blocking adapter); each room of [`crate::store::Store`] is its own
//! file: `records.rs` (jobs and claims), `ledger.rs`, `outbox.rs`, `outputs.rs`,
//! `notes.rs` (incidents and notepads), `control.rs` (pause, heartbeat, describe). A
//! room's work is a plain blocking method on [`Files`]; its async trait method only makes
//! owned copies of what it borrows and hands one closure to [`FileStore::blocking`], the
//! one adapter that decides where blocking work runs. A plain function rather than a
//! macro: each call still reads as Rust, and what crosses to the other thread is in view.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Liveness, Owner, StoreError};
use crate::jsonjobs::{DocumentError, JsonFile};
use crate::ledger::incident::IncidentBook;
use crate::ledger::notepad::NotepadBook;
use crate::ledger::outbox::Outbox;
use crate::ledger::{Claim, Ledger, LedgerError};
use crate::lifecycle::JobError;
use crate::model::fields::Layout;
use crate::model::job::{Context, Job};

mod control;
mod group_commit;
mod ledger;
mod notes;
mod outbox;
mod outputs;
mod records;

pub use control::HomeEstop;
use group_commit::GroupCommit;

/// The files of one home's `cron/` directory. Every call runs on the runtime's blocking
/// threads (file locks, reads of jobs.json, SQLite): the caller's workers never wait.
pub struct FileStore {
    files: Arc<Files>,
}

/// What a [`FileStore`] works on, shared with the blocking thread of each call.
struct Files {
    jobs: JsonFile,
    owner: Owner,
    alive: Liveness,
    /// The run ledger, opened on first use (most CLI verbs never need it). Lock order:
    /// `ledger` before `outbox` when both are held (no call holds two of these four).
    ledger: Mutex<Option<Ledger>>,
    /// The delivery outbox (same database, own connection), opened on first use.
    outbox: Mutex<Option<Outbox>>,
    /// Failure incidents (same database, own connection), opened on first use.
    incidents: Mutex<Option<IncidentBook>>,
    /// Job notepads (`notepad.db`), opened on first use.
    notepad: Mutex<Option<NotepadBook>>,
    /// Job changes made at the same time, written together.
    group: GroupCommit,
    /// The layout of jobs.json as last read, with the file it was read from: fifty
    /// creates at once read a store of 10,000 jobs once between two writes, not fifty
    /// times. Held while it is worked out, so the others wait for that one reading.
    layout: Mutex<Option<(FileStamp, Layout)>>,
}

/// Which jobs.json a reading was of: every write replaces the file (a new inode), and
/// an edit in place changes its size or time.
#[derive(Clone, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileStamp {
    /// `None` when there is no file.
    fn of(path: &Path) -> std::io::Result<Option<FileStamp>> {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(meta) => Ok(Some(FileStamp {
                #[cfg(unix)]
                inode: meta.ino(),
                #[cfg(not(unix))]
                inode: 0,
                len: meta.len(),
                modified: meta.modified().ok(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl From<DocumentError> for StoreError {
    fn from(e: DocumentError) -> StoreError {
        match e {
            DocumentError::Unreadable { .. } => StoreError::Unreadable(e.to_string()),
            DocumentError::Io { .. } => StoreError::Unavailable(e.to_string()),
        }
    }
}

impl From<DocumentError> for JobError {
    fn from(e: DocumentError) -> JobError {
        JobError::Store(e.into())
    }
}

impl From<LedgerError> for StoreError {
    fn from(e: LedgerError) -> StoreError {
        StoreError::Unavailable(e.to_string())
    }
}

fn io_unavailable(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("cannot access {}: {e}", path.display()))
}

/// Whether this runs on a runtime of one thread (a one-shot CLI verb, where nothing
/// runs beside the call): the store's work is then done in place.
fn on_one_thread() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

impl FileStore {
    /// The store of the home whose `cron/` directory is `cron_dir`, for a process that
    /// is `owner` and judges processes of this host alive with `alive`.
    pub fn new(cron_dir: impl Into<PathBuf>, owner: Owner, alive: Liveness) -> FileStore {
        FileStore {
            files: Arc::new(Files {
                jobs: JsonFile::new(cron_dir),
                owner,
                alive,
                ledger: Mutex::new(None),
                outbox: Mutex::new(None),
                incidents: Mutex::new(None),
                notepad: Mutex::new(None),
                group: GroupCommit::default(),
                layout: Mutex::new(None),
            }),
        }
    }

    pub fn cron_dir(&self) -> &Path {
        self.files.cron_dir()
    }

    /// The jobs.json of the home whose `cron/` directory is `cron_dir` (what
    /// `hermes cron store import` copies by default).
    pub fn jobs_file(cron_dir: &Path) -> PathBuf {
        JsonFile::new(cron_dir).jobs_path()
    }

    /// Every job in store order, reduced to `keys` (`None`: whole), each built when its
    /// turn comes, read in place on the calling thread (it blocks): for a reader that
    /// walks one store alone, such as the differential fuzz target comparing the fast
    /// readers with the whole-document one.
    pub fn for_each_job(
        &self,
        ctx: &Context,
        keys: Option<&[&str]>,
        each: &mut dyn FnMut(Job),
    ) -> Result<(), StoreError> {
        self.files.for_each_job(ctx, keys, each)
    }

    /// Runs `work` on one of the runtime's blocking threads and waits for it there. On
    /// a runtime of one thread (a one-shot CLI verb, where nothing runs beside the
    /// call) it runs in place: the hop to another thread would only add that thread's
    /// start-up and wake-ups, half a millisecond per verb.
    async fn blocking<T, E>(
        &self,
        work: impl FnOnce(&Files) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        if on_one_thread() {
            return work(&self.files);
        }
        let files = Arc::clone(&self.files);
        match tokio::task::spawn_blocking(move || work(&files)).await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(StoreError::Unavailable(
                "the job store's work was cancelled: the process is stopping; try again".into(),
            )
            .into()),
        }
    }
}

impl Files {
    fn cron_dir(&self) -> &Path {
        self.jobs.cron_dir()
    }

    fn db_path(&self) -> PathBuf {
        self.cron_dir().join("executions.db")
    }

    fn output_root(&self) -> PathBuf {
        self.cron_dir().join("output")
    }

    fn ensure_dir(&self) -> Result<(), StoreError> {
        crate::jsonjobs::ensure_private_dir(self.cron_dir()).map_err(StoreError::from)
    }

    fn notepad_path(&self) -> PathBuf {
        self.cron_dir().join("notepad.db")
    }

    /// Runs `f` on the database handle kept in `slot`, opened from `path` with `open` on
    /// first use.
    fn with_db<D, T, E>(
        &self,
        slot: &Mutex<Option<D>>,
        path: PathBuf,
        open: fn(&Path) -> Result<D, LedgerError>,
        f: impl FnOnce(&mut D) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut guard = lock(slot);
        let db = match guard.as_mut() {
            Some(db) => db,
            None => {
                self.ensure_dir()?;
                guard.insert(open(&path).map_err(StoreError::from)?)
            }
        };
        f(db)
    }

    /// Whether a database that may not exist yet should be read: a reader never
    /// creates one.
    fn db_exists<D>(&self, slot: &Mutex<Option<D>>, path: &Path) -> bool {
        lock(slot).is_some() || path.exists()
    }

    fn with_ledger<T>(
        &self,
        f: impl FnOnce(&Ledger) -> Result<T, LedgerError>,
    ) -> Result<T, StoreError> {
        self.with_db(&self.ledger, self.db_path(), Ledger::open, |l| {
            f(l).map_err(StoreError::from)
        })
    }

    fn with_outbox<T>(
        &self,
        f: impl FnOnce(&Outbox) -> Result<T, LedgerError>,
    ) -> Result<T, StoreError> {
        self.with_db(&self.outbox, self.db_path(), Outbox::open, |o| {
            f(o).map_err(StoreError::from)
        })
    }

    fn with_incidents<T>(
        &self,
        f: impl FnOnce(&mut IncidentBook) -> Result<T, LedgerError>,
    ) -> Result<T, StoreError> {
        self.with_db(&self.incidents, self.db_path(), IncidentBook::open, |b| {
            f(b).map_err(StoreError::from)
        })
    }

    /// `.tick.lock`, taken without waiting: `None` when another scheduler holds it.
    fn try_tick_lock(&self) -> Result<Option<File>, StoreError> {
        self.ensure_dir()?;
        let path = self.cron_dir().join(".tick.lock");
        let mut options = File::options();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(|e| io_unavailable(&path, e))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => Ok(Some(file)),
            Err(fs4::TryLockError::WouldBlock) => Ok(None),
            Err(fs4::TryLockError::Error(e)) => Err(io_unavailable(&path, e)),
        }
    }
}

impl Files {
    /// A claim with this process's host and pid.
    fn stamped<'a>(&'a self, claim: &super::ClaimRequest<'a>) -> Claim<'a> {
        Claim {
            job_id: claim.job_id,
            occurrence: claim.occurrence,
            source: claim.source,
            status: claim.status.clone(),
            scheduled_at: claim.scheduled_at,
            started_at: claim.started_at,
            pid: self.owner.pid,
            host: &self.owner.host,
            error: claim.error,
        }
    }
}
