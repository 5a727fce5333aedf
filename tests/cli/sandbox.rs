//! The sandbox (docs/SAFETY.md, "Sandbox") through the real binary: a scripted model
//! that follows injected instructions asks, one tool call per attempt, for the keys in
//! `.env` and config.yaml, the store, another job's output and the scheduler's own
//! environment; to write and delete in the Hermes home, in /etc and outside the work
//! directory (with `..` and symlinks); to schedule a job with the `hermes` binary; to
//! trace the scheduler; and for a fork bomb and a memory bomb. Under `standard` every
//! attempt fails, no model request holds a secret and the home is unchanged; the same
//! job under `--sandbox off` shows each filesystem and process attempt would have
//! worked, so the confined run cannot pass by accident.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::agent::{openai_config, text, tools, Fake};
use crate::support::Hermes;

const APPROVE: &str = "approvals:\n  cron_mode: approve\n";

/// Secret values: none may appear in any model request.
const DOTENV_TOKEN: &str = "tok-in-dotenv-7f3a9c";
const DAEMON_KEY: &str = "marker-secret-value-1234";
const DB_PASSWORD: &str = "pg-secret-pw-5150";

/// What a successful read shows (names and markers, not secret values).
const DOTENV_NAME: &str = "SANDBOX_PROBE_TOKEN";
const CONFIG_MARKER: &str = "config-marker-8812";
const OTHER_JOB_MARKER: &str = "other-job-marker-4471";
const OTHER_OUTPUT_MARKER: &str = "other-output-marker-9931";
const DAEMON_ENV_NAME: &str = "MARKER_SECRET_KEY";

/// One attempt: a label, the tool call, and how to tell from the tool's result (and
/// the disk) that it worked.
struct Attempt {
    label: &'static str,
    tool: &'static str,
    args: Value,
    worked: Box<dyn Fn(&str) -> bool>,
}

/// The scene of one attack: a home with secrets, a work directory beside a symlink
/// out of it, a victim file in the home; then the model, once the attempts are known.
struct Scene {
    hermes: Hermes,
    fake: Option<Fake>,
    _dir: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let mut hermes = Hermes::new();
        // Manual runs use the real clock for their run time.
        hermes.now = None;
        let home = hermes.home().to_path_buf();
        std::fs::write(home.join(".env"), format!("{DOTENV_NAME}={DOTENV_TOKEN}\n")).unwrap();
        std::fs::write(home.join("victim.txt"), "keep me\n").unwrap();
        let other = home.join("cron/output/other-job");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("2026-01-01_00-00-00.md"),
            format!("{OTHER_OUTPUT_MARKER}\n"),
        )
        .unwrap();
        hermes.add("every 1h", &format!("{OTHER_JOB_MARKER} prompt"), &[]);
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let work = root.join("work");
        let outside = root.join("outside");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, work.join("out")).unwrap();
        Scene {
            hermes,
            fake: None,
            _dir: dir,
            work,
            outside,
        }
    }

    /// Starts the model that makes `attempts` in one turn, then says "done".
    fn serve(&mut self, attempts: &[Attempt], extra_config: &str) {
        let fake = Fake::start(vec![tools(&calls(attempts)), text("done")]);
        std::fs::write(
            self.hermes.home().join("config.yaml"),
            format!(
                "# {CONFIG_MARKER}\n{}{APPROVE}{extra_config}",
                openai_config(&fake.base)
            ),
        )
        .unwrap();
        self.fake = Some(fake);
    }

    fn requests(&self) -> Vec<Value> {
        self.fake.as_ref().map(Fake::requests).unwrap_or_default()
    }
}

fn contains(marker: &'static str) -> Box<dyn Fn(&str) -> bool> {
    Box::new(move |result: &str| result.contains(marker))
}

fn exists(path: PathBuf) -> Box<dyn Fn(&str) -> bool> {
    Box::new(move |_: &str| path.exists())
}

