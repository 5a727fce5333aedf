//! The sandbox's path rules for the in-process file tools (`read_file`, `write_file`,
//! `patch`, `search_files`, `list_directory`): the same rules the kernel holds for
//! processes, checked after `..` and symlinks are resolved. /proc is refused to them
//! outright: in the daemon's own process it would describe the daemon.

use std::path::{Path, PathBuf};

use super::{real, Policy};

/// `path` resolved, if a confined run may read it.
pub fn readable(policy: &Policy, path: &Path) -> Result<PathBuf, String> {
    let resolved = real(path);
    if resolved.starts_with("/proc") {
        return Err(format!(
            "{} is the scheduler's own process information, which a sandboxed run may not read",
            path.display()
        ));
    }
    if policy.hidden.iter().any(|h| resolved.starts_with(h)) {
        return Err(format!(
            "{} is inside the Hermes home, ~/.hermes or ~/.ssh, which a sandboxed run may not read or write (sandbox {})",
            path.display(),
            policy.level.name()
        ));
    }
    Ok(resolved)
}

/// `path` resolved, if a confined run may write it: inside the work directory only.
pub fn writable(policy: &Policy, path: &Path) -> Result<PathBuf, String> {
    let resolved = readable(policy, path)?;
    if !policy.writable.iter().any(|w| resolved.starts_with(w)) {
        let workdir = policy.workdir().unwrap_or(Path::new("?"));
        return Err(format!(
            "{} is outside the job's work directory {}; a sandboxed run (sandbox {}) writes there only",
            path.display(),
            workdir.display(),
            policy.level.name()
        ));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Level;

    #[test]
    fn dots_and_symlinks_do_not_get_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (home, work) = (root.join("home"), root.join("work"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        std::os::unix::fs::symlink("/etc", work.join("etc")).unwrap();
        std::os::unix::fs::symlink(&home, work.join("h")).unwrap();
        let p = Policy::new(Level::Standard, &home, &work, &work);
        assert!(writable(&p, &work.join("a/b.txt")).is_ok());
        for bad in [
            work.join("etc/x"),
            work.join("../home/.env"),
            work.join("h/config.yaml"),
            PathBuf::from("/tmp/../etc/x"),
        ] {
            assert!(writable(&p, &bad).is_err(), "{}", bad.display());
        }
        assert!(readable(&p, &work.join("h/.env")).is_err());
        assert!(readable(&p, Path::new("/proc/self/environ")).is_err());
        assert!(readable(&p, Path::new("/etc/hostname")).is_ok());
    }
}
