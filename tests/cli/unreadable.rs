//! A store that cannot be read is an error that names the file and the position, and
//! the file is never overwritten while it cannot be read (docs/STORE.md, "Tolerant reading"; docs/COMMANDS.md). A config.yaml
//! with a value of the wrong type under a key we use names the key and its line.

use crate::support::Hermes;

#[test]
fn unparsable_store_fails_every_verb_with_file_and_position_and_keeps_its_bytes() {
    let hermes = Hermes::new();
    let bytes = hermes.install_fixture("unparsable_missing_comma.json");
    let path = hermes.jobs_path();
    let path = path.to_str().unwrap();
    let verbs: &[&[&str]] = &[
        &["list"],
        &["list", "--all"],
        &["list", "--json"],
        &["add", "every 2h", "summarize inbox"],
        &["edit", "d1d2d3d4d5d6", "--name", "fixed"],
        &["pause", "d1d2d3d4d5d6"],
        &["resume", "d1d2d3d4d5d6"],
        &["remove", "d1d2d3d4d5d6"],
    ];
    for args in verbs {
        let run = hermes.cron(args);
        let message = run.user_error();
        assert!(
            message.contains(path),
            "{args:?}: no file path in: {message}"
        );
        // The missing comma is before `"prompt"` on line 6 of the fixture.
        assert!(
            message.contains("line 6"),
            "{args:?}: no line in: {message}"
        );
        assert!(
            message.contains("column"),
            "{args:?}: no column in: {message}"
        );
        assert_eq!(
            hermes.store_bytes().unwrap(),
            bytes,
            "{args:?} changed the unreadable store"
        );
    }
}

#[test]
fn store_whose_jobs_are_not_a_list_is_refused_and_kept() {
    let hermes = Hermes::new();
    let bytes = br#"{"jobs": "none", "updated_at": "2026-03-01T09:00:00+00:00"}"#;
    hermes.write_store(bytes);
    for args in [&["list"][..], &["add", "every 2h", "summarize inbox"][..]] {
        let run = hermes.cron(args);
        let message = run.user_error();
        assert!(
            message.contains(hermes.jobs_path().to_str().unwrap()),
            "{message}"
        );
        assert_eq!(hermes.store_bytes().unwrap(), bytes);
    }
}

#[test]
fn a_wrongly_typed_config_key_is_named_with_its_line_by_every_verb() {
    let hermes = Hermes::new();
    let id = hermes.add("every 2h", "summarize inbox", &[]);
    let config = hermes.home().join("config.yaml");
    // Python Hermes' own keys around ours are fine; the list where a number belongs is not.
    std::fs::write(
        &config,
        "_config_version: 50\nterminal:\n  backend: local\ncron:\n  catch_up_missed: true\n  max_parallel_jobs: [1, 2]\n",
    )
    .unwrap();
    for args in [&["doctor"][..], &["list"][..], &["run", id.as_str()][..]] {
        let message = hermes.cron(args).user_error().to_string();
        assert_eq!(
            message,
            format!(
                "error: Cannot read {}: cron.max_parallel_jobs at line 6: expected a whole number, got a sequence; fix the value or remove the key",
                config.display()
            ),
            "{args:?}"
        );
    }
    std::fs::write(
        &config,
        "cron:\n  max_parallel_jobs: \"2\"\n  wrap_response: 'yes'\n",
    )
    .unwrap();
    hermes.cron(&["list"]).ok();
}
