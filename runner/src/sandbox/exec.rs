//! The trampoline `hermes __sandbox-exec POLICY -- PROGRAM ARGS` (see the module above):
//! runs before any thread or runtime exists, so `fork` is safe. It
//! 1. joins a process-count cgroup where the kernel offers one (the only limit on the
//!    number of processes that holds for root, whom `RLIMIT_NPROC` exempts);
//! 2. unshares PID and mount namespaces (a network namespace under `strict`, a user
//!    namespace when not root);
//! 3. forks: the child is PID 1 of the new namespace, mounts a fresh /proc (the daemon
//!    and every other process are invisible) and forks the program's process, then
//!    reaps until the program ends and exits as it did; when PID 1 ends the kernel kills
//!    everything left in the namespace;
//! 4. the program's process sets the resource limits, drops every capability, sets
//!    `no_new_privs`, applies Landlock then seccomp, and execs.
//!
//! A step that fails prints one line naming it and `--sandbox off` and exits 126: the
//! program never runs unconfined.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, ABI,
};
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};

use super::{Policy, Support};

/// The exit code of a call the sandbox could not confine (as a shell's "cannot execute").
const CANNOT_CONFINE: i32 = 126;

/// The Landlock ABI the rules are written for (file system rights of ABI 5, and ABI 6's
/// scopes: no signal to a process outside the sandbox, no connection to an abstract
/// UNIX socket made outside it); an older kernel enforces what it can of it
/// (rust-landlock's best effort), a kernel without Landlock at all is refused.
const LANDLOCK_ABI: ABI = ABI::V6;

/// Where a process-count cgroup is made (cgroup v1's pids hierarchy).
const PIDS_CGROUP: &str = "/sys/fs/cgroup/pids";

/// The device files a confined process may open for writing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Runs the trampoline with the arguments after the verb; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let (policy, program) = match parse(args) {
        Ok(parsed) => parsed,
        Err(why) => return fail(&why),
    };
    if let Some(missing) = Support::probe().missing() {
        return fail(&missing);
    }
    match confine_and_run(&policy, &program) {
        Ok(code) => code,
        Err(why) => fail(&why),
    }
}

fn fail(why: &str) -> i32 {
    eprintln!("hermes sandbox: {why}");
    CANNOT_CONFINE
}

fn parse(args: &[String]) -> Result<(Policy, Vec<String>), String> {
    let usage = || {
        format!(
            "usage: hermes {} POLICY -- PROGRAM [ARGS...]",
            super::EXEC_VERB
        )
    };
    let (Some(json), Some(sep)) = (args.first(), args.get(1)) else {
        return Err(usage());
    };
    if sep != "--" || args.len() < 3 {
        return Err(usage());
    }
    let policy: Policy =
        serde_json::from_str(json).map_err(|e| format!("the policy cannot be read: {e}"))?;
    Ok((policy, args[2..].to_vec()))
}

fn errno(what: &str) -> String {
    format!(
        "{what} failed ({}); the call was not run: give the job --sandbox off to run it unconfined",
        std::io::Error::last_os_error()
    )
}

fn confine_and_run(policy: &Policy, program: &[String]) -> Result<i32, String> {
    let cgroup = PidsCgroup::join(policy.limits.processes);
    // SAFETY: plain libc calls on this single-threaded process.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // For root the cgroup is the only process limit (RLIMIT_NPROC exempts it): where the
    // machine has one and joining it failed, the call is not run.
    if uid == 0 && cgroup.dir.is_none() && pids_cgroup_available() {
        return Err("joining the sandbox's process-count cgroup failed; the call was not run: give the job --sandbox off to run it unconfined".into());
    }
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if !policy.network {
        flags |= libc::CLONE_NEWNET;
    }
    if uid != 0 {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: unshare affects this process only.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(errno("creating the sandbox's namespaces"));
    }
    if uid != 0 {
        map_ids(uid, gid)?;
    }
    // SAFETY: single-threaded; the child only calls async-signal-safe functions and
    // functions of this file before exec or exit.
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(errno("fork"));
    }
    if init == 0 {
        let code = match namespace_init(policy, program) {
            Ok(code) => code,
            Err(why) => fail(&why),
        };
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let code = wait_for(init);
    drop(cgroup);
    Ok(code)
}

/// Maps the caller's user and group to root inside a new user namespace.
fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| {
            format!("writing {file} failed ({e}); give the job --sandbox off to run it unconfined")
        })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))
}

/// Waits for `pid`; its exit code, or 128 + the signal that ended it.
fn wait_for(pid: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            if libc::WIFEXITED(status) {
                return libc::WEXITSTATUS(status);
            }
            if libc::WIFSIGNALED(status) {
                return 128 + libc::WTERMSIG(status);
            }
        } else if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return CANNOT_CONFINE;
        }
    }
}

