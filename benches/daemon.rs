//! The scheduler daemon as a real process, on its own temp HERMES_HOME:
//!
//! 1. fire lateness: one-shot `--no-agent` script jobs due 5 per second over ~24 s,
//!    `hermes cron daemon` running with `max_parallel_jobs: 0`; lateness is the ledger's
//!    `started_at − scheduled_at` of each fire (p50 / p99 / max);
//! 2. an idle daemon with 1,000 recurring jobs, none due: RSS and CPU time from /proc over
//!    `HERMES_BENCH_IDLE_SECS` (default 300 — five idle minutes);
//! 3. the cost of one pass on 10,000 jobs: `hermes cron tick` with nothing due, and with
//!    1 % (100 silent script jobs) due, which it waits for.
//!
//! It prints figures and a summary block; it asserts only that the setup did what it
//! meant to (every fire recorded, every due job run). Stores are built from the record
//! `hermes cron add` writes (taken from the binary itself) with schedules and next runs
//! from the schedules crate, and written through the store's own locked write path.
//!
//! A plain `harness = false` binary. Under `cargo bench` (which passes `--bench`) it
//! measures; run any other way (`cargo test --benches`) it does a small smoke run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, SecondsFormat, TimeDelta, Timelike, Utc};
use jobs::jsonfile::Record;
use jobs::jsonfile::{DocumentError, JsonFile};
use schedules::{format_instant, parse_schedule, Schedule, Tz};
use serde_json::{json, Value};

mod common;
use common::{grouped, hermes_binary, median, ms};

/// What one run of the bench does; [`Plan::measure`] under `cargo bench`.
struct Plan {
    /// One-shot jobs in the lateness run, and how many share each whole second.
    fires: usize,
    per_second: usize,
    /// Seconds from writing the store to the first fire.
    lead_secs: i64,
    /// Jobs in the idle daemon's store, the seconds it settles first, and the window.
    idle_jobs: u64,
    settle_secs: u64,
    idle_secs: u64,
    /// Pass-cost stores: (jobs, timed ticks); 1 % of each is made due.
    pass_sizes: Vec<(u64, usize)>,
    /// Agent jobs due at once against a fake model answering in 1 s, and the parallelism.
    burst_jobs: usize,
    burst_parallel: usize,
}

impl Plan {
    fn measure() -> Plan {
        let idle_secs = std::env::var("HERMES_BENCH_IDLE_SECS")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(300);
        Plan {
            fires: 240,
            per_second: 8,
            lead_secs: 5,
            idle_jobs: 1_000,
            settle_secs: 5,
            idle_secs,
            pass_sizes: vec![(100, 10), (1_000, 10), (10_000, 5), (100_000, 2)],
            burst_jobs: 1_000,
            burst_parallel: 64,
        }
    }

    fn smoke() -> Plan {
        Plan {
            fires: 10,
            per_second: 5,
            lead_secs: 3,
            idle_jobs: 100,
            settle_secs: 1,
            idle_secs: 2,
            pass_sizes: vec![(500, 1)],
            burst_jobs: 20,
            burst_parallel: 8,
        }
    }
}

