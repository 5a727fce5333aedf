//! The one reader of jobs.json's text. Every question asked of the file store's jobs —
//! the jobs or a view of a few keys, the due probe of a scheduler pass, the text
//! listing, the `list --json` listing, the record layout, the stored jobs a change
//! rewrites around — is a *mode* of [`JobsText`]: each first walks a store in the
//! canonical shape with the strict walk that builds no values ([`super::scan`]), and
//! anything that walk refuses or is unsure of (repairs, odd shapes, errors) is read by
//! the tolerant whole-document reader ([`super::read`]), so every mode comes to the
//! same jobs and the same errors. Nothing else in the crate parses jobs.json.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use serde_json::Value;

use super::listing::{plain_summary, write_plain_job, JobSummary, NotPlain, Scratch};
use super::read::view;
use super::repair::kind_of;
use super::scan::{walk_document, walk_jobs, walk_jobs_in_parallel, KeyIndex, Walk};
use super::{parse_document_keeping, Record};
use crate::model::due::{self, Probe, PROBE_KEYS};
use crate::model::fields::Layout;
use crate::model::job::{Context, Job, SCHEDULING_KEYS};
use crate::store::{append_normalized_job, ExtraField, Listed, StoreError, SummarySink};

/// The bytes of one jobs.json (empty: no store yet) and its path, for errors.
#[derive(Clone, Copy)]
pub struct JobsText<'a> {
    bytes: &'a [u8],
    path: &'a Path,
}

