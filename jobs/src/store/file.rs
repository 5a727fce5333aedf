//! The embedded store of one Hermes home, shared with Python Hermes: jobs in
//! `cron/jobs.json` (guarded by `.jobs.lock`, see [`crate::jsonfile`]), passes serialised
//! by `.tick.lock`, runs, the outbox and failure incidents in the SQLite
//! `cron/executions.db`, job notepads in `cron/notepad.db`, output documents under
//! `cron/output/<job_id>/`, heartbeats in small `ticker_*` files, the global pause in the
//! home's `ESTOP`. It never writes jobs.json while it cannot read it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, TimeZone, Utc};

use super::{
    append_normalized_job, claim_planned, BatchChange, Beat, ChangeMark, DuePass, DueScan,
    ExtraField, Flight, Heartbeat, JobChange, Keep, Listed, Listing, Liveness, Owner, SharedSink,
    Store, StoreError, StoreInfo, SummarySink,
};
use crate::due::{
    self, earliest_next_run, plan_pass, prune_completed_one_shots, Planned, Probe, ScanOptions,
    PROBE_KEYS,
};
use crate::estop::{read_sentinel, remove_sentinel, write_sentinel, GlobalPause, SENTINEL};
use crate::fields::Layout;
use crate::incident::{Incident, IncidentBook, IncidentState, NewIncident, Transition};
use crate::job::{is_safe_id, Context, Job, SCHEDULING_KEYS};
use crate::jsonfile::{
    canonical_job_texts, parse_document_keeping, pick_job_fields, picked_record, record_keeping,
    write_atomic, DocumentError, JsonFile,
};
use crate::jsonscan::{walk_jobs, walk_jobs_in_parallel, KeyIndex, Walk};
use crate::ledger::{Claim, Ledger, LedgerError, RunEnd, RunRow, RunStatus};
use crate::lifecycle::JobError;
use crate::listing::{plain_summary, write_plain_job, JobSummary, NotPlain, Scratch};
use crate::notepad::{Note, NoteWriteError, NotepadBook};
use crate::outbox::{NewOutboxItem, Outbox, OutboxItem, OutboxState};
use crate::output::{
    list_outputs, save_rendered, OutputDocument, RenderedOutput, MONITOR_SNAPSHOT_FILE,
};
use crate::spend::Spend;

mod group_commit;
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

/// `<epoch seconds>.<millis>`, the shape the ticker files hold.
fn epoch_text(t: DateTime<Utc>) -> String {
    format!("{}.{:03}", t.timestamp(), t.timestamp_subsec_millis())
}

fn read_epoch(text: &str) -> Option<DateTime<Utc>> {
    let seconds = text.lines().next()?.trim().parse::<f64>().ok()?;
    if seconds.is_nan() || seconds <= 0.0 {
        return None;
    }
    Utc.timestamp_millis_opt((seconds * 1000.0) as i64).single()
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
        crate::jsonfile::ensure_private_dir(self.cron_dir()).map_err(StoreError::from)
    }

    fn notepad_path(&self) -> PathBuf {
        self.cron_dir().join("notepad.db")
    }

    /// The home's `ESTOP`, beside `cron/`.
    fn sentinel_path(&self) -> PathBuf {
        self.cron_dir()
            .parent()
            .unwrap_or(self.cron_dir())
            .join(SENTINEL)
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

    /// The due scan of a pass. Most passes find nothing to do: that is decided on an
    /// unlocked scheduling view, so an idle scheduler never takes the store lock nor
    /// rewrites jobs.json. Jobs the view finds due are decided again on fresh records
    /// under the lock, every other record left as its very text.
    fn plan(
        &self,
        ctx: &Context,
        scan: &DueScan<'_>,
    ) -> Result<(Vec<Planned>, Option<DateTime<Utc>>), StoreError> {
        let options = scan.options;
        let ttl = options.run_claim_ttl;
        let (mut probe, settled_wake) = self.undecided_jobs(ctx)?;
        let before = probe.len();
        let candidates: HashSet<String> = plan_pass(&mut probe, ctx, options)
            .into_iter()
            .map(|p| p.job.id().to_string())
            .collect();
        prune_completed_one_shots(&mut probe, ctx, scan.completed_retention);
        let mut planned = Vec::new();
        let mut next_wake = earliest(earliest_next_run(&probe, ctx, ttl), settled_wake);
        // A due job is changed in place by its id; one without an id of its own (none, a
        // number, one another job shares) is only reached by healing the whole store.
        let by_id = candidates.iter().all(|id| !id.is_empty())
            && probe
                .iter()
                .filter(|job| candidates.contains(job.id()))
                .count()
                == candidates.len();
        if probe.len() != before || !by_id {
            // Pruning removes records, healing gives ids: the whole store is rewritten.
            self.jobs
                .update::<_, DocumentError>(&ctx.now_text(), |doc| {
                    let mut jobs = healed(std::mem::take(&mut doc.jobs), ctx);
                    planned = plan_pass(&mut jobs, ctx, options);
                    prune_completed_one_shots(&mut jobs, ctx, scan.completed_retention);
                    next_wake = earliest_next_run(&jobs, ctx, ttl);
                    doc.jobs = jobs.into_iter().map(Job::into_record).collect();
                    Ok(())
                })?;
        } else if !candidates.is_empty() {
            // A job that became due between the view and the lock is the next pass's,
            // which the wake-up brings at once.
            let others: Vec<Job> = probe
                .into_iter()
                .filter(|job| !candidates.contains(job.id()))
                .collect();
            let others_wake = earliest(earliest_next_run(&others, ctx, ttl), settled_wake);
            drop(others);
            let ids: HashSet<&str> = candidates.iter().map(String::as_str).collect();
            let mut fresh_wake = None;
            self.jobs
                .update_records::<_, DocumentError>(&ctx.now_text(), &ids, |records| {
                    let mut jobs = healed(records.iter_mut().map(std::mem::take).collect(), ctx);
                    planned = plan_pass(&mut jobs, ctx, options);
                    fresh_wake = earliest_next_run(&jobs, ctx, ttl);
                    for (record, job) in records.iter_mut().zip(jobs) {
                        *record = job.into_record();
                    }
                    Ok(())
                })?;
            next_wake = [others_wake, fresh_wake].into_iter().flatten().min();
        }
        Ok((planned, next_wake))
    }
}

