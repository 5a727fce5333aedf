//! Webhooks are URLs users supply: through the real binary, a webhook at a loopback,
//! private or cloud-metadata address (in any spelling, or behind a name) is refused and
//! recorded as a failed delivery without a byte sent, unless config.yaml opens it; and
//! what a receiver sends back is masked of the URL's own secrets before it reaches the
//! run history, `/api/runs` and the log.

use std::fs;

use serde_json::Value;

use crate::api::serve;
use crate::delivery::{add_job, allow_local_webhooks, home, Fake};
use crate::support::Hermes;

/// The job's one run in `hermes cron runs --json`.
fn only_run(hermes: &Hermes, id: &str) -> Value {
    let runs: Value = serde_json::from_str(hermes.cron(&["runs", id, "--json"]).ok()).unwrap();
    let runs = runs["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn a_webhook_at_a_loopback_private_or_metadata_address_is_refused_and_never_sent() {
    let fake = Fake::start(|_, _| (204, Vec::new(), String::new()));
    let port = fake.base().rsplit(':').next().unwrap().to_string();
    let hermes = home("report\n", &[]);
    let targets = [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://0x7f000001:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        format!("http://[::1]:{port}/hook"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/hook".to_string(),
    ];
    let deliver: Vec<String> = targets.iter().map(|t| format!("webhook:{t}")).collect();
    let id = add_job(&hermes, &deliver.join(","), &[]);
    let run = hermes.cron(&["run", &id]);
    run.ok();
    assert!(fake.seen().is_empty(), "a refused webhook was sent to");
    let job = hermes.job(&id);
    let error = job["last_delivery_error"].as_str().unwrap().to_string();
    for kind in [
        "127.0.0.1, a loopback address",
        "localhost (127.0.0.1), a loopback address",
        "::1, a loopback address",
        "169.254.169.254, a link-local address",
        "10.0.0.1, a private address",
    ] {
        assert!(error.contains(kind), "no '{kind}' in: {error}");
    }
    assert_eq!(error.matches("refused: ").count(), targets.len(), "{error}");
    assert!(
        error.contains("delivery.allow_private_targets: true"),
        "{error}"
    );
    // A refusal is final: nothing waits in the outbox for a retry.
    assert!(!error.contains("will retry"), "{error}");
    let history = only_run(&hermes, &id);
    assert!(
        history["delivery"].as_str().unwrap().contains("refused: "),
        "{history}"
    );
}

#[test]
fn config_opens_private_webhooks_by_setting_or_allow_list_but_never_metadata() {
    let fake = Fake::start(|_, _| (204, Vec::new(), String::new()));
    let port = fake.base().rsplit(':').next().unwrap().to_string();
    let hermes = home("report\n", &[]);
    allow_local_webhooks(&hermes);
    let deliver = format!(
        "webhook:http://0x7f000001:{port}/opened,webhook:http://169.254.169.254/latest/meta-data/"
    );
    let id = add_job(&hermes, &deliver, &[]);
    hermes.cron(&["run", &id]).ok();
    let paths: Vec<String> = fake.seen().iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, ["/opened"]);
    let error = hermes.job(&id)["last_delivery_error"].to_string();
    assert!(
        error.contains("169.254.169.254, a link-local address"),
        "{error}"
    );

    let listed = home("report\n", &[]);
    fs::write(
        listed.home().join("config.yaml"),
        "delivery:\n  allowed_private_targets: [127.0.0.0/8]\n",
    )
    .unwrap();
    let id = add_job(
        &listed,
        &format!("webhook:http://127.0.0.1:{port}/listed"),
        &[],
    );
    listed.cron(&["run", &id]).ok();
    assert_eq!(fake.seen().last().unwrap().path, "/listed");
    assert_eq!(listed.job(&id)["last_delivery_error"], Value::Null);
}

#[test]
fn an_error_body_echoing_the_urls_secrets_is_masked_in_history_the_api_and_the_log() {
    const TOKEN: &str = "s3cr3t-T0k3n-9f8e7d6c";
    const SIG: &str = "qs-signature-4242";
    let fake = Fake::start(|seen, _| {
        (
            403,
            Vec::new(),
            format!("{{\"error\": \"invalid token for {}\"}}", seen.path),
        )
    });
    let hermes = home("report\n", &[]);
    allow_local_webhooks(&hermes);
    let url = format!("{}/hooks/{TOKEN}?sig={SIG}", fake.base());
    let id = add_job(&hermes, &format!("webhook:{url}"), &[]);
    let run = hermes.cron(&["run", &id]);
    run.ok();
    assert_eq!(fake.seen().len(), 1, "the webhook was sent once");
    let error = hermes.job(&id)["last_delivery_error"].to_string();
    assert!(
        error.contains("403") && error.contains("[REDACTED]"),
        "{error}"
    );
    let history = only_run(&hermes, &id).to_string();
    let api = serve(&hermes, &[]);
    let listed = api.get("/api/runs").body;
    for (place, text) in [
        ("the job", &error),
        ("the run history", &history),
        ("/api/runs", &listed),
        ("the log", &run.stderr),
    ] {
        assert!(
            !text.contains(TOKEN) && !text.contains(SIG),
            "{place} shows a secret of the URL: {text}"
        );
    }
    assert!(listed.contains("[REDACTED]"), "{listed}");
}
