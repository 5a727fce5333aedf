//! `hermes cron add`: the record it writes (docs/STORE.md, "Job record fields"), the schedule grammar as a user
//! meets it (docs/SCHEDULES.md, "Schedule grammar") and what it refuses (docs/SCHEDULES.md, "Repeat"; docs/DELIVERY.md, "Targets").

use std::fs;

use chrono::Duration;
use serde_json::{json, Value};

use crate::support::{created_id, instant, is_job_id, Hermes, NOW};

#[test]
fn add_every_2h_writes_a_python_readable_record() {
    let hermes = Hermes::new();
    let run = hermes.cron(&["add", "every 2h", "summarize inbox"]);
    let stdout = run.ok();
    let id = created_id(stdout);
    assert!(is_job_id(&id), "printed id '{id}' is not 12 lowercase hex");

    let store = hermes.store();
    let jobs = store["jobs"].as_array().expect("\"jobs\" is a list");
    assert_eq!(jobs.len(), 1, "{store:#}");
    let job = &jobs[0];
    assert_eq!(job["id"], json!(id));
    assert_eq!(
        job["schedule"],
        json!({"kind": "interval", "minutes": 120, "display": "every 120m"})
    );
    assert_eq!(job["schedule_display"], "every 120m");
    assert_eq!(job["repeat"], json!({"times": null, "completed": 0}));
    assert_eq!(job["enabled"], json!(true));
    assert_eq!(job["state"], "scheduled");
    assert_eq!(job["deliver"], "local");
    assert_eq!(job["prompt"], "summarize inbox");
    assert_eq!(job["name"], "summarize inbox");
    assert_eq!(job["next_run_at"], "2026-03-01T12:00:00+00:00");
    assert_eq!(
        instant(job["next_run_at"].as_str().unwrap()) - instant("2026-03-01T10:00:00+00:00"),
        Duration::hours(2)
    );
    assert_eq!(job["created_at"], "2026-03-01T10:00:00+00:00");
    for key in ["last_run_at", "last_status", "last_error", "paused_at"] {
        assert_eq!(job[key], Value::Null, "{key}");
    }
    let updated_at = store["updated_at"]
        .as_str()
        .expect("top-level updated_at is a string");
    instant(updated_at);

    assert!(stdout.contains("every 120m"), "{stdout}");
    assert!(stdout.contains("2026-03-01T12:00:00+00:00"), "{stdout}");
}

#[test]
fn add_writes_offsets_of_the_configured_zone() {
    let hermes = Hermes::in_zone("America/New_York");
    let id = hermes.add("every 2h", "summarize inbox", &[]);
    let job = hermes.job(&id);
    // 10:00Z is 05:00 in New York (EST, -05:00).
    assert_eq!(job["next_run_at"], "2026-03-01T07:00:00-05:00");
    assert_eq!(job["created_at"], "2026-03-01T05:00:00-05:00");
    assert_eq!(
        instant(job["next_run_at"].as_str().unwrap())
            - instant(NOW.replace('Z', "+00:00").as_str()),
        Duration::hours(2)
    );
    assert!(hermes.store()["updated_at"]
        .as_str()
        .unwrap()
        .ends_with("-05:00"));
}

#[cfg(unix)]
#[test]
fn add_creates_a_private_cron_dir_and_jobs_file() {
    use std::os::unix::fs::PermissionsExt;
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // the modes of jobs.json and cron/: a file-store test
    }
    hermes.add("every 2h", "summarize inbox", &[]);
    let mode = |path: &std::path::Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&hermes.cron_dir()), 0o700, "cron/ must be 0700");
    assert_eq!(mode(&hermes.jobs_path()), 0o600, "jobs.json must be 0600");
}