impl Files {
    /// The jobs.json bytes; none for a missing file (an empty store).
    fn read_jobs(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.jobs.jobs_path();
        match std::fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io_unavailable(&path, e)),
        }
    }

    /// The jobs a pass must decide on, as scheduling views, and the earliest next run
    /// of all the others. Each job is first judged on a few fields ([`due::probe`]);
    /// only the undecided ones (due, completed, unreadable next run) are built.
    fn undecided_jobs(
        &self,
        ctx: &Context,
    ) -> Result<(Vec<Job>, Option<DateTime<Utc>>), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        let keys = KeyIndex::new(SCHEDULING_KEYS);
        let at = PROBE_KEYS.map(|key| keys.find(key));
        let mut undecided = Vec::new();
        let mut settled_wake = None;
        let mut value_unreadable = false;
        let mut values = vec![None; SCHEDULING_KEYS.len()];
        // The file is read on this thread while each job is judged on another.
        let walked = walk_jobs_in_parallel(&bytes, &mut |_, entries| {
            values.iter_mut().for_each(|v| *v = None);
            if keys.pick(entries, &mut values).is_none() {
                return Walk::Stop;
            }
            let mut fields = [const { None }; PROBE_KEYS.len()];
            for (field, i) in fields.iter_mut().zip(at) {
                if let Some(text) = i.and_then(|i| values[i]) {
                    let Ok(value) = serde_json::from_str(text) else {
                        value_unreadable = true;
                        return Walk::Stop;
                    };
                    *field = Some(value);
                }
            }
            match due::probe(&fields, ctx) {
                Probe::Settled { wake } => settled_wake = earliest(settled_wake, wake),
                Probe::Undecided => match picked_record(SCHEDULING_KEYS, &values) {
                    Ok(record) => undecided.push(Job::from_record(record)),
                    Err(_) => {
                        value_unreadable = true;
                        return Walk::Stop;
                    }
                },
            }
            Walk::Continue
        });
        if walked.is_some() {
            return Ok((undecided, settled_wake));
        }
        if value_unreadable {
            return Err(job_text_error(&bytes, &path, Some(SCHEDULING_KEYS)));
        }
        let doc = parse_document_keeping(&bytes, &path, Some(SCHEDULING_KEYS))?;
        Ok((doc.jobs.into_iter().map(Job::from_record).collect(), None))
    }
}

fn earliest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    [a, b].into_iter().flatten().min()
}

/// The error for a job of a checked store that still cannot be read alone (nested
/// deeper than the JSON reader allows): the whole-document reader's own, with its
/// position, so the message is the one any other reader of this store gives.
fn job_text_error(bytes: &[u8], path: &Path, keep: Option<&[&str]>) -> StoreError {
    match parse_document_keeping(bytes, path, keep) {
        Err(e) => e.into(),
        Ok(_) => StoreError::Unreadable(format!(
            "cannot read job store {}: a job cannot be read; the file was left unchanged",
            path.display()
        )),
    }
}

fn healed(records: Vec<crate::jsonfile::Record>, ctx: &Context) -> Vec<Job> {
    records
        .into_iter()
        .map(|record| {
            let mut job = Job::from_record(record);
            job.heal(ctx);
            job
        })
        .collect()
}

