//! Script jobs (docs/AGENT.md, "Scripts and script-only jobs"): a script under `<home>/scripts/`, confined there, run with an
//! environment stripped of credentials, in its own process group so a timeout kills its
//! children too. `.sh`/`.bash` run under bash, anything else under Python: the job's
//! `interpreter` when it names one (checked here, at run time), else `python3`. Its
//! stdout is the message (`no_agent`), the agent's context, the wake gate that keeps the
//! agent asleep, or a monitor's watched output.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use jobs::Job;

use crate::process::{spawn_dying_with_process, GroupKill};
use crate::{read_output, Activity, RunEnv};

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
    #[error("interpreter must be an absolute or ~-prefixed path (got '{0}'): a bare name changes meaning with PATH; write e.g. /usr/bin/python3")]
    InterpreterNotAbsolute(String),
    #[error("interpreter not found: {0}; fix the job's interpreter with 'hermes cron edit <job> --interpreter <path>'")]
    InterpreterNotFound(String),
    #[error("interpreter is not a file: {}", .0.display())]
    InterpreterNotAFile(PathBuf),
    #[error("interpreter is not executable: {}; make it executable or point the job at another Python", .0.display())]
    InterpreterNotExecutable(PathBuf),
    #[error("interpreter must be a Python executable (python, python3, python3.12, ...; not pythonw): {}", .0.display())]
    InterpreterNotPython(PathBuf),
}

/// Runs one of a job's scripts (`script` or `monitor_script`) as every run does: found
/// inside `<home>/scripts`, run in the job's workdir (else that folder) under the job's
/// interpreter, with `HERMES_HOME` and `HERMES_JOB_ID` set. Whatever is wrong with the
/// script or the interpreter is the run's failure.
pub async fn run_for_job(job: &Job, script: &str, env: &RunEnv) -> ScriptResult {
    let scripts_dir = env.home.join("scripts");
    let path = match resolve_script(&scripts_dir, script) {
        Ok(path) => path,
        Err(e) => return ScriptResult::Failed(e.to_string()),
    };
    let interpreter = match job.interpreter().filter(|_| !runs_under_bash(&path)) {
        Some(raw) => match resolve_interpreter(raw) {
            Ok(python) => Some(python),
            Err(e) => return ScriptResult::Failed(e.to_string()),
        },
        None => None,
    };
    // Under `strict` the job's scripts are confined like its agent's tools: they run
    // from a copy in a private temporary directory (the scripts folder is inside the
    // hidden home), in the job's work directory or its private one.
    let strict = match crate::sandbox::level_of(job, &env.world.config) {
        Ok(level) => level == crate::sandbox::Level::Strict,
        Err(e) => return ScriptResult::Failed(e),
    };
    let workdir = match job.workdir().map(PathBuf::from) {
        Some(dir) => dir,
        None if strict => crate::sandbox::private_workdir(job.id()),
        None => scripts_dir,
    };
    let extra = [
        ("HERMES_HOME", env.home.display().to_string()),
        ("HERMES_JOB_ID", job.id().to_string()),
    ];
    let confined = match strict
        .then(|| confine(&path, &env.home, &workdir))
        .transpose()
    {
        Ok(confined) => confined,
        Err(why) => return ScriptResult::Failed(why),
    };
    let path = confined.as_ref().map_or(path.clone(), |c| c.script.clone());
    run_script(
        &path,
        interpreter.as_deref(),
        &workdir,
        &extra,
        env.settings.script_timeout,
        &env.activity,
        confined.as_ref(),
    )
    .await
}

/// A script prepared to run confined: its copy in the call's private temporary
/// directory and the policy it runs under.
pub struct Confined {
    pub script: PathBuf,
    pub policy: crate::sandbox::Policy,
    _tmp: crate::sandbox::PrivateTmp,
}

/// Copies `script` into a private temporary directory and writes the `strict` policy,
/// or says why the script cannot run confined (never unconfined instead).
fn confine(script: &Path, home: &Path, workdir: &Path) -> Result<Confined, String> {
    use crate::sandbox::{Level, Policy, PrivateTmp, Support};
    if let Some(missing) = Support::probe().missing() {
        return Err(missing);
    }
    let tmp = PrivateTmp::create()
        .map_err(|e| format!("cannot make the sandbox's temporary directory: {e}"))?;
    let name = script.file_name().unwrap_or(std::ffi::OsStr::new("script"));
    let copy = tmp.path().join(name);
    std::fs::copy(script, &copy)
        .map_err(|e| format!("cannot copy {} for the sandbox: {e}", script.display()))?;
    let policy = Policy::new(Level::Strict, home, workdir, tmp.path());
    if let Some(conflict) = policy.conflict() {
        return Err(conflict);
    }
    Ok(Confined {
        script: copy,
        policy,
        _tmp: tmp,
    })
}

