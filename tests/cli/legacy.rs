//! Stores as older and newer Python Hermes builds (and people with editors) write them:
//! every one must list, and survive an edit with every key we do not know intact and
//! the odd shapes healed (docs/STORE.md, "Tolerant reading"; docs/SCHEDULES.md, "Stored forms from older versions").

use serde_json::{json, Map, Value};

use crate::support::{instant, Hermes};

/// A key this project does not own, found in a fixture: which job it sits in (`None` =
/// top level), where (a JSON pointer inside the record or document) and its value.
#[derive(Debug)]
struct Unknown {
    job: Option<String>,
    pointer: String,
    value: Value,
}

/// Every record of a store in any accepted shape, with its effective id.
fn records(doc: &Value) -> Vec<(String, Map<String, Value>)> {
    let entries: Vec<(Option<String>, &Value)> = match doc {
        Value::Array(list) => list.iter().map(|r| (None, r)).collect(),
        Value::Object(top) => match &top["jobs"] {
            Value::Array(list) => list.iter().map(|r| (None, r)).collect(),
            Value::Object(by_id) => by_id.iter().map(|(k, r)| (Some(k.clone()), r)).collect(),
            other => panic!("unexpected jobs {other}"),
        },
        other => panic!("unexpected store {other}"),
    };
    entries
        .into_iter()
        .map(|(key, record)| {
            let record = record.as_object().expect("a job is an object").clone();
            let id = match record.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_string(),
                _ => key.expect("a listed job has an id"),
            };
            (id, record)
        })
        .collect()
}

/// The fixtures mark keys outside the documented fields (docs/STORE.md, "Job record fields") with an `x_` prefix, at any depth.
fn collect_unknown(job: &Option<String>, pointer: &str, value: &Value, out: &mut Vec<Unknown>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let here = format!("{pointer}/{key}");
                if key.starts_with("x_") {
                    out.push(Unknown {
                        job: job.clone(),
                        pointer: here,
                        value: inner.clone(),
                    });
                } else {
                    collect_unknown(job, &here, inner, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                collect_unknown(job, &format!("{pointer}/{i}"), inner, out);
            }
        }
        _ => {}
    }
}

fn unknown_keys(doc: &Value) -> Vec<Unknown> {
    let mut out = Vec::new();
    if let Value::Object(top) = doc {
        for (key, value) in top {
            if key.starts_with("x_") {
                out.push(Unknown {
                    job: None,
                    pointer: format!("/{key}"),
                    value: value.clone(),
                });
            }
        }
    }
    for (id, record) in records(doc) {
        collect_unknown(&Some(id), "", &Value::Object(record), &mut out);
    }
    out
}

/// Parses fixture bytes the way a tolerant reader would (a leading BOM stripped).
fn parse_fixture(bytes: &[u8]) -> Value {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    serde_json::from_slice(bytes).expect("fixture is JSON")
}

#[track_caller]
fn assert_unknown_keys_kept(after: &Value, unknown: &[Unknown]) {
    let jobs = after["jobs"]
        .as_array()
        .expect("\"jobs\" is a list after a save");
    for key in unknown {
        let scope = match &key.job {
            None => after,
            Some(id) => jobs
                .iter()
                .find(|job| job["id"] == json!(id))
                .unwrap_or_else(|| panic!("job {id} disappeared:\n{after:#}")),
        };
        assert_eq!(
            scope.pointer(&key.pointer),
            Some(&key.value),
            "unknown key {key:?} was lost or changed:\n{after:#}"
        );
    }
}

