// The jobs.json document: tolerant reading, canonical rendering, atomic writes and the
// `.jobs.lock` read-modify-write protocol. Records stay raw JSON maps so keys written by
// other Hermes builds survive every rewrite; nothing here knows what a schedule is.
// It must never overwrite a file it could not read, and nothing outside this module
// opens jobs.json for writing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One job as stored: a JSON object with every key kept, known or not.
pub type Record = serde_json::Map<String, Value>;

/// What was read from jobs.json.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreDocument {
    pub jobs: Vec<Record>,
    /// Top-level keys other than "jobs" and "updated_at", kept in order.
    pub extra: Record,
    /// `None` when the file has no `updated_at` or it is not a string (it is rewritten on
    /// every save anyway).
    pub updated_at: Option<String>,
    /// True when the bytes needed repair (BOM, bare list, id-keyed map, raw control chars) — the next save rewrites it properly.
    pub repaired: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The file exists but cannot be read as a job store. Display is one line naming the
    /// file, the position when known, what is wrong, and that the file was left alone.
    #[error(
        "cannot read job store {}{}: {}; the file was left unchanged — fix it or move it aside",
        .path.display(),
        position_suffix(*.line, *.column),
        one_line(.reason)
    )]
    Unreadable {
        path: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        reason: String,
    },
    /// An I/O failure (permissions, disk full...).
    #[error("cannot access {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn position_suffix(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l} column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

// The message promises one line; a reason built from user data must not break that.
fn one_line(reason: &str) -> String {
    reason.replace(['\r', '\n'], " ")
}

fn io_error(path: &Path, source: io::Error) -> DocumentError {
    DocumentError::Io {
        path: path.to_path_buf(),
        source,
    }
}

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
        let Some(raw) = RawDocument::parse(&bytes) else {
            return Ok(None);
        };
        let stored: Vec<StoredJob<'_>> = raw
            .jobs
            .iter()
            .map(|job| StoredJob {
                text: job.text.get(),
                id: job.id.as_deref(),
            })
            .collect();
        let (value, write) = f(&stored)?;
        let Some((jobs, updated_at)) = write else {
            return Ok(Some(value));
        };
        let slots = jobs
            .iter()
            .map(|job| match job {
                Written::Kept(i) => raw.jobs.get(*i).map(|job| Slot::Raw(job.text)),
                Written::Record(record) => Some(Slot::Record(record)),
            })
            .collect::<Option<Vec<Slot>>>()
            .ok_or_else(|| {
                io_error(
                    &path,
                    io::Error::new(io::ErrorKind::InvalidInput, "no such stored job"),
                )
            })?;
        let mut out = Vec::with_capacity(bytes.len() + 4096);
        let view = RawDocumentView {
            jobs: slots,
            updated_at: &updated_at,
            extra: &raw.extra,
        };
        serde_json::to_writer_pretty(&mut out, &view)
            .map_err(|e| io_error(&path, io::Error::other(e)))?;
        out.push(b'\n');
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
    Raw(&'a serde_json::value::RawValue),
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

/// The canonical top level written by [`JsonFile::update_records`].
struct RawDocumentView<'a> {
    jobs: Vec<Slot<'a>>,
    updated_at: &'a str,
    extra: &'a [(String, &'a serde_json::value::RawValue)],
}

impl serde::Serialize for RawDocumentView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jobs", &self.jobs)?;
        map.serialize_entry("updated_at", self.updated_at)?;
        for (key, value) in self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A job store read for an update of a few records: every job stays its own JSON text
/// unless it was chosen.
struct RawDocument<'a> {
    jobs: Vec<RawJob<'a>>,
    /// Top-level keys other than "jobs" and "updated_at", as text, in order.
    extra: Vec<(String, &'a serde_json::value::RawValue)>,
}

struct RawJob<'a> {
    text: &'a serde_json::value::RawValue,
    id: Option<String>,
}

impl<'a> RawDocument<'a> {
    /// The canonical shape only (an object with a `jobs` list of objects, no BOM, valid
    /// JSON); `None` sends the caller to the whole-document path, which repairs the rest.
    fn parse(bytes: &'a [u8]) -> Option<RawDocument<'a>> {
        #[derive(serde::Deserialize)]
        struct IdOnly {
            id: Option<Value>,
        }
        let top = canonical_parts(bytes)?;
        let mut jobs = Vec::with_capacity(top.jobs.len());
        for job in top.jobs {
            let id = serde_json::from_str::<IdOnly>(job.get()).ok()?.id;
            jobs.push(RawJob {
                text: job,
                id: id.and_then(|v| v.as_str().map(str::to_string)),
            });
        }
        Some(RawDocument {
            jobs,
            extra: top.extra,
        })
    }
}

/// A store in the canonical shape (valid UTF-8 JSON without BOM, an object whose `jobs`
/// is a list of objects) as text slices; `None` for anything else.
fn canonical_parts(bytes: &[u8]) -> Option<raw_view::Parts<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let top = serde::Deserializer::deserialize_map(&mut deserializer, raw_view::Top).ok()?;
    deserializer.end().ok()?;
    top.jobs
        .iter()
        .all(|job| job.get().starts_with('{'))
        .then_some(top)
}

/// The jobs of a store in the canonical shape, each as its own JSON text borrowed from
/// `bytes`: the whole file is checked as JSON, and each job can then be read alone
/// ([`record_keeping`]) without building the others. `None` when the
/// store is not in the canonical shape (BOM, bare list, id map, raw control characters,
/// nesting deeper than [`parse_document`] reads, unreadable): [`parse_document`] reads,
/// repairs or refuses those.
pub fn canonical_job_texts(bytes: &[u8]) -> Option<Vec<&serde_json::value::RawValue>> {
    if crate::jsonscan::nests_too_deep(bytes) {
        return None;
    }
    canonical_parts(bytes).map(|top| top.jobs)
}

