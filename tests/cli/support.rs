//! How the black-box tests start the real `hermes` binary: a fresh HERMES_HOME per test,
//! an explicit time zone and (usually) a pinned clock, and nothing inherited from the
//! environment of whoever runs `cargo test` (no TZ, no HERMES_*, no real ~/.hermes).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chrono::{DateTime, FixedOffset};
use serde_json::Value;
use tempfile::TempDir;

/// The instant most tests pin the clock to (a Sunday).
pub const NOW: &str = "2026-03-01T10:00:00Z";

/// The path of a file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(name)
}

/// What one run of the binary showed the user.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(
            self.code,
            Some(0),
            "expected exit 0\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    /// Asserts a user error: exit 1, nothing on stdout, exactly one line on stderr.
    /// Returns that line.
    #[track_caller]
    pub fn user_error(&self) -> &str {
        assert_eq!(
            self.code,
            Some(1),
            "expected exit 1\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        assert_eq!(self.stdout, "", "a refused command printed on stdout");
        let message = self.stderr.trim_end_matches('\n');
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "expected a one-line message on stderr, got:\n{}",
            self.stderr
        );
        message
    }
}

/// One Hermes home in a temp dir, and how the binary is run against it.
pub struct Hermes {
    dir: TempDir,
    /// HERMES_TIMEZONE.
    pub zone: String,
    /// HERMES_NOW; `None` leaves the real clock.
    pub now: Option<String>,
    /// TZ, the system zone legacy naive timestamps are read in.
    pub system_zone: String,
    /// `HERMES_CRON_STORE`: a database of its own on the test cluster when the suite runs
    /// against PostgreSQL (`HERMES_TEST_STORE=postgres`); `None`: jobs.json.
    pub store_url: Option<String>,
}

/// Starts a throwaway PostgreSQL cluster (`scripts/postgres/test-cluster.sh`, removed
/// when this test process exits) and returns the URL of its `postgres` database.
pub fn start_postgres_cluster() -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/postgres/test-cluster.sh"
    );
    succeeded(Command::new("bash").args([script, &std::process::id().to_string()]))
}