/// What every fixture must do: `list --all` shows each job's name and schedule display,
/// `list --json` gives normalized records, `edit <id> --name renamed` succeeds and keeps
/// every unknown key. Returns the store after the edit.
#[track_caller]
fn lists_and_survives_an_edit(
    hermes: &Hermes,
    unknown: &[Unknown],
    expected: &[(&str, &str, &str)],
    edit_id: &str,
) -> Value {
    let before = hermes.store_bytes().unwrap();
    let run = hermes.cron(&["list", "--all"]);
    let listing = run.ok();
    for (id, name, display) in expected {
        assert!(listing.contains(id), "list --all lacks {id}:\n{listing}");
        assert!(
            listing.contains(name),
            "list --all lacks {name}:\n{listing}"
        );
        assert!(
            listing.contains(&format!("Schedule: {display}")),
            "list --all lacks schedule '{display}':\n{listing}"
        );
    }
    assert_eq!(
        hermes.store_bytes().unwrap(),
        before,
        "list must not rewrite the store"
    );

    let run = hermes.cron(&["list", "--all", "--json"]);
    let listed: Value = serde_json::from_str(run.ok()).expect("list --json prints JSON");
    let listed = listed["jobs"]
        .as_array()
        .expect("{\"jobs\": [...]}")
        .clone();
    assert_eq!(listed.len(), expected.len(), "{listed:#?}");
    for (id, name, display) in expected {
        let job = listed
            .iter()
            .find(|job| job["id"] == json!(id))
            .unwrap_or_else(|| panic!("list --json lacks {id}"));
        assert_eq!(job["name"], json!(name));
        assert!(job["schedule"]["kind"].is_string(), "{job:#}");
        assert_eq!(job["schedule"]["display"], json!(display), "{job:#}");
        assert_eq!(job["schedule_display"], json!(display), "{job:#}");
        assert!(job["deliver"].is_string(), "{job:#}");
        assert!(job["enabled"].is_boolean(), "{job:#}");
        assert!(job["state"].is_string(), "{job:#}");
        assert!(job["repeat"]["completed"].is_u64(), "{job:#}");
        assert!(
            job["repeat"]["times"].is_null() || job["repeat"]["times"].is_u64(),
            "{job:#}"
        );
    }

    hermes.cron(&["edit", edit_id, "--name", "renamed"]).ok();
    let after = hermes.store();
    assert!(after["jobs"].is_array(), "jobs must be a list after a save");
    assert!(after["updated_at"].is_string());
    let jobs = after["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), expected.len(), "{after:#}");
    for (id, name, _) in expected {
        let job = jobs.iter().find(|job| job["id"] == json!(id)).unwrap();
        let want = if *id == edit_id { "renamed" } else { name };
        assert_eq!(job["name"], json!(want));
    }
    assert_unknown_keys_kept(&after, unknown);
    after
}

#[test]
fn newer_full_store_keeps_every_unknown_key_through_an_edit() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("newer_full_store.json");
    let original = parse_fixture(&bytes);
    let unknown = unknown_keys(&original);
    // At every level the brief names: top, record, schedule, origin, repeat.
    for pointer in [
        "/x_hermes_version",
        "/x_migrations",
        "/x_priority",
        "/x_labels",
        "/schedule/x_parsed_by",
        "/origin/x_chat_type",
        "/repeat/x_reset_on",
    ] {
        assert!(
            unknown.iter().any(|u| u.pointer == pointer),
            "fixture lacks {pointer}"
        );
    }
    let after = lists_and_survives_an_edit(
        &hermes,
        &unknown,
        &[
            ("a1b2c3d4e5f6", "Weekday standup notes", "weekdays at 9am"),
            ("0f9e8d7c6b5a", "Backup check", "every 360m"),
            (
                "5e5e5e5e5e5e",
                "Christmas greeting",
                "once at 2026-12-25 08:00",
            ),
        ],
        "a1b2c3d4e5f6",
    );
    // Known fields the edit did not touch are exactly as they were.
    let before_jobs = original["jobs"].as_array().unwrap();
    let after_jobs = after["jobs"].as_array().unwrap();
    for (old, new) in before_jobs.iter().zip(after_jobs) {
        for (key, value) in old.as_object().unwrap() {
            if key != "name" {
                assert_eq!(&new[key], value, "{key} of {} changed", old["id"]);
            }
        }
    }
}

#[test]
fn newer_full_store_lists_paused_jobs_with_their_reason() {
    let hermes = Hermes::new();
    hermes.install_fixture("newer_full_store.json");
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(listing.contains("0f9e8d7c6b5a  [paused]"), "{listing}");
    let all = hermes.cron(&["list", "--all"]).ok().to_string();
    assert!(all.contains("[paused]"), "{all}");
    assert!(all.contains("disk replaced"), "{all}");
    assert!(all.contains("bot was blocked by the user"), "{all}");
}

/// A `last_status` this build does not know (a newer Hermes wrote it) is shown as itself
/// by `list`, in `list --json` and the MCP-style listing, and survives an edit unchanged.
#[test]
fn an_unknown_last_status_lists_as_itself_and_survives_an_edit() {
    let hermes = Hermes::new();
    let store = json!({"jobs": [{
        "id": "0a0b0c0d0e0f", "name": "newer", "prompt": "p",
        "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
        "schedule_display": "every 60m", "repeat": {"times": null, "completed": 3},
        "enabled": true, "state": "scheduled", "deliver": "local",
        "next_run_at": "2099-01-01T10:00:00+00:00",
        "last_run_at": "2026-03-01T09:00:00+00:00", "last_status": "quarantined",
        "last_error": null,
    }]});
    hermes.write_store(store.to_string().as_bytes());
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(listing.contains(" — quarantined\n"), "{listing}");
    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    assert_eq!(
        listed["jobs"][0]["last_status"], "quarantined",
        "{listed:#}"
    );
    hermes
        .cron(&["edit", "0a0b0c0d0e0f", "--name", "renamed"])
        .ok();
    let job = hermes.job("0a0b0c0d0e0f");
    assert_eq!(job["name"], "renamed");
    assert_eq!(job["last_status"], "quarantined");
    let status = hermes.cron(&["status"]).ok().to_string();
    assert!(!status.contains("failed its last run"), "{status}");
}

#[test]
fn old_bare_list_store_is_read_and_healed_on_edit() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("old_bare_list_store.json");
    let original = parse_fixture(&bytes);
    let unknown = unknown_keys(&original);
    assert!(unknown.iter().any(|u| u.pointer == "/schedule/x_hint"));
    assert!(unknown.iter().any(|u| u.pointer == "/x_extra"));

    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    let inbox = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == "0a1b2c3d4e5f")
        .unwrap()
        .clone();
    assert_eq!(
        inbox["schedule"],
        json!({"kind": "interval", "minutes": 30, "display": "every 30m"})
    );
    assert_eq!(inbox["deliver"], "telegram,discord");

    let after = lists_and_survives_an_edit(
        &hermes,
        &unknown,
        &[
            ("0a1b2c3d4e5f", "Inbox digest", "every 30m"),
            ("1a2b3c4d5e6f", "Morning brief", "0 7 * * *"),
            ("2a3b4c5d6e7f", "Weekly review", "0 17 * * 5"),
            ("3a4b5c6d7e8f", "Plant watering", "every 45m"),
        ],
        "2a3b4c5d6e7f",
    );
    let job = |id: &str| {
        after["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .unwrap()
            .clone()
    };
    let inbox = job("0a1b2c3d4e5f");
    assert_eq!(
        inbox["schedule"],
        json!({"kind": "interval", "minutes": 30, "display": "every 30m"}),
        "a bare-string schedule becomes its object"
    );
    assert_eq!(
        inbox["deliver"], "telegram,discord",
        "a deliver list is joined"
    );
    assert_eq!(inbox["repeat"], json!({"times": null, "completed": 40}));
    let brief = job("1a2b3c4d5e6f");
    assert_eq!(brief["schedule"]["kind"], "cron");
    assert_eq!(
        brief["schedule"]["expr"], "0 7 * * *",
        "legacy value → expr"
    );
    assert_eq!(brief["schedule"]["display"], "0 7 * * *");
    assert_eq!(brief["deliver"], "local");
    assert_eq!(job("2a3b4c5d6e7f")["schedule"]["display"], "0 17 * * 5");
    let plants = job("3a4b5c6d7e8f");
    assert_eq!(
        plants["schedule"],
        json!({"kind": "interval", "minutes": 45, "display": "every 45m"})
    );
    assert_eq!(plants["deliver"], "slack");
}

