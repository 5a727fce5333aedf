//! Job changes one file store is asked for at the same time, written together: each
//! caller queues its change for the store's one writer thread, which applies every
//! change waiting, in the order they came, to one reading of jobs.json under
//! `.jobs.lock`, then writes and syncs the file once for all of them (the same atomic
//! write as a single change). The bytes are those the changes would leave one after
//! another; no caller hears of success before the write holding its change is synced.
//! One thread does every write, so one thread's heap holds the parsed store (50 callers
//! each parsing it kept 50 copies' worth of pages). It never decides what a change does:
//! that is the caller's.

use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::model::job::{Context, Job};
use std::collections::HashSet;

use crate::jsonjobs::{DocumentError, JsonFile, Record, StoreDocument, StoredJob, Written};
use crate::lifecycle::JobError;
use crate::store::{JobChange, StoreError};

/// One change to the jobs of the store.
enum Change {
    /// Adds a job (already built and checked) at the end.
    Insert(Job),
    /// Changes the job with this id; a refused change leaves it as it was.
    Update { id: String, change: JobChange },
    /// Takes the job with this id out.
    Remove(String),
}

/// What a change did.
enum Outcome {
    Inserted,
    Updated(Job),
    Removed(Job),
}

type Answer = Result<Outcome, JobError>;

/// Each change's answer, and the `updated_at` of the last that went through (`None`:
/// none did, and nothing is written).
type Applied = (Vec<Answer>, Option<String>);

struct Queued {
    change: Change,
    ctx: Context,
    answer: Reply,
}

/// Where a change's answer goes: to a caller blocked on it, or to one awaiting it.
enum Reply {
    Blocked(mpsc::SyncSender<Answer>),
    Awaiting(tokio::sync::oneshot::Sender<Answer>),
}

impl Reply {
    /// A caller that stopped waiting (its thread unwound, its task dropped) needs no
    /// answer.
    fn send(self, answer: Answer) {
        match self {
            Reply::Blocked(sender) => drop(sender.send(answer)),
            Reply::Awaiting(sender) => drop(sender.send(answer)),
        }
    }
}

/// The way to one store's writer thread, started with the first change.
#[derive(Default)]
pub(super) struct GroupCommit {
    /// Sends a change to the writer; `None` until the first change (most CLI verbs
    /// change nothing). Held only to clone the sender or start the thread.
    writer: Mutex<Option<mpsc::Sender<Queued>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writer: waits for a change, takes every other one waiting with it, writes them.
/// Ends when the store is dropped (no sender left).
fn start_writer(file: &JsonFile) -> Option<mpsc::Sender<Queued>> {
    let (sender, changes) = mpsc::channel::<Queued>();
    let file = file.clone();
    std::thread::Builder::new()
        .name("jobs.json writer".into())
        .spawn(move || {
            while let Ok(first) = changes.recv() {
                let mut batch = vec![first];
                batch.extend(changes.try_iter());
                write_batch(&file, batch);
            }
        })
        .ok()?;
    Some(sender)
}

/// A change that came back with another change's outcome: cannot happen, and is an
/// error rather than a panic all the same.
fn mismatched() -> JobError {
    JobError::Store(StoreError::Unavailable(
        "the store answered a change with another's outcome; try again".into(),
    ))
}

/// The answer of a change whose writer went away before writing it.
fn interrupted() -> Answer {
    Err(JobError::Store(StoreError::Unavailable(
        "the change to jobs.json was interrupted before it was written; try again".into(),
    )))
}

fn inserted(answer: Answer) -> Result<(), JobError> {
    match answer? {
        Outcome::Inserted => Ok(()),
        _ => Err(mismatched()),
    }
}

fn updated(answer: Answer) -> Result<Job, JobError> {
    match answer? {
        Outcome::Updated(job) => Ok(job),
        _ => Err(mismatched()),
    }
}

impl GroupCommit {
    pub(super) fn insert(&self, file: &JsonFile, ctx: &Context, job: Job) -> Result<(), JobError> {
        inserted(self.commit(file, ctx, Change::Insert(job)))
    }

