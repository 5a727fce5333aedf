//! The scheduler daemon, started as a real process on its own HERMES_HOME: on-time
//! firing, exactly-once occurrences across daemons and crashes, catch-up rules, pause
//! and add while running, script timeouts, status and doctor.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

/// A HERMES_HOME with a scripts folder, and the binary pointed at it.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermes"));
        cmd.args(args)
            .env("HERMES_HOME", self.path())
            .env("HERMES_TIMEZONE", "UTC")
            .env_remove("HERMES_NOW")
            .env_remove("HERMES_CRON_TIMEOUT")
            .env_remove("HERMES_CRON_MAX_PARALLEL")
            .env("RUST_LOG", "info");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "hermes {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn script(&self, name: &str, body: &str) {
        std::fs::write(self.path().join("scripts").join(name), body).unwrap();
    }

    fn config(&self, yaml: &str) {
        std::fs::write(self.path().join("config.yaml"), yaml).unwrap();
    }

    /// Adds a job and returns its id.
    fn add(&self, args: &[&str]) -> String {
        let out = self.ok(&[&["cron", "add"], args].concat());
        out.lines()
            .find_map(|l| l.strip_prefix("Created job: "))
            .unwrap()
            .trim()
            .to_string()
    }

    fn daemon(&self) -> Daemon {
        let log = std::fs::File::create(self.path().join(format!(
            "daemon-{}.log",
            Utc::now().timestamp_nanos_opt().unwrap()
        )))
        .unwrap();
        let child = self
            .command(&["cron", "daemon"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Daemon { child }
    }

    fn runs(&self, job: Option<&str>) -> Vec<Value> {
        let mut args = vec!["cron", "runs", "--json", "--limit", "1000"];
        if let Some(job) = job {
            args.insert(2, job);
        }
        let out: Value = serde_json::from_str(&self.ok(&args)).unwrap();
        out["runs"].as_array().unwrap().clone()
    }

    fn job(&self, id: &str) -> Value {
        let out: Value =
            serde_json::from_str(&self.ok(&["cron", "list", "--all", "--json"])).unwrap();
        out["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    }

    fn lines(&self, file: &str) -> Vec<String> {
        std::fs::read_to_string(self.path().join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

struct Daemon {
    child: Child,
}

impl Daemon {
    fn signal(&self, signal: i32) {
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    fn stop(mut self) {
        self.signal(libc::SIGTERM);
        let _ = self.child.wait();
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// Polls `check` every 100 ms until it is true or `limit` passes.
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}

/// A whole second at least `lead` from now, so the test controls the fire instant.
fn soon(lead_secs: i64) -> DateTime<Utc> {
    let t = Utc::now() + chrono::Duration::seconds(lead_secs + 1);
    DateTime::from_timestamp(t.timestamp(), 0).unwrap()
}

#[test]
#[ignore = "slow (4-5 s of real time): .ci/run runs it once"]
fn one_shot_script_fires_once_on_time_and_completes() {
    let home = Home::new();
    home.script(
        "hello.sh",
        "echo \"fired $HERMES_JOB_ID\"\necho x >> \"$HERMES_HOME/side.txt\"\n",
    );
    let due = soon(3);
    let id = home.add(&[
        &iso(due),
        "--script",
        "hello.sh",
        "--no-agent",
        "--name",
        "hello",
    ]);
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(15), || home.job(&id)["state"]
        == "completed"));
    std::thread::sleep(Duration::from_secs(1));
    daemon.stop();
    let runs = home.runs(Some(&id));
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run["status"], "ok");
    assert_eq!(run["occurrence"], format!("{id}@{}", iso(due)));
    let lateness = at(run["started_at"].as_str().unwrap()) - due;
    assert!(
        lateness >= chrono::Duration::zero() && lateness < chrono::Duration::seconds(1),
        "started {lateness} after its instant"
    );
    assert_eq!(home.lines("side.txt").len(), 1);
    let outputs: Vec<PathBuf> = std::fs::read_dir(home.path().join("cron/output").join(&id))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(outputs.len(), 1);
    let doc = std::fs::read_to_string(&outputs[0]).unwrap();
    assert!(doc.starts_with("# Cron Job: hello\n"), "{doc}");
    assert!(doc.contains(&format!("## Response\n\nfired {id}")), "{doc}");
    let job = home.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["enabled"], false);
    assert_eq!(job["next_run_at"], Value::Null);
}

/// Two daemons on one home share `.tick.lock` and the ledger: each of a dozen jobs due
/// in the same second runs once. (Recurring jobs over many minutes, two schedulers on one
/// store, are the scheduler's unit test `two_schedulers_on_one_store_run_every_occurrence_exactly_once`.)
#[test]
#[ignore = "slow (4-5 s of real time): .ci/run runs it once"]
fn two_daemons_run_every_occurrence_exactly_once() {
    let home = Home::new();
    home.script(
        "tick.sh",
        "echo \"$HERMES_JOB_ID\" >> \"$HERMES_HOME/side.txt\"\necho done\n",
    );
    let first = home.daemon();
    let second = home.daemon();
    let due = soon(1);
    let ids: Vec<String> = (0..12)
        .map(|n| {
            home.add(&[
                &iso(due + chrono::Duration::seconds(n % 2)),
                "--script",
                "tick.sh",
                "--no-agent",
                "--name",
                &format!("job{n}"),
            ])
        })
        .collect();
    assert!(wait_for(Duration::from_secs(15), || ids
        .iter()
        .all(|id| home.job(id)["state"] == "completed")));
    std::thread::sleep(Duration::from_secs(1));
    first.stop();
    second.stop();
    let runs = home.runs(None);
    let lines = home.lines("side.txt");
    let mut occurrences: Vec<&str> = runs
        .iter()
        .map(|r| r["occurrence"].as_str().unwrap())
        .collect();
    let total = occurrences.len();
    occurrences.sort();
    occurrences.dedup();
    assert_eq!(occurrences.len(), total, "an occurrence key appears twice");
    for id in &ids {
        let ok = runs
            .iter()
            .filter(|r| r["job_id"] == id.as_str() && r["status"] == "ok")
            .count();
        let ran = lines.iter().filter(|l| l.as_str() == id.as_str()).count();
        assert_eq!(
            (ok, ran),
            (1, 1),
            "job {id}: ledger {ok} runs, script ran {ran} times"
        );
    }
}

#[test]
fn sigkill_during_a_run_never_reruns_that_occurrence() {
    let home = Home::new();
    home.script(
        "slow.sh",
        "echo $$ > \"$HERMES_HOME/script.pid\"\necho started >> \"$HERMES_HOME/side.txt\"\n\
         sleep 20\necho finished >> \"$HERMES_HOME/side.txt\"\n",
    );
    let id = home.add(&[&iso(soon(1)), "--script", "slow.sh", "--no-agent"]);
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(10), || home
        .lines("side.txt")
        .len()
        == 1));
    let script: i32 = home.lines("script.pid")[0].parse().unwrap();
    daemon.kill();
    // The kernel kills the script with its daemon, whichever of the daemon's threads
    // started it.
    assert!(
        wait_for(Duration::from_secs(5), || dead(script)),
        "the script outlived its daemon"
    );
    let restarted = home.daemon();
    assert!(wait_for(Duration::from_secs(10), || {
        home.runs(Some(&id))
            .first()
            .is_some_and(|r| r["status"] == "interrupted")
    }));
    std::thread::sleep(Duration::from_secs(1));
    restarted.stop();
    assert_eq!(
        home.lines("side.txt"),
        ["started"],
        "the script ran again or kept running"
    );
    let runs = home.runs(Some(&id));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "interrupted");
}

/// With one run slot, the second of two jobs due together waits for the first; the
/// ledger records when each really started, not when both were claimed.
#[test]
#[ignore = "slow (4-5 s of real time): .ci/run runs it once"]
fn a_run_that_waited_for_a_slot_is_recorded_when_it_started() {
    let home = Home::new();
    home.config("cron:\n  max_parallel_jobs: 1\n");
    home.script("slow.sh", "sleep 1\necho done\n");
    let due = soon(2);
    let ids = [
        home.add(&[&iso(due), "--script", "slow.sh", "--no-agent"]),
        home.add(&[&iso(due), "--script", "slow.sh", "--no-agent"]),
    ];
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(15), || ids
        .iter()
        .all(|id| home.job(id)["state"] == "completed")));
    daemon.stop();
    let mut runs: Vec<Value> = ids
        .iter()
        .map(|id| home.runs(Some(id))[0].clone())
        .collect();
    runs.sort_by_key(|r| r["started_at"].as_str().unwrap().to_string());
    let (first, second) = (&runs[0], &runs[1]);
    let time = |run: &Value, key: &str| at(run[key].as_str().unwrap());
    assert!(
        time(second, "started_at") >= time(first, "finished_at"),
        "the second run is recorded as started at {} while the first ran until {}",
        second["started_at"],
        first["finished_at"]
    );
    assert!(time(second, "started_at") - due >= chrono::Duration::seconds(1));
}

