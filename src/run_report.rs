//! What one finished run looked like: the scheduler makes it, the job service hands it
//! to the doors (`hermes cron run`, `replay`, `redeliver`, the MCP tool). Declared here,
//! beside both, so that the job service need not import the scheduler.

use jobs::ledger::RunStatus;

/// What one finished run looked like, for logs and `hermes cron run`.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub job_id: String,
    pub job_name: String,
    pub occurrence: String,
    pub status: RunStatus,
    pub error: Option<String>,
    /// Where the output document was saved.
    pub output: Option<String>,
    pub response: Option<String>,
    /// What delivery did ("local", "silent", "sent: telegram:…", or the failure).
    pub delivery: Option<String>,
}
