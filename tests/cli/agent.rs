//! The agent runtime through the real binary: `hermes cron add` then `hermes cron run`
//! against local scripted fakes of an OpenAI-compatible server and of the Anthropic
//! Messages API (tiny_http on 127.0.0.1:0, pointed at by `model.base_url`). Each test
//! pins one behaviour described in docs/AGENT.md: what the request carries, tool round trips, error
//! classes, fallback, silence, skills and the cron-mode safety refusals.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::support::Hermes;

/// One scripted answer: status, extra headers, body.
pub(crate) type Reply = (u16, Vec<(&'static str, &'static str)>, String);

/// What the fake saw of one request: path, JSON body, auth header.
pub(crate) type Seen = (String, Value, Option<String>);

/// A local fake model server: answers requests with the scripted replies in order (the
/// last repeats) and keeps every request body and its auth headers.
pub(crate) struct Fake {
    pub(crate) base: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    pub(crate) fn start(replies: Vec<Reply>) -> Fake {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let auth = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("authorization") || h.field.equiv("x-api-key"))
                    .map(|h| h.value.to_string());
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push((
                        request.url().to_string(),
                        serde_json::from_str(&body).unwrap_or(Value::Null),
                        auth,
                    ));
                    log.len() - 1
                };
                let (status, headers, text) = replies[n.min(replies.len() - 1)].clone();
                let mut response = tiny_http::Response::from_string(text)
                    .with_status_code(status)
                    .with_header(
                        tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                    );
                for (k, v) in headers {
                    response.add_header(tiny_http::Header::from_bytes(k, v).unwrap());
                }
                let _ = request.respond(response);
            }
        });
        Fake { base, seen }
    }

    pub(crate) fn requests(&self) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b, _)| b.clone())
            .collect()
    }

    pub(crate) fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

pub(crate) fn ok(body: Value) -> Reply {
    (200, vec![], body.to_string())
}

/// An OpenAI-style final text answer.
pub(crate) fn text(content: &str) -> Reply {
    ok(json!({
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5}
    }))
}

/// An OpenAI-style answer asking for tool calls `(name, arguments)`.
pub(crate) fn tools(calls: &[(&str, Value)]) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(n, (name, args))| {
            json!({"id": format!("call_{n}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    ok(json!({
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3}
    }))
}

pub(crate) fn home_with(config: &str) -> Hermes {
    let mut hermes = Hermes::new();
    // Manual runs use the real clock for their run time; keep the add pinned only.
    hermes.now = None;
    std::fs::write(hermes.home().join("config.yaml"), config).unwrap();
    hermes
}

pub(crate) fn openai_config(base: &str) -> String {
    format!("model:\n  default: test-model\n  base_url: {base}\nagent:\n  api_max_retries: 2\n")
}

pub(crate) fn skill(hermes: &Hermes, folder: &str, name: &str, body: &str) {
    let dir = hermes.home().join("skills").join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: test\n---\n{body}\n"),
    )
    .unwrap();
}

/// The newest output document of a job.
pub(crate) fn output(hermes: &Hermes, id: &str) -> String {
    hermes.latest_output(id)
}

pub(crate) fn runs(hermes: &Hermes, id: &str) -> Vec<Value> {
    let out = hermes.cron(&["runs", id, "--json"]);
    let v: Value = serde_json::from_str(out.ok()).unwrap();
    v["runs"].as_array().unwrap().clone()
}

/// The user message of a chat-completions request (the first after the system one).
pub(crate) fn user_prompt(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The system message of a chat-completions request: there must be exactly one, first.
pub(crate) fn system_message(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system", "{request}");
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "system").count(),
        1,
        "one system message"
    );
    messages[0]["content"].as_str().unwrap().to_string()
}