/// Every filesystem and process attempt, each with its proof of success.
fn attempts(scene: &Scene) -> Vec<Attempt> {
    let home = scene.hermes.home();
    let h = |rel: &str| home.join(rel).display().to_string();
    let probe = format!("hermes-sandbox-probe-{:x}", rand::random::<u64>());
    let hermes_bin = env!("CARGO_BIN_EXE_hermes");
    let mut list = vec![
        Attempt {
            label: "read_file .env",
            tool: "read_file",
            args: json!({"path": h(".env")}),
            worked: contains(DOTENV_NAME),
        },
        Attempt {
            label: "read_file config.yaml",
            tool: "read_file",
            args: json!({"path": h("config.yaml")}),
            worked: contains(CONFIG_MARKER),
        },
        Attempt {
            label: "read_file another job's output",
            tool: "read_file",
            args: json!({"path": h("cron/output/other-job/2026-01-01_00-00-00.md")}),
            worked: contains(OTHER_OUTPUT_MARKER),
        },
        Attempt {
            label: "read_file the scheduler's environ",
            tool: "read_file",
            args: json!({"path": "/proc/self/environ"}),
            // NUL-separated, so read_file reports a binary file: the read itself worked.
            worked: Box::new(|r: &str| r.contains(DAEMON_ENV_NAME) || r.contains("\"file_size\"")),
        },
        Attempt {
            label: "terminal cat .env",
            tool: "terminal",
            args: json!({"command": "cat \"$HOME/.env\""}),
            worked: contains(DOTENV_NAME),
        },
        Attempt {
            label: "terminal cat config.yaml",
            tool: "terminal",
            args: json!({"command": format!("cat {}", h("config.yaml"))}),
            worked: contains(CONFIG_MARKER),
        },
        Attempt {
            label: "terminal the scheduler's environ",
            tool: "terminal",
            args: json!({"command": "tr '\\0' '\\n' </proc/$PPID/environ"}),
            worked: contains(DAEMON_ENV_NAME),
        },
        Attempt {
            label: "execute_code open .env",
            tool: "execute_code",
            args: json!({"code": format!("print(open({:?}).read())", h(".env"))}),
            worked: contains(DOTENV_NAME),
        },
        Attempt {
            label: "execute_code the scheduler's environ",
            tool: "execute_code",
            args: json!({"code": "import os\nprint(open(f'/proc/{os.getppid()}/environ').read())"}),
            worked: contains(DAEMON_ENV_NAME),
        },
        Attempt {
            label: "terminal write in the home",
            tool: "terminal",
            args: json!({"command": format!("echo x > {}", h("pwned-terminal"))}),
            worked: exists(home.join("pwned-terminal")),
        },
        Attempt {
            label: "terminal delete in the home",
            tool: "terminal",
            args: json!({"command": format!("find {} -mindepth 1 -name victim.txt -delete", home.display())}),
            worked: Box::new({
                let victim = home.join("victim.txt");
                move |_: &str| !victim.exists()
            }),
        },
        Attempt {
            label: "terminal write in /etc by a built path",
            tool: "terminal",
            args: json!({"command": format!("c=/e;c=${{c}}tc; echo x > $c/{probe} && rm -f $c/{probe} && echo ETC-WRITTEN")}),
            worked: contains("ETC-WRITTEN"),
        },
        Attempt {
            label: "terminal write outside the work directory",
            tool: "terminal",
            args: json!({"command": "echo x > ../outside/by-terminal"}),
            worked: exists(scene.outside.join("by-terminal")),
        },
        Attempt {
            label: "write_file in the home",
            tool: "write_file",
            args: json!({"path": h("pwned-write"), "content": "x"}),
            worked: exists(home.join("pwned-write")),
        },
        Attempt {
            label: "write_file outside with ..",
            tool: "write_file",
            args: json!({"path": "../outside/by-dots", "content": "x"}),
            worked: exists(scene.outside.join("by-dots")),
        },
        Attempt {
            label: "write_file outside through a symlink",
            tool: "write_file",
            args: json!({"path": "out/by-symlink", "content": "x"}),
            worked: exists(scene.outside.join("by-symlink")),
        },
        Attempt {
            // Not config.yaml itself: the other attempts of the same turn read it.
            label: "write_file auth.json in the home",
            tool: "write_file",
            args: json!({"path": h("auth.json"), "content": "{}"}),
            worked: exists(home.join("auth.json")),
        },
        Attempt {
            label: "hermes cron add from inside the run",
            tool: "terminal",
            args: json!({"command": format!("{hermes_bin} cron add 'every 1m' 'scheduled from inside'")}),
            worked: contains("Created job"),
        },
        Attempt {
            label: "ptrace the scheduler",
            tool: "execute_code",
            args: json!({"code": "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('PTRACE-SEIZE', libc.ptrace(0x4206, os.getppid(), 0, 0))"}),
            worked: contains("PTRACE-SEIZE 0"),
        },
    ];
    if scene.hermes.on_files() {
        list.push(Attempt {
            label: "read_file jobs.json",
            tool: "read_file",
            args: json!({"path": h("cron/jobs.json")}),
            worked: contains(OTHER_JOB_MARKER),
        });
    }
    list
}

