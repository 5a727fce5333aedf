//! Where `terminal` and `execute_code` run: config.yaml's `terminal.backend`, as Python
//! Hermes reads it (docs/SAFETY.md, "Sandbox"). `local` (or unset) runs on this host
//! under the sandbox. `docker` and `podman` run each call in a fresh container of
//! `terminal.docker_image` through that CLI, the work directory mounted at the same
//! path, no network under `strict`. Any other backend, or a container backend whose CLI
//! is not installed, refuses the call with one line: a user who asked for a container
//! never gets their commands run on the host instead.

use std::path::{Path, PathBuf};

use crate::config::Config;

/// Hermes 0.22's default image (`hermes_cli/config_defaults.py`).
pub const DEFAULT_IMAGE: &str = "nousresearch/hermes-sandbox:desktop";

/// Where a run's tool processes start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Backend {
    /// This host, under the sandbox.
    #[default]
    Local,
    /// A fresh container per call through this CLI (`docker` or `podman`).
    Container { cli: PathBuf, image: String },
    /// Cannot be honoured here: the one-line reason every call gets.
    Refused(String),
}

impl Backend {
    /// The backend config.yaml asks for.
    pub fn of(config: &Config) -> Backend {
        let terminal = config.extra.get("terminal");
        let key = |name: &str| {
            terminal
                .and_then(|t| t.get(name))
                .and_then(|v| v.as_str())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let backend = key("backend").unwrap_or("local").to_ascii_lowercase();
        match backend.as_str() {
            "local" => Backend::Local,
            "docker" | "podman" => {
                let image = key("docker_image").unwrap_or(DEFAULT_IMAGE).to_string();
                // Either CLI speaks the same `run`; the named one first.
                let other = if backend == "docker" { "podman" } else { "docker" };
                match find_on_path(&backend).or_else(|| find_on_path(other)) {
                    Some(cli) => Backend::Container { cli, image },
                    None => Backend::Refused(format!(
                        "terminal.backend is {backend} in config.yaml but neither docker nor podman is installed, so the command was not run (never on the host instead): install one, or set terminal.backend: local"
                    )),
                }
            }
            other => Backend::Refused(format!(
                "terminal.backend '{other}' in config.yaml is not available in hermes-cron, so the command was not run (never on the host instead): use local (sandboxed), docker or podman"
            )),
        }
    }

    /// The container command line for `program args` in `workdir`; no network when
    /// `network` is false. Only for [`Backend::Container`].
    pub fn container_args(
        image: &str,
        workdir: &Path,
        network: bool,
        stdin: bool,
        program: &str,
        args: &[&str],
    ) -> Vec<String> {
        let dir = workdir.display().to_string();
        let mut argv = vec!["run".to_string(), "--rm".to_string()];
        if stdin {
            argv.push("-i".into());
        }
        if !network {
            argv.extend(["--network".into(), "none".into()]);
        }
        argv.extend([
            "-v".into(),
            format!("{dir}:{dir}"),
            "-w".into(),
            dir,
            image.to_string(),
            program.to_string(),
        ]);
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }
}

/// An absolute PATH entry holding an executable `name`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(yaml: &str) -> Backend {
        Backend::of(&Config::parse(yaml, Path::new("config.yaml")).unwrap())
    }

    #[test]
    fn unknown_backends_are_refused_not_run_locally() {
        assert_eq!(backend(""), Backend::Local);
        assert_eq!(backend("terminal:\n  backend: local\n"), Backend::Local);
        match backend("terminal:\n  backend: modal\n") {
            Backend::Refused(why) => assert!(why.contains("'modal'") && why.contains("not run")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_container_mounts_the_workdir_and_drops_the_network_when_asked() {
        let argv =
            Backend::container_args("img", Path::new("/w"), false, true, "bash", &["-c", "ls"]);
        assert_eq!(
            argv.join(" "),
            "run --rm -i --network none -v /w:/w -w /w img bash -c ls"
        );
    }
}
