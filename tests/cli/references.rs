//! Job references (docs/STORE.md, "Job references") and the pause/resume/remove verbs (docs/COMMANDS.md).

use std::fs;

use serde_json::Value;

use crate::support::Hermes;

#[test]
fn an_exact_id_wins_over_a_job_named_like_that_id() {
    let hermes = Hermes::new();
    let first = hermes.add("every 2h", "first", &[]);
    let second = hermes.add("every 3h", "second", &["--name", &first]);
    let run = hermes.cron(&["pause", &first]);
    assert!(run.ok().contains(&first), "{}", run.stdout);
    assert_eq!(hermes.job(&first)["state"], "paused");
    assert_eq!(hermes.job(&second)["state"], "scheduled");
    assert_eq!(hermes.job(&second)["enabled"], true);
}

#[test]
fn a_name_matches_case_insensitively_for_pause_resume_and_remove() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "p", &["--name", "Morning Report"]);
    let other = hermes.add("every 2h", "q", &["--name", "Evening report"]);

    hermes.cron(&["pause", "morning report"]).ok();
    assert_eq!(hermes.job(&id)["enabled"], false);
    assert_eq!(hermes.job(&id)["state"], "paused");

    hermes.cron(&["resume", "MORNING REPORT"]).ok();
    assert_eq!(hermes.job(&id)["enabled"], true);
    assert_eq!(hermes.job(&id)["state"], "scheduled");

    hermes.cron(&["remove", "mOrNiNg RePoRt"]).ok();
    let ids: Vec<Value> = hermes.jobs().iter().map(|j| j["id"].clone()).collect();
    assert_eq!(ids, vec![Value::from(other)]);
}

#[test]
fn two_jobs_with_one_name_are_ambiguous_and_both_ids_are_listed() {
    let hermes = Hermes::new();
    let a = hermes.add("every 2h", "p", &["--name", "report"]);
    let b = hermes.add("every 3h", "q", &["--name", "Report"]);
    let before = hermes.store_bytes().unwrap();
    for verb in ["pause", "resume", "remove"] {
        let run = hermes.cron(&[verb, "report"]);
        let message = run.user_error();
        assert!(message.contains("ambiguous"), "{verb}: {message}");
        assert!(
            message.contains(&a) && message.contains(&b),
            "{verb}: {message}"
        );
        assert_eq!(
            hermes.store_bytes().unwrap(),
            before,
            "{verb} changed the store"
        );
    }
    let run = hermes.cron(&["edit", "REPORT", "--name", "x"]);
    assert!(run.user_error().contains("ambiguous"));
}

#[test]
fn an_unknown_reference_says_job_not_found() {
    let hermes = Hermes::new();
    hermes.add("every 2h", "p", &["--name", "report"]);
    let before = hermes.store_bytes().unwrap();
    for args in [
        &["pause", "nope"][..],
        &["resume", "nope"][..],
        &["remove", "nope"][..],
        &["edit", "nope", "--name", "x"][..],
    ] {
        let run = hermes.cron(args);
        let message = run.user_error();
        assert!(
            message.contains("Job not found: nope"),
            "{args:?}: {message}"
        );
        assert_eq!(hermes.store_bytes().unwrap(), before);
    }
}

#[test]
fn a_paused_job_is_listed_with_its_reason_as_hermes_0_22_lists_it() {
    let hermes = Hermes::new();
    let paused = hermes.add("every 2h", "p", &["--name", "Standup notes"]);
    let active = hermes.add("every 3h", "q", &["--name", "Inbox digest"]);
    hermes
        .cron(&["pause", &paused, "--reason", "on holiday until June"])
        .ok();
    let job = hermes.job(&paused);
    assert_eq!(job["enabled"], false);
    assert_eq!(job["state"], "paused");
    assert_eq!(job["paused_reason"], "on holiday until June");
    assert_eq!(job["paused_at"], "2026-03-01T10:00:00+00:00");

    for listing in [
        hermes.cron(&["list"]).ok().to_string(),
        hermes.cron(&["list", "--all"]).ok().to_string(),
    ] {
        assert!(listing.contains(&active), "{listing}");
        let block: String = listing
            .lines()
            .skip_while(|l| !l.starts_with(&paused))
            .take_while(|l| l.starts_with(&paused) || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(block.contains("[paused]"), "{listing}");
        assert!(block.contains("Standup notes"), "{listing}");
        assert!(block.contains("on holiday until June"), "{listing}");
        assert!(!listing.contains("--all"), "nothing is hidden:\n{listing}");
    }
}

#[test]
fn resume_recomputes_the_next_run_from_now() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "p", &[]);
    assert_eq!(hermes.job(&id)["next_run_at"], "2026-03-01T12:00:00+00:00");
    hermes.cron(&["pause", &id]).ok();
    let later = "2026-03-05T07:20:00Z";
    let run = hermes.cron_at(later, &["resume", &id]);
    assert!(
        run.ok().contains("2026-03-05T09:20:00+00:00"),
        "{}",
        run.stdout
    );
    let job = hermes.job(&id);
    assert_eq!(job["next_run_at"], "2026-03-05T09:20:00+00:00");
    assert_eq!(job["enabled"], true);
    assert_eq!(job["state"], "scheduled");
    assert_eq!(job["paused_at"], Value::Null);
    assert_eq!(job["paused_reason"], Value::Null);
}

#[test]
fn remove_deletes_the_record_and_its_output_directory() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // output documents as files: a file-store test
    }
    let id = hermes.add("every 2h", "p", &[]);
    let keep = hermes.add("every 2h", "q", &[]);
    let output = hermes.cron_dir().join("output").join(&id);
    let kept_output = hermes.cron_dir().join("output").join(&keep);
    fs::create_dir_all(&output).unwrap();
    fs::write(output.join("2026-03-01_10-00-00.md"), "# run\n").unwrap();
    fs::create_dir_all(&kept_output).unwrap();

    let run = hermes.cron(&["rm", &id]);
    assert!(run.ok().contains(&id));
    assert!(
        !output.exists(),
        "output directory of the removed job is still there"
    );
    assert!(kept_output.exists(), "another job's output was removed");
    let ids: Vec<Value> = hermes.jobs().iter().map(|j| j["id"].clone()).collect();
    assert_eq!(ids, vec![Value::from(keep)]);
}

#[test]
fn remove_refuses_an_id_that_is_not_a_safe_path_component() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // compares the raw bytes of jobs.json: a file-store test
    }
    // `output/../victim` would be `cron/victim`: nothing there may be touched.
    let victim = hermes.cron_dir().join("victim");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("keep.md"), "precious\n").unwrap();
    let bytes = br#"{"jobs": [{"id": "../victim", "name": "Evil", "prompt": "p", "schedule": "every 1h"}]}"#;
    hermes.write_store(bytes);
    for reference in ["Evil", "../victim"] {
        let run = hermes.cron(&["remove", reference]);
        let message = run.user_error();
        assert!(message.contains("../victim"), "{message}");
        assert!(
            victim.join("keep.md").exists(),
            "remove {reference} deleted outside output/"
        );
        assert_eq!(hermes.store_bytes().unwrap(), bytes);
    }
}
