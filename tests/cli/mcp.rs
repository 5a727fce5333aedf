//! MCP servers through the real binary (docs/AGENT.md, "MCP servers"): a mail server
//! written with the official MCP Python SDK (tests/fixtures/mcp/mail_server.py, venv from
//! scripts/mcp/setup.sh) over stdio and Streamable HTTP, called by a scripted fake model
//! by its offered names. A server that exits, never answers, hangs or crashes must be
//! named in the run's output with nothing of its process group left running.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::Hermes;

/// The python of the MCP test venv, built by scripts/mcp/setup.sh when it is missing.
pub(crate) fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        crate::support::venv_python("mcp", "the MCP tests need the MCP Python SDK from PyPI")
    })
}

fn mail_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp/mail_server.py")
        .display()
        .to_string()
}

/// A scripted OpenAI-compatible model: answers with `replies` in order (the last
/// repeats) and keeps every request body.
struct Model {
    base: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    fn start(replies: Vec<Value>) -> Model {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push(serde_json::from_str(&body).unwrap_or(Value::Null));
                    log.len() - 1
                };
                let reply = replies[n.min(replies.len() - 1)].to_string();
                let response = tiny_http::Response::from_string(reply).with_header(
                    tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                );
                let _ = request.respond(response);
            }
        });
        Model { base, seen }
    }

    fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// The tool names offered in the first request.
    fn offered(&self) -> Vec<String> {
        self.requests()[0]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What the model got back for its first tool call.
    fn first_tool_result(&self) -> String {
        let messages = &self.requests()[1]["messages"];
        let result = messages
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool result in the second request");
        result["content"].as_str().unwrap().to_string()
    }
}

fn answer(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
    ]}}]})
}

/// A home whose config points at `model` and lists `servers` (YAML under mcp_servers).
fn home(model: &Model, servers: &str) -> Hermes {
    let mut hermes = Hermes::new();
    hermes.now = None;
    let config = format!(
        "model:\n  default: test-model\n  base_url: {}\nagent:\n  api_max_retries: 1\nmcp_servers:\n{servers}",
        model.base
    );
    std::fs::write(hermes.home().join("config.yaml"), config).unwrap();
    hermes
}

/// A stdio entry for the mail server with extra arguments.
fn stdio(name: &str, args: &[&str], more: &str) -> String {
    let mut all = vec![mail_server()];
    all.extend(args.iter().map(|a| a.to_string()));
    format!(
        "  {name}:\n    command: {}\n    args: {}\n{more}",
        python().display(),
        serde_json::to_string(&all).unwrap()
    )
}

/// The newest output document of a job.
fn output(hermes: &Hermes, id: &str) -> String {
    hermes.latest_output(id)
}

/// Live (not zombie) processes of process group `pgid`.
fn live_in_group(pgid: i64) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            live.push(stat);
        }
    }
    live
}

/// Asserts that process group `pgid` has no live process left. SIGKILL is delivered
/// asynchronously, so a member may take a moment to die: it gets up to 3 s.
#[track_caller]
fn assert_group_gone(pgid: i64) {
    let started = Instant::now();
    let mut live = live_in_group(pgid);
    while !live.is_empty() && started.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
        live = live_in_group(pgid);
    }
    assert_eq!(live, Vec::<String>::new(), "group {pgid} still runs");
}