#[cfg(unix)]
#[test]
fn a_pass_leaves_its_ledger_wal_and_tick_lock_private() {
    use std::os::unix::fs::PermissionsExt;
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // the modes of the file store's own files
    }
    hermes.add("every 2h", "summarize inbox", &[]);
    // SQLite removes the -wal and -shm files when the last connection closes: look while
    // a daemon holds them.
    let mut daemon = hermes
        .command(&["cron", "daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let names = [
        "executions.db",
        "executions.db-wal",
        "executions.db-shm",
        ".tick.lock",
    ];
    let started = std::time::Instant::now();
    while !names
        .iter()
        .all(|name| hermes.cron_dir().join(name).exists())
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the daemon never opened its ledger"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let modes: Vec<(&str, u32)> = names
        .iter()
        .map(|name| {
            let path = hermes.cron_dir().join(name);
            (
                *name,
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            )
        })
        .collect();
    let _ = daemon.kill();
    let _ = daemon.wait();
    for (name, mode) in modes {
        assert_eq!(mode, 0o600, "{name} must be 0600");
    }
}

#[test]
fn a_temp_file_a_crashed_write_left_is_removed_by_the_next_write_whatever_its_age() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // the file store's own temp files
    }
    hermes.add("every 2h", "summarize inbox", &[]);
    let cron = hermes.cron_dir();
    let stale = cron.join(".jobs.json.tmp-4242-00000000deadbeef");
    let young = cron.join(".jobs.json.tmp-4243-00000000cafebabe");
    let other = cron.join(".notes.tmp-4242-00000000deadbeef");
    for path in [&stale, &young, &other] {
        fs::write(path, b"{\"jobs\": [").unwrap();
    }
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in [&stale, &other] {
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
    }
    hermes.add("every 3h", "water the plants", &[]);
    // Every write of jobs.json holds .jobs.lock, so a temp file of it that the next write
    // finds is a killed writer's, however young (a SIGKILL between create and rename).
    assert!(
        !stale.exists(),
        "the crashed write's temp file is still there"
    );
    assert!(
        !young.exists(),
        "a temp file a killed writer left a moment ago is still there"
    );
    assert!(
        other.exists(),
        "a file that is not a temp of jobs.json was removed"
    );
}

#[test]
fn add_pretty_prints_the_store_and_writes_cjk_and_emoji_literally() {
    let hermes = Hermes::new();
    let prompt = "毎朝のニュースを要約して 🚀 — résumé";
    let id = hermes.add("every 2h", prompt, &[]);
    let text = String::from_utf8(hermes.store_bytes().unwrap()).expect("jobs.json is UTF-8");
    assert!(
        text.contains(&format!("\"prompt\": \"{prompt}\"")),
        "prompt not written literally:\n{text}"
    );
    assert!(!text.contains("\\u"), "found \\u escapes:\n{text}");
    assert!(
        text.starts_with("{\n  \"jobs\": [\n    {\n      \""),
        "not pretty-printed with a 2-space indent:\n{text}"
    );
    // Exactly the layout of a 2-space pretty printer (Python's `indent=2` shape).
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        text.trim_end_matches('\n'),
        serde_json::to_string_pretty(&parsed).unwrap()
    );
    assert_eq!(hermes.job(&id)["prompt"], prompt);
}

#[test]
fn add_bare_30m_is_a_one_shot_in_30_minutes() {
    let hermes = Hermes::new();
    let id = hermes.add("30m", "stretch", &[]);
    let job = hermes.job(&id);
    assert_eq!(job["schedule"]["kind"], "once");
    assert_eq!(job["schedule"]["run_at"], "2026-03-01T10:30:00+00:00");
    assert_eq!(job["repeat"], json!({"times": 1, "completed": 0}));
    assert_eq!(job["next_run_at"], "2026-03-01T10:30:00+00:00");
}

#[test]
fn add_30m_with_repeat_3_is_an_interval_that_runs_three_times() {
    let hermes = Hermes::new();
    let id = hermes.add("30m", "stretch", &["--repeat", "3"]);
    let job = hermes.job(&id);
    assert_eq!(
        job["schedule"],
        json!({"kind": "interval", "minutes": 30, "display": "every 30m"})
    );
    assert_eq!(job["repeat"], json!({"times": 3, "completed": 0}));
    assert_eq!(job["next_run_at"], "2026-03-01T10:30:00+00:00");
}

