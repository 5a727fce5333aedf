//! `mcp`: the MCP server on stdin/stdout, with this home's job service and a scheduler
//! of its own for the tool's runs.

use std::sync::Arc;

use super::scheduler_cmd::{runtime, scheduler_for, stop_signal};
use super::Session;
use crate::error::CliError;

/// Serves until the client closes stdin or SIGTERM/SIGINT arrives; a run still going
/// then is recorded as interrupted.
pub fn mcp(session: Session) -> Result<(), CliError> {
    let scheduler = scheduler_for(&session, None)?;
    let jobs = session.service();
    runtime()?.block_on(async move {
        let stop = stop_signal().await?;
        crate::mcp_server::serve(jobs, Arc::clone(&scheduler), stop)
            .await
            .map_err(|e| CliError::user(e.to_string()))?;
        let interrupted = scheduler.interrupt_own_runs()?;
        if interrupted > 0 {
            tracing::warn!("stopped with {interrupted} run(s) unfinished: recorded as interrupted");
        }
        Ok(())
    })
}
