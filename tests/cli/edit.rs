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

#[test]
fn edit_sets_hermes_0_22_fields_and_an_empty_value_clears_each_leaving_the_key_as_null() {
    let hermes = Hermes::new();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/m.sh"), "echo v1\n").unwrap();
    let id = hermes.add("every 1h", "watch", &[]);
    let set = [
        (
            "--failure-deliver",
            "local",
            "failure_deliver",
            json!("local"),
        ),
        ("--monitor-script", "m.sh", "monitor_script", json!("m.sh")),
        (
            "--reasoning-effort",
            "XHIGH",
            "reasoning_effort",
            json!("xhigh"),
        ),
        (
            "--interpreter",
            "~/venvs/r/bin/python",
            "interpreter",
            json!("~/venvs/r/bin/python"),
        ),
    ];
    for (flag, value, key, stored) in &set {
        hermes.cron(&["edit", &id, flag, value]).ok();
        assert_eq!(&hermes.job(&id)[key], stored, "{flag}");
    }
    for (flag, _, key, _) in &set {
        hermes.cron(&["edit", &id, flag, ""]).ok();
        let job = hermes.job(&id);
        assert!(
            job.get(*key).is_some_and(|v| v.is_null()),
            "{flag} '' must leave {key}: null, got {job:#}"
        );
    }
    // A monitor URL while a monitor script is set is refused; clearing one first works.
    hermes.cron(&["edit", &id, "--monitor-script", "m.sh"]).ok();
    let refused = hermes.cron(&["edit", &id, "--monitor-url", "https://x.example/"]);
    assert!(
        refused
            .user_error()
            .contains("monitor_script and monitor_url are mutually exclusive — clear one before setting the other"),
        "{}",
        refused.stderr
    );
    hermes
        .cron(&[
            "edit",
            &id,
            "--monitor-script",
            "",
            "--monitor-url",
            "https://x.example/",
        ])
        .ok();
    let job = hermes.job(&id);
    assert_eq!(
        (&job["monitor_script"], &job["monitor_url"]),
        (&json!(null), &json!("https://x.example/"))
    );
    let refused = hermes.cron(&["edit", &id, "--script", "m.sh", "--no-agent"]);
    assert!(
        refused
            .user_error()
            .contains("cannot be combined with no_agent=True"),
        "{}",
        refused.stderr
    );
}

#[test]
fn edit_continuity_adds_self_and_no_continuity_removes_only_self() {
    let hermes = Hermes::new();
    let other = hermes.add("every 1h", "collect", &[]);
    let id = hermes.add("every 1h", "digest", &["--continuity"]);
    assert_eq!(hermes.job(&id)["context_from"], json!(["self"]));
    hermes.cron(&["edit", &id, "--no-continuity"]).ok();
    assert_eq!(hermes.job(&id)["context_from"], json!(null));
    hermes.cron(&["edit", &id, "--continuity"]).ok();
    hermes.cron(&["edit", &id, "--continuity"]).ok();
    assert_eq!(
        hermes.job(&id)["context_from"],
        json!(["self"]),
        "once only"
    );
    // Another job's reference, written by Hermes or by hand, is kept.
    let mut store = hermes.store();
    for job in store["jobs"].as_array_mut().unwrap() {
        if job["id"] == id.as_str() {
            job["context_from"] = json!([other, "self"]);
        }
    }
    hermes.write_store(store.to_string().as_bytes());
    hermes.cron(&["edit", &id, "--no-continuity"]).ok();
    assert_eq!(hermes.job(&id)["context_from"], json!([other]));
    // Two flags that exclude each other: a usage error (exit 2).
    let clash = hermes.run(&["cron", "edit", &id, "--continuity", "--no-continuity"]);
    assert_eq!(clash.code, Some(2), "{}", clash.stderr);
}

#[test]
fn edit_pin_takes_the_configured_model_unpin_clears_both_and_an_explicit_model_wins() {
    let hermes = Hermes::new();
    std::fs::write(hermes.home().join("config.yaml"), crate::add::PINNABLE).unwrap();
    let id = hermes.add("every 1h", "p", &[]);
    let pins = |hermes: &Hermes| {
        let job = hermes.job(&id);
        (job["model"].clone(), job["provider"].clone())
    };
    hermes.cron(&["edit", &id, "--pin"]).ok();
    assert_eq!(pins(&hermes), (json!("test-model"), json!("custom")));
    hermes.cron(&["edit", &id, "--unpin"]).ok();
    assert_eq!(pins(&hermes), (json!(null), json!(null)));
    hermes.cron(&["edit", &id, "--pin", "--model", "mine"]).ok();
    assert_eq!(pins(&hermes), (json!("mine"), json!(null)));
    // A job that has a model keeps it on --pin.
    hermes.cron(&["edit", &id, "--pin"]).ok();
    assert_eq!(pins(&hermes), (json!("mine"), json!(null)));
    let clash = hermes.run(&["cron", "edit", &id, "--pin", "--unpin"]);
    assert_eq!(clash.code, Some(2), "a usage error: {}", clash.stderr);
    let job = hermes.job(&id);
    assert!(
        job.get("provider_snapshot").is_none() && job.get("model_snapshot").is_none(),
        "a Hermes 0.22 record gains no 0.19 snapshots: {job:#}"
    );
}

#[test]
fn edit_refuses_a_repeat_count_the_job_has_already_reached() {
    let hermes = Hermes::new();
    let id = hermes.add("every 1h", "report", &["--repeat", "5"]);
    // The job has run three times (as the store records it).
    let mut store = hermes.store();
    store["jobs"][0]["repeat"]["completed"] = json!(3);
    hermes.write_store(&serde_json::to_vec_pretty(&store).unwrap());
    let before = hermes.store();
    let refused = hermes.cron(&["edit", &id, "--repeat", "2"]);
    assert_eq!(
        refused.user_error(),
        format!("error: Job {id} has already run 3 time(s): a repeat of 2 would end it at once; give --repeat 4 or more to keep it, or pause or remove it to stop it")
    );
    assert_eq!(hermes.store()["jobs"], before["jobs"], "the store changed");
    hermes.cron(&["edit", &id, "--repeat", "4"]).ok();
    assert_eq!(
        hermes.job(&id)["repeat"],
        json!({"times": 4, "completed": 3})
    );
}
