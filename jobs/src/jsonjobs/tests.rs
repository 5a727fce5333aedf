use super::*;
use serde_json::json;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn rec(value: Value) -> Record {
    match value {
        Value::Object(map) => map,
        _ => panic!("test record must be an object"),
    }
}

fn parse(text: &str) -> Result<StoreDocument, DocumentError> {
    parse_document(text.as_bytes(), Path::new("/h/cron/jobs.json"))
}

fn store_in(dir: &tempfile::TempDir) -> JsonFile {
    JsonFile::new(dir.path().join("cron"))
}

fn write_raw(store: &JsonFile, bytes: &[u8]) {
    fs::create_dir_all(store.cron_dir()).unwrap();
    fs::write(store.jobs_path(), bytes).unwrap();
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn missing_file_and_missing_dir_are_an_empty_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    assert_eq!(store.load().unwrap(), StoreDocument::default());
    fs::create_dir_all(store.cron_dir()).unwrap();
    assert_eq!(store.load().unwrap(), StoreDocument::default());
    // Loading never creates anything.
    assert!(dir_names(store.cron_dir()).is_empty());
}

#[test]
fn empty_or_whitespace_file_is_an_empty_store() {
    for text in ["", "  \n\t\r\n"] {
        let doc = parse(text).unwrap();
        assert!(doc.jobs.is_empty());
        assert!(!doc.repaired);
    }
}

#[test]
fn leading_bom_is_skipped_and_marks_repair() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(br#"{"jobs":[{"id":"a1"}],"updated_at":"2026-01-01T00:00:00+00:00"}"#);
    let doc = parse_document(&bytes, Path::new("jobs.json")).unwrap();
    assert_eq!(doc.jobs, vec![rec(json!({"id": "a1"}))]);
    assert_eq!(doc.updated_at.as_deref(), Some("2026-01-01T00:00:00+00:00"));
    assert!(doc.repaired);
}

#[test]
fn canonical_document_is_not_marked_repaired() {
    let doc = parse(r#"{"jobs":[{"id":"a1"}],"updated_at":"x"}"#).unwrap();
    assert!(!doc.repaired);
}

#[test]
fn bare_list_is_the_jobs_list() {
    let doc = parse(r#"[{"id":"a1"},{"id":"b2","name":"x"}]"#).unwrap();
    assert_eq!(
        doc.jobs,
        vec![
            rec(json!({"id": "a1"})),
            rec(json!({"id": "b2", "name": "x"}))
        ]
    );
    assert!(doc.extra.is_empty());
    assert!(doc.repaired);
}

#[test]
fn id_keyed_map_is_flattened_in_order() {
    let doc = parse(
        r#"{"jobs": {
            "zz": {"name": "first", "id": "inline1"},
            "aa": {"name": "second"},
            "mm": {"id": null, "name": "third"}
        }}"#,
    )
    .unwrap();
    assert!(doc.repaired);
    assert_eq!(doc.jobs.len(), 3);
    assert_eq!(doc.jobs[0]["id"], "inline1");
    assert_eq!(doc.jobs[1]["id"], "aa");
    assert_eq!(doc.jobs[1].keys().next().map(String::as_str), Some("id"));
    assert_eq!(doc.jobs[1]["name"], "second");
    assert_eq!(doc.jobs[2]["id"], "mm");
    assert_eq!(doc.jobs[2].keys().next().map(String::as_str), Some("id"));
    assert_eq!(doc.jobs[2].len(), 2);
}

