//! Several hosts on one PostgreSQL store, through the real binary: each host has its own
//! HERMES_HOME and shares nothing but the database (a throwaway cluster started once per
//! test run by `scripts/postgres/test-cluster.sh`, removed when the tests exit).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use serde_json::Value;

use crate::support::{create_database, fixture, postgres_database, start_postgres_cluster};

/// One host: its own HERMES_HOME (scripts, config), the shared database.
pub(crate) struct Host {
    dir: tempfile::TempDir,
    store: String,
    pub(crate) name: String,
}

impl Host {
    pub(crate) fn new(store: &str, name: &str) -> Host {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
        Host {
            dir,
            store: store.to_string(),
            name: name.to_string(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermes"));
        cmd.args(args)
            .env_clear()
            .env("HERMES_HOME", self.path())
            .env("HOME", self.path())
            .env("HERMES_TIMEZONE", "UTC")
            .env("TZ", "UTC")
            .env("HERMES_MACHINE_ID", &self.name)
            .env("HERMES_CRON_STORE", &self.store)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null());
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "hermes {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    pub(crate) fn script(&self, name: &str, body: &str) {
        std::fs::write(self.path().join("scripts").join(name), body).unwrap();
    }

    pub(crate) fn daemon(&self) -> Daemon {
        let child = self
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Daemon(child)
    }

    /// A daemon whose log (stderr) goes to `log`.
    pub(crate) fn daemon_logging_to(&self, log: &Path) -> Daemon {
        let child = self
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        Daemon(child)
    }
}

/// A daemon, or a wrapper (faketime) that leads a process group with the daemon in it.
pub(crate) struct Daemon(pub(crate) Child);

impl Daemon {
    /// Signals the child's process group when it leads one, else the child.
    fn signal(&self, signal: i32) {
        let pid = self.0.id() as i32;
        // SAFETY: signalling the child we started, or the group it leads.
        unsafe {
            if libc::kill(-pid, signal) != 0 {
                libc::kill(pid, signal);
            }
        }
    }