    /// [`GroupCommit::insert`] awaited, holding no thread while the write is made.
    pub(super) async fn insert_awaiting(
        &self,
        file: &JsonFile,
        ctx: &Context,
        job: Job,
    ) -> Result<(), JobError> {
        inserted(self.commit_awaiting(file, ctx, Change::Insert(job)).await)
    }

    pub(super) fn update(
        &self,
        file: &JsonFile,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let id = id.to_string();
        updated(self.commit(file, ctx, Change::Update { id, change }))
    }

    /// [`GroupCommit::update`] awaited, holding no thread while the write is made.
    pub(super) async fn update_awaiting(
        &self,
        file: &JsonFile,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let id = id.to_string();
        updated(
            self.commit_awaiting(file, ctx, Change::Update { id, change })
                .await,
        )
    }

    pub(super) fn remove(&self, file: &JsonFile, ctx: &Context, id: &str) -> Result<Job, JobError> {
        match self.commit(file, ctx, Change::Remove(id.to_string()))? {
            Outcome::Removed(job) => Ok(job),
            _ => Err(mismatched()),
        }
    }

    /// Makes `change` in `file` with whatever other changes wait beside it; blocks until
    /// the write that holds it is synced (or failed).
    fn commit(&self, file: &JsonFile, ctx: &Context, change: Change) -> Answer {
        let (answer, answered) = mpsc::sync_channel(1);
        let queued = Queued {
            change,
            ctx: *ctx,
            answer: Reply::Blocked(answer),
        };
        // Without a writer thread the change is written here, alone.
        if let Err(queued) = self.queue(file, queued) {
            write_batch(file, vec![queued]);
        }
        answered.recv().unwrap_or_else(|_| interrupted())
    }

    /// [`GroupCommit::commit`] for a caller on a runtime of several threads: it awaits
    /// the answer, so fifty callers at once hold fifty small tasks rather than fifty
    /// threads (each of which kept its own pages of the allocator).
    async fn commit_awaiting(&self, file: &JsonFile, ctx: &Context, change: Change) -> Answer {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let queued = Queued {
            change,
            ctx: *ctx,
            answer: Reply::Awaiting(answer),
        };
        // Without a writer thread the change is written on a blocking thread, alone.
        if let Err(queued) = self.queue(file, queued) {
            let file = file.clone();
            let written =
                tokio::task::spawn_blocking(move || write_batch(&file, vec![queued])).await;
            if let Err(e) = written {
                if e.is_panic() {
                    std::panic::resume_unwind(e.into_panic());
                }
            }
        }
        answered.await.unwrap_or_else(|_| interrupted())
    }

    /// Hands `queued` to the writer thread, started when there is none; a writer that
    /// died (a change panicked) is replaced once. Gives it back when no thread can run.
    fn queue(&self, file: &JsonFile, mut queued: Queued) -> Result<(), Queued> {
        for _ in 0..2 {
            let sender = {
                let mut writer = lock(&self.writer);
                if writer.is_none() {
                    *writer = start_writer(file);
                }
                writer.clone()
            };
            let Some(sender) = sender else { break };
            match sender.send(queued) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(back)) => {
                    queued = back;
                    *lock(&self.writer) = None;
                }
            }
        }
        Err(queued)
    }
}

/// Why a batch wrote nothing: the file could not be read or written, or no change of
/// it went through (then the file is left as it was, as each alone would have).
enum Unwritten {
    Document(DocumentError),
    NothingChanged(Vec<Answer>),
}

impl From<DocumentError> for Unwritten {
    fn from(e: DocumentError) -> Unwritten {
        Unwritten::Document(e)
    }
}