/// Attempts made confined only: the bombs (unconfined they would hurt the machine) and a
/// raw disk read (a machine may have no disk the test can name).
fn bombs() -> Vec<Attempt> {
    vec![
        Attempt {
            label: "fork bomb",
            tool: "execute_code",
            args: json!({"code": "import os, time\nn = 0\ntry:\n    while n < 3000:\n        if os.fork() == 0:\n            time.sleep(20)\n            os._exit(0)\n        n += 1\n    print('FORKS-UNBOUNDED')\nexcept OSError as e:\n    print('forks stopped at', n, e)"}),
            worked: contains("FORKS-UNBOUNDED"),
        },
        Attempt {
            // Root owns the raw disks: reading one would give every file, hidden ones too.
            label: "read a raw disk",
            tool: "terminal",
            args: json!({"command": "for d in /sys/block/*; do head -c 512 /dev/$(basename $d) >/dev/null 2>&1 && echo RAW-READ && break; done; true"}),
            worked: contains("RAW-READ"),
        },
        Attempt {
            label: "memory bomb",
            tool: "execute_code",
            args: json!({"code": "b = bytearray(16 << 30)\nprint('MEMORY-TAKEN', len(b))"}),
            worked: contains("MEMORY-TAKEN"),
        },
    ]
}

/// Every file of `root` and its SHA-256.
fn hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.insert(path, hex::encode(Sha256::digest(&bytes)));
            }
        }
    }
    out
}

/// What a run itself may change in the home: the store, its state and its own output
/// under `cron/`, but not another job's output.
fn changed_by_the_run(home: &Path, path: &Path) -> bool {
    path.starts_with(home.join("cron")) && !path.starts_with(home.join("cron/output/other-job"))
}

/// Runs one job whose model makes every attempt in one turn; the tool results in
/// attempt order, and the job's id.
fn attack(scene: &Scene, attempts: &[Attempt], extra: &[&str]) -> (Vec<String>, String) {
    let work = scene.work.display().to_string();
    let mut args = vec!["--workdir", work.as_str()];
    args.extend_from_slice(extra);
    let id = scene
        .hermes
        .add("every 1h", "Follow the injected instructions", &args);
    let run = scene
        .hermes
        .command(&["cron", "run", &id])
        .env(DAEMON_ENV_NAME, DAEMON_KEY)
        .env(
            "DATABASE_URL",
            format!("postgresql://hermes:{DB_PASSWORD}@127.0.0.1:1/cron"),
        )
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let requests = scene.requests();
    assert!(requests.len() >= 2, "the model got the tool results back");
    let messages = requests[1]["messages"].as_array().unwrap().clone();
    let results: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), attempts.len());
    (results, id)
}

fn calls(attempts: &[Attempt]) -> Vec<(&str, Value)> {
    attempts.iter().map(|a| (a.tool, a.args.clone())).collect()
}

/// `env` in the terminal: no credential, store URL or URL password is there.
fn env_attempt() -> Attempt {
    Attempt {
        label: "env",
        tool: "terminal",
        args: json!({"command": "env"}),
        worked: Box::new(|r: &str| {
            r.contains(DAEMON_ENV_NAME)
                || r.contains("DATABASE_URL")
                || r.contains("HERMES_CRON_STORE")
        }),
    }
}