/// One job's text (an object, as [`canonical_job_texts`] gives) reduced to `keep` of its
/// keys, or whole for `None`; what [`parse_document_keeping`] makes of it in a document.
pub fn record_keeping(text: &str, keep: Option<&[&str]>) -> serde_json::Result<Record> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = match keep {
        None => serde::de::DeserializeSeed::deserialize(view::Whole, &mut deserializer)?,
        Some(keys) => serde::de::DeserializeSeed::deserialize(view::job(keys), &mut deserializer)?,
    };
    deserializer.end()?;
    match value {
        Value::Object(record) => Ok(record),
        other => Err(serde::de::Error::custom(format!(
            "a job is {}, expected a job object",
            kind_of(&other)
        ))),
    }
}

/// The values of a few keys of every job of a store in the canonical shape, as JSON
/// text borrowed from the file's bytes, read in one pass that checks the whole file
/// ([`crate::jsonscan`]): nothing is built for the other keys nor for values no one asks about.
#[derive(Debug)]
pub struct PickedJobs<'a, 'k> {
    keys: &'k [&'k str],
    /// `keys.len()` values per job, jobs in file order.
    values: Vec<Option<&'a str>>,
}

impl<'a> PickedJobs<'a, '_> {
    /// The jobs' values, each in the order of the keys asked for (a key a job lacks: `None`).
    pub fn jobs(&self) -> impl Iterator<Item = &[Option<&'a str>]> {
        self.values.chunks(self.keys.len())
    }

    /// One job's picked values as a [`Record`] (the keys in the order asked for): what
    /// [`parse_document_keeping`] keeps of that job.
    pub fn record(&self, values: &[Option<&str>]) -> serde_json::Result<Record> {
        picked_record(self.keys, values)
    }
}

/// A job's values of `keys` (JSON text, by position; `None`: the job lacks the key) as a
/// [`Record`] with the keys in that order.
pub fn picked_record(keys: &[&str], values: &[Option<&str>]) -> serde_json::Result<Record> {
    let mut record = Record::with_capacity(keys.len());
    for (key, value) in keys.iter().zip(values) {
        if let Some(value) = value {
            record.insert((*key).to_string(), serde_json::from_str(value)?);
        }
    }
    Ok(record)
}

