//! [`JsonFile`]: the jobs.json of one home and its read-modify-writes under
//! `.jobs.lock` — of the whole document, or of a few records with every other job
//! written back as the very text it was.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use serde_json::value::RawValue;

use super::reader::{raw as raw_text, JobsText};
use super::write::{
    create_private_dir_if_missing, render, render_document, set_mode, write_atomic_locked,
};
use super::{
    io_error, parse_document, parse_document_keeping, DocumentError, Record, StoreDocument,
};

/// The job store of one Hermes home: `<cron_dir>/jobs.json`, guarded by
/// `<cron_dir>/.jobs.lock`.
#[derive(Debug, Clone)]
pub struct JsonFile {
    cron_dir: PathBuf,
}

impl JsonFile {
    pub fn new(cron_dir: impl Into<PathBuf>) -> Self {
        Self {
            cron_dir: cron_dir.into(),
        }
    }

    pub fn cron_dir(&self) -> &Path {
        &self.cron_dir
    }

    pub fn jobs_path(&self) -> PathBuf {
        self.cron_dir.join("jobs.json")
    }

    fn lock_path(&self) -> PathBuf {
        self.cron_dir.join(".jobs.lock")
    }

    /// Read without locking or writing anything. Missing file or missing dir = empty document.
    pub fn load(&self) -> Result<StoreDocument, DocumentError> {
        let path = self.jobs_path();
        match fs::read(&path) {
            Ok(bytes) => parse_document(&bytes, &path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(StoreDocument::default()),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    /// [`JsonFile::load`] keeping only `keep` of each job's keys (see
    /// [`parse_document_keeping`]).
    pub fn load_keeping(&self, keep: &[&str]) -> Result<StoreDocument, DocumentError> {
        let path = self.jobs_path();
        match fs::read(&path) {
            Ok(bytes) => parse_document_keeping(&bytes, &path, Some(keep)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(StoreDocument::default()),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    /// Take the exclusive `.jobs.lock` (blocking), load, call `f`; if `f` returns Ok, save
    /// the document atomically (with `updated_at` set to the given string) and return f's
    /// value; if `f` returns Err, write nothing. The lock is released on return (also on
    /// error/panic). If the file is unreadable, return the error without calling f and
    /// without touching the file.
    pub fn update<T, E: From<DocumentError>>(
        &self,
        updated_at: &str,
        f: impl FnOnce(&mut StoreDocument) -> Result<T, E>,
    ) -> Result<T, E> {
        self.update_stamped(|doc| f(doc).map(|value| (value, updated_at.to_string())))
    }

    /// [`JsonFile::update`] where `f` also says what `updated_at` to write (a batch of
    /// changes knows it only once it has applied them).
    pub fn update_stamped<T, E: From<DocumentError>>(
        &self,
        f: impl FnOnce(&mut StoreDocument) -> Result<(T, String), E>,
    ) -> Result<T, E> {
        ensure_private_dir(&self.cron_dir)?;
        // flock locks belong to the open file description, so a fresh open per call is what
        // makes two threads of one process exclude each other, not just two processes.
        // Dropping the handle (on any return or unwind) releases the lock.
        let lock = open_lock_file(&self.lock_path())?;
        fs4::FileExt::lock(&lock).map_err(|e| io_error(&self.lock_path(), e))?;

        let mut doc = self.load()?;
        let (value, updated_at) = f(&mut doc)?;
        doc.updated_at = Some(updated_at);
        write_atomic_locked(&self.jobs_path(), &render_document(&doc))?;
        drop(lock);
        Ok(value)
    }

    /// [`JsonFile::update`] of the records whose `id` is in `ids` only: `f` gets
    /// them in file order (duplicates included) and may change them in place. On a store
    /// in the canonical shape every other record is written back as the very text it
    /// was, so a change to a few jobs of 100,000 costs a copy of the file rather than a
    /// parse and render of every job. A store that needs repairs (BOM, bare list, id
    /// map, raw control characters) goes through [`JsonFile::update`] and is
    /// rewritten whole; the chosen records are the same either way.
    pub fn update_records<T, E: From<DocumentError>>(
        &self,
        updated_at: &str,
        ids: &std::collections::HashSet<&str>,
        f: impl FnOnce(&mut [Record]) -> Result<T, E>,
    ) -> Result<T, E> {
        let path = self.jobs_path();
        let mut f = Some(f);
        let done = self.update_jobs::<T, E>(|stored| {
            let mut records = Vec::new();
            for job in stored.iter().filter(|job| chosen(job.id, ids)) {
                let record: Record = serde_json::from_str(job.text).map_err(|e| {
                    E::from(io_error(
                        &path,
                        io::Error::new(io::ErrorKind::InvalidData, e),
                    ))
                })?;
                records.push(record);
            }
            let f = f
                .take()
                .ok_or_else(|| E::from(io_error(&path, io::Error::other("called twice"))))?;
            let value = f(&mut records)?;
            let mut changed = records.into_iter();
            let jobs = stored
                .iter()
                .enumerate()
                .map(|(i, job)| match chosen(job.id, ids) {
                    true => changed.next().map_or(Written::Kept(i), Written::Record),
                    false => Written::Kept(i),
                })
                .collect();
            Ok((value, Some((jobs, updated_at.to_string()))))
        })?;
        if let Some(value) = done {
            return Ok(value);
        }
        let f = f.ok_or_else(|| io_error(&path, io::Error::other("called twice")))?;
        self.update(updated_at, |doc| {
            let picked: Vec<usize> = (0..doc.jobs.len())
                .filter(|&i| chosen(record_id(&doc.jobs[i]), ids))
                .collect();
            let mut records: Vec<Record> = picked
                .iter()
                .map(|&i| std::mem::take(&mut doc.jobs[i]))
                .collect();
            let value = f(&mut records);
            for (i, record) in picked.into_iter().zip(records) {
                doc.jobs[i] = record;
            }
            value
        })
    }

    /// The read-modify-write of a store in the canonical shape that leaves every job
    /// it is not asked to change as the very text it was: under `.jobs.lock`, `f` gets
    /// the stored jobs (each its text and string `id`) and answers with its value and,
    /// unless nothing is to be written, the jobs to write in order (a stored job's text
    /// by its index, or a record) and the `updated_at` to stamp. A store that needs
    /// repairs, or no store yet, is left to the whole-document path: `Ok(None)`
    /// without calling `f` (and without holding the lock).
    pub fn update_jobs<T, E: From<DocumentError>>(
        &self,
        f: impl FnOnce(&[StoredJob<'_>]) -> Result<(T, Option<(Vec<Written>, String)>), E>,
    ) -> Result<Option<T>, E> {
        ensure_private_dir(&self.cron_dir)?;
        let lock = open_lock_file(&self.lock_path())?;
        fs4::FileExt::lock(&lock).map_err(|e| io_error(&self.lock_path(), e))?;

        let path = self.jobs_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, e).into()),
        };
        let Some(raw) = JobsText::new(&bytes, &path).stored() else {
            return Ok(None);
        };
        let stored: Vec<StoredJob<'_>> = raw
            .jobs
            .iter()
            .map(|job| StoredJob {
                text: job.text,
                id: job.id.as_deref(),
            })
            .collect();
        let (value, write) = f(&stored)?;
        let Some((jobs, updated_at)) = write else {
            return Ok(Some(value));
        };
        let no_such_job = || {
            io_error(
                &path,
                io::Error::new(io::ErrorKind::InvalidInput, "no such stored job"),
            )
        };
        let slots = jobs
            .iter()
            .map(|job| match job {
                Written::Kept(i) => raw
                    .jobs
                    .get(*i)
                    .and_then(|job| raw_text(job.text))
                    .map(Slot::Raw),
                Written::Record(record) => Some(Slot::Record(record)),
            })
            .collect::<Option<Vec<Slot>>>()
            .ok_or_else(no_such_job)?;
        let extra = raw
            .extra
            .iter()
            .map(|(key, value)| raw_text(value).map(|value| (*key, value)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(no_such_job)?;
        let out = render(&slots, Some(&updated_at), &extra, bytes.len() + 4096)
            .map_err(|e| io_error(&path, io::Error::other(e)))?;
        write_atomic_locked(&path, &out)?;
        drop(lock);
        Ok(Some(value))
    }
}

/// A job of a store in the canonical shape, as [`JsonFile::update_jobs`] hands it over.
pub struct StoredJob<'a> {
    /// Its JSON text, exactly as in the file.
    pub text: &'a str,
    /// Its `id`, when that is a string.
    pub id: Option<&'a str>,
}

/// One job [`JsonFile::update_jobs`] writes: a stored job's text as it was (by its
/// index), or a record.
pub enum Written {
    Kept(usize),
    Record(Record),
}

/// Whether a job with this `id` is among `ids` (a job without a string id never is).
fn chosen(id: Option<&str>, ids: &std::collections::HashSet<&str>) -> bool {
    id.is_some_and(|id| ids.contains(id))
}

fn record_id(record: &Record) -> Option<&str> {
    record.get("id").and_then(Value::as_str)
}

/// One job of a store being written: its untouched text, or the changed record.
enum Slot<'a> {
    Raw(&'a RawValue),
    Record(&'a Record),
}

impl serde::Serialize for Slot<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Slot::Raw(text) => text.serialize(serializer),
            Slot::Record(record) => record.serialize(serializer),
        }
    }
}

fn open_lock_file(path: &Path) -> Result<File, DocumentError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| io_error(path, e))
}

/// The cron dir holds prompts and chat ids, so it is kept private even when it already
/// existed with looser bits. Tightening an existing dir is best effort: a dir we may write
/// in but do not own (chmod fails) should not make the store unusable.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), DocumentError> {
    if dir.is_dir() {
        let _ = set_mode(dir, 0o700);
        Ok(())
    } else {
        create_private_dir_if_missing(dir)
    }
}
