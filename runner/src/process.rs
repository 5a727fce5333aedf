//! What the scheduler needs to know about processes: this host's name, whether a pid is
//! alive, and a guard that kills a whole process group (a script and its children) when
//! the run that owns it ends, times out or is cancelled.

/// This machine's host name (delivery greets SMTP servers with it too).
pub use foundation::host::host_name;

/// Is a process with this pid alive on this host?
pub fn pid_alive(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Kills the process group `pgid` when dropped.
pub struct GroupKill {
    pgid: Option<libc::pid_t>,
}

impl GroupKill {
    pub fn new(pgid: Option<u32>) -> GroupKill {
        GroupKill {
            pgid: pgid
                .and_then(|p| libc::pid_t::try_from(p).ok())
                .filter(|p| *p > 0),
        }
    }

    pub fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: signalling a process group we created; ESRCH (already gone) is fine.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// A child to fork, the runtime that will reap it, and where to send it.
type SpawnRequest = (
    tokio::process::Command,
    tokio::runtime::Handle,
    tokio::sync::oneshot::Sender<std::io::Result<tokio::process::Child>>,
);

/// How many threads fork children: forks wait for the child's `exec`, which on a busy
/// machine waits for a CPU, so a burst of runs starting at once is forked side by side.
const SPAWNERS: usize = 4;

/// Starts `command` so the kernel kills it (SIGKILL) when this process dies, even by
/// SIGKILL or a crash: a script never outlives its daemon.
///
/// Linux sends that signal when the *thread* that forked the child ends, not the process,
/// and a runtime's threads come and go (a worker that blocks in place ends up in the
/// blocking pool, whose idle threads exit after 10 s). Forked from such a thread, a long
/// script would be killed for nothing; so every one is forked by one of [`SPAWNERS`]
/// threads that live as long as the process.
pub async fn spawn_dying_with_process(
    mut command: tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = std::sync::mpsc::channel::<SpawnRequest>();
        let incoming = std::sync::Arc::new(std::sync::Mutex::new(incoming));
        let mut started = 0;
        for n in 0..SPAWNERS {
            let incoming = std::sync::Arc::clone(&incoming);
            let thread = std::thread::Builder::new()
                .name(format!("hermes-spawner-{n}"))
                .spawn(move || loop {
                    // The lock is held while waiting for a request only, not while forking.
                    let next = match incoming.lock() {
                        Ok(incoming) => incoming.recv(),
                        Err(poisoned) => poisoned.into_inner().recv(),
                    };
                    let Ok((mut command, runtime, reply)) = next else {
                        return;
                    };
                    let _entered = runtime.enter();
                    // This thread serves every later spawn too: a panic is an answer.
                    let spawned =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| command.spawn()))
                            .unwrap_or_else(|_| Err(std::io::Error::other("starting it panicked")));
                    let _ = reply.send(spawned);
                });
            if thread.is_ok() {
                started += 1;
            }
        }
        (started > 0).then_some(requests)
    });
    let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
    let parent = std::process::id();
    // SAFETY: prctl and getppid are async-signal-safe. The check closes the window where
    // this process died between the fork and the prctl.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                // No allocation between fork and exec: an OS error code only.
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let gone = || std::io::Error::other("the thread that starts child processes is gone");
    spawner
        .as_ref()
        .ok_or_else(gone)?
        .send((command, runtime, reply))
        .map_err(|_| gone())?;
    answer.await.map_err(|_| gone())?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread that asks for a child ends at once; the child still runs to its end
    /// (forked by that thread itself, it is killed with status 9 when the thread exits).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_child_outlives_the_thread_that_asked_for_it() {
        let runtime = tokio::runtime::Handle::current();
        let asked = std::thread::spawn(move || {
            runtime.block_on(async {
                let mut sleep = tokio::process::Command::new("sleep");
                sleep.arg("0.3");
                spawn_dying_with_process(sleep).await
            })
        });
        let mut child = asked.join().unwrap().unwrap();
        let status = child.wait().await.unwrap();
        assert!(status.success(), "{status:?}");
    }
}