/// The text of every message of a chat-completions request, in order.
fn contents(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_request_carries_the_model_cron_notice_skills_in_order_and_the_prompt() {
    let fake = Fake::start(vec![text("All quiet on the server front.")]);
    let hermes = home_with(&openai_config(&fake.base));
    skill(&hermes, "one", "first-skill", "BODY OF SKILL ONE");
    skill(&hermes, "nested/two", "second-skill", "BODY OF SKILL TWO");
    let id = hermes.add(
        "every 1h",
        "Check the servers",
        &["--skill", "second-skill", "--skill", "one"],
    );
    let run = hermes.cron(&["run", &id]);
    assert!(run.ok().contains("All quiet"), "{}", run.stdout);
    let request = &fake.requests()[0];
    assert_eq!(request["model"], "test-model");
    let prompt = &user_prompt(request);
    let order = [
        "running as a scheduled cron job",
        "[SILENT]",
        "\"second-skill\"",
        "BODY OF SKILL TWO",
        "\"one\"",
        "BODY OF SKILL ONE",
        "Check the servers",
    ];
    let mut at = 0;
    for part in order {
        at += prompt[at..]
            .find(part)
            .unwrap_or_else(|| panic!("'{part}' missing or out of order in:\n{prompt}"));
    }
    assert!(request["tools"].as_array().unwrap().len() >= 6);
    let doc = output(&hermes, &id);
    assert!(
        doc.contains("## Response\n\nAll quiet on the server front."),
        "{doc}"
    );
    assert!(
        doc.contains("BODY OF SKILL ONE"),
        "the document holds the assembled prompt"
    );
    let run = &runs(&hermes, &id)[0];
    assert_eq!(run["status"], "ok");
    assert_eq!(run["prompt_tokens"], 11);
    assert_eq!(run["completion_tokens"], 5);
    // A custom server without a key gets no Authorization header.
    assert_eq!(fake.seen.lock().unwrap()[0].2, None);
}

#[test]
fn a_terminal_and_read_file_round_trip_ends_in_a_saved_answer() {
    let fake = Fake::start(vec![
        tools(&[(
            "terminal",
            json!({"command": "echo from-the-terminal > note.txt && echo wrote"}),
        )]),
        tools(&[
            ("read_file", json!({"path": "note.txt"})),
            ("list_directory", json!({"path": "."})),
        ]),
        text("The note says from-the-terminal."),
    ]);
    let hermes = home_with(&openai_config(&fake.base));
    let work = tempfile::tempdir().unwrap();
    let workdir = work.path().to_str().unwrap();
    let id = hermes.add(
        "every 1h",
        "Write a note and read it back",
        &["--workdir", workdir],
    );
    hermes.cron(&["run", &id]).ok();
    assert_eq!(
        std::fs::read_to_string(work.path().join("note.txt")).unwrap(),
        "from-the-terminal\n"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let second = &requests[1]["messages"];
    assert_eq!(second[2]["tool_calls"][0]["function"]["name"], "terminal");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "call_0");
    let terminal: Value = serde_json::from_str(second[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(terminal["exit_code"], 0);
    // Two calls in one turn come back in the order asked.
    let third = &requests[2]["messages"];
    assert_eq!(third[5]["tool_call_id"], "call_0");
    assert!(third[5]["content"]
        .as_str()
        .unwrap()
        .contains("from-the-terminal"));
    assert_eq!(third[6]["tool_call_id"], "call_1");
    assert!(third[6]["content"].as_str().unwrap().contains("note.txt"));
    assert!(output(&hermes, &id).contains("The note says from-the-terminal."));
    let run = &runs(&hermes, &id)[0];
    assert_eq!(run["prompt_tokens"], 7 + 7 + 11);
}

#[test]
fn a_401_is_not_retried_and_the_error_names_auth() {
    let fake = Fake::start(vec![(
        401,
        vec![],
        r#"{"error":{"message":"bad key"}}"#.into(),
    )]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Say hi", &[]);
    let run = hermes.cron(&["run", &id]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(fake.count(), 1, "a 401 must not be retried");
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "error");
    let error = job["last_error"].as_str().unwrap();
    assert!(error.contains("auth") && error.contains("401"), "{error}");
    assert!(output(&hermes, &id).contains("(FAILED)"));
}

/// A 402 carrying `Retry-After` is a transient money error: waited out within the run and
/// tried again, not recorded as a failure. Without `Retry-After` it is not retried.
#[test]
fn a_402_with_retry_after_is_retried_after_it_and_the_run_ends_ok() {
    let fake = Fake::start(vec![
        (
            402,
            vec![("Retry-After", "2")],
            r#"{"error":{"message":"spend window reached, resets shortly"}}"#.into(),
        ),
        text("Answered after the wait."),
    ]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Say hi", &[]);
    let started = std::time::Instant::now();
    let run = hermes.cron(&["run", &id]);
    assert!(run.ok().contains("Answered after the wait."), "{run:?}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "the retry came before the server's Retry-After"
    );
    assert_eq!(fake.count(), 2, "one 402, then one retry");
    assert_eq!(hermes.job(&id)["last_status"], "ok");

    let broke = Fake::start(vec![(
        402,
        vec![],
        r#"{"error":{"message":"insufficient credits"}}"#.into(),
    )]);
    let hermes = home_with(&openai_config(&broke.base));
    let id = hermes.add("every 1h", "Say hi", &[]);
    assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
    assert_eq!(broke.count(), 1, "a 402 without Retry-After is not retried");
    assert_eq!(hermes.job(&id)["last_status"], "error");
}

#[test]
fn after_retries_run_out_the_fallback_provider_answers() {
    let primary = Fake::start(vec![(
        429,
        vec![("Retry-After", "0")],
        r#"{"error":"slow down"}"#.into(),
    )]);
    let fallback = Fake::start(vec![text("Answer from the fallback.")]);
    let config = format!(
        "{}fallback_providers:\n  - provider: custom\n    model: fallback-model\n    base_url: {}\n",
        openai_config(&primary.base),
        fallback.base
    );
    let hermes = home_with(&config);
    let id = hermes.add("every 1h", "Say hi", &[]);
    let run = hermes.cron(&["run", &id]);
    assert!(run.ok().contains("Answer from the fallback."));
    assert_eq!(
        primary.count(),
        2,
        "agent.api_max_retries: 2 attempts on the primary"
    );
    assert_eq!(fallback.requests()[0]["model"], "fallback-model");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn the_same_round_trip_works_against_the_anthropic_messages_api() {
    let fake = Fake::start(vec![
        ok(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "terminal", "input": {"command": "echo anthropic-ok"}}
            ],
            "usage": {"input_tokens": 20, "output_tokens": 4}
        })),
        ok(json!({
            "id": "msg_2", "type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "The command printed anthropic-ok."}],
            "usage": {"input_tokens": 30, "output_tokens": 6}
        })),
    ]);
    let hermes = home_with(&format!(
        "model:\n  default: claude-test\n  provider: anthropic\n  base_url: {}\n",
        fake.base.trim_end_matches("/v1")
    ));
    std::fs::write(
        hermes.home().join(".env"),
        "ANTHROPIC_API_KEY=test-anthropic-key\n",
    )
    .unwrap();
    let id = hermes.add("every 1h", "Run the check", &[]);
    hermes.cron(&["run", &id]).ok();
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, "/v1/messages");
    assert_eq!(
        seen[0].2.as_deref(),
        Some("test-anthropic-key"),
        "x-api-key from .env"
    );
    let first = &seen[0].1;
    assert_eq!(first["model"], "claude-test");
    assert!(first["tools"][0]["input_schema"].is_object());
    let second = &seen[1].1["messages"];
    assert_eq!(second[1]["content"][1]["type"], "tool_use");
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(result["content"].as_str().unwrap().contains("anthropic-ok"));
    assert!(output(&hermes, &id).contains("The command printed anthropic-ok."));
    let run = &runs(&hermes, &id)[0];
    assert_eq!(run["prompt_tokens"], 50);
    assert_eq!(run["completion_tokens"], 10);
}

#[test]
fn a_silent_reply_is_saved_but_not_delivered() {
    let fake = Fake::start(vec![text("[SILENT]")]);
    // The pre-run check would refuse Telegram without a token before the model call.
    let hermes = home_with(&format!(
        "{}cron:\n  preflight: false\n",
        openai_config(&fake.base)
    ));
    // Telegram without a token would be a delivery failure if anything were sent.
    let id = hermes.add("every 1h", "Anything new?", &["--deliver", "telegram"]);
    hermes.cron(&["run", &id]).ok();
    assert!(output(&hermes, &id).contains("## Response\n\n[SILENT]"));
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "ok");
    assert_eq!(job["last_delivery_error"], Value::Null);
    assert_eq!(runs(&hermes, &id)[0]["delivery"], "silent");
}