#[test]
fn legacy_naive_timestamps_are_read_in_the_system_zone() {
    // The store has naive `next_run_at: 2026-03-01T10:30:00`; the machine that wrote it
    // ran in New York, so that is 15:30Z — shown in the configured zone (UTC).
    let mut hermes = Hermes::new();
    hermes.system_zone = "America/New_York".to_string();
    hermes.install_fixture("old_bare_list_store.json");
    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(
        listing.contains("2026-03-01T15:30:00+00:00 (in 5h 30m)"),
        "{listing}"
    );
}

#[test]
fn jobs_keyed_by_id_are_flattened_and_an_inline_id_wins() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("jobs_keyed_by_id_store.json");
    let original = parse_fixture(&bytes);
    let unknown = unknown_keys(&original);
    assert!(unknown.iter().any(|u| u.pointer == "/x_top"));
    let after = lists_and_survives_an_edit(
        &hermes,
        &unknown,
        &[
            ("aaaaaaaaaaa1", "Keyed without inline id", "every 90m"),
            ("ccccccccccc3", "Keyed with inline id", "30 6 * * *"),
        ],
        "ccccccccccc3",
    );
    let ids: Vec<&str> = after["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(
        ids.contains(&"aaaaaaaaaaa1") && ids.contains(&"ccccccccccc3"),
        "{ids:?}"
    );
    assert!(
        !ids.contains(&"bbbbbbbbbbb2"),
        "the map key must not beat the inline id"
    );
}

