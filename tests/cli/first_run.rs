//! A newcomer's first jobs: `add` and `edit` save the job but warn, one line each, about
//! whatever would stop it from running or delivering (what `doctor` flags), naming the
//! variable to set and the home's own `.env`; a model that refuses a request sent without
//! a key is answered with the variable to set.

use crate::agent::{home_with, Fake};
use crate::support::created_id;

fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .collect()
}

#[test]
fn add_saves_the_job_and_warns_about_each_thing_doctor_would_flag() {
    let hermes = home_with("model:\n  default: some-model\n  provider: openrouter\n");
    let env = hermes.home().join(".env");
    let run = hermes.cron(&[
        "add",
        "every 2h",
        "summarize inbox",
        "--name",
        "inbox",
        "--deliver",
        "discord",
        "--skill",
        "nosuchskill",
        "--script",
        "missing.sh",
    ]);
    let id = created_id(run.ok());
    assert_eq!(hermes.job(&id)["name"], "inbox");
    let scripts = hermes.home().join("scripts");
    assert_eq!(
        warnings(&run.stderr),
        [
            format!(
                "this job: provider credential missing: no usable credentials found for provider 'openrouter'; set OPENROUTER_API_KEY in {} (or the environment), or pin a working provider with 'hermes cron edit {id} --provider <p>'",
                env.display()
            ),
            "this job: missing skill(s): nosuchskill".to_string(),
            format!(
                "this job: delivery platform 'discord' has no credentials configured (DISCORD_BOT_TOKEN not set). Set them in {}, or change the job's `deliver` target.",
                env.display()
            ),
            format!(
                "this job: delivery to discord has no home channel: DISCORD_HOME_CHANNEL is not set; add it to the environment or {}",
                env.display()
            ),
            format!(
                "this job: script 'missing.sh' is missing from {}",
                scripts.display()
            ),
        ],
        "{}",
        run.stderr
    );
    // doctor says the same about the key.
    let doctor = hermes.cron(&["doctor"]);
    assert!(
        doctor.stdout.contains(&format!(
            "job {id} (inbox): provider credential missing: no usable credentials found for provider 'openrouter'"
        )),
        "{}",
        doctor.stdout
    );

    // With the key set and the job fixed by edit, nothing is left to warn about.
    std::fs::write(&env, "OPENROUTER_API_KEY=sk-test\n").unwrap();
    let fixed = hermes.cron(&[
        "edit",
        &id,
        "--deliver",
        "local",
        "--clear-skills",
        "--script",
        "",
    ]);
    fixed.ok();
    assert!(warnings(&fixed.stderr).is_empty(), "{}", fixed.stderr);
}

#[test]
fn a_second_job_with_the_same_name_is_saved_with_a_warning_naming_the_first() {
    let hermes = home_with("model:\n  default: local-model\n  base_url: http://127.0.0.1:9/v1\n");
    let first = hermes.add("every 2h", "one", &["--name", "Report"]);
    let run = hermes.cron(&["add", "every 3h", "two", "--name", "report"]);
    let second = created_id(run.ok());
    assert_eq!(
        warnings(&run.stderr),
        [format!(
            "another job is also named 'report' ({first}): refer to these jobs by id, or rename one with `hermes cron edit ID --name NEW`"
        )]
    );
    assert_ne!(first, second);
}

#[test]
fn a_model_that_refuses_a_request_sent_without_a_key_is_answered_with_the_variable() {
    let fake = Fake::start(vec![(
        401,
        vec![],
        r#"{"error":{"message":"No auth credentials found","code":401}}"#.to_string(),
    )]);
    let hermes = home_with(&format!(
        "model:\n  default: some-model\n  provider: openrouter\n  base_url: {}\nagent:\n  api_max_retries: 0\n",
        fake.base
    ));
    let id = hermes.add("every 2h", "summarize inbox", &[]);
    let run = hermes.cron(&["run", &id]);
    assert_eq!(run.code, Some(1));
    let error = hermes.job(&id)["last_error"].as_str().unwrap().to_string();
    assert!(error.contains("HTTP 401"), "{error}");
    assert!(
        error.contains("no API key was sent: set OPENROUTER_API_KEY"),
        "{error}"
    );
    assert_eq!(fake.requests()[0]["model"], "some-model");
}

#[test]
fn doctor_names_misspelt_config_keys_with_the_key_they_probably_mean() {
    let hermes = home_with(
        "modle:\n  default: some-model\ntimezon: Europe/Berlin\nterminal:\n  backend: local\ncron:\n  catchup_missed: false\n",
    );
    let doctor = hermes.cron(&["doctor"]);
    assert_eq!(doctor.code, Some(1));
    for line in [
        "✗ config.yaml has 'modle', which nothing reads: did you mean 'model'?",
        "✗ config.yaml has 'timezon', which nothing reads: did you mean 'timezone'?",
        "✗ config.yaml has 'cron.catchup_missed', which nothing reads: did you mean 'cron.catch_up_missed'?",
    ] {
        assert!(doctor.stdout.lines().any(|l| l == line), "{}", doctor.stdout);
    }
    assert!(!doctor.stdout.contains("'terminal'"), "{}", doctor.stdout);
}

