//! The global pause (`hermes pause` / `hermes resume`, docs/COMMANDS.md): engaged, no
//! scheduler claims due jobs; they stay due and fire on the first pass after the resume.
//! It is engaged when the store says so ([`Control::global_pause`]: this home's `ESTOP` on
//! jobs.json, the database for every host sharing it on PostgreSQL) or when a Hermes
//! `ESTOP` of this home or, for a profile, of the Hermes root exists ([`HomeEstop`],
//! Python Hermes 0.22's sentinel: `touch ~/.hermes/ESTOP` pauses, whatever the store).
//! Runs in progress and manual runs are never stopped by it; this module only says
//! whether it holds, and never touches a file itself.

use std::path::Path;

use chrono::{DateTime, Utc};
use jobs::estop::GlobalPause;
use jobs::store::{Control, HomeEstop};
use jobs::StoreError;

/// The pause that holds this home's scheduler, if any.
pub async fn engaged(home: &Path, store: &dyn Control) -> Result<Option<GlobalPause>, StoreError> {
    if let Some(pause) = store.global_pause().await? {
        return Ok(Some(pause));
    }
    Ok(HomeEstop::of(home).engaged())
}

/// Engages the pause where the store keeps it: this home's `ESTOP` on jobs.json, the
/// database on PostgreSQL (every host, and a `hermes resume` on any of them lifts it).
/// Returns the pause and whether one was engaged already.
pub async fn engage(
    home: &Path,
    store: &dyn Control,
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
pub async fn lift(home: &Path, store: &dyn Control) -> Result<bool, StoreError> {
    let lifted = store.set_global_pause(None).await?;
    Ok(HomeEstop::of(home).lift()? || lifted)
}