#[test]
fn store_with_a_utf8_bom_is_read_and_rewritten_without_it() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("bom_store.json");
    assert!(
        bytes.starts_with(b"\xEF\xBB\xBF"),
        "fixture must start with a BOM"
    );
    let unknown = unknown_keys(&parse_fixture(&bytes));
    assert!(!unknown.is_empty());
    lists_and_survives_an_edit(
        &hermes,
        &unknown,
        &[("b0b0b0b0b0b0", "日報 digest 🚀", "every day at 8am")],
        "b0b0b0b0b0b0",
    );
    let text = String::from_utf8(hermes.store_bytes().unwrap()).unwrap();
    assert!(text.starts_with('{'), "BOM kept: {:?}", &text[..8]);
    assert!(text.contains("毎朝のニュースを要約して 🚀"), "{text}");
}

#[test]
fn raw_newline_and_tab_in_a_prompt_are_repaired_on_rewrite() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("raw_control_chars_store.json");
    assert!(
        serde_json::from_slice::<Value>(&bytes).is_err(),
        "fixture must contain raw control characters inside a string"
    );
    // The fixture cannot be read by a strict parser, so its unknown keys are spelled out.
    let unknown = vec![
        Unknown {
            job: None,
            pointer: "/x_top".into(),
            value: json!(7),
        },
        Unknown {
            job: Some("c0ffee00c0de".into()),
            pointer: "/x_note".into(),
            value: json!("raw\tcontrol"),
        },
    ];
    let after = lists_and_survives_an_edit(
        &hermes,
        &unknown,
        &[("c0ffee00c0de", "Shopping list", "every 60m")],
        "c0ffee00c0de",
    );
    assert_eq!(after["jobs"][0]["prompt"], "line one\nline two\tand a tab");
}

#[test]
fn legacy_one_shot_without_repeat_counts_as_running_once() {
    // Per docs/SCHEDULES.md, "Repeat": one-shots default to `times: 1`; an old record simply has no `repeat`.
    let hermes = Hermes::new();
    hermes.install_fixture("old_one_shot_store.json");
    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--all", "--json"]).ok())
        .expect("list --json prints JSON");
    assert_eq!(
        listed["jobs"][0]["repeat"],
        json!({"times": 1, "completed": 0}),
        "{listed:#}"
    );
    let listing = hermes.cron(&["list", "--all"]).ok().to_string();
    assert!(listing.contains("Repeat: 0/1"), "{listing}");
}

