//! Hermes' tool set through the real binary (docs/AGENT.md, "Tools"): a capturing fake
//! model calls `patch`, `skills_list`, `skill_view`, `todo` and `execute_code` by their
//! Hermes names with Hermes' argument shapes and gets Hermes' result shapes back;
//! `execute_code` is offered only with `approvals.cron_mode: approve`, a hanging script
//! is killed with its process group at `code_execution.timeout`, and the tool
//! definitions sent are the same bytes run after run.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::{home_with, openai_config, skill, text, tools, Fake};

const APPROVE: &str = "approvals:\n  cron_mode: approve\n";

/// The names of the tools offered in a request.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results of a request (those after the model's last turn), parsed.
fn results(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last_assistant = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .unwrap_or(0);
    messages[last_assistant..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap_or("")).unwrap_or(Value::Null))
        .collect()
}

#[test]
fn the_model_calls_patch_skills_todo_and_execute_code_by_their_hermes_names() {
    let fake = Fake::start(vec![
        tools(&[
            (
                "patch",
                json!({"mode": "replace", "path": "notes.txt", "old_string": "status: draft", "new_string": "status: final"}),
            ),
            ("skills_list", json!({})),
            ("skill_view", json!({"name": "release-notes"})),
            (
                "todo",
                json!({"todos": [{"id": "1", "content": "edit notes", "status": "completed"}, {"id": "2", "content": "report", "status": "in_progress"}]}),
            ),
            (
                "execute_code",
                json!({"code": "import os\nprint(6 * 7, os.path.exists('notes.txt'))"}),
            ),
        ]),
        tools(&[
            ("todo", json!({})),
            (
                "patch",
                json!({"mode": "replace", "path": "notes.txt", "old_string": "x", "new_string": "y"}),
            ),
            ("skill_view", json!({"name": "nope"})),
        ]),
        text("Notes finalised."),
    ]);
    let hermes = home_with(&format!("{}{APPROVE}", openai_config(&fake.base)));
    skill(&hermes, "ops/release", "release-notes", "Write the notes.");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "x\nstatus: draft\nx\n").unwrap();
    let id = hermes.add(
        "every 1h",
        "Finalise the notes",
        &["--workdir", work.path().to_str().unwrap()],
    );
    hermes.cron(&["run", &id]).ok();
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let names = offered(&requests[0]);
    for name in [
        "patch",
        "skills_list",
        "skill_view",
        "todo",
        "execute_code",
        "web_fetch",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }

    let first = results(&requests[1]);
    assert_eq!(first.len(), 5, "{first:?}");
    assert_eq!(first[0]["success"], true, "{}", first[0]);
    assert!(
        first[0]["diff"]
            .as_str()
            .is_some_and(|d| d.contains("-status: draft\n+status: final\n")),
        "{}",
        first[0]
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "x\nstatus: final\nx\n"
    );
    assert_eq!(
        first[1]["skills"],
        json!([{"name": "release-notes", "description": "test", "category": "ops"}])
    );
    assert_eq!(first[1]["count"], 1);
    assert_eq!(first[2]["success"], true);
    assert_eq!(first[2]["name"], "release-notes");
    assert_eq!(first[2]["path"], "ops/release/SKILL.md");
    assert!(
        first[2]["content"]
            .as_str()
            .is_some_and(|c| c.contains("Write the notes.")),
        "{}",
        first[2]
    );
    assert_eq!(
        first[3]["summary"],
        json!({"total": 2, "pending": 0, "in_progress": 1, "completed": 1, "cancelled": 0})
    );
    assert_eq!(first[4]["status"], "success", "{}", first[4]);
    assert_eq!(first[4]["output"], "42 True\n");
    assert_eq!(first[4]["exit_code"], 0);

    let second = results(&requests[2]);
    assert_eq!(
        second[0]["todos"], first[3]["todos"],
        "the list lives for the run"
    );
    assert_eq!(second[1]["success"], false);
    assert_eq!(
        second[1]["error"],
        "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True."
    );
    assert_eq!(second[2]["error"], "Skill 'nope' not found.");
    assert_eq!(hermes.job(&id)["last_status"], "ok");
}