/// The pgid a server wrote to its pidfile.
fn pgid_of(pidfile: &Path) -> i64 {
    let text =
        std::fs::read_to_string(pidfile).unwrap_or_else(|e| panic!("{}: {e}", pidfile.display()));
    text.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_stdio_mail_server_is_called_by_its_offered_name_and_the_answer_is_saved() {
    let model = Model::start(vec![
        call("mcp__mail__list_unread", json!({"folder": "INBOX"})),
        answer("You have 2 unread messages: Quarterly report and Lunch on Friday?"),
    ]);
    let files = tempfile::tempdir().unwrap();
    let (envfile, pidfile) = (files.path().join("env.json"), files.path().join("pid"));
    let hermes = home(
        &model,
        &stdio(
            "mail",
            &[
                "--envfile",
                envfile.to_str().unwrap(),
                "--pidfile",
                pidfile.to_str().unwrap(),
            ],
            "    env:\n      MAIL_TOKEN: \"${MAIL_SECRET}\"\n    timeout: 30\n    connect_timeout: 30\n",
        ),
    );
    std::fs::write(hermes.home().join(".env"), "MAIL_SECRET=from-dotenv-123\n").unwrap();
    let id = hermes.add("every 1h", "Summarize my inbox", &[]);
    let run = hermes
        .command(&["cron", "run", &id])
        .env("OPENAI_API_KEY", "sk-never-for-the-mail-server-000")
        .env("GITHUB_TOKEN", "ghp_never_for_the_mail_server")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");

    let offered = model.offered();
    assert!(
        offered.contains(&"mcp__mail__list_unread".to_string()),
        "{offered:?}"
    );
    let tool = model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__mail__list_unread")
        .cloned()
        .unwrap();
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["folder"])
    );
    let result: Value = serde_json::from_str(&model.first_tool_result()).unwrap();
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("2 unread in INBOX") && text.contains("Quarterly report"),
        "{result}"
    );
    let doc = output(&hermes, &id);
    assert!(doc.contains("You have 2 unread messages"), "{doc}");
    assert!(!doc.contains("Note: MCP server"), "{doc}");
    // Stopped with the run.
    assert_group_gone(pgid_of(&pidfile));

    // Its environment: the safe base and its own env:, no credential it was not given.
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&envfile).unwrap()).unwrap();
    assert_eq!(env["MAIL_TOKEN"], "from-dotenv-123");
    assert!(env["PATH"].is_string() && env["HOME"].is_string(), "{env}");
    for leaked in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "HERMES_HOME",
        "MAIL_SECRET",
    ] {
        assert!(
            env.get(leaked).is_none(),
            "{leaked} reached the server: {env}"
        );
    }
}

/// The mail server over Streamable HTTP on 127.0.0.1, answering only requests with
/// `X-Mail-Token: tok-123456` and logging each one to `log`; killed when dropped.
struct HttpServer {
    child: std::process::Child,
    port: String,
}

