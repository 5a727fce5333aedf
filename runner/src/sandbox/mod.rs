//! The confinement of everything an unattended agent run can cause (docs/SAFETY.md,
//! "Sandbox"). A [`Policy`] says what one run's processes and file tools may touch:
//! the job's work directory and a private temporary directory writable, the rest of the
//! system read-only, `$HERMES_HOME`, `~/.hermes` and `~/.ssh` neither readable nor
//! writable, the network open (`standard`) or absent (`strict`), and resource limits.
//!
//! Processes (`terminal`, `execute_code`, and under `strict` the pre-run and monitor
//! scripts) start through the hidden `hermes __sandbox-exec POLICY -- PROGRAM ARGS`
//! trampoline ([`exec`]): its own PID and mount namespaces (and network namespace under
//! `strict`), a fresh /proc, resource limits, every capability dropped, `no_new_privs`,
//! Landlock (rust-landlock) and a seccomp filter (seccompiler), then the program. The
//! in-process file tools check the same rules in [`paths`] after resolving `..` and
//! symlinks. Where the kernel cannot confine, a confined call is refused, never run
//! unconfined ([`Support::missing`]).

pub mod exec;
pub mod explain;
pub mod paths;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The hidden subcommand the trampoline answers to.
pub const EXEC_VERB: &str = "__sandbox-exec";

/// A test switch: the binary believes the kernel has no Landlock (docs/SAFETY.md).
pub const PRETEND_NO_LANDLOCK: &str = "HERMES_SANDBOX_PRETEND_NO_LANDLOCK";

/// How confined a job's run is: per job (`sandbox`), else `cron.sandbox`, else
/// `standard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Confined, no network, pre-run and monitor scripts confined too.
    Strict,
    /// Confined, network open.
    #[default]
    Standard,
    /// Not confined: runs as hermes-cron did before the sandbox.
    Off,
}

impl Level {
    pub const NAMES: &'static str = "strict, standard or off";

    pub fn parse(text: &str) -> Option<Level> {
        match text.trim().to_ascii_lowercase().as_str() {
            "strict" => Some(Level::Strict),
            "standard" => Some(Level::Standard),
            "off" => Some(Level::Off),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Strict => "strict",
            Level::Standard => "standard",
            Level::Off => "off",
        }
    }

    pub fn confined(self) -> bool {
        self != Level::Off
    }
}

/// The level of a job's runs: its `sandbox` field, else `cron.sandbox`, else
/// `standard`. A value that is none of the three is an error (the run fails rather
/// than guess a weaker level), naming where it was found.
pub fn level_of(job: &jobs::Job, config: &crate::config::Config) -> Result<Level, String> {
    let bad = |place: &str, value: &str| {
        format!(
            "{place} '{value}' is not a sandbox level: use {}",
            Level::NAMES
        )
    };
    if let Some(value) = job.sandbox().filter(|v| !v.trim().is_empty()) {
        return Level::parse(value).ok_or_else(|| bad("the job's sandbox", value));
    }
    match config
        .cron
        .sandbox
        .as_deref()
        .filter(|v| !v.trim().is_empty())
    {
        Some(value) => Level::parse(value).ok_or_else(|| bad("cron.sandbox in config.yaml", value)),
        None => Ok(Level::default()),
    }
}

/// Resource limits of a confined process and everything it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Address space of one process, bytes.
    pub memory: u64,
    /// Processes (and threads) of the confined tree.
    pub processes: u64,
    /// Largest file it may write, bytes.
    pub file_size: u64,
    pub open_files: u64,
    /// CPU seconds of one process.
    pub cpu_seconds: u64,
}

impl Default for Limits {
    /// Room for an ordinary script, a Python interpreter or a compiler; not for a
    /// memory or fork bomb.
    fn default() -> Limits {
        Limits {
            memory: 4 << 30,
            processes: 256,
            file_size: 1 << 30,
            open_files: 1024,
            cpu_seconds: 600,
        }
    }
}

/// What one run's confined processes and file tools may touch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub level: Level,
    /// Readable and writable: the work directory, then the private temporary directory.
    pub writable: Vec<PathBuf>,
    /// Neither readable nor writable.
    pub hidden: Vec<PathBuf>,
    pub network: bool,
    pub limits: Limits,
}

impl Policy {
    /// The policy of a run of `level` in `workdir` with the private temporary
    /// directory `tmp`, for the Hermes home `home`.
    pub fn new(level: Level, home: &Path, workdir: &Path, tmp: &Path) -> Policy {
        Policy {
            level,
            writable: vec![real(workdir), real(tmp)],
            hidden: hidden_paths(home),
            network: level != Level::Strict,
            limits: Limits::default(),
        }
    }

    /// The work directory (the first writable path).
    pub fn workdir(&self) -> Option<&Path> {
        self.writable.first().map(PathBuf::as_path)
    }

    /// The private temporary directory (the second writable path).
    pub fn tmp(&self) -> Option<&Path> {
        self.writable.get(1).map(PathBuf::as_path)
    }

