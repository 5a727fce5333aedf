//! `hermes cron sandbox explain JOB [--json]` (docs/SAFETY.md, "Sandbox").

use jobs::find_job;

use super::{CliError, Session};
use crate::sandbox::explain;

pub async fn explain(session: &Session, reference: &str, as_json: bool) -> Result<(), CliError> {
    let jobs = session.store.load_jobs(&session.ctx).await?;
    let job = find_job(&jobs, reference.trim())?;
    let policy =
        explain::describe(job, &session.config, &session.home.root).map_err(CliError::user)?;
    if as_json {
        say!(
            "{}",
            serde_json::to_string_pretty(&policy).unwrap_or_default()
        );
    } else {
        say!("{}", explain::text(&policy));
    }
    Ok(())
}
