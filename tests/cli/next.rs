//! `hermes cron next`: fire times in real zones, DST included (docs/SCHEDULES.md, "DST rules"; docs/COMMANDS.md, "next").

use serde_json::{json, Value};

use crate::support::Hermes;

/// `hermes cron next <schedule> --tz <zone> --from <from> -n <n>`; must succeed.
#[track_caller]
fn next(schedule: &str, zone: &str, from: &str, n: usize) -> String {
    let hermes = Hermes::new();
    let count = n.to_string();
    let run = hermes.cron(&["next", schedule, "--tz", zone, "--from", from, "-n", &count]);
    let stdout = run.ok().to_string();
    assert!(
        hermes.store_bytes().is_none(),
        "next must not write a store"
    );
    stdout
}

fn lines(fires: &[&str]) -> String {
    fires.iter().map(|f| format!("{f}\n")).collect()
}

#[test]
fn next_runs_a_time_in_the_skipped_spring_hour_once_right_after_the_gap() {
    let out = next(
        "30 2 * * *",
        "America/New_York",
        "2026-03-07T12:00:00-05:00",
        2,
    );
    assert_eq!(
        out,
        "2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n"
    );
}

#[test]
fn next_json_prints_the_stored_schedule_the_zone_and_the_fires() {
    let hermes = Hermes::new();
    let run = hermes.cron(&[
        "next",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-03-07T12:00:00-05:00",
        "-n",
        "2",
        "--json",
    ]);
    let out: Value = serde_json::from_str(run.ok()).expect("next --json prints only JSON");
    assert_eq!(
        out,
        json!({
            "schedule": {"kind": "cron", "expr": "30 2 * * *", "display": "30 2 * * *"},
            "timezone": "America/New_York",
            "next": ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        })
    );
}

#[test]
fn next_keeps_0900_local_across_the_spring_change() {
    let out = next(
        "0 9 * * *",
        "America/New_York",
        "2026-03-07T12:00:00-05:00",
        2,
    );
    assert_eq!(
        out,
        "2026-03-08T09:00:00-04:00\n2026-03-09T09:00:00-04:00\n"
    );
}

#[test]
fn next_every_30_minutes_fires_through_both_passes_of_the_repeated_autumn_hour() {
    let out = next(
        "*/30 * * * *",
        "America/New_York",
        "2026-11-01T00:45:00-04:00",
        5,
    );
    assert_eq!(
        out,
        lines(&[
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:00:00-05:00",
        ])
    );
}

#[test]
fn next_fixed_time_in_the_repeated_autumn_hour_fires_once() {
    let out = next(
        "30 1 * * *",
        "America/New_York",
        "2026-10-31T12:00:00-04:00",
        2,
    );
    assert_eq!(
        out,
        "2026-11-01T01:30:00-04:00\n2026-11-02T01:30:00-05:00\n"
    );
}

#[test]
fn next_in_lord_howe_follows_its_half_hour_dst_shift() {
    // Autumn: 02:00 (+11:00) goes back to 01:30 (+10:30); 01:30–02:00 happens twice.
    assert_eq!(
        next(
            "30 1 * * *",
            "Australia/Lord_Howe",
            "2026-04-04T12:00:00+11:00",
            2
        ),
        "2026-04-05T01:30:00+11:00\n2026-04-06T01:30:00+10:30\n"
    );
    assert_eq!(
        next(
            "*/30 * * * *",
            "Australia/Lord_Howe",
            "2026-04-05T01:00:00+11:00",
            3
        ),
        lines(&[
            "2026-04-05T01:30:00+11:00",
            "2026-04-05T01:30:00+10:30",
            "2026-04-05T02:00:00+10:30",
        ])
    );
    // Spring: 02:00 (+10:30) jumps to 02:30 (+11:00); a 02:00 job runs right after the gap.
    assert_eq!(
        next(
            "0 2 * * *",
            "Australia/Lord_Howe",
            "2026-10-03T12:00:00+10:30",
            2
        ),
        "2026-10-04T02:30:00+11:00\n2026-10-05T02:00:00+11:00\n"
    );
}

#[test]
fn next_in_berlin_skips_and_repeats_the_0230_hour_correctly() {
    assert_eq!(
        next(
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-28T12:00:00+01:00",
            2
        ),
        "2026-03-29T03:00:00+02:00\n2026-03-30T02:30:00+02:00\n"
    );
    assert_eq!(
        next(
            "30 2 * * *",
            "Europe/Berlin",
            "2026-10-24T12:00:00+02:00",
            2
        ),
        "2026-10-25T02:30:00+02:00\n2026-10-26T02:30:00+01:00\n"
    );
}

#[test]
fn next_in_kolkata_uses_its_half_hour_offset_all_year() {
    // 00:00Z is 05:30 in Kolkata, so 09:00 the same day comes first.
    assert_eq!(
        next("0 9 * * *", "Asia/Kolkata", "2026-03-07T00:00:00Z", 2),
        "2026-03-07T09:00:00+05:30\n2026-03-08T09:00:00+05:30\n"
    );
    assert_eq!(
        next("0 9 * * *", "Asia/Kolkata", "2026-10-31T00:00:00Z", 2),
        "2026-10-31T09:00:00+05:30\n2026-11-01T09:00:00+05:30\n"
    );
}