impl Files {
    fn load_jobs(&self) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .jobs
            .load()?
            .jobs
            .into_iter()
            .map(Job::from_record)
            .collect())
    }

    fn for_each_job(
        &self,
        _ctx: &Context,
        keys: Option<&[&str]>,
        each: &mut dyn FnMut(Job),
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        if let Some(picked) = keys.and_then(|keys| pick_job_fields(&bytes, keys)) {
            let unreadable = || job_text_error(&bytes, &path, keys);
            for values in picked.jobs() {
                each(Job::from_record(
                    picked.record(values).map_err(|_| unreadable())?,
                ));
            }
            return Ok(());
        }
        let Some(texts) = canonical_job_texts(&bytes) else {
            let doc = parse_document_keeping(&bytes, &path, keys)?;
            doc.jobs.into_iter().map(Job::from_record).for_each(each);
            return Ok(());
        };
        for text in texts {
            let record = record_keeping(text.get(), keys)
                .map_err(|_| job_text_error(&bytes, &path, keys))?;
            each(Job::from_record(record));
        }
        Ok(())
    }

    /// Each job's summary is read straight from its text in the file where it can be
    /// ([`crate::listing`]), else from the job, and handed over from the second thread
    /// as soon as it is read. A store that turns out not to be in the canonical shape is
    /// read again the long way.
    fn for_each_summary(
        &self,
        ctx: &Context,
        sink: &mut dyn SummarySink,
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        let mut scratch = Scratch::default();
        let mut started = false;
        let walked = walk_jobs_in_parallel(&bytes, &mut |text, entries| {
            started = true;
            match plain_summary(entries, ctx, &mut scratch) {
                Ok(summary) => sink.summary(&summary),
                Err(NotPlain) => match record_keeping(text, Some(JobSummary::KEYS)) {
                    Ok(record) => sink.summary(&JobSummary::of(&Job::from_record(record), ctx)),
                    Err(_) => return Walk::Stop,
                },
            }
            Walk::Continue
        });
        if walked.is_some() {
            return Ok(());
        }
        if started {
            sink.restart();
        }
        self.for_each_job(ctx, Some(JobSummary::KEYS), &mut |job| {
            sink.summary(&JobSummary::of(&job, ctx))
        })
    }

    /// Each job the healing leaves as it is is written straight from its text in the
    /// file ([`crate::listing`]); any other is built and normalized. A store not in the
    /// canonical shape is read the long way.
    fn write_normalized_jobs(
        &self,
        ctx: &Context,
        keep: &(dyn Fn(Listed) -> bool + Sync),
        extras: &[ExtraField],
        out: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        // The listing is about as long as the file (no indentation, a few more fields):
        // reserved once rather than grown by copying.
        out.reserve(bytes.len());
        let mark = out.len();
        let mut scratch = Scratch::default();
        let mut first = true;
        let walked = walk_jobs_in_parallel(&bytes, &mut |text, entries| {
            let at = out.len();
            let appended =
                match write_plain_job(entries, ctx, keep, extras, first, &mut scratch, out) {
                    Ok(appended) => appended,
                    Err(NotPlain) => {
                        out.truncate(at);
                        let Ok(record) = record_keeping(text, None) else {
                            return Walk::Stop;
                        };
                        let job = Job::from_record(record);
                        match append_normalized_job(job, ctx, keep, extras, first, out) {
                            Ok(appended) => appended,
                            Err(_) => return Walk::Stop,
                        }
                    }
                };
            first &= !appended;
            Walk::Continue
        });
        if walked.is_some() {
            return Ok(());
        }
        out.truncate(mark);
        super::write_normalized(ctx, keep, extras, out, &mut |each| {
            self.for_each_job(ctx, None, each)
        })
    }

    fn layout(&self) -> Result<Layout, StoreError> {
        let mut known = lock(&self.layout);
        let path = self.jobs.jobs_path();
        let stamp = FileStamp::of(&path).map_err(|e| {
            StoreError::Unavailable(format!("cannot access {}: {e}", path.display()))
        })?;
        let Some(stamp) = stamp else {
            return Ok(Layout::of_store(&[]));
        };
        if let Some((read, layout)) = &*known {
            if *read == stamp {
                return Ok(*layout);
            }
        }
        // Stamped before the reading: a file replaced meanwhile is read again next time.
        // The keys are looked for in the text, no job built; a store that needs repairs
        // is read whole.
        let bytes = self.read_jobs()?;
        let keys = KeyIndex::new(Layout::PROBE_KEYS);
        let at = ["monitor_state", "provider_snapshot"].map(|key| keys.find(key));
        let mut has = [false; 2];
        let mut values = [None; Layout::PROBE_KEYS.len()];
        let walked = walk_jobs(&bytes, &mut |_, entries| {
            values.fill(None);
            if keys.pick(entries, &mut values).is_none() {
                return Walk::Stop;
            }
            for (has, i) in has.iter_mut().zip(at) {
                *has |= i.is_some_and(|i| values[i].is_some());
            }
            Walk::Continue
        });
        let layout = match walked {
            Some(()) => Layout::of_keys(has[0], has[1]),
            None => Layout::of_store(&self.load_view(Layout::PROBE_KEYS)?),
        };
        *known = Some((stamp, layout));
        Ok(layout)
    }

    fn load_view(&self, keys: &[&str]) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .jobs
            .load_keeping(keys)?
            .jobs
            .into_iter()
            .map(Job::from_record)
            .collect())
    }

    // Job changes go through the group commit: changes made at the same time share one
    // rewrite and one sync of jobs.json. The whole document is healed and rewritten, as
    // Python Hermes and every earlier build do for a CLI change (on a canonical store the
    // jobs healing leaves alone are copied as text): the same operation leaves the same
    // bytes.
    fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        self.group.insert(&self.jobs, ctx, job)
    }

    fn update_job(&self, ctx: &Context, id: &str, change: JobChange) -> Result<Job, JobError> {
        self.group.update(&self.jobs, ctx, id, change)
    }

    fn update_jobs(
        &self,
        ctx: &Context,
        ids: &HashSet<&str>,
        change: &mut dyn FnMut(&mut Job),
    ) -> Result<(), StoreError> {
        self.jobs
            .update_records::<_, DocumentError>(&ctx.now_text(), ids, |records| {
                for record in records.iter_mut() {
                    let mut job = Job::from_record(std::mem::take(record));
                    job.heal(ctx);
                    change(&mut job);
                    *record = job.into_record();
                }
                Ok(())
            })?;
        Ok(())
    }

    fn remove_job(&self, ctx: &Context, id: &str) -> Result<Job, JobError> {
        if !is_safe_id(id) {
            return Err(JobError::Invalid(format!(
                "Job id '{id}' is not a safe file name; fix or remove it in jobs.json by hand"
            )));
        }
        let removed = self.group.remove(&self.jobs, ctx, id)?;
        if self.db_exists(&self.notepad, &self.notepad_path()) {
            self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
                n.clear(id).map_err(StoreError::from)
            })?;
        }
        let output = self.output_root().join(id);
        match std::fs::remove_dir_all(&output) {
            Ok(()) => Ok(removed),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(removed),
            Err(e) => Err(JobError::Store(io_unavailable(&output, e))),
        }
    }

    fn change_mark(&self) -> ChangeMark {
        use std::hash::{Hash, Hasher};
        let Ok(meta) = std::fs::metadata(self.jobs.jobs_path()) else {
            return ChangeMark(0);
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        meta.modified().ok().hash(&mut hasher);
        meta.len().hash(&mut hasher);
        // Every write replaces the file (a new inode), so two writes of the same length
        // within one tick of the file system's coarse clock still differ.
        #[cfg(unix)]
        std::os::unix::fs::MetadataExt::ino(&meta).hash(&mut hasher);
        ChangeMark(hasher.finish())
    }

    fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        // Held until the occurrences are claimed: a second scheduler on this home does
        // nothing this round rather than deciding on the same records.
        let Some(tick_lock) = self.try_tick_lock()? else {
            return Ok(DuePass::default());
        };
        let (planned, next_wake) = self.plan(ctx, scan)?;
        if planned.is_empty() {
            // Nothing to claim: the ledger is not even opened.
            return Ok(DuePass::decided(Vec::new(), next_wake));
        }
        let occurrences = self.with_ledger(|ledger| {
            Ok(claim_planned(
                planned,
                ctx,
                scan,
                &mut |job_id| {
                    ledger
                        .is_running(job_id, &self.owner.host, &*self.alive)
                        .unwrap_or(false)
                },
                &mut |claim| {
                    ledger
                        .claim(&self.stamped(claim))
                        .map_err(|e| e.to_string())
                },
            ))
        })?;
        drop(tick_lock);
        Ok(DuePass::decided(occurrences, next_wake))
    }

    fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let busy = self.with_ledger(|ledger| {
            Ok(ledger
                .is_running(job_id, &self.owner.host, &*self.alive)
                .unwrap_or(false))
        })?;
        if busy {
            return Err(JobError::Running(job_id.to_string()));
        }
        let occurrence = super::manual_occurrence(job_id, now);
        let claim = super::manual_claim(job_id, &occurrence, now);
        self.with_ledger(|ledger| ledger.claim(&self.stamped(&claim)))?
            .ok_or_else(|| {
                JobError::Invalid(
                    "a manual run was started at the same millisecond; try again".into(),
                )
            })
    }

    fn start_run(&self, run: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
        // On this store a claim is this process's run: a ledger that cannot take the
        // start time keeps the claim's, and the run goes ahead (recording its end meets
        // the same ledger and reports what is wrong with it).
        let _ = self.with_ledger(|ledger| ledger.start(run, now));
        Ok(true)
    }

    fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        self.with_ledger(|ledger| ledger.finish(run, status, now, end))
    }

    fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        let own = i64::from(self.owner.pid);
        let alive = |pid: i64| !(except_own && pid == own) && (self.alive)(pid);
        self.with_ledger(|ledger| ledger.mark_interrupted(&self.owner.host, now, &alive))
    }

    fn recent_runs(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(Vec::new());
        }
        // Python Hermes, on a store both share, records its own attempts in the same
        // database: show them too, merged newest first.
        let (mut rows, theirs) = self.with_ledger(|ledger| {
            Ok((
                ledger.recent(job_id, limit)?,
                ledger.python_executions(job_id, limit)?,
            ))
        })?;
        if theirs.is_empty() {
            return Ok(rows);
        }
        let started = |row: &RunRow| {
            row.started_at
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        rows.extend(theirs);
        rows.sort_by_key(|row| std::cmp::Reverse(started(row)));
        rows.truncate(limit);
        Ok(rows)
    }

    fn latest_runs(&self) -> Result<HashMap<String, RunRow>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(HashMap::new());
        }
        let rows = self.with_ledger(Ledger::latest_per_job)?;
        Ok(rows.into_iter().map(|r| (r.job_id.clone(), r)).collect())
    }

    fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        self.with_outbox(|outbox| {
            if claimed {
                outbox.enqueue_claimed(item, &self.owner.host, self.owner.pid)
            } else {
                outbox.enqueue(item).map(|_| None)
            }
        })
    }

    fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.with_outbox(|outbox| outbox.claim_due(now, limit, &self.owner.host, self.owner.pid))
    }

    fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        self.with_outbox(|outbox| match flight {
            Flight::Out => outbox.request_going_out(id),
            Flight::Back { delivered } => outbox.answer_came_back(id, delivered),
        })
    }

    fn release_orphan_deliveries(&self, now: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        self.with_outbox(|outbox| outbox.release_orphans(&self.owner.host, &*self.alive, now))
    }

    fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.with_outbox(|outbox| outbox.finish(id, state, now, sent_parts, error))
    }

    fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        self.with_outbox(|outbox| outbox.open_for_occurrence(occurrence))
    }

    fn outbox_depth(&self) -> Result<usize, StoreError> {
        if !self.db_exists(&self.outbox, &self.db_path()) {
            return Ok(0);
        }
        self.with_outbox(Outbox::depth)
    }

    fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.with_outbox(Outbox::earliest_due)
    }

    fn delivery_state(&self, occurrence: &str, target: &str) -> Result<Option<String>, StoreError> {
        self.with_outbox(|outbox| outbox.state_of(occurrence, target))
    }

    fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.with_ledger(|ledger| ledger.prune(keep_runs, spend_since))?;
        self.with_outbox(|outbox| outbox.prune(before))?;
        Ok(())
    }

    fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        // Reading history never creates the database.
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(Vec::new());
        }
        self.with_ledger(|ledger| ledger.spend_since(since))
    }

    fn save_output(&self, doc: &RenderedOutput, keep: usize) -> Result<String, StoreError> {
        let path = save_rendered(&self.output_root(), doc, keep)?;
        Ok(path.display().to_string())
    }

    fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        if !is_safe_id(job_id) {
            return Ok(None);
        }
        let Some(newest) = list_outputs(&self.output_root().join(job_id)).pop() else {
            return Ok(None);
        };
        match std::fs::read_to_string(&newest) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_unavailable(&newest, e)),
        }
    }

    fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        if !is_safe_id(job_id) {
            return Ok(Vec::new());
        }
        let mut texts = Vec::new();
        for path in list_outputs(&self.output_root().join(job_id))
            .iter()
            .rev()
            .take(limit)
        {
            match std::fs::read_to_string(path) {
                Ok(text) => texts.push(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_unavailable(path, e)),
            }
        }
        Ok(texts)
    }

    /// Where a monitor job's snapshot lives: beside its documents, as Hermes 0.22 keeps it.
    fn monitor_snapshot_path(&self, job_id: &str) -> Result<PathBuf, StoreError> {
        if !is_safe_id(job_id) {
            return Err(StoreError::Refused(format!(
                "job id '{job_id}' is not a safe file name"
            )));
        }
        Ok(self.output_root().join(job_id).join(MONITOR_SNAPSHOT_FILE))
    }

    fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let path = self.monitor_snapshot_path(job_id)?;
        match std::fs::read(&path) {
            // Hermes 0.22 reads it as `utf-8-sig`: a byte-order mark is not output.
            Ok(bytes) => Ok(Some(
                String::from_utf8_lossy(bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes))
                    .into_owned(),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_unavailable(&path, e)),
        }
    }

    fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let path = self.monitor_snapshot_path(job_id)?;
        write_atomic(&path, output.as_bytes()).map_err(StoreError::from)
    }

    fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        if !self.db_exists(&self.ledger, &self.db_path()) {
            return Ok(None);
        }
        let Some(location) = self.with_ledger(|ledger| ledger.output_of(run))? else {
            return Ok(None);
        };
        let text = location.and_then(|path| std::fs::read_to_string(path).ok());
        Ok(Some(text))
    }

    fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        if !self.db_exists(&self.incidents, &self.db_path()) {
            return Ok(Vec::new());
        }
        self.with_incidents(|book| book.list(state))
    }

    fn resolve_incidents(&self, job_id: &str, at: &str) -> Result<usize, StoreError> {
        if !self.db_exists(&self.incidents, &self.db_path()) {
            return Ok(0);
        }
        self.with_incidents(|book| book.resolve_job(job_id, at))
    }

    fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        if !self.db_exists(&self.notepad, &self.notepad_path()) {
            return Ok(Vec::new());
        }
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.list(job_id).map_err(StoreError::from)
        })
    }

    fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.set(note).map_err(|e| match e {
                NoteWriteError::Refused(e) => StoreError::Refused(e.to_string()),
                NoteWriteError::Database(e) => e.into(),
            })
        })
    }

    fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        if !self.db_exists(&self.notepad, &self.notepad_path()) {
            return Ok(false);
        }
        self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
            n.delete(job_id, key).map_err(StoreError::from)
        })
    }

    fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let path = self.sentinel_path();
        let was = read_sentinel(&path).is_some();
        match pause {
            Some(pause) => write_sentinel(&path, pause),
            None => remove_sentinel(&path).map(|_| ()),
        }
        .map_err(|e| io_unavailable(&path, e))?;
        Ok(was)
    }

    fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let (name, text) = match beat {
            Beat::Started { pid } => ("daemon.pid", format!("{pid}\n")),
            Beat::Alive(at) => ("ticker_heartbeat", epoch_text(*at)),
            Beat::PassSucceeded(at) => ("ticker_last_success", epoch_text(*at)),
            Beat::PassFailed(at, error) => (
                "ticker_last_error",
                format!("{}\n{error}\n", epoch_text(*at)),
            ),
            Beat::Stopped => ("ticker_heartbeat", "0".to_string()),
        };
        write_atomic(&self.cron_dir().join(name), text.as_bytes())?;
        Ok(())
    }

    fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        let read = |name: &str| std::fs::read_to_string(self.cron_dir().join(name)).ok();
        let last_error = read("ticker_last_error").and_then(|text| {
            let at = read_epoch(&text)?;
            let why = text.lines().skip(1).collect::<Vec<_>>().join(" ");
            Some((at, why.trim().to_string()))
        });
        let alive = read("ticker_heartbeat");
        Ok(Heartbeat {
            seen: alive.is_some(),
            alive_at: alive.as_deref().and_then(read_epoch),
            pid: read("daemon.pid").and_then(|t| t.trim().parse().ok()),
            last_success: read("ticker_last_success").as_deref().and_then(read_epoch),
            last_error,
            hosts: Vec::new(),
        })
    }

    fn describe(&self) -> Result<StoreInfo, StoreError> {
        Ok(StoreInfo {
            backend: "jobs.json",
            location: self.jobs.jobs_path().display().to_string(),
            schema_version: None,
        })
    }
}

