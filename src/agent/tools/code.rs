//! `execute_code` (Hermes' `tools/code_execution_tool.py`: same name, `{code}` schema and
//! result fields): a Python script run with `python3` in the job's work directory under
//! the guards of `child` (credential-free environment, own process group killed at the
//! timeout, output capped). Offered to a cron run only with `approvals.cron_mode:
//! approve`, as Hermes allows it; the `hermes_tools` import of Hermes' sandbox is not here.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::child::{self, Child, Ended};
use super::{error, ToolContext};
use crate::agent::model_api::ToolSpec;

/// Hermes' defaults: 5 minutes (`code_execution.timeout`), 50 KB of stdout kept as
/// 40 % head and 60 % tail.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
const STDOUT_HEAD: usize = 20_000;
const STDOUT_TAIL: usize = 30_000;

pub fn spec(timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: "execute_code".into(),
        description: std::borrow::Cow::Owned(format!(
            "Run a Python script (python3) and return what it prints. Use this when you need processing logic between steps: filter or reduce large data before it enters your context, branch on results, or loop (process N files, retry on failure).\n\nUse normal tool calls instead when a single call with no processing will do.\n\nLimits: {}-second timeout, 50KB stdout cap. The script runs in the job's working directory, so relative paths work like in terminal(). Tools are not importable from the script (no hermes_tools module): use the Python standard library and subprocess.\n\nPrint your final result to stdout.",
            timeout.as_secs()
        )),
        parameters: json!({"type": "object", "properties": {
            "code": {"type": "string", "description": "Python code to execute. Print your final result to stdout."}
        }, "required": ["code"]}),
    }
}

/// One call of `execute_code`.
pub async fn run(args: &Value, ctx: &ToolContext) -> String {
    let code = args.get("code").and_then(Value::as_str).unwrap_or("");
    if code.trim().is_empty() {
        return error("No code provided.");
    }
    let started = Instant::now();
    let seconds = || (started.elapsed().as_secs_f64() * 100.0).round() / 100.0;
    let script = Child {
        program: "python3",
        args: &["-"],
        stdin: Some(code),
        timeout: ctx.code_timeout,
        head: STDOUT_HEAD,
        tail: STDOUT_TAIL,
        keep_alive: true,
    };
    match child::run(script, ctx).await {
        Err(why) => json!({"status": "error", "error": why, "tool_calls_made": 0, "duration_seconds": seconds()}).to_string(),
        Ok(Ended::TimedOut) => {
            let why = format!(
                "Script timed out after {}s and was killed.",
                ctx.code_timeout.as_secs()
            );
            json!({
                "status": "timeout",
                "output": format!("⏰ {why}"),
                "exit_code": -1,
                "tool_calls_made": 0,
                "duration_seconds": seconds(),
                "error": why,
            })
            .to_string()
        }
        Ok(Ended::Exited { stdout, stderr, code }) => {
            let output = stdout.text();
            let stderr = stderr.text();
            let exit_code = code.unwrap_or(-1);
            let mut result = json!({
                "status": "success",
                "output": output,
                "exit_code": exit_code,
                "tool_calls_made": 0,
                "duration_seconds": seconds(),
                "stdout_truncated": stdout.total > stdout.head.len() + stdout.tail.len(),
                "stdout_bytes_captured": stdout.head.len() + stdout.tail.len(),
                "stdout_bytes_total": stdout.total,
            });
            if exit_code != 0 {
                result["status"] = json!("error");
                result["error"] = json!(if stderr.is_empty() {
                    format!("Script exited with code {exit_code}")
                } else {
                    stderr.clone()
                });
                if !stderr.is_empty() {
                    result["output"] = json!(format!("{output}\n--- stderr ---\n{stderr}"));
                }
            }
            result.to_string()
        }
    }
}
