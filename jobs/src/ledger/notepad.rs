//! The per-job notepad (docs/AGENT.md, "The job notepad"): a few keys and values a job
//! keeps across runs (cursors, watermarks), shown to its agent at the top of every
//! prompt. Its limits and its prompt section live here once; [`NotepadBook`] is the
//! SQLite `cron/notepad.db` Python Hermes 0.22 keeps. A write that breaks a limit
//! changes nothing.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, TransactionBehavior};
use serde::Serialize;

use crate::ledger::{in_file, open_table, LedgerError};

/// The largest value, in UTF-8 bytes.
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// The longest key, in characters.
pub const MAX_KEY_CHARS: usize = 128;
/// The most one job keeps, keys and values together, in UTF-8 bytes.
pub const MAX_JOB_BYTES: usize = 64 * 1024;

/// One entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    pub job_id: String,
    pub key: String,
    pub value: String,
    /// When it was last set, as stored.
    pub updated_at: String,
}

impl Note {
    /// What the entry counts toward its job's limit.
    pub fn bytes(&self) -> usize {
        self.key.len() + self.value.len()
    }
}

/// Why a note was not written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotepadError {
    #[error("a notepad needs a job id")]
    NoJob,
    #[error("a notepad key cannot be empty")]
    NoKey,
    #[error("notepad key too long: at most {MAX_KEY_CHARS} characters")]
    KeyTooLong,
    #[error("notepad value too large: at most {MAX_VALUE_BYTES} bytes per key")]
    ValueTooLarge,
    #[error(
        "notepad full: job '{0}' would exceed {MAX_JOB_BYTES} bytes in all; delete unused keys first"
    )]
    Full(String),
    /// The entry holds what the scan of the run's prompt would refuse there.
    #[error("{source} (in the notepad entry '{key}'): nothing was written")]
    Blocked {
        key: String,
        source: crate::checks::threats::PromptBlocked,
    },
}

/// Whether `note` may be written beside entries of its job that take `others` bytes
/// (every entry but the one with its key).
pub fn check(note: &Note, others: usize) -> Result<(), NotepadError> {
    if note.job_id.is_empty() {
        return Err(NotepadError::NoJob);
    }
    if note.key.is_empty() {
        return Err(NotepadError::NoKey);
    }
    if note.key.chars().count() > MAX_KEY_CHARS {
        return Err(NotepadError::KeyTooLong);
    }
    if note.value.len() > MAX_VALUE_BYTES {
        return Err(NotepadError::ValueTooLarge);
    }
    if others + note.bytes() > MAX_JOB_BYTES {
        return Err(NotepadError::Full(note.job_id.clone()));
    }
    // The entry as the prompt shows it, scanned as the run's prompt scans its notepad:
    // refused now, it can never stop a run of the job later.
    crate::checks::threats::scan_injected(&format!("- {}: {}", note.key, note.value)).map_err(
        |source| NotepadError::Blocked {
            key: note.key.clone(),
            source,
        },
    )?;
    Ok(())
}

/// The notepad as the first section of a run's prompt, entries sorted by key; an empty
/// notepad adds nothing, so a job that never uses it gets the prompt it always had.
pub fn prompt_section(job_id: &str, notes: &[Note]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&Note> = notes.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let lines: Vec<String> = sorted
        .iter()
        .map(|n| format!("- {}: {}", n.key, n.value))
        .collect();
    format!(
        "## Job notepad (persistent across runs)\n\
         This durable scratchpad survives between scheduled runs of this job. Update it via the CLI, e.g.:\n\
         `hermes cron notepad {job_id} set <key> <value>` (also: get/delete/list; \
         `hermes cron notepad {job_id} delete <key>` removes an entry).\n\n{}\n\n",
        lines.join("\n")
    )
}