    pub(crate) fn stop(mut self) {
        self.signal(libc::SIGTERM);
        let _ = self.0.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Only a child not reaped yet: a reaped one's pid may be another process's now.
        if matches!(self.0.try_wait(), Ok(None)) {
            self.signal(libc::SIGKILL);
            let _ = self.0.wait();
        }
    }
}

pub(crate) fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn two_hosts_on_one_database_run_each_occurrence_once_and_see_each_other() {
    let store = postgres_database();
    let side: PathBuf = tempfile::tempdir().unwrap().keep().join("side.txt");
    let (a, b) = (Host::new(&store, "host-a"), Host::new(&store, "host-b"));
    for host in [&a, &b] {
        host.script(
            "tick.sh",
            &format!(
                "echo \"$HERMES_JOB_ID {}\" >> {}\necho done\n",
                host.name,
                side.display()
            ),
        );
    }
    let due =
        (Utc::now() + chrono::Duration::seconds(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let ids: Vec<String> = (0..12)
        .map(|n| {
            let out = a.ok(&[
                "cron",
                "add",
                &due,
                "--script",
                "tick.sh",
                "--no-agent",
                "--name",
                &format!("job{n}"),
            ]);
            out.lines()
                .next()
                .unwrap()
                .trim_start_matches("Created job: ")
                .to_string()
        })
        .collect();
    let (first, second) = (a.daemon(), b.daemon());
    assert!(wait_for(Duration::from_secs(15), || {
        let jobs = b.json(&["cron", "list", "--all", "--json"]);
        jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["state"] == "completed")
    }));
    let status = a.json(&["cron", "store", "status", "--json"]);
    assert_eq!(status["backend"], "postgresql");
    assert_eq!(status["schema_version"], 7);
    let hosts: Vec<&str> = status["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert!(
        hosts.contains(&"host-a") && hosts.contains(&"host-b"),
        "{status}"
    );
    std::thread::sleep(Duration::from_secs(1));
    first.stop();
    second.stop();
    let lines = std::fs::read_to_string(&side).unwrap();
    let mut ran: BTreeMap<&str, usize> = BTreeMap::new();
    for line in lines.lines() {
        *ran.entry(line.split(' ').next().unwrap()).or_default() += 1;
    }
    let runs = a.json(&["cron", "runs", "--json", "--limit", "100"]);
    for id in &ids {
        assert_eq!(
            ran.get(id.as_str()),
            Some(&1),
            "job {id} ran {:?} times",
            ran.get(id.as_str())
        );
        let ok: Vec<&Value> = runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["job_id"] == id.as_str())
            .collect();
        assert_eq!(ok.len(), 1, "one ledger row for {id}");
        assert_eq!(ok[0]["status"], "ok");
        // Whichever host ran it, either host prints its output document.
        for host in [&a, &b] {
            let document = host.ok(&["cron", "output", &ok[0]["id"].to_string()]);
            assert!(document.contains("## Response\n\ndone"), "{document}");
        }
    }
    // Both hosts took part: the claim is shared, not a leader's.
    assert!(lines.contains("host-a") || lines.contains("host-b"));
    // Neither host wrote a jobs.json: the database is the store.
    assert!(!a.path().join("cron/jobs.json").exists() && !b.path().join("cron/jobs.json").exists());
}

#[test]
fn import_then_export_keeps_every_field_of_python_hermes_stores() {
    let names = [
        "newer_full_store.json",
        "old_bare_list_store.json",
        "jobs_keyed_by_id_store.json",
    ];
    let imported: Vec<(Host, PathBuf, Value)> = names
        .iter()
        .map(|name| {
            let host = Host::new(&postgres_database(), "host-a");
            let path = fixture(name);
            let out = host.ok(&["cron", "store", "import", "--from", path.to_str().unwrap()]);
            assert!(out.contains("added"), "{out}");
            let first = host.json(&["cron", "store", "export"]);
            (host, path, first)
        })
        .collect();
    // Idempotent: a second import, a second later (a next run computed from "now" must
    // not move), updates the same jobs and changes nothing.
    std::thread::sleep(Duration::from_millis(1100));
    for (name, (host, path, first)) in names.iter().zip(&imported) {
        let again = host.ok(&["cron", "store", "import", "--from", path.to_str().unwrap()]);
        assert!(again.contains(" 0 added"), "{again}");
        let second = host.json(&["cron", "store", "export"]);
        assert_eq!(first["jobs"], second["jobs"], "{name}");
        // Every field of the file's records is in the store, unknown keys as they were.
        let exported = first["jobs"].as_array().unwrap();
        let original: Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap_or(Value::Null);
        let count = match &original {
            Value::Array(a) => a.len(),
            Value::Object(o) => match o.get("jobs") {
                Some(Value::Array(a)) => a.len(),
                Some(Value::Object(m)) => m.len(),
                _ => 0,
            },
            _ => 0,
        };
        assert_eq!(exported.len(), count, "{name}: every job exported");
        for job in exported {
            let id = job["id"].as_str().unwrap();
            let source = match &original {
                Value::Array(a) => a.iter().find(|j| j["id"] == id).cloned(),
                Value::Object(o) => match o.get("jobs") {
                    Some(Value::Array(a)) => a.iter().find(|j| j["id"] == id).cloned(),
                    Some(Value::Object(m)) => m.get(id).cloned(),
                    _ => None,
                },
                _ => None,
            }
            .unwrap_or(Value::Null);
            for (key, value) in source.as_object().into_iter().flatten() {
                let kept = &job[key.as_str()];
                let healed = [
                    "schedule",
                    "schedule_display",
                    "repeat",
                    "deliver",
                    "skills",
                    "skill",
                    "next_run_at",
                    "created_at",
                    "last_run_at",
                    "paused_at",
                    "enabled",
                    "state",
                ];
                if !healed.contains(&key.as_str()) {
                    assert_eq!(kept, value, "{name}: job {id} key {key}");
                } else {
                    assert!(
                        !kept.is_null() || value.is_null(),
                        "{name}: job {id} lost {key}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_store_url_that_is_not_postgresql_or_not_reachable_is_a_clear_error() {
    let host = Host::new("mysql://nope", "host-a");
    let out = host.run(&["cron", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HERMES_CRON_STORE 'mysql://nope' is not a PostgreSQL URL"),
        "{err}"
    );
    let down = Host::new(
        "postgresql://postgres@/x?host=/nonexistent-dir&connect_timeout=2",
        "host-a",
    );
    let out = down.run(&["cron", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PostgreSQL store postgresql://postgres@/x")
            && err.contains("check that the database is up"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A cluster of this test's own (the ones that restart it must not disturb the others),
/// its data directory and the URL of a fresh database on it.
fn own_cluster() -> (PathBuf, String) {
    let base = start_postgres_cluster();
    let dir = PathBuf::from(base.rsplit("host=").next().unwrap());
    (dir, create_database(&base, "jobs"))
}

/// Runs `pg_ctl` of the installed PostgreSQL as the `postgres` user.
pub(crate) fn pg_ctl(args: &[&str]) {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin/pg_ctl"))
        .find(|p| p.exists())
        .unwrap();
    let status = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(&bin)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pg_ctl {args:?}");
}

/// Stops the cluster of [`own_cluster`] (fast: open connections are cut).
fn stop_cluster(dir: &Path) {
    let data = dir.join("data");
    pg_ctl(&["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]);
}

/// Starts it again as it was started, on its own socket directory.
fn start_cluster(dir: &Path) {
    let data = dir.join("data");
    pg_ctl(&[
        "-D",
        data.to_str().unwrap(),
        "-l",
        dir.join("server.log").to_str().unwrap(),
        "-o",
        &format!("-k {} -c listen_addresses= -c fsync=off", dir.display()),
        "-w",
        "start",
    ]);
}

fn add_once(host: &Host, at: chrono::DateTime<Utc>, script: &str, name: &str) -> String {
    let at = at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let out = host.ok(&[
        "cron",
        "add",
        &at,
        "--script",
        script,
        "--no-agent",
        "--name",
        name,
    ]);
    out.lines()
        .next()
        .unwrap()
        .trim_start_matches("Created job: ")
        .to_string()
}

pub(crate) fn marks(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "slow (~30 s: two 10 s leases run out); run by .ci/run"]
fn a_host_stopped_for_two_leases_while_holding_a_claim_never_runs_it_twice() {
    let store = postgres_database();
    let side = tempfile::tempdir().unwrap().keep();
    let (a, b) = (Host::new(&store, "host-a"), Host::new(&store, "host-b"));
    for host in [&a, &b] {
        // One run at a time: the second due job waits, claimed, behind the first.
        std::fs::write(
            host.path().join("config.yaml"),
            "cron:\n  max_parallel_jobs: 1\n",
        )
        .unwrap();
        host.script(
            "slow.sh",
            &format!(
                "echo \"$HERMES_JOB_ID {}\" >> {}/side.txt\nsleep 4\n",
                host.name,
                side.display()
            ),
        );
    }
    let first = a.daemon();
    std::thread::sleep(Duration::from_millis(800));
    let due = Utc::now() + chrono::Duration::seconds(2);
    let ids = [
        add_once(&a, due, "slow.sh", "one"),
        add_once(&a, due, "slow.sh", "two"),
    ];
    assert!(wait_for(Duration::from_secs(10), || marks(
        &side.join("side.txt")
    )
    .len()
        == 1));
    // Host A runs one job and holds the other's claim; it stops answering.
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(first.0.id() as i32, libc::SIGSTOP) };
    let second = b.daemon();
    // B takes the unstarted claim over once A's lease has run out (10 s, + 2 s).
    assert!(wait_for(Duration::from_secs(25), || marks(
        &side.join("side.txt")
    )
    .len()
        == 2));
    std::thread::sleep(Duration::from_secs(8));
    unsafe { libc::kill(first.0.id() as i32, libc::SIGCONT) };
    std::thread::sleep(Duration::from_secs(8));
    first.stop();
    second.stop();
    let ran = marks(&side.join("side.txt"));
    for id in &ids {
        let times = ran.iter().filter(|l| l.starts_with(id.as_str())).count();
        assert_eq!(times, 1, "job {id} ran {times} times: {ran:?}");
    }
    assert!(
        ran.iter().any(|l| l.ends_with("host-b")),
        "B took the claim over: {ran:?}"
    );
    // The claim A held started on B within the lease (10 s) + 2 s of its time, by the
    // ledger (`started_at` is when B started it, not when A claimed it).
    let runs = b.json(&["cron", "runs", "--json"]);
    let taken = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["host"] == "host-b" && r["status"] == "ok")
        .cloned()
        .unwrap_or_default();
    let time =
        |key: &str| chrono::DateTime::parse_from_rfc3339(taken[key].as_str().unwrap()).unwrap();
    let waited = (time("started_at") - time("scheduled_at")).num_milliseconds();
    eprintln!("the stopped host's claim started on B {waited} ms after its time");
    assert!((0..=12_000).contains(&waited), "{waited} ms: {taken}");
}

#[test]
#[ignore = "slow (~20 s: waits for jobs due by the database's clock); run by .ci/run"]
fn a_host_whose_clock_runs_ahead_fires_nothing_early_and_on_time_by_the_postgres_database() {
    if Command::new("faketime").arg("--version").output().is_err() {
        panic!("faketime is missing: apt-get install faketime (.ci/run does)");
    }
    let store = postgres_database();
    let side = tempfile::tempdir().unwrap().keep();
    let host = Host::new(&store, "fast");
    host.script(
        "mark.sh",
        &format!("echo fired >> {}/side.txt\n", side.display()),
    );
    let due = Utc::now() + chrono::Duration::seconds(8);
    let id = add_once(&host, due, "mark.sh", "on time");
    // The only host left runs 90 s ahead.
    let daemon = host.command(&["cron", "daemon"]);
    let program = daemon.get_program().to_owned();
    let mut fast = Command::new("faketime");
    fast.args(["-f", "+90s"])
        .arg(program)
        .args(daemon.get_args());
    for (key, value) in daemon.get_envs() {
        if let Some(value) = value {
            fast.env(key, value);
        }
    }
    fast.env_remove("FAKETIME")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    // faketime runs the daemon as its child and passes no signal on: the test signals
    // the group both are in.
    let child = fast
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let daemon = Daemon(child);
    assert!(wait_for(Duration::from_secs(20), || !marks(
        &side.join("side.txt")
    )
    .is_empty()));
    std::thread::sleep(Duration::from_secs(1));
    daemon.stop();
    assert_eq!(marks(&side.join("side.txt")).len(), 1);
    // The ledger's times are the database's: the run started on time, not early.
    let runs = host.json(&["cron", "runs", &id, "--json"]);
    let run = &runs["runs"][0];
    assert_eq!(run["status"], "ok");
    let time =
        |key: &str| chrono::DateTime::parse_from_rfc3339(run[key].as_str().unwrap()).unwrap();
    let lateness = (time("started_at") - time("scheduled_at")).num_milliseconds();
    assert!(lateness >= 0, "fired {lateness} ms early");
    assert!(lateness < 1000, "fired {lateness} ms late");
    assert_eq!(run["host"], "fast");
}

#[test]
#[ignore = "slow (~25 s: a database restart while jobs are due); run by .ci/run"]
fn postgresql_restarted_while_jobs_are_due_loses_nothing_and_runs_nothing_twice() {
    let (dir, store) = own_cluster();
    let side = tempfile::tempdir().unwrap().keep();
    let (a, b) = (Host::new(&store, "host-a"), Host::new(&store, "host-b"));
    for host in [&a, &b] {
        host.script(
            "mark.sh",
            &format!("echo \"$HERMES_JOB_ID\" >> {}/side.txt\n", side.display()),
        );
    }
    let start = Utc::now();
    let ids: Vec<String> = (0..10)
        .map(|n| {
            add_once(
                &a,
                start + chrono::Duration::seconds(3 + n),
                "mark.sh",
                &format!("job{n}"),
            )
        })
        .collect();
    let (first, second) = (a.daemon(), b.daemon());
    std::thread::sleep(Duration::from_secs(4));
    // The database goes away for a few seconds while jobs are due.
    stop_cluster(&dir);
    std::thread::sleep(Duration::from_secs(3));
    start_cluster(&dir);
    // A job added after the database is back fires on time.
    let after = add_once(
        &b,
        Utc::now() + chrono::Duration::seconds(3),
        "mark.sh",
        "after",
    );
    assert!(
        wait_for(Duration::from_secs(30), || {
            let ran = marks(&side.join("side.txt"));
            ids.iter()
                .chain([&after])
                .all(|id| ran.iter().any(|l| l == id))
        }),
        "not every job ran: {:?}",
        marks(&side.join("side.txt"))
    );
    std::thread::sleep(Duration::from_secs(2));
    // Both daemons stayed up through the outage.
    for daemon in [&first, &second] {
        // SAFETY: signal 0 only checks the child exists.
        assert_eq!(
            unsafe { libc::kill(daemon.0.id() as i32, 0) },
            0,
            "a daemon died"
        );
    }
    first.stop();
    second.stop();
    let ran = marks(&side.join("side.txt"));
    for id in ids.iter().chain([&after]) {
        assert_eq!(
            ran.iter().filter(|l| *l == id).count(),
            1,
            "job {id}: {ran:?}"
        );
    }
}

#[test]
#[ignore = "slow (~15 s: the database is stopped while two runs end); run by .ci/run"]
fn runs_that_end_while_postgresql_is_down_are_recorded_once_it_is_back_even_a_lost_row() {
    let (dir, store) = own_cluster();
    let host = Host::new(&store, "host-a");
    let side = tempfile::tempdir().unwrap().keep();
    host.script(
        "slow.sh",
        &format!(
            "touch {}/\"$HERMES_JOB_ID\"\nsleep 4\necho finished\n",
            side.display()
        ),
    );
    let at = Utc::now() + chrono::Duration::seconds(2);
    let kept = add_once(&host, at, "slow.sh", "kept");
    let lost = add_once(&host, at, "slow.sh", "lost");
    let daemon = host.daemon();
    assert!(
        wait_for(Duration::from_secs(20), || {
            side.join(&kept).exists() && side.join(&lost).exists()
        }),
        "the runs never started"
    );
    // One run's ledger row goes missing, as an asynchronous failover loses the last
    // commits; then both runs end (about 4 s on) while the database is gone.
    let deleted = Command::new("psql")
        .args([
            store.as_str(),
            "-Atc",
            &format!("DELETE FROM hermes_cron_runs WHERE job_id = '{lost}' RETURNING id"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&deleted.stdout).lines().count(),
        2,
        "{deleted:?}"
    );
    stop_cluster(&dir);
    std::thread::sleep(Duration::from_secs(8));
    start_cluster(&dir);
    let runs = |id: &str| host.json(&["cron", "runs", id, "--json"])["runs"].clone();
    let job = |id: &str| {
        let jobs = host.json(&["cron", "list", "--all", "--json"]);
        let found = jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .cloned();
        found.unwrap_or_default()
    };
    let recorded = |id: &str| runs(id)[0]["status"] == "ok" && job(id)["last_status"] == "ok";
    assert!(
        wait_for(Duration::from_secs(20), || recorded(&kept)
            && recorded(&lost)),
        "a run's end was lost: {} {} / {} {}",
        runs(&kept),
        job(&kept),
        runs(&lost),
        job(&lost)
    );
    daemon.stop();
    for id in [&kept, &lost] {
        let runs = runs(id);
        assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
        assert_eq!(runs[0]["delivery"], "local", "{runs}");
        assert!(runs[0]["started_at"].is_string(), "{runs}");
        let job = job(id);
        assert_eq!(job["state"], "completed", "the one-shot is done: {job}");
        assert!(job["last_run_at"].is_string(), "{job}");
        assert_eq!(job["run_claim"], Value::Null, "{job}");
        let run = runs[0]["id"].as_i64().unwrap().to_string();
        let output = host.ok(&["cron", "output", &run]);
        assert!(
            output.contains("finished"),
            "the run's output was lost: {output}"
        );
    }
}

/// A jobs.json of script jobs (`mark.sh`, no agent): one-shots at the given instants and
/// `every 1m` jobs first due at `first_interval`.
pub(crate) fn generated_store(
    once: &[chrono::DateTime<Utc>],
    intervals: usize,
    first_interval: chrono::DateTime<Utc>,
) -> Value {
    let iso = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Secs, false);
    let job = |n: usize, schedule: Value, next: String, times: Value| {
        serde_json::json!({
            "id": format!("{n:012x}"), "name": format!("job {n}"), "prompt": "",
            "script": "mark.sh", "no_agent": true, "schedule": schedule,
            "repeat": {"times": times, "completed": 0}, "enabled": true, "state": "scheduled",
            "created_at": iso(Utc::now()), "next_run_at": next, "deliver": "local",
        })
    };
    let mut jobs: Vec<Value> = once
        .iter()
        .enumerate()
        .map(|(n, at)| {
            let schedule =
                serde_json::json!({"kind": "once", "run_at": iso(*at), "display": "once"});
            job(n + 1, schedule, iso(*at), Value::from(1))
        })
        .collect();
    for n in 0..intervals {
        let schedule = serde_json::json!({"kind": "interval", "minutes": 1, "display": "every 1m"});
        jobs.push(job(0x1000 + n, schedule, iso(first_interval), Value::Null));
    }
    serde_json::json!({ "jobs": jobs })
}

#[test]
#[ignore = "slow (~150 s: two minutes of jobs on three hosts, one killed every 15 s); run by .ci/run"]
fn three_hosts_with_one_killed_every_15_s_run_every_occurrence_exactly_once() {
    let store = postgres_database();
    let side = tempfile::tempdir().unwrap().keep();
    let hosts: Vec<Host> = ["host-a", "host-b", "host-c"]
        .iter()
        .map(|name| Host::new(&store, name))
        .collect();
    for host in &hosts {
        host.script(
            "mark.sh",
            &format!(
                "echo \"$HERMES_JOB_ID {}\" >> {}/side.txt\n",
                host.name,
                side.display()
            ),
        );
    }
    let start = Utc::now() + chrono::Duration::seconds(10);
    let once: Vec<_> = (0..300)
        .map(|n| start + chrono::Duration::milliseconds(n * 400))
        .map(|t| t - chrono::Duration::nanoseconds(t.timestamp_subsec_nanos() as i64))
        .collect();
    let file = side.join("jobs.json");
    std::fs::write(
        &file,
        generated_store(&once, 20, start + chrono::Duration::seconds(60)).to_string(),
    )
    .unwrap();
    hosts[0].ok(&["cron", "store", "import", "--from", file.to_str().unwrap()]);
    let mut daemons: Vec<Daemon> = hosts.iter().map(Host::daemon).collect();
    let end = start + chrono::Duration::seconds(125);
    let mut victim = 0;
    std::thread::sleep(Duration::from_secs(10));
    while Utc::now() < end {
        std::thread::sleep(Duration::from_secs(15));
        // SIGKILL: no drain, no clean exit; the lease has to run out.
        let _ = daemons[victim].0.kill();
        let _ = daemons[victim].0.wait();
        daemons[victim] = hosts[victim].daemon();
        victim = (victim + 1) % hosts.len();
    }
    assert!(
        wait_for(Duration::from_secs(30), || {
            let jobs = hosts[1].json(&["cron", "list", "--all", "--json"]);
            jobs["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|j| j["state"] == "completed")
                .count()
                == 300
        }),
        "not every one-shot completed"
    );
    std::thread::sleep(Duration::from_secs(2));
    for daemon in daemons {
        daemon.stop();
    }
    let runs = hosts[2].json(&["cron", "runs", "--json", "--limit", "100000"]);
    let runs = runs["runs"].as_array().unwrap();
    let lines = marks(&side.join("side.txt"));
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    for line in &lines {
        *ran.entry(line.split(' ').next().unwrap().to_string())
            .or_default() += 1;
    }
    let mut ok: BTreeMap<String, usize> = BTreeMap::new();
    let mut lateness = Vec::new();
    let mut occurrences = std::collections::HashSet::new();
    for run in runs {
        assert!(
            occurrences.insert(run["occurrence"].as_str().unwrap().to_string()),
            "an occurrence twice: {run}"
        );
        if run["status"] == "ok" {
            *ok.entry(run["job_id"].as_str().unwrap().to_string())
                .or_default() += 1;
            let time = |key: &str| {
                chrono::DateTime::parse_from_rfc3339(run[key].as_str().unwrap()).unwrap()
            };
            lateness.push((time("started_at") - time("scheduled_at")).num_milliseconds());
        }
    }
    // Every one-shot ran exactly once — or was started once by a host killed while it
    // ran, which leaves it `interrupted` and never runs it again; every recurring job's
    // runs match its ledger.
    for n in 1..=300usize {
        let id = format!("{n:012x}");
        let rows: Vec<&Value> = runs.iter().filter(|r| r["job_id"] == id.as_str()).collect();
        let killed_while_running = rows.len() == 1 && rows[0]["status"] == "interrupted";
        if killed_while_running {
            assert!(
                ran.get(&id).copied().unwrap_or(0) <= 1,
                "one-shot {id} ran twice"
            );
            continue;
        }
        assert_eq!(
            ran.get(&id),
            Some(&1),
            "one-shot {id}: {:?} runs",
            ran.get(&id)
        );
        assert_eq!(
            ok.get(&id),
            Some(&1),
            "one-shot {id} in the ledger: {:?}; ran: {:?}",
            runs.iter()
                .filter(|r| r["job_id"] == id.as_str())
                .collect::<Vec<_>>(),
            lines
                .iter()
                .filter(|l| l.starts_with(&id))
                .collect::<Vec<_>>()
        );
    }
    for (id, count) in &ran {
        let recorded = ok.get(id).copied().unwrap_or(0);
        // A run killed with its host may have printed before it was recorded: it is
        // `interrupted` in the ledger, never run again.
        assert!(
            *count == recorded || *count == recorded + 1,
            "job {id}: ran {count}, ledger ok {recorded}"
        );
    }
    // `started_at` is when a host started the run (a claim taken over from a killed host
    // starts late), so lateness is what the user saw.
    lateness.sort_unstable();
    let on_time: Vec<i64> = lateness.iter().copied().filter(|ms| *ms < 1000).collect();
    let failover: Vec<i64> = lateness.iter().copied().filter(|ms| *ms >= 1000).collect();
    eprintln!(
        "three hosts: {} runs, lateness p50 {} ms, p99 {} ms (on time); {} taken over after a kill, latest {:?} ms",
        lateness.len(),
        on_time[on_time.len() / 2],
        on_time[on_time.len() * 99 / 100],
        failover.len(),
        failover.last()
    );
    // Occurrences claimed by a killed host start within the lease (10 s) + 2 s.
    assert!(failover.iter().all(|ms| *ms <= 12_000), "{failover:?}");
    // Only the few a killed host had claimed are late: nine in ten runs are on time.
    assert!(
        failover.len() * 10 <= lateness.len(),
        "too many late runs: {failover:?}"
    );
}

#[test]
#[ignore = "slow (~10 s: twelve one-second jobs due by the database's clock on three hosts); run by .ci/run"]
fn a_burst_one_host_claimed_is_shared_with_the_idle_hosts_and_each_runs_once() {
    let store = postgres_database();
    let side = tempfile::tempdir().unwrap().keep();
    let hosts: Vec<Host> = ["host-a", "host-b", "host-c"]
        .iter()
        .map(|name| Host::new(&store, name))
        .collect();
    for host in &hosts {
        // Two runs at a time per host: one host alone would need six seconds.
        std::fs::write(
            host.path().join("config.yaml"),
            "cron:\n  max_parallel_jobs: 2\n",
        )
        .unwrap();
        host.script(
            "mark.sh",
            &format!(
                "echo \"$HERMES_JOB_ID {}\" >> {}/side.txt\nsleep 1\necho done\n",
                host.name,
                side.display()
            ),
        );
    }
    // Twelve one-shots due at the same second: the first host to pass claims them all.
    let due = Utc::now() + chrono::Duration::seconds(4);
    let due = due - chrono::Duration::nanoseconds(i64::from(due.timestamp_subsec_nanos()));
    let file = side.join("jobs.json");
    std::fs::write(&file, generated_store(&[due; 12], 0, due).to_string()).unwrap();
    hosts[0].ok(&["cron", "store", "import", "--from", file.to_str().unwrap()]);
    let daemons: Vec<Daemon> = hosts.iter().map(Host::daemon).collect();
    let finished = || {
        let runs = hosts[1].json(&["cron", "runs", "--json", "--limit", "100"]);
        let runs = runs["runs"].as_array().unwrap().clone();
        let open = |r: &Value| r["status"] == "claimed" || r["status"] == "running";
        (runs.len() == 12 && !runs.iter().any(open)).then_some(runs)
    };
    assert!(
        wait_for(Duration::from_secs(20), || finished().is_some()),
        "not every occurrence ran: {:?}",
        marks(&side.join("side.txt"))
    );
    std::thread::sleep(Duration::from_secs(1));
    for daemon in daemons {
        daemon.stop();
    }
    let runs = finished().expect("the ledger changed after every run finished");
    let ran = marks(&side.join("side.txt"));
    let mut by_host: BTreeMap<&str, usize> = BTreeMap::new();
    for n in 1..=12usize {
        let id = format!("{n:012x}");
        let marks: Vec<&String> = ran.iter().filter(|l| l.starts_with(&id)).collect();
        assert_eq!(
            marks.len(),
            1,
            "job {id} ran {} times: {ran:?}",
            marks.len()
        );
        let rows: Vec<&Value> = runs.iter().filter(|r| r["job_id"] == id.as_str()).collect();
        assert_eq!(rows.len(), 1, "one ledger row for {id}: {runs:?}");
        // Recorded once, as run, by the host that ran it (nothing missed, failed or
        // skipped by the host that claimed it first).
        assert_eq!(rows[0]["status"], "ok", "{}", rows[0]);
        let host = rows[0]["host"].as_str().unwrap();
        assert_eq!(marks[0].as_str(), format!("{id} {host}"), "{}", rows[0]);
        *by_host.entry(host).or_default() += 1;
    }
    assert!(
        by_host.len() > 1,
        "one host ran the whole burst: {by_host:?}"
    );
    // Each host's runs left their output document in the shared store.
    for host in by_host.keys() {
        let run = runs.iter().find(|r| r["host"] == *host).unwrap();
        let document = hosts[0].ok(&["cron", "output", &run["id"].to_string()]);
        assert!(document.contains("## Response\n\ndone"), "{document}");
    }
}
