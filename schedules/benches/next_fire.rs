//! How long one next-fire computation (`CronExpr::next_after`, `Schedule::next_run`) and
//! one schedule parse (`parse_schedule`, `CronExpr::parse`) take, measured by criterion.
//!
//! `cargo bench -p schedules --bench next_fire` prints each case's time per call and its
//! calls per second (`thrpt`, one element = one call) and keeps criterion's history under
//! `target/criterion/` so the next run reports the change. Run any other way (`cargo test
//! --benches`) each case runs once, as a smoke test. A regex after `--` picks cases by
//! id: `cargo bench -p schedules --bench next_fire -- 'New_York|parse'`.
//!
//! Case ids are `next_fire/<starts>/<expression> <zone>` and `parse/<function>/<input>`;
//! `<starts>` is `chained` (each fire feeds the next call, as a scheduler walking forward
//! does), `spread_2026` (1,024 starts spread over 2026, as `list`, `add` and a restarting
//! scheduler do) or `ny_dst_days` (starts on New York's two 2026 change days ±1 day).

use std::hint::black_box;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::{America::New_York, Tz, UTC};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedules::{parse_schedule, CronExpr, Schedule};

fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .expect("bench instants are valid RFC 3339")
        .with_timezone(&Utc)
}

/// `count` instants spread pseudo-randomly (fixed seed, whole seconds) over
/// `[from, from + span)`, so the starts fall anywhere in a minute, hour and day.
fn spread(from: DateTime<Utc>, span: TimeDelta, count: usize) -> Vec<DateTime<Utc>> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let seconds = span.num_seconds() as u64;
    (0..count)
        .map(|_| {
            // splitmix64: enough spread for start instants, no dependency needed.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            from + TimeDelta::seconds((z % seconds) as i64)
        })
        .collect()
}

/// Each call starts from the previous fire. The walk restarts from `from` after 40 years
/// so rare expressions (Feb 29) stay in realistic years.
fn chained(
    next: impl Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    from: DateTime<Utc>,
) -> impl FnMut() -> DateTime<Utc> {
    let horizon = from + TimeDelta::days(366 * 40);
    let mut t = from;
    move || {
        t = match next(black_box(t)) {
            Some(fire) if fire < horizon => fire,
            _ => from,
        };
        t
    }
}

/// Every call starts from the next instant of `starts`, cycling.
fn from_each<'a>(
    next: impl Fn(DateTime<Utc>) -> Option<DateTime<Utc>> + 'a,
    starts: &'a [DateTime<Utc>],
) -> impl FnMut() -> Option<DateTime<Utc>> + 'a {
    let mut i = 0;
    move || {
        let fire = next(black_box(starts[i % starts.len()]));
        i += 1;
        fire
    }
}

fn next_fire(c: &mut Criterion) {
    let from = at("2026-01-01T00:00:00Z");
    let year = spread(from, TimeDelta::days(365), 1024);
    // The two New York change days of 2026 (Mar 8 spring gap, Nov 1 repeated hour),
    // ±1 day, where next_after takes its gap and repeated-hour paths.
    let mut dst_days = spread(at("2026-03-07T05:00:00Z"), TimeDelta::days(2), 512);
    dst_days.extend(spread(at("2026-10-31T04:00:00Z"), TimeDelta::days(2), 512));

    let mut group = c.benchmark_group("next_fire");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));

    let cases: [(&str, Tz); 4] = [
        ("*/5 * * * *", UTC),
        ("0 9 * * 1-5", UTC),
        ("30 2 * * *", New_York),
        ("0 0 29 2 *", UTC),
    ];
    for (source, zone) in cases {
        let expr = CronExpr::parse(source).expect("bench expressions are valid");
        assert!(
            expr.next_after(from, zone).is_some(),
            "{source} must fire after {from}"
        );
        let case = format!("{source} {}", zone.name());
        let next = |t| expr.next_after(t, black_box(zone));
        group.bench_function(BenchmarkId::new("chained", &case), |b| {
            b.iter(chained(next, from))
        });
        group.bench_function(BenchmarkId::new("spread_2026", &case), |b| {
            b.iter(from_each(next, &year))
        });
        if zone == New_York {
            group.bench_function(BenchmarkId::new("ny_dst_days", &case), |b| {
                b.iter(from_each(next, &dst_days))
            });
        }
    }

    // An interval adds elapsed minutes to the last run: the floor under every cron figure.
    let every_2h = parse_schedule("every 2h", from, UTC, None).expect("a valid interval");
    assert!(matches!(every_2h, Schedule::Interval { minutes: 120, .. }));
    let next = |t| every_2h.next_run(t, Some(t), black_box(UTC));
    group.bench_function(BenchmarkId::new("chained", "every 2h UTC"), |b| {
        b.iter(chained(next, from))
    });
    group.bench_function(BenchmarkId::new("spread_2026", "every 2h UTC"), |b| {
        b.iter(from_each(next, &year))
    });
    group.finish();
}

fn parse(c: &mut Criterion) {
    let now = at("2026-11-22T12:00:00Z");
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    // One input per grammar form: interval, phrase, cron, one-shot delay, timestamp.
    for input in [
        "every 2h",
        "weekdays at 9am",
        "0 9 * * *",
        "30m",
        "2026-12-03T14:00",
    ] {
        parse_schedule(input, now, New_York, None).expect("bench schedules are valid");
        group.bench_with_input(
            BenchmarkId::new("parse_schedule", input),
            input,
            |b, input| b.iter(|| parse_schedule(black_box(input), now, black_box(New_York), None)),
        );
    }
    // What `hermes cron list` pays per cron job when it reads a stored expression.
    group.bench_with_input(
        BenchmarkId::new("CronExpr::parse", "0 9 * * *"),
        "0 9 * * *",
        |b, input| b.iter(|| CronExpr::parse(black_box(input))),
    );
    group.finish();
}

criterion_group!(benches, next_fire, parse);
criterion_main!(benches);
