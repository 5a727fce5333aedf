//! The global pause (`hermes pause` / `hermes resume`, docs/COMMANDS.md): engaged, no
//! scheduler claims due jobs; they stay due and fire on the first pass after the resume.
//! It is engaged when the store says so (on PostgreSQL: for every host sharing the
//! database) or when a Hermes `ESTOP` file exists in this home or, for a profile, in the
//! Hermes root (Python Hermes 0.22's sentinel: `touch ~/.hermes/ESTOP` pauses). Runs in
//! progress and manual runs are never stopped by it; this module only says whether it
//! holds.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use jobs::estop::{read_sentinel, remove_sentinel, GlobalPause, SENTINEL};
use jobs::store::Store;
use jobs::StoreError;

/// The `ESTOP` files that pause this home: its own, then the Hermes root's when the home
/// is a profile (`<root>/profiles/<name>`).
fn sentinels(home: &Path) -> Vec<PathBuf> {
    let mut paths = vec![home.join(SENTINEL)];
    let parent = home.parent();
    if parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "profiles")
    {
        if let Some(root) = parent.and_then(Path::parent) {
            paths.push(root.join(SENTINEL));
        }
    }
    paths
}

/// The pause that holds this home's scheduler, if any.
pub async fn engaged(home: &Path, store: &dyn Store) -> Result<Option<GlobalPause>, StoreError> {
    if let Some(pause) = store.global_pause().await? {
        return Ok(Some(pause));
    }
    Ok(sentinels(home).iter().find_map(|path| read_sentinel(path)))
}

/// Engages the pause where the store keeps it: this home's `ESTOP` on jobs.json, the
/// database on PostgreSQL (every host, and a `hermes resume` on any of them lifts it).
/// Returns the pause and whether one was engaged already.
pub async fn engage(
    home: &Path,
    store: &dyn Store,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(GlobalPause, bool), StoreError> {
    let already = engaged(home, store).await?.is_some();
    let pause = GlobalPause {
        engaged_at: Some(schedules::format_instant(now, chrono_tz::UTC)),
        reason: reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string),
    };
    store.set_global_pause(Some(&pause)).await?;
    Ok((pause, already))
}

/// Lifts the pause everywhere it is kept; whether one was engaged.
pub async fn lift(home: &Path, store: &dyn Store) -> Result<bool, StoreError> {
    let mut lifted = store.set_global_pause(None).await?;
    for path in sentinels(home) {
        lifted |= remove_sentinel(&path).map_err(|e| cannot(&path, e))?;
    }
    Ok(lifted)
}

fn cannot(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!(
        "cannot remove {}: {e}; check the permissions of the Hermes home",
        path.display()
    ))
}
