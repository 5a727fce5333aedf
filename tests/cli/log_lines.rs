//! Values from outside (a request's path, a model's tool name) reach the daemon's log
//! with their control characters escaped: a newline in one cannot start a log line of
//! its own that reads like the daemon's.

use serde_json::json;

use crate::agent::{home_with, openai_config, text, tools, Fake};
use crate::api::serve;

/// What a forged line would start with.
const FORGED: &str = "2026-01-01T00:00:00.000000Z ERROR forged";

/// The lines of `log` that start like the forged one.
fn forged_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.starts_with(FORGED)).collect()
}

#[test]
fn a_tool_name_with_a_newline_is_logged_on_one_line() {
    let fake = Fake::start(vec![
        tools(&[(&format!("nope\n{FORGED}: every job deleted"), json!({}))]),
        text("done"),
    ]);
    let hermes = home_with(&openai_config(&fake.base));
    let id = hermes.add("every 1h", "check the disks", &[]);
    let output = hermes
        .command(&["cron", "run", &id])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(forged_lines(&log).is_empty(), "{log}");
    assert!(log.contains(r"nope\n2026-01-01"), "{log}");
}

#[test]
fn a_request_path_with_an_encoded_newline_is_logged_on_one_line() {
    let hermes = crate::support::Hermes::new();
    let api = serve(&hermes, &[]);
    let path = format!("/api/jobs/abc%0A{}", FORGED.replace(' ', "%20"));
    let reply = api.get(&path);
    assert_eq!(reply.status, 400, "{}", reply.body);
    let log = api.log();
    assert!(forged_lines(&log).is_empty(), "{log}");
    assert!(log.contains(r"abc\n2026-01-01"), "{log}");
}
