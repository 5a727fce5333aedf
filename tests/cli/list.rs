//! `hermes cron list` (docs/COMMANDS.md, "list"): what a user reads, and what a script parses.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::support::{on_postgres, Hermes};

#[test]
fn list_shows_the_relative_time_next_to_the_absolute_one() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "summarize inbox", &[]);
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(listing.contains(&id), "{listing}");
    assert!(listing.contains("summarize inbox"), "{listing}");
    assert!(listing.contains("every 120m"), "{listing}");
    assert!(
        listing.contains("2026-03-01T12:00:00+00:00 (in 2h)"),
        "{listing}"
    );
    assert!(
        listing.contains("∞"),
        "repeat forever shown as ∞:\n{listing}"
    );
}

#[test]
fn list_shows_control_characters_another_program_stored_as_escapes_never_raw() {
    let hermes = Hermes::new();
    hermes.write_store(
        json!({"jobs": [{
            "id": "aaaaaaaaaaaa",
            "name": "\u{1b}[2J\u{1b}[31mreport",
            "prompt": "p",
            "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
            "enabled": true,
            "state": "scheduled",
            "next_run_at": "2026-03-01T11:00:00+00:00",
            "deliver": "local\r",
            "last_error": "boom\u{7}"
        }]})
        .to_string()
        .as_bytes(),
    );
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(
        !listing
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character reached the terminal: {listing:?}"
    );
    assert!(listing.contains("\\u{1b}[2J\\u{1b}[31mreport"), "{listing}");
    assert!(listing.contains("Error:    boom\\u{7}"), "{listing}");
}

#[test]
fn list_on_an_empty_store_says_how_to_create_a_job() {
    let hermes = Hermes::new();
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(listing.contains("hermes cron add"), "{listing}");
    assert!(
        hermes.store_bytes().is_none(),
        "list must not create a store"
    );
}

#[test]
fn list_json_prints_only_the_jobs_object() {
    let hermes = Hermes::new();
    let empty = hermes.cron(&["list", "--json"]);
    let parsed: Value = serde_json::from_str(empty.ok()).expect("stdout is only JSON");
    assert_eq!(parsed, json!({"jobs": []}));

    let id = hermes.add("every 2h", "summarize inbox", &[]);
    let run = hermes.cron(&["list", "--json"]);
    let parsed: Value = serde_json::from_str(run.ok()).expect("stdout is only JSON");
    assert_eq!(run.stderr, "");
    let top = parsed.as_object().unwrap();
    assert_eq!(top.keys().collect::<Vec<_>>(), vec!["jobs"]);
    let jobs = parsed["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["id"], json!(id));
    assert_eq!(
        jobs[0]["schedule"],
        json!({"kind": "interval", "minutes": 120, "display": "every 120m"})
    );
    assert_eq!(jobs[0]["next_run_at"], "2026-03-01T12:00:00+00:00");
    assert_eq!(jobs[0]["state"], "scheduled");
}

/// A store with enough jobs that `list` output is far bigger than a pipe buffer.
fn many_jobs(count: usize) -> Vec<u8> {
    let jobs: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "id": format!("{i:012x}"),
                "name": format!("job number {i} with a reasonably long name to fill the pipe"),
                "prompt": "p",
                "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
                "repeat": {"times": null, "completed": 0},
                "enabled": true,
                "state": "scheduled",
                "next_run_at": "2026-03-01T11:00:00+00:00",
                "deliver": "local",
            })
        })
        .collect();
    serde_json::to_vec_pretty(&json!({"jobs": jobs, "updated_at": "2026-03-01T09:00:00+00:00"}))
        .unwrap()
}

#[track_caller]
fn read_one_line_then_close(hermes: &Hermes, args: &[&str]) {
    let mut command = hermes.command(args);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start hermes");
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    // The reader is dropped here: the pipe is closed with most of the output unread.
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(stderr, "", "{args:?}: a closed pipe is not worth a message");
    assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
}

