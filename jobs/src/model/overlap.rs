//! What a job does when an occurrence comes due while its previous run still goes on:
//! `overlap` in the record (docs/SCHEDULES.md, "Overlap"). `skip` (the default, and
//! what a record without the field does) records the occurrence `skipped`; `queue` runs
//! one such occurrence right after the run ends (never more than one waiting); `replace`
//! cancels the running run (recorded `cancelled`) and starts the new one.

use serde_json::Value;

use crate::model::job::Job;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Overlap {
    #[default]
    Skip,
    Queue,
    Replace,
}

impl Overlap {
    pub const ALL: [Overlap; 3] = [Overlap::Skip, Overlap::Queue, Overlap::Replace];

    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Queue => "queue",
            Overlap::Replace => "replace",
        }
    }

    /// Reads a policy as users write it, case-insensitively. A blank text is no policy:
    /// `Ok(None)`, which on an edit clears the field (back to `skip`).
    pub fn parse(text: &str) -> Result<Option<Overlap>, String> {
        let lower = text.trim().to_ascii_lowercase();
        if lower.is_empty() {
            return Ok(None);
        }
        Overlap::ALL
            .into_iter()
            .find(|o| o.as_str() == lower)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "Invalid overlap '{}'. Use skip, queue or replace (empty string restores the default, skip).",
                    text.trim()
                )
            })
    }
}

impl Job {
    /// The job's overlap policy; a missing, null or unknown value reads as `skip`.
    pub fn overlap(&self) -> Overlap {
        match self.get("overlap") {
            Some(Value::String(text)) => Overlap::parse(text).ok().flatten().unwrap_or_default(),
            _ => Overlap::Skip,
        }
    }

    /// Sets `overlap`; `None` removes the field (the default, `skip`).
    pub fn set_overlap(&mut self, overlap: Option<Overlap>) {
        match overlap {
            Some(o) => self.set("overlap", Value::String(o.as_str().to_string())),
            None => self.unset("overlap"),
        }
    }
}