/// Is the process gone? (A zombie not yet reaped by init is dead too.)
fn dead(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| stat.contains(") Z "))
}

/// The external agent command of a run dies with a killed daemon, as a script does.
#[test]
fn an_agent_command_dies_with_a_killed_daemon() {
    let home = Home::new();
    home.config(
        "agent:\n  backend: command\n  \
         command: [\"sh\", \"-c\", \"echo $$ > \\\"$HERMES_HOME/agent.pid\\\"; exec sleep 30\"]\n",
    );
    home.add(&[&iso(soon(1)), "Summarise the logs"]);
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(10), || !home
        .lines("agent.pid")
        .is_empty()));
    let agent: i32 = home.lines("agent.pid")[0].parse().unwrap();
    assert!(!dead(agent));
    daemon.kill();
    assert!(
        wait_for(Duration::from_secs(5), || dead(agent)),
        "the agent command outlived its daemon"
    );
}

/// A store written while no scheduler ran: one recurring job `minutes_late` overdue, one
/// one-shot 5 minutes overdue.
fn overdue_store(home: &Home, minutes_late: i64) -> (String, String) {
    home.script(
        "mark.sh",
        "echo \"$HERMES_JOB_ID\" >> \"$HERMES_HOME/side.txt\"\necho ran\n",
    );
    let recurring = home.add(&["every 10m", "--script", "mark.sh", "--no-agent"]);
    let once = home.add(&[&iso(soon(600)), "--script", "mark.sh", "--no-agent"]);
    let path = home.path().join("cron/jobs.json");
    let mut store: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let now = Utc::now();
    for job in store["jobs"].as_array_mut().unwrap() {
        if job["id"] == recurring.as_str() {
            job["next_run_at"] = Value::from(iso(now - chrono::Duration::minutes(minutes_late)));
        } else {
            let past = iso(now - chrono::Duration::minutes(5));
            job["schedule"]["run_at"] = Value::from(past.clone());
            job["next_run_at"] = Value::from(past);
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&store).unwrap()).unwrap();
    (recurring, once)
}