#[test]
fn without_cron_mode_approve_execute_code_is_not_offered() {
    let fake = Fake::start(vec![
        tools(&[("execute_code", json!({"code": "print('ran')"}))]),
        text("Could not run code."),
    ]);
    let hermes = home_with(&format!(
        "{}approvals:\n  cron_mode: deny\n",
        openai_config(&fake.base)
    ));
    let id = hermes.add("every 1h", "Compute", &[]);
    hermes.cron(&["run", &id]).ok();
    let requests = fake.requests();
    let names = offered(&requests[0]);
    assert!(!names.iter().any(|n| n == "execute_code"), "{names:?}");
    assert!(names.iter().any(|n| n == "patch"), "{names:?}");
    let result = &results(&requests[1])[0];
    assert_eq!(result["refused"], true, "{result}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("'execute_code' is not available")),
        "{result}"
    );
}

/// The daemon's environment reaches `execute_code` without its credential-named variables.
#[test]
fn execute_code_gets_the_environment_without_credential_named_variables() {
    let code =
        "import os\nprint(os.environ.get('DEPLOY_API_TOKEN'), os.environ.get('REPORT_REGION'))";
    let fake = Fake::start(vec![
        tools(&[("execute_code", json!({"code": code}))]),
        text("Checked."),
    ]);
    let hermes = home_with(&format!("{}{APPROVE}", openai_config(&fake.base)));
    let id = hermes.add("every 1h", "Check the region", &[]);
    let run = hermes
        .command(&["cron", "run", &id])
        .env("DEPLOY_API_TOKEN", "tok-3f9a1c")
        .env("REPORT_REGION", "eu-west")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let result = &results(&fake.requests()[1])[0];
    assert_eq!(result["output"], "None eu-west\n", "{result}");
}

#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn a_hanging_execute_code_is_killed_with_its_group_at_its_timeout() {
    // The script runs in a PID namespace of its own (docs/SAFETY.md, "Sandbox"): its
    // child is found from outside by a command line no other process has.
    let marker = format!("300.{}", rand::random::<u32>());
    let code = format!("import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'])\nopen('started', 'w').write('1')\ntime.sleep(300)");
    let fake = Fake::start(vec![
        tools(&[("execute_code", json!({"code": code}))]),
        text("The script hung."),
    ]);
    let hermes = home_with(&format!(
        "{}{APPROVE}code_execution:\n  timeout: 5\n",
        openai_config(&fake.base)
    ));
    let work = tempfile::tempdir().unwrap();
    let id = hermes.add(
        "every 1h",
        "Run the long job",
        &["--workdir", work.path().to_str().unwrap()],
    );
    let started = Instant::now();
    hermes.cron(&["run", &id]).ok();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let result = &results(&fake.requests()[1])[0];
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["error"], "Script timed out after 5s and was killed.");
    assert!(
        work.path().join("started").exists(),
        "the script started its child"
    );
    let wanted = format!("sleep\0{marker}\0");
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| !stat.contains(") Z "))
        .collect();
    assert!(
        alive.is_empty(),
        "the script's child process is gone: {alive:?}"
    );
}

#[test]
fn the_tool_definitions_are_the_same_bytes_in_two_runs() {
    let fake = Fake::start(vec![text("same")]);
    let hermes = home_with(&format!("{}{APPROVE}", openai_config(&fake.base)));
    let id = hermes.add("every 1h", "Check", &[]);
    hermes.cron(&["run", &id]).ok();
    hermes.cron(&["run", &id]).ok();
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]["tools"].to_string(),
        requests[1]["tools"].to_string()
    );
    assert_eq!(
        offered(&requests[0]),
        [
            "terminal",
            "read_file",
            "write_file",
            "patch",
            "list_directory",
            "search_files",
            "web_fetch",
            "skills_list",
            "skill_view",
            "todo",
            "execute_code"
        ]
    );
}