#[test]
fn legacy_naive_run_at_is_read_in_the_system_zone() {
    // Written by an old build on a machine in New York: `run_at: 2026-12-25T08:00:00`
    // (no offset) and `next_run_at` the same. Both mean 13:00Z, whatever zone is
    // configured now (docs/SCHEDULES.md, "Stored forms from older versions": legacy naive timestamps are the system's local time).
    let mut hermes = Hermes::new();
    hermes.system_zone = "America/New_York".to_string();
    hermes.install_fixture("old_one_shot_store.json");
    let want = instant("2026-12-25T13:00:00+00:00");

    let listing = hermes.cron(&["list"]).ok().to_string();
    assert!(listing.contains("2026-12-25T13:00:00+00:00"), "{listing}");
    let listed: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    let run_at = listed["jobs"][0]["schedule"]["run_at"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(instant(&run_at), want, "list --json run_at {run_at}");

    hermes
        .cron(&["edit", "0d0d0d0d0d0d", "--name", "renamed"])
        .ok();
    let job = hermes.job("0d0d0d0d0d0d");
    let run_at = job["schedule"]["run_at"].as_str().unwrap();
    assert_eq!(instant(run_at), want, "healed run_at {run_at}");
}

/// A job record's text exactly as it sits in a store, by id (the store must be a
/// `{"jobs": [...]}` document).
fn record_texts(bytes: &[u8]) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        jobs: Vec<&'a serde_json::value::RawValue>,
    }
    let top: Top = serde_json::from_slice(bytes).expect("a {\"jobs\": [...]} store");
    top.jobs
        .into_iter()
        .map(|raw| {
            let record: Value = serde_json::from_str(raw.get()).unwrap();
            (
                record["id"].as_str().unwrap().to_string(),
                raw.get().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_pass_rewrites_only_the_jobs_it_ran_leaving_every_other_record_as_python_wrote_it() {
    let hermes = Hermes::new();
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join("hello.sh"), "echo hello\n").unwrap();
    // As Python's `json.dump(indent=2)` writes it: ASCII escapes, its own key order,
    // keys this project does not know, and a job that is not due.
    let store = r#"{
  "jobs": [
    {
      "id": "aaaaaaaaaaaa",
      "name": "Caf\u00e9 digest \ud83d\udcf0",
      "prompt": "Summarize caf\u00e9 news",
      "x_python_only": {"nested": [1, 2.50, "\u00e9"]},
      "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
      "enabled": true,
      "state": "scheduled",
      "next_run_at": "2026-06-01T14:00:00+00:00",
      "deliver": "local"
    },
    {
      "id": "bbbbbbbbbbbb",
      "name": "hello",
      "prompt": "",
      "script": "hello.sh",
      "no_agent": true,
      "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
      "repeat": {"times": null, "completed": 4},
      "enabled": true,
      "state": "scheduled",
      "next_run_at": "2026-06-01T11:00:00+00:00",
      "x_python_only": "kept",
      "deliver": "local"
    },
    {
      "id": "cccccccccccc",
      "name": "paused one",
      "prompt": "p",
      "schedule": {"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"},
      "enabled": false,
      "state": "paused",
      "paused_at": "2026-05-30T08:00:00+00:00",
      "next_run_at": "2026-05-31T09:00:00+00:00"
    }
  ],
  "updated_at": "2026-06-01T10:00:00+00:00",
  "x_top_level": {"kept": true}
}
"#;
    hermes.write_store(store.as_bytes());
    let before = record_texts(store.as_bytes());

    let run = hermes.cron_at("2026-06-01T11:00:20+00:00", &["tick"]);
    assert!(
        run.ok().contains("hello"),
        "the due job ran: {}",
        run.stdout
    );

    let bytes = hermes.store_bytes().unwrap();
    let after = record_texts(&bytes);
    assert_eq!(after.len(), 3);
    for ((id, old), (new_id, new)) in before.iter().zip(&after) {
        assert_eq!(id, new_id, "the order of the jobs is kept");
        if id != "bbbbbbbbbbbb" {
            assert_eq!(old, new, "job {id} was not run and keeps its exact text");
        }
    }
    let ran = hermes.job("bbbbbbbbbbbb");
    assert_eq!(ran["last_status"], "ok");
    assert_eq!(ran["next_run_at"], "2026-06-01T12:00:00+00:00");
    assert_eq!(ran["repeat"]["completed"], 5);
    assert_eq!(ran["x_python_only"], "kept");
    let doc = hermes.store();
    assert_eq!(doc["x_top_level"], json!({"kept": true}));
    assert_ne!(doc["updated_at"], "2026-06-01T10:00:00+00:00");
    // The result is still a store every reader accepts.
    let listed = hermes.cron_at("2026-06-01T11:01:00+00:00", &["list", "--all"]);
    assert!(listed.ok().contains("Café digest"), "{}", listed.stdout);
}

#[test]
fn a_due_job_without_an_id_runs_and_is_given_one_and_the_daemon_still_wakes_for_the_next() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return;
    }
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join("hello.sh"), "echo hello\n").unwrap();
    // Neither record has an id: a hand-edited or very old store.
    let store = r#"{"jobs": [
      {"name": "hello", "prompt": "", "script": "hello.sh", "no_agent": true,
       "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
       "enabled": true, "state": "scheduled", "next_run_at": "2026-06-01T11:00:00+00:00",
       "deliver": "local"},
      {"name": "later", "prompt": "", "script": "hello.sh", "no_agent": true, "id": 5,
       "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
       "enabled": true, "state": "scheduled", "next_run_at": "2026-12-25T08:00:00+00:00",
       "deliver": "local"}
    ]}"#;
    hermes.write_store(store.as_bytes());
    let run = hermes.cron_at("2026-06-01T11:00:20+00:00", &["tick"]);
    assert!(
        run.ok().contains("hello"),
        "the due job ran: {}",
        run.stdout
    );
    let jobs = hermes.jobs();
    assert_eq!(jobs.len(), 2);
    let ran = jobs.iter().find(|job| job["name"] == "hello").unwrap();
    assert!(
        crate::support::is_job_id(ran["id"].as_str().unwrap()),
        "{ran}"
    );
    assert_eq!(ran["last_status"], "ok");
    assert_eq!(ran["next_run_at"], "2026-06-01T12:00:00+00:00");
    let later = jobs.iter().find(|job| job["name"] == "later").unwrap();
    assert_eq!(later["next_run_at"], "2026-12-25T08:00:00+00:00");
}

