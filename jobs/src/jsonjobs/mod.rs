//! jobs.json, the file store's job document shared with Python Hermes: the one module
//! that reads and writes its text. Records stay raw JSON maps so keys written by other
//! Hermes builds survive every rewrite; what a field means is the model's (the reader's
//! modes ask it). It must never overwrite a file it could not read, and nothing outside
//! this module opens jobs.json for writing.
//!
//! - [`reader`]: [`JobsText`], the one reader: every question asked of the jobs (the
//!   jobs, a view, the due probe, both listings, the layout, the stored jobs a change
//!   rewrites around) is a mode of it, each the strict walk first and the tolerant
//!   reader for anything else;
//! - [`locked`]: [`JsonFile`], the store of one home and its read-modify-writes under
//!   `.jobs.lock`;
//! - [`read`]: the tolerant whole-document reader ([`parse_document`]) and its views,
//!   the reader's long way;
//! - [`repair`]: what that reader mends (raw control characters, an id-keyed map) and
//!   how it reports a file it cannot read;
//! - [`scan`]: the strict walk over a canonical store's text that builds no values, the
//!   reader's short way;
//! - [`listing`]: the values the listing modes read from a job's text, and how they
//!   write them;
//! - [`write`]: the one way jobs.json is written: one rendering of the top level for a
//!   whole document and for a change of a few jobs, and atomic writes.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod listing;
mod locked;
mod read;
mod reader;
mod repair;
pub mod scan;
mod write;

pub(crate) use locked::ensure_private_dir;
pub use locked::{JsonFile, StoredJob, Written};
pub use read::{parse_document, parse_document_keeping};
pub use reader::{pick_job_fields, picked_record, record_keeping, JobsText, PickedJobs};
pub use write::{render_document, write_atomic};

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

#[cfg(test)]
mod tests;
