//! The global pause (`hermes pause` / `hermes resume`, docs/COMMANDS.md): while it is
//! engaged no scheduler claims due jobs. On a Hermes home it is the sentinel file
//! `$HERMES_HOME/ESTOP` Python Hermes 0.22 writes — JSON `{"engaged_at", "reason"}`, where
//! an empty or unreadable file still counts as engaged (fail safe: `touch ESTOP` pauses).
//! This module reads and writes that file; it never decides what a pause stops.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in a Hermes home.
pub const SENTINEL: &str = "ESTOP";

/// An engaged pause: when and why, as far as anyone said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalPause {
    pub engaged_at: Option<String>,
    pub reason: Option<String>,
}

/// The pause the sentinel at `path` holds, `None` when there is none. A file that is
/// empty, not JSON, or cannot be read is a pause without a time or reason; so is a path
/// whose existence cannot even be checked (a pause is never missed by accident).
pub fn read_sentinel(path: &Path) -> Option<GlobalPause> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return Some(GlobalPause::default()),
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let text = text.trim_start_matches('\u{feff}');
    let pause = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .filter(serde_json::Value::is_object)
        .map(|value| {
            let field = |key: &str| {
                value
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            GlobalPause {
                engaged_at: field("engaged_at"),
                reason: field("reason"),
            }
        });
    Some(pause.unwrap_or_default())
}

/// Writes the sentinel at `path` as Python Hermes does (indented JSON, a final newline),
/// 0600, through a temp file renamed over it: a symlink planted at `path` (to another
/// file, or dangling) is replaced, never written through.
pub fn write_sentinel(path: &Path, pause: &GlobalPause) -> std::io::Result<()> {
    let body = serde_json::json!({"engaged_at": pause.engaged_at, "reason": pause.reason});
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    crate::jsonfile::write_atomic(path, format!("{text}\n").as_bytes()).map_err(|e| match e {
        crate::jsonfile::DocumentError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

/// Removes the sentinel at `path`; whether there was one.
pub fn remove_sentinel(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_corrupt_sentinel_still_pauses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SENTINEL);
        assert_eq!(read_sentinel(&path), None);
        std::fs::write(&path, "").unwrap();
        assert_eq!(read_sentinel(&path), Some(GlobalPause::default()));
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(read_sentinel(&path), Some(GlobalPause::default()));
        let pause = GlobalPause {
            engaged_at: Some("2026-03-01T10:00:00+00:00".into()),
            reason: Some("deploy".into()),
        };
        write_sentinel(&path, &pause).unwrap();
        assert_eq!(read_sentinel(&path), Some(pause));
        assert!(std::fs::read_to_string(&path).unwrap().starts_with(
            "{\n  \"engaged_at\": \"2026-03-01T10:00:00+00:00\",\n  \"reason\": \"deploy\"\n}"
        ));
        assert!(remove_sentinel(&path).unwrap());
        assert!(!remove_sentinel(&path).unwrap());
    }
}
