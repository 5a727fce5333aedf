//! Budgets through the real binary (docs/AGENT.md, "Budgets"): a job's own caps set and
//! cleared through every door, a run stopped at each cap against a local fake model that
//! reports usage, the global daily and monthly caps, and what the spend looks like in
//! `runs --json`, `hermes cron cost` and `/metrics`.

use serde_json::{json, Value};

use crate::api::{serve, KEY};
use crate::doors::mcp_results;
use crate::support::Hermes;

/// The job's record: its cap keys only, as stored.
fn stored_caps(hermes: &Hermes, id: &str) -> Value {
    let job = hermes.job(id);
    let mut caps = serde_json::Map::new();
    for key in [
        "max_turns",
        "max_runtime_seconds",
        "max_tokens",
        "max_cost_usd",
    ] {
        if let Some(value) = job.get(key) {
            caps.insert(key.to_string(), value.clone());
        }
    }
    Value::Object(caps)
}

#[test]
fn caps_are_set_shown_and_cleared_on_the_command_line_and_never_stored_as_zero() {
    let hermes = Hermes::new();
    let added = hermes.cron(&[
        "add",
        "every 1h",
        "summarize the inbox",
        "--max-turns",
        "5",
        "--max-runtime",
        "10m",
        "--max-tokens",
        "20000",
        "--max-cost",
        "0.50",
    ]);
    let out = added.ok();
    assert!(
        out.contains(
            "  Caps:     max_turns 5, max_runtime 10m, max_tokens 20000, max_cost $0.50 per run"
        ),
        "{out}"
    );
    let id = crate::support::created_id(out);
    assert_eq!(
        stored_caps(&hermes, &id),
        json!({"max_turns": 5, "max_runtime_seconds": 600, "max_tokens": 20000, "max_cost_usd": 0.5})
    );
    let listed = hermes.cron(&["list"]);
    assert!(
        listed.ok().contains(
            "    Caps:     max_turns 5, max_runtime 10m, max_tokens 20000, max_cost $0.50 per run\n"
        ),
        "{}",
        listed.stdout
    );
    let json: Value = serde_json::from_str(hermes.cron(&["list", "--json"]).ok()).unwrap();
    assert_eq!(json["jobs"][0]["max_runtime_seconds"], 600);

    hermes
        .cron(&[
            "edit",
            &id,
            "--max-turns",
            "0",
            "--max-cost",
            "",
            "--max-runtime",
            "90s",
        ])
        .ok();
    assert_eq!(
        stored_caps(&hermes, &id),
        json!({"max_turns": null, "max_runtime_seconds": 90, "max_tokens": 20000, "max_cost_usd": null})
    );
    let listed = hermes.cron(&["list"]);
    assert!(
        listed
            .ok()
            .contains("    Caps:     max_runtime 1m30s, max_tokens 20000 per run\n"),
        "{}",
        listed.stdout
    );
}

#[test]
fn a_bad_cap_is_refused_with_what_to_write_and_the_store_untouched() {
    let hermes = Hermes::new();
    let refused = hermes.cron(&["add", "every 1h", "report", "--max-runtime", "soon"]);
    assert_eq!(
        refused.user_error(),
        "error: Invalid max_runtime 'soon': give a duration such as 90s, 10m or 2h (0 or \"\" clears it)"
    );
    assert_eq!(hermes.store_bytes(), None);
    let id = hermes.add("every 1h", "report", &["--max-turns", "3"]);
    let before = hermes.store_bytes();
    for (flag, value, message) in [
        ("--max-turns", "many", "Invalid max_turns 'many'"),
        ("--max-tokens", "1.5", "Invalid max_tokens '1.5'"),
        ("--max-cost", "-2", "Invalid max_cost_usd '-2'"),
        (
            "--max-runtime",
            "10 fortnights",
            "Invalid max_runtime '10 fortnights'",
        ),
    ] {
        let run = hermes.cron(&["edit", &id, flag, value]);
        assert!(run.user_error().contains(message), "{}", run.stderr);
    }
    assert_eq!(
        hermes.store_bytes(),
        before,
        "a refused edit changed the store"
    );
}

#[test]
fn the_rest_routes_and_the_mcp_tool_take_the_same_cap_fields() {
    let hermes = Hermes::new();
    let api = serve(&hermes, &[]);
    let caps = json!({"max_turns": 4, "max_runtime_seconds": 90, "max_tokens": 1000, "max_cost_usd": 0.25});
    let mut body = json!({"name": "rest", "schedule": "every 1h", "prompt": "water the plants"});
    body.as_object_mut()
        .unwrap()
        .extend(caps.as_object().unwrap().clone());
    let created = api.send("POST", "/api/jobs", &[], &body.to_string()).json();
    let rest = created["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(stored_caps(&hermes, &rest), caps);
    let session = [("Authorization", ""), ("X-Hermes-Session-Token", KEY)];
    body["name"] = json!("dashboard");
    let created = api
        .send("POST", "/api/cron/jobs", &session, &body.to_string())
        .json();
    let dashboard = created["id"]
        .as_str()
        .or(created["job"]["id"].as_str())
        .unwrap()
        .to_string();
    assert_eq!(stored_caps(&hermes, &dashboard), caps);

    // 0 and null clear, through both route families.
    let patch = json!({"max_turns": 0, "max_cost_usd": null, "max_runtime_seconds": "2m"});
    let reply = api.send(
        "PATCH",
        &format!("/api/jobs/{rest}"),
        &[],
        &patch.to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let cleared = json!({"max_turns": null, "max_runtime_seconds": 120, "max_tokens": 1000, "max_cost_usd": null});
    assert_eq!(stored_caps(&hermes, &rest), cleared);
    let put = json!({"updates": patch});
    let reply = api.send(
        "PUT",
        &format!("/api/cron/jobs/{dashboard}"),
        &session,
        &put.to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stored_caps(&hermes, &dashboard), cleared);
    drop(api);

    let create = json!({"action": "create", "name": "mcp", "schedule": "every 1h",
        "prompt": "water the plants", "max_turns": 4, "max_runtime_seconds": 90,
        "max_tokens": 1000, "max_cost_usd": 0.25});
    let created = &mcp_results(&hermes, &[create])[0]["structuredContent"];
    assert_eq!(created["success"], true, "{created}");
    assert_eq!(created["job"]["max_turns"], 4, "the tool shows the caps");
    let mcp = created["job_id"].as_str().unwrap();
    let update = json!({"action": "update", "job_id": mcp, "max_tokens": 0});
    let updated = &mcp_results(&hermes, &[update])[0]["structuredContent"];
    assert_eq!(updated["success"], true, "{updated}");
    assert_eq!(
        stored_caps(&hermes, mcp),
        json!({"max_turns": 4, "max_runtime_seconds": 90, "max_tokens": null, "max_cost_usd": 0.25})
    );
}