#[test]
fn an_overdue_recurring_job_runs_once_and_a_stale_one_shot_is_missed() {
    let home = Home::new();
    let (recurring, once) = overdue_store(&home, 10);
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(10), || home
        .lines("side.txt")
        .len()
        == 1));
    std::thread::sleep(Duration::from_secs(2));
    daemon.stop();
    assert_eq!(home.lines("side.txt"), std::slice::from_ref(&recurring));
    let next = at(home.job(&recurring)["next_run_at"].as_str().unwrap());
    assert!(next > Utc::now(), "next run {next} is not in the future");
    let missed = home.job(&once);
    assert_eq!(missed["state"], "completed");
    assert_eq!(missed["last_status"], "missed");
    let runs = home.runs(Some(&once));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "missed");
    assert!(
        home.path().join("cron/output").join(&once).is_dir(),
        "no missed note"
    );
}

#[test]
fn tick_reports_a_one_shot_it_marks_missed() {
    let home = Home::new();
    let (_, once) = overdue_store(&home, 10);
    let out = home.ok(&["cron", "tick"]);
    assert!(!out.contains("Nothing due"), "{out}");
    assert!(
        out.contains(&format!("({once}): missed\n  reason: missed: due at ")),
        "{out}"
    );
}

#[test]
fn with_catch_up_off_an_overdue_recurring_job_is_skipped() {
    let home = Home::new();
    home.config("cron:\n  catch_up_missed: false\n");
    let (recurring, _) = overdue_store(&home, 10);
    let out = home.ok(&["cron", "tick"]);
    assert!(home.lines("side.txt").is_empty(), "it ran: {out}");
    assert!(
        out.contains(&format!("({recurring}): skipped\n  reason: ")),
        "{out}"
    );
    let runs = home.runs(Some(&recurring));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "skipped");
    assert!(at(home.job(&recurring)["next_run_at"].as_str().unwrap()) > Utc::now());
}

