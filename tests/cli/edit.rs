//! `hermes cron edit` (docs/COMMANDS.md, "edit"): schedule changes recompute the next run; what `add`
//! refuses, `edit` refuses too.

use serde_json::json;

use crate::support::Hermes;

#[test]
fn edit_schedule_recomputes_the_next_run() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "p", &[]);
    let run = hermes.cron_at(
        "2026-03-02T06:00:00Z",
        &["edit", &id, "--schedule", "weekdays at 9am"],
    );
    assert!(
        run.ok().contains("2026-03-02T09:00:00+00:00"),
        "{}",
        run.stdout
    );
    let job = hermes.job(&id);
    assert_eq!(
        job["schedule"],
        json!({"kind": "cron", "expr": "0 9 * * 1-5", "display": "weekdays at 9am"})
    );
    assert_eq!(job["schedule_display"], "weekdays at 9am");
    assert_eq!(job["next_run_at"], "2026-03-02T09:00:00+00:00");

    hermes
        .cron_at(
            "2026-03-02T06:00:00Z",
            &["edit", &id, "--schedule", "every 45m"],
        )
        .ok();
    assert_eq!(hermes.job(&id)["next_run_at"], "2026-03-02T06:45:00+00:00");
}

#[test]
fn edit_refuses_an_unknown_delivery_platform() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "p", &[]);
    let before = hermes.store_bytes().unwrap();
    let run = hermes.cron(&["edit", &id, "--deliver", "pigeon"]);
    assert!(run.user_error().contains("pigeon"), "{}", run.stderr);
    assert_eq!(hermes.store_bytes().unwrap(), before);
}

#[test]
fn edit_refuses_an_invalid_schedule_and_a_past_one_shot() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "p", &[]);
    let before = hermes.store_bytes().unwrap();
    let run = hermes.cron(&["edit", &id, "--schedule", "x"]);
    assert!(run.user_error().contains("Use: '30m'"));
    let run = hermes.cron(&["edit", &id, "--schedule", "2020-01-01T00:00"]);
    assert!(run.user_error().to_lowercase().contains("past"));
    assert_eq!(hermes.store_bytes().unwrap(), before);
}
