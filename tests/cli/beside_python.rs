//! Living beside Python Hermes (0.19, from its cached venv), whose command is also
//! `hermes`: `hermes cron …` is ours, every other verb reaches Python Hermes' CLI, the
//! program called `hermes-cron` is `hermes cron`, and with the example plugin as its
//! `cron.provider` Python Hermes' gateway ticker fires nothing while our scheduler fires
//! each due job once.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{created_id, venv_python, Hermes};

/// The venv's bin directory, which holds Python Hermes' `hermes` console script.
fn python_bin() -> PathBuf {
    let python = venv_python("python-hermes", "Python Hermes beside hermes-cron");
    python.parent().unwrap().to_path_buf()
}

/// PATH with Python Hermes' bin directory first.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn output(mut command: Command) -> (Option<i32>, String, String) {
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_verb_but_cron_reaches_python_hermes_and_cron_stays_ours() {
    let hermes = Hermes::new();
    let path = path_with(&python_bin());
    let run = |args: &[&str]| {
        let mut command = hermes.command(args);
        command.env("PATH", &path);
        output(command)
    };
    let (code, out, _) = run(&["gateway", "--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("usage: hermes gateway"), "{out}");
    assert!(out.contains("messaging gateway"), "{out}");
    let (code, out, _) = run(&["chat", "--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("usage: hermes chat"), "{out}");
    let (code, out, err) = run(&["cron", "add", "every 2h", "report", "--name", "ours"]);
    assert_eq!(code, Some(0), "{err}");
    let id = created_id(&out);
    let (code, out, _) = run(&["cron", "list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(&id) && out.contains("ours"), "{out}");
    // Global options before the verb do not hide it.
    let (code, out, _) = run(&["-v", "cron", "list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(&id), "{out}");
}

#[test]
fn without_python_hermes_its_verbs_are_named_and_gateway_is_our_scheduler() {
    let hermes = Hermes::new();
    let run = hermes.run(&["chat"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr.trim_end(),
        "error: 'hermes chat' is a Python Hermes command, and no Python Hermes 'hermes' was found on PATH: install Python Hermes or set HERMES_PYTHON_CLI to its path (this program runs 'hermes cron …'; see 'hermes --help')"
    );
    let help = hermes.run(&["gateway", "--help"]);
    assert!(help.ok().contains("hermes cron service"), "{}", help.stdout);
}

#[test]
fn called_hermes_cron_the_program_is_hermes_cron() {
    let hermes = Hermes::new();
    let link = hermes.home().join("bin/hermes-cron");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_hermes"), &link).unwrap();
    let mut add = Command::new(&link);
    add.args(["add", "every 2h", "report"])
        .env_clear()
        .env("HERMES_HOME", hermes.home())
        .env("HOME", hermes.home())
        .env("HERMES_TIMEZONE", "UTC")
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    let (code, out, err) = output(add);
    assert_eq!(code, Some(0), "{err}");
    let id = created_id(&out);
    assert!(hermes.cron(&["list"]).ok().contains(&id));
}

#[test]
#[ignore = "slow (8-30 s of real time): .ci/run runs it once"]
fn with_the_plugin_python_hermes_gateway_fires_nothing_and_ours_fires_once() {
    let mut hermes = Hermes::new();
    hermes.now = None;
    let python = venv_python("python-hermes", "Python Hermes' cron provider");
    let home = hermes.home();
    std::fs::create_dir_all(home.join("plugins/hermes_cron")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/python-hermes/plugins/hermes_cron/__init__.py"),
        home.join("plugins/hermes_cron/__init__.py"),
    )
    .unwrap();
    std::fs::create_dir_all(home.join("scripts")).unwrap();
    let side = home.join("fired.txt");
    std::fs::write(
        home.join("scripts/fire.sh"),
        format!("#!/bin/sh\necho fired >> {}\necho done\n", side.display()),
    )
    .unwrap();
    // Due a second after creation, then every hour.
    let id = hermes.add("every 1h", "", &["--script", "fire.sh", "--no-agent"]);
    let mut store: serde_json::Value =
        serde_json::from_slice(&std::fs::read(hermes.jobs_path()).unwrap()).unwrap();
    let due = (chrono::Utc::now() - chrono::Duration::seconds(5)).to_rfc3339();
    store["jobs"][0]["next_run_at"] = serde_json::json!(due);
    std::fs::write(
        hermes.jobs_path(),
        serde_json::to_vec_pretty(&store).unwrap(),
    )
    .unwrap();

    // Python Hermes' gateway starts its cron trigger the way it always does: resolve the
    // provider from config.yaml and run its start() in a thread (here for 4 s, ticking
    // every second if it ticked at all).
    let gateway = |config: &str| {
        std::fs::write(home.join("config.yaml"), config).unwrap();
        let script = "import threading, time\n\
from cron.scheduler_provider import resolve_cron_scheduler\n\
p = resolve_cron_scheduler()\n\
print(p.name, flush=True)\n\
stop = threading.Event()\n\
t = threading.Thread(target=p.start, args=(stop,), kwargs={'interval': 1}, daemon=True)\n\
t.start(); time.sleep(4); stop.set(); t.join(5)\n";
        let mut command = Command::new(&python);
        command
            .args(["-c", script])
            .env("HERMES_HOME", home)
            .env("HOME", home);
        command.spawn().unwrap()
    };
    let python_side = gateway("cron:\n  provider: hermes_cron\n");
    let tick = hermes.run(&["cron", "tick"]);
    let tick = tick.ok().to_string();
    let waited = python_side.wait_with_output().unwrap();
    assert!(waited.status.success());
    assert!(tick.contains(&format!("({id}): ok")), "{tick}");
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "fired\n");
    // Once more after the Python side has had its four seconds: still one fire.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "fired\n");

    // The provider Python Hermes' gateway resolves: ours with the plugin configured, its
    // own ticker without.
    let provider = || {
        let out = Command::new(&python)
            .args([
                "-c",
                "from cron.scheduler_provider import resolve_cron_scheduler as r; print(r().name)",
            ])
            .env("HERMES_HOME", home)
            .env("HOME", home)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(provider(), "hermes-cron");
    std::fs::write(home.join("config.yaml"), "").unwrap();
    assert_eq!(provider(), "builtin");
}

/// A `hermes` script in the current directory is never taken for Python Hermes through
/// an empty, `.` or relative PATH entry: an untrusted checkout could carry one.
#[test]
fn a_hermes_script_reached_through_a_relative_path_entry_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let hermes = Hermes::new();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("ran");
    let script = format!(
        "#!/usr/bin/env python3\nopen({:?}, 'w').write('ran')\n",
        marker.display().to_string()
    );
    for dir in [work.path().to_path_buf(), work.path().join("bin")] {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hermes"), &script).unwrap();
        std::fs::set_permissions(dir.join("hermes"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let system = std::env::var("PATH").unwrap_or_default();
    for path in [
        format!(":{system}"),
        format!("{system}:"),
        format!(".:{system}"),
        format!("bin:{system}"),
    ] {
        let mut command = hermes.command(&["chat"]);
        command.env("PATH", &path).current_dir(work.path());
        let (code, _, err) = output(command);
        assert_eq!(code, Some(1), "PATH={path}: {err}");
        assert!(
            err.contains("no Python Hermes 'hermes' was found on PATH"),
            "PATH={path}: {err}"
        );
        assert!(!marker.exists(), "PATH={path} ran ./hermes");
    }
}
