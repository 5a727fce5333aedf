//! The file store's control room ([`Control`]): the global pause in the Hermes `ESTOP`
//! sentinel, the daemon's `ticker_*` and `daemon.pid` files, and what the store is. This
//! is the only code that reads or writes an `ESTOP` file (Python Hermes 0.22's sentinel:
//! JSON `{"engaged_at", "reason"}`; an empty or unreadable one still pauses). It never
//! decides what a pause stops.

use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};

use crate::estop::{read_sentinel, remove_sentinel, write_sentinel, GlobalPause, SENTINEL};
use crate::jsonfile::write_atomic;
use crate::store::{Beat, Control, Heartbeat, StoreError, StoreInfo};

use super::{io_unavailable, FileStore, Files};

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