#[test]
fn list_into_a_closed_pipe_exits_quietly() {
    let hermes = Hermes::new();
    // ~1000 jobs print far more than the 64 KiB a pipe buffers.
    hermes.write_store(&many_jobs(1000));
    read_one_line_then_close(&hermes, &["cron", "list"]);
    read_one_line_then_close(&hermes, &["cron", "list", "--json"]);
    read_one_line_then_close(&hermes, &["cron", "next", "* * * * *", "-n", "10000"]);
}

#[test]
fn bare_cron_lists_the_jobs_with_the_lines_python_hermes_shows() {
    let hermes = Hermes::new();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/fetch.sh"), "echo hi\n").unwrap();
    let workdir = hermes.home().join("work");
    std::fs::create_dir_all(&workdir).unwrap();
    let id = hermes.add(
        "every 2h",
        "summarize inbox",
        &[
            "--skill",
            "mail",
            "--skill",
            "triage",
            "--script",
            "fetch.sh",
            "--no-agent",
            "--workdir",
            workdir.to_str().unwrap(),
        ],
    );
    let bare = hermes.run(&["cron"]).ok().to_string();
    assert_eq!(
        bare,
        hermes.cron(&["list"]).ok(),
        "bare `hermes cron` is `list`"
    );
    assert!(bare.contains(&id), "{bare}");
    assert!(bare.contains("    Skills:   mail, triage\n"), "{bare}");
    assert!(bare.contains("    Script:   fetch.sh\n"), "{bare}");
    assert!(
        bare.contains("    Mode:     no-agent (script stdout delivered directly)\n"),
        "{bare}"
    );
    assert!(
        bare.contains(&format!("    Workdir:  {}\n", workdir.display())),
        "{bare}"
    );
}

#[test]
fn history_is_runs_and_the_limit_is_clamped_like_python_hermes() {
    let hermes = Hermes::new();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/hi.sh"), "echo hi\n").unwrap();
    let id = hermes.add("every 2h", "", &["--script", "hi.sh", "--no-agent"]);
    for second in 1..=3 {
        let at = format!("2026-03-01T10:00:0{second}Z");
        hermes.cron_at(&at, &["run", &id]).ok();
    }
    let count = |args: &[&str]| {
        let out: Value = serde_json::from_str(hermes.cron(args).ok()).unwrap();
        out["runs"].as_array().unwrap().len()
    };
    assert_eq!(count(&["history", "--json"]), 3);
    assert_eq!(
        count(&["runs", "--json", "--limit", "0"]),
        1,
        "0 is clamped up to 1"
    );
    assert_eq!(count(&["runs", "--json", "--limit", "2"]), 2);
    assert_eq!(count(&["runs", "--json", "--limit", "100000"]), 3);
}

#[test]
fn completions_are_generated_from_the_command_line_definition() {
    let hermes = Hermes::new();
    let bash = hermes.run(&["completions", "bash"]).ok().to_string();
    assert!(
        bash.contains("_hermes()") && bash.contains("history") && bash.contains("store"),
        "{bash}"
    );
    let zsh = hermes.run(&["completions", "zsh"]).ok().to_string();
    assert!(zsh.starts_with("#compdef hermes"), "{zsh}");
    let fish = hermes.run(&["completions", "fish"]).ok().to_string();
    assert!(fish.contains("complete -c hermes"), "{fish}");
    // An unknown shell is a usage error: exit 2, as clap and argparse give it.
    let bad = hermes.run(&["completions", "tcsh"]);
    assert_eq!(bad.code, Some(2));
}

