//! `hermes pause` and `hermes resume`: the global pause of every scheduler on this
//! store (see [`crate::global_pause`]), through the job service.

use super::error::CliError;
use super::Session;

/// Where the pause is kept, in the user's words.
async fn kept_in(session: &Session) -> Result<String, CliError> {
    let info = session.store.describe().await?;
    Ok(match info.backend {
        "postgresql" => format!("the database {} (every host using it)", info.location),
        _ => jobs::store::HomeEstop::of(&session.home.root)
            .path()
            .display()
            .to_string(),
    })
}

pub async fn pause(session: &Session, reason: Option<&str>) -> Result<(), CliError> {
    let (pause, already) = session.service().pause_all(reason).await?;
    let verb = if already {
        "Still paused"
    } else {
        "Hermes paused"
    };
    match &pause.reason {
        Some(reason) => say!("{verb} — reason: {reason}"),
        None => say!("{verb}"),
    }
    say!("  Kept in: {}", kept_in(session).await?);
    say!("  Due jobs are not claimed until `hermes resume`; running jobs and `hermes cron run` go on.");
    Ok(())
}

pub async fn resume(session: &Session) -> Result<(), CliError> {
    if session.service().resume_all().await? {
        say!("Hermes resumed — jobs left due fire at the next pass.");
    } else {
        say!("Hermes is not paused.");
    }
    Ok(())
}