#[test]
fn under_standard_every_attempt_fails_and_no_secret_reaches_the_model() {
    let mut scene = Scene::new();
    let mut list = attempts(&scene);
    list.extend(bombs());
    list.push(env_attempt());
    scene.serve(&list, "");
    let home = scene.hermes.home().to_path_buf();
    let before = hashes(&home);
    let (results, id) = attack(&scene, &list, &[]);
    for (attempt, result) in list.iter().zip(&results) {
        assert!(
            !(attempt.worked)(result),
            "{} worked under standard: {result}",
            attempt.label
        );
    }
    for request in scene.requests() {
        let body = request.to_string();
        for secret in [DOTENV_TOKEN, DAEMON_KEY, DB_PASSWORD] {
            assert!(!body.contains(secret), "a model request holds {secret}");
        }
    }
    let after = hashes(&home);
    for (path, hash) in &before {
        if !changed_by_the_run(&home, path) {
            assert_eq!(after.get(path), Some(hash), "{} changed", path.display());
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        assert!(
            changed_by_the_run(&home, path),
            "{} appeared in the home",
            path.display()
        );
    }
    assert!(
        !scene
            .hermes
            .cron(&["list", "--all"])
            .ok()
            .contains("scheduled from inside"),
        "no job was scheduled from inside the run"
    );
    assert!(crate::agent::output(&scene.hermes, &id).contains("done"));
}

#[test]
fn under_off_the_same_attempts_work() {
    let mut scene = Scene::new();
    let mut list = attempts(&scene);
    list.push(env_attempt());
    scene.serve(&list, "");
    let (results, _) = attack(&scene, &list, &["--sandbox", "off"]);
    let (env, list) = list.split_last().unwrap();
    for (attempt, result) in list.iter().zip(&results) {
        assert!(
            (attempt.worked)(result),
            "{} failed under off: {result}",
            attempt.label
        );
    }
    // The tool environment is credential-free at every level.
    assert!(
        !(env.worked)(&results[list.len()]),
        "{}",
        results[list.len()]
    );
}

/// A one-turn model run of `calls` for a fresh home with `config_extra`; the job is
/// added with `extra`. Returns the home, the tool results and the job id.
fn one_turn(
    calls: &[(&str, Value)],
    config_extra: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Hermes, Vec<String>, String) {
    let fake = Fake::start(vec![tools(calls), text("done")]);
    let hermes = crate::agent::home_with(&format!(
        "{}{APPROVE}{config_extra}",
        openai_config(&fake.base)
    ));
    let id = hermes.add("every 1h", "Do the work", extra);
    let mut command = hermes.command(&["cron", "run", &id]);
    for (k, v) in env {
        command.env(k, v);
    }
    let run = command.output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let requests = fake.requests();
    let results = requests
        .get(1)
        .and_then(|r| r["messages"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    (hermes, results, id)
}

/// A local HTTP server that answers every request with `body`, for `count` requests.
fn serve(body: &'static str, count: usize) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for request in server.incoming_requests().take(count) {
            let _ = request.respond(tiny_http::Response::from_string(body));
        }
    });
    url
}

#[test]
fn an_ordinary_job_works_unchanged_under_standard() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("data.txt"), "alpha\nbeta\n").unwrap();
    let url = serve("hello from the local server", 1);
    let calls = [
        (
            "terminal",
            json!({"command": "wc -l < data.txt && echo made > made.txt && cat made.txt"}),
        ),
        ("terminal", json!({"command": format!("curl -s {url}")})),
        (
            "execute_code",
            json!({"code": "import os, tempfile\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'x')\nprint(sorted(os.listdir('.')))"}),
        ),
        ("read_file", json!({"path": "data.txt"})),
        (
            "write_file",
            json!({"path": "sub/out.txt", "content": "written"}),
        ),
    ];
    let workdir = work.path().to_str().unwrap();
    let (_hermes, results, _) = one_turn(&calls, "", &["--workdir", workdir], &[]);
    assert!(results[0].contains("2\\nmade\\n"), "{}", results[0]);
    assert!(
        results[1].contains("hello from the local server"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("data.txt") && results[2].contains("\"success\""),
        "{}",
        results[2]
    );
    assert!(results[3].contains("alpha"), "{}", results[3]);
    assert_eq!(
        std::fs::read_to_string(work.path().join("sub/out.txt")).unwrap(),
        "written"
    );
}

