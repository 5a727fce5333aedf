//! The guards every child process a tool starts runs under (`terminal`, `execute_code`):
//! the work directory, the environment without credential-named variables, stdin from
//! nothing (or the given text), a process group of its own that is killed with all its
//! children on timeout and when the call ends, output capped, and the run's activity
//! touched while output flows (and, for long quiet work, while it waits). Under a
//! sandbox level other than `off` the child starts through the sandbox's trampoline
//! (`crate::sandbox`), or not at all.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::backend::Backend;
use super::{RunSandbox, ToolContext};
use crate::process::GroupKill;
use crate::runner::Activity;
use crate::sandbox::{Policy, PrivateTmp, Support};

/// How often a quiet child that keeps the run alive touches its activity.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// What one output stream left: its first `head` bytes, its last `tail` bytes, and how
/// many bytes it wrote in all.
#[derive(Debug, Default)]
pub struct Captured {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub total: usize,
}

impl Captured {
    /// The text, with a marker where bytes were left out between head and tail.
    pub fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let kept = self.head.len() + self.tail.len();
        if self.total <= kept {
            return format!("{head}{}", String::from_utf8_lossy(&self.tail));
        }
        format!(
            "{head}\n\n... [OUTPUT TRUNCATED - {} bytes omitted out of {} total] ...\n\n{}",
            self.total - kept,
            self.total,
            String::from_utf8_lossy(&self.tail)
        )
    }
}

/// Why a child could not be run at all (the model reads it as the call's error).
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start {program} in {}: {source}", workdir.display())]
    Start {
        program: String,
        workdir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot capture the output of {program}")]
    NoOutput { program: String },
    /// The sandbox cannot hold here: the call is refused, never run unconfined.
    #[error("{0}")]
    Unconfined(String),
}

/// How a child ended.
pub enum Ended {
    Exited {
        stdout: Captured,
        stderr: Captured,
        code: Option<i32>,
    },
    /// Killed with its group at the timeout.
    TimedOut,
}

/// What to run and how to treat it.
pub struct Child<'a> {
    pub program: &'a str,
    pub args: &'a [&'a str],
    /// Written to stdin, which is then closed; `None`: stdin is empty.
    pub stdin: Option<&'a str>,
    pub timeout: Duration,
    /// Bytes kept of the start and the end of each stream.
    pub head: usize,
    pub tail: usize,
    /// Touch the run's activity every few seconds while waiting, so a long but bounded
    /// quiet computation does not trip the run's inactivity timeout.
    pub keep_alive: bool,
}

async fn read_head_tail(
    mut stream: impl AsyncRead + Unpin,
    activity: Activity,
    head: usize,
    tail: usize,
) -> Captured {
    let mut kept = Captured::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        activity.touch();
        kept.total += n;
        let chunk = &buf[..n];
        let room = head.saturating_sub(kept.head.len()).min(n);
        kept.head.extend_from_slice(&chunk[..room]);
        if tail > 0 {
            kept.tail.extend_from_slice(&chunk[room..]);
            if kept.tail.len() > tail {
                kept.tail.drain(..kept.tail.len() - tail);
            }
        }
    }
    kept
}

/// The trampoline command that runs `child` confined by the run's sandbox, and the
/// private temporary directory it writes in (removed when the call ends). Refused where
/// the kernel cannot confine or the policy cannot hold.
fn confined(
    child: &Child<'_>,
    sandbox: &RunSandbox,
    ctx: &ToolContext,
) -> Result<(tokio::process::Command, PrivateTmp), ChildError> {
    if let Some(missing) = Support::probe().missing() {
        return Err(ChildError::Unconfined(missing));
    }
    let tmp = PrivateTmp::create().map_err(|e| {
        ChildError::Unconfined(format!(
            "cannot make the sandbox's temporary directory: {e}"
        ))
    })?;
    let policy = Policy::new(sandbox.level, &ctx.home, &sandbox.workdir, tmp.path());
    if let Some(conflict) = policy.conflict() {
        return Err(ChildError::Unconfined(conflict));
    }
    let (exe, argv) = crate::sandbox::wrap(&policy, child.program, child.args)
        .map_err(|e| ChildError::Unconfined(format!("cannot start the sandbox: {e}")))?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(argv);
    Ok((cmd, tmp))
}

/// Runs `child` in the run's work directory under the guards above.
pub async fn run(child: Child<'_>, ctx: &ToolContext) -> Result<Ended, ChildError> {
    let mut tmp = None;
    let mut cmd = match (&ctx.backend, &ctx.sandbox) {
        (Backend::Refused(why), _) => return Err(ChildError::Unconfined(why.clone())),
        (Backend::Container { cli, image }, _) => {
            let argv = Backend::container_args(
                image,
                &ctx.workdir,
                ctx.network,
                child.stdin.is_some(),
                child.program,
                child.args,
            );
            let mut cmd = tokio::process::Command::new(cli);
            cmd.args(argv);
            cmd
        }
        (Backend::Local, None) => {
            let mut cmd = tokio::process::Command::new(child.program);
            cmd.args(child.args);
            cmd
        }
        (Backend::Local, Some(sandbox)) => {
            let (cmd, private) = confined(&child, sandbox, ctx)?;
            tmp = Some(private);
            cmd
        }
    };
    cmd.current_dir(&ctx.workdir)
        .env_clear()
        .envs(std::env::vars().filter(|(n, v)| !crate::redact::is_kept_from_tools(n, v)))
        .stdin(if child.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut process = crate::process::spawn_dying_with_process(cmd)
        .await
        .map_err(|source| ChildError::Start {
            program: child.program.to_string(),
            workdir: ctx.workdir.clone(),
            source,
        })?;
    let mut group = GroupKill::new(process.id());
    let (Some(out), Some(err)) = (process.stdout.take(), process.stderr.take()) else {
        return Err(ChildError::NoOutput {
            program: child.program.to_string(),
        });
    };
    let input = process.stdin.take();
    let activity = ctx.activity.clone();
    let work = async {
        let feed = async {
            if let (Some(mut stdin), Some(text)) = (input, child.stdin) {
                // A child that exits without reading all of it is not an error here.
                let _ = stdin.write_all(text.as_bytes()).await;
            }
        };
        let (_, stdout, stderr) = tokio::join!(
            feed,
            read_head_tail(out, activity.clone(), child.head, child.tail),
            read_head_tail(err, activity.clone(), child.head, child.tail)
        );
        (stdout, stderr, process.wait().await)
    };
    let guarded = tokio::time::timeout(child.timeout, work);
    tokio::pin!(guarded);
    let finished = loop {
        tokio::select! {
            finished = &mut guarded => break finished,
            () = tokio::time::sleep(KEEP_ALIVE), if child.keep_alive => activity.touch(),
        }
    };
    // Whatever it left running in its group goes with it, finished or not.
    group.kill_now();
    drop(tmp);
    Ok(match finished {
        Ok((stdout, stderr, status)) => Ended::Exited {
            stdout,
            stderr,
            code: status.ok().and_then(|s| s.code()),
        },
        Err(_) => Ended::TimedOut,
    })
}