#[test]
fn add_stores_each_accepted_schedule_form() {
    // A sample through `add` (each add costs a process); the rest of the grammar is
    // checked through `next --json`, which prints the same stored form.
    let hermes = Hermes::new();
    let cases: &[(&str, Value)] = &[
        (
            "weekdays at 9am",
            json!({"kind": "cron", "expr": "0 9 * * 1-5", "display": "weekdays at 9am"}),
        ),
        (
            "every monday 9am",
            json!({"kind": "cron", "expr": "0 9 * * 1", "display": "every monday 9am"}),
        ),
        (
            "@daily",
            json!({"kind": "cron", "expr": "0 0 * * *", "display": "@daily"}),
        ),
        (
            "0 9 * * MON-FRI",
            json!({"kind": "cron", "expr": "0 9 * * MON-FRI", "display": "0 9 * * MON-FRI"}),
        ),
        (
            "every hour",
            json!({"kind": "interval", "minutes": 60, "display": "every 60m"}),
        ),
        (
            // As Hermes 0.22 stores it: a bare unit, not a day without a time.
            "every day",
            json!({"kind": "interval", "minutes": 1440, "display": "every 1440m"}),
        ),
        (
            "2026-03-02T14:00",
            json!({"kind": "once", "run_at": "2026-03-02T14:00:00+00:00", "display": "once at 2026-03-02 14:00"}),
        ),
    ];
    let mut ids = Vec::new();
    for (input, _) in cases {
        let name = format!("form {input}");
        ids.push(hermes.add(input, "do the thing", &["--name", &name]));
    }
    for ((input, want), id) in cases.iter().zip(&ids) {
        let job = hermes.job(id);
        assert_eq!(&job["schedule"], want, "schedule stored for '{input}'");
        assert_eq!(job["schedule_display"], want["display"], "'{input}'");
    }
}