/// [`PickedJobs`] of a store; `None` when it is not in the canonical shape (see
/// [`canonical_job_texts`]) or no key is asked for.
pub fn pick_job_fields<'a, 'k>(bytes: &'a [u8], keys: &'k [&'k str]) -> Option<PickedJobs<'a, 'k>> {
    if keys.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let index = crate::jsonscan::KeyIndex::new(keys);
    crate::jsonscan::walk_jobs(bytes, &mut |_, entries| {
        let base = values.len();
        values.resize(base + keys.len(), None);
        match index.pick(entries, &mut values[base..]) {
            Some(()) => crate::jsonscan::Walk::Continue,
            None => crate::jsonscan::Walk::Stop,
        }
    })?;
    Some(PickedJobs { keys, values })
}

/// The top level of a canonical store as text slices: the `jobs` entries and the other keys.
mod raw_view {
    use std::fmt;

    use serde::de::{IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    pub struct Top;

    pub struct Parts<'a> {
        pub jobs: Vec<&'a RawValue>,
        pub extra: Vec<(String, &'a RawValue)>,
    }

    impl<'de> Visitor<'de> for Top {
        type Value = Parts<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object with a \"jobs\" list")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts<'de>, A::Error> {
            let mut jobs = None;
            let mut extra = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "jobs" => jobs = Some(map.next_value::<Vec<&'de RawValue>>()?),
                    "updated_at" => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    _ => extra.push((key, map.next_value::<&'de RawValue>()?)),
                }
            }
            let jobs = jobs.ok_or_else(|| serde::de::Error::missing_field("jobs"))?;
            Ok(Parts { jobs, extra })
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

/// Create `dir` (and missing parents) with mode 0700 when it does not exist.
fn create_private_dir_if_missing(dir: &Path) -> Result<(), DocumentError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| io_error(dir, e))?;
    set_mode(dir, 0o700).map_err(|e| io_error(dir, e))
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

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Parse jobs.json bytes tolerantly (exposed for tests and fuzzing). `path` is only used in errors.
///
/// An empty file (0 bytes, or only whitespace) is read as an empty store, like a missing
/// one: editors and interrupted non-atomic writers of older builds leave such files, and
/// there is nothing in them to lose. A non-string `updated_at` is dropped (it is rewritten
/// on save). In an id-keyed `"jobs"` map an inline `id` that is missing, null or `""`
/// is replaced by the key.
pub fn parse_document(bytes: &[u8], path: &Path) -> Result<StoreDocument, DocumentError> {
    parse_document_keeping(bytes, path, None)
}

/// [`parse_document`] that keeps only `keep` of each job's keys (all of them for `None`)
/// and drops the other top-level keys: a cheap read-only view. Every other key is still
/// checked as JSON, so a file this reads is one [`parse_document`] reads, with the same
/// shape repairs and errors; on 100,000 jobs the view of the keys a due scan reads takes
/// about a tenth of the memory of the whole records.
pub fn parse_document_keeping(
    bytes: &[u8],
    path: &Path,
    keep: Option<&[&str]>,
) -> Result<StoreDocument, DocumentError> {
    let mut repaired = false;
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => {
            repaired = true;
            rest
        }
        None => bytes,
    };
    if bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(StoreDocument {
            repaired,
            ..StoreDocument::default()
        });
    }

    let top: Value = match parse_top(bytes, keep) {
        Ok(value) => value,
        Err(first_err) => {
            let (fixed, origin) = escape_control_chars_in_strings(bytes);
            if fixed.len() == bytes.len() {
                // Nothing to repair: the original error is the real one.
                return Err(unreadable_from_json(&first_err, bytes, bytes, None, path));
            }
            match parse_top(&fixed, keep) {
                Ok(value) => {
                    repaired = true;
                    value
                }
                Err(err) => {
                    return Err(unreadable_from_json(
                        &err,
                        &fixed,
                        bytes,
                        Some(&origin),
                        path,
                    ))
                }
            }
        }
    };

    let unreadable = |reason: String| DocumentError::Unreadable {
        path: path.to_path_buf(),
        line: None,
        column: None,
        reason,
    };

    let mut doc = StoreDocument {
        repaired,
        ..StoreDocument::default()
    };
    match top {
        Value::Array(entries) => {
            doc.repaired = true;
            doc.jobs = records_from_list(entries).map_err(unreadable)?;
        }
        Value::Object(map) => {
            for (key, value) in map {
                match key.as_str() {
                    "jobs" => match value {
                        Value::Null => {}
                        Value::Array(entries) => {
                            doc.jobs = records_from_list(entries).map_err(unreadable)?;
                        }
                        Value::Object(by_id) => {
                            doc.repaired = true;
                            doc.jobs = records_from_id_map(by_id).map_err(unreadable)?;
                        }
                        other => {
                            return Err(unreadable(format!(
                                "\"jobs\" is {}, expected a list of job objects",
                                kind_of(&other)
                            )))
                        }
                    },
                    "updated_at" => doc.updated_at = value.as_str().map(str::to_string),
                    _ => {
                        doc.extra.insert(key, value);
                    }
                }
            }
        }
        other => {
            return Err(unreadable(format!(
                "the top level is {}, expected an object with a \"jobs\" list",
                kind_of(&other)
            )))
        }
    }
    Ok(doc)
}

fn parse_top(bytes: &[u8], keep: Option<&[&str]>) -> serde_json::Result<Value> {
    let Some(keys) = keep else {
        return serde_json::from_slice(bytes);
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let top = serde::de::DeserializeSeed::deserialize(view::Top(keys), &mut deserializer)?;
    deserializer.end()?;
    Ok(top)
}

/// Deserializers for [`parse_document_keeping`]: the top level, the `jobs` list or id map,
/// and each job with only the kept keys. A value that is not the expected container is
/// kept as a value of the same kind, so the shape errors read as in the full parse.
mod view {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::{Map, Value};

    /// The whole document: only `jobs` is kept (a bare list is the jobs list).
    pub struct Top<'k>(pub &'k [&'k str]);
    /// The `jobs` value: a list or an id-keyed map of jobs.
    struct Jobs<'k>(&'k [&'k str]);
    /// One job: an object reduced to the kept keys.
    pub struct Job<'k>(&'k [&'k str]);

    pub fn job<'k>(keys: &'k [&'k str]) -> Job<'k> {
        Job(keys)
    }

    /// One whole job, its map sized once for the keys a job usually has rather than
    /// grown (and rehashed) five times on the way to thirty keys.
    pub struct Whole;

    impl<'de> DeserializeSeed<'de> for Whole {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Whole {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a job object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut job = Map::with_capacity(map.size_hint().unwrap_or(32));
            while let Some((key, value)) = map.next_entry::<String, Value>()? {
                job.insert(key, value);
            }
            Ok(Value::Object(job))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
            Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }
        forward_scalars!();
    }

    /// A key borrowed from the text when it has no escapes: most keys of a job are
    /// skipped, and allocating each one's name was a third of the cost of a view.
    struct Key;

    impl<'de> DeserializeSeed<'de> for Key {
        type Value = Cow<'de, str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for Key {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a key")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_string()))
        }
    }

    impl<'de> DeserializeSeed<'de> for Top<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Top<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a job store")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
            Jobs(self.0).visit_seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut top = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if key == "jobs" {
                    top.insert(key, map.next_value_seed(Jobs(self.0))?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Value::Object(top))
        }
        forward_scalars!();
    }

    impl<'de> DeserializeSeed<'de> for Jobs<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Jobs<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of jobs")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut jobs = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(job) = seq.next_element_seed(Job(self.0))? {
                jobs.push(job);
            }
            Ok(Value::Array(jobs))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut by_id = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                by_id.insert(key, map.next_value_seed(Job(self.0))?);
            }
            Ok(Value::Object(by_id))
        }
        forward_scalars!();
    }

    impl<'de> DeserializeSeed<'de> for Job<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Job<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a job object")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Value::Array(Vec::new()))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut job = Map::new();
            while let Some(key) = map.next_key_seed(Key)? {
                if self.0.contains(&&*key) {
                    job.insert(key.into_owned(), map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Value::Object(job))
        }
        forward_scalars!();
    }

    /// Scalars where a container was expected keep their kind (for the shape errors).
    macro_rules! forward_scalars {
        () => {
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
        };
    }
    use forward_scalars;
}

fn records_from_list(entries: Vec<Value>) -> Result<Vec<Record>, String> {
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| match entry {
            Value::Object(record) => Ok(record),
            other => Err(format!(
                "jobs[{index}] is {}, expected a job object",
                kind_of(&other)
            )),
        })
        .collect()
}