impl<'a> JobsText<'a> {
    pub fn new(bytes: &'a [u8], path: &'a Path) -> JobsText<'a> {
        JobsText { bytes, path }
    }

    /// Each job as a record, whole (`keys` none) or reduced to `keys` (a view), in file
    /// order.
    pub fn jobs(
        &self,
        keys: Option<&[&str]>,
        each: &mut dyn FnMut(Record),
    ) -> Result<(), StoreError> {
        if let Some(picked) = keys.and_then(|keys| pick_job_fields(self.bytes, keys)) {
            for values in picked.jobs() {
                each(picked.record(values).map_err(|_| self.job_error(keys))?);
            }
            return Ok(());
        }
        let Some(texts) = self.job_texts() else {
            let doc = parse_document_keeping(self.bytes, self.path, keys)?;
            doc.jobs.into_iter().for_each(each);
            return Ok(());
        };
        for text in texts {
            each(record_keeping(text, keys).map_err(|_| self.job_error(keys))?);
        }
        Ok(())
    }

    /// The jobs of a store in the canonical shape, each as its own JSON text borrowed
    /// from the bytes: the whole file is checked on the way, and each job can then be read
    /// alone ([`record_keeping`]) without building the others. `None` when the store is
    /// not in the canonical shape (BOM, bare list, id map, raw control characters,
    /// nesting deeper than the strict walk reads, unreadable): the tolerant reader reads,
    /// repairs or refuses those.
    pub fn job_texts(&self) -> Option<Vec<&'a str>> {
        let mut texts = Vec::new();
        walk_jobs(self.bytes, &mut |text, _| {
            texts.push(text);
            Walk::Continue
        })?;
        Some(texts)
    }

    /// The due probe of a scheduler pass: the jobs it must decide on, as scheduling
    /// views, and the earliest next run of all the others. Each job is first judged on a
    /// few fields ([`due::probe`]); only the undecided ones (due, completed, unreadable
    /// next run) are built. The file is read on this thread while each job is judged on
    /// another.
    pub fn scheduling(
        &self,
        ctx: &Context,
    ) -> Result<(Vec<Job>, Option<DateTime<Utc>>), StoreError> {
        let keys = KeyIndex::new(SCHEDULING_KEYS);
        let at = PROBE_KEYS.map(|key| keys.find(key));
        let mut undecided = Vec::new();
        let mut settled_wake = None;
        let mut value_unreadable = false;
        let mut values = vec![None; SCHEDULING_KEYS.len()];
        let walked = walk_jobs_in_parallel(self.bytes, &mut |_, entries| {
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
                Probe::Settled { wake } => {
                    settled_wake = [settled_wake, wake].into_iter().flatten().min()
                }
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
            return Err(self.job_error(Some(SCHEDULING_KEYS)));
        }
        let doc = parse_document_keeping(self.bytes, self.path, Some(SCHEDULING_KEYS))?;
        Ok((doc.jobs.into_iter().map(Job::from_record).collect(), None))
    }

    /// The text listing: each job's summary read straight from its text where it can be
    /// ([`super::listing`]), else from the job, handed over from the second thread as soon
    /// as it is read. A store that turns out not to be in the canonical shape is read
    /// again the long way.
    pub fn summaries(&self, ctx: &Context, sink: &mut dyn SummarySink) -> Result<(), StoreError> {
        let mut scratch = Scratch::default();
        let mut started = false;
        let walked = walk_jobs_in_parallel(self.bytes, &mut |text, entries| {
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
        self.jobs(Some(JobSummary::KEYS), &mut |record| {
            sink.summary(&JobSummary::of(&Job::from_record(record), ctx))
        })
    }

    /// The `list --json` listing: each job the healing leaves as it is is written straight
    /// from its text ([`super::listing`]); any other is built and normalized. A store not
    /// in the canonical shape is read the long way.
    pub fn normalized(
        &self,
        ctx: &Context,
        keep: &(dyn Fn(Listed) -> bool + Sync),
        extras: &[ExtraField],
        out: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        // The listing is about as long as the file (no indentation, a few more fields):
        // reserved once rather than grown by copying.
        out.reserve(self.bytes.len());
        let mark = out.len();
        let mut scratch = Scratch::default();
        let mut first = true;
        let walked = walk_jobs_in_parallel(self.bytes, &mut |text, entries| {
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
        crate::store::write_normalized(ctx, keep, extras, out, &mut |each| {
            self.jobs(None, &mut |record| each(Job::from_record(record)))
        })
    }

    /// The record layout of the store ([`Layout`]): the keys that decide it are looked
    /// for in the text, no job built; a store that needs repairs is read whole.
    pub fn layout(&self) -> Result<Layout, StoreError> {
        if self.bytes.is_empty() {
            return Ok(Layout::of_store(&[]));
        }
        let keys = KeyIndex::new(Layout::PROBE_KEYS);
        let at = ["monitor_state", "provider_snapshot"].map(|key| keys.find(key));
        let mut has = [false; 2];
        let mut values = [None; Layout::PROBE_KEYS.len()];
        let walked = walk_jobs(self.bytes, &mut |_, entries| {
            values.fill(None);
            if keys.pick(entries, &mut values).is_none() {
                return Walk::Stop;
            }
            for (has, i) in has.iter_mut().zip(at) {
                *has |= i.is_some_and(|i| values[i].is_some());
            }
            Walk::Continue
        });
        if walked.is_some() {
            return Ok(Layout::of_keys(has[0], has[1]));
        }
        let doc = parse_document_keeping(self.bytes, self.path, Some(Layout::PROBE_KEYS))?;
        let jobs: Vec<Job> = doc.jobs.into_iter().map(Job::from_record).collect();
        Ok(Layout::of_store(&jobs))
    }

    /// The store as a change of a few jobs rewrites it: every job its own text and
    /// string `id`, the other top-level keys (`updated_at` left out) as text, in order.
    /// `None` for a store not in the canonical shape, or whose jobs' ids cannot be told
    /// for sure (a duplicate or escaped `id` key): the whole-document path rewrites those.
    pub(super) fn stored(&self) -> Option<Stored<'a>> {
        let mut extra = Vec::new();
        let mut jobs = Vec::new();
        let mut unsure = false;
        walk_document(
            self.bytes,
            &mut |key, value| {
                if key != "updated_at" {
                    extra.push((key, value));
                }
            },
            &mut |text, entries| {
                let mut ids = entries.iter().filter(|e| match e.key_is_plain() {
                    true => e.key == "id",
                    false => e.key_text().is_none_or(|key| key == "id"),
                });
                let id = match (ids.next(), ids.next()) {
                    (None, _) => None,
                    (Some(entry), None) => match serde_json::from_str::<Value>(entry.value) {
                        Ok(Value::String(id)) => Some(id),
                        Ok(_) => None,
                        Err(_) => {
                            unsure = true;
                            return Walk::Stop;
                        }
                    },
                    _ => {
                        unsure = true;
                        return Walk::Stop;
                    }
                };
                jobs.push(StoredText { text, id });
                Walk::Continue
            },
        )?;
        (!unsure).then_some(Stored { jobs, extra })
    }

    /// The error for a job of a checked store that still cannot be read alone (nested
    /// deeper than the JSON reader allows): the whole-document reader's own, with its
    /// position, so the message is the one any other reader of this store gives.
    fn job_error(&self, keep: Option<&[&str]>) -> StoreError {
        match parse_document_keeping(self.bytes, self.path, keep) {
            Err(e) => e.into(),
            Ok(_) => StoreError::Unreadable(format!(
                "cannot read job store {}: a job cannot be read; the file was left unchanged",
                self.path.display()
            )),
        }
    }
}

/// A store in the canonical shape as [`JobsText::stored`] reads it.
pub(super) struct Stored<'a> {
    pub(super) jobs: Vec<StoredText<'a>>,
    /// Top-level keys other than "jobs" and "updated_at", their values as text, in order.
    pub(super) extra: Vec<(&'a str, &'a str)>,
}

/// One job of [`Stored`]: its text exactly as in the file, and its `id` when a string.
pub(super) struct StoredText<'a> {
    pub(super) text: &'a str,
    pub(super) id: Option<String>,
}

/// A JSON text the strict walk checked, written as it stands.
pub(super) fn raw(text: &str) -> Option<&RawValue> {
    serde_json::from_str(text).ok()
}

/// One job's text (an object, as [`JobsText::job_texts`] gives) reduced to `keep` of its
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
/// ([`crate::jsonjobs::scan`]): nothing is built for the other keys nor for values no one asks about.
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
/// [`JobsText::job_texts`]) or no key is asked for.
pub fn pick_job_fields<'a, 'k>(bytes: &'a [u8], keys: &'k [&'k str]) -> Option<PickedJobs<'a, 'k>> {
    if keys.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let index = KeyIndex::new(keys);
    walk_jobs(bytes, &mut |_, entries| {
        let base = values.len();
        values.resize(base + keys.len(), None);
        match index.pick(entries, &mut values[base..]) {
            Some(()) => Walk::Continue,
            None => Walk::Stop,
        }
    })?;
    Some(PickedJobs { keys, values })
}