/// The README's "Using it", literally: its local-server model block (pointed at a local
/// fake model), a Telegram bot in `.env` (a fake Telegram), its first `add` with delivery
/// to Telegram. Nothing warns, doctor only misses the daemon, and the run delivers the
/// model's report.
#[test]
fn following_the_readme_from_the_top_reaches_a_delivered_report() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let using = &readme[readme.find("## Using it").unwrap()..];
    let blocks: Vec<&str> = using
        .split("```yaml\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").unwrap()])
        .collect();
    let local = blocks
        .iter()
        .find(|b| b.contains("provider: custom"))
        .expect("README shows a local-server model block");
    let first_add = using
        .lines()
        .find(|l| l.starts_with("hermes cron add "))
        .expect("README shows an add");
    assert!(
        first_add.starts_with("hermes cron add \"every 2h\" \"summarize inbox\""),
        "{first_add}"
    );

    let model = Fake::start(vec![crate::agent::text("Inbox: 3 new mails, none urgent.")]);
    let telegram = crate::delivery::Fake::start(|_, i| {
        crate::delivery::ok(serde_json::json!({
            "ok": true,
            "result": {"message_id": i + 1, "date": 1772359200, "chat": {"id": 5550001}}
        }))
    });
    let config = local.replace("http://127.0.0.1:8080/v1", &model.base);
    assert_ne!(
        config, *local,
        "the README's base_url moved: update this test"
    );
    let hermes = home_with(&config);
    std::fs::write(
        hermes.home().join(".env"),
        format!(
            "TELEGRAM_BOT_TOKEN=123456789:AAtesttokentesttokentesttokentest12\nTELEGRAM_HOME_CHANNEL=5550001\nTELEGRAM_API_BASE={}\n",
            telegram.base()
        ),
    )
    .unwrap();

    let add = hermes.cron(&[
        "add",
        "every 2h",
        "summarize inbox",
        "--deliver",
        "telegram",
    ]);
    let id = created_id(add.ok());
    assert!(warnings(&add.stderr).is_empty(), "{}", add.stderr);
    let doctor = hermes.cron(&["doctor"]);
    // The sandbox line (the kernel's Landlock ABI) is information, not a complaint.
    assert!(
        doctor.stdout.starts_with("Sandbox: Landlock "),
        "{}",
        doctor.stdout
    );
    let complaints: Vec<&str> = doctor
        .stdout
        .lines()
        .filter(|l| !l.starts_with("Sandbox: "))
        .collect();
    assert_eq!(
        complaints,
        ["✗ the scheduler is not running: start it with 'hermes cron daemon'"],
        "{}",
        doctor.stdout
    );
    let run = hermes.cron(&["run", &id]);
    assert!(run.ok().contains("sent: telegram"), "{}", run.stdout);
    let sent = telegram.bodies("/sendMessage");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["chat_id"].to_string().trim_matches('"'), "5550001");
    assert!(
        sent[0]["text"]
            .as_str()
            .unwrap()
            .contains("Inbox: 3 new mails, none urgent."),
        "{}",
        sent[0]["text"]
    );
}

#[test]
fn help_keeps_global_options_apart_shows_examples_and_names_aliases_once() {
    let hermes = crate::support::Hermes::new();
    let runs = hermes.cron(&["runs", "--help"]);
    let text = runs.ok();
    let options = text.find("\nOptions:").unwrap();
    let global = text.find("\nGlobal options:").unwrap();
    let examples = text.find("\nExamples:").unwrap();
    assert!(options < global && global < examples, "{text}");
    assert!(!text[options..global].contains("--profile"), "{text}");
    let cron = hermes.cron(&["--help"]);
    let line = cron
        .ok()
        .lines()
        .find(|l| l.trim_start().starts_with("runs "))
        .unwrap();
    assert_eq!(line.matches("alias").count(), 1, "{line}");
    assert!(line.ends_with("[alias: history]"), "{line}");
    // The completions path the help shows is the one docs/COMMANDS.md gives.
    let completions = hermes.run(&["completions", "--help"]);
    let path = "~/.local/share/bash-completion/completions/hermes";
    assert!(completions.ok().contains(path), "{}", completions.stdout);
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/COMMANDS.md")).unwrap();
    assert!(docs.contains(path));
}

#[test]
fn a_negative_repeat_is_forever_as_documented() {
    let hermes = home_with("model:\n  default: m\n  base_url: http://127.0.0.1:9/v1\n");
    let id = created_id(
        hermes
            .cron(&["add", "every 1h", "report", "--repeat", "-1"])
            .ok(),
    );
    assert_eq!(hermes.job(&id)["repeat"]["times"], serde_json::Value::Null);
}

#[test]
fn a_job_created_paused_says_it_has_no_next_run() {
    let hermes = home_with("model:\n  default: m\n  base_url: http://127.0.0.1:9/v1\n");
    let out = hermes.cron(&["add", "every 1h", "report", "--paused"]);
    assert!(
        out.ok()
            .contains("  Next run: none (paused; resume it to schedule it)\n"),
        "{}",
        out.stdout
    );
}