#[async_trait::async_trait]
impl Store for FileStore {
    async fn load_jobs(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        self.blocking(Files::load_jobs).await
    }

    async fn layout(&self, _ctx: &Context) -> Result<Layout, StoreError> {
        self.blocking(|files| files.layout()).await
    }

    async fn load_view(&self, _ctx: &Context, keys: &[&str]) -> Result<Vec<Job>, StoreError> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        self.blocking(move |files| {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            files.load_view(&keys)
        })
        .await
    }

    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        if !on_one_thread() {
            let files = &self.files;
            return files.group.insert_awaiting(&files.jobs, ctx, job).await;
        }
        let ctx = *ctx;
        self.blocking(move |files| files.insert_job(&ctx, job))
            .await
    }

    async fn update_job(
        &self,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        if !on_one_thread() {
            let files = &self.files;
            return files
                .group
                .update_awaiting(&files.jobs, ctx, id, change)
                .await;
        }
        let (ctx, id) = (*ctx, id.to_string());
        self.blocking(move |files| files.update_job(&ctx, &id, change))
            .await
    }

    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            let ids: HashSet<&str> = ids.iter().map(String::as_str).collect();
            files.update_jobs(&ctx, &ids, &mut *change)
        })
        .await
    }

    async fn remove_job(&self, ctx: &Context, id: &str) -> Result<Job, JobError> {
        let (ctx, id) = (*ctx, id.to_string());
        self.blocking(move |files| files.remove_job(&ctx, &id))
            .await
    }

    async fn change_mark(&self) -> ChangeMark {
        self.blocking(|files| Ok::<_, StoreError>(files.change_mark()))
            .await
            .unwrap_or_default()
    }

    fn listing(&self) -> Option<&dyn Listing> {
        Some(self)
    }

    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let (ctx, scan) = (*ctx, OwnedScan::of(scan));
        self.blocking(move |files| files.claim_due(&ctx, &scan.scan()))
            .await
    }

    async fn start_run(&self, run: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
        self.blocking(move |files| files.start_run(run, now)).await
    }

    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.claim_manual(&job_id, now))
            .await
    }

    async fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        now: DateTime<Utc>,
        end: &RunEnd,
    ) -> Result<(), StoreError> {
        let end = end.clone();
        self.blocking(move |files| files.finish_run(run, status, now, &end))
            .await
    }

    async fn interrupt_dead_runs(
        &self,
        now: DateTime<Utc>,
        except_own: bool,
    ) -> Result<usize, StoreError> {
        self.blocking(move |files| files.interrupt_dead_runs(now, except_own))
            .await
    }

    async fn recent_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let job_id = job_id.map(str::to_string);
        self.blocking(move |files| files.recent_runs(job_id.as_deref(), limit))
            .await
    }

    async fn latest_runs(&self) -> Result<HashMap<String, RunRow>, StoreError> {
        self.blocking(Files::latest_runs).await
    }

    async fn keep_delivery(
        &self,
        item: &NewOutboxItem<'_>,
        claimed: bool,
    ) -> Result<Option<i64>, StoreError> {
        let item = OwnedItem::of(item);
        self.blocking(move |files| files.keep_delivery(&item.item(), claimed))
            .await
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        self.blocking(move |files| files.claim_deliveries(now, limit))
            .await
    }

    async fn flight(&self, id: i64, flight: Flight) -> Result<(), StoreError> {
        self.blocking(move |files| files.flight(id, flight)).await
    }

    async fn release_orphan_deliveries(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize), StoreError> {
        self.blocking(move |files| files.release_orphan_deliveries(now))
            .await
    }

    async fn finish_delivery(
        &self,
        id: i64,
        state: OutboxState,
        now: DateTime<Utc>,
        sent_parts: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let error = error.map(str::to_string);
        self.blocking(move |files| {
            files.finish_delivery(id, state, now, sent_parts, error.as_deref())
        })
        .await
    }

    async fn open_deliveries(&self, occurrence: &str) -> Result<usize, StoreError> {
        let occurrence = occurrence.to_string();
        self.blocking(move |files| files.open_deliveries(&occurrence))
            .await
    }

    async fn outbox_depth(&self) -> Result<usize, StoreError> {
        self.blocking(Files::outbox_depth).await
    }

    async fn next_delivery_due(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.blocking(Files::next_delivery_due).await
    }

    async fn delivery_state(
        &self,
        occurrence: &str,
        target: &str,
    ) -> Result<Option<String>, StoreError> {
        let (occurrence, target) = (occurrence.to_string(), target.to_string());
        self.blocking(move |files| files.delivery_state(&occurrence, &target))
            .await
    }

    async fn prune_history(
        &self,
        before: DateTime<Utc>,
        keep_runs: usize,
        spend_since: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.blocking(move |files| files.prune_history(before, keep_runs, spend_since))
            .await
    }

    async fn spend_since(&self, since: DateTime<Utc>) -> Result<Vec<Spend>, StoreError> {
        self.blocking(move |files| files.spend_since(since)).await
    }

    async fn claim_budget_notice(
        &self,
        window: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let window = window.to_string();
        self.blocking(move |files| {
            files.with_ledger(|ledger| ledger.claim_budget_notice(&window, now))
        })
        .await
    }

    async fn save_output(
        &self,
        doc: &OutputDocument<'_>,
        keep: usize,
    ) -> Result<String, StoreError> {
        let doc = doc.rendered();
        self.blocking(move |files| files.save_output(&doc, keep))
            .await
    }

    async fn latest_output(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.latest_output(&job_id))
            .await
    }

    async fn recent_outputs(&self, job_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.recent_outputs(&job_id, limit))
            .await
    }

    async fn monitor_snapshot(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.monitor_snapshot(&job_id))
            .await
    }

    async fn save_monitor_snapshot(&self, job_id: &str, output: &str) -> Result<(), StoreError> {
        let (job_id, output) = (job_id.to_string(), output.to_string());
        self.blocking(move |files| files.save_monitor_snapshot(&job_id, &output))
            .await
    }

    async fn run_output(&self, run: i64) -> Result<Option<Option<String>>, StoreError> {
        self.blocking(move |files| files.run_output(run)).await
    }

    async fn record_incident(&self, new: &NewIncident) -> Result<Incident, StoreError> {
        let new = new.clone();
        self.blocking(move |files| files.with_incidents(|book| book.record(&new)))
            .await
    }

    async fn move_incident(&self, id: &str, to: Transition, at: &str) -> Result<bool, StoreError> {
        let (id, at) = (id.to_string(), at.to_string());
        self.blocking(move |files| files.with_incidents(|book| book.move_one(&id, to, &at)))
            .await
    }

    async fn resolve_incidents(&self, job_id: &str, at: &str) -> Result<usize, StoreError> {
        let (job_id, at) = (job_id.to_string(), at.to_string());
        self.blocking(move |files| files.resolve_incidents(&job_id, &at))
            .await
    }

    async fn incidents(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, StoreError> {
        self.blocking(move |files| files.incidents(state)).await
    }

    async fn notes(&self, job_id: &str) -> Result<Vec<Note>, StoreError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.notes(&job_id)).await
    }

    async fn set_note(&self, note: &Note) -> Result<(), StoreError> {
        let note = note.clone();
        self.blocking(move |files| files.set_note(&note)).await
    }

    async fn delete_note(&self, job_id: &str, key: &str) -> Result<bool, StoreError> {
        let (job_id, key) = (job_id.to_string(), key.to_string());
        self.blocking(move |files| files.delete_note(&job_id, &key))
            .await
    }

    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        self.blocking(|files| Ok(read_sentinel(&files.sentinel_path())))
            .await
    }

    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let pause = pause.cloned();
        self.blocking(move |files| files.set_global_pause(pause.as_ref()))
            .await
    }

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let beat = beat.clone();
        self.blocking(move |files| files.beat(&beat)).await
    }

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        self.blocking(Files::heartbeat).await
    }

    async fn describe(&self) -> Result<StoreInfo, StoreError> {
        self.blocking(Files::describe).await
    }
}