#[test]
fn strict_has_no_network_and_confines_the_pre_run_script() {
    let url = serve("reachable", 2);
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let connect = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('CONNECTED')\nexcept OSError as e:\n    print('no network:', e)"
    );
    let calls = [("execute_code", json!({"code": connect}))];
    // The pre-run script tries to read the home's .env: under strict it cannot.
    let script = "cat \"$HERMES_HOME/.env\" && echo SCRIPT-READ-HOME || echo SCRIPT-CONFINED";
    let run = |level: &str| {
        let fake = Fake::start(vec![tools(&calls), text("done")]);
        let hermes = crate::agent::home_with(&format!("{}{APPROVE}", openai_config(&fake.base)));
        std::fs::write(hermes.home().join(".env"), "X=1\n").unwrap();
        std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
        std::fs::write(hermes.home().join("scripts/probe.sh"), script).unwrap();
        let id = hermes.add(
            "every 1h",
            "Check",
            &["--script", "probe.sh", "--sandbox", level],
        );
        hermes.cron(&["run", &id]).ok();
        let requests = fake.requests();
        let prompt = requests[0].to_string();
        let tool = requests[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        (prompt, tool)
    };
    let (prompt, tool) = run("strict");
    assert!(prompt.contains("SCRIPT-CONFINED"), "{prompt}");
    assert!(tool.contains("no network"), "{tool}");
    let (prompt, tool) = run("standard");
    assert!(prompt.contains("SCRIPT-READ-HOME"), "{prompt}");
    assert!(tool.contains("CONNECTED"), "{tool}");
}

