//! `agent.backend: command` (docs/AGENT.md, "External command agent"): the assembled prompt goes to another agent
//! program on stdin and its stdout is the reply. It runs in the job's workdir (else the
//! Hermes home), in its own process group (killed with its children when the run ends
//! or times out), with the user's environment plus `<home>/.env`, since that agent
//! needs its own keys, but never the daemon's own secrets (the API key, the webhook
//! signing secret) or a platform's bot tokens and credentials: sending is the daemon's.
//! A non-zero exit fails the run with the tail of its stderr.

use std::path::Path;
use std::process::Stdio;

use jobs::Job;
use tokio::io::AsyncWriteExt;

use super::inference::Vars;
use super::reply_result;
use crate::process::GroupKill;
use crate::runner::{read_output, RunEnv, RunResult};

/// The daemon's own secrets, which no agent program needs.
const DAEMON_SECRETS: [&str; 2] = ["API_SERVER_KEY", "WEBHOOK_SECRET"];

/// Variables the agent program is not given.
fn withheld(name: &str) -> bool {
    DAEMON_SECRETS.contains(&name) || crate::delivery::platforms::is_platform_secret(name)
}

pub async fn run(
    argv: &[String],
    prompt: &str,
    workdir: &Path,
    job: &Job,
    env: &RunEnv,
    vars: &Vars,
) -> RunResult {
    let mut command = tokio::process::Command::new(&argv[0]);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(withheld) {
            command.env_remove(&name);
        }
    }
    let dotenv = vars.dotenv_missing_from_env();
    command
        .args(&argv[1..])
        .current_dir(workdir)
        .envs(dotenv.into_iter().filter(|(name, _)| !withheld(name)))
        .env("HERMES_HOME", &env.home)
        .env("HERMES_JOB_ID", job.id())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match crate::process::spawn_dying_with_process(command).await {
        Ok(c) => c,
        Err(e) => {
            return RunResult::Failed(format!(
                "cannot start the agent command '{}' (agent.command): {e}",
                argv[0]
            ))
        }
    };
    let _group = GroupKill::new(child.id());
    let (Some(mut stdin), Some(out), Some(err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return RunResult::Failed("cannot connect to the agent command's stdio".into());
    };
    let prompt = prompt.to_string();
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(prompt.as_bytes()).await;
        let _ = stdin.shutdown().await;
    });
    let (out, err) = tokio::join!(
        read_output(out, env.activity.clone(), 4 << 20),
        read_output(err, env.activity.clone(), 4 << 20)
    );
    let _ = writer.await;
    let status = child.wait().await;
    match status {
        Ok(s) if s.success() => reply_result(String::from_utf8_lossy(&out).into_owned()),
        Ok(s) => {
            let stderr = String::from_utf8_lossy(&err);
            let tail: Vec<&str> = stderr.trim().lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            RunResult::Failed(format!(
                "the agent command '{}' exited with {}{}",
                argv[0],
                s.code()
                    .map_or_else(|| "a signal".to_string(), |c| format!("status {c}")),
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", tail.join("\n"))
                }
            ))
        }
        Err(e) => RunResult::Failed(format!("cannot wait for the agent command: {e}")),
    }
}