#[test]
fn the_man_page_is_generated_from_the_command_line_definition() {
    let hermes = Hermes::new();
    let page = hermes.run(&["man"]).ok().to_string();
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq"),
        "roff: {}",
        &page[..200]
    );
    assert!(page.contains(".TH hermes 1"), "{page}");
    // Every verb, with its usage and its options.
    for needle in [
        "hermes cron add [OPTIONS] [SCHEDULE] [PROMPT]",
        "The schedule as a flag, as `edit` takes it",
        "hermes cron store import",
        "hermes gateway install",
        "\\-\\-tz",
        "IANA time zone for this job",
        "(alias: rm, delete)",
    ] {
        assert!(page.contains(needle), "{needle} missing from:\n{page}");
    }
}

#[test]
fn profiles_follow_python_hermes_flag_and_sticky_active_profile() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // looks for the profile's jobs.json: a file-store test
    }
    let refused = hermes.run(&["-p", "work", "cron", "add", "every 2h", "report"]);
    let dir = hermes.home().join("profiles/work");
    assert_eq!(
        refused.user_error(),
        format!(
            "error: Profile 'work' does not exist: create its directory with `mkdir -p {}` (or, with Python Hermes, `hermes profile create work`)",
            dir.display()
        )
    );
    std::fs::create_dir_all(hermes.home().join("profiles/work")).unwrap();
    let created = hermes.run(&["--profile", "Work", "cron", "add", "every 2h", "report"]);
    let id = crate::support::created_id(created.ok());
    assert!(hermes.home().join("profiles/work/cron/jobs.json").exists());
    assert!(
        !hermes.jobs_path().exists(),
        "the root's store is untouched"
    );
    assert!(
        !hermes.cron(&["list"]).ok().contains(&id),
        "no profile: the root"
    );
    // `hermes profile use work` writes the sticky choice; every command follows it.
    std::fs::write(hermes.home().join("active_profile"), "work\n").unwrap();
    assert!(hermes.cron(&["list"]).ok().contains(&id));
    assert!(!hermes
        .run(&["-p", "default", "cron", "list"])
        .ok()
        .contains(&id));
}