#[test]
fn an_empty_reply_is_a_failure() {
    let fake = Fake::start(vec![text("  ")]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Say something", &[]);
    assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
    assert_eq!(
        hermes.job(&id)["last_error"],
        "Agent completed but produced empty response"
    );
}

#[test]
fn a_failed_run_prints_its_error_once_under_the_ledgers_occurrence() {
    let fake = Fake::start(vec![text("  ")]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Say something", &[]);
    let run = hermes.cron(&["run", &id]);
    assert_eq!(run.code, Some(1));
    let both = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(
        both.matches("Agent completed but produced empty response")
            .count(),
        1,
        "{both}"
    );
    assert!(
        run.stderr
            .contains(&format!("error: the run of {id} failed (above)")),
        "{}",
        run.stderr
    );
    let runs = hermes.cron(&["runs", &id, "--json"]);
    let runs: serde_json::Value = serde_json::from_str(runs.ok()).unwrap();
    let occurrence = runs["runs"][0]["occurrence"].as_str().unwrap();
    assert!(
        occurrence.starts_with(&format!("{id}@manual-")),
        "{occurrence}"
    );
    assert!(
        run.stdout.starts_with(&format!("{occurrence} ")),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_skill_puts_a_notice_first_and_the_job_still_runs() {
    let fake = Fake::start(vec![text("Done, but skill 'ghost' is missing.")]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Use the skill", &["--skill", "ghost"]);
    hermes.cron(&["run", &id]).ok();
    let prompt = &user_prompt(&fake.requests()[0]);
    assert!(
        prompt.starts_with("[SYSTEM: The following skill(s)"),
        "{prompt}"
    );
    assert!(prompt.contains("could not be found: ghost"), "{prompt}");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

/// The result the model got back for its first tool call.
fn first_tool_result(fake: &Fake) -> Value {
    let messages = &fake.requests()[1]["messages"];
    serde_json::from_str(messages[3]["content"].as_str().unwrap()).unwrap()
}

#[test]
fn rm_rf_root_is_refused_in_cron_mode() {
    let fake = Fake::start(vec![
        tools(&[("terminal", json!({"command": "rm -rf /"}))]),
        text("I was not allowed to do that."),
    ]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Clean up the disk", &[]);
    hermes.cron(&["run", &id]).ok();
    let result = first_tool_result(&fake);
    assert_eq!(result["refused"], true);
    assert!(
        result["error"].as_str().unwrap().contains("cron"),
        "{result}"
    );
}

#[test]
fn web_fetch_of_loopback_is_refused_by_default() {
    let fake = Fake::start(vec![text("placeholder")]);
    let target = format!("{}/models", fake.base);
    let fake = Fake::start(vec![
        tools(&[("web_fetch", json!({"url": target}))]),
        text("Could not fetch it."),
    ]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "Fetch the page", &[]);
    hermes.cron(&["run", &id]).ok();
    let result = first_tool_result(&fake);
    assert_eq!(result["refused"], true);
    assert!(
        result["error"].as_str().unwrap().contains("allow_private"),
        "{result}"
    );
}

#[test]
fn a_job_without_a_model_fails_naming_every_place_looked() {
    let hermes = home_with("");
    let id = hermes.add("every 1h", "Say hi", &[]);
    assert_eq!(hermes.cron(&["run", &id]).code, Some(1));
    let error = hermes.job(&id)["last_error"].as_str().unwrap().to_string();
    for place in ["cron.model", "model.default", "HERMES_MODEL", ".env"] {
        assert!(error.contains(place), "{error}");
    }
}

#[test]
fn the_command_backend_gets_the_prompt_on_stdin() {
    let hermes = home_with("agent:\n  backend: command\n  command: [\"sh\", \"-c\", \"echo external saw: $(grep -c 'Summarise the logs')\"]\n");
    let id = hermes.add("every 1h", "Summarise the logs", &[]);
    let run = hermes.cron(&["run", &id]);
    assert!(run.ok().contains("external saw: 1"), "{}", run.stdout);
}

/// The agent program gets its own keys, never the daemon's API key, the webhook secret
/// or a platform's bot tokens, whether they come from `.env` or the environment.
#[test]
fn the_command_backend_never_gets_the_api_key_or_platform_tokens() {
    let hermes = home_with(
        "agent:\n  backend: command\n  command: [\"sh\", \"-c\", \"echo seen: $(env | cut -d= -f1 | sort | tr '\\\\n' ' ')\"]\n",
    );
    std::fs::write(
        hermes.home().join(".env"),
        "OPENAI_API_KEY=sk-agent-needs-this-one\nAPI_SERVER_KEY=api-key-0123456789abcdef\n\
         TELEGRAM_BOT_TOKEN=123456789:AAtesttokentesttokentesttokentest12\n\
         SLACK_APP_TOKEN=xapp-1-testtokentest\nWEBHOOK_SECRET=hook-secret-value\n",
    )
    .unwrap();
    let id = hermes.add("every 1h", "Summarise the logs", &[]);
    let out = hermes
        .command(&["cron", "run", &id])
        .env("DISCORD_BOT_TOKEN", "discord-test-token-1234")
        .env("ANTHROPIC_API_KEY", "sk-ant-agent-needs-this")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen = stdout
        .lines()
        .find_map(|l| l.strip_prefix("seen: "))
        .unwrap_or_else(|| panic!("no reply: {stdout}"));
    let names: Vec<&str> = seen.split_whitespace().collect();
    for needed in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "HERMES_HOME",
        "HERMES_JOB_ID",
    ] {
        assert!(names.contains(&needed), "{needed} missing: {seen}");
    }
    for withheld in [
        "API_SERVER_KEY",
        "WEBHOOK_SECRET",
        "TELEGRAM_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "DISCORD_BOT_TOKEN",
    ] {
        assert!(!names.contains(&withheld), "{withheld} given: {seen}");
    }
}

#[test]
fn the_turn_budget_warns_at_70_and_90_percent_then_asks_for_a_summary_without_tools() {
    // max_turns 10: notices after the 7th and 9th tool turns, then one call without tools.
    let mut replies: Vec<Reply> = (0..10)
        .map(|_| tools(&[("list_directory", json!({"path": "."}))]))
        .collect();
    replies.push(text("Summary: listed the directory ten times."));
    let fake = Fake::start(replies);
    let hermes = home_with(&format!("{}  max_turns: 10\n", openai_config(&fake.base)));
    let id = hermes.add("every 1h", "Keep looking around", &[]);
    hermes.cron(&["run", &id]).ok();

    let requests = fake.requests();
    assert_eq!(requests.len(), 11, "10 turns and the summary call");
    let last_text = |r: &Value| contents(r).last().cloned().unwrap_or_default();
    let consolidate = "You have used 70% of your turn budget";
    let finish = "You have used 90% of your turn budget";
    for (i, request) in requests.iter().enumerate().take(7) {
        let all = contents(request).join("\n");
        assert!(
            !all.contains(consolidate),
            "request {} warns too early",
            i + 1
        );
    }
    assert!(last_text(&requests[7]).contains(consolidate), "8th request");
    assert!(
        !last_text(&requests[8]).contains(consolidate),
        "the notice is given once"
    );
    assert!(last_text(&requests[9]).contains(finish), "10th request");
    let summary = &requests[10];
    assert!(
        summary
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "the summary call offers no tools: {}",
        summary["tools"]
    );
    assert!(last_text(summary).contains("no more tools can be called"));
    assert!(output(&hermes, &id).contains("Summary: listed the directory ten times."));
    assert_eq!(runs(&hermes, &id)[0]["status"], "ok");
}
