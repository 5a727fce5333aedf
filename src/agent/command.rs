//! `agent.backend: command` (SPEC §6.8): the assembled prompt goes to another agent
//! program on stdin and its stdout is the reply. It runs in the job's workdir (else the
//! Hermes home), in its own process group (killed with its children when the run ends
//! or times out), with the user's environment plus `<home>/.env`, since that agent
//! needs its own keys. A non-zero exit fails the run with the tail of its stderr.

use std::path::Path;
use std::process::Stdio;

use jobs::Job;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::Vars;
use super::reply_result;
use crate::process::GroupKill;
use crate::runner::{Activity, RunEnv, RunResult};

async fn read_all(mut stream: impl tokio::io::AsyncRead + Unpin, activity: Activity) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        activity.touch();
        if kept.len() < 4 << 20 {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    kept
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
    command
        .args(&argv[1..])
        .current_dir(workdir)
        .envs(vars.dotenv_missing_from_env())
        .env("HERMES_HOME", &env.home)
        .env("HERMES_JOB_ID", job.id())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
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
        read_all(out, env.activity.clone()),
        read_all(err, env.activity.clone())
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