#[test]
fn service_install_without_systemd_prints_the_unit_and_where_it_belongs() {
    let hermes = Hermes::new();
    std::fs::create_dir_all(hermes.home().join("profiles/work")).unwrap();
    // A systemctl that reaches no user manager (as in a container): install shows the
    // unit, start explains, and nothing is written.
    let bin = hermes.home().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("systemctl"),
        "#!/bin/sh\necho 'Failed to connect to bus' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("systemctl"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        let output = hermes.command(args).env("PATH", &path).output().unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let (code, out, _) = run(&["-p", "work", "cron", "service", "install"]);
    assert_eq!(code, Some(0));
    // Named hermes-cron, never hermes-gateway (Python Hermes' chat gateway unit).
    assert!(
        out.contains("systemd/user/hermes-cron-work.service"),
        "{out}"
    );
    assert!(
        out.contains(" cron daemon\n") && out.contains("ExecStart="),
        "{out}"
    );
    // Without Python Hermes, `hermes gateway install` is the same command.
    let (code, same, _) = run(&["-p", "work", "gateway", "install"]);
    assert_eq!(code, Some(0));
    assert_eq!(same, out);
    assert!(
        out.contains(&format!(
            "Environment=HERMES_HOME={}",
            hermes.home().join("profiles/work").display()
        )),
        "{out}"
    );
    assert!(
        !hermes.home().join(".config/systemd").exists(),
        "nothing written"
    );
    let (code, _, err) = run(&["cron", "service", "start"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("run 'hermes cron daemon'"), "{err}");
    let status = hermes.run(&["cron", "service", "status"]).ok().to_string();
    assert!(status.contains("Scheduler: NOT running"), "{status}");
}

/// Hundreds of jobs, every seventh in an older shape and every fifth paused: the
/// listings keep the store's order, heal the old shapes as every other reader does and
/// leave the file alone.
#[test]
fn a_large_store_in_mixed_shapes_lists_every_job_in_order_healed() {
    let hermes = Hermes::new();
    let jobs: Vec<Value> = (0..700)
        .map(|i| {
            let mut job = json!({
                "id": format!("{i:012x}"),
                "name": format!("job {i}"),
                "prompt": "say \"hi\"\nthen stop",
                "skills": ["a"],
                "skill": "a",
                "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
                "repeat": {"times": null, "completed": i},
                "enabled": i % 5 != 0,
                "state": if i % 5 == 0 { "paused" } else { "scheduled" },
                "next_run_at": "2026-03-01T11:00:00+00:00",
                "deliver": "local",
                "x_extra": {"n": i},
            });
            if i % 7 == 0 {
                job["schedule"] = json!("every 30m");
                job["deliver"] = json!(["local", "telegram"]);
                job["skills"] = json!([" b ", "b", "c"]);
                job["next_run_at"] = json!("2026-03-01T11:00:00");
            }
            job
        })
        .collect();
    let bytes = serde_json::to_vec_pretty(
        &json!({"jobs": jobs, "updated_at": "2026-03-01T09:00:00+00:00"}),
    )
    .unwrap();
    hermes.write_store(&bytes);

    let all: Value = serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok()).unwrap();
    let all = all["jobs"].as_array().unwrap();
    assert_eq!(all.len(), 700);
    for (i, job) in all.iter().enumerate() {
        assert_eq!(job["id"], json!(format!("{i:012x}")), "store order");
        assert_eq!(job["repeat"], json!({"times": null, "completed": i}));
        assert_eq!(job["x_extra"], json!({"n": i}), "unknown keys are listed");
        assert_eq!(job["prompt"], json!("say \"hi\"\nthen stop"));
        let paused = i % 5 == 0;
        assert_eq!(
            job["state"],
            json!(if paused { "paused" } else { "scheduled" })
        );
        if i % 7 == 0 {
            assert_eq!(job["schedule"]["display"], json!("every 30m"), "{job}");
            assert_eq!(job["schedule_display"], json!("every 30m"));
            assert_eq!(job["deliver"], json!("local,telegram"));
            assert_eq!(job["skills"], json!(["b", "c"]));
            assert_eq!(job["skill"], json!("b"));
            let next = job["next_run_at"].as_str().unwrap();
            assert!(
                next.starts_with("2026-03-01T") && next.len() == 25,
                "{next}"
            );
        } else {
            assert_eq!(job["schedule_display"], json!("every 60m"));
            assert_eq!(job["deliver"], json!("local"));
            assert_eq!(job["next_run_at"], json!("2026-03-01T11:00:00+00:00"));
        }
    }
    let shown: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    assert_eq!(
        shown["jobs"].as_array().unwrap().len(),
        700,
        "paused jobs are listed without --all, as Hermes 0.22 lists them"
    );

    let text = hermes.cron(&["list", "--all"]).ok().to_string();
    let ids = listed_ids(&text);
    let want: Vec<String> = (0..700).map(|i| format!("{i:012x}")).collect();
    assert_eq!(ids, want);
    assert!(
        text.contains(
            "000000000007  [scheduled]  job 7\n    Schedule: every 30m — every 30 minutes   Repeat: ∞\n"
        ),
        "{}",
        &text[..600]
    );
    assert!(text.contains("000000000005  [paused]  job 5\n    Schedule: every 60m — every hour   Repeat: ∞\n    Next run: paused\n"));
    assert!(text.contains("    Skills:   b, c\n"));
    assert!(!text.contains("invalid"));
    if !on_postgres() {
        assert_eq!(
            std::fs::read(hermes.jobs_path()).unwrap(),
            bytes,
            "reading never writes"
        );
    }
}