impl HttpServer {
    fn start(files: &Path, log: &Path) -> HttpServer {
        let portfile = files.join("port");
        let child = std::process::Command::new(python())
            .args([
                &mail_server(),
                "--http",
                "--require-header",
                "X-Mail-Token=tok-123456",
                "--portfile",
                portfile.to_str().unwrap(),
                "--headers-log",
                log.to_str().unwrap(),
            ])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !portfile.exists() && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let port = std::fs::read_to_string(&portfile).expect("the HTTP server started");
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_http_mail_server_gets_the_configured_headers_on_every_request() {
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("headers.log");
    let server = HttpServer::start(files.path(), &log);
    let port = &server.port;
    let model = Model::start(vec![
        call("mcp__mail__list_unread", json!({"folder": "Work"})),
        answer("One unread message: Build failed on main."),
    ]);
    let hermes = home(
        &model,
        &format!(
            "  mail:\n    url: http://127.0.0.1:{port}/mcp\n    headers:\n      X-Mail-Token: \"${{MAIL_TOKEN}}\"\n    connect_timeout: 20\n"
        ),
    );
    std::fs::write(hermes.home().join(".env"), "MAIL_TOKEN=tok-123456\n").unwrap();
    let id = hermes.add("every 1h", "Anything failing at work?", &[]);
    hermes.cron(&["run", &id]).ok();
    drop(server);
    let result = model.first_tool_result();
    assert!(result.contains("Build failed on main"), "{result}");
    assert!(output(&hermes, &id).contains("One unread message: Build failed on main."));
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // initialize, initialized, tools/list, tools/call at least.
    assert!(requests.len() >= 4, "{requests:?}");
    for request in &requests {
        assert_eq!(request["header"], "tok-123456", "{requests:?}");
    }
}

#[test]
fn include_exclude_and_enabled_false_are_obeyed() {
    let model = Model::start(vec![answer("Nothing to do.")]);
    let files = tempfile::tempdir().unwrap();
    let never = files.path().join("never.pid");
    let servers = [
        stdio("mail", &[], "    tools:\n      exclude: [delete_all]\n"),
        stdio(
            "inbox",
            &[],
            "    tools:\n      include: [mark_read]\n      exclude: [mark_read]\n      resources: false\n      prompts: false\n",
        ),
        stdio(
            "off",
            &["--pidfile", never.to_str().unwrap()],
            "    enabled: false\n",
        ),
    ]
    .concat();
    let hermes = home(&model, &servers);
    let id = hermes.add("every 1h", "Tidy the inbox", &[]);
    hermes.cron(&["run", &id]).ok();
    let offered: Vec<String> = model
        .offered()
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        offered,
        [
            "mcp__mail__list_unread",
            "mcp__mail__mark_read",
            "mcp__mail__list_resources",
            "mcp__mail__read_resource",
            "mcp__mail__list_prompts",
            "mcp__mail__get_prompt",
            "mcp__inbox__mark_read"
        ]
    );
    assert!(!never.exists(), "a server with enabled: false was started");

    // A job whose enabled_toolsets names one server gets only that one.
    let model = Model::start(vec![answer("Done.")]);
    let hermes = home(&model, &servers);
    let id = hermes.add("every 1h", "Tidy the inbox", &[]);
    let mut jobs = hermes.store();
    jobs["jobs"][0]["enabled_toolsets"] = json!(["terminal", "inbox"]);
    hermes.write_store(jobs.to_string().as_bytes());
    hermes.cron(&["run", &id]).ok();
    assert_eq!(model.offered(), ["terminal", "mcp__inbox__mark_read"]);

    // An empty list allows nothing, as in Hermes 0.22: no built-in tool, no server.
    let model = Model::start(vec![answer("Done.")]);
    let started = files.path().join("started.pid");
    let watched = stdio("mail", &["--pidfile", started.to_str().unwrap()], "");
    let hermes = home(&model, &watched);
    let id = hermes.add("every 1h", "Tidy the inbox", &[]);
    let mut jobs = hermes.store();
    jobs["jobs"][0]["enabled_toolsets"] = json!([]);
    hermes.write_store(jobs.to_string().as_bytes());
    hermes.cron(&["run", &id]).ok();
    assert_eq!(model.requests().len(), 1, "the run still asked the model");
    assert!(model.offered().is_empty(), "{:?}", model.offered());
    assert!(
        !started.exists(),
        "an MCP server was started for a job allowed no tools"
    );
    assert_eq!(hermes.job(&id)["enabled_toolsets"], json!([]), "kept as []");
}

#[test]
fn a_server_that_exits_at_start_is_a_tool_error_and_named_in_the_output() {
    let model = Model::start(vec![
        call("mcp__mail__list_unread", json!({"folder": "INBOX"})),
        answer("I could not read your mail today."),
    ]);
    let hermes = home(&model, &stdio("mail", &["--exit-at-start"], ""));
    let id = hermes.add("every 1h", "Summarize my inbox", &[]);
    let run = hermes.cron(&["run", &id]);
    run.ok();
    let result: Value = serde_json::from_str(&model.first_tool_result()).unwrap();
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("MCP server 'mail' is not available"),
        "{error}"
    );
    assert!(error.contains("exit status: 3"), "{error}");
    let doc = output(&hermes, &id);
    assert!(doc.contains("I could not read your mail today."), "{doc}");
    assert!(
        doc.contains("Note: MCP server 'mail' could not be used in this run: it exited with exit status: 3; its last error output: mail server: cannot open the mailbox /nonexistent"),
        "{doc}"
    );
}

#[test]
fn a_server_that_never_answers_is_stopped_with_its_group_within_its_connect_timeout() {
    let model = Model::start(vec![answer("Mail was unreachable.")]);
    let files = tempfile::tempdir().unwrap();
    let pidfile = files.path().join("server.pid");
    let hermes = home(
        &model,
        &stdio(
            "mail",
            &["--never-answer", "--pidfile", pidfile.to_str().unwrap()],
            "    connect_timeout: 2\n",
        ),
    );
    let id = hermes.add("every 1h", "Summarize my inbox", &[]);
    let started = Instant::now();
    hermes.cron(&["run", &id]).ok();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2 + 5),
        "the run took {took:?} with a 2 s connect_timeout"
    );
    let doc = output(&hermes, &id);
    assert!(
        doc.contains("Note: MCP server 'mail' could not be used in this run: it did not answer within 2s (its connect_timeout)"),
        "{doc}"
    );
    assert_group_gone(pgid_of(&pidfile));
    // The tools of a server that never started are not offered.
    assert!(!model.offered().iter().any(|n| n.starts_with("mcp__")));
}