#[test]
fn add_refuses_invalid_schedules_and_writes_nothing() {
    let hermes = Hermes::new();
    let cases = [
        ("x", "Use: '30m'"),
        (
            "every monday",
            "names days but no time of day: add one, e.g. 'every monday 9am'",
        ),
        ("0 9 * * * *", "0 9 * * * *"),
        ("61 * * * *", "the minute field allows 0-59, not 61"),
        ("0 25 * * *", "the hour field allows 0-23, not 25"),
        ("every 1.5h", "1.5h"),
    ];
    for (input, needle) in cases {
        let run = hermes.cron(&["add", input, "do the thing"]);
        let message = run.user_error();
        assert!(message.contains(needle), "'{input}': {message}");
        assert!(
            hermes.store_bytes().is_none(),
            "'{input}' created jobs.json"
        );
    }
    let run = hermes.cron(&["add", "x", "do the thing"]);
    assert!(
        run.user_error().contains(
            "Invalid schedule 'x'. Use: '30m' or 'in 30m' (once), 'every 2h' (recurring)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        hermes
            .cron(&["add", "0 9 * * * *", "p"])
            .stderr
            .contains("5 fields"),
        "a six-field expression should be told cron has five fields"
    );

    // With a store in place, a refused add leaves its bytes alone.
    hermes.add("every 2h", "summarize inbox", &[]);
    let before = hermes.store_bytes().unwrap();
    for (input, _) in cases {
        hermes.cron(&["add", input, "do the thing"]).user_error();
        assert_eq!(
            hermes.store_bytes().unwrap(),
            before,
            "'{input}' changed jobs.json"
        );
    }
}

#[test]
fn add_refuses_a_one_shot_in_the_past() {
    let hermes = Hermes::new();
    let run = hermes.cron(&["add", "2020-01-01T00:00", "too late"]);
    let message = run.user_error();
    assert!(message.to_lowercase().contains("past"), "{message}");
    assert!(hermes.store_bytes().is_none());
}

#[test]
fn add_refuses_an_unknown_delivery_platform() {
    let hermes = Hermes::new();
    let run = hermes.cron(&["add", "every 2h", "p", "--deliver", "pigeon"]);
    let message = run.user_error();
    assert!(message.contains("pigeon"), "{message}");
    assert!(hermes.store_bytes().is_none());
}

#[test]
fn add_origin_is_stored_with_python_hermes_keys_and_a_matrix_room_keeps_its_colon() {
    let hermes = Hermes::new();
    let telegram = hermes.add(
        "every 2h",
        "check",
        &["--origin", "telegram:-1001234567890:17"],
    );
    assert_eq!(
        hermes.job(&telegram)["origin"],
        json!({"platform": "telegram", "chat_id": "-1001234567890", "chat_name": null,
               "thread_id": "17", "user_id": null})
    );
    assert_eq!(hermes.job(&telegram)["deliver"], "origin");
    let matrix = hermes.add(
        "every 2h",
        "check",
        &["--origin", "matrix:!room:example.org"],
    );
    assert_eq!(
        hermes.job(&matrix)["origin"]["chat_id"],
        "!room:example.org"
    );
    assert_eq!(hermes.job(&matrix)["origin"]["thread_id"], Value::Null);

    let refused = hermes.cron(&["add", "every 2h", "check", "--origin", "telegram:1:2:3"]);
    assert_eq!(
        refused.user_error(),
        "error: Invalid origin 'telegram:1:2:3': use PLATFORM:CHAT[:THREAD], e.g. telegram:-1001234567890:17"
    );
}

/// A fresh home with this config.yaml.
fn with_config(text: &str) -> Hermes {
    let hermes = Hermes::new();
    fs::write(hermes.home().join("config.yaml"), text).unwrap();
    hermes
}

/// A configured model and provider for `--pin` to copy.
pub(crate) const PINNABLE: &str =
    "model:\n  default: test-model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n";

#[test]
fn add_says_how_it_read_a_bare_duration_and_how_to_write_the_other_reading() {
    let hermes = Hermes::new();
    let once = hermes.cron(&["add", "30m", "stretch"]);
    assert!(
        once.ok()
            .contains("Schedule: once in 30m (write \"every 30m\" to repeat)"),
        "{}",
        once.stdout
    );
    let every = hermes.cron(&["add", "30m", "drink", "--repeat", "3"]);
    assert!(
        every
            .ok()
            .contains("Schedule: every 30m (write \"in 30m\" to run once)"),
        "{}",
        every.stdout
    );
    let plain = hermes.cron(&["add", "in 30m", "tea"]);
    assert!(
        plain.ok().contains("Schedule: once in 30m\n"),
        "no hint for an unambiguous schedule: {}",
        plain.stdout
    );
}

#[test]
fn cron_bare_duration_every_reads_30m_as_every_30_minutes_as_hermes_0_22_does() {
    let hermes = with_config("cron:\n  bare_duration: every\n");
    let run = hermes.cron(&["add", "30m", "stretch"]);
    assert!(
        run.ok()
            .contains("Schedule: every 30m (write \"in 30m\" to run once)"),
        "{}",
        run.stdout
    );
    let job = hermes.job(&created_id(&run.stdout));
    assert_eq!(
        job["schedule"],
        json!({"kind": "interval", "minutes": 30, "display": "every 30m"})
    );
    assert_eq!(job["repeat"], json!({"times": null, "completed": 0}));
    let once = hermes.add("in 30m", "tea", &[]);
    assert_eq!(hermes.job(&once)["schedule"]["kind"], "once");
    fs::write(
        hermes.home().join("config.yaml"),
        "cron:\n  bare_duration: twice\n",
    )
    .unwrap();
    let refused = hermes.cron(&["add", "30m", "stretch"]);
    assert_eq!(
        refused.user_error(),
        "error: cron.bare_duration must be 'once' or 'every', got 'twice': fix it in config.yaml"
    );
}

/// The record Hermes 0.22.2 writes for `hermes cron create "every 2h" "check things"
/// --failure-deliver local --monitor-script m.sh --model gpt-x --provider openrouter
/// --reasoning-effort HIGH --interpreter /usr/bin/python3 --continuity`, taken from its
/// jobs.json (id and times apart).
fn hermes_022_record() -> Value {
    json!({
        "name": "check things", "prompt": "check things", "skills": [], "skill": null,
        "model": "gpt-x", "provider": "openrouter", "base_url": null, "script": null,
        "no_agent": false, "monitor_script": "m.sh", "monitor_url": null,
        "monitor_state": null, "context_from": ["self"],
        "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
        "schedule_display": "every 120m", "repeat": {"times": null, "completed": 0},
        "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
        "last_run_at": null, "last_status": null, "last_error": null,
        "last_delivery_error": null, "last_delivery_unverified": null, "last_failure": null,
        "failure_streak": 0, "deliver": "local", "origin": null, "enabled_toolsets": null,
        "workdir": null, "reasoning_effort": "high", "failure_deliver": "local",
        "interpreter": "/usr/bin/python3"
    })
}

#[test]
fn add_with_every_hermes_0_22_flag_writes_the_record_hermes_0_22_writes_key_for_key() {
    let hermes = Hermes::new();
    fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    fs::write(hermes.home().join("scripts/m.sh"), "echo v1\n").unwrap();
    let run = hermes.cron(&[
        "add",
        "every 2h",
        "check things",
        "--failure-deliver",
        "local",
        "--monitor-script",
        "m.sh",
        "--model",
        "gpt-x",
        "--provider",
        "openrouter",
        "--reasoning-effort",
        "HIGH",
        "--interpreter",
        "/usr/bin/python3",
        "--continuity",
    ]);
    let id = created_id(run.ok());
    let mut job = hermes.job(&id);
    let object = job.as_object_mut().unwrap();
    for key in ["id", "created_at", "next_run_at"] {
        assert!(object.shift_remove(key).is_some(), "{key} missing");
    }
    let want = hermes_022_record();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&job), keys(&want), "the keys and their order");
    assert_eq!(job, want);
    for line in [
        "Failures: local",
        "Monitor:  m.sh",
        "Continuity: on",
        "Model:    gpt-x (openrouter)",
        "Reasoning effort: high",
        "Python:   /usr/bin/python3",
    ] {
        assert!(run.stdout.contains(line), "{line}: {}", run.stdout);
    }
}

