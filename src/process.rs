//! What the scheduler needs to know about processes: this host's name, whether a pid is
//! alive, and a guard that kills a whole process group (a script and its children) when
//! the run that owns it ends, times out or is cancelled.

/// This machine's host name, for ledger rows (pids only mean something on their host).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}

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
