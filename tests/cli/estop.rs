//! The global pause through the real binary: `hermes pause [--reason]` and `hermes
//! resume`, the `ESTOP` file Python Hermes 0.22 shares on a home, due jobs that stay due
//! while paused and fire at the first pass after the resume, manual runs that go on, and
//! on PostgreSQL every host sharing the database holding still.

use std::fs;

use serde_json::Value;

use crate::incidents::hermes_022;
use crate::support::{postgres_database, Hermes};

/// A home with an hourly script job (created at 10:00, first due at 11:00) that
/// prints "report"; returns it and the job's id.
fn hourly_report() -> (Hermes, String) {
    let hermes = crate::delivery::home("report\n", &[]);
    let id = hermes.add(
        "every 1h",
        "daily report",
        &[
            "--name",
            "daily report",
            "--script",
            "report.sh",
            "--no-agent",
        ],
    );
    (hermes, id)
}

fn status(hermes: &Hermes) -> Value {
    serde_json::from_str(hermes.cron(&["status", "--json"]).ok()).unwrap()
}

#[test]
fn pause_and_resume_say_what_they_did_and_status_shows_the_pause() {
    let hermes = Hermes::new();
    let paused = hermes.run(&["pause", "--reason", "deploy"]);
    let out = paused.ok();
    assert!(out.starts_with("Hermes paused — reason: deploy\n"), "{out}");
    assert!(
        out.contains("Due jobs are not claimed until `hermes resume`"),
        "{out}"
    );
    assert!(hermes.run(&["pause"]).ok().starts_with("Still paused\n"));
    let shown = status(&hermes);
    assert_eq!(shown["paused"]["engaged_at"], "2026-03-01T10:00:00+00:00");
    assert_eq!(
        shown["paused"]["reason"],
        Value::Null,
        "the second pause replaced the first"
    );
    assert!(hermes
        .cron(&["status"])
        .ok()
        .contains("Paused since 2026-03-01T10:00:00+00:00: no due job is claimed. Lift it with: hermes resume"));
    assert_eq!(
        hermes.run(&["resume"]).ok(),
        "Hermes resumed — jobs left due fire at the next pass.\n"
    );
    assert_eq!(hermes.run(&["resume"]).ok(), "Hermes is not paused.\n");
    assert_eq!(status(&hermes)["paused"], Value::Null);
}

#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn on_a_home_the_pause_is_python_hermes_estop_file() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // On PostgreSQL the pause is kept in the database (below).
    }
    let estop = hermes.home().join("ESTOP");
    hermes.run(&["pause", "--reason", "deploy"]).ok();
    let written: Value = serde_json::from_str(&fs::read_to_string(&estop).unwrap()).unwrap();
    assert_eq!(
        written,
        serde_json::json!({"engaged_at": "2026-03-01T10:00:00+00:00", "reason": "deploy"})
    );
    hermes.run(&["resume"]).ok();
    assert!(!estop.exists());
    // Python Hermes 0.22's own pause holds us, and ours holds it.
    let theirs = hermes_022(&hermes, &["pause", "--reason", "from python"]);
    assert_eq!(theirs.code, Some(0), "{theirs:?}");
    assert_eq!(status(&hermes)["paused"]["reason"], "from python");
    hermes.run(&["resume"]).ok();
    hermes.run(&["pause"]).ok();
    let state = hermes_022(
        &hermes,
        &[
            "-c",
            "from agent.estop import is_engaged\nprint(is_engaged())",
        ],
    );
    assert_eq!(state.stdout.trim(), "True", "{state:?}");
}

#[test]
fn due_jobs_stay_due_while_paused_and_fire_at_the_first_pass_after_resume() {
    let (hermes, id) = hourly_report();
    assert_eq!(hermes.job(&id)["next_run_at"], "2026-03-01T11:00:00+00:00");
    hermes.run(&["pause", "--reason", "deploy"]).ok();
    let tick = hermes.cron_at("2026-03-01T11:30:00Z", &["tick"]);
    assert_eq!(
        tick.ok(),
        "Hermes is paused (reason: deploy): no due job was claimed. Lift it with: hermes resume\n"
    );
    assert_eq!(hermes.job(&id)["next_run_at"], "2026-03-01T11:00:00+00:00");
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", "--json"]).ok()).unwrap();
    assert_eq!(runs["runs"], serde_json::json!([]));
    // A manual run is not stopped by the pause.
    hermes.cron_at("2026-03-01T11:31:00Z", &["run", &id]).ok();
    hermes.run(&["resume"]).ok();
    let tick = hermes.cron_at("2026-03-01T11:32:00Z", &["tick"]);
    assert!(
        tick.ok().starts_with(&format!(
            "{id}@2026-03-01T11:00:00Z daily report ({id}): ok"
        )),
        "{}",
        tick.stdout
    );
}

#[test]
fn an_empty_estop_file_pauses_like_hermes_pause() {
    let (hermes, id) = hourly_report();
    fs::write(hermes.home().join("ESTOP"), "").unwrap();
    let tick = hermes.cron_at("2026-03-01T11:30:00Z", &["tick"]);
    assert_eq!(
        tick.ok(),
        "Hermes is paused: no due job was claimed. Lift it with: hermes resume\n"
    );
    assert_eq!(
        status(&hermes)["paused"],
        serde_json::json!({"engaged_at": null, "reason": null})
    );
    hermes.run(&["resume"]).ok();
    assert!(!hermes.home().join("ESTOP").exists());
    assert!(hermes
        .cron_at("2026-03-01T11:31:00Z", &["tick"])
        .ok()
        .contains(&format!("({id}): ok")));
}

#[test]
fn every_host_sharing_a_database_pauses_and_any_of_them_resumes() {
    let url = postgres_database();
    let mut first = Hermes::new();
    first.store_url = Some(url.clone());
    let mut second = Hermes::new();
    second.store_url = Some(url);
    let id = first.add("every 1h", "report", &["--name", "shared"]);
    first.run(&["pause", "--reason", "maintenance"]).ok();
    assert!(!first.home().join("ESTOP").exists(), "kept in the database");
    assert_eq!(status(&second)["paused"]["reason"], "maintenance");
    assert_eq!(
        second.cron_at("2026-03-01T11:30:00Z", &["tick"]).ok(),
        "Hermes is paused (reason: maintenance): no due job was claimed. Lift it with: hermes resume\n"
    );
    assert_eq!(second.job(&id)["next_run_at"], "2026-03-01T11:00:00+00:00");
    second.run(&["resume"]).ok();
    assert_eq!(status(&first)["paused"], Value::Null);
}

/// `ESTOP` is written 0600 through a temp file renamed over it: a symlink planted there,
/// pointing at another file or at nothing, is replaced and never written through.
#[test]
fn pause_replaces_a_symlinked_estop_and_writes_it_0600() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // On PostgreSQL the pause is kept in the database.
    }
    let outside = tempfile::tempdir().unwrap();
    let estop = hermes.home().join("ESTOP");
    let victim = outside.path().join("victim");
    fs::write(&victim, "keep\n").unwrap();
    let dangling = outside.path().join("created");
    for target in [&victim, &dangling] {
        symlink(target, &estop).unwrap();
        hermes.run(&["pause", "--reason", "deploy"]).ok();
        let meta = fs::symlink_metadata(&estop).unwrap();
        assert!(meta.file_type().is_file(), "ESTOP is still a symlink");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(fs::read_to_string(&estop).unwrap().contains("\"deploy\""));
        hermes.run(&["resume"]).ok();
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    assert!(
        !dangling.exists(),
        "a file was created through a dangling link"
    );
}