/// Applies `batch` in one write and answers each change: on a store in the canonical
/// shape every job the batch leaves as it was is written back as its very text (a
/// create at 10,000 jobs then parses each stored job once and renders none of them);
/// any other store is read, healed and rendered whole.
fn write_batch(file: &JsonFile, batch: Vec<Queued>) {
    let (changes, answers): (Vec<_>, Vec<_>) = batch
        .into_iter()
        .map(|queued| ((queued.change, queued.ctx), queued.answer))
        .unzip();
    let mut pending = Some(changes);
    let written = file
        .update_jobs(|stored| {
            let changes = pending.take().unwrap_or_default();
            let (entries, (outcomes, stamp)) = apply_to_stored(&file.jobs_path(), stored, changes)?;
            let write =
                stamp.map(|stamp| (entries.into_iter().map(Entry::written).collect(), stamp));
            Ok::<_, DocumentError>((outcomes, write))
        })
        .map_err(Unwritten::Document)
        .and_then(|done| match (done, pending.take()) {
            (Some(outcomes), _) => Ok(outcomes),
            (None, changes) => file.update_stamped(|doc| {
                let (outcomes, stamp) = apply(doc, changes.unwrap_or_default());
                match stamp {
                    Some(stamp) => Ok((outcomes, stamp)),
                    None => Err(Unwritten::NothingChanged(outcomes)),
                }
            }),
        });
    let outcomes: Vec<Answer> = match written {
        Ok(outcomes) | Err(Unwritten::NothingChanged(outcomes)) => outcomes,
        Err(Unwritten::Document(e)) => {
            let e = StoreError::from(e);
            answers
                .iter()
                .map(|_| Err(JobError::Store(copy(&e))))
                .collect()
        }
    };
    for (answer, outcome) in answers.into_iter().zip(outcomes) {
        answer.send(outcome);
    }
}

/// The same error for another waiter of a failed write.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unreadable(m) => StoreError::Unreadable(m.clone()),
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        StoreError::Refused(m) => StoreError::Refused(m.clone()),
    }
}

/// A job of the store while a batch is applied: a stored job kept as its text (no
/// change of the batch names it and healing left it as it was), or the job itself.
enum Entry {
    Kept(usize),
    Job(Job),
}

impl Entry {
    fn written(self) -> Written {
        match self {
            Entry::Kept(index) => Written::Kept(index),
            Entry::Job(job) => Written::Record(job.into_record()),
        }
    }
}

/// Applies `changes` in order to `doc` as writers one after another would: the stored
/// jobs are healed as the first change's writer heals them, a job a change of the batch
/// added is healed again for each later change (as its writer would find it), and a
/// refused change leaves every job as it was. Returns each change's answer and the
/// `updated_at` of the last change that went through (`None`: none did).
fn apply(doc: &mut StoreDocument, changes: Vec<(Change, Context)>) -> Applied {
    let Some(first) = changes.first().map(|(_, ctx)| *ctx) else {
        return (Vec::new(), None);
    };
    let mut entries: Vec<Entry> = std::mem::take(&mut doc.jobs)
        .into_iter()
        .map(|record| {
            let mut job = Job::from_record(record);
            job.heal(&first);
            Entry::Job(job)
        })
        .collect();
    let (answers, stamp) = apply_changes(&mut entries, changes);
    doc.jobs = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Job(job) => Some(job.into_record()),
            Entry::Kept(_) => None,
        })
        .collect();
    (answers, stamp)
}

