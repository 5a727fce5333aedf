//! Budgets through the real binary (docs/AGENT.md, "Budgets"): a job's own caps set and
//! cleared through every door, a run stopped at each cap against a local fake model that
//! reports usage, the global daily and monthly caps, and what the spend looks like in
//! `runs --json`, `hermes cron cost` and `/metrics`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::{home_with, ok, openai_config, runs, text, Fake, Reply};
use crate::api::{serve, KEY};
use crate::doors::mcp_results;
use crate::incidents::incidents;
use crate::support::Hermes;

/// An OpenAI-style answer that asks for one more tool call and reports this usage.
fn tool_call_using(prompt: i64, completion: i64) -> Reply {
    ok(json!({
        "choices": [{"message": {"role": "assistant", "content": "Still looking.", "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "list_directory", "arguments": "{\"path\": \".\"}"}}
        ]}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion}
    }))
}

/// A Telegram Bot API that accepts every message.
fn telegram() -> crate::delivery::Fake {
    crate::delivery::Fake::start(|_, i| {
        crate::delivery::ok(
            json!({"ok": true, "result": {"message_id": i + 1, "date": 1772359200, "chat": {"id": 1}}}),
        )
    })
}

const TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

/// A home on the fake model with Telegram on the fake, and `extra` config.
fn capped_home(model: &Fake, telegram: &crate::delivery::Fake, extra: &str) -> Hermes {
    let hermes = home_with(&format!("{}{extra}", openai_config(&model.base)));
    std::fs::write(
        hermes.home().join(".env"),
        format!(
            "TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_API_BASE={}\n",
            telegram.base()
        ),
    )
    .unwrap();
    hermes
}

/// `hermes cron run` of a job stopped at a cap: it fails, and the ledger row says how.
fn run_stopped(hermes: &Hermes, id: &str) -> Value {
    let run = hermes.cron(&["run", id]);
    assert_eq!(run.code, Some(1), "{run:?}");
    runs(hermes, id).remove(0)
}

fn notices(telegram: &crate::delivery::Fake) -> Vec<String> {
    telegram
        .bodies("/sendMessage")
        .iter()
        .map(|b| b["text"].as_str().unwrap_or("").to_string())
        .collect()
}

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

#[test]
fn a_model_that_always_asks_for_a_tool_stops_at_max_turns_requests() {
    let model = Fake::start(vec![tool_call_using(7, 3)]);
    let chat = telegram();
    let hermes = capped_home(&model, &chat, "");
    let id = hermes.add(
        "every 1h",
        "look around forever",
        &["--max-turns", "2", "--deliver", "telegram:5550001"],
    );
    let row = run_stopped(&hermes, &id);
    assert_eq!(model.count(), 2, "exactly max_turns requests");
    assert_eq!(row["status"], "budget_exceeded");
    let error = row["error"].as_str().unwrap();
    assert!(error.starts_with("max_turns 2 reached"), "{error}");
    assert_eq!(
        (
            row["prompt_tokens"].as_i64(),
            row["completion_tokens"].as_i64()
        ),
        (Some(14), Some(6))
    );
    assert_eq!(hermes.job(&id)["last_status"], "budget_exceeded");
    // The output keeps what was produced so far.
    let output = crate::agent::output(&hermes, &id);
    assert!(output.contains("max_turns 2 reached"), "{output}");
    assert!(output.contains("### Produced so far"), "{output}");
    assert!(
        output.contains("Still looking.\n- called `list_directory`"),
        "{output}"
    );
    // The failure notice and the incident follow the normal failure rules.
    let sent = notices(&chat);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("max_turns 2 reached"), "{}", sent[0]);
    assert_eq!(incidents(&hermes, &[]).len(), 1);
}