/// `cron/notepad.db`, Python Hermes 0.22's file and table.
pub struct NotepadBook {
    conn: Connection,
    path: PathBuf,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cron_notepad (
     job_id TEXT NOT NULL,
     key TEXT NOT NULL,
     value TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (job_id, key)
);
";

/// Why a notepad write failed: a limit, or the database.
#[derive(Debug, thiserror::Error)]
pub enum NoteWriteError {
    #[error(transparent)]
    Refused(#[from] NotepadError),
    #[error(transparent)]
    Database(#[from] LedgerError),
}

impl NotepadBook {
    pub fn open(path: &Path) -> Result<NotepadBook, LedgerError> {
        Ok(NotepadBook {
            conn: open_table(path, SCHEMA, "cron_notepad", &[])?,
            path: path.to_path_buf(),
        })
    }

    /// Every entry of a job, by key.
    pub fn list(&self, job_id: &str) -> Result<Vec<Note>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT job_id, key, value, updated_at FROM cron_notepad
                 WHERE job_id = ?1 ORDER BY key",
            )
            .map_err(in_file(&self.path))?;
        let rows = stmt
            .query_map([job_id], |r| {
                Ok(Note {
                    job_id: r.get(0)?,
                    key: r.get(1)?,
                    value: r.get(2)?,
                    updated_at: r.get(3)?,
                })
            })
            .map_err(in_file(&self.path))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(in_file(&self.path))?;
        Ok(rows)
    }

    /// Sets one entry; the job's other entries are measured in the same transaction.
    pub fn set(&mut self, note: &Note) -> Result<(), NoteWriteError> {
        check(note, 0)?;
        let wrap = in_file(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&wrap)?;
        let others: i64 = tx
            .query_row(
                "SELECT COALESCE(SUM(LENGTH(CAST(key AS BLOB)) + LENGTH(CAST(value AS BLOB))), 0)
                 FROM cron_notepad WHERE job_id = ?1 AND key <> ?2",
                params![note.job_id, note.key],
                |r| r.get(0),
            )
            .map_err(&wrap)?;
        check(note, usize::try_from(others).unwrap_or(usize::MAX))?;
        tx.execute(
            "INSERT INTO cron_notepad (job_id, key, value, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(job_id, key) DO UPDATE SET value = excluded.value,
                 updated_at = excluded.updated_at",
            params![note.job_id, note.key, note.value, note.updated_at],
        )
        .map_err(&wrap)?;
        tx.commit().map_err(&wrap)?;
        Ok(())
    }

    /// Removes one entry; whether it was there.
    pub fn delete(&self, job_id: &str, key: &str) -> Result<bool, LedgerError> {
        let n = self
            .conn
            .execute(
                "DELETE FROM cron_notepad WHERE job_id = ?1 AND key = ?2",
                params![job_id, key],
            )
            .map_err(in_file(&self.path))?;
        Ok(n > 0)
    }

    /// Removes every entry of a job (it was removed).
    pub fn clear(&self, job_id: &str) -> Result<usize, LedgerError> {
        self.conn
            .execute("DELETE FROM cron_notepad WHERE job_id = ?1", [job_id])
            .map_err(in_file(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(key: &str, value: &str) -> Note {
        Note {
            job_id: "abc".into(),
            key: key.into(),
            value: value.into(),
            updated_at: "t".into(),
        }
    }

    #[test]
    fn limits_are_checked_before_anything_is_written() {
        assert_eq!(check(&note("", "v"), 0), Err(NotepadError::NoKey));
        assert_eq!(
            check(&note(&"k".repeat(129), "v"), 0),
            Err(NotepadError::KeyTooLong)
        );
        assert!(check(&note(&"é".repeat(128), "v"), 0).is_ok());
        assert_eq!(
            check(&note("k", &"v".repeat(MAX_VALUE_BYTES + 1)), 0),
            Err(NotepadError::ValueTooLarge)
        );
        assert_eq!(
            check(&note("k", "v"), MAX_JOB_BYTES - 1),
            Err(NotepadError::Full("abc".into()))
        );
    }

    #[test]
    fn the_prompt_section_lists_entries_by_key_and_is_empty_without_any() {
        assert_eq!(prompt_section("abc", &[]), "");
        let section = prompt_section("abc", &[note("b", "2"), note("a", "1")]);
        assert!(section.starts_with("## Job notepad (persistent across runs)\n"));
        assert!(section.contains("`hermes cron notepad abc set <key> <value>`"));
        assert!(section.ends_with("\n\n- a: 1\n- b: 2\n\n"), "{section}");
    }
}
