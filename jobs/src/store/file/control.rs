//! The file store's control room ([`Control`]): the global pause in the Hermes `ESTOP`
//! sentinel, the daemon's `ticker_*` and `daemon.pid` files, and what the store is. This
//! is the only code that reads or writes an `ESTOP` file (Python Hermes 0.22's sentinel:
//! JSON `{"engaged_at", "reason"}`; an empty or unreadable one still pauses). It never
//! decides what a pause stops.

use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};

use crate::jsonjobs::write_atomic;
use crate::store::estop::GlobalPause;
use crate::store::{Beat, Control, Heartbeat, StoreError, StoreInfo};

use super::{io_unavailable, FileStore, Files};

/// The sentinel's name in a Hermes home.
const SENTINEL: &str = "ESTOP";

/// The `ESTOP` files that pause the scheduler of a Hermes home, whatever its store: its
/// own, then the Hermes root's when the home is a profile (`<root>/profiles/<name>`).
/// Python Hermes 0.22's switch (`touch ~/.hermes/ESTOP` pauses), obeyed beside a store
/// that keeps its pause elsewhere (a database); on jobs.json the home's own is where the
/// store keeps it.
#[derive(Debug, Clone)]
pub struct HomeEstop {
    own: PathBuf,
    root: Option<PathBuf>,
}

impl HomeEstop {
    /// The sentinels of the home at `home`.
    pub fn of(home: &Path) -> HomeEstop {
        let parent = home.parent();
        let root = parent
            .filter(|p| p.file_name().is_some_and(|n| n == "profiles"))
            .and_then(Path::parent)
            .map(|root| root.join(SENTINEL));
        HomeEstop {
            own: home.join(SENTINEL),
            root,
        }
    }

    /// The home's own `ESTOP` (the one `hermes pause` writes on jobs.json).
    pub fn path(&self) -> &Path {
        &self.own
    }

    /// The pause the first sentinel present holds, if any.
    pub fn engaged(&self) -> Option<GlobalPause> {
        self.paths().find_map(read_sentinel)
    }

    /// Removes every sentinel; whether there was one.
    pub fn lift(&self) -> Result<bool, StoreError> {
        let mut lifted = false;
        for path in self.paths() {
            lifted |= remove_sentinel(path).map_err(|e| {
                StoreError::Unavailable(format!(
                    "cannot remove {}: {e}; check the permissions of the Hermes home",
                    path.display()
                ))
            })?;
        }
        Ok(lifted)
    }

    fn paths(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.own.as_path()).chain(self.root.as_deref())
    }
}

/// The pause the sentinel at `path` holds, `None` when there is none. A file that is
/// empty, not JSON, or cannot be read is a pause without a time or reason; so is a path
/// whose existence cannot even be checked (a pause is never missed by accident).
fn read_sentinel(path: &Path) -> Option<GlobalPause> {
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
fn write_sentinel(path: &Path, pause: &GlobalPause) -> std::io::Result<()> {
    let body = serde_json::json!({"engaged_at": pause.engaged_at, "reason": pause.reason});
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    crate::jsonjobs::write_atomic(path, format!("{text}\n").as_bytes()).map_err(|e| match e {
        crate::jsonjobs::DocumentError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

/// Removes the sentinel at `path`; whether there was one.
fn remove_sentinel(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl Files {
    /// The home's `ESTOP`, beside `cron/`.
    fn sentinel_path(&self) -> PathBuf {
        self.cron_dir()
            .parent()
            .unwrap_or(self.cron_dir())
            .join(SENTINEL)
    }

    fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let path = self.sentinel_path();
        let was = read_sentinel(&path).is_some();
        match pause {
            Some(pause) => write_sentinel(&path, pause),
            None => remove_sentinel(&path).map(|_| ()),
        }
        .map_err(|e| io_unavailable(&path, e))?;
        Ok(was)
    }

    fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let (name, text) = match beat {
            Beat::Started { pid } => ("daemon.pid", format!("{pid}\n")),
            Beat::Alive(at) => ("ticker_heartbeat", epoch_text(*at)),
            Beat::PassSucceeded(at) => ("ticker_last_success", epoch_text(*at)),
            Beat::PassFailed(at, error) => (
                "ticker_last_error",
                format!("{}\n{error}\n", epoch_text(*at)),
            ),
            Beat::Stopped => ("ticker_heartbeat", "0".to_string()),
        };
        write_atomic(&self.cron_dir().join(name), text.as_bytes())?;
        Ok(())
    }

    fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        let read = |name: &str| std::fs::read_to_string(self.cron_dir().join(name)).ok();
        let last_error = read("ticker_last_error").and_then(|text| {
            let at = read_epoch(&text)?;
            let why = text.lines().skip(1).collect::<Vec<_>>().join(" ");
            Some((at, why.trim().to_string()))
        });
        let alive = read("ticker_heartbeat");
        Ok(Heartbeat {
            seen: alive.is_some(),
            alive_at: alive.as_deref().and_then(read_epoch),
            pid: read("daemon.pid").and_then(|t| t.trim().parse().ok()),
            last_success: read("ticker_last_success").as_deref().and_then(read_epoch),
            last_error,
            hosts: Vec::new(),
            failovers: Vec::new(),
        })
    }

    fn describe(&self) -> Result<StoreInfo, StoreError> {
        Ok(StoreInfo {
            backend: "jobs.json",
            location: self.jobs.jobs_path().display().to_string(),
            schema_version: None,
        })
    }
}

#[async_trait::async_trait]
impl Control for FileStore {
    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        self.blocking(|files| Ok(read_sentinel(&files.sentinel_path())))
            .await
    }

    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let pause = pause.cloned();
        self.blocking(move |files| files.set_global_pause(pause.as_ref()))
            .await
    }

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let beat = beat.clone();
        self.blocking(move |files| files.beat(&beat)).await
    }

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        self.blocking(Files::heartbeat).await
    }

    async fn describe(&self) -> Result<StoreInfo, StoreError> {
        self.blocking(Files::describe).await
    }
}

/// `<epoch seconds>.<millis>`, the shape the ticker files hold.
fn epoch_text(t: DateTime<Utc>) -> String {
    format!("{}.{:03}", t.timestamp(), t.timestamp_subsec_millis())
}

fn read_epoch(text: &str) -> Option<DateTime<Utc>> {
    let seconds = text.lines().next()?.trim().parse::<f64>().ok()?;
    if seconds.is_nan() || seconds <= 0.0 {
        return None;
    }
    Utc.timestamp_millis_opt((seconds * 1000.0) as i64).single()
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

    #[test]
    fn a_profile_is_paused_by_its_own_sentinel_and_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("profiles").join("work");
        let estop = HomeEstop::of(&home);
        assert_eq!(estop.path(), home.join(SENTINEL));
        assert_eq!(estop.engaged(), None);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(dir.path().join(SENTINEL), "").unwrap();
        assert_eq!(estop.engaged(), Some(GlobalPause::default()));
        assert!(estop.lift().unwrap());
        assert!(!estop.lift().unwrap());
        assert!(!dir.path().join(SENTINEL).exists());
        assert_eq!(HomeEstop::of(dir.path()).root, None);
    }
}