#[test]
fn raw_control_characters_inside_strings_are_repaired() {
    let text = "{\n  \"jobs\": [\n    {\"id\": \"a1\", \"prompt\": \"line1\nline2\ttab\u{1}x\r\"}\n  ]\n}\n";
    let doc = parse(text).unwrap();
    assert!(doc.repaired);
    assert_eq!(doc.jobs[0]["prompt"], "line1\nline2\ttab\u{1}x\r");
    // And the rewrite is valid strict JSON with proper escapes.
    let out = String::from_utf8(render_document(&doc)).unwrap();
    assert!(out.contains(r#""line1\nline2\ttab\u0001x\r""#), "{out}");
    let strict: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(strict["jobs"][0]["prompt"], "line1\nline2\ttab\u{1}x\r");
}

#[test]
fn escaped_quotes_do_not_confuse_the_repair() {
    let text = "{\"jobs\":[{\"prompt\":\"say \\\"hi\\\"\nnow \\\\\",\"x\":\"a\nb\"}]}";
    let doc = parse(text).unwrap();
    assert_eq!(doc.jobs[0]["prompt"], "say \"hi\"\nnow \\");
    assert_eq!(doc.jobs[0]["x"], "a\nb");
}

#[test]
fn object_without_jobs_or_with_null_jobs_is_empty_and_keeps_extra_keys() {
    let doc = parse(r#"{"version": 2, "owner": {"a": 1}}"#).unwrap();
    assert!(doc.jobs.is_empty());
    assert_eq!(doc.extra, rec(json!({"version": 2, "owner": {"a": 1}})));

    let doc = parse(r#"{"jobs": null, "note": "hi"}"#).unwrap();
    assert!(doc.jobs.is_empty());
    assert_eq!(doc.extra, rec(json!({"note": "hi"})));
}

#[test]
fn unknown_keys_survive_load_save_load() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    write_raw(
        &store,
        br#"{"zeta": 1, "jobs": [{"id": "a1", "future_field": {"nested": [1, {"deep": true}]},
            "schedule": {"kind": "cron", "expr": "0 9 * * *", "extra_sched": "keep"}}],
            "updated_at": "old", "alpha": {"b": 2}}"#,
    );
    store
        .update("2026-05-01T09:00:00+02:00", |_| Ok::<_, DocumentError>(()))
        .unwrap();
    let doc = store.load().unwrap();
    assert_eq!(doc.updated_at.as_deref(), Some("2026-05-01T09:00:00+02:00"));
    assert_eq!(doc.extra, rec(json!({"zeta": 1, "alpha": {"b": 2}})));
    assert_eq!(doc.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
    assert_eq!(
        doc.jobs[0],
        rec(
            json!({"id": "a1", "future_field": {"nested": [1, {"deep": true}]},
            "schedule": {"kind": "cron", "expr": "0 9 * * *", "extra_sched": "keep"}})
        )
    );
    let text = fs::read_to_string(store.jobs_path()).unwrap();
    let jobs_at = text.find("\"jobs\"").unwrap();
    let updated_at = text.find("\"updated_at\"").unwrap();
    let zeta_at = text.find("\"zeta\"").unwrap();
    assert!(jobs_at < updated_at && updated_at < zeta_at, "{text}");
}

#[test]
fn render_is_pretty_two_space_literal_utf8_with_trailing_newline() {
    let doc = StoreDocument {
        jobs: vec![rec(json!({"id": "a1", "prompt": "日報を送って 🚀"}))],
        updated_at: Some("2026-01-01T00:00:00+09:00".into()),
        ..StoreDocument::default()
    };
    let out = String::from_utf8(render_document(&doc)).unwrap();
    assert!(out.contains("日報を送って 🚀"), "{out}");
    assert!(!out.contains("\\u"), "{out}");
    assert!(
        out.starts_with("{\n  \"jobs\": [\n    {\n      \"id\""),
        "{out}"
    );
    assert!(out.ends_with("}\n"));
    assert_eq!(parse(&out).unwrap().jobs, doc.jobs);
}

#[test]
fn syntax_error_is_unreadable_with_position_and_update_leaves_file_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    let bytes = b"{\n  \"jobs\": [\n    {\"id\": \"a1\" \"name\": \"x\"}\n  ]\n}\n";
    write_raw(&store, bytes);

    let called = AtomicBool::new(false);
    let err = store
        .update("now", |_| {
            called.store(true, Ordering::SeqCst);
            Ok::<_, DocumentError>(())
        })
        .unwrap_err();
    assert!(!called.load(Ordering::SeqCst));
    assert_eq!(fs::read(store.jobs_path()).unwrap(), bytes);
    match &err {
        DocumentError::Unreadable {
            line,
            column,
            reason,
            ..
        } => {
            assert_eq!(*line, Some(3));
            assert_eq!(*column, Some(17));
            assert_eq!(reason, "expected `,` or `}`");
        }
        other => panic!("expected Unreadable, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(!shown.contains('\n'));
    assert!(shown.contains("jobs.json at line 3 column 17: expected `,` or `}`"));
    assert!(shown.ends_with("the file was left unchanged — fix it or move it aside"));
    assert!(store.load().is_err());
}

#[test]
fn error_position_points_into_the_original_bytes_after_a_repair() {
    // Raw newlines inside the string shift lines in the repaired copy; the
    // reported position must still match the user's file.
    let text = "{\"jobs\": [{\"prompt\": \"a\nb\nc\"}\n  oops]}";
    match parse(text).unwrap_err() {
        DocumentError::Unreadable { line, column, .. } => {
            assert_eq!((line, column), (Some(4), Some(3)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn column_counts_characters_not_bytes() {
    let text = "{\"jobs\": [{\"name\": \"日本\" x}]}";
    match parse(text).unwrap_err() {
        DocumentError::Unreadable { line, column, .. } => {
            assert_eq!((line, column), (Some(1), Some(25)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn non_object_job_entries_are_unreadable_naming_the_index() {
    let err = parse(r#"{"jobs": [{"id": "a"}, {"id": "b"}, "oops"]}"#).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("jobs[2] is a string"), "{shown}");
    assert!(shown.contains("left unchanged"));

    let err = parse(r#"[{"id": "a"}, 7]"#).unwrap_err();
    assert!(err.to_string().contains("jobs[1] is a number"));

    let err = parse(r#"{"jobs": {"abc": [1]}}"#).unwrap_err();
    assert!(
        err.to_string().contains(r#"jobs["abc"] is a list"#),
        "{err}"
    );
}

#[test]
fn other_shapes_are_unreadable() {
    for (text, needle) in [
        ("42", "the top level is a number"),
        (r#""jobs""#, "the top level is a string"),
        (r#"{"jobs": "none"}"#, "\"jobs\" is a string"),
        (r#"{"jobs": true}"#, "\"jobs\" is a boolean"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.to_string().contains(needle), "{text}: {err}");
    }
    match parse("{\"jobs\": [}").unwrap_err() {
        DocumentError::Unreadable { line: Some(1), .. } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let valid = "\u{feff}{\"jobs\": {\"k\": {\"prompt\": \"多\ny\\\"\"}}, \"updated_at\": 1}";
    let bytes = valid.as_bytes();
    for end in 0..=bytes.len() {
        let _ = parse_document(&bytes[..end], Path::new("j"));
        let _ = parse_document(&bytes[end..], Path::new("j"));
    }
    let deep = "[".repeat(10_000);
    assert!(parse(&deep).is_err());
    assert!(parse_document(b"\xff\xfe{\"jobs\":[]}", Path::new("j")).is_err());
    assert!(parse_document(b"{\"jobs\":[{\"p\":\"\xff\n\"}]}", Path::new("j")).is_err());
}

#[test]
fn update_with_err_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);

    let result: Result<(), DocumentError> = store.update("now", |doc| {
        doc.jobs.push(Record::new());
        Err(io_error(Path::new("x"), io::Error::other("no")))
    });
    assert!(result.is_err());
    assert!(!store.jobs_path().exists());

    let bytes = b"[{\"id\": \"a1\"}]";
    write_raw(&store, bytes);
    let result: Result<(), DocumentError> = store.update("now", |doc| {
        doc.jobs.clear();
        Err(io_error(Path::new("x"), io::Error::other("no")))
    });
    assert!(result.is_err());
    assert_eq!(fs::read(store.jobs_path()).unwrap(), bytes);
    assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
}

#[test]
fn update_returns_the_closure_value_and_repairs_on_save() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    write_raw(
        &store,
        b"\xEF\xBB\xBF[{\"id\": \"a1\", \"prompt\": \"x\ny\"}]",
    );
    let n = store
        .update("t1", |doc| {
            assert!(doc.repaired);
            Ok::<_, DocumentError>(doc.jobs.len())
        })
        .unwrap();
    assert_eq!(n, 1);
    let bytes = fs::read(store.jobs_path()).unwrap();
    assert!(bytes.starts_with(b"{\n  \"jobs\""));
    let doc = store.load().unwrap();
    assert!(!doc.repaired);
    assert_eq!(doc.jobs[0]["prompt"], "x\ny");
}

#[cfg(unix)]
#[test]
fn save_makes_file_0600_and_dir_0700() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;

    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    store
        .update("t", |doc| {
            doc.jobs.push(rec(json!({"id": "a1"})));
            Ok::<_, DocumentError>(())
        })
        .unwrap();
    assert_eq!(mode(store.cron_dir()), 0o700);
    assert_eq!(mode(&store.jobs_path()), 0o600);
    assert_eq!(mode(&store.cron_dir().join(".jobs.lock")), 0o600);

    // Loose modes left by someone else are tightened by the next save.
    fs::set_permissions(store.cron_dir(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(store.jobs_path(), fs::Permissions::from_mode(0o644)).unwrap();
    store.update("t2", |_| Ok::<_, DocumentError>(())).unwrap();
    assert_eq!(mode(store.cron_dir()), 0o700);
    assert_eq!(mode(&store.jobs_path()), 0o600);
    assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
}

#[test]
fn write_atomic_creates_parent_and_cleans_up_its_temp_file_on_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("out").join("abc123").join("run.md");
    write_atomic(&target, "# ok ✓\n".as_bytes()).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "# ok ✓\n");
    write_atomic(&target, b"second\n").unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "second\n");
    assert_eq!(dir_names(target.parent().unwrap()), ["run.md"]);

    // Renaming a file over a non-empty directory fails after the temp file exists.
    let blocker = tmp.path().join("blocked");
    fs::create_dir_all(blocker.join("inside")).unwrap();
    let err = write_atomic(&blocker, b"x").unwrap_err();
    assert!(matches!(err, DocumentError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("blocked"));
    assert_eq!(dir_names(tmp.path()), ["blocked", "out"]);
}

#[test]
fn a_write_under_the_lock_removes_a_killed_writers_fresh_temp_file() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(&tmp);
    store
        .update("2026-01-01T00:00:00Z", |_| Ok::<_, DocumentError>(()))
        .unwrap();
    // What a writer killed between create and rename leaves: a temp file seconds old.
    let killed = store
        .cron_dir()
        .join(".jobs.json.tmp-4242-00000000000000ff");
    fs::write(&killed, b"{\"jobs\": [").unwrap();
    // An output document written without a lock keeps a young temp beside it.
    let output = tmp.path().join("out").join("run.md");
    write_atomic(&output, b"first\n").unwrap();
    let young = tmp
        .path()
        .join("out")
        .join(".run.md.tmp-4242-00000000000000ff");
    fs::write(&young, b"half").unwrap();

    store
        .update("2026-01-01T00:01:00Z", |_| Ok::<_, DocumentError>(()))
        .unwrap();
    write_atomic(&output, b"second\n").unwrap();
    assert_eq!(dir_names(store.cron_dir()), [".jobs.lock", "jobs.json"]);
    assert!(
        young.exists(),
        "a young temp of an unlocked write is left alone"
    );
}

#[test]
fn concurrent_updates_never_lose_a_record() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(store_in(&tmp));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    store
                        .update("t", |doc| {
                            doc.jobs.push(rec(json!({"id": format!("{t}-{i}")})));
                            Ok::<_, DocumentError>(())
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let doc = store.load().unwrap();
    assert_eq!(doc.jobs.len(), 400);
    let mut ids: Vec<&str> = doc.jobs.iter().filter_map(|j| j["id"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 400);
}

fn ids<'a>(list: &[&'a str]) -> std::collections::HashSet<&'a str> {
    list.iter().copied().collect()
}

fn mark(records: &mut [Record]) -> Result<usize, DocumentError> {
    for record in records.iter_mut() {
        record.insert("touched".into(), json!(true));
    }
    Ok(records.len())
}

#[test]
fn update_records_changes_the_chosen_and_keeps_the_others_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let original = "{\"jobs\": [{\"id\": \"a\", \"n\": 2.50, \"s\": \"caf\\u00e9\"},\n {\"id\": \"b\"}, {\"id\": \"a\"}, {\"x\": 1}],\n \"updated_at\": \"old\", \"z_extra\": [1, 2.0]}";
    write_raw(&store, original.as_bytes());
    let changed = store
        .update_records("new", &ids(&["a", "zzz"]), mark)
        .unwrap();
    assert_eq!(changed, 2, "both records with id a, in file order");
    let text = fs::read_to_string(store.jobs_path()).unwrap();
    // Untouched records keep their exact text (number spelling, escapes, spacing).
    assert!(text.contains("{\"id\": \"b\"}"), "{text}");
    assert!(text.contains("{\"x\": 1}"), "{text}");
    assert!(text.contains("[1, 2.0]"), "{text}");
    let doc = parse(&text).unwrap();
    let touched: Vec<bool> = doc.jobs.iter().map(|j| j.contains_key("touched")).collect();
    assert_eq!(touched, [true, false, true, false]);
    assert_eq!(doc.jobs[0]["s"], json!("café"));
    assert_eq!(doc.updated_at.as_deref(), Some("new"));
    assert_eq!(doc.extra.keys().collect::<Vec<_>>(), ["z_extra"]);
    assert!(text.ends_with("}\n"));
}

#[test]
fn update_records_repairs_other_shapes_through_the_whole_document() {
    for original in [
        "[{\"id\": \"a\"}, {\"id\": \"b\"}]",
        "\u{feff}{\"jobs\": [{\"id\": \"a\"}, {\"id\": \"b\"}]}",
        "{\"jobs\": {\"a\": {}, \"b\": {\"id\": \"b\"}}}",
        "{\"jobs\": [{\"id\": \"a\", \"p\": \"line\nbreak\"}, {\"id\": \"b\"}]}",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(&dir);
        write_raw(&store, original.as_bytes());
        let changed = store.update_records("now", &ids(&["a"]), mark).unwrap();
        assert_eq!(changed, 1, "{original:?}");
        let bytes = fs::read(store.jobs_path()).unwrap();
        let doc = parse_document(&bytes, &store.jobs_path()).unwrap();
        assert!(!doc.repaired, "rewritten canonical: {original:?}");
        assert_eq!(doc.jobs.len(), 2);
        assert_eq!(doc.jobs[0]["id"], json!("a"));
        assert_eq!(doc.jobs[0]["touched"], json!(true), "{original:?}");
        assert!(!doc.jobs[1].contains_key("touched"));
    }
}

#[test]
fn update_records_leaves_an_unreadable_store_and_an_erring_change_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let broken = b"{\"jobs\": [{\"id\": \"a\"} {\"id\": \"b\"}]}";
    write_raw(&store, broken);
    let err = store.update_records("now", &ids(&["a"]), mark).unwrap_err();
    assert!(matches!(err, DocumentError::Unreadable { .. }), "{err}");
    assert_eq!(fs::read(store.jobs_path()).unwrap(), broken);

    let fine = b"{\"jobs\": [{\"id\": \"a\"}]}";
    write_raw(&store, fine);
    let result: Result<(), DocumentError> = store.update_records("now", &ids(&["a"]), |_| {
        Err(DocumentError::Unreadable {
            path: PathBuf::new(),
            line: None,
            column: None,
            reason: "no".into(),
        })
    });
    assert!(result.is_err());
    assert_eq!(fs::read(store.jobs_path()).unwrap(), fine);
}

#[test]
fn one_job_read_alone_is_what_the_whole_document_reads() {
    let text = "{\"jobs\": [{\"id\": \"a\", \"st\\u0061te\": \"paused\", \"x\": {\"y\": [1]}, \"id\": \"b\"}, {\"next_run_at\": null}], \"k\": 1}";
    let path = Path::new("/h/cron/jobs.json");
    let texts = JobsText::new(text.as_bytes(), path).job_texts().unwrap();
    let whole = parse_document(text.as_bytes(), path).unwrap();
    let kept = parse_document_keeping(text.as_bytes(), path, Some(&["id", "state"])).unwrap();
    for (i, job) in texts.iter().enumerate() {
        assert_eq!(record_keeping(job, None).unwrap(), whole.jobs[i]);
        assert_eq!(
            record_keeping(job, Some(&["id", "state"])).unwrap(),
            kept.jobs[i]
        );
    }
    let keys = ["state", "id", "missing"];
    let picked = pick_job_fields(text.as_bytes(), &keys).unwrap();
    let picked_records: Vec<Record> = picked
        .jobs()
        .map(|values| picked.record(values).unwrap())
        .collect();
    let kept = parse_document_keeping(text.as_bytes(), path, Some(&keys)).unwrap();
    assert_eq!(picked_records, kept.jobs);
    assert_eq!(
        whole.jobs[0].get("id"),
        Some(&json!("b")),
        "a later duplicate wins"
    );
    for not_canonical in [
        "\u{feff}{\"jobs\": []}",
        "[{\"id\": \"a\"}]",
        "{\"jobs\": {\"a\": {}}}",
        "{\"jobs\": [1]}",
        "{\"jobs\": [{\"p\": \"a\nb\"}]}",
        "{\"jobs\": [{}] x",
        "{\"updated_at\": \"u\"}",
        "{\"jobs\": null}",
    ] {
        assert!(
            JobsText::new(not_canonical.as_bytes(), path)
                .job_texts()
                .is_none(),
            "{not_canonical}"
        );
        assert!(
            pick_job_fields(not_canonical.as_bytes(), &["id"]).is_none(),
            "{not_canonical}"
        );
    }
}

#[test]
fn the_kept_keys_view_reads_what_the_full_parse_reads() {
    let text = "{\"jobs\": [{\"id\": \"a\", \"prompt\": \"long\", \"next_run_at\": \"t\", \"x\": {\"y\": [1]}}], \"updated_at\": \"u\", \"k\": 1}";
    let path = Path::new("/h/cron/jobs.json");
    let view = parse_document_keeping(text.as_bytes(), path, Some(&["id", "next_run_at"])).unwrap();
    assert_eq!(view.jobs, [rec(json!({"id": "a", "next_run_at": "t"}))]);
    for bad in [
        "{\"jobs\": [1]}",
        "{\"jobs\": \"x\"}",
        "\"x\"",
        "{\"jobs\": [{\"id\": \"a\"} {}]}",
    ] {
        let full = parse(bad).unwrap_err().to_string();
        let kept = parse_document_keeping(bad.as_bytes(), path, Some(&["id"]))
            .unwrap_err()
            .to_string();
        assert_eq!(full, kept, "{bad}");
    }
    let repaired =
        parse_document_keeping(b"[{\"id\": \"a\", \"p\": \"a\nb\"}]", path, Some(&["id"])).unwrap();
    assert!(repaired.repaired);
    assert_eq!(repaired.jobs, [rec(json!({"id": "a"}))]);
}

#[test]
fn the_stored_jobs_a_change_rewrites_around_have_the_ids_the_whole_document_reads() {
    let path = Path::new("/h/cron/jobs.json");
    let text = "{\"jobs\": [{\"id\": \"a\", \"x\": 1}, {\"\\u0069d\": \"b\"}, {\"id\": 7}, {}], \"updated_at\": \"u\", \"k\": [1]}";
    let stored = JobsText::new(text.as_bytes(), path).stored().unwrap();
    let ids: Vec<Option<&str>> = stored.jobs.iter().map(|job| job.id.as_deref()).collect();
    assert_eq!(ids, [Some("a"), Some("b"), None, None]);
    assert_eq!(stored.jobs[0].text, "{\"id\": \"a\", \"x\": 1}");
    assert_eq!(stored.extra, [("k", "[1]")]);
    // Two ids in one job: which one counts is the whole-document reader's to say.
    let twice = "{\"jobs\": [{\"id\": \"a\", \"id\": \"b\"}]}";
    assert!(JobsText::new(twice.as_bytes(), path).stored().is_none());
}
