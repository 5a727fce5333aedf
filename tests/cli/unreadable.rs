//! A store that cannot be read is an error that names the file and the position, and
//! the file is never overwritten while it cannot be read (SPEC §2, §4).

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