/// Checks a job's `interpreter` as Hermes 0.22 does, when the script is about to run (a
/// virtualenv may be rebuilt or moved while the job lives): an absolute or `~` path to
/// an executable regular file named like a Python (`python`, `python3`, `python3.12`),
/// both as written and where its links lead. `pythonw` is refused: it drops the output.
pub fn resolve_interpreter(raw: &str) -> Result<PathBuf, ScriptError> {
    use std::os::unix::fs::PermissionsExt;
    let raw = raw.trim();
    let expanded = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME")
                .ok_or_else(|| ScriptError::InterpreterNotAbsolute(raw.to_string()))?;
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(raw),
    };
    if !expanded.is_absolute() {
        return Err(ScriptError::InterpreterNotAbsolute(raw.to_string()));
    }
    let metadata = std::fs::metadata(&expanded)
        .map_err(|_| ScriptError::InterpreterNotFound(raw.to_string()))?;
    if !metadata.is_file() {
        return Err(ScriptError::InterpreterNotAFile(expanded));
    }
    if metadata.permissions().mode() & 0o111 == 0 {
        return Err(ScriptError::InterpreterNotExecutable(expanded));
    }
    let target = expanded.canonicalize().unwrap_or_else(|_| expanded.clone());
    if ![&expanded, &target].iter().all(|p| is_python_name(p)) {
        return Err(ScriptError::InterpreterNotPython(expanded));
    }
    Ok(expanded)
}

/// `python`, `python3`, `python3.12` (any case, `.exe` allowed), never `pythonw`.
fn is_python_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".exe").unwrap_or(&name);
    let Some(version) = name.strip_prefix("python") else {
        return false;
    };
    version.is_empty()
        || version
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
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

/// Does the script run under bash (by its extension, as in Hermes)?
fn runs_under_bash(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("sh" | "bash")
    )
}

fn command_for(path: &Path, interpreter: Option<&Path>) -> Command {
    // Everything but `.sh`/`.bash` runs with Python, as in Hermes, which ignores the
    // file's own shebang and executable bit: a script written for Hermes must run the
    // same here.
    let program = match (runs_under_bash(path), interpreter) {
        (true, _) => Path::new("bash"),
        (false, Some(python)) => python,
        (false, None) => Path::new("python3"),
    };
    let mut c = Command::new(program);
    c.arg(path);
    c
}

/// Runs a resolved script with `workdir` as its working directory, under the checked
/// `interpreter` when it is not a bash script.
pub async fn run_script(
    path: &Path,
    interpreter: Option<&Path>,
    workdir: &Path,
    extra_env: &[(&str, String)],
    timeout: Duration,
    activity: &Activity,
    confined: Option<&Confined>,
) -> ScriptResult {
    let mut command = command_for(path, interpreter);
    if let Some(confined) = confined {
        let std = command.as_std();
        let program = std.get_program().to_string_lossy().into_owned();
        let args: Vec<String> = std
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match crate::sandbox::wrap(&confined.policy, &program, &args) {
            Ok((exe, argv)) => {
                command = Command::new(exe);
                command.args(argv);
            }
            Err(e) => return ScriptResult::Failed(format!("cannot start the sandbox: {e}")),
        }
    }
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
    fn an_interpreter_must_be_an_absolute_executable_python() {
        for ok in ["python", "python3", "Python3.12", "python3.11.exe"] {
            assert!(is_python_name(Path::new(ok)), "{ok}");
        }
        for bad in ["pythonw", "pythonw3", "bash", "python3.", "python-3", "py3"] {
            assert!(!is_python_name(Path::new(bad)), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python3.99");
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        let refused = |raw: &str| resolve_interpreter(raw).unwrap_err().to_string();
        assert!(refused(&python.display().to_string()).contains("not executable"));
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert_eq!(
            resolve_interpreter(&python.display().to_string()).unwrap(),
            python
        );
        assert!(refused("python3").contains("absolute or ~-prefixed"));
        assert!(refused("/nowhere/python3").contains("not found"));
        assert!(refused(&dir.path().display().to_string()).contains("not a file"));
        let bash = dir.path().join("bash");
        std::fs::copy(&python, &bash).unwrap();
        assert!(refused(&bash.display().to_string()).contains("must be a Python"));
        let link = dir.path().join("python");
        std::os::unix::fs::symlink(&bash, &link).unwrap();
        assert!(
            refused(&link.display().to_string()).contains("must be a Python"),
            "a link is judged by where it leads too"
        );
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