#[test]
fn a_call_that_hangs_is_a_tool_error_and_the_server_group_is_stopped() {
    let model = Model::start(vec![
        call("mcp__mail__search", json!({"query": "invoices"})),
        call("mcp__mail__list_unread", json!({"folder": "INBOX"})),
        answer("The search timed out."),
    ]);
    let files = tempfile::tempdir().unwrap();
    let pidfile = files.path().join("server.pid");
    let hermes = home(
        &model,
        &stdio(
            "mail",
            &["--trouble", "--pidfile", pidfile.to_str().unwrap()],
            "    timeout: 1\n",
        ),
    );
    let id = hermes.add("every 1h", "Find my invoices", &[]);
    let started = Instant::now();
    hermes.cron(&["run", &id]).ok();
    // Two one-second timeouts; the rest is the Python server's start on a loaded host.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let error = model.first_tool_result();
    assert!(
        error.contains("MCP server 'mail': a call of 'search' got no answer within 1s (its timeout); the server was stopped with its child processes"),
        "{error}"
    );
    // The next call of the same server says it is down rather than hanging again.
    let later = &model.requests()[2]["messages"];
    let second = later.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        second.contains("MCP server 'mail' is not available in this run"),
        "{second}"
    );
    assert!(output(&hermes, &id)
        .contains("Note: MCP server 'mail': a call of 'search' got no answer within 1s"));
    assert_group_gone(pgid_of(&pidfile));
}

#[test]
fn a_server_that_crashes_in_a_call_is_named_with_its_exit_status() {
    let model = Model::start(vec![
        call("mcp__mail__crash", json!({})),
        answer("The mail server crashed."),
    ]);
    let hermes = home(&model, &stdio("mail", &["--trouble"], ""));
    let id = hermes.add("every 1h", "Crash it", &[]);
    hermes.cron(&["run", &id]).ok();
    let error = model.first_tool_result();
    assert!(
        error.contains(
            "MCP server 'mail' stopped while calling 'crash': it exited with exit status: 7"
        ),
        "{error}"
    );
    let doc = output(&hermes, &id);
    assert!(
        doc.contains("Note: MCP server 'mail': it stopped during the run (it exited with exit status: 7; its last error output: mail server: segmentation fault (simulated))"),
        "{doc}"
    );
}

#[test]
fn resources_and_prompts_are_reached_through_hermes_helper_tools() {
    let model = Model::start(vec![
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "mcp__mail__read_resource",
             "arguments": json!({"uri": "mail://folders"}).to_string()}},
            {"id": "call_1", "type": "function", "function": {"name": "mcp__mail__get_prompt",
             "arguments": json!({"name": "triage", "arguments": {"folder": "Work"}}).to_string()}},
            {"id": "call_2", "type": "function", "function": {"name": "mcp__mail__list_prompts",
             "arguments": "{}"}}
        ]}}]}),
        answer("Folders: INBOX, Work."),
    ]);
    let hermes = home(&model, &stdio("mail", &[], ""));
    let id = hermes.add("every 1h", "Which folders are there?", &[]);
    hermes.cron(&["run", &id]).ok();
    let messages = model.requests()[1]["messages"].clone();
    let results: Vec<Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results[0], json!({"result": "INBOX, Work"}));
    assert_eq!(
        results[1]["messages"][0],
        json!({"role": "user", "content": "Sort the unread messages of Work by urgency."})
    );
    assert_eq!(results[2]["prompts"][0]["name"], "triage");
    assert_eq!(
        results[2]["prompts"][0]["arguments"][0],
        json!({"name": "folder", "required": true})
    );
}

#[test]
fn an_http_server_that_refuses_the_headers_is_named_in_the_output() {
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("headers.log");
    let server = HttpServer::start(files.path(), &log);
    let model = Model::start(vec![answer("Could not reach the mail server.")]);
    let hermes = home(
        &model,
        &format!(
            "  mail:\n    url: http://127.0.0.1:{}/mcp\n    headers:\n      X-Mail-Token: wrong\n    connect_timeout: 20\n",
            server.port
        ),
    );
    let id = hermes.add("every 1h", "Anything failing at work?", &[]);
    let started = Instant::now();
    hermes.cron(&["run", &id]).ok();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let doc = output(&hermes, &id);
    let note = format!(
        "Note: MCP server 'mail' could not be used in this run: http://127.0.0.1:{}/mcp: ",
        server.port
    );
    assert!(doc.contains(&note), "{doc}");
    assert!(!model.offered().iter().any(|n| n.starts_with("mcp__")));
}