    /// Why this policy cannot hold at all, if it cannot: a writable path that holds a
    /// hidden one (a job whose work directory is the Hermes home or the user's home).
    pub fn conflict(&self) -> Option<String> {
        let dir = self
            .writable
            .iter()
            .find(|w| self.hidden.iter().any(|h| h.starts_with(w)))?;
        Some(format!(
            "the work directory {} holds the Hermes home or ~/.ssh, which a sandboxed run may not see: give the job another --workdir, or --sandbox off",
            dir.display()
        ))
    }
}

/// The paths no sandboxed run may read or write: the Hermes home (keys, config, jobs,
/// state databases, every job's outputs), the default home `~/.hermes`, and `~/.ssh`.
pub fn hidden_paths(home: &Path) -> Vec<PathBuf> {
    let mut hidden = vec![real(home)];
    if let Some(user) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let user = Path::new(&user);
        hidden.push(real(&user.join(".hermes")));
        hidden.push(real(&user.join(".ssh")));
    }
    hidden.sort();
    hidden.dedup();
    // A path inside another hidden one adds nothing.
    let all = hidden.clone();
    hidden.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    hidden
}

/// `path` with `..` and symlinks resolved as far as it exists, the rest appended.
pub fn real(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(found) = std::fs::canonicalize(existing) {
            let mut out = found;
            for part in rest.iter().rev() {
                match part {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    std::path::Component::Normal(name) => out.push(name),
                    _ => {}
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// What the kernel offers a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Support {
    /// The Landlock ABI version, `None` where the kernel has no Landlock.
    pub landlock_abi: Option<u32>,
    pub seccomp: bool,
}

impl Support {
    /// Asks the kernel (Landlock's version query, seccomp's mode in /proc). The test
    /// switch [`PRETEND_NO_LANDLOCK`] hides Landlock.
    pub fn probe() -> Support {
        let landlock_abi = if std::env::var_os(PRETEND_NO_LANDLOCK).is_some_and(|v| v == "1") {
            None
        } else {
            landlock_version()
        };
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
        Support {
            landlock_abi,
            seccomp,
        }
    }

    /// The first feature a confined run needs and this kernel lacks, as one line.
    pub fn missing(&self) -> Option<String> {
        let feature = if self.landlock_abi.is_none() {
            "Landlock"
        } else if !self.seccomp {
            "seccomp"
        } else {
            return None;
        };
        Some(format!(
            "this kernel has no {feature}, so the sandbox cannot confine this call and it was not run; enable {feature} in the kernel, or give the job --sandbox off to run it unconfined"
        ))
    }
}

/// Landlock's ABI version (`landlock_create_ruleset` with the version flag).
fn landlock_version() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no ruleset and writes nothing.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).ok().filter(|v| *v > 0)
}

/// A private temporary directory of one confined call, removed when dropped.
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    pub fn create() -> std::io::Result<PrivateTmp> {
        let base = std::env::temp_dir();
        for _ in 0..8 {
            let path = base.join(format!("hermes-sandbox-{:016x}", rand::random::<u64>()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateTmp { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free temporary directory name"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

use std::os::unix::fs::DirBuilderExt;

/// The private work directory of a job that has none: outside every hidden path, kept
/// between runs (`<temp dir>/hermes-cron-work/<job id>`).
pub fn private_workdir(job_id: &str) -> PathBuf {
    let safe: String = job_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = std::env::temp_dir().join("hermes-cron-work").join(safe);
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    dir
}

/// The command line that runs `program args` confined by `policy`: the trampoline.
pub fn wrap(
    policy: &Policy,
    program: &str,
    args: &[&str],
) -> std::io::Result<(PathBuf, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let json = serde_json::to_string(policy).map_err(std::io::Error::other)?;
    let mut argv = vec![
        EXEC_VERB.to_string(),
        json,
        "--".to_string(),
        program.to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    Ok((exe, argv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_name() {
        for level in [Level::Strict, Level::Standard, Level::Off] {
            assert_eq!(Level::parse(level.name()), Some(level));
        }
        assert_eq!(Level::parse(" STRICT "), Some(Level::Strict));
        assert_eq!(Level::parse("loose"), None);
    }

    #[test]
    fn real_resolves_dots_and_symlinks_of_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        assert_eq!(real(&root.join("link/x/y")), Path::new("/etc/x/y"));
        assert_eq!(
            real(&root.join("a/../../etc/z")),
            root.parent().unwrap().join("etc/z")
        );
        assert_eq!(real(Path::new("/tmp/../etc/x")), Path::new("/etc/x"));
    }

    #[test]
    fn a_workdir_holding_the_home_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let tmp = dir.path().join("tmp");
        let p = Policy::new(Level::Standard, &home, dir.path(), &tmp);
        assert!(p.conflict().is_some());
        let p = Policy::new(Level::Standard, &home, &tmp, &tmp);
        assert!(p.conflict().is_none());
    }
}
