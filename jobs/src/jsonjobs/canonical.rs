//! A store in the canonical shape (valid UTF-8 JSON without BOM, an object whose `jobs`
//! is a list of objects) read as text: each job its own JSON text, or the values of a
//! few keys of every job, without building the rest.

use serde_json::Value;

use super::read::view;
use super::repair::kind_of;
use super::Record;

/// A store in the canonical shape (valid UTF-8 JSON without BOM, an object whose `jobs`
/// is a list of objects) as text slices; `None` for anything else.
pub(super) fn canonical_parts(bytes: &[u8]) -> Option<raw_view::Parts<'_>> {
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
    if crate::jsonjobs::scan::nests_too_deep(bytes) {
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
/// [`canonical_job_texts`]) or no key is asked for.
pub fn pick_job_fields<'a, 'k>(bytes: &'a [u8], keys: &'k [&'k str]) -> Option<PickedJobs<'a, 'k>> {
    if keys.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let index = crate::jsonjobs::scan::KeyIndex::new(keys);
    crate::jsonjobs::scan::walk_jobs(bytes, &mut |_, entries| {
        let base = values.len();
        values.resize(base + keys.len(), None);
        match index.pick(entries, &mut values[base..]) {
            Some(()) => crate::jsonjobs::scan::Walk::Continue,
            None => crate::jsonjobs::scan::Walk::Stop,
        }
    })?;
    Some(PickedJobs { keys, values })
}

/// The top level of a canonical store as text slices: the `jobs` entries and the other keys.
pub(super) mod raw_view {
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
