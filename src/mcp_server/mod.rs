//! `hermes cron mcp`: a Model Context Protocol server on stdin/stdout (the official Rust
//! SDK, rmcp) offering one tool, `cronjob`, so a chat agent can schedule, list, change
//! and run jobs — and have a job reply into its own chat. stdout carries the protocol
//! and nothing else: logs go to stderr, and every child a run starts has its stdout
//! piped. Split by concern: [`schema`] (the tool as listed), [`arguments`] (reading a
//! call), [`actions`] (doing it through the `jobs` lifecycle and the scheduler), [`lines`]
//! (the stdio framing: a line that is not JSON gets a parse error).

mod actions;
mod arguments;
#[cfg(test)]
mod field_arguments;
pub mod lines;
mod schema;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::job_service::JobService;
use crate::scheduler::{Scheduler, SchedulerError};
use actions::Cron;
use arguments::Arguments;

const INSTRUCTIONS: &str = "hermes-cron schedules jobs for the Hermes agent. Use the cronjob \
tool: list before acting on a job; pass origin on create to have the job reply into this chat.";

/// The server's state: the tool it lists and the parts its calls use.
struct CronServer {
    tool: Tool,
    cron: Cron,
}

impl ServerHandler for CronServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "hermes-cron",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == schema::TOOL_NAME).then(|| self.tool.clone())
    }

    /// A refused or failed action is a tool result with `isError` (the model reads its
    /// message); only an unknown tool name is a protocol error.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != schema::TOOL_NAME {
            return Err(ErrorData::invalid_params(
                format!(
                    "Unknown tool '{}': this server has one tool, {}",
                    request.name,
                    schema::TOOL_NAME
                ),
                None,
            ));
        }
        let reply = match Arguments::parse(request.arguments) {
            Ok(args) => self.cron.call(args).await,
            Err(error) => actions::Failure::from(error).reply(),
        };
        let failed = reply["success"] == false;
        tracing::debug!(failed, "cronjob call answered");
        Ok(if failed {
            CallToolResult::structured_error(reply)
        } else {
            CallToolResult::structured(reply)
        }
        .into())
    }
}

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP: the client did not initialize: {0}")]
    NotInitialized(String),
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
}

/// Serves MCP on stdin/stdout until the client closes stdin (calls under way finish and
/// are answered first) or `stop` completes (SIGTERM/SIGINT: at once, a run under way is
/// stopped and recorded as interrupted).
pub async fn serve(
    jobs: JobService,
    scheduler: Arc<Scheduler>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), McpError> {
    let server = CronServer {
        tool: schema::cronjob_tool(),
        cron: Cron {
            jobs,
            scheduler: Arc::clone(&scheduler),
        },
    };
    {
        let (input, output) = rmcp::transport::stdio_pipes();
        let (sdk_side, framing) = lines::frame(input, output);
        let running = match server.serve(sdk_side).await {
            Ok(running) => running,
            Err(e) => {
                framing.finish().await;
                return Err(McpError::NotInitialized(e.to_string()));
            }
        };
        let cancel = running.cancellation_token();
        tokio::select! {
            ended = running.waiting() => {
                if let Err(e) = ended {
                    tracing::warn!("MCP server task failed: {e}");
                }
            }
            () = stop => cancel.cancel(),
        }
        framing.finish().await;
        let interrupted = scheduler.interrupt_own_runs().await?;
        if interrupted > 0 {
            tracing::warn!("stopped with {interrupted} run(s) unfinished: recorded as interrupted");
        }
        Ok(())
    }
}