/// A one-shot as Python Hermes leaves it while its gateway runs it: dispatch counted,
/// `next_run_at` kept, a `run_claim` stamped at `claim_at`.
fn python_one_shot_in_flight(claim_at: &str) -> String {
    format!(
        r#"{{"jobs": [{{"id": "0a0a0a0a0a0a", "name": "remind", "prompt": "",
  "script": "mark.sh", "no_agent": true,
  "schedule": {{"kind": "once", "run_at": "2026-06-01T11:00:00+00:00", "display": "once at 2026-06-01 11:00"}},
  "repeat": {{"times": 1, "completed": 1}}, "enabled": true, "state": "scheduled",
  "next_run_at": "2026-06-01T11:00:00+00:00", "last_run_at": null,
  "run_claim": {{"at": "{claim_at}", "by": "laptop:5358"}}, "deliver": "local"}}]}}"#
    )
}

#[test]
fn a_one_shot_python_hermes_is_running_is_not_fired_again_and_a_dead_claim_completes_it() {
    let hermes = Hermes::new();
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let marks = hermes.home().join("marks.txt");
    std::fs::write(
        scripts.join("mark.sh"),
        format!("echo ran >> '{}'\n", marks.display()),
    )
    .unwrap();

    // Claimed 50 s ago (its lifetime is 30 minutes): Python's run is in flight.
    let store = python_one_shot_in_flight("2026-06-01T13:00:10+02:00");
    hermes.write_store(store.as_bytes());
    let run = hermes.cron_at("2026-06-01T11:01:00+00:00", &["tick"]);
    assert!(run.ok().contains("Nothing due"), "{}", run.stdout);
    assert!(!marks.exists(), "the job was not run a second time");
    assert_eq!(
        hermes.store_bytes().unwrap(),
        store.as_bytes(),
        "store untouched"
    );

    // Claimed 40 minutes ago and never cleared: the run that claimed it died. It was
    // dispatched once already, so it is done, not fired again.
    hermes.write_store(python_one_shot_in_flight("2026-06-01T11:00:05+00:00").as_bytes());
    hermes.cron_at("2026-06-01T11:40:05+00:00", &["tick"]).ok();
    assert!(!marks.exists(), "the job was not run a second time");
    let job = hermes.job("0a0a0a0a0a0a");
    assert_eq!(job["state"], "completed");
    assert_eq!(job["enabled"], false);
}