/// PID 1 of the sandbox: a private mount tree with a fresh /proc, then the program in a
/// child, reaping every orphan until the program ends.
fn namespace_init(policy: &Policy, program: &[String]) -> Result<i32, String> {
    let none = CString::default();
    let root = c("/")?;
    // SAFETY: mount calls with valid C strings; this mount namespace is ours.
    unsafe {
        if libc::mount(
            none.as_ptr(),
            root.as_ptr(),
            none.as_ptr(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(errno("making the sandbox's mounts private"));
        }
        let proc_ = c("proc")?;
        let target = c("/proc")?;
        if libc::mount(
            proc_.as_ptr(),
            target.as_ptr(),
            proc_.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(errno("mounting the sandbox's /proc"));
        }
    }
    mask_sockets()?;
    // SAFETY: as above, still single-threaded.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(errno("fork"));
    }
    if child == 0 {
        let why = confine_self(policy).and_then(|()| exec(policy, program));
        let code = match why {
            Ok(()) => CANNOT_CONFINE,
            Err(why) => fail(&why),
        };
        // SAFETY: leaves the program's process without the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    loop {
        let mut status = 0;
        // SAFETY: reaps any child of PID 1.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got == child {
            if libc::WIFEXITED(status) {
                return Ok(libc::WEXITSTATUS(status));
            }
            if libc::WIFSIGNALED(status) {
                return Ok(128 + libc::WTERMSIG(status));
            }
        } else if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Ok(CANNOT_CONFINE);
        }
    }
}

/// Sockets that hand whoever connects control of the machine (a container engine, the
/// init system, the system bus). Landlock does not govern connecting to a UNIX socket,
/// so in the sandbox's mount namespace each is covered by /dev/null.
const MASKED_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/systemd/private",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
];

/// Covers each of [`MASKED_SOCKETS`] that exists; one that cannot be covered stops the
/// call.
fn mask_sockets() -> Result<(), String> {
    let null = c("/dev/null")?;
    let none = CString::default();
    for socket in MASKED_SOCKETS {
        let path = Path::new(socket);
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        let target = c(&real.to_string_lossy())?;
        // SAFETY: a bind mount in this process's own mount namespace.
        let done = unsafe {
            libc::mount(
                null.as_ptr(),
                target.as_ptr(),
                none.as_ptr(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        };
        if done != 0 {
            return Err(errno(&format!("covering {socket}")));
        }
    }
    Ok(())
}

fn c(text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("'{text}' holds a NUL byte"))
}

/// Limits, capabilities, `no_new_privs`, Landlock, seccomp: in that order, because
/// each later step takes away what an earlier one needs.
fn confine_self(policy: &Policy) -> Result<(), String> {
    set_limits(policy)?;
    drop_capabilities()?;
    landlock(policy)?;
    seccomp()
}

fn set_limits(policy: &Policy) -> Result<(), String> {
    let l = policy.limits;
    for (resource, value, name) in [
        (libc::RLIMIT_AS, l.memory, "memory"),
        (libc::RLIMIT_NPROC, l.processes, "processes"),
        (libc::RLIMIT_FSIZE, l.file_size, "file size"),
        (libc::RLIMIT_NOFILE, l.open_files, "open files"),
        (libc::RLIMIT_CPU, l.cpu_seconds, "CPU time"),
        (libc::RLIMIT_CORE, 0, "core files"),
    ] {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: sets a limit of this process from a valid struct.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(errno(&format!("setting the {name} limit")));
        }
    }
    Ok(())
}

/// Empties the bounding, ambient, inheritable, permitted and effective capability sets,
/// so that even a program run as root holds no privilege after exec.
fn drop_capabilities() -> Result<(), String> {
    // SAFETY: prctl and capset on this process with valid arguments.
    unsafe {
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(errno("dropping capabilities"));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(errno("setting no_new_privs"));
        }
    }
    Ok(())
}

/// The directories that together hold everything readable: `/` less the hidden paths,
/// as the siblings along each hidden path's ancestors. Symlinks are not followed (what
/// they point at is readable through its own path or not at all). `/dev` is left out:
/// a raw disk owned by root would hand a root-run sandbox every file, hidden ones too;
/// only the [`DEVICES`] are opened to it.
pub fn readable_roots(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let mut stack = vec![PathBuf::from("/")];
    while let Some(dir) = stack.pop() {
        if dir == Path::new("/dev") || hidden.iter().any(|h| dir.starts_with(h)) {
            continue;
        }
        if !hidden.iter().any(|h| h.starts_with(&dir)) {
            roots.push(dir);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else if entry.file_type().is_ok_and(|t| t.is_file()) {
                roots.push(entry.path());
            }
        }
    }
    roots.sort();
    roots
}