/// A store that reads as canonical for hundreds of jobs and then is not (a raw tab inside
/// a later job's name, which the tolerant reader repairs): every job is listed once.
#[test]
fn a_store_that_needs_repair_late_is_listed_once() {
    let hermes = Hermes::new();
    let store = String::from_utf8(many_jobs(600)).unwrap();
    let store = store.replacen("job number 550 with", "job number 550\twith", 1);
    assert!(store.contains('\t'));
    hermes.write_store(store.as_bytes());
    let text = hermes.cron(&["list", "--all"]).ok().to_string();
    let ids = listed_ids(&text);
    let want: Vec<String> = (0..600).map(|i| format!("{i:012x}")).collect();
    assert_eq!(ids, want);
    assert!(text.contains("job number 550\twith"));
    let json: Value = serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok()).unwrap();
    assert_eq!(json["jobs"].as_array().unwrap().len(), 600);
    assert_eq!(
        json["jobs"][550]["name"],
        json!("job number 550\twith a reasonably long name to fill the pipe")
    );
}

/// The ids `hermes cron list` printed, in order (each job's first line starts with it).
fn listed_ids(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

/// A second `jobs` spelled with an escape replaces the first, as in every JSON reader
/// that lets the last key win (Python's too): both listings show the second list, and
/// the file is left as it is.
#[test]
fn a_jobs_key_spelled_with_an_escape_is_read_as_jobs() {
    let hermes = Hermes::new();
    let store = String::from_utf8(many_jobs(3)).unwrap();
    let store = store.replacen(
        "{\n  \"jobs\": [",
        "{\"jobs\": [{\"id\": \"aaaaaaaaaaaa\", \"prompt\": \"p\", \"schedule\": \"every 1h\"}],\n  \"\\u006aobs\": [",
        1,
    );
    assert!(store.contains("\\u006aobs"), "{store}");
    hermes.write_store(store.as_bytes());
    let json: Value = serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok()).unwrap();
    let ids: Vec<&str> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|job| job["id"].as_str())
        .collect();
    assert_eq!(ids, ["000000000000", "000000000001", "000000000002"]);
    let text = hermes.cron(&["list", "--all"]).ok().to_string();
    assert_eq!(
        listed_ids(&text),
        ["000000000000", "000000000001", "000000000002"]
    );
    assert_eq!(std::fs::read(hermes.jobs_path()).unwrap(), store.as_bytes());
}

/// Each schedule form, the flags it is added with, and the English `list` shows beside it.
const DESCRIBED: &[(&str, &[&str], &str)] = &[
    (
        "weekdays at 9am",
        &["--tz", "Europe/Berlin"],
        "at 09:00, Monday through Friday (Europe/Berlin)",
    ),
    ("every 360m", &[], "every 6 hours"),
    ("every 90 minutes", &[], "every 90 minutes"),
    ("0 9 * * MON-FRI", &[], "at 09:00, Monday through Friday"),
    (
        "*/15 9-17 * * 1-5",
        &[],
        "every 15 minutes from 09:00 to 17:45, Monday through Friday",
    ),
    (
        "0 0 1,15 * *",
        &[],
        "at 00:00, on the 1st and 15th of the month",
    ),
    (
        "0 12 * jan,jul sun",
        &[],
        "at 12:00, on Sundays, in January and July",
    ),
    (
        "0 9 1 * mon",
        &[],
        "at 09:00, on the 1st of the month and on Mondays",
    ),
    ("0 9 L * *", &[], "at 09:00, on the last day of the month"),
    (
        "0 18 * * 5L",
        &[],
        "at 18:00, on the last Friday of the month",
    ),
    (
        "0 9 LW * *",
        &[],
        "at 09:00, on the last weekday of the month",
    ),
    ("@weekly", &[], "at 00:00, on Sundays"),
    (
        "30 2 * * *",
        &["--tz", "America/New_York"],
        "at 02:30, every day (America/New_York)",
    ),
    (
        "2026-11-01T01:30:00-05:00",
        &["--tz", "America/New_York"],
        "once on Sun 1 Nov 2026 at 01:30 EST (America/New_York)",
    ),
    ("in 30m", &[], "once on Sun 1 Mar 2026 at 10:30 UTC"),
];