#[test]
fn next_in_chatham_follows_its_quarter_hour_offsets() {
    // Autumn: 03:45 (+13:45) goes back to 02:45 (+12:45); 03:00 happens twice, runs once.
    assert_eq!(
        next(
            "0 3 * * *",
            "Pacific/Chatham",
            "2026-04-04T12:00:00+13:45",
            2
        ),
        "2026-04-05T03:00:00+13:45\n2026-04-06T03:00:00+12:45\n"
    );
    // Spring: 02:45 (+12:45) jumps to 03:45 (+13:45); 03:00 runs right after the gap.
    assert_eq!(
        next(
            "0 3 * * *",
            "Pacific/Chatham",
            "2026-09-26T12:00:00+12:45",
            2
        ),
        "2026-09-27T03:45:00+13:45\n2026-09-28T03:00:00+13:45\n"
    );
}

#[test]
fn next_feb_29_fires_only_in_leap_years() {
    assert_eq!(
        next("0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z", 2),
        "2028-02-29T00:00:00+00:00\n2032-02-29T00:00:00+00:00\n"
    );
}

#[test]
fn next_day_of_month_and_day_of_week_match_either() {
    // April 2026: the 13th is a Monday; the Fridays are the 3rd, 10th, 17th and 24th.
    assert_eq!(
        next("0 0 13 * 5", "UTC", "2026-04-01T00:00:00Z", 5),
        lines(&[
            "2026-04-03T00:00:00+00:00",
            "2026-04-10T00:00:00+00:00",
            "2026-04-13T00:00:00+00:00",
            "2026-04-17T00:00:00+00:00",
            "2026-04-24T00:00:00+00:00",
        ])
    );
}

#[test]
fn next_defaults_to_five_fires_after_now_in_the_configured_zone() {
    let hermes = Hermes::in_zone("America/New_York");
    let run = hermes.cron(&["next", "every 2h"]);
    assert_eq!(
        run.ok(),
        lines(&[
            "2026-03-01T07:00:00-05:00",
            "2026-03-01T09:00:00-05:00",
            "2026-03-01T11:00:00-05:00",
            "2026-03-01T13:00:00-05:00",
            "2026-03-01T15:00:00-05:00",
        ])
    );
}

#[test]
fn next_refuses_an_invalid_schedule_with_the_message_add_gives() {
    let hermes = Hermes::new();
    for input in ["x", "every monday", "0 9 * * * *", "61 * * * *"] {
        let from_next = hermes.cron(&["next", input]);
        let from_add = hermes.cron(&["add", input, "p"]);
        assert_eq!(
            from_next.user_error(),
            from_add.user_error(),
            "'{input}': next and add disagree"
        );
    }
    assert!(hermes.cron(&["next", "x"]).stderr.contains("Use: '30m'"));
    assert!(hermes
        .cron(&["next", "0 0 * 13 *"])
        .stderr
        .contains("Invalid cron expression '0 0 * 13 *': the month field allows 1-12, not 13."));
    assert!(hermes.store_bytes().is_none());
}

#[test]
fn next_json_shows_the_stored_form_of_each_accepted_schedule() {
    let hermes = Hermes::new();
    let cases: &[(&str, Value)] = &[
        (
            "Monday, Wednesday at 9am",
            json!({"kind": "cron", "expr": "0 9 * * 1,3", "display": "Monday, Wednesday at 9am"}),
        ),
        (
            "every weekend at 10am",
            json!({"kind": "cron", "expr": "0 10 * * 0,6", "display": "every weekend at 10am"}),
        ),
        (
            "daily at 14:30",
            json!({"kind": "cron", "expr": "30 14 * * *", "display": "daily at 14:30"}),
        ),
        (
            "every day at noon",
            json!({"kind": "cron", "expr": "0 12 * * *", "display": "every day at noon"}),
        ),
        (
            "@hourly",
            json!({"kind": "cron", "expr": "0 * * * *", "display": "@hourly"}),
        ),
        (
            "@weekly",
            json!({"kind": "cron", "expr": "0 0 * * 0", "display": "@weekly"}),
        ),
        (
            "@monthly",
            json!({"kind": "cron", "expr": "0 0 1 * *", "display": "@monthly"}),
        ),
        (
            "@yearly",
            json!({"kind": "cron", "expr": "0 0 1 1 *", "display": "@yearly"}),
        ),
        (
            "*/15 * * * *",
            json!({"kind": "cron", "expr": "*/15 * * * *", "display": "*/15 * * * *"}),
        ),
        (
            "every 2h",
            json!({"kind": "interval", "minutes": 120, "display": "every 120m"}),
        ),
        (
            "Every 1 Day",
            json!({"kind": "interval", "minutes": 1440, "display": "every 1440m"}),
        ),
        (
            "in 45m",
            json!({"kind": "once", "run_at": "2026-03-01T10:45:00+00:00", "display": "once in 45m"}),
        ),
        (
            "2026-03-02T14:00:00+05:30",
            json!({"kind": "once", "run_at": "2026-03-02T14:00:00+05:30", "display": "once at 2026-03-02 14:00"}),
        ),
    ];
    for (input, want) in cases {
        let run = hermes.cron(&["next", input, "--json", "-n", "1"]);
        let out: Value = serde_json::from_str(run.ok()).expect("next --json prints JSON");
        assert_eq!(&out["schedule"], want, "stored form of '{input}'");
        assert_eq!(out["timezone"], "UTC");
    }
}