#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn pause_while_running_is_respected_and_an_add_is_picked_up_within_a_second() {
    let home = Home::new();
    home.script(
        "mark.sh",
        "echo \"$HERMES_JOB_ID\" >> \"$HERMES_HOME/side.txt\"\necho ran\n",
    );
    let daemon = home.daemon();
    std::thread::sleep(Duration::from_secs(1)); // the daemon is now asleep (nothing due)
                                                // Three seconds leave room for two commands on a loaded host before it is due.
    let paused_at = soon(3);
    let paused = home.add(&[
        &iso(paused_at),
        "--script",
        "mark.sh",
        "--no-agent",
        "--name",
        "paused",
    ]);
    home.ok(&["cron", "pause", &paused]);
    let due = soon(2);
    let fresh = home.add(&[
        &iso(due),
        "--script",
        "mark.sh",
        "--no-agent",
        "--name",
        "fresh",
    ]);
    assert!(wait_for(Duration::from_secs(10), || home
        .runs(Some(&fresh))
        .len()
        == 1));
    // A second past the paused job's time.
    let past = paused_at + chrono::Duration::seconds(1) - Utc::now();
    std::thread::sleep(past.to_std().unwrap_or_default());
    daemon.stop();
    assert_eq!(home.lines("side.txt"), std::slice::from_ref(&fresh));
    let started = at(home.runs(Some(&fresh))[0]["started_at"].as_str().unwrap());
    assert!(
        started - due < chrono::Duration::seconds(1),
        "picked up {} late",
        started - due
    );
    assert_eq!(home.job(&paused)["state"], "paused");
    assert!(home.runs(Some(&paused)).is_empty());
}

#[test]
#[ignore = "slow (4-5 s of real time): .ci/run runs it once"]
fn a_hanging_script_is_killed_with_its_children_while_other_jobs_fire() {
    let home = Home::new();
    home.config("cron:\n  script_timeout_seconds: 2\n");
    home.script(
        "hang.sh",
        "sleep 300 &\necho $! > \"$HERMES_HOME/child.pid\"\nsleep 300\n",
    );
    home.script(
        "quick.sh",
        "echo quick >> \"$HERMES_HOME/side.txt\"\necho ok\n",
    );
    let due = soon(1);
    let hang = home.add(&[
        &iso(due),
        "--script",
        "hang.sh",
        "--no-agent",
        "--name",
        "hang",
    ]);
    let quick = home.add(&[
        &iso(due + chrono::Duration::seconds(1)),
        "--script",
        "quick.sh",
        "--no-agent",
    ]);
    let daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(15), || home.job(&hang)
        ["last_status"]
        == "error"));
    daemon.stop();
    let quick_run = &home.runs(Some(&quick))[0];
    let hang_run = &home.runs(Some(&hang))[0];
    assert_eq!(quick_run["status"], "ok");
    assert!(
        at(quick_run["finished_at"].as_str().unwrap())
            < at(hang_run["finished_at"].as_str().unwrap()),
        "the quick job waited for the hanging one"
    );
    assert_eq!(hang_run["status"], "error");
    let error = hang_run["error"].as_str().unwrap();
    assert!(error.contains("timed out after 2s"), "{error}");
    let child: i32 = std::fs::read_to_string(home.path().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(3), || unsafe { libc::kill(child, 0) }
            != 0),
        "the script's child {child} survived"
    );
}

#[test]
fn status_reports_a_stale_heartbeat_and_doctor_names_an_overdue_job() {
    let home = Home::new();
    let (recurring, _) = overdue_store(&home, 20);
    let cron = home.path().join("cron");
    let stale = Utc::now().timestamp() - 600;
    std::fs::write(cron.join("ticker_heartbeat"), stale.to_string()).unwrap();
    let status: Value = serde_json::from_str(&home.ok(&["cron", "status", "--json"])).unwrap();
    assert_eq!(status["daemon"]["running"], false);
    assert!(status["daemon"]["heartbeat_age_s"].as_f64().unwrap() >= 599.0);
    assert_eq!(status["active_jobs"], 2); // the stale one-shot is marked missed only by a pass
    let doctor = home.run(&["cron", "doctor"]);
    assert_eq!(doctor.status.code(), Some(1));
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains(&recurring) && text.contains("overdue"),
        "{text}"
    );
    assert!(text.contains("not running"), "{text}");
}