#[test]
fn six_hundred_tokens_a_request_against_max_tokens_1000_stop_after_exactly_two() {
    let model = Fake::start(vec![tool_call_using(500, 100)]);
    let chat = telegram();
    let hermes = capped_home(&model, &chat, "");
    let id = hermes.add("every 1h", "count", &["--max-tokens", "1000"]);
    let row = run_stopped(&hermes, &id);
    assert_eq!(model.count(), 2);
    assert_eq!(row["status"], "budget_exceeded");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .starts_with("max_tokens: 1200 tokens"),
        "{row}"
    );
}

#[test]
fn max_cost_with_a_pricing_entry_stops_at_the_request_that_crosses_it() {
    let model = Fake::start(vec![tool_call_using(500, 100)]);
    let chat = telegram();
    // $10 per million tokens: 600 tokens are $0.006 a request.
    let pricing = "pricing:\n  test-model:\n    input_per_mtok: 10\n    output_per_mtok: 10\n";
    let hermes = capped_home(&model, &chat, pricing);
    let id = hermes.add("every 1h", "spend", &["--max-cost", "0.01"]);
    let row = run_stopped(&hermes, &id);
    assert_eq!(model.count(), 2, "$0.006 < $0.01 <= $0.012");
    assert_eq!(row["status"], "budget_exceeded");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .starts_with("max_cost: $0.012 spent (cap $0.01, model test-model)"),
        "{row}"
    );
    assert!(
        (row["cost_usd"].as_f64().unwrap() - 0.012).abs() < 1e-9,
        "{row}"
    );
    assert_eq!(row["model"], "test-model");
}

#[test]
fn a_cost_cap_on_a_model_without_a_price_makes_no_request() {
    let model = Fake::start(vec![text("never asked")]);
    let chat = telegram();
    let hermes = capped_home(&model, &chat, "");
    let added = hermes.cron(&["add", "every 1h", "spend", "--max-cost", "1"]);
    assert!(
        added.stderr.contains("warning: this job: refused before any model request: max_cost_usd is set but model 'test-model' has no known price"),
        "{}",
        added.stderr
    );
    let id = crate::support::created_id(added.ok());
    let row = run_stopped(&hermes, &id);
    assert_eq!(model.count(), 0);
    assert_eq!(row["status"], "error");
    let error = row["error"].as_str().unwrap();
    assert!(
        error.contains(
            "model 'test-model' has no known price: add it under pricing: in config.yaml"
        ),
        "{error}"
    );
}

#[test]
fn a_model_that_hangs_is_cancelled_within_max_runtime_plus_a_few_seconds() {
    // A server that accepts the request and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let hermes = home_with(&openai_config(&base));
    let id = hermes.add("every 1h", "wait for it", &["--max-runtime", "2s"]);
    let started = Instant::now();
    let row = run_stopped(&hermes, &id);
    let took = started.elapsed();
    // Far below the model request's own timeout; the margin is for a loaded machine
    // (process start, store, the run's bookkeeping).
    assert!(took < Duration::from_secs(2 + 20), "took {took:?}");
    assert!(took >= Duration::from_secs(2), "took {took:?}");
    assert_eq!(row["status"], "budget_exceeded");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .starts_with("max_runtime 2s reached"),
        "{row}"
    );
}