/// The user text of a request: what the run's prompt became.
fn user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn toolsets_and_context_from_are_set_by_add_and_edit_and_obeyed_by_the_run() {
    let model = Model::start(vec![
        answer("Headline: rates unchanged."),
        answer("Digest."),
    ]);
    let hermes = home(&model, "");
    let collector = hermes.add("every 1h", "Collect the news", &["--name", "collector"]);
    hermes.cron(&["run", &collector]).ok();
    let digest = hermes.add(
        "every 1h",
        "Write the digest",
        &["--context-from", "collector", "--toolsets", "web, file"],
    );
    let stored = hermes.job(&digest);
    assert_eq!(
        stored["context_from"],
        json!([collector]),
        "the name is stored as the id"
    );
    assert_eq!(stored["enabled_toolsets"], json!(["web", "file"]));
    hermes.cron(&["run", &digest]).ok();
    let requests = model.requests();
    let asked = &requests[1];
    let offered: Vec<&str> = asked["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "read_file",
            "write_file",
            "patch",
            "list_directory",
            "search_files",
            "web_fetch"
        ]
    );
    assert!(
        user_text(asked).contains("Headline: rates unchanged."),
        "{}",
        user_text(asked)
    );

    // Edit: continuity joins the other job; none allows no tool; "" every tool again.
    hermes
        .cron(&["edit", &digest, "--continuity", "--toolsets", "none"])
        .ok();
    let stored = hermes.job(&digest);
    assert_eq!(stored["context_from"], json!([collector, "self"]));
    assert_eq!(stored["enabled_toolsets"], json!([]));
    hermes
        .cron(&["edit", &digest, "--context-from", "", "--toolsets", ""])
        .ok();
    let stored = hermes.job(&digest);
    assert_eq!(
        stored["context_from"],
        json!(["self"]),
        "continuity is kept"
    );
    assert_eq!(stored["enabled_toolsets"], Value::Null);

    // A job that does not exist is refused in one line, and nothing changes.
    let before = hermes.jobs();
    let refused = hermes.cron(&["edit", &digest, "--context-from", "nosuch"]);
    assert_ne!(refused.code, Some(0));
    assert_eq!(
        refused.stderr.trim(),
        "error: context_from names no job: 'nosuch'. Run 'hermes cron list --all' to see job IDs"
    );
    assert_eq!(hermes.jobs(), before);
}

#[test]
fn the_mcp_tool_sets_toolsets_and_context_from_as_hermes_0_22_s_tool_does() {
    let hermes = Hermes::new();
    let collector = hermes.add("every 1h", "Collect the news", &["--name", "collector"]);
    let out = crate::mcp_server::client(
        &hermes,
        json!([
            {"action": "create", "schedule": "every 2h", "prompt": "Write the digest",
             "context_from": ["collector"], "enabled_toolsets": []},
            {"action": "create", "schedule": "every 2h", "prompt": "Other",
             "context_from": ["nosuch"]},
        ]),
    );
    let results = out["results"].as_array().unwrap();
    let created = &results[0]["reply"];
    assert_eq!(created["job"]["context_from"], json!([collector]));
    assert_eq!(created["job"]["enabled_toolsets"], json!([]));
    let id = created["job_id"].as_str().unwrap().to_string();
    assert_eq!(hermes.job(&id)["enabled_toolsets"], json!([]));
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["reply"]
            .to_string()
            .contains("context_from names no job: 'nosuch'"),
        "{}",
        results[1]["reply"]
    );
    assert_eq!(hermes.jobs().len(), 2, "the refused job was not stored");

    let out = crate::mcp_server::client(
        &hermes,
        json!([
            {"action": "update", "job_id": id, "context_from": [], "enabled_toolsets": ["web"]},
            {"action": "update", "job_id": id, "enabled_toolsets": ""},
        ]),
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(
        results[0]["reply"]["job"]["enabled_toolsets"],
        json!(["web"])
    );
    assert_eq!(results[0]["reply"]["job"]["context_from"], Value::Null);
    assert_eq!(hermes.job(&id)["context_from"], Value::Null);
    assert_eq!(hermes.job(&id)["enabled_toolsets"], Value::Null);
}