fn landlock(policy: &Policy) -> Result<(), String> {
    let all = AccessFs::from_all(LANDLOCK_ABI);
    let read = AccessFs::from_read(LANDLOCK_ABI);
    // Root could make a device node in its work directory and reach a disk through it.
    let write = all & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let fail = |e: landlock::RulesetError| {
        format!("Landlock refused the sandbox's rules ({e}); the call was not run: give the job --sandbox off to run it unconfined")
    };
    let mut rules = Vec::new();
    let mut add = |path: &Path, access: landlock::BitFlags<AccessFs>| {
        // A path that vanished (or a dangling device) grants nothing.
        if let Ok(fd) = PathFd::new(path) {
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(LANDLOCK_ABI)
            };
            rules.push(Ok::<_, landlock::RulesetError>(PathBeneath::new(
                fd, access,
            )));
        }
    };
    for root in readable_roots(&policy.hidden) {
        add(&root, read);
    }
    for dir in &policy.writable {
        add(dir, write);
    }
    for device in DEVICES {
        add(
            Path::new(device),
            read | AccessFs::WriteFile | AccessFs::IoctlDev,
        );
    }
    let ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::from_all(LANDLOCK_ABI))
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(rules)
        .map_err(fail)?;
    let status = ruleset.restrict_self().map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("this kernel has no Landlock, so the sandbox cannot confine this call and it was not run; give the job --sandbox off to run it unconfined".into());
    }
    Ok(())
}

/// The system calls a confined process is refused (EPERM): tracing and reading other
/// processes, mounting, BPF, the kernel keyring, kexec, kernel modules, perf events,
/// new namespaces, handles that bypass paths, io_uring, and rebooting or swapping.
const REFUSED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_perf_event_open,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
];

fn seccomp() -> Result<(), String> {
    let fail = |e: String| {
        format!("seccomp refused the sandbox's filter ({e}); the call was not run: give the job --sandbox off to run it unconfined")
    };
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| fail(e.to_string()))?;
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED_SYSCALLS.iter().map(|s| (*s, Vec::new())).collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| fail(e.to_string()))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(e.to_string()))?;
    seccompiler::apply_filter(&program).map_err(|e| fail(e.to_string()))
}

/// Replaces this process with the program, in the work directory, with TMPDIR the
/// private temporary directory.
fn exec(policy: &Policy, program: &[String]) -> Result<(), String> {
    if let Some(tmp) = policy.tmp() {
        std::env::set_var("TMPDIR", tmp);
    }
    let argv: Vec<CString> = program.iter().map(|a| c(a)).collect::<Result<_, _>>()?;
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: a NUL-terminated array of valid C strings.
    unsafe { libc::execvp(pointers[0], pointers.as_ptr()) };
    Err(format!(
        "cannot start {}: {}",
        program[0],
        std::io::Error::last_os_error()
    ))
}

/// A cgroup (v1 pids hierarchy) this process and everything it starts count against,
/// removed again when the sandbox ends. Where there is none, `RLIMIT_NPROC` is the
/// limit (which binds every user but root).
struct PidsCgroup {
    dir: Option<PathBuf>,
}

impl PidsCgroup {
    fn join(max: u64) -> PidsCgroup {
        let base = Path::new(PIDS_CGROUP).join("hermes-sandbox");
        if !Path::new(PIDS_CGROUP).join("cgroup.procs").exists() {
            return PidsCgroup { dir: None };
        }
        let _ = std::fs::create_dir_all(&base);
        // Cgroups left by sandboxes that were killed (named by a pid no longer alive): an
        // empty one goes, a busy one stays. A live sandbox's is never touched.
        if let Ok(entries) = std::fs::read_dir(&base) {
            for entry in entries.filter_map(Result::ok) {
                let owner = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok());
                // SAFETY: signal 0 only asks whether the process exists.
                let gone = owner.is_some_and(|pid| unsafe { libc::kill(pid, 0) } != 0);
                if gone {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
        let dir = base.join(std::process::id().to_string());
        let joined = std::fs::create_dir(&dir).is_ok()
            && std::fs::write(dir.join("pids.max"), max.to_string()).is_ok()
            && std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).is_ok();
        if !joined {
            let _ = std::fs::remove_dir(&dir);
            return PidsCgroup { dir: None };
        }
        PidsCgroup { dir: Some(dir) }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let Some(dir) = &self.dir else { return };
        // Leave it first, then remove it once the kernel has let its last task go.
        let _ = std::fs::write(
            Path::new(PIDS_CGROUP).join("cgroup.procs"),
            std::process::id().to_string(),
        );
        for _ in 0..50 {
            if std::fs::remove_dir(dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Whether a process-count cgroup can be made on this machine (for `sandbox explain`).
pub fn pids_cgroup_available() -> bool {
    Path::new(PIDS_CGROUP).join("cgroup.procs").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_roots_leave_out_the_hidden_paths_and_dev() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["home/cron", "work", "other"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("file.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("home"), root.join("link")).unwrap();
        let roots = readable_roots(&[root.join("home")]);
        assert!(roots.contains(&root.join("work")), "{roots:?}");
        assert!(roots.contains(&root.join("other")));
        assert!(roots.contains(&root.join("file.txt")));
        assert!(!roots.iter().any(|r| r.starts_with(root.join("home"))));
        assert!(
            !roots.contains(&root.join("link")),
            "symlinks are not granted"
        );
        assert!(
            !roots.contains(&root),
            "an ancestor of a hidden path is not granted whole"
        );
        assert!(!roots.iter().any(|r| r.starts_with("/dev")));
        assert!(roots.contains(&PathBuf::from("/usr")));
    }
}
