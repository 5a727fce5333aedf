//! The tolerant whole-document reader of jobs.json: every shape Python Hermes or a hand
//! edit leaves is read (and marked `repaired` when the next save must rewrite it), or
//! refused with a one-line error naming the position.

use std::path::Path;

use serde_json::Value;

use super::repair::{
    escape_control_chars_in_strings, kind_of, records_from_id_map, records_from_list,
    unreadable_from_json,
};
use super::{DocumentError, StoreDocument};

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
pub(super) mod view {
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