#[test]
fn add_paused_writes_no_next_run_and_hermes_0_22_s_reason_and_a_reason_needs_paused() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "standup", &["--paused"]);
    let job = hermes.job(&id);
    assert_eq!(
        (
            &job["enabled"],
            &job["state"],
            &job["next_run_at"],
            &job["paused_at"],
            &job["paused_reason"]
        ),
        (
            &json!(false),
            &json!("paused"),
            &Value::Null,
            &json!("2026-03-01T10:00:00+00:00"),
            &json!("Created paused; awaiting operator approval.")
        )
    );
    let given = hermes.add(
        "every 2h",
        "standup",
        &["--paused", "--paused-reason", "needs review"],
    );
    assert_eq!(hermes.job(&given)["paused_reason"], "needs review");
    let before = hermes.store_bytes();
    let refused = hermes.cron(&["add", "every 2h", "x", "--paused-reason", "why"]);
    assert!(
        refused
            .user_error()
            .contains("paused_reason requires paused=True"),
        "{}",
        refused.stderr
    );
    assert_eq!(hermes.store_bytes(), before);
}

#[test]
fn add_refuses_a_monitor_with_two_sources_or_without_an_agent_and_a_wrong_effort() {
    let hermes = Hermes::new();
    fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    fs::write(hermes.home().join("scripts/m.sh"), "echo v1\n").unwrap();
    for (args, message) in [
        (
            vec!["--monitor-script", "m.sh", "--monitor-url", "https://x.example/"],
            "monitor_script and monitor_url are mutually exclusive",
        ),
        (
            vec!["--monitor-script", "m.sh", "--script", "m.sh", "--no-agent"],
            "monitor_script/monitor_url cannot be combined with no_agent=True",
        ),
        (
            vec!["--monitor-url", "file:///etc/passwd"],
            "Invalid monitor_url 'file:///etc/passwd': give an http:// or https:// URL",
        ),
        (
            vec!["--monitor-script", "../m.sh"],
            "Invalid script '../m.sh'",
        ),
        (
            vec!["--reasoning-effort", "hgih"],
            "Invalid reasoning_effort 'hgih'. Valid levels: none, minimal, low, medium, high, xhigh, max, ultra",
        ),
        (
            vec!["--failure-deliver", "carrier-pigeon"],
            "carrier-pigeon",
        ),
    ] {
        let mut all = vec!["add", "every 1h", "watch"];
        all.extend(args);
        let run = hermes.cron(&all);
        assert!(run.user_error().contains(message), "{all:?}: {}", run.stderr);
    }
    assert_eq!(hermes.store_bytes(), None);
    let id = hermes.add("every 1h", "think less", &["--reasoning-effort", "false"]);
    assert_eq!(hermes.job(&id)["reasoning_effort"], "none");
}