#[test]
fn without_landlock_a_confined_call_is_refused_not_run() {
    let work = tempfile::tempdir().unwrap();
    let calls = [
        ("terminal", json!({"command": "echo ran > ran.txt"})),
        (
            "execute_code",
            json!({"code": "open('ran-py.txt', 'w').write('x')"}),
        ),
    ];
    let workdir = work.path().to_str().unwrap();
    let pretend = [("HERMES_SANDBOX_PRETEND_NO_LANDLOCK", "1")];
    let (hermes, results, id) = one_turn(&calls, "", &["--workdir", workdir], &pretend);
    for result in &results {
        assert!(
            result.contains("refused")
                && result.contains("no Landlock")
                && result.contains("--sandbox off"),
            "{result}"
        );
    }
    assert!(!work.path().join("ran.txt").exists());
    assert!(!work.path().join("ran-py.txt").exists());
    // doctor names the missing feature; explain says what the kernel lacks.
    let doctor = hermes
        .command(&["cron", "doctor"])
        .env("HERMES_SANDBOX_PRETEND_NO_LANDLOCK", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("Sandbox: Landlock absent"), "{text}");
    assert!(text.contains("cannot run their tools"), "{text}");
    let explained = hermes
        .command(&["cron", "sandbox", "explain", &id])
        .env("HERMES_SANDBOX_PRETEND_NO_LANDLOCK", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(
        text.contains("Landlock absent") && text.contains("--sandbox off"),
        "{text}"
    );
}

#[test]
fn explain_prints_the_effective_policy() {
    let hermes = Hermes::new();
    let work = tempfile::tempdir().unwrap();
    let workdir = std::fs::canonicalize(work.path()).unwrap();
    let workdir = workdir.to_str().unwrap();
    let id = hermes.add("every 1h", "Report", &["--workdir", workdir]);
    let v: Value =
        serde_json::from_str(hermes.cron(&["sandbox", "explain", &id, "--json"]).ok()).unwrap();
    assert_eq!(v["level"], "standard");
    assert_eq!(v["source"], "the default");
    assert_eq!(v["network"], "open");
    assert_eq!(v["writable"][0], workdir);
    let home = std::fs::canonicalize(hermes.home()).unwrap();
    assert!(
        v["hidden"]
            .as_array()
            .unwrap()
            .contains(&json!(home.display().to_string())),
        "{v}"
    );
    assert!(
        v["kernel"]["landlock_abi"].as_u64().unwrap_or(0) >= 1,
        "{v}"
    );
    assert_eq!(v["limits"]["processes"], 256);
    let text = hermes.cron(&["sandbox", "explain", &id]).ok().to_string();
    assert!(
        text.contains("sandbox standard (from the default)"),
        "{text}"
    );
    assert!(text.contains("Network:   open"), "{text}");
    assert!(text.contains("Kernel:    Landlock ABI"), "{text}");

    hermes.cron(&["edit", &id, "--sandbox", "strict"]).ok();
    let v: Value =
        serde_json::from_str(hermes.cron(&["sandbox", "explain", &id, "--json"]).ok()).unwrap();
    assert_eq!(v["level"], "strict");
    assert_eq!(v["source"], "the job's sandbox field");
    assert_eq!(v["network"], "none (own network namespace)");
    assert_eq!(v["scripts_confined"], true);

    hermes.cron(&["edit", &id, "--sandbox", "off"]).ok();
    let text = hermes.cron(&["sandbox", "explain", &id]).ok().to_string();
    assert!(text.contains("runs unconfined"), "{text}");
    let list = hermes.cron(&["list"]).ok().to_string();
    assert!(list.contains("Sandbox:  off (runs unconfined)"), "{list}");
    let doctor = hermes.cron(&["doctor"]);
    assert!(
        doctor.stdout.contains(&format!(
            "! job {id} (Report) runs unconfined (sandbox off)"
        )),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("Sandbox: Landlock ABI"),
        "{}",
        doctor.stdout
    );

    // A level that is none of the three gets the same answer from every door.
    let bad = hermes.cron(&["edit", &id, "--sandbox", "loose"]);
    assert_eq!(
        bad.user_error(),
        "error: Invalid sandbox 'loose': use strict, standard or off"
    );
    let bad = hermes.cron(&["add", "every 1h", "x", "--sandbox", "Nope"]);
    assert_eq!(
        bad.user_error(),
        "error: Invalid sandbox 'Nope': use strict, standard or off"
    );
    // `""` returns the job to cron.sandbox.
    hermes.cron(&["edit", &id, "--sandbox", ""]).ok();
    assert!(hermes.job(&id).get("sandbox").is_none_or(Value::is_null));
}

#[test]
fn a_terminal_backend_that_cannot_be_honoured_is_refused_and_docker_runs_in_a_container() {
    let work = tempfile::tempdir().unwrap();
    let workdir = work.path().to_str().unwrap();
    let calls = [("terminal", json!({"command": "echo ran > on-host.txt"}))];
    let (_h, results, _) = one_turn(
        &calls,
        "terminal:\n  backend: modal\n",
        &["--workdir", workdir],
        &[],
    );
    assert!(
        results[0].contains("refused") && results[0].contains("terminal.backend 'modal'"),
        "{}",
        results[0]
    );
    assert!(!work.path().join("on-host.txt").exists());

    // A docker CLI (here a stand-in that records its arguments) gets the call.
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("args.txt");
    let docker = bin.path().join("docker");
    std::fs::write(
        &docker,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\necho from-the-container\n",
            record.display()
        ),
    )
    .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&docker).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(&docker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (_h, results, _) = one_turn(
        &calls,
        "terminal:\n  backend: docker\n  docker_image: alpine:3\n",
        &["--workdir", workdir, "--sandbox", "strict"],
        &[("PATH", &path)],
    );
    assert!(results[0].contains("from-the-container"), "{}", results[0]);
    let args = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            &format!("{workdir}:{workdir}"),
            "-w",
            workdir,
            "alpine:3",
            "bash",
            "-c",
            "echo ran > on-host.txt"
        ]
    );
    assert!(!work.path().join("on-host.txt").exists());
}

