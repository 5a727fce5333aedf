//! The fast subset of the croniter differential check (`scripts/croniter/diff.sh`),
//! without Python: ~2,000 random (expression, instant, zone) triples with croniter's
//! answers, written by `scripts/croniter/make_subset.sh`.
//!
//! Where croniter and we agree, we must still give croniter's answer. Where they differ
//! by a documented Vixie DST rule (the row carries a `class`), we must give the answer
//! that rule (docs/SCHEDULES.md, "DST rules"; `schedules::DstRule`) gives, recorded in `vixie`.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use schedules::CronExpr;
use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/croniter/subset.jsonl"
);

fn instant(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("bad instant {text}: {e}"))
        .with_timezone(&Utc)
}

/// A string field of a fixture row, `None` for JSON null or a missing key.
fn text<'a>(row: &'a Value, name: &str) -> Option<&'a str> {
    row.get(name).and_then(Value::as_str)
}

#[test]
fn next_fire_matches_croniter_or_the_documented_vixie_dst_rule() {
    let fixture = std::fs::read_to_string(FIXTURE)
        .unwrap_or_else(|e| panic!("{FIXTURE}: {e}; run scripts/croniter/make_subset.sh"));
    let (mut agreed, mut documented) = (0, 0);
    let mut failures = Vec::new();
    for (n, line) in fixture.lines().enumerate() {
        let row: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let expr = text(&row, "expr").expect("expr");
        let zone: Tz = text(&row, "zone")
            .expect("zone")
            .parse()
            .expect("zone name");
        let after = instant(text(&row, "after").expect("after"));
        let ours = CronExpr::parse(expr)
            .unwrap_or_else(|e| panic!("line {}: {e}", n + 1))
            .next_after(after, zone)
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true));
        let croniter = text(&row, "croniter");
        let (expected, what) = match text(&row, "class") {
            None => {
                agreed += 1;
                (croniter, "croniter".to_string())
            }
            Some(class) => {
                documented += 1;
                assert!(
                    class.starts_with("DST/"),
                    "line {}: only documented DST classes belong in the fixture: {class}",
                    n + 1
                );
                (text(&row, "vixie"), format!("the Vixie rule ({class})"))
            }
        };
        if ours.as_deref() != expected {
            failures.push(format!(
                "line {}: `{expr}` in {zone} after {after}: ours {ours:?}, {what} {expected:?}, croniter {croniter:?}",
                n + 1
            ));
        }
    }
    assert!(
        agreed + documented >= 1_000,
        "fixture too small: {agreed} + {documented} rows"
    );
    assert!(documented > 0, "fixture has no DST-class rows");
    assert!(
        failures.is_empty(),
        "{} of {} rows differ:\n{}",
        failures.len(),
        agreed + documented,
        failures.join("\n")
    );
}