#[test]
fn add_pin_copies_the_configured_model_and_provider_unless_a_model_is_given() {
    let hermes = with_config(PINNABLE);
    let pinned = hermes.add("every 1h", "p", &["--pin"]);
    let job = hermes.job(&pinned);
    assert_eq!(
        (&job["model"], &job["provider"]),
        (&json!("test-model"), &json!("custom"))
    );
    let own = hermes.add("every 1h", "p", &["--pin", "--model", "mine"]);
    let job = hermes.job(&own);
    assert_eq!(
        (&job["model"], &job["provider"]),
        (&json!("mine"), &Value::Null)
    );
    fs::remove_file(hermes.home().join("config.yaml")).unwrap();
    let nothing = hermes.add("every 1h", "p", &["--pin", "--provider", "openrouter"]);
    let job = hermes.job(&nothing);
    assert_eq!(
        (&job["model"], &job["provider"]),
        (&Value::Null, &Value::Null),
        "with no model configured, --pin pins nothing (Hermes 0.22)"
    );
}

#[test]
fn add_refuses_hermes_0_22_bot_chat_delivery_saying_it_needs_hermes_gateway() {
    let hermes = Hermes::new();
    for target in ["bot-chat", "bot-chat:work"] {
        let run = hermes.cron(&["add", "every 1h", "report", "--deliver", target]);
        assert_eq!(
            run.user_error(),
            format!("error: Delivery target '{target}' needs Hermes' own gateway (it delivers into a profile's Bot Chat), which hermes-cron does not run: deliver to a platform, e.g. telegram, or to local")
        );
        assert!(hermes.store_bytes().is_none(), "'{target}' stored a job");
    }
}

/// Tools written for Hermes call `create --name N --schedule S --prompt P`: the flag form
/// creates the same job as the arguments, mixed forms too, and a usage error exits 2
/// (clap's and argparse's convention) with the usage line, storing nothing.
#[test]
fn create_takes_schedule_and_prompt_as_flags_and_a_usage_error_exits_2() {
    let hermes = Hermes::new();
    let flags = created_id(
        hermes
            .cron(&[
                "create",
                "--name",
                "flags",
                "--schedule",
                "every 2h",
                "--prompt",
                "summarize inbox",
            ])
            .ok(),
    );
    let mixed = created_id(
        hermes
            .cron(&["add", "--schedule", "every 2h", "summarize inbox"])
            .ok(),
    );
    let words = hermes.add("every 2h", "summarize inbox", &["--name", "words"]);
    for id in [&flags, &mixed, &words] {
        let job = hermes.job(id);
        assert_eq!(
            job["schedule"],
            json!({"kind": "interval", "minutes": 120, "display": "every 120m"}),
            "{id}"
        );
        assert_eq!(job["prompt"], "summarize inbox", "{id}");
    }
    assert_eq!(hermes.job(&flags)["name"], "flags");

    let before = hermes.store_bytes();
    for (args, needle) in [
        (vec!["add"], "a schedule is needed"),
        (vec!["create", "--prompt", "p"], "a schedule is needed"),
        (
            vec!["add", "every 2h", "p", "--schedule", "every 3h"],
            "given twice",
        ),
        (vec!["add", "every 2h", "p", "--prompt", "q"], "given twice"),
        (vec!["add", "every 2h", "--no-such-flag"], "--no-such-flag"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let run = hermes.cron(&args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("Usage: hermes cron"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(hermes.store_bytes(), before, "{args:?} changed the store");
    }
    assert_eq!(hermes.cron(&["add", "--help"]).code, Some(0));
}
