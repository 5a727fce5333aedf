//! Output documents: one Markdown file per run under `cron/output/<job_id>/`, named by
//! the run's local time, written atomically, the newest `cron.output_retention` kept.
//! Never writes outside the job's own directory (ids are checked to be path-safe).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::jsonjobs::{write_atomic, DocumentError};
use crate::model::job::is_safe_id;

/// What one run produced, in the words of the document.
#[derive(Debug, Clone)]
pub struct OutputDocument<'a> {
    pub job_id: &'a str,
    pub job_name: &'a str,
    pub schedule: &'a str,
    pub run_time: DateTime<Utc>,
    pub zone: Tz,
    pub prompt: &'a str,
    /// `Ok(response)` or `Err(error text)`.
    pub result: Result<&'a str, &'a str>,
    /// A run the agent did not carry out (a monitor that saw no change, a blocked
    /// configuration): the document is its status lines, as Hermes 0.22 writes them,
    /// then the result's text, instead of a prompt and a response.
    pub gate: Option<Gate<'a>>,
}

/// The status lines of a run stopped before its agent.
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    /// `**Mode:**` (e.g. `monitor`), when the job runs in one.
    pub mode: Option<&'a str>,
    /// `**Status:**`, e.g. `no_change (agent run suppressed)`. Readers of earlier output
    /// skip a document whose status starts with `no_change` or `silent`.
    pub status: &'a str,
}

impl OutputDocument<'_> {
    /// The document's name without extension: the run's local time,
    /// `YYYY-MM-DD_HH-MM-SS`, so names sort by time.
    pub fn file_stem(&self) -> String {
        self.run_time
            .with_timezone(&self.zone)
            .format("%Y-%m-%d_%H-%M-%S")
            .to_string()
    }

    pub fn render(&self) -> String {
        let failed = if self.result.is_err() {
            " (FAILED)"
        } else {
            ""
        };
        let (heading, body) = match self.result {
            Ok(response) => ("Response", response),
            Err(error) => ("Error", error),
        };
        let time = schedules::format_instant(self.run_time, self.zone);
        if let Some(gate) = self.gate {
            let mode = gate
                .mode
                .map(|mode| format!("**Mode:** {mode}\n"))
                .unwrap_or_default();
            let body = match body.trim() {
                "" => String::new(),
                text => format!("\n{text}\n"),
            };
            return format!(
                "# Cron Job: {name}{failed}\n\n**Job ID:** {id}\n**Run Time:** {time}\n{mode}**Status:** {status}\n{body}",
                name = self.job_name,
                id = self.job_id,
                status = gate.status,
            );
        }
        format!(
            "# Cron Job: {name}{failed}\n\n**Job ID:** {id}\n**Run Time:** {time}\n**Schedule:** {schedule}\n\n## Prompt\n\n{prompt}\n\n## {heading}\n\n{body}\n",
            name = self.job_name,
            id = self.job_id,
            schedule = self.schedule,
            prompt = self.prompt,
        )
    }
}

fn unsafe_id(dir: &Path, id: &str) -> DocumentError {
    DocumentError::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("job id '{id}' is not a safe file name"),
        ),
    }
}

/// An output document rendered and owning its text, ready to be written (on whichever
/// thread does the writing).
#[derive(Debug, Clone)]
pub struct RenderedOutput {
    pub job_id: String,
    /// The file name without its extension ([`OutputDocument::file_stem`]).
    pub stem: String,
    pub text: String,
}

impl OutputDocument<'_> {
    pub fn rendered(&self) -> RenderedOutput {
        RenderedOutput {
            job_id: self.job_id.to_string(),
            stem: self.file_stem(),
            text: self.render(),
        }
    }
}

/// Writes the document into `output_root/<job_id>/` and prunes to `keep` documents.
/// Returns the new file's path.
pub fn save_output(
    output_root: &Path,
    doc: &OutputDocument<'_>,
    keep: usize,
) -> Result<PathBuf, DocumentError> {
    save_rendered(output_root, &doc.rendered(), keep)
}