#[async_trait::async_trait]
impl Listing for FileStore {
    async fn summaries(&self, ctx: &Context, sink: SharedSink) -> Result<(), StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            files.for_each_summary(&ctx, &mut *sink)
        })
        .await
    }

    async fn normalized(
        &self,
        ctx: &Context,
        keep: Keep,
        extras: Vec<ExtraField>,
        mut out: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            files.write_normalized_jobs(&ctx, &*keep, &extras, &mut out)?;
            Ok(out)
        })
        .await
    }
}

/// A [`DueScan`] that owns what it names, to cross to the blocking thread.
struct OwnedScan {
    catch_up_missed: bool,
    claim_owner: String,
    run_claim_ttl: chrono::Duration,
    completed_retention: chrono::Duration,
    running_here: HashSet<String>,
    free_slots: Option<usize>,
}

impl OwnedScan {
    fn of(scan: &DueScan<'_>) -> OwnedScan {
        OwnedScan {
            catch_up_missed: scan.options.catch_up_missed,
            claim_owner: scan.options.claim_owner.to_string(),
            run_claim_ttl: scan.options.run_claim_ttl,
            completed_retention: scan.completed_retention,
            running_here: scan.running_here.clone(),
            free_slots: scan.free_slots,
        }
    }

    fn scan(&self) -> DueScan<'_> {
        DueScan {
            options: ScanOptions {
                catch_up_missed: self.catch_up_missed,
                claim_owner: &self.claim_owner,
                run_claim_ttl: self.run_claim_ttl,
            },
            completed_retention: self.completed_retention,
            running_here: &self.running_here,
            free_slots: self.free_slots,
        }
    }
}

