//! A job as `list --json` shows it: every documented field with its default, then the
//! rest of the record.

use super::*;

impl Job {
    /// The record as `list --json` shows it: every documented field (docs/STORE.md, "Job
    /// record fields") present with its default, in the stored shapes, plus whatever else
    /// the record carries, in that order. Built from the job itself, nothing copied: a
    /// listing of 10,000 jobs serializes each straight from it.
    pub fn normalized(mut self, ctx: &Context) -> NormalizedJob {
        self.heal(ctx);
        let repeat = self.repeat();
        let skills = self.skills();
        let computed = [
            json!(self.id()),
            json!(self.name()),
            json!(self.prompt()),
            json!(skills.first()),
            json!(skills),
            json!(self.no_agent()),
            json!(self.schedule_display(ctx).ok()),
            repeat.to_json(),
            json!(self.enabled()),
            json!(self.state().as_str()),
            json!(self.failure_streak()),
            json!(self.deliver()),
            self.origin().cloned().map_or(Value::Null, Value::Object),
        ];
        let mut computed = computed.into_iter();
        let fields = NORMALIZED_KEYS
            .iter()
            .map(|&key| match key {
                "id" | "name" | "prompt" | "skill" | "skills" | "no_agent" | "schedule_display"
                | "repeat" | "enabled" | "state" | "failure_streak" | "deliver" | "origin" => {
                    computed.next().unwrap_or(Value::Null)
                }
                // Taken, not copied: the record's own entry is skipped when serializing.
                stored => self.record.get_mut(stored).map_or(Value::Null, Value::take),
            })
            .collect();
        NormalizedJob { fields, job: self }
    }
}

/// The keys of [`Job::normalized`] in the order it shows them; the values of the keys
/// it computes come in the same order as in `normalized`'s `computed`.
pub(crate) const NORMALIZED_KEYS: [&str; 30] = [
    "id",
    "name",
    "prompt",
    "skill",
    "skills",
    "model",
    "provider",
    "base_url",
    "script",
    "no_agent",
    "context_from",
    "schedule",
    "schedule_display",
    "repeat",
    "enabled",
    "state",
    "paused_at",
    "paused_reason",
    "created_at",
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "failure_streak",
    "deliver",
    "origin",
    "enabled_toolsets",
    "workdir",
    "timezone",
];

/// A job as `list --json` shows it (see [`Job::normalized`]); serializes as one object.
pub struct NormalizedJob {
    /// The values of [`NORMALIZED_KEYS`], in order.
    fields: Vec<Value>,
    /// The rest of the record: its keys outside [`NORMALIZED_KEYS`] follow, in order.
    job: Job,
}

impl NormalizedJob {
    pub fn id(&self) -> &str {
        self.job.id()
    }

    /// As a JSON object (what the serialized form reads back as).
    pub fn into_record(self) -> Record {
        let mut out: Record = NORMALIZED_KEYS
            .iter()
            .map(|k| k.to_string())
            .zip(self.fields)
            .collect();
        for (key, value) in self.job.record {
            if !NORMALIZED_KEYS.contains(&key.as_str()) {
                out.insert(key, value);
            }
        }
        out
    }
}

impl serde::Serialize for NormalizedJob {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in NORMALIZED_KEYS.iter().zip(&self.fields) {
            map.serialize_entry(key, value)?;
        }
        for (key, value) in &self.job.record {
            if !NORMALIZED_KEYS.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}