/// Runs `command`, which must succeed, and returns its stdout, trimmed.
#[track_caller]
pub fn succeeded(command: &mut Command) -> String {
    let out = command.output().expect("start the command");
    assert!(
        out.status.success(),
        "{:?}: {}",
        command,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A new database `name` on the cluster at `base`; returns its URL.
pub fn create_database(base: &str, name: &str) -> String {
    let created = Command::new("psql")
        .args([base, "-qc", &format!("CREATE DATABASE {name}")])
        .status()
        .expect("run psql");
    assert!(created.success());
    base.replacen("/postgres?", &format!("/{name}?"), 1)
}

/// True when this run of the suite puts every home's store on PostgreSQL
/// (`HERMES_TEST_STORE=postgres`).
pub fn on_postgres() -> bool {
    std::env::var("HERMES_TEST_STORE").as_deref() == Ok("postgres")
}

/// A fresh database on the cluster this test process shares.
pub fn postgres_database() -> String {
    static CLUSTER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let base = CLUSTER.get_or_init(start_postgres_cluster);
    create_database(base, &format!("t{:016x}", rand::random::<u64>()))
}

impl Hermes {
    /// A fresh, empty home in UTC with the clock pinned at [`NOW`].
    pub fn new() -> Hermes {
        Hermes {
            dir: tempfile::Builder::new()
                .prefix("hermes-cli-test")
                .tempdir()
                .expect("create a temp HERMES_HOME"),
            zone: "UTC".to_string(),
            now: Some(NOW.to_string()),
            system_zone: "UTC".to_string(),
            store_url: on_postgres().then(postgres_database),
        }
    }

    /// True when this suite runs against jobs.json (tests of the file itself: its bytes,
    /// modes, repairs).
    pub fn on_files(&self) -> bool {
        self.store_url.is_none()
    }

    /// A fresh home whose configured zone is `zone`.
    pub fn in_zone(zone: &str) -> Hermes {
        let mut hermes = Hermes::new();
        hermes.zone = zone.to_string();
        hermes
    }

    /// A fresh home on this one's store (on PostgreSQL, another host of the same
    /// database; on jobs.json a store of its own), with the same clock.
    pub fn on_same_store(&self) -> Hermes {
        let mut other = Hermes::new();
        other.now = self.now.clone();
        other.store_url = self.store_url.clone();
        other
    }

    pub fn home(&self) -> &Path {
        self.dir.path()
    }

    pub fn cron_dir(&self) -> PathBuf {
        self.home().join("cron")
    }

    pub fn jobs_path(&self) -> PathBuf {
        self.cron_dir().join("jobs.json")
    }

    /// `hermes <args>` with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hermes"));
        command
            .args(args)
            .env_clear()
            .env("HERMES_HOME", self.home())
            // A HOME of its own, so a bug that ignored HERMES_HOME could never touch
            // the real ~/.hermes of whoever runs the tests.
            .env("HOME", self.home())
            .env("HERMES_TIMEZONE", &self.zone)
            .env("TZ", &self.system_zone)
            .stdin(Stdio::null());
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        if let Some(now) = &self.now {
            command.env("HERMES_NOW", now);
        }
        if let Some(url) = &self.store_url {
            command.env("HERMES_CRON_STORE", url);
        }
        command
    }

    /// Runs `hermes <args>` to completion.
    pub fn run(&self, args: &[&str]) -> Run {
        let output = self
            .command(args)
            .output()
            .expect("start the hermes binary");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }

    /// Runs `hermes cron <args>`.
    pub fn cron(&self, args: &[&str]) -> Run {
        let mut all = vec!["cron"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// Runs `hermes cron <args>` with the clock pinned at `now`.
    pub fn cron_at(&self, now: &str, args: &[&str]) -> Run {
        let mut command = self.command(&[]);
        command.arg("cron").args(args).env("HERMES_NOW", now);
        let output = command.output().expect("start the hermes binary");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }

    /// `hermes cron add <schedule> <prompt> [extra...]`, which must succeed; returns the
    /// id from the `Created job: <id>` line.
    #[track_caller]
    pub fn add(&self, schedule: &str, prompt: &str, extra: &[&str]) -> String {
        let mut args = vec!["add", schedule, prompt];
        args.extend_from_slice(extra);
        let run = self.cron(&args);
        created_id(run.ok())
    }

    /// The store's bytes, or `None` when there is no jobs.json. On PostgreSQL: the
    /// store as `hermes cron store export` prints it, `None` while it holds no job.
    pub fn store_bytes(&self) -> Option<Vec<u8>> {
        if self.store_url.is_some() {
            let out = self
                .command(&["cron", "store", "export"])
                .output()
                .expect("export");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let value: Value = serde_json::from_slice(&out.stdout).expect("export is JSON");
            let empty = value["jobs"].as_array().is_some_and(Vec::is_empty);
            return (!empty).then_some(out.stdout);
        }
        match fs::read(self.jobs_path()) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => panic!("read {}: {e}", self.jobs_path().display()),
        }
    }

    /// jobs.json parsed with a strict JSON reader (as Python's `json.load` would).
    #[track_caller]
    pub fn store(&self) -> Value {
        let bytes = self.store_bytes().expect("jobs.json exists");
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "jobs.json is not strict JSON ({e}):\n{}",
                String::from_utf8_lossy(&bytes)
            )
        })
    }

    /// The records of jobs.json, which must be `{"jobs": [...]}`.
    #[track_caller]
    pub fn jobs(&self) -> Vec<Value> {
        self.store()["jobs"]
            .as_array()
            .expect("\"jobs\" is a list")
            .clone()
    }

    /// The record with this id.
    #[track_caller]
    pub fn job(&self, id: &str) -> Value {
        self.jobs()
            .into_iter()
            .find(|job| job["id"] == id)
            .unwrap_or_else(|| panic!("no job {id} in jobs.json"))
    }

    /// The output document of the job's newest run, read the way a user would on any
    /// backend: the run id from `hermes cron runs --json`, the text from `hermes cron output`.
    #[track_caller]
    pub fn latest_output(&self, job: &str) -> String {
        let runs: Value =
            serde_json::from_str(self.cron(&["runs", job, "--json"]).ok()).expect("runs JSON");
        let newest = runs["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|run| run["id"].as_i64())
            .max()
            .unwrap_or_else(|| panic!("job {job} has no run"));
        self.cron(&["output", &newest.to_string()]).ok().to_string()
    }

    /// Puts `bytes` in place as `<home>/cron/jobs.json` (on PostgreSQL: imports them).
    pub fn write_store(&self, bytes: &[u8]) {
        fs::create_dir_all(self.cron_dir()).unwrap();
        fs::write(self.jobs_path(), bytes).unwrap();
        if self.store_url.is_some() {
            let out = self
                .command(&["cron", "store", "import"])
                .output()
                .expect("import");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Copies `tests/fixtures/<name>` in as jobs.json and returns its bytes.
    pub fn install_fixture(&self, name: &str) -> Vec<u8> {
        let bytes = fs::read(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"));
        self.write_store(&bytes);
        bytes
    }
}

/// The id of `Created job: <id>`, the first line `add` prints.
#[track_caller]
pub fn created_id(stdout: &str) -> String {
    let first = stdout.lines().next().unwrap_or("");
    let id = first
        .strip_prefix("Created job: ")
        .unwrap_or_else(|| panic!("expected 'Created job: <id>', got:\n{stdout}"));
    id.trim().to_string()
}

/// Parses an ISO-8601 instant that must carry an explicit offset.
#[track_caller]
pub fn instant(text: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("'{text}' is not an ISO-8601 instant with offset: {e}"))
}

/// True for 12 lowercase hex characters.
/// Whether `pid` is a live process: gone from /proc, or a zombie waiting for its reaper,
/// counts as gone.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

pub fn is_job_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The python of a cached test venv, built by its setup script (`scripts/<dir>/setup.sh`,
/// which prints the interpreter's path) when it is missing; `needs` says what for.
pub fn venv_python(dir: &str, needs: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(dir)
        .join("setup.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(out.status.success(), "{} failed: {needs}", script.display());
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A local port held by a socket that is bound but never listens: connections to it are
/// refused, and no other test can take it until this is dropped.
pub struct ClosedPort {
    fd: libc::c_int,
    pub port: u16,
}

impl ClosedPort {
    pub fn new() -> ClosedPort {
        // SAFETY: plain socket calls on a descriptor this value owns; every result is checked.
        unsafe {
            // Close-on-exec: a child another test starts meanwhile must not keep it bound.
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = libc::bind(fd, std::ptr::addr_of!(addr).cast(), len);
            assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
            let mut len = len;
            let named = libc::getsockname(fd, std::ptr::addr_of_mut!(addr).cast(), &mut len);
            assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
            ClosedPort {
                fd,
                port: u16::from_be(addr.sin_port),
            }
        }
    }
}

impl Drop for ClosedPort {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this value's own.
        unsafe {
            libc::close(self.fd);
        }
    }
}