/// A HERMES_HOME in a temp dir with `scripts/ok.sh` (prints `ok`) and `scripts/silent.sh`
/// (prints nothing: a silent run), and the binary pointed at it.
struct Home {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Home {
    fn new(bin: &Path, config: Option<&str>) -> Home {
        let dir = tempfile::tempdir().expect("cannot create a temp dir");
        let scripts = dir.path().join("scripts");
        std::fs::create_dir_all(&scripts).expect("cannot create scripts/");
        std::fs::write(scripts.join("ok.sh"), "echo ok\n").expect("cannot write ok.sh");
        std::fs::write(scripts.join("silent.sh"), ":\n").expect("cannot write silent.sh");
        if let Some(yaml) = config {
            std::fs::write(dir.path().join("config.yaml"), yaml).expect("cannot write config");
        }
        Home {
            dir,
            bin: bin.to_path_buf(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn jobs_path(&self) -> PathBuf {
        self.path().join("cron/jobs.json")
    }

    /// `hermes <args>` on this home: real clock, UTC, nothing inherited that changes the
    /// scheduler (HERMES_NOW, timeouts, parallelism, log level).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .env("HERMES_HOME", self.path())
            .env("HERMES_TIMEZONE", "UTC")
            .env("TZ", "UTC")
            .env_remove("HERMES_NOW")
            .env_remove("HERMES_CRON_TIMEOUT")
            .env_remove("HERMES_CRON_MAX_PARALLEL")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `hermes <args>` to completion and returns its stdout; panics on failure.
    fn ok(&self, args: &[&str]) -> String {
        let out = self
            .command(args)
            .output()
            .expect("cannot start the hermes binary");
        assert!(
            out.status.success(),
            "hermes {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes `records` as the whole store, through the store's locked write path.
    fn write_store(&self, records: Vec<Record>) {
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, false);
        JsonFile::new(self.path().join("cron"))
            .update::<(), DocumentError>(&now, |doc| {
                doc.jobs = records;
                Ok(())
            })
            .expect("cannot write the bench store");
    }

    /// `hermes cron daemon`, its log in the home.
    fn daemon(&self) -> Daemon {
        let log = File::create(self.path().join("daemon.log")).expect("cannot create the log");
        let child = self
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("cannot start hermes cron daemon");
        Daemon { child: Some(child) }
    }

    /// Every ledger row (`hermes cron runs --json --limit 1000`).
    fn runs(&self) -> Vec<Value> {
        let out: Value =
            serde_json::from_str(&self.ok(&["cron", "runs", "--json", "--limit", "1000"]))
                .expect("runs --json prints JSON");
        out["runs"].as_array().cloned().unwrap_or_default()
    }
}

/// A running daemon; killed if the bench stops early.
struct Daemon {
    child: Option<Child>,
}

impl Daemon {
    fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGTERM, then waits (the daemon drains running jobs for up to 30 s). Returns
    /// how long it took to exit, or `None` when it had to be killed.
    fn stop(mut self) -> Option<Duration> {
        let mut child = self.child.take()?;
        let start = Instant::now();
        // SAFETY: kill(2) on the pid of a child we have not reaped yet.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        while start.elapsed() < Duration::from_secs(45) {
            if let Ok(Some(_)) = child.try_wait() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The record `hermes cron add "every 1d" --script silent.sh --no-agent` writes today, so
/// generated stores follow `create_job` (jobs/src/lifecycle.rs) as it changes.
fn template_record(bin: &Path) -> Record {
    let scratch = Home::new(bin, None);
    scratch.ok(&[
        "cron",
        "add",
        "every 1d",
        "--script",
        "silent.sh",
        "--no-agent",
    ]);
    JsonFile::new(scratch.path().join("cron"))
        .load()
        .expect("the store hermes just wrote is readable")
        .jobs
        .into_iter()
        .next()
        .expect("hermes cron add stored one job")
}

/// Job `i` from the template: its own id and name, `schedule` parsed as `add` would,
/// and `next_run` (else the schedule's first run after `now`).
fn job_record(
    template: &Record,
    i: u64,
    script: &str,
    schedule: &str,
    next_run: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Record {
    let zone = Tz::UTC;
    let schedule = parse_schedule(schedule, now, zone, None).expect("bench schedules are valid");
    let next_run = next_run
        .or_else(|| schedule.next_run(now, None, zone))
        .expect("bench schedules have a next run");
    let times = match schedule {
        Schedule::Once { .. } => Some(1),
        _ => None,
    };
    let mut record = template.clone();
    let mut set = |key: &str, value: Value| {
        record.insert(key.to_string(), value);
    };
    set("id", json!(format!("{:012x}", 0xbe00_0000_0000_u64 + i)));
    set("name", json!(format!("bench {i}")));
    set("script", json!(script));
    set("no_agent", json!(true));
    set("schedule", schedule.to_json());
    set("schedule_display", json!(schedule.display()));
    set("repeat", json!({"times": times, "completed": 0}));
    set("created_at", json!(format_instant(now, zone)));
    set("next_run_at", json!(format_instant(next_run, zone)));
    record
}

/// `count` recurring silent jobs, none due for hours: a mix of intervals (`every 1d`,
/// `every 12h`, next run spread over the hour before a full period) and daily / weekday
/// cron times 6–17 h from now.
fn recurring_store(template: &Record, count: u64, now: DateTime<Utc>) -> Vec<Record> {
    (0..count)
        .map(|i| {
            let spread = TimeDelta::seconds((i % 3600) as i64);
            let hour = (now.hour() as u64 + 6 + i % 12) % 24;
            let minute = i % 60;
            match i % 4 {
                0 => job_record(
                    template,
                    i,
                    "silent.sh",
                    "every 1d",
                    Some(now + TimeDelta::days(1) - spread),
                    now,
                ),
                1 => job_record(
                    template,
                    i,
                    "silent.sh",
                    "every 12h",
                    Some(now + TimeDelta::hours(12) - spread),
                    now,
                ),
                2 => job_record(
                    template,
                    i,
                    "silent.sh",
                    &format!("{minute} {hour} * * *"),
                    None,
                    now,
                ),
                _ => job_record(
                    template,
                    i,
                    "silent.sh",
                    &format!("{minute} {hour} * * 1-5"),
                    None,
                    now,
                ),
            }
        })
        .collect()
}

fn parse_time(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Nearest-rank percentile of sorted `values`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---------------------------------------------------------------------------------------
// 1. Fire lateness

struct Lateness {
    n: usize,
    expected: usize,
    p50: f64,
    p99: f64,
    max: f64,
    min: f64,
    finish_p50: f64,
    finish_max: f64,
    statuses: String,
    stop: Option<Duration>,
}

fn fire_lateness(bin: &Path, template: &Record, plan: &Plan) -> Lateness {
    let home = Home::new(bin, Some("cron:\n  max_parallel_jobs: 0\n"));
    let now = Utc::now();
    let first =
        DateTime::from_timestamp(now.timestamp() + plan.lead_secs + 1, 0).expect("a valid instant");
    let records: Vec<Record> = (0..plan.fires)
        .map(|k| {
            let at = first + TimeDelta::seconds((k / plan.per_second) as i64);
            let iso = at.to_rfc3339_opts(SecondsFormat::Secs, true);
            job_record(template, k as u64, "ok.sh", &iso, Some(at), now)
        })
        .collect();
    let last = first + TimeDelta::seconds(((plan.fires - 1) / plan.per_second) as i64);
    home.write_store(records);
    let mut daemon = home.daemon();
    println!(
        "  {} one-shots due {} per second from {} to {} (daemon pid {})",
        plan.fires,
        plan.per_second,
        first.format("%H:%M:%S"),
        last.format("%H:%M:%S"),
        daemon.pid()
    );
    // No polling while jobs are due: it would compete with the daemon for the CPU.
    let until_last = (last - Utc::now()).to_std().unwrap_or_default();
    std::thread::sleep(until_last + Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = home.runs();
        let done = runs.iter().filter(|r| r["status"] != "running").count();
        if done >= plan.fires || Instant::now() > deadline || !daemon.alive() {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let stop = daemon.stop();
    let runs = home.runs();
    let mut late: Vec<f64> = Vec::new();
    let mut finish: Vec<f64> = Vec::new();
    let mut statuses: std::collections::BTreeMap<String, usize> = Default::default();
    for run in &runs {
        *statuses
            .entry(run["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
        let Some(scheduled) = parse_time(&run["scheduled_at"]) else {
            continue;
        };
        if let Some(started) = parse_time(&run["started_at"]) {
            late.push((started - scheduled).num_microseconds().unwrap_or(0) as f64 / 1000.0);
        }
        if let Some(finished) = parse_time(&run["finished_at"]) {
            finish.push((finished - scheduled).num_microseconds().unwrap_or(0) as f64 / 1000.0);
        }
    }
    late.sort_by(f64::total_cmp);
    finish.sort_by(f64::total_cmp);
    let statuses = statuses
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() != plan.fires {
        let log = std::fs::read_to_string(home.path().join("daemon.log")).unwrap_or_default();
        eprintln!(
            "  WARNING: {} ledger rows for {} fires; daemon log tail:\n{}",
            runs.len(),
            plan.fires,
            log.lines().rev().take(20).collect::<Vec<_>>().join("\n")
        );
    }
    Lateness {
        n: late.len(),
        expected: plan.fires,
        p50: percentile(&late, 50.0),
        p99: percentile(&late, 99.0),
        max: late.last().copied().unwrap_or(f64::NAN),
        min: late.first().copied().unwrap_or(f64::NAN),
        finish_p50: percentile(&finish, 50.0),
        finish_max: finish.last().copied().unwrap_or(f64::NAN),
        statuses,
        stop,
    }
}

// ---------------------------------------------------------------------------------------
// 2. Idle daemon

/// A process's resident set size (VmRSS) and peak (VmHWM), in KiB.
fn memory_kib(pid: i32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A process's CPU time so far (utime + stime, all threads, dead ones included).
fn cpu_time(pid: i32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some(Duration::from_secs_f64((utime + stime) as f64 / ticks))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

struct Idle {
    jobs: u64,
    window: Duration,
    store_bytes: u64,
    rss_start: f64,
    rss_end: f64,
    rss_peak: f64,
    hwm: f64,
    cpu_startup: Duration,
    cpu_window: Duration,
    cpu_percent: f64,
    store_rewritten: bool,
    stop: Option<Duration>,
}

fn idle_daemon(bin: &Path, template: &Record, plan: &Plan) -> Idle {
    let home = Home::new(bin, None);
    home.write_store(recurring_store(template, plan.idle_jobs, Utc::now()));
    let store_bytes = std::fs::metadata(home.jobs_path()).map_or(0, |m| m.len());
    let mtime = || {
        std::fs::metadata(home.jobs_path())
            .and_then(|m| m.modified())
            .ok()
    };
    let mut daemon = home.daemon();
    let pid = daemon.pid();
    std::thread::sleep(Duration::from_secs(plan.settle_secs));
    let (rss_start, _) = memory_kib(pid).expect("the daemon is running");
    let cpu_start = cpu_time(pid).expect("the daemon is running");
    let window_start = Instant::now();
    let stored_at: Option<SystemTime> = mtime();
    println!(
        "  daemon pid {pid}: {} jobs ({:.2} MB jobs.json); sampling /proc every second for {} s",
        grouped(plan.idle_jobs),
        store_bytes as f64 / 1e6,
        plan.idle_secs
    );
    let mut rss_peak = rss_start;
    let end = window_start + Duration::from_secs(plan.idle_secs);
    while Instant::now() < end {
        std::thread::sleep(
            Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())),
        );
        if let Some((rss, _)) = memory_kib(pid) {
            rss_peak = rss_peak.max(rss);
        }
    }
    assert!(daemon.alive(), "the idle daemon died; see its log");
    let (rss_end, hwm) = memory_kib(pid).expect("the daemon is running");
    let cpu_end = cpu_time(pid).expect("the daemon is running");
    let window = window_start.elapsed();
    let store_rewritten = mtime() != stored_at;
    let stop = daemon.stop();
    let cpu_window = cpu_end.saturating_sub(cpu_start);
    Idle {
        jobs: plan.idle_jobs,
        window,
        store_bytes,
        rss_start: mib(rss_start),
        rss_end: mib(rss_end),
        rss_peak: mib(rss_peak.max(rss_end)),
        hwm: mib(hwm),
        cpu_startup: cpu_start,
        cpu_window,
        cpu_percent: cpu_window.as_secs_f64() / window.as_secs_f64() * 100.0,
        store_rewritten,
        stop,
    }
}

// ---------------------------------------------------------------------------------------
// 3. Pass cost

struct PassCost {
    jobs: u64,
    due: u64,
    store_bytes: u64,
    idle: Vec<Duration>,
    busy: Vec<Duration>,
    /// Peak RSS (KiB) of the largest tick, nothing due and 1 % due.
    idle_peak: u64,
    busy_peak: u64,
}

/// One `hermes cron tick`: wall time, stdout and its peak RSS in KiB. The peak is VmHWM
/// polled every 2 ms until the process ends: rusage's maxrss would also count the memory
/// of this bench process, which the child shares between spawn and exec.
fn timed_tick(home: &Home) -> (Duration, String, u64) {
    measured(home, &["cron", "tick"])
}

/// `hermes <args>` to completion: wall time, stdout, peak RSS in KiB (see [`timed_tick`]).
fn measured(home: &Home, args: &[&str]) -> (Duration, String, u64) {
    let start = Instant::now();
    let mut child = home
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start the hermes binary");
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                if let Some((_, hwm)) = memory_kib(pid) {
                    peak = peak.max(hwm);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        std::io::Read::read_to_string(&mut stdout, &mut out).expect("read the tick's stdout");
    }
    let status = child.wait().expect("wait for the tick");
    let took = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let peak = watcher.join().unwrap_or(0);
    assert!(status.success(), "hermes {args:?} failed ({status})");
    (took, out, peak)
}

fn pass_cost(bin: &Path, template: &Record, jobs: u64, runs: usize) -> PassCost {
    let due_jobs = (jobs / 100).max(1);
    let home = Home::new(bin, Some("cron:\n  max_parallel_jobs: 0\n"));
    let baseline = recurring_store(template, jobs, Utc::now());
    home.write_store(baseline.clone());
    let store_bytes = std::fs::metadata(home.jobs_path()).map_or(0, |m| m.len());

    // (a) Nothing due: process start, load, scan. One untimed warm-up.
    let mut idle = Vec::new();
    let (mut idle_peak, mut busy_peak) = (0, 0);
    for n in 0..=runs {
        let (took, out, peak) = timed_tick(&home);
        assert!(out.contains("Nothing due."), "a tick found work: {out}");
        if n > 0 {
            idle.push(took);
            idle_peak = idle_peak.max(peak);
        }
    }
    idle.sort();

    // (b) 1 % due: `due` jobs spread through the store get a next run a few seconds ago
    // (a fresh instant each time, so every tick claims new occurrences). No warm-up: the
    // runs of (a) warmed the caches, and each of these takes seconds.
    let stride = (jobs / due_jobs).max(1);
    let mut busy = Vec::new();
    let mut previous = DateTime::<Utc>::MIN_UTC;
    for _ in 0..runs {
        let mut due_at = Utc::now() - TimeDelta::seconds(3);
        while due_at.timestamp() <= previous.timestamp() {
            std::thread::sleep(Duration::from_millis(200));
            due_at = Utc::now() - TimeDelta::seconds(3);
        }
        let due_at = DateTime::from_timestamp(due_at.timestamp(), 0).expect("a valid instant");
        previous = due_at;
        let mut records = baseline.clone();
        for record in records
            .iter_mut()
            .step_by(stride as usize)
            .take(due_jobs as usize)
        {
            record.insert(
                "next_run_at".to_string(),
                json!(format_instant(due_at, Tz::UTC)),
            );
        }
        home.write_store(records);
        let (took, out, peak) = timed_tick(&home);
        let ran = out.lines().filter(|l| l.ends_with("): ok")).count() as u64;
        assert_eq!(ran, due_jobs, "expected {due_jobs} ok runs, got:\n{out}");
        busy.push(took);
        busy_peak = busy_peak.max(peak);
    }
    busy.sort();
    PassCost {
        jobs,
        due: due_jobs,
        store_bytes,
        idle,
        busy,
        idle_peak,
        busy_peak,
    }
}

// 4. Agent burst

struct Burst {
    jobs: usize,
    wall: Duration,
    cpu: Duration,
    ok: usize,
}

/// CPU time (user + system) of this process's waited-for children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A fake OpenAI-compatible server: every chat completion is answered after 1 s.
fn slow_model_server(workers: usize) -> String {
    let server = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let addr = server.server_addr().to_ip().expect("an IP address");
    for _ in 0..workers {
        let server = std::sync::Arc::clone(&server);
        std::thread::spawn(move || {
            while let Ok(mut request) = server.recv() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                std::thread::sleep(Duration::from_secs(1));
                let reply = json!({
                    "id": "bench", "object": "chat.completion", "model": "bench-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "done"}}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
                });
                let header = tiny_http::Header::from_bytes("Content-Type", "application/json")
                    .expect("a valid header");
                let _ = request.respond(
                    tiny_http::Response::from_string(reply.to_string()).with_header(header),
                );
            }
        });
    }
    format!("http://{addr}/v1")
}

fn agent_burst(bin: &Path, template: &Record, jobs: usize, parallel: usize) -> Burst {
    let base_url = slow_model_server(parallel + 8);
    let config = format!(
        "model:\n  default: bench-model\n  provider: custom\n  base_url: {base_url}\ncron:\n  max_parallel_jobs: {parallel}\n"
    );
    let home = Home::new(bin, Some(&config));
    let now = Utc::now();
    let due = DateTime::from_timestamp(now.timestamp() - 2, 0).expect("a valid instant");
    let records: Vec<Record> = (0..jobs as u64)
        .map(|i| {
            let mut record = job_record(template, i, "", "every 1d", Some(due), now);
            record.insert("script".into(), Value::Null);
            record.insert("no_agent".into(), json!(false));
            record.insert("prompt".into(), json!("Say done."));
            record
        })
        .collect();
    home.write_store(records);
    let cpu_before = children_cpu();
    let (wall, out, _) = timed_tick(&home);
    let cpu = children_cpu().saturating_sub(cpu_before);
    let ok = out.lines().filter(|l| l.ends_with("): ok")).count();
    assert_eq!(
        ok,
        jobs,
        "not every agent job ran ok:\n{}",
        out.lines().take(20).collect::<Vec<_>>().join("\n")
    );
    Burst {
        jobs,
        wall,
        cpu,
        ok,
    }
}

fn stopped(stop: Option<Duration>) -> String {
    match stop {
        Some(d) => format!("exited {:.0} ms after SIGTERM", ms(d)),
        None => "did NOT exit within 45 s of SIGTERM (killed)".to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// 5. Agent start-up and memory

/// A fake OpenAI-compatible model answering at once: calls of `tool` (`terminal`, or
/// the MCP mail server's `list_unread`) until the conversation holds `tool_turns` tool
/// results, then a final text. Sends the arrival instant of every request on the channel.
fn scripted_model_server(
    tool_turns: usize,
    tool: BenchTool,
    arrivals: std::sync::mpsc::Sender<Instant>,
) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind");
    let addr = server.server_addr().to_ip().expect("an IP address");
    std::thread::spawn(move || {
        while let Ok(mut request) = server.recv() {
            let _ = arrivals.send(Instant::now());
            let mut body = String::new();
            let _ = request.as_reader().read_to_string(&mut body);
            let asked: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let results = asked["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            let message = if results < tool_turns {
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "id": format!("call_{results}"), "type": "function",
                    "function": {"name": tool.name(), "arguments": tool.arguments()}}]})
            } else {
                json!({"role": "assistant", "content": "done"})
            };
            let reply = json!({
                "id": "bench", "object": "chat.completion", "model": "bench-model",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
            });
            let header = tiny_http::Header::from_bytes("Content-Type", "application/json")
                .expect("a valid header");
            let _ = request
                .respond(tiny_http::Response::from_string(reply.to_string()).with_header(header));
        }
    });
    format!("http://{addr}/v1")
}

/// The tool the 10-turn conversation calls.
#[derive(Debug, Clone, Copy)]
enum BenchTool {
    Terminal,
    McpMail,
}

impl BenchTool {
    fn name(self) -> &'static str {
        match self {
            BenchTool::Terminal => "terminal",
            BenchTool::McpMail => "mcp__mail__list_unread",
        }
    }

    fn arguments(self) -> String {
        match self {
            BenchTool::Terminal => json!({"command": "ls -la /usr/bin | head -200"}),
            BenchTool::McpMail => json!({"folder": "INBOX"}),
        }
        .to_string()
    }
}

/// The `mcp_servers:` block for one stdio server, the MCP tests' mail server (the
/// official MCP Python SDK, from the venv of scripts/mcp/setup.sh); `None` when that venv
/// cannot be built here.
fn mcp_mail_server() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("scripts/mcp/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let server = root.join("tests/fixtures/mcp/mail_server.py");
    Some(format!(
        "mcp_servers:\n  mail:\n    command: {python}\n    args: [{}]\n",
        json!(server.display().to_string())
    ))
}

struct AgentFigures {
    first_byte: Vec<Duration>,
    conversation_peaks: Vec<u64>,
    conversation_wall: Vec<Duration>,
}

/// (a) `hermes cron run` of a one-answer job, `starts` times: process start to the first
/// request at the model. (b) a 10-turn conversation calling `tool`, `conversations`
/// times: peak RSS and wall time. `extra` is appended to config.yaml (an MCP server).
fn agent_figures(
    bin: &Path,
    starts: usize,
    conversations: usize,
    tool: BenchTool,
    extra: &str,
) -> AgentFigures {
    let config = |base: &str| {
        format!("model:\n  default: bench-model\n  provider: custom\n  base_url: {base}\n{extra}")
    };
    let created = |out: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix("Created job: "))
            .and_then(|rest| rest.split_whitespace().next())
            .expect("add prints the job id")
            .to_string()
    };

    let (tx, rx) = std::sync::mpsc::channel();
    let home = Home::new(bin, Some(&config(&scripted_model_server(0, tool, tx))));
    let id = created(&home.ok(&["cron", "add", "every 1d", "Say done."]));
    home.ok(&["cron", "run", &id]); // warm-up
    let _ = rx.try_iter().count();
    let mut first_byte = Vec::new();
    for _ in 0..starts {
        let start = Instant::now();
        home.ok(&["cron", "run", &id]);
        let arrived = rx.try_iter().next().expect("the run asked the model");
        first_byte.push(arrived.duration_since(start));
    }
    first_byte.sort();

    let (tx, _rx) = std::sync::mpsc::channel();
    let home = Home::new(bin, Some(&config(&scripted_model_server(10, tool, tx))));
    let id = created(&home.ok(&["cron", "add", "every 1d", "Look around the system."]));
    let mut conversation_peaks = Vec::new();
    let mut conversation_wall = Vec::new();
    for _ in 0..conversations {
        let (took, out, peak) = measured(&home, &["cron", "run", &id]);
        assert!(out.contains(": ok"), "the conversation ended ok: {out}");
        conversation_peaks.push(peak);
        conversation_wall.push(took);
    }
    conversation_peaks.sort();
    conversation_wall.sort();
    AgentFigures {
        first_byte,
        conversation_peaks,
        conversation_wall,
    }
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let plan = if measuring {
        Plan::measure()
    } else {
        println!(
            "daemon bench: smoke run (small sizes); use `cargo bench --bench daemon` for figures"
        );
        Plan::smoke()
    };
    let bin = hermes_binary();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("binary: {} ({cpus} CPUs)", bin.display());
    let template = template_record(&bin);
    let sections = sections();
    let wanted = |n: u32| sections.contains(&n);
    let mut summary = Vec::new();

    if wanted(1) {
        println!(
            "\n[1] fire lateness: {} one-shot script jobs, {} per second, max_parallel_jobs 0",
            plan.fires, plan.per_second
        );
        let late = fire_lateness(&bin, &template, &plan);
        println!(
            "  ledger rows with a start: {} of {} ({})",
            late.n, late.expected, late.statuses
        );
        println!(
        "  lateness started_at - scheduled_at: min {:.0} ms, p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        late.min, late.p50, late.p99, late.max
    );
        println!(
            "  finished_at - scheduled_at: p50 {:.0} ms, max {:.0} ms; daemon {}",
            late.finish_p50,
            late.finish_max,
            stopped(late.stop)
        );
        summary.push(format!(
        "fire lateness ({} one-shots, {}/s, unbounded parallelism): n={} p50={:.0} ms p99={:.0} ms max={:.0} ms",
        late.expected, plan.per_second, late.n, late.p50, late.p99, late.max
    ));
    }

    if wanted(2) {
        println!(
            "\n[2] idle daemon: {} recurring jobs, none due; window {} s after {} s of start-up",
            grouped(plan.idle_jobs),
            plan.idle_secs,
            plan.settle_secs
        );
        let idle = idle_daemon(&bin, &template, &plan);
        println!(
        "  RSS: {:.1} MiB at start+{} s, {:.1} MiB at the end, peak of samples {:.1} MiB (VmHWM {:.1} MiB)",
        idle.rss_start, plan.settle_secs, idle.rss_end, idle.rss_peak, idle.hwm
    );
        println!(
        "  CPU: {:.2} s in the first {} s; {:.2} s over the {:.0} s window = {:.3} % of one core (clock-tick resolution)",
        idle.cpu_startup.as_secs_f64(),
        plan.settle_secs,
        idle.cpu_window.as_secs_f64(),
        idle.window.as_secs_f64(),
        idle.cpu_percent
    );
        println!(
            "  jobs.json rewritten during the window: {}; daemon {}",
            if idle.store_rewritten { "YES" } else { "no" },
            stopped(idle.stop)
        );
        summary.push(format!(
        "idle daemon ({} jobs, jobs.json {:.2} MB, {:.0} s window): RSS start {:.1} / end {:.1} / peak {:.1} MiB; CPU {:.2} s = {:.3} % of one core; jobs.json rewritten: {}",
        grouped(idle.jobs),
        idle.store_bytes as f64 / 1e6,
        idle.window.as_secs_f64(),
        idle.rss_start,
        idle.rss_end,
        idle.rss_peak,
        idle.cpu_window.as_secs_f64(),
        idle.cpu_percent,
        if idle.store_rewritten { "yes" } else { "no" }
    ));
    }

    if wanted(3) {
        println!("\n[3] pass cost: `hermes cron tick`, nothing due and 1 % due (silent scripts)");
        let row = |label: &str, times: &[Duration]| {
            println!(
                "  {label:<44} min {:>8.1} ms  median {:>8.1} ms  max {:>8.1} ms",
                ms(times[0]),
                ms(median(times)),
                ms(times[times.len() - 1])
            );
        };
        for &(jobs, runs) in &pass_sizes(&plan) {
            let pass = pass_cost(&bin, &template, jobs, runs);
            println!(
                "  {} jobs, jobs.json {:.2} MB, {runs} timed runs:",
                grouped(pass.jobs),
                pass.store_bytes as f64 / 1e6
            );
            row("(a) nothing due (start + load + scan)", &pass.idle);
            row(
                &format!("(b) {} due, waits for the runs", pass.due),
                &pass.busy,
            );
            println!(
                "  peak RSS of one tick: {:.1} MiB nothing due, {:.1} MiB with {} due",
                mib(pass.idle_peak),
                mib(pass.busy_peak),
                pass.due
            );
            summary.push(format!(
            "pass cost ({} jobs, jobs.json {:.2} MB): tick nothing due median {:.0} ms (peak {:.0} MiB); with {} due (1 %) median {:.0} ms (peak {:.0} MiB)",
            grouped(pass.jobs),
            pass.store_bytes as f64 / 1e6,
            ms(median(&pass.idle)),
            mib(pass.idle_peak),
            pass.due,
            ms(median(&pass.busy)),
            mib(pass.busy_peak)
        ));
        }
    }

    if wanted(4) {
        println!(
        "\n[4] burst: {} agent jobs due at once, fake model answering in 1 s, max_parallel_jobs {}",
        plan.burst_jobs, plan.burst_parallel
    );
        let burst = agent_burst(&bin, &template, plan.burst_jobs, plan.burst_parallel);
        println!(
            "  all {} finished in {:.1} s (ideal {:.1} s); CPU {:.2} s = {:.1} ms per job; {} ok",
            burst.jobs,
            burst.wall.as_secs_f64(),
            (burst.jobs as f64 / plan.burst_parallel as f64).ceil(),
            burst.cpu.as_secs_f64(),
            burst.cpu.as_secs_f64() * 1000.0 / burst.jobs as f64,
            burst.ok
        );

        summary.push(format!(
        "burst ({} agent jobs due at once, model answers in 1 s, max_parallel_jobs {}): {:.1} s wall, {:.1} ms CPU per job",
        burst.jobs,
        plan.burst_parallel,
        burst.wall.as_secs_f64(),
        burst.cpu.as_secs_f64() * 1000.0 / burst.jobs as f64
    ));
    }

    if wanted(5) {
        let (starts, conversations) = if measuring { (30, 5) } else { (3, 1) };
        let mut variants = vec![("no MCP server", BenchTool::Terminal, String::new())];
        match mcp_mail_server() {
            Some(block) => variants.push(("one stdio MCP server", BenchTool::McpMail, block)),
            None => println!("\n[5] the MCP variant is skipped: scripts/mcp/setup.sh failed"),
        }
        for (label, tool, extra) in variants {
            println!(
                "\n[5] agent, {label}: `hermes cron run` start to the first request at a fake model ({starts} runs); a 10-turn `{}` conversation ({conversations} runs)",
                tool.name()
            );
            let agent = agent_figures(&bin, starts, conversations, tool, &extra);
            let p = |sorted: &[Duration], q: f64| {
                let ms: Vec<f64> = sorted.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
                percentile(&ms, q)
            };
            println!(
                "  first request: min {:.1} ms, median {:.1} ms, p99 {:.1} ms",
                p(&agent.first_byte, 0.0),
                p(&agent.first_byte, 50.0),
                p(&agent.first_byte, 99.0)
            );
            println!(
                "  10-turn conversation: median {:.0} ms; peak RSS median {:.1} MiB, max {:.1} MiB",
                ms(median(&agent.conversation_wall)),
                mib(agent.conversation_peaks[agent.conversation_peaks.len() / 2]),
                mib(agent.conversation_peaks[agent.conversation_peaks.len() - 1])
            );
            summary.push(format!(
                "agent, {label}: first request {:.1} ms median / {:.1} ms p99 after process start; 10-turn `{}` conversation {:.0} ms median, peak RSS {:.1} MiB",
                p(&agent.first_byte, 50.0),
                p(&agent.first_byte, 99.0),
                tool.name(),
                ms(median(&agent.conversation_wall)),
                mib(agent.conversation_peaks[agent.conversation_peaks.len() - 1])
            ));
        }
    }

    println!("\n===== summary (hermes cron daemon bench, release, {cpus} CPUs) =====");
    for line in summary {
        println!("{line}");
    }
    println!("=====");
}

/// `HERMES_BENCH_SECTIONS=1,3` runs only those sections (default: all five).
fn sections() -> Vec<u32> {
    match std::env::var("HERMES_BENCH_SECTIONS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("HERMES_BENCH_SECTIONS: numbers 1-5, comma-separated")
            })
            .collect(),
        _ => vec![1, 2, 3, 4, 5],
    }
}

/// `HERMES_BENCH_PASS_SIZES=100000:2,10000:5` (jobs:timed runs) replaces the plan's sizes.
fn pass_sizes(plan: &Plan) -> Vec<(u64, usize)> {
    match std::env::var("HERMES_BENCH_PASS_SIZES") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|item| {
                let (jobs, runs) = item
                    .split_once(':')
                    .expect("HERMES_BENCH_PASS_SIZES: jobs:runs, comma-separated");
                (
                    jobs.trim().parse().expect("a number of jobs"),
                    runs.trim().parse().expect("a number of runs"),
                )
            })
            .collect(),
        _ => plan.pass_sizes.clone(),
    }
}