#[test]
fn our_one_shot_carries_a_run_claim_while_it_runs_so_python_hermes_keeps_off_it() {
    let mut hermes = Hermes::new();
    hermes.now = None;
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let go = hermes.home().join("go");
    std::fs::write(
        scripts.join("wait.sh"),
        format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; echo finished\n",
            go.display()
        ),
    )
    .unwrap();
    // A one-shot due a second ago (added with the clock a minute back).
    let minute_ago = chrono::Utc::now() - chrono::Duration::seconds(61);
    let added = hermes.cron_at(
        &minute_ago.to_rfc3339(),
        &["add", "1m", "", "--script", "wait.sh", "--no-agent"],
    );
    let id = crate::support::created_id(added.ok());
    let mut tick = hermes
        .command(&["cron", "tick"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let claim = loop {
        let job = hermes.job(&id);
        if job["run_claim"].is_object() {
            break job["run_claim"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "no run_claim: {job}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Python Hermes' shape: when, and `<host>:<pid>` of the scheduler running it.
    let by = claim["by"].as_str().unwrap();
    assert!(by.ends_with(&format!(":{}", tick.id())), "{claim}");
    let at = instant(claim["at"].as_str().unwrap());
    assert!(
        (chrono::Utc::now() - at.with_timezone(&chrono::Utc))
            .num_seconds()
            .abs()
            < 30
    );
    let running = hermes.job(&id);
    assert_eq!(running["repeat"]["completed"], 1);

    std::fs::write(&go, "").unwrap();
    assert!(tick.wait().unwrap().success());
    let done = hermes.job(&id);
    assert_eq!(
        done["run_claim"],
        Value::Null,
        "the result clears the claim"
    );
    assert_eq!(done["last_status"], "ok");
    assert_eq!(done["state"], "completed");
}

/// Python Hermes records its attempts in an `executions` table of the shared
/// `cron/executions.db`; `hermes cron runs` shows them beside ours, newest first.
#[test]
fn runs_shows_the_attempts_python_hermes_recorded_beside_ours() {
    let hermes = Hermes::new();
    std::fs::create_dir_all(hermes.home().join("scripts")).unwrap();
    std::fs::write(hermes.home().join("scripts/hi.sh"), "echo hi\n").unwrap();
    let id = hermes.add("every 2h", "", &["--script", "hi.sh", "--no-agent"]);
    hermes.cron_at("2026-03-01T10:00:00Z", &["run", &id]).ok();
    let db = hermes.cron_dir().join("executions.db");
    // The table exactly as Python Hermes 0.19 creates it (cron/executions.py), two rows.
    let script = format!(
        r#"
import sqlite3
c = sqlite3.connect({db:?})
c.execute("""CREATE TABLE IF NOT EXISTS executions (id TEXT PRIMARY KEY, job_id TEXT NOT NULL,
  source TEXT NOT NULL, process_id TEXT NOT NULL, pid INTEGER NOT NULL, process_started_at INTEGER,
  status TEXT NOT NULL, claimed_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, error TEXT)""")
c.execute("""INSERT INTO executions VALUES ('e1', '{id}', 'builtin', 'p', 41, NULL, 'completed',
  '2026-03-01T11:00:00+00:00', '2026-03-01T11:00:01+00:00', '2026-03-01T11:00:02+00:00', NULL)""")
c.execute("""INSERT INTO executions VALUES ('e0', '{id}', 'builtin', 'p', 41, NULL, 'failed',
  '2026-03-01T09:00:00+00:00', '2026-03-01T09:00:01+00:00', '2026-03-01T09:00:02+00:00', 'boom')""")
c.commit()
"#,
        db = db.display().to_string()
    );
    let status = std::process::Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(status.success());
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", &id, "--json"]).ok()).unwrap();
    let runs = runs["runs"].as_array().unwrap();
    let seen: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r["source"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("python-builtin", "ok"),
            ("manual", "ok"),
            ("python-builtin", "error")
        ],
        "newest first: {runs:?}"
    );
    assert_eq!(runs[2]["error"], "boom");
    assert_eq!(runs[0]["occurrence"], "python:e1");
}
