//! The `cronjob` tool and the field table ([`jobs::field_table::FIELDS`]) agree: every
//! job field users set is an argument of the tool under its own key, or is set another
//! way, named here with the reason; and every argument of the tool is a field or one of
//! the tool's own.

use jobs::field_table::{Set, FIELDS};

use super::schema::input_schema;

/// Fields users set that the tool sets under another name, or not at all, and why.
const SET_OTHERWISE: &[(&str, &str)] = &[
    ("skill", "the mirror of skills[0]: skills sets both"),
    (
        "model",
        "a job's model is its owner's to choose: pinned pins the configured one",
    ),
    ("provider", "as model"),
    (
        "reasoning_effort",
        "its owner's to choose, as the model (Hermes 0.22's tool has none)",
    ),
    (
        "interpreter",
        "a program on the host, its owner's to choose (Hermes 0.22's tool has none)",
    ),
    ("monitor_script", "monitor: a script path"),
    ("monitor_url", "monitor: an http(s) URL"),
    ("enabled", "the pause and resume actions"),
    (
        "paused_at",
        "paused on create, then the pause and resume actions",
    ),
];

/// Arguments that are no job field: what the call does and on what.
const OWN_ARGUMENTS: &[&str] = &[
    "action",
    "job_id",
    "run_id",
    "to",
    "reason",
    "include_disabled",
    "pinned",
    "monitor",
    "continuity",
    "paused",
];

fn arguments() -> Vec<String> {
    input_schema()
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_field_users_set_is_an_argument_of_the_tool_or_says_how_it_is_set() {
    let arguments = arguments();
    let missing: Vec<&str> = FIELDS
        .iter()
        .filter(|field| !matches!(field.set, Set::Internal))
        .map(|field| field.key)
        .filter(|key| !arguments.iter().any(|a| a == key))
        .filter(|key| !SET_OTHERWISE.iter().any(|(k, _)| k == key))
        .collect();
    assert!(
        missing.is_empty(),
        "fields the cronjob tool cannot set: {missing:?}"
    );
    // A field named here as set otherwise is not an argument after all.
    for (key, _) in SET_OTHERWISE {
        assert!(
            !arguments.iter().any(|a| a == key),
            "{key} is an argument of the tool now: remove it from SET_OTHERWISE"
        );
    }
}

#[test]
fn every_argument_of_the_tool_is_a_field_or_its_own() {
    let stray: Vec<String> = arguments()
        .into_iter()
        .filter(|a| !FIELDS.iter().any(|f| f.key == a) && !OWN_ARGUMENTS.contains(&a.as_str()))
        .collect();
    assert!(stray.is_empty(), "arguments that name no field: {stray:?}");
}