/// [`apply`] to the jobs of a store in the canonical shape: each stored job is read and
/// healed as there, and stays its text unless a change of the batch names it or healing
/// changed it.
fn apply_to_stored(
    path: &std::path::Path,
    stored: &[StoredJob<'_>],
    changes: Vec<(Change, Context)>,
) -> Result<(Vec<Entry>, Applied), DocumentError> {
    let Some(first) = changes.first().map(|(_, ctx)| *ctx) else {
        return Ok((Vec::new(), (Vec::new(), None)));
    };
    let named: HashSet<&str> = changes
        .iter()
        .filter_map(|(change, _)| match change {
            Change::Insert(_) => None,
            Change::Update { id, .. } | Change::Remove(id) => Some(id.as_str()),
        })
        .collect();
    let mut entries = Vec::with_capacity(stored.len() + changes.len());
    for (index, job) in stored.iter().enumerate() {
        // Checked as JSON with the whole file already: this cannot fail, and is an error
        // rather than a panic all the same.
        let record: Record =
            serde_json::from_str(job.text).map_err(|e| DocumentError::Unreadable {
                path: path.to_path_buf(),
                line: None,
                column: None,
                reason: format!("a job reads as JSON but not as a record: {e}"),
            })?;
        if job.id.is_some_and(|id| named.contains(id)) {
            let mut job = Job::from_record(record);
            job.heal(&first);
            entries.push(Entry::Job(job));
            continue;
        }
        let mut healed = Job::from_record(record.clone());
        healed.heal(&first);
        // Healing only ever sets keys, so the same keys with the same values in the same
        // order is the same record.
        entries.push(match healed.record().iter().eq(record.iter()) {
            true => Entry::Kept(index),
            false => Entry::Job(healed),
        });
    }
    let applied = apply_changes(&mut entries, changes);
    Ok((entries, applied))
}

/// The changes of a batch, in order, on jobs healed as the first change's writer heals
/// them (see [`apply`]).
fn apply_changes(entries: &mut Vec<Entry>, changes: Vec<(Change, Context)>) -> Applied {
    let mut answers = Vec::with_capacity(changes.len());
    let mut stamp = None;
    let mut added: Vec<String> = Vec::new();
    for (n, (change, ctx)) in changes.into_iter().enumerate() {
        if n > 0 {
            for job in jobs_mut(entries).filter(|j| added.iter().any(|id| id == j.id())) {
                job.heal(&ctx);
            }
        }
        let answer = match change {
            Change::Insert(job) => {
                added.push(job.id().to_string());
                entries.push(Entry::Job(job));
                Ok(Outcome::Inserted)
            }
            Change::Update { id, change } => match jobs_mut(entries).find(|j| j.id() == id) {
                Some(job) => {
                    let mut changed = job.clone();
                    change(&mut changed).map(|()| {
                        *job = changed.clone();
                        Outcome::Updated(changed)
                    })
                }
                None => Err(JobError::NotFound(id)),
            },
            Change::Remove(id) => {
                let at = entries
                    .iter()
                    .position(|e| matches!(e, Entry::Job(j) if j.id() == id));
                match at.map(|index| entries.remove(index)) {
                    Some(Entry::Job(job)) => Ok(Outcome::Removed(job)),
                    _ => Err(JobError::NotFound(id)),
                }
            }
        };
        if answer.is_ok() {
            stamp = Some(ctx.now_text());
        }
        answers.push(answer);
    }
    (answers, stamp)
}

fn jobs_mut(entries: &mut [Entry]) -> impl Iterator<Item = &mut Job> {
    entries.iter_mut().filter_map(|entry| match entry {
        Entry::Job(job) => Some(job),
        Entry::Kept(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonjobs::{parse_document, render_document};
    use chrono::{DateTime, Utc};
    use serde_json::json;

    fn ctx(second: u32) -> Context {
        Context {
            now: DateTime::parse_from_rfc3339(&format!("2026-11-22T12:00:{second:02}Z"))
                .map(|t| t.with_timezone(&Utc))
                .unwrap(),
            zone: chrono_tz::Tz::UTC,
            legacy_zone: chrono_tz::Tz::Europe__Berlin,
        }
    }

    fn job(id: &str, name: &str) -> Job {
        let record = json!({"id": id, "name": name, "prompt": "p", "schedule": "every 1h"});
        let mut job = Job::from_record(record.as_object().unwrap().clone());
        job.heal(&ctx(0));
        job
    }

    fn rename(to: &'static str) -> JobChange {
        Box::new(move |job: &mut Job| {
            job.set("name", json!(to));
            Ok(())
        })
    }

    fn refuse() -> JobChange {
        Box::new(|job: &mut Job| {
            job.set("name", json!("half-done"));
            Err(JobError::Invalid("refused".into()))
        })
    }

    /// The changes of the test, made afresh (a change can be applied once).
    fn changes() -> Vec<(Change, Context)> {
        vec![
            (Change::Insert(job("a00000000001", "added")), ctx(1)),
            (
                Change::Update {
                    id: "b00000000002".into(),
                    change: rename("renamed"),
                },
                ctx(2),
            ),
            (
                Change::Update {
                    id: "nobody".into(),
                    change: rename("x"),
                },
                ctx(3),
            ),
            (
                Change::Update {
                    id: "c00000000003".into(),
                    change: refuse(),
                },
                ctx(4),
            ),
            (Change::Remove("c00000000003".into()), ctx(5)),
            (
                Change::Update {
                    id: "a00000000001".into(),
                    change: rename("added, renamed"),
                },
                ctx(6),
            ),
            (Change::Remove("nobody".into()), ctx(7)),
        ]
    }

    fn store_text() -> Vec<u8> {
        // A legacy record (a string schedule) that healing rewrites, and two plain ones.
        let text = r#"{"jobs": [
            {"id": "b00000000002", "name": "b", "prompt": "p", "schedule": "every 2h"},
            {"id": "c00000000003", "name": "c", "prompt": "p", "schedule": "0 9 * * *"}
        ], "updated_at": "2026-11-22T11:00:00+00:00"}"#;
        text.as_bytes().to_vec()
    }

    /// What the changes leave one after another, each loading, healing and writing the
    /// store as a single writer does (a refused one writes nothing).
    fn one_after_another() -> (Vec<bool>, Vec<u8>) {
        let path = std::path::Path::new("jobs.json");
        let mut bytes = store_text();
        let mut went_through = Vec::new();
        for (change, ctx) in changes() {
            let mut doc = parse_document(&bytes, path).unwrap();
            let (answers, stamp) = apply(&mut doc, vec![(change, ctx)]);
            went_through.push(answers[0].is_ok());
            if let Some(stamp) = stamp {
                doc.updated_at = Some(stamp);
                bytes = render_document(&doc);
            }
        }
        (went_through, bytes)
    }

    #[test]
    fn a_batch_writes_the_bytes_its_changes_would_write_one_after_another() {
        let (expected_answers, expected) = one_after_another();
        assert_eq!(
            expected_answers,
            [true, true, false, false, true, true, false]
        );
        let mut doc = parse_document(&store_text(), std::path::Path::new("jobs.json")).unwrap();
        let (answers, stamp) = apply(&mut doc, changes());
        let oks: Vec<bool> = answers.iter().map(Result::is_ok).collect();
        assert_eq!(oks, expected_answers);
        // The last change that went through stamps the file.
        assert_eq!(stamp.as_deref(), Some("2026-11-22T12:00:06+00:00"));
        doc.updated_at = stamp;
        assert_eq!(
            String::from_utf8(render_document(&doc)).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        assert!(matches!(&answers[2], Err(JobError::NotFound(id)) if id == "nobody"));
        assert!(matches!(&answers[3], Err(JobError::Invalid(_))));
    }

    #[test]
    fn a_batch_where_nothing_goes_through_changes_nothing() {
        let mut doc = parse_document(&store_text(), std::path::Path::new("jobs.json")).unwrap();
        let (answers, stamp) = apply(&mut doc, vec![(Change::Remove("nobody".into()), ctx(1))]);
        assert!(answers[0].is_err());
        assert_eq!(stamp, None);
    }

    /// Sends `changes` to [`write_batch`] as one batch on `file`; whether each went through.
    fn write_one_batch(file: &JsonFile, changes: Vec<(Change, Context)>) -> Vec<bool> {
        let mut waiting = Vec::new();
        let batch = changes
            .into_iter()
            .map(|(change, ctx)| {
                let (answer, answered) = mpsc::sync_channel(1);
                waiting.push(answered);
                Queued {
                    change,
                    ctx,
                    answer: Reply::Blocked(answer),
                }
            })
            .collect();
        write_batch(file, batch);
        waiting
            .iter()
            .map(|answered| answered.recv().unwrap().is_ok())
            .collect()
    }

    /// On a store in the canonical shape (as this build or Python Hermes writes it) the
    /// jobs a batch leaves alone are copied as text, and the file is the very bytes the
    /// whole-document path writes: the legacy record healing rewrites included.
    #[test]
    fn a_batch_on_a_canonical_store_writes_the_bytes_of_the_whole_document_path() {
        let path = std::path::Path::new("jobs.json");
        let stored = parse_document(&store_text(), path).unwrap();
        let mut whole = stored.clone();
        let (answers, stamp) = apply(&mut whole, changes());
        whole.updated_at = stamp;

        let dir = tempfile::tempdir().unwrap();
        let file = JsonFile::new(dir.path().join("cron"));
        std::fs::create_dir_all(dir.path().join("cron")).unwrap();
        std::fs::write(file.jobs_path(), render_document(&stored)).unwrap();
        let went_through = write_one_batch(&file, changes());
        assert_eq!(
            went_through,
            answers.iter().map(Result::is_ok).collect::<Vec<_>>()
        );
        assert_eq!(
            String::from_utf8(std::fs::read(file.jobs_path()).unwrap()).unwrap(),
            String::from_utf8(render_document(&whole)).unwrap()
        );
    }

    /// A job no change names keeps its text to the byte (here an escape the renderer
    /// would not write); the one a change names is written afresh.
    #[test]
    fn a_job_no_change_names_keeps_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let file = JsonFile::new(dir.path().join("cron"));
        std::fs::create_dir_all(dir.path().join("cron")).unwrap();
        let untouched = r#"{"id": "d00000000004", "name": "caf\u00e9", "prompt": "p", "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"}, "schedule_display": "every 60m", "next_run_at": "2026-11-22T13:00:00+00:00"}"#;
        let text = format!(
            r#"{{"jobs": [{untouched}, {{"id": "b00000000002", "name": "b", "prompt": "p", "schedule": "every 2h"}}]}}"#
        );
        std::fs::write(file.jobs_path(), &text).unwrap();
        let went_through = write_one_batch(
            &file,
            vec![(
                Change::Update {
                    id: "b00000000002".into(),
                    change: rename("renamed"),
                },
                ctx(1),
            )],
        );
        assert_eq!(went_through, [true]);
        let written = String::from_utf8(std::fs::read(file.jobs_path()).unwrap()).unwrap();
        assert!(written.contains(untouched), "{written}");
        let doc = file.load().unwrap();
        assert_eq!(doc.jobs[0]["name"], "café");
        assert_eq!(doc.jobs[1]["name"], "renamed");
        assert_eq!(doc.jobs[1]["schedule"]["kind"], "interval");
        assert_eq!(doc.updated_at.as_deref(), Some("2026-11-22T12:00:01+00:00"));
    }

    /// Many writers at once: every change lands, in one store that reads back whole.
    #[test]
    fn concurrent_writers_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let file = JsonFile::new(dir.path().join("cron"));
        let group = GroupCommit::default();
        std::thread::scope(|scope| {
            for n in 0..40 {
                let (file, group) = (&file, &group);
                scope.spawn(move || {
                    let id = format!("{n:012x}");
                    group.insert(file, &ctx(1), job(&id, "many")).unwrap();
                    group
                        .update(file, &ctx(2), &id, rename("many, renamed"))
                        .unwrap();
                });
            }
        });
        let doc = file.load().unwrap();
        assert_eq!(doc.jobs.len(), 40);
        assert!(doc.jobs.iter().all(|r| r["name"] == "many, renamed"));
    }
}
