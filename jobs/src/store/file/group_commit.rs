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

use crate::job::{Context, Job};
use crate::jsonfile::{DocumentError, JsonFile, StoreDocument};
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

struct Queued {
    change: Change,
    ctx: Context,
    answer: mpsc::SyncSender<Answer>,
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

impl GroupCommit {
    pub(super) fn insert(&self, file: &JsonFile, ctx: &Context, job: Job) -> Result<(), JobError> {
        match self.commit(file, ctx, Change::Insert(job))? {
            Outcome::Inserted => Ok(()),
            _ => Err(mismatched()),
        }
    }

    pub(super) fn update(
        &self,
        file: &JsonFile,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        let id = id.to_string();
        match self.commit(file, ctx, Change::Update { id, change })? {
            Outcome::Updated(job) => Ok(job),
            _ => Err(mismatched()),
        }
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
        let mut queued = Queued {
            change,
            ctx: *ctx,
            answer,
        };
        // A writer that died (a change panicked) is replaced once; without a thread at
        // all, the change is written here, alone.
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
                Ok(()) => {
                    return answered.recv().unwrap_or_else(|_| {
                        Err(JobError::Store(StoreError::Unavailable(
                            "the change to jobs.json was interrupted before it was written; \
                             try again"
                                .into(),
                        )))
                    })
                }
                Err(mpsc::SendError(back)) => {
                    queued = back;
                    *lock(&self.writer) = None;
                }
            }
        }
        write_batch(file, vec![queued]);
        answered.recv().unwrap_or_else(|_| Err(mismatched()))
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

/// Applies `batch` in one write and answers each change.
fn write_batch(file: &JsonFile, batch: Vec<Queued>) {
    let (changes, answers): (Vec<_>, Vec<_>) = batch
        .into_iter()
        .map(|queued| ((queued.change, queued.ctx), queued.answer))
        .unzip();
    let written = file.update_stamped(|doc| {
        let (outcomes, stamp) = apply(doc, changes);
        match stamp {
            Some(stamp) => Ok((outcomes, stamp)),
            None => Err(Unwritten::NothingChanged(outcomes)),
        }
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
        // A writer that stopped waiting (its thread unwound) needs no answer.
        let _ = answer.send(outcome);
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

/// Applies `changes` in order to `doc` as writers one after another would: the stored
/// jobs are healed as the first change's writer heals them, a job a change of the batch
/// added is healed again for each later change (as its writer would find it), and a
/// refused change leaves every job as it was. Returns each change's answer and the
/// `updated_at` of the last change that went through (`None`: none did).
fn apply(
    doc: &mut StoreDocument,
    changes: Vec<(Change, Context)>,
) -> (Vec<Answer>, Option<String>) {
    let mut answers = Vec::with_capacity(changes.len());
    let mut stamp = None;
    let mut jobs: Vec<Job> = Vec::new();
    let mut added: Vec<String> = Vec::new();
    for (n, (change, ctx)) in changes.into_iter().enumerate() {
        if n == 0 {
            jobs = std::mem::take(&mut doc.jobs)
                .into_iter()
                .map(|record| {
                    let mut job = Job::from_record(record);
                    job.heal(&ctx);
                    job
                })
                .collect();
        } else {
            for job in jobs
                .iter_mut()
                .filter(|j| added.iter().any(|id| id == j.id()))
            {
                job.heal(&ctx);
            }
        }
        let answer = match change {
            Change::Insert(job) => {
                added.push(job.id().to_string());
                jobs.push(job);
                Ok(Outcome::Inserted)
            }
            Change::Update { id, change } => match jobs.iter_mut().find(|j| j.id() == id) {
                Some(job) => {
                    let mut changed = job.clone();
                    change(&mut changed).map(|()| {
                        *job = changed.clone();
                        Outcome::Updated(changed)
                    })
                }
                None => Err(JobError::NotFound(id)),
            },
            Change::Remove(id) => match jobs.iter().position(|j| j.id() == id) {
                Some(index) => Ok(Outcome::Removed(jobs.remove(index))),
                None => Err(JobError::NotFound(id)),
            },
        };
        if answer.is_ok() {
            stamp = Some(ctx.now_text());
        }
        answers.push(answer);
    }
    doc.jobs = jobs.into_iter().map(Job::into_record).collect();
    (answers, stamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonfile::{parse_document, render_document};
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
