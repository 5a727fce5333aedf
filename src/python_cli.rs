//! Living beside Python Hermes, whose command is also `hermes`: this program owns
//! `hermes cron …` (and `completions` and `man`), and hands every other verb — `chat`,
//! `gateway`, `setup`, `profile` … — to Python Hermes' own `hermes`, found on PATH (or at
//! `HERMES_PYTHON_CLI`), so a Python Hermes user keeps every command they had whichever
//! `hermes` comes first. Called as `hermes-cron`, the program is `hermes cron`. This module
//! decides where a command line goes; it never parses a verb's own arguments.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Set on the command a forward starts, so a forwarded command never forwards again.
const FORWARDED: &str = "HERMES_CRON_FORWARDED";

/// Verbs this program answers itself, whatever else is installed.
/// `pause` and `resume` are Hermes 0.22's global pause, which both programs keep in the
/// same `ESTOP` file.
const OWNED: &[&str] = &["cron", "completions", "man", "help", "pause", "resume"];

/// Where a command line goes.
#[derive(Debug, PartialEq)]
pub enum Route {
    /// Parse and run it here, with these arguments.
    Here(Vec<OsString>),
    /// Run Python Hermes' CLI at this path with the same arguments.
    Python(PathBuf),
    /// A verb of Python Hermes' with no Python Hermes to run it.
    Missing(String),
}

/// Decides where `args` (the program name first) goes.
pub fn route(args: Vec<OsString>) -> Route {
    let called_as_cron = args
        .first()
        .and_then(|arg0| Path::new(arg0).file_name())
        .is_some_and(|name| name == "hermes-cron");
    if called_as_cron {
        let mut args = args;
        args.insert(1, OsString::from("cron"));
        return Route::Here(args);
    }
    let Some(verb) = verb_of(&args) else {
        // Bare `hermes` is Python Hermes' chat; options alone (`--help`) are ours.
        if args.len() == 1 && std::env::var_os(FORWARDED).is_none() {
            if let Some(cli) = find_python_cli() {
                return Route::Python(cli);
            }
        }
        return Route::Here(args);
    };
    if OWNED.contains(&verb.as_str()) || verb.starts_with('-') {
        return Route::Here(args);
    }
    if std::env::var_os(FORWARDED).is_some() {
        return Route::Here(args);
    }
    match find_python_cli() {
        Some(cli) => Route::Python(cli),
        // Without Python Hermes, `gateway` is this program's scheduler, as before.
        None if verb == "gateway" => Route::Here(args),
        None => Route::Missing(verb),
    }
}

/// The first argument that is not a global option (`-v`, `-p NAME`, `--profile NAME`).
fn verb_of(args: &[OsString]) -> Option<String> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        match arg {
            "-p" | "--profile" => {
                rest.next();
            }
            _ if arg.starts_with("--profile=") => {}
            _ if arg.starts_with("-p") && arg.len() > 2 && !arg.starts_with("--") => {}
            _ if arg.starts_with('-') && arg.trim_start_matches('-').chars().all(|c| c == 'v') => {}
            "--verbose" => {}
            _ => return Some(arg.to_string()),
        }
    }
    None
}

/// Python Hermes' `hermes`: `HERMES_PYTHON_CLI` when set, else the first `hermes` on
/// PATH that is a Python script (its first line a `#!…python…` shebang, as pip writes
/// console scripts) — never this program, under whatever name or link. Only absolute
/// PATH entries are searched: an empty, `.` or relative one names the current
/// directory, where an untrusted checkout could have left a `hermes` of its own.
pub fn find_python_cli() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("HERMES_PYTHON_CLI").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(explicit));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("hermes"))
        .find(|candidate| is_python_script(candidate))
}

fn is_python_script(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = [0u8; 256];
    let Ok(read) = file.read(&mut head) else {
        return false;
    };
    let first_line = head[..read].split(|b| *b == b'\n').next().unwrap_or(&[]);
    first_line.starts_with(b"#!") && first_line.windows(6).any(|w| w == b"python")
}

/// Replaces this process with Python Hermes' CLI, same arguments; returns only when
/// it could not be started, with the message to print.
pub fn forward(cli: &Path, args: &[OsString]) -> String {
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(cli)
        .args(args.iter().skip(1).map(OsString::as_os_str))
        .env(FORWARDED, "1")
        .exec();
    format!(
        "cannot run Python Hermes' CLI {}: {error}; set HERMES_PYTHON_CLI to its path",
        cli.display()
    )
}

/// The one-line answer for a Python Hermes verb with no Python Hermes installed.
pub fn missing(verb: &str) -> String {
    format!(
        "'hermes {verb}' is a Python Hermes command, and no Python Hermes 'hermes' was found on PATH: install Python Hermes or set HERMES_PYTHON_CLI to its path (this program runs 'hermes cron …'; see 'hermes --help')"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_verb_is_found_past_global_options() {
        assert_eq!(verb_of(&os(&["hermes", "chat"])).as_deref(), Some("chat"));
        assert_eq!(
            verb_of(&os(&["hermes", "-vv", "-p", "work", "cron", "list"])).as_deref(),
            Some("cron")
        );
        assert_eq!(
            verb_of(&os(&["hermes", "--profile=work", "gateway"])).as_deref(),
            Some("gateway")
        );
        assert_eq!(
            verb_of(&os(&["hermes", "-pwork", "setup"])).as_deref(),
            Some("setup")
        );
        assert_eq!(verb_of(&os(&["hermes", "-v"])), None);
    }

    #[test]
    fn called_as_hermes_cron_it_is_hermes_cron() {
        assert_eq!(
            route(os(&["/usr/bin/hermes-cron", "list", "--all"])),
            Route::Here(os(&["/usr/bin/hermes-cron", "cron", "list", "--all"]))
        );
    }

    #[test]
    fn cron_completions_and_options_stay_here() {
        for args in [
            &["hermes", "cron", "list"][..],
            &["hermes", "completions", "bash"],
            &["hermes", "man"],
            &["hermes", "--help"],
            &["hermes", "--version"],
        ] {
            assert_eq!(route(os(args)), Route::Here(os(args)), "{args:?}");
        }
    }

    #[test]
    fn a_shebang_names_a_python_script() {
        let dir = std::env::temp_dir().join(format!("python-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("py");
        std::fs::write(&script, "#!/opt/venv/bin/python3.11\nimport sys\n").unwrap();
        let shell = dir.join("sh");
        std::fs::write(&shell, "#!/bin/sh\nexec python3 -m hermes\n").unwrap();
        assert!(is_python_script(&script));
        assert!(!is_python_script(&shell));
        assert!(!is_python_script(&dir.join("none")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
