//! `execute_code` (Hermes' `tools/code_execution_tool.py`: same name, `{code}` schema and
//! result fields): a Python script run with `python3` in the job's work directory under
//! the guards of `child` (credential-free environment, own process group killed at the
//! timeout, output capped). Offered to a cron run only with `approvals.cron_mode:
//! approve`, as Hermes allows it; the `hermes_tools` import of Hermes' sandbox is not here.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::child::{self, Child, Ended};
use super::{error, Schema, Tool, ToolContext, ToolFuture};

/// Hermes' defaults: 5 minutes (`code_execution.timeout`), 50 KB of stdout kept as
/// 40 % head and 60 % tail.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
const STDOUT_HEAD: usize = 20_000;
const STDOUT_TAIL: usize = 30_000;

pub struct ExecuteCode;

impl Tool for ExecuteCode {
    fn schema(&self, ctx: &ToolContext) -> Schema {
        Schema::new(
            "execute_code",
            "code_execution",
            description(ctx.code_timeout),
            parameters(),
        )
    }

    /// Arbitrary code runs only when the user allowed it (`approvals.cron_mode: approve`).
    fn offered(&self, ctx: &ToolContext) -> bool {
        ctx.execute_code
    }

    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(run(args, ctx))
    }
}

/// One call of `execute_code`.
async fn run(args: &Value, ctx: &ToolContext) -> String {
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
        Err(why @ child::ChildError::Unconfined(_)) => super::refused(why.to_string()),
        Err(why) => json!({"status": "error", "error": why.to_string(), "tool_calls_made": 0, "duration_seconds": seconds()}).to_string(),
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

/// What the model reads about `execute_code`: Hermes' words, with this run's time limit.
fn description(timeout: Duration) -> String {
    format!(
        "Run a Python script (python3) and return what it prints. Use this when you need processing logic between steps: filter or reduce large data before it enters your context, branch on results, or loop (process N files, retry on failure).\n\nUse normal tool calls instead when a single call with no processing will do.\n\nLimits: {}-second timeout, 50KB stdout cap. The script runs in the job's working directory, so relative paths work like in terminal(). Tools are not importable from the script (no hermes_tools module): use the Python standard library and subprocess.\n\nPrint your final result to stdout.",
        timeout.as_secs()
    )
}

/// The JSON schema of `execute_code`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "code": {"type": "string", "description": "Python code to execute. Print your final result to stdout."}
    }, "required": ["code"]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::context;
    use crate::tools::{dispatch, offered};

    #[tokio::test]
    async fn execute_code_runs_python_and_reports_like_hermes() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), Duration::from_secs(20));
        let offered = offered(None, &[], &ctx);
        let call = |code: &str| {
            let args = json!({"code": code}).to_string();
            let offered = offered.clone();
            let ctx = ctx.clone();
            async move {
                serde_json::from_str::<Value>(
                    &dispatch("execute_code", &args, &offered, &ctx).await,
                )
                .unwrap()
            }
        };
        let v = call("import os\nprint(os.getcwd())\nprint(sum(range(5)))").await;
        assert_eq!(v["status"], "success", "{v}");
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(v["output"], format!("{}\n10\n", cwd.display()));
        assert_eq!(v["exit_code"], 0);
        let v = call("print('partial')\nraise SystemExit('boom')").await;
        assert_eq!(v["status"], "error");
        assert_eq!(v["exit_code"], 1);
        assert_eq!(v["error"], "boom\n");
        assert_eq!(v["output"], "partial\n\n--- stderr ---\nboom\n");
        let v = call("print('x' * 60000, end='')").await;
        assert_eq!(v["stdout_truncated"], true);
        assert_eq!(v["stdout_bytes_total"], 60000);
        assert!(
            v["output"]
                .as_str()
                .unwrap_or_default()
                .contains("[OUTPUT TRUNCATED - 10,000 bytes omitted out of 60,000 total]")
                || v["output"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("[OUTPUT TRUNCATED - 10000 bytes omitted out of 60000 total]")
        );
        let v = call("  ").await;
        assert_eq!(v["error"], "No code provided.");
    }

    #[tokio::test]
    async fn a_hanging_script_is_killed_with_its_group_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        // Three seconds for Python to start and write the pid on a loaded host.
        let ctx = context(dir.path(), Duration::from_secs(3));
        let offered = offered(None, &[], &ctx);
        let code = "import subprocess, time\nopen('child.pid', 'w').write(str(subprocess.Popen(['sleep', '60']).pid))\ntime.sleep(60)";
        let started = std::time::Instant::now();
        let out = dispatch(
            "execute_code",
            &json!({"code": code}).to_string(),
            &offered,
            &ctx,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "timeout", "{v}");
        assert_eq!(v["error"], "Script timed out after 3s and was killed.");
        let pid: i64 = std::fs::read_to_string(dir.path().join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !crate::process::pid_alive(pid)
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "the script's child is gone"
        );
    }
}