#[test]
fn list_describes_each_schedule_in_english_beside_it() {
    let hermes = Hermes::new();
    let ids: Vec<String> = DESCRIBED
        .iter()
        .map(|(schedule, flags, _)| hermes.add(schedule, "report", flags))
        .collect();
    let text = hermes.cron(&["list"]).ok().to_string();
    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    let items = listed["jobs"].as_array().unwrap();
    for ((schedule, _, want), id) in DESCRIBED.iter().zip(&ids) {
        let display = hermes.job(id)["schedule"]["display"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            text.contains(&format!("Schedule: {display} — {want}   Repeat:")),
            "{schedule}: {text}"
        );
        let item = items.iter().find(|j| j["id"] == json!(id)).unwrap();
        assert_eq!(item["schedule_description"], json!(want), "{schedule}");
    }
}

#[test]
fn a_schedule_that_cannot_be_read_has_no_description() {
    let hermes = Hermes::new();
    hermes.write_store(
        json!({"jobs": [{
            "id": "aaaaaaaaaaaa", "name": "broken", "prompt": "p",
            "schedule": {"kind": "cron", "expr": "not a cron", "display": "not a cron"},
            "enabled": true, "state": "error", "next_run_at": null
        }]})
        .to_string()
        .as_bytes(),
    );
    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    assert_eq!(listed["jobs"][0]["schedule_description"], Value::Null);
    let text = hermes.cron(&["list"]).ok().to_string();
    assert!(text.contains("Schedule: not a cron   Repeat:"), "{text}");
}

#[test]
fn list_pages_through_the_jobs_with_a_count_and_the_next_page_named() {
    let hermes = Hermes::new();
    let ids: Vec<String> = (1..=5)
        .map(|n| {
            hermes.add(
                &format!("every {n}h"),
                &format!("job {n}"),
                &["--name", &format!("job{n}")],
            )
        })
        .collect();
    // One completed job: left out of the pages and the count unless --all.
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/done.sh"), "echo done\n").unwrap();
    let done = hermes.add(
        "in 1m",
        "",
        &["--name", "job6", "--script", "done.sh", "--no-agent"],
    );
    hermes.cron_at("2026-03-01T10:01:30Z", &["tick"]).ok();
    assert_eq!(hermes.job(&done)["state"], "completed");
    let page = hermes.cron(&["list", "--limit", "2", "--offset", "1"]);
    let text = page.ok();
    assert!(text.contains(&ids[1]) && text.contains(&ids[2]), "{text}");
    for other in [&ids[0], &ids[3], &ids[4], &done] {
        assert!(
            !text.contains(other.as_str()),
            "{other} on the page:\n{text}"
        );
    }
    assert!(
        text.contains("Jobs 2–3 of 5 job(s) not completed\n"),
        "{text}"
    );
    assert!(
        text.ends_with("Next page: hermes cron list --limit 2 --offset 3\n"),
        "{text}"
    );
    let last: Value = serde_json::from_str(
        hermes
            .cron(&["list", "--all", "--limit", "2", "--offset", "4", "--json"])
            .ok(),
    )
    .unwrap();
    let listed: Vec<&str> = last["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [ids[4].as_str(), done.as_str()]);
    assert_eq!(
        (
            &last["total"],
            &last["offset"],
            &last["limit"],
            &last["next_offset"]
        ),
        (&json!(6), &json!(4), &json!(2), &Value::Null)
    );
    assert_eq!(last["jobs"][0]["schedule_description"], "every 5 hours");
    // --offset alone pages by 50; past the end says how many there are.
    let beyond = hermes.cron(&["list", "--offset", "9"]);
    assert_eq!(
        beyond.ok(),
        "No jobs at offset 9 (5 job(s) not completed in all)\n"
    );
    let refused = hermes.cron(&["list", "--limit", "0"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("0 is not in 1..=10000"),
        "{}",
        refused.stderr
    );
}