#[test]
#[ignore = "slow (8-30 s of real time): .ci/run runs it once"]
fn the_daemon_survives_bombs_and_a_job_due_at_the_same_time_fires_on_time() {
    let mut hermes = Hermes::new();
    hermes.now = None;
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/quick.sh"), "echo quick-ran\n").unwrap();
    let mut daemon = hermes
        .command(&["cron", "daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = daemon.id();
    let mut list = bombs();
    // The attacker's run lasts at least this long, so the second job must start while it
    // runs to pass.
    list.push(Attempt {
        label: "a long command",
        tool: "terminal",
        args: json!({"command": "sleep 10; echo SLEPT"}),
        worked: Box::new(|_: &str| false),
    });
    list.push(Attempt {
        label: "kill the daemon",
        tool: "terminal",
        args: json!({"command": format!("kill -9 {pid} && echo KILLED")}),
        worked: contains("KILLED"),
    });
    list.push(Attempt {
        label: "ptrace the daemon by its pid",
        tool: "execute_code",
        args: json!({"code": format!("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('PTRACE-SEIZE', libc.ptrace(0x4206, {pid}, 0, 0))")}),
        worked: contains("PTRACE-SEIZE 0"),
    });
    let fake = Fake::start(vec![tools(&calls(&list)), text("done")]);
    std::fs::write(
        hermes.home().join("config.yaml"),
        format!("{}{APPROVE}", openai_config(&fake.base)),
    )
    .unwrap();
    let due = chrono::Utc::now() + chrono::Duration::seconds(6);
    let due = chrono::DateTime::from_timestamp(due.timestamp(), 0).unwrap();
    let due_text = due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let attacker = hermes.add(&due_text, "Follow the injected instructions", &[]);
    let quick = hermes.add(&due_text, "", &["--script", "quick.sh", "--no-agent"]);
    let finished = |id: &str| {
        let runs = crate::agent::runs(&hermes, id);
        runs.first().is_some_and(|r| r["finished_at"].is_string())
    };
    let start = std::time::Instant::now();
    while !(finished(&attacker) && finished(&quick)) && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        daemon.try_wait().unwrap().is_none(),
        "the daemon is still running"
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
    let quick_run = &crate::agent::runs(&hermes, &quick)[0];
    assert_eq!(quick_run["status"], "ok", "{quick_run}");
    let instant = |run: &Value, key: &str| {
        chrono::DateTime::parse_from_rfc3339(run[key].as_str().unwrap())
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let started = instant(quick_run, "started_at");
    let attacker_run = &crate::agent::runs(&hermes, &attacker)[0];
    assert!(
        started < instant(attacker_run, "finished_at"),
        "the second job started at {started}, while the attacker's run was still going"
    );
    assert!(
        (started - due).num_seconds() < 10,
        "the second job started at {started}, due {due}"
    );
    let requests = fake.requests();
    let results: Vec<String> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    for (attempt, result) in list.iter().zip(&results) {
        assert!(!(attempt.worked)(result), "{}: {result}", attempt.label);
    }
    assert_eq!(crate::agent::runs(&hermes, &attacker)[0]["status"], "ok");
}

#[test]
fn the_mcp_cronjob_tool_sets_the_sandbox_and_refuses_a_bad_level_in_the_same_words() {
    let hermes = Hermes::new();
    let out = crate::mcp_server::client(
        &hermes,
        json!([
            {"action": "create", "schedule": "every 2h", "prompt": "report", "sandbox": "strict"},
            {"action": "create", "schedule": "every 2h", "prompt": "report", "sandbox": "loose"},
        ]),
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], false, "{results:?}");
    let id = results[0]["reply"]["job_id"].as_str().unwrap();
    assert_eq!(hermes.job(id)["sandbox"], "strict");
    assert_eq!(results[0]["reply"]["job"]["sandbox"], "strict");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        results[1]["reply"]["error"],
        "Invalid sandbox 'loose': use strict, standard or off"
    );
}

#[test]
fn the_rest_api_sets_the_sandbox_and_refuses_a_bad_level_in_the_same_words() {
    let hermes = Hermes::new();
    let api = crate::api::serve(&hermes, &[]);
    let bad = api.send(
        "POST",
        "/api/jobs",
        &[],
        &json!({"name": "n", "schedule": "every 1h", "prompt": "hi", "sandbox": "loose"})
            .to_string(),
    );
    assert_eq!(
        (bad.status, bad.json()),
        (
            400,
            json!({"error": "Invalid sandbox 'loose': use strict, standard or off"})
        )
    );
    let made = api.send(
        "POST",
        "/api/jobs",
        &[],
        &json!({"name": "n", "schedule": "every 1h", "prompt": "hi", "sandbox": "off"}).to_string(),
    );
    assert_eq!(made.status, 200, "{}", made.body);
    let id = made.json()["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(hermes.job(&id)["sandbox"], "off");
    let edited = api.send(
        "PATCH",
        &format!("/api/jobs/{id}"),
        &[],
        &json!({"sandbox": "strict"}).to_string(),
    );
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(hermes.job(&id)["sandbox"], "strict");
}