#[test]
fn run_now_runs_a_job_without_moving_its_schedule() {
    let home = Home::new();
    home.script("say.sh", "echo manual run\n");
    let id = home.add(&["every 2h", "--script", "say.sh", "--no-agent"]);
    let before = home.job(&id)["next_run_at"].clone();
    let out = home.ok(&["cron", "run", &id]);
    assert!(out.contains("ok") && out.contains("manual run"), "{out}");
    let job = home.job(&id);
    assert_eq!(job["next_run_at"], before);
    assert_eq!(job["last_status"], "ok");
    let run = &home.runs(Some(&id))[0];
    assert_eq!(run["source"], "manual");
    // The run's document, by its id.
    let document = home.ok(&["cron", "output", &run["id"].to_string()]);
    assert!(
        document.starts_with("# Cron Job: ") && document.contains("## Response\n\nmanual run"),
        "{document}"
    );
    let missing = home.run(&["cron", "output", "999"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr).trim(),
        "error: No run 999: see the run ids with 'hermes cron runs'"
    );
    home.ok(&["cron", "pause", &id]);
    let refused = home.run(&["cron", "run", &id]);
    assert_eq!(refused.status.code(), Some(1));
    let _ = std::io::stderr().flush();
}

#[test]
#[ignore = "slow (3-5 s of real time): .ci/run runs it once"]
fn sigterm_lets_a_running_job_finish_before_the_daemon_exits() {
    let home = Home::new();
    home.script("slow.sh", "sleep 2\necho finished\n");
    let id = home.add(&[&iso(soon(1)), "--script", "slow.sh", "--no-agent"]);
    let mut daemon = home.daemon();
    assert!(wait_for(Duration::from_secs(10), || {
        home.runs(Some(&id))
            .first()
            .is_some_and(|r| r["status"] == "running")
    }));
    daemon.signal(libc::SIGTERM);
    let stopping = Instant::now();
    let status = daemon.child.wait().unwrap();
    assert!(status.success(), "daemon exited with {status}");
    assert!(stopping.elapsed() < Duration::from_secs(30));
    let run = &home.runs(Some(&id))[0];
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(home.job(&id)["last_status"], "ok");
}

#[test]
fn doctor_names_a_missing_bot_token_and_a_missing_model() {
    let home = Home::new();
    home.script("say.sh", "echo hi\n");
    let chat = home.add(&[
        "every 1h",
        "--script",
        "say.sh",
        "--no-agent",
        "--deliver",
        "telegram:12345",
    ]);
    let agent = home.add(&["every 1h", "write a haiku"]);
    let out = home
        .command(&["cron", "doctor"])
        .env_remove("TELEGRAM_BOT_TOKEN")
        .env_remove("HERMES_MODEL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |id: &str| {
        text.lines()
            .find(|l| l.contains(id))
            .unwrap_or("")
            .to_string()
    };
    assert!(
        text.lines()
            .any(|l| l.contains(&chat) && l.contains("(TELEGRAM_BOT_TOKEN not set)")),
        "{text}"
    );
    assert!(line(&agent).contains("the agent cannot start"), "{text}");
}

/// The daemon keeps what it read of `.env` only while the file stays as it was: a key
/// added while it runs is masked in the very next run's output, without a restart.
#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn a_key_added_to_dotenv_while_the_daemon_runs_is_masked_from_the_next_run_on() {
    let home = Home::new();
    let token = "tok-4242-abcdefghijklmnop";
    home.script("say.sh", &format!("echo \"the token is {token}\"\n"));
    let daemon = home.daemon();
    let output_of = |id: &str| {
        assert!(
            wait_for(Duration::from_secs(15), || home.job(id)["state"]
                == "completed"),
            "{id} did not run"
        );
        let run = home.runs(Some(id))[0]["id"].to_string();
        home.ok(&["cron", "output", &run])
    };
    let first = home.add(&[&iso(soon(2)), "--script", "say.sh", "--no-agent"]);
    let before = output_of(&first);
    assert!(before.contains(token), "{before}");

    std::fs::write(
        home.path().join(".env"),
        format!("SERVICE_API_KEY={token}\n"),
    )
    .unwrap();
    let second = home.add(&[&iso(soon(2)), "--script", "say.sh", "--no-agent"]);
    let after = output_of(&second);
    daemon.stop();
    assert!(!after.contains(token), "{after}");
    assert!(after.contains("the token is [REDACTED]"), "{after}");
}