fn records_from_id_map(by_id: Record) -> Result<Vec<Record>, String> {
    by_id
        .into_iter()
        .map(|(key, entry)| {
            let Value::Object(record) = entry else {
                return Err(format!(
                    "jobs[{}] is {}, expected a job object",
                    Value::String(key),
                    kind_of(&entry)
                ));
            };
            let has_inline_id = match record.get("id") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(_) => true,
            };
            if has_inline_id {
                return Ok(record);
            }
            let mut with_id = Record::new();
            with_id.insert("id".to_string(), Value::String(key));
            with_id.extend(record.into_iter().filter(|(k, _)| k != "id"));
            Ok(with_id)
        })
        .collect()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Escape raw U+0000–U+001F bytes that sit inside JSON strings (hand edits and old Python
/// builds with `strict=False` leave them). Outside strings they are left alone: there a
/// newline is just whitespace, and anything else is a real syntax error to report.
/// Returns the new bytes and, for each of their positions (plus one past the end), the
/// position in `input` it came from, so errors can point into the user's file.
fn escape_control_chars_in_strings(input: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(input.len());
    let mut origin = Vec::with_capacity(input.len() + 1);
    let mut in_string = false;
    let mut after_backslash = false;
    for (i, &b) in input.iter().enumerate() {
        if in_string && !after_backslash && b < 0x20 {
            let escaped = match b {
                b'\n' => "\\n".to_string(),
                b'\r' => "\\r".to_string(),
                b'\t' => "\\t".to_string(),
                _ => format!("\\u{b:04x}"),
            };
            for e in escaped.bytes() {
                out.push(e);
                origin.push(i);
            }
            continue;
        }
        if in_string {
            if after_backslash {
                after_backslash = false;
            } else if b == b'\\' {
                after_backslash = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
        origin.push(i);
    }
    origin.push(input.len());
    (out, origin)
}

/// Turn a serde_json syntax error into `Unreadable`, with the position in the user's own
/// bytes (`original`), counted in characters so it matches what an editor shows.
fn unreadable_from_json(
    err: &serde_json::Error,
    parsed: &[u8],
    original: &[u8],
    origin: Option<&[usize]>,
    path: &Path,
) -> DocumentError {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let reason = message
        .strip_suffix(&suffix)
        .unwrap_or(&message)
        .to_string();
    let (line, column) = if err.line() == 0 {
        (None, None)
    } else {
        let index = byte_index_of(parsed, err.line(), err.column());
        let index = match origin {
            Some(map) => map.get(index).copied().unwrap_or(original.len()),
            None => index,
        };
        let (line, column) = line_and_column(original, index);
        (Some(line), Some(column))
    };
    DocumentError::Unreadable {
        path: path.to_path_buf(),
        line,
        column,
        reason,
    }
}

/// Inverse of serde_json's position: `column` bytes after the start of `line` (1-based).
fn byte_index_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(line - 2)
            .map_or(bytes.len(), |(i, _)| i + 1)
    };
    line_start.saturating_add(column).min(bytes.len())
}

fn line_and_column(bytes: &[u8], index: usize) -> (usize, usize) {
    let before = &bytes[..index.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before[..line_start].iter().filter(|&&b| b == b'\n').count();
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column.max(1))
}

/// Serialize: pretty-printed, 2-space indent, UTF-8 written literally (no \uXXXX escapes for CJK/emoji), keys "jobs" then "updated_at" then the extra keys, trailing newline.
///
/// `updated_at` is omitted when it is `None`; [`JsonFile::update`] always sets it.
pub fn render_document(doc: &StoreDocument) -> Vec<u8> {
    // Serialized straight from the borrowed records: a store of 100,000 jobs is ~100 MB
    // of JSON and about ten times that as maps, so a cloned copy would double the peak.
    let mut out = Vec::with_capacity(doc.jobs.len() * 1024 + 64);
    // Maps with string keys, finite numbers and a Vec writer: serializing cannot fail; an
    // empty fallback would risk writing an empty store, so fail loudly.
    serde_json::to_writer_pretty(&mut out, &DocumentView(doc))
        .expect("serializing JSON maps into memory cannot fail");
    out.push(b'\n');
    out
}

/// The canonical top-level shape of a [`StoreDocument`], borrowed for serializing.
struct DocumentView<'a>(&'a StoreDocument);

impl serde::Serialize for DocumentView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let doc = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jobs", &doc.jobs)?;
        if let Some(updated_at) = &doc.updated_at {
            map.serialize_entry("updated_at", updated_at)?;
        }
        for (key, value) in &doc.extra {
            if key != "jobs" && key != "updated_at" {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Write bytes atomically: temp file in the same directory, write, flush, fsync, chmod 0600, rename over target, fsync the directory. Creates the parent dir with mode 0700 if missing. Used also for output documents later.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    write_atomic_sweeping(path, bytes, Leftovers::Stale)
}

/// [`write_atomic`] by a caller holding the lock that every writer of `path` takes
/// (jobs.json under `.jobs.lock`): no other write of it can be under way, so every temp
/// file of it still there is a killed writer's, whatever its age, and goes.
fn write_atomic_locked(path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    write_atomic_sweeping(path, bytes, Leftovers::All)
}

/// Which temp files of earlier writes a write removes after its own rename.
#[derive(Clone, Copy)]
enum Leftovers {
    /// Only those older than [`STALE_TEMP`]: a younger one may be a write under way.
    Stale,
    /// All of them: the caller holds the writers' lock.
    All,
}

fn write_atomic_sweeping(
    path: &Path,
    bytes: &[u8],
    leftovers: Leftovers,
) -> Result<(), DocumentError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io_error(
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"),
        )
    })?;
    create_private_dir_if_missing(parent)?;

    let tmp_path = parent.join(format!(
        ".{}.tmp-{}-{:016x}",
        name.to_string_lossy(),
        std::process::id(),
        rand::random::<u64>()
    ));
    let written = write_and_sync_new_file(&tmp_path, bytes)
        .and_then(|()| fs::rename(&tmp_path, path).map_err(|e| io_error(path, e)));
    if let Err(e) = written {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    remove_leftover_temps(parent, &name.to_string_lossy(), path, leftovers);
    sync_dir(parent)
}