/// [`save_output`] of a document rendered already.
pub fn save_rendered(
    output_root: &Path,
    doc: &RenderedOutput,
    keep: usize,
) -> Result<PathBuf, DocumentError> {
    if !is_safe_id(&doc.job_id) {
        return Err(unsafe_id(output_root, &doc.job_id));
    }
    let dir = output_root.join(&doc.job_id);
    let stamp = &doc.stem;
    let mut path = dir.join(format!("{stamp}.md"));
    let mut n = 1;
    while path.exists() {
        path = dir.join(format!("{stamp}-{n}.md"));
        n += 1;
    }
    write_atomic(&path, doc.text.as_bytes())?;
    prune_outputs(&dir, keep)?;
    Ok(path)
}

/// The file beside a monitor job's documents that holds the output its source last
/// changed to (Hermes 0.22's name): not a document, so never listed or pruned as one.
pub const MONITOR_SNAPSHOT_FILE: &str = "monitor_last_output.txt";

/// The job's documents, oldest first (names sort by time).
pub fn list_outputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn prune_outputs(dir: &Path, keep: usize) -> Result<(), DocumentError> {
    let files = list_outputs(dir);
    let excess = files.len().saturating_sub(keep.max(1));
    for old in &files[..excess] {
        if let Err(source) = std::fs::remove_file(old) {
            if source.kind() != std::io::ErrorKind::NotFound {
                return Err(DocumentError::Io {
                    path: old.clone(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// The text of the note left in a missed one-shot's output directory, so it tells the
/// user what happened to it (`scheduled` is the due time as shown to the user).
pub fn missed_note(scheduled: &str) -> String {
    format!(
        "missed: this one-shot was due at {scheduled} but the scheduler was not running; it was more than 120 s late and was not run."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_render_and_are_pruned_to_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for n in 0..4 {
            let doc = OutputDocument {
                job_id: "abc123abc123",
                job_name: "inbox",
                schedule: "every 120m",
                run_time: t0 + chrono::Duration::seconds(n),
                zone: chrono_tz::Europe::Berlin,
                prompt: "summarize",
                result: if n == 3 { Err("boom") } else { Ok("all quiet") },
                gate: None,
            };
            save_output(dir.path(), &doc, 2).unwrap();
        }
        let files = list_outputs(&dir.path().join("abc123abc123"));
        let names: Vec<_> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, ["2026-11-22_10-00-02.md", "2026-11-22_10-00-03.md"]);
        let last = std::fs::read_to_string(&files[1]).unwrap();
        assert!(last.starts_with("# Cron Job: inbox (FAILED)\n"));
        assert!(last.contains("**Job ID:** abc123abc123\n**Run Time:** 2026-11-22T10:00:03+01:00\n**Schedule:** every 120m"));
        assert!(last.contains("## Prompt\n\nsummarize\n\n## Error\n\nboom\n"));
    }

    #[test]
    fn a_gated_run_writes_its_status_lines_as_hermes_0_22_does() {
        let doc = OutputDocument {
            job_id: "abc123abc123",
            job_name: "watch",
            schedule: "every 60m",
            run_time: DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
            zone: chrono_tz::UTC,
            prompt: "p",
            result: Ok(""),
            gate: Some(Gate {
                mode: Some("monitor"),
                status: "no_change (agent run suppressed)",
            }),
        };
        assert_eq!(
            doc.render(),
            "# Cron Job: watch\n\n**Job ID:** abc123abc123\n**Run Time:** 2026-11-22T09:00:00+00:00\n**Mode:** monitor\n**Status:** no_change (agent run suppressed)\n"
        );
        let failed = OutputDocument {
            result: Err("HTTP 503"),
            gate: Some(Gate {
                mode: Some("monitor"),
                status: "monitor source failed",
            }),
            ..doc
        };
        assert!(failed
            .render()
            .ends_with("**Status:** monitor source failed\n\nHTTP 503\n"));
    }

    #[test]
    fn unsafe_ids_are_refused_before_touching_files() {
        let dir = tempfile::tempdir().unwrap();
        let doc = OutputDocument {
            job_id: "../escape",
            job_name: "x",
            schedule: "x",
            run_time: Utc::now(),
            zone: chrono_tz::UTC,
            prompt: "",
            result: Ok("x"),
            gate: None,
        };
        assert!(save_output(dir.path(), &doc, 5).is_err());
        assert!(!dir.path().join("../escape").exists());
    }
}