/// A [`NewOutboxItem`] that owns its texts, to cross to the blocking thread.
struct OwnedItem {
    occurrence: String,
    target: String,
    job_id: String,
    run_at: String,
    payload: String,
    sent_parts: i64,
    error: String,
    now: DateTime<Utc>,
    first_retry: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl OwnedItem {
    fn of(item: &NewOutboxItem<'_>) -> OwnedItem {
        OwnedItem {
            occurrence: item.occurrence.to_string(),
            target: item.target.to_string(),
            job_id: item.job_id.to_string(),
            run_at: item.run_at.to_string(),
            payload: item.payload.to_string(),
            sent_parts: item.sent_parts,
            error: item.error.to_string(),
            now: item.now,
            first_retry: item.first_retry,
            expires_at: item.expires_at,
        }
    }

    fn item(&self) -> NewOutboxItem<'_> {
        NewOutboxItem {
            occurrence: &self.occurrence,
            target: &self.target,
            job_id: &self.job_id,
            run_at: &self.run_at,
            payload: &self.payload,
            sent_parts: self.sent_parts,
            error: &self.error,
            now: self.now,
            first_retry: self.first_retry,
            expires_at: self.expires_at,
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
            status: claim.status,
            scheduled_at: claim.scheduled_at,
            started_at: claim.started_at,
            pid: self.owner.pid,
            host: &self.owner.host,
            error: claim.error,
        }
    }
}