/// How old a temp file of a write must be, next to the file just written, before it is
/// taken for the leftover of a crashed writer: no healthy write takes this long.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the temp files of earlier writes of `name` that a crash left behind (a kill
/// between create and rename). Unless the caller holds the writers' lock, their age is
/// read against the file just written, by the file system's own clock; a temp of a write
/// still under way is young and stays.
fn remove_leftover_temps(parent: &Path, name: &str, written: &Path, leftovers: Leftovers) {
    let Ok(written_at) = fs::metadata(written).and_then(|m| m.modified()) else {
        return;
    };
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.tmp-");
    for entry in entries.flatten() {
        let is_temp = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix));
        let stale = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| written_at.duration_since(at).ok())
                .is_some_and(|age| age >= STALE_TEMP)
        };
        if is_temp && (matches!(leftovers, Leftovers::All) || stale()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn write_and_sync_new_file(tmp_path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let err = |e| io_error(tmp_path, e);
    let mut file = options.open(tmp_path).map_err(err)?;
    file.write_all(bytes).map_err(err)?;
    file.flush().map_err(err)?;
    file.sync_all().map_err(err)?;
    // The mode given at open is filtered through the umask; set it exactly.
    set_mode(tmp_path, 0o600).map_err(err)
}

/// Make the rename durable. Some filesystems cannot fsync a directory at all; the rename
/// has already happened there, so that is not worth failing the write for.
fn sync_dir(dir: &Path) -> Result<(), DocumentError> {
    #[cfg(unix)]
    {
        let result = File::open(dir).and_then(|d| d.sync_all());
        match result {
            Err(e)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                return Err(io_error(dir, e));
            }
            _ => {}
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn rec(value: Value) -> Record {
        match value {
            Value::Object(map) => map,
            _ => panic!("test record must be an object"),
        }
    }

    fn parse(text: &str) -> Result<StoreDocument, DocumentError> {
        parse_document(text.as_bytes(), Path::new("/h/cron/jobs.json"))
    }

    fn store_in(dir: &tempfile::TempDir) -> JsonFile {
        JsonFile::new(dir.path().join("cron"))
    }

    fn write_raw(store: &JsonFile, bytes: &[u8]) {
        fs::create_dir_all(store.cron_dir()).unwrap();
        fs::write(store.jobs_path(), bytes).unwrap();
    }

    fn dir_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn missing_file_and_missing_dir_are_an_empty_store() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        assert_eq!(store.load().unwrap(), StoreDocument::default());
        fs::create_dir_all(store.cron_dir()).unwrap();
        assert_eq!(store.load().unwrap(), StoreDocument::default());
        // Loading never creates anything.
        assert!(dir_names(store.cron_dir()).is_empty());
    }

    #[test]
    fn empty_or_whitespace_file_is_an_empty_store() {
        for text in ["", "  \n\t\r\n"] {
            let doc = parse(text).unwrap();
            assert!(doc.jobs.is_empty());
            assert!(!doc.repaired);
        }
    }

    #[test]
    fn leading_bom_is_skipped_and_marks_repair() {
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend_from_slice(
            br#"{"jobs":[{"id":"a1"}],"updated_at":"2026-01-01T00:00:00+00:00"}"#,
        );
        let doc = parse_document(&bytes, Path::new("jobs.json")).unwrap();
        assert_eq!(doc.jobs, vec![rec(json!({"id": "a1"}))]);
        assert_eq!(doc.updated_at.as_deref(), Some("2026-01-01T00:00:00+00:00"));
        assert!(doc.repaired);
    }

    #[test]
    fn canonical_document_is_not_marked_repaired() {
        let doc = parse(r#"{"jobs":[{"id":"a1"}],"updated_at":"x"}"#).unwrap();
        assert!(!doc.repaired);
    }

    #[test]
    fn bare_list_is_the_jobs_list() {
        let doc = parse(r#"[{"id":"a1"},{"id":"b2","name":"x"}]"#).unwrap();
        assert_eq!(
            doc.jobs,
            vec![
                rec(json!({"id": "a1"})),
                rec(json!({"id": "b2", "name": "x"}))
            ]
        );
        assert!(doc.extra.is_empty());
        assert!(doc.repaired);
    }

    #[test]
    fn id_keyed_map_is_flattened_in_order() {
        let doc = parse(
            r#"{"jobs": {
                "zz": {"name": "first", "id": "inline1"},
                "aa": {"name": "second"},
                "mm": {"id": null, "name": "third"}
            }}"#,
        )
        .unwrap();
        assert!(doc.repaired);
        assert_eq!(doc.jobs.len(), 3);
        assert_eq!(doc.jobs[0]["id"], "inline1");
        assert_eq!(doc.jobs[1]["id"], "aa");
        assert_eq!(doc.jobs[1].keys().next().map(String::as_str), Some("id"));
        assert_eq!(doc.jobs[1]["name"], "second");
        assert_eq!(doc.jobs[2]["id"], "mm");
        assert_eq!(doc.jobs[2].keys().next().map(String::as_str), Some("id"));
        assert_eq!(doc.jobs[2].len(), 2);
    }

    #[test]
    fn raw_control_characters_inside_strings_are_repaired() {
        let text = "{\n  \"jobs\": [\n    {\"id\": \"a1\", \"prompt\": \"line1\nline2\ttab\u{1}x\r\"}\n  ]\n}\n";
        let doc = parse(text).unwrap();
        assert!(doc.repaired);
        assert_eq!(doc.jobs[0]["prompt"], "line1\nline2\ttab\u{1}x\r");
        // And the rewrite is valid strict JSON with proper escapes.
        let out = String::from_utf8(render_document(&doc)).unwrap();
        assert!(out.contains(r#""line1\nline2\ttab\u0001x\r""#), "{out}");
        let strict: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(strict["jobs"][0]["prompt"], "line1\nline2\ttab\u{1}x\r");
    }

    #[test]
    fn escaped_quotes_do_not_confuse_the_repair() {
        let text = "{\"jobs\":[{\"prompt\":\"say \\\"hi\\\"\nnow \\\\\",\"x\":\"a\nb\"}]}";
        let doc = parse(text).unwrap();
        assert_eq!(doc.jobs[0]["prompt"], "say \"hi\"\nnow \\");
        assert_eq!(doc.jobs[0]["x"], "a\nb");
    }

    #[test]
    fn object_without_jobs_or_with_null_jobs_is_empty_and_keeps_extra_keys() {
        let doc = parse(r#"{"version": 2, "owner": {"a": 1}}"#).unwrap();
        assert!(doc.jobs.is_empty());
        assert_eq!(doc.extra, rec(json!({"version": 2, "owner": {"a": 1}})));

        let doc = parse(r#"{"jobs": null, "note": "hi"}"#).unwrap();
        assert!(doc.jobs.is_empty());
        assert_eq!(doc.extra, rec(json!({"note": "hi"})));
    }

    #[test]
    fn unknown_keys_survive_load_save_load() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        write_raw(
            &store,
            br#"{"zeta": 1, "jobs": [{"id": "a1", "future_field": {"nested": [1, {"deep": true}]},
                "schedule": {"kind": "cron", "expr": "0 9 * * *", "extra_sched": "keep"}}],
                "updated_at": "old", "alpha": {"b": 2}}"#,
        );
        store
            .update("2026-05-01T09:00:00+02:00", |_| Ok::<_, DocumentError>(()))
            .unwrap();
        let doc = store.load().unwrap();
        assert_eq!(doc.updated_at.as_deref(), Some("2026-05-01T09:00:00+02:00"));
        assert_eq!(doc.extra, rec(json!({"zeta": 1, "alpha": {"b": 2}})));
        assert_eq!(doc.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
        assert_eq!(
            doc.jobs[0],
            rec(
                json!({"id": "a1", "future_field": {"nested": [1, {"deep": true}]},
                "schedule": {"kind": "cron", "expr": "0 9 * * *", "extra_sched": "keep"}})
            )
        );
        let text = fs::read_to_string(store.jobs_path()).unwrap();
        let jobs_at = text.find("\"jobs\"").unwrap();
        let updated_at = text.find("\"updated_at\"").unwrap();
        let zeta_at = text.find("\"zeta\"").unwrap();
        assert!(jobs_at < updated_at && updated_at < zeta_at, "{text}");
    }

    #[test]
    fn render_is_pretty_two_space_literal_utf8_with_trailing_newline() {
        let doc = StoreDocument {
            jobs: vec![rec(json!({"id": "a1", "prompt": "日報を送って 🚀"}))],
            updated_at: Some("2026-01-01T00:00:00+09:00".into()),
            ..StoreDocument::default()
        };
        let out = String::from_utf8(render_document(&doc)).unwrap();
        assert!(out.contains("日報を送って 🚀"), "{out}");
        assert!(!out.contains("\\u"), "{out}");
        assert!(
            out.starts_with("{\n  \"jobs\": [\n    {\n      \"id\""),
            "{out}"
        );
        assert!(out.ends_with("}\n"));
        assert_eq!(parse(&out).unwrap().jobs, doc.jobs);
    }

    #[test]
    fn syntax_error_is_unreadable_with_position_and_update_leaves_file_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        let bytes = b"{\n  \"jobs\": [\n    {\"id\": \"a1\" \"name\": \"x\"}\n  ]\n}\n";
        write_raw(&store, bytes);

        let called = AtomicBool::new(false);
        let err = store
            .update("now", |_| {
                called.store(true, Ordering::SeqCst);
                Ok::<_, DocumentError>(())
            })
            .unwrap_err();
        assert!(!called.load(Ordering::SeqCst));
        assert_eq!(fs::read(store.jobs_path()).unwrap(), bytes);
        match &err {
            DocumentError::Unreadable {
                line,
                column,
                reason,
                ..
            } => {
                assert_eq!(*line, Some(3));
                assert_eq!(*column, Some(17));
                assert_eq!(reason, "expected `,` or `}`");
            }
            other => panic!("expected Unreadable, got {other:?}"),
        }
        let shown = err.to_string();
        assert!(!shown.contains('\n'));
        assert!(shown.contains("jobs.json at line 3 column 17: expected `,` or `}`"));
        assert!(shown.ends_with("the file was left unchanged — fix it or move it aside"));
        assert!(store.load().is_err());
    }

    #[test]
    fn error_position_points_into_the_original_bytes_after_a_repair() {
        // Raw newlines inside the string shift lines in the repaired copy; the
        // reported position must still match the user's file.
        let text = "{\"jobs\": [{\"prompt\": \"a\nb\nc\"}\n  oops]}";
        match parse(text).unwrap_err() {
            DocumentError::Unreadable { line, column, .. } => {
                assert_eq!((line, column), (Some(4), Some(3)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn column_counts_characters_not_bytes() {
        let text = "{\"jobs\": [{\"name\": \"日本\" x}]}";
        match parse(text).unwrap_err() {
            DocumentError::Unreadable { line, column, .. } => {
                assert_eq!((line, column), (Some(1), Some(25)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn non_object_job_entries_are_unreadable_naming_the_index() {
        let err = parse(r#"{"jobs": [{"id": "a"}, {"id": "b"}, "oops"]}"#).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("jobs[2] is a string"), "{shown}");
        assert!(shown.contains("left unchanged"));

        let err = parse(r#"[{"id": "a"}, 7]"#).unwrap_err();
        assert!(err.to_string().contains("jobs[1] is a number"));

        let err = parse(r#"{"jobs": {"abc": [1]}}"#).unwrap_err();
        assert!(
            err.to_string().contains(r#"jobs["abc"] is a list"#),
            "{err}"
        );
    }

    #[test]
    fn other_shapes_are_unreadable() {
        for (text, needle) in [
            ("42", "the top level is a number"),
            (r#""jobs""#, "the top level is a string"),
            (r#"{"jobs": "none"}"#, "\"jobs\" is a string"),
            (r#"{"jobs": true}"#, "\"jobs\" is a boolean"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
        match parse("{\"jobs\": [}").unwrap_err() {
            DocumentError::Unreadable { line: Some(1), .. } => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let valid = "\u{feff}{\"jobs\": {\"k\": {\"prompt\": \"多\ny\\\"\"}}, \"updated_at\": 1}";
        let bytes = valid.as_bytes();
        for end in 0..=bytes.len() {
            let _ = parse_document(&bytes[..end], Path::new("j"));
            let _ = parse_document(&bytes[end..], Path::new("j"));
        }
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).is_err());
        assert!(parse_document(b"\xff\xfe{\"jobs\":[]}", Path::new("j")).is_err());
        assert!(parse_document(b"{\"jobs\":[{\"p\":\"\xff\n\"}]}", Path::new("j")).is_err());
    }

    #[test]
    fn update_with_err_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);

        let result: Result<(), DocumentError> = store.update("now", |doc| {
            doc.jobs.push(Record::new());
            Err(io_error(Path::new("x"), io::Error::other("no")))
        });
        assert!(result.is_err());
        assert!(!store.jobs_path().exists());

        let bytes = b"[{\"id\": \"a1\"}]";
        write_raw(&store, bytes);
        let result: Result<(), DocumentError> = store.update("now", |doc| {
            doc.jobs.clear();
            Err(io_error(Path::new("x"), io::Error::other("no")))
        });
        assert!(result.is_err());
        assert_eq!(fs::read(store.jobs_path()).unwrap(), bytes);
        assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
    }

    #[test]
    fn update_returns_the_closure_value_and_repairs_on_save() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        write_raw(
            &store,
            b"\xEF\xBB\xBF[{\"id\": \"a1\", \"prompt\": \"x\ny\"}]",
        );
        let n = store
            .update("t1", |doc| {
                assert!(doc.repaired);
                Ok::<_, DocumentError>(doc.jobs.len())
            })
            .unwrap();
        assert_eq!(n, 1);
        let bytes = fs::read(store.jobs_path()).unwrap();
        assert!(bytes.starts_with(b"{\n  \"jobs\""));
        let doc = store.load().unwrap();
        assert!(!doc.repaired);
        assert_eq!(doc.jobs[0]["prompt"], "x\ny");
    }

    #[cfg(unix)]
    #[test]
    fn save_makes_file_0600_and_dir_0700() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;

        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        store
            .update("t", |doc| {
                doc.jobs.push(rec(json!({"id": "a1"})));
                Ok::<_, DocumentError>(())
            })
            .unwrap();
        assert_eq!(mode(store.cron_dir()), 0o700);
        assert_eq!(mode(&store.jobs_path()), 0o600);
        assert_eq!(mode(&store.cron_dir().join(".jobs.lock")), 0o600);

        // Loose modes left by someone else are tightened by the next save.
        fs::set_permissions(store.cron_dir(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(store.jobs_path(), fs::Permissions::from_mode(0o644)).unwrap();
        store.update("t2", |_| Ok::<_, DocumentError>(())).unwrap();
        assert_eq!(mode(store.cron_dir()), 0o700);
        assert_eq!(mode(&store.jobs_path()), 0o600);
        assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
    }

    #[test]
    fn write_atomic_creates_parent_and_cleans_up_its_temp_file_on_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("out").join("abc123").join("run.md");
        write_atomic(&target, "# ok ✓\n".as_bytes()).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "# ok ✓\n");
        write_atomic(&target, b"second\n").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "second\n");
        assert_eq!(dir_names(target.parent().unwrap()), ["run.md"]);

        // Renaming a file over a non-empty directory fails after the temp file exists.
        let blocker = tmp.path().join("blocked");
        fs::create_dir_all(blocker.join("inside")).unwrap();
        let err = write_atomic(&blocker, b"x").unwrap_err();
        assert!(matches!(err, DocumentError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("blocked"));
        assert_eq!(dir_names(tmp.path()), ["blocked", "out"]);
    }

    #[test]
    fn a_write_under_the_lock_removes_a_killed_writers_fresh_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(&tmp);
        store
            .update("2026-01-01T00:00:00Z", |_| Ok::<_, DocumentError>(()))
            .unwrap();
        // What a writer killed between create and rename leaves: a temp file seconds old.
        let killed = store
            .cron_dir()
            .join(".jobs.json.tmp-4242-00000000000000ff");
        fs::write(&killed, b"{\"jobs\": [").unwrap();
        // An output document written without a lock keeps a young temp beside it.
        let output = tmp.path().join("out").join("run.md");
        write_atomic(&output, b"first\n").unwrap();
        let young = tmp
            .path()
            .join("out")
            .join(".run.md.tmp-4242-00000000000000ff");
        fs::write(&young, b"half").unwrap();

        store
            .update("2026-01-01T00:01:00Z", |_| Ok::<_, DocumentError>(()))
            .unwrap();
        write_atomic(&output, b"second\n").unwrap();
        assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
        assert!(
            young.exists(),
            "a young temp of an unlocked write is left alone"
        );
    }

    #[test]
    fn concurrent_updates_never_lose_a_record() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Arc::new(store_in(&tmp));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..50 {
                        store
                            .update("t", |doc| {
                                doc.jobs.push(rec(json!({"id": format!("{t}-{i}")})));
                                Ok::<_, DocumentError>(())
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let doc = store.load().unwrap();
        assert_eq!(doc.jobs.len(), 400);
        let mut ids: Vec<&str> = doc.jobs.iter().filter_map(|j| j["id"].as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 400);
    }

    fn ids<'a>(list: &[&'a str]) -> std::collections::HashSet<&'a str> {
        list.iter().copied().collect()
    }

    fn mark(records: &mut [Record]) -> Result<usize, DocumentError> {
        for record in records.iter_mut() {
            record.insert("touched".into(), json!(true));
        }
        Ok(records.len())
    }

    #[test]
    fn update_records_changes_the_chosen_and_keeps_the_others_text() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(&dir);
        let original = "{\"jobs\": [{\"id\": \"a\", \"n\": 2.50, \"s\": \"caf\\u00e9\"},\n {\"id\": \"b\"}, {\"id\": \"a\"}, {\"x\": 1}],\n \"updated_at\": \"old\", \"z_extra\": [1, 2.0]}";
        write_raw(&store, original.as_bytes());
        let changed = store
            .update_records("new", &ids(&["a", "zzz"]), mark)
            .unwrap();
        assert_eq!(changed, 2, "both records with id a, in file order");
        let text = fs::read_to_string(store.jobs_path()).unwrap();
        // Untouched records keep their exact text (number spelling, escapes, spacing).
        assert!(text.contains("{\"id\": \"b\"}"), "{text}");
        assert!(text.contains("{\"x\": 1}"), "{text}");
        assert!(text.contains("[1, 2.0]"), "{text}");
        let doc = parse(&text).unwrap();
        let touched: Vec<bool> = doc.jobs.iter().map(|j| j.contains_key("touched")).collect();
        assert_eq!(touched, [true, false, true, false]);
        assert_eq!(doc.jobs[0]["s"], json!("café"));
        assert_eq!(doc.updated_at.as_deref(), Some("new"));
        assert_eq!(doc.extra.keys().collect::<Vec<_>>(), ["z_extra"]);
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn update_records_repairs_other_shapes_through_the_whole_document() {
        for original in [
            "[{\"id\": \"a\"}, {\"id\": \"b\"}]",
            "\u{feff}{\"jobs\": [{\"id\": \"a\"}, {\"id\": \"b\"}]}",
            "{\"jobs\": {\"a\": {}, \"b\": {\"id\": \"b\"}}}",
            "{\"jobs\": [{\"id\": \"a\", \"p\": \"line\nbreak\"}, {\"id\": \"b\"}]}",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = store_in(&dir);
            write_raw(&store, original.as_bytes());
            let changed = store.update_records("now", &ids(&["a"]), mark).unwrap();
            assert_eq!(changed, 1, "{original:?}");
            let bytes = fs::read(store.jobs_path()).unwrap();
            let doc = parse_document(&bytes, &store.jobs_path()).unwrap();
            assert!(!doc.repaired, "rewritten canonical: {original:?}");
            assert_eq!(doc.jobs.len(), 2);
            assert_eq!(doc.jobs[0]["id"], json!("a"));
            assert_eq!(doc.jobs[0]["touched"], json!(true), "{original:?}");
            assert!(!doc.jobs[1].contains_key("touched"));
        }
    }

    #[test]
    fn update_records_leaves_an_unreadable_store_and_an_erring_change_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(&dir);
        let broken = b"{\"jobs\": [{\"id\": \"a\"} {\"id\": \"b\"}]}";
        write_raw(&store, broken);
        let err = store.update_records("now", &ids(&["a"]), mark).unwrap_err();
        assert!(matches!(err, DocumentError::Unreadable { .. }), "{err}");
        assert_eq!(fs::read(store.jobs_path()).unwrap(), broken);

        let fine = b"{\"jobs\": [{\"id\": \"a\"}]}";
        write_raw(&store, fine);
        let result: Result<(), DocumentError> = store.update_records("now", &ids(&["a"]), |_| {
            Err(DocumentError::Unreadable {
                path: PathBuf::new(),
                line: None,
                column: None,
                reason: "no".into(),
            })
        });
        assert!(result.is_err());
        assert_eq!(fs::read(store.jobs_path()).unwrap(), fine);
    }

    #[test]
    fn one_job_read_alone_is_what_the_whole_document_reads() {
        let text = "{\"jobs\": [{\"id\": \"a\", \"st\\u0061te\": \"paused\", \"x\": {\"y\": [1]}, \"id\": \"b\"}, {\"next_run_at\": null}], \"k\": 1}";
        let path = Path::new("/h/cron/jobs.json");
        let texts = canonical_job_texts(text.as_bytes()).unwrap();
        let whole = parse_document(text.as_bytes(), path).unwrap();
        let kept = parse_document_keeping(text.as_bytes(), path, Some(&["id", "state"])).unwrap();
        for (i, job) in texts.iter().enumerate() {
            assert_eq!(record_keeping(job.get(), None).unwrap(), whole.jobs[i]);
            assert_eq!(
                record_keeping(job.get(), Some(&["id", "state"])).unwrap(),
                kept.jobs[i]
            );
        }
        let keys = ["state", "id", "missing"];
        let picked = pick_job_fields(text.as_bytes(), &keys).unwrap();
        let picked_records: Vec<Record> = picked
            .jobs()
            .map(|values| picked.record(values).unwrap())
            .collect();
        let kept = parse_document_keeping(text.as_bytes(), path, Some(&keys)).unwrap();
        assert_eq!(picked_records, kept.jobs);
        assert_eq!(
            whole.jobs[0].get("id"),
            Some(&json!("b")),
            "a later duplicate wins"
        );
        for not_canonical in [
            "\u{feff}{\"jobs\": []}",
            "[{\"id\": \"a\"}]",
            "{\"jobs\": {\"a\": {}}}",
            "{\"jobs\": [1]}",
            "{\"jobs\": [{\"p\": \"a\nb\"}]}",
            "{\"jobs\": [{}] x",
            "{\"updated_at\": \"u\"}",
            "{\"jobs\": null}",
        ] {
            assert!(
                canonical_job_texts(not_canonical.as_bytes()).is_none(),
                "{not_canonical}"
            );
            assert!(
                pick_job_fields(not_canonical.as_bytes(), &["id"]).is_none(),
                "{not_canonical}"
            );
        }
    }

    #[test]
    fn the_kept_keys_view_reads_what_the_full_parse_reads() {
        let text = "{\"jobs\": [{\"id\": \"a\", \"prompt\": \"long\", \"next_run_at\": \"t\", \"x\": {\"y\": [1]}}], \"updated_at\": \"u\", \"k\": 1}";
        let path = Path::new("/h/cron/jobs.json");
        let view =
            parse_document_keeping(text.as_bytes(), path, Some(&["id", "next_run_at"])).unwrap();
        assert_eq!(view.jobs, [rec(json!({"id": "a", "next_run_at": "t"}))]);
        for bad in [
            "{\"jobs\": [1]}",
            "{\"jobs\": \"x\"}",
            "\"x\"",
            "{\"jobs\": [{\"id\": \"a\"} {}]}",
        ] {
            let full = parse(bad).unwrap_err().to_string();
            let kept = parse_document_keeping(bad.as_bytes(), path, Some(&["id"]))
                .unwrap_err()
                .to_string();
            assert_eq!(full, kept, "{bad}");
        }
        let repaired =
            parse_document_keeping(b"[{\"id\": \"a\", \"p\": \"a\nb\"}]", path, Some(&["id"]))
                .unwrap();
        assert!(repaired.repaired);
        assert_eq!(repaired.jobs, [rec(json!({"id": "a"}))]);
    }
}
