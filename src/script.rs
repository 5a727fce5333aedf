//! Script jobs (docs/AGENT.md, "Scripts and script-only jobs"): a script under `<home>/scripts/`, confined there, run with an
//! environment stripped of credentials, in its own process group so a timeout kills its
//! children too. Its stdout is the message (`no_agent`), the agent's context, or the
//! wake gate that keeps the agent asleep.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::process::{spawn_dying_with_process, GroupKill};
use crate::runner::{read_output, Activity};

/// At most this much of a script's stdout/stderr is kept.
const OUTPUT_CAP: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
pub enum ScriptResult {
    /// Exit 0 with this stdout.
    Output(String),
    /// Failed (could not start, non-zero exit, timeout); the text says why.
    Failed(String),
}

/// Why a job's script cannot be run; the text is the run's error.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ScriptError {
    #[error("scripts folder {} does not exist: create it and put the script there", .0.display())]
    NoScriptsFolder(PathBuf),
    #[error("script not found: {}", .0.display())]
    NotFound(PathBuf),
    #[error("script '{script}' resolves outside {}; scripts must live inside it", root.display())]
    Outside { script: String, root: PathBuf },
    #[error("script is not a file: {}", .0.display())]
    NotAFile(PathBuf),
}

/// Resolves `script` inside `scripts_dir`, refusing anything that escapes it (`..`,
/// absolute paths, symlinks pointing out).
pub fn resolve_script(scripts_dir: &Path, script: &str) -> Result<PathBuf, ScriptError> {
    let root = scripts_dir
        .canonicalize()
        .map_err(|_| ScriptError::NoScriptsFolder(scripts_dir.to_path_buf()))?;
    let candidate = root.join(script);
    let resolved = candidate
        .canonicalize()
        .map_err(|_| ScriptError::NotFound(candidate))?;
    if !resolved.starts_with(&root) || Path::new(script).is_absolute() {
        return Err(ScriptError::Outside {
            script: script.to_string(),
            root,
        });
    }
    if !resolved.is_file() {
        return Err(ScriptError::NotAFile(resolved));
    }
    Ok(resolved)
}

/// The script's text for the gateway guard at creation, undecodable bytes replaced so
/// nothing hides in binary noise; `None` when it does not resolve or cannot be read.
pub fn read_for_scan(scripts_dir: &Path, script: &str) -> Option<String> {
    let path = resolve_script(scripts_dir, script).ok()?;
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn command_for(path: &Path) -> Command {
    match path.extension().and_then(|e| e.to_str()) {
        Some("sh" | "bash") => {
            let mut c = Command::new("bash");
            c.arg(path);
            c
        }
        // Everything else runs with Python, as in Hermes, which ignores the file's own
        // shebang and executable bit: a script written for Hermes must run the same here.
        _ => {
            let mut c = Command::new("python3");
            c.arg(path);
            c
        }
    }
}

/// Runs a resolved script with `workdir` as its working directory.
pub async fn run_script(
    path: &Path,
    workdir: &Path,
    extra_env: &[(&str, String)],
    timeout: Duration,
    activity: &Activity,
) -> ScriptResult {
    let mut command = command_for(path);
    command
        .current_dir(workdir)
        .env_clear()
        .envs(std::env::vars().filter(|(name, _)| !crate::redact::is_secret_name(name)))
        .envs(extra_env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match spawn_dying_with_process(command).await {
        Ok(child) => child,
        Err(e) => {
            return ScriptResult::Failed(format!("cannot start script {}: {e}", path.display()))
        }
    };
    // Dropped on every way out of this function: kills the script and its children.
    let mut group = GroupKill::new(child.id());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return ScriptResult::Failed("cannot capture the script's output".into());
    };
    let work = async {
        let (out, err) = tokio::join!(
            read_output(stdout, activity.clone(), OUTPUT_CAP),
            read_output(stderr, activity.clone(), OUTPUT_CAP)
        );
        let status = child.wait().await;
        (out, err, status)
    };
    let Ok((out, err, status)) = tokio::time::timeout(timeout, work).await else {
        group.kill_now();
        return ScriptResult::Failed(format!(
            "script timed out after {}s (cron.script_timeout_seconds) and was killed with its child processes",
            timeout.as_secs()
        ));
    };
    group.kill_now();
    let stdout = String::from_utf8_lossy(&out).into_owned();
    match status {
        Ok(status) if status.success() => ScriptResult::Output(stdout),
        Ok(status) => {
            let stderr = String::from_utf8_lossy(&err);
            let tail: String = stderr
                .trim()
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            let code = status
                .code()
                .map_or_else(|| "a signal".to_string(), |c| format!("status {c}"));
            ScriptResult::Failed(format!(
                "script exited with {code}{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ))
        }
        Err(e) => ScriptResult::Failed(format!("cannot wait for script: {e}")),
    }
}

/// True when the script's last non-empty stdout line is `{"wakeAgent": false}`.
pub fn wake_gate_closed(stdout: &str) -> bool {
    let Some(last) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(last.trim())
        .ok()
        .and_then(|v| v.as_object().and_then(|o| o.get("wakeAgent")).cloned())
        == Some(serde_json::Value::Bool(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_gate_reads_the_last_line_only() {
        assert!(wake_gate_closed(
            "checked 3 feeds\n{\"wakeAgent\": false}\n\n"
        ));
        assert!(!wake_gate_closed("{\"wakeAgent\": false}\nnew items!"));
        assert!(!wake_gate_closed("{\"wakeAgent\": true}"));
        assert!(!wake_gate_closed(""));
    }

    #[test]
    fn secret_looking_names_are_stripped() {
        for name in [
            "OPENAI_API_KEY",
            "TELEGRAM_BOT_TOKEN",
            "DB_PASSWORD",
            "aws_secret",
        ] {
            assert!(crate::redact::is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "HERMES_HOME"] {
            assert!(!crate::redact::is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn scripts_cannot_escape_their_folder() {
        let home = tempfile::tempdir().unwrap();
        let scripts = home.path().join("scripts");
        std::fs::create_dir(&scripts).unwrap();
        std::fs::write(home.path().join("outside.sh"), "echo hi").unwrap();
        std::fs::write(scripts.join("ok.sh"), "echo hi").unwrap();
        std::os::unix::fs::symlink(home.path().join("outside.sh"), scripts.join("link.sh"))
            .unwrap();
        assert!(resolve_script(&scripts, "ok.sh").is_ok());
        assert!(resolve_script(&scripts, "../outside.sh")
            .unwrap_err()
            .to_string()
            .contains("outside"));
        assert!(resolve_script(&scripts, "link.sh")
            .unwrap_err()
            .to_string()
            .contains("outside"));
        assert!(resolve_script(&scripts, "missing.sh")
            .unwrap_err()
            .to_string()
            .contains("not found"));
    }
}