/// `hermes cron tick` at `now`, as host `machine` (on PostgreSQL two homes share one
/// database: two hosts).
fn tick_as(hermes: &Hermes, now: &str, machine: &str) -> String {
    let out = hermes
        .command(&["cron", "tick"])
        .env("HERMES_NOW", now)
        .env("HERMES_MACHINE_ID", machine)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code().is_some(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A home for the global cap: the fake model (every answer $0.012 at $10 per million
/// tokens), Telegram on the fake, a $0.01 daily budget with this `notify` line, and a
/// script `hello.sh`. With `store` it shares that store (another host).
fn budget_home_notifying(
    model: &Fake,
    chat: &crate::delivery::Fake,
    store: Option<&Hermes>,
    notify: &str,
) -> Hermes {
    let mut hermes = Hermes::new();
    if let Some(first) = store {
        hermes.store_url = first.store_url.clone();
    }
    let config = format!(
        "{}cron:\n  catch_up_spread: 0\n  budget:\n    daily_usd: 0.01\n{notify}pricing:\n  test-model:\n    input_per_mtok: 10\n    output_per_mtok: 10\n",
        openai_config(&model.base)
    );
    std::fs::write(hermes.home().join("config.yaml"), config).unwrap();
    std::fs::write(
        hermes.home().join(".env"),
        format!(
            "TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_API_BASE={}\n",
            chat.base()
        ),
    )
    .unwrap();
    let scripts = hermes.home().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join("hello.sh"), "echo hello from the script\n").unwrap();
    hermes
}

/// [`budget_home_notifying`] with the notice going to Telegram.
fn budget_home(model: &Fake, chat: &crate::delivery::Fake, store: Option<&Hermes>) -> Hermes {
    budget_home_notifying(model, chat, store, "    notify: telegram:5550001\n")
}

/// A final answer that used 1200 tokens: $0.012 at the homes' price.
fn spending_answer() -> Reply {
    ok(json!({
        "choices": [{"message": {"role": "assistant", "content": "Spent."}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 200}
    }))
}

/// The newest ledger row of a job.
fn last_run(hermes: &Hermes, id: &str) -> Value {
    runs(hermes, id).remove(0)
}

#[test]
fn a_spent_daily_cap_keeps_agent_jobs_from_the_model_sends_one_notice_and_runs_scripts() {
    let model = Fake::start(vec![spending_answer()]);
    let chat = telegram();
    let first = budget_home(&model, &chat, None);
    // On PostgreSQL a second host on the same database; on jobs.json the same home.
    let second_home =
        crate::support::on_postgres().then(|| budget_home(&model, &chat, Some(&first)));
    let second = second_home.as_ref().unwrap_or(&first);

    let spender = first.add("every 1h", "spend the budget", &[]);
    tick_as(&first, "2026-03-01T11:00:30Z", "host-a");
    assert_eq!(model.count(), 1);
    let spent = last_run(&first, &spender);
    assert!(
        (spent["cost_usd"].as_f64().unwrap() - 0.012).abs() < 1e-9,
        "{spent}"
    );

    let add = |args: &[&str]| {
        let mut all = vec!["add"];
        all.extend_from_slice(args);
        crate::support::created_id(first.cron_at("2026-03-01T11:00:30Z", &all).ok())
    };
    let agents = [
        add(&[
            "every 1h",
            "first agent job",
            "--deliver",
            "telegram:5550001",
        ]),
        add(&[
            "every 1h",
            "second agent job",
            "--deliver",
            "telegram:5550001",
        ]),
    ];
    let script = add(&["every 1h", "--script", "hello.sh", "--no-agent"]);

    // The spend of host A stops the agent jobs on host B: no request, one notice.
    tick_as(second, "2026-03-01T12:01:00Z", "host-b");
    assert_eq!(
        model.count(),
        1,
        "a spent budget sends nothing to the model"
    );
    for id in agents.iter().chain([&spender]) {
        let row = last_run(&first, id);
        assert_eq!(row["status"], "budget_exhausted", "{row}");
        assert_eq!(row["prompt_tokens"], Value::Null);
        let error = row["error"].as_str().unwrap();
        assert!(
            error.starts_with("daily budget spent: $0.012 of cron.budget.daily_usd $0.01 since 2026-03-01 00:00 UTC; agent jobs wait until 2026-03-02 00:00 UTC"),
            "{error}"
        );
        assert_eq!(first.job(id)["last_status"], "budget_exhausted");
    }
    let ran = last_run(&first, &script);
    assert_eq!(ran["status"], "ok", "a script-only job still runs: {ran}");
    let sent = notices(&chat);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("daily budget spent"), "{}", sent[0]);
    assert!(
        incidents(&first, &[]).is_empty(),
        "a spent budget opens no incident"
    );

    // Another tick, another process (and host): still no request and no second notice.
    tick_as(&first, "2026-03-01T13:01:00Z", "host-a");
    assert_eq!(model.count(), 1);
    assert_eq!(notices(&chat).len(), 1);
    assert_eq!(last_run(&first, &agents[0])["status"], "budget_exhausted");

    // The next UTC day starts a new window by itself. One agent job is due: the cap is
    // looked at as each run starts, so runs started together could each pass it
    // (docs/AGENT.md, "Global spend caps"); one keeps this deterministic.
    for id in [&spender, &agents[0]] {
        first.cron(&["pause", id]).ok();
    }
    tick_as(second, "2026-03-02T00:30:00Z", "host-b");
    assert_eq!(
        model.count(),
        2,
        "the agent job was sent to the model again"
    );
    assert_eq!(last_run(&first, &agents[1])["status"], "ok");
    let sent = notices(&chat);
    assert_eq!(sent.len(), 2, "the notice, then the job's answer: {sent:?}");
    assert!(sent[1].contains("Spent."), "{}", sent[1]);
}

#[test]
fn without_budget_notify_the_notice_goes_where_the_first_stopped_jobs_failures_go() {
    let model = Fake::start(vec![spending_answer()]);
    let chat = telegram();
    let hermes = budget_home_notifying(&model, &chat, None, "");
    let spender = hermes.add("every 1h", "spend the budget", &[]);
    tick_as(&hermes, "2026-03-01T11:00:30Z", "host-a");
    hermes.cron(&["pause", &spender]).ok();
    let watcher = crate::support::created_id(
        hermes
            .cron_at(
                "2026-03-01T11:00:30Z",
                &["add", "every 1h", "watch", "--deliver", "telegram:5550001"],
            )
            .ok(),
    );
    tick_as(&hermes, "2026-03-01T12:01:00Z", "host-a");
    tick_as(&hermes, "2026-03-01T13:01:00Z", "host-a");
    assert_eq!(model.count(), 1);
    assert_eq!(last_run(&hermes, &watcher)["status"], "budget_exhausted");
    let sent = notices(&chat);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("daily budget spent"), "{}", sent[0]);
}

/// The sum of one field over rows (numbers only).
fn sum(rows: &[Value], key: &str) -> f64 {
    rows.iter().filter_map(|r| r[key].as_f64()).sum()
}

#[test]
fn what_runs_spent_shows_in_runs_cost_the_api_and_metrics() {
    let model = Fake::start(vec![spending_answer()]);
    let pricing = "pricing:\n  test-model:\n    input_per_mtok: 10\n    output_per_mtok: 10\n";
    // One job with spend series of its own: the next ones count as `_other`.
    let series = "cron:\n  metrics_job_series: 1\n";
    let hermes = home_with(&format!("{}{pricing}{series}", openai_config(&model.base)));
    let priced = hermes.add("every 1h", "priced work", &["--name", "priced"]);
    let unpriced = hermes.add("every 1h", "other work", &["--model", "other-model"]);
    for id in [&priced, &unpriced, &priced] {
        hermes.cron(&["run", id]).ok();
    }
    assert_eq!(model.count(), 3);
    let priced_runs = runs(&hermes, &priced);
    for row in &priced_runs {
        assert!(
            (row["cost_usd"].as_f64().unwrap() - 0.012).abs() < 1e-9,
            "{row}"
        );
        assert_eq!(row["model"], "test-model");
    }
    let other = runs(&hermes, &unpriced).remove(0);
    assert_eq!(
        other["cost_usd"],
        Value::Null,
        "an unknown price is null, never 0"
    );
    assert_eq!(other["model"], "other-model");
    assert_eq!(other["prompt_tokens"], 1000);

    // `cost --json` totals equal the sum of the runs.
    let all: Value = serde_json::from_str(hermes.cron(&["runs", "--json"]).ok()).unwrap();
    let all = all["runs"].as_array().unwrap().clone();
    let by_job: Vec<Value> =
        serde_json::from_str(hermes.cron(&["cost", "--since", "7d", "--json"]).ok()).unwrap();
    let by_model: Vec<Value> =
        serde_json::from_str(hermes.cron(&["cost", "--by", "model", "--json"]).ok()).unwrap();
    for lines in [&by_job, &by_model] {
        for key in ["prompt_tokens", "completion_tokens", "cost_usd"] {
            assert!(
                (sum(lines, key) - sum(&all, key)).abs() < 1e-9,
                "{key}: {lines:?}"
            );
        }
        assert_eq!(sum(lines, "runs"), 3.0);
    }
    assert_eq!(
        by_job[0],
        json!({"job_id": priced, "runs": 2, "prompt_tokens": 2000, "completion_tokens": 400,
               "cost_usd": by_job[0]["cost_usd"], "unpriced_runs": 0})
    );
    assert_eq!(by_job[1]["cost_usd"], Value::Null);
    assert_eq!(by_model[1]["model"], "other-model");
    let text = hermes.cron(&["cost"]);
    let out = text.ok();
    assert!(out.contains("priced"), "{out}");
    assert!(out.contains("$0.024"), "{out}");
    assert!(
        out.contains("1 run(s) used a model without a known price"),
        "{out}"
    );
    let later: Vec<Value> = serde_json::from_str(
        hermes
            .cron(&["cost", "--since", "2099-01-01", "--json"])
            .ok(),
    )
    .unwrap();
    assert!(later.is_empty());
    let refused = hermes.cron(&["cost", "--since", "last tuesday"]);
    assert!(refused
        .user_error()
        .contains("Invalid --since 'last tuesday'"));

    // The API's runs carry the cost; /metrics counts what the daemon's runs spent.
    let api = serve(&hermes, &[]);
    let listed = api.send("GET", "/api/runs", &[], "").json();
    assert!((sum(listed["runs"].as_array().unwrap(), "cost_usd") - 0.024).abs() < 1e-9);
    let started = api.send("POST", &format!("/api/jobs/{priced}/run"), &[], "{}");
    assert_eq!(started.status, 200, "{}", started.body);
    let waited = Instant::now();
    while runs(&hermes, &priced)[0]["status"] == "running" {
        assert!(waited.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let metrics = api.send("GET", "/metrics", &[], "").body;
    for line in [
        format!("hermes_cron_tokens_total{{job=\"{priced}\",model=\"test-model\",kind=\"prompt\"}} 1000\n"),
        format!("hermes_cron_tokens_total{{job=\"{priced}\",model=\"test-model\",kind=\"completion\"}} 200\n"),
        format!("hermes_cron_cost_usd_total{{job=\"{priced}\",model=\"test-model\"}} 0.012\n"),
    ] {
        assert!(metrics.contains(&line), "{line} missing:\n{metrics}");
    }
    // Past `cron.metrics_job_series` jobs, the spend counts under `job="_other"`.
    let started = api.send("POST", &format!("/api/jobs/{unpriced}/run"), &[], "{}");
    assert_eq!(started.status, 200, "{}", started.body);
    let waited = Instant::now();
    while runs(&hermes, &unpriced)[0]["status"] == "running" {
        assert!(waited.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let metrics = api.send("GET", "/metrics", &[], "").body;
    let other =
        "hermes_cron_tokens_total{job=\"_other\",model=\"other-model\",kind=\"prompt\"} 1000\n";
    assert!(metrics.contains(other), "{other} missing:\n{metrics}");
    assert!(
        !metrics.contains(&format!("job=\"{unpriced}\"")),
        "{metrics}"
    );
}
