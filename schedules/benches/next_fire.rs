//! How many next-fire computations (`CronExpr::next_after`) and schedule parses
//! (`parse_schedule`) one core does per second. It prints a table and stores nothing.
//!
//! A plain `harness = false` binary timed with `Instant`: criterion would double the
//! build time on a 2-core machine for figures we only read by eye. Under `cargo bench`
//! (which passes `--bench`) each case runs for 1.5 s after a 0.2 s warm-up; run any
//! other way (`cargo test --benches`) each case runs once, as a smoke test. Words after
//! `--` pick cases by name: `cargo bench -p schedules --bench next_fire -- '*/5' parse`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::{America::New_York, Tz, UTC};
use schedules::{parse_schedule, CronExpr};

/// How long each case warms up and is measured, and which cases run.
struct Bench {
    warm_up: Duration,
    measure: Duration,
    /// Words from the command line: only cases whose name contains one of them run.
    filters: Vec<String>,
    rows: Vec<Row>,
}

/// One line of the table.
struct Row {
    case: String,
    zone: &'static str,
    starts: &'static str,
    iterations: u64,
    elapsed: Duration,
}

impl Bench {
    fn from_args() -> Bench {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let measuring = args.iter().any(|a| a == "--bench");
        let (warm_up, measure) = if measuring {
            (Duration::from_millis(200), Duration::from_millis(1500))
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        Bench {
            warm_up,
            measure,
            filters: args.into_iter().filter(|a| !a.starts_with("--")).collect(),
            rows: Vec::new(),
        }
    }

    fn wanted(&self, case: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| case.contains(f.as_str()))
    }

    /// Runs `op` for the measuring time after the warm-up and adds a row, if wanted.
    ///
    /// Calls are timed in batches of about a millisecond so that reading the clock stays
    /// out of the figure even for operations of a few tens of nanoseconds.
    fn run(
        &mut self,
        case: String,
        zone: &'static str,
        starts: &'static str,
        mut op: impl FnMut(),
    ) {
        if !self.wanted(&case) {
            return;
        }
        let warm_start = Instant::now();
        let mut warm_calls: u64 = 0;
        while warm_start.elapsed() < self.warm_up {
            op();
            warm_calls += 1;
        }
        let batch = match warm_calls {
            0 => 1, // smoke run: no warm-up, a single call
            calls => (1_000_000 * calls / self.warm_up.as_nanos().max(1) as u64).max(1),
        };
        let start = Instant::now();
        let mut iterations = 0;
        let elapsed = loop {
            for _ in 0..batch {
                op();
            }
            iterations += batch;
            let elapsed = start.elapsed();
            if elapsed >= self.measure {
                break elapsed;
            }
        };
        self.rows.push(Row {
            case,
            zone,
            starts,
            iterations,
            elapsed,
        });
    }
}

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

/// Each fire feeds the next call, as a scheduler walking forward does. The walk restarts
/// from `from` after 40 years so rare expressions (Feb 29) stay in realistic years.
fn chained<'a>(expr: &'a CronExpr, zone: Tz, from: DateTime<Utc>) -> impl FnMut() + 'a {
    let horizon = from + TimeDelta::days(366 * 40);
    let mut t = from;
    move || {
        t = match expr.next_after(black_box(t), black_box(zone)) {
            Some(next) if next < horizon => next,
            _ => from,
        };
    }
}

/// Every call starts from a different instant (cycling through `starts`), as `list`,
/// `add` and a restarting scheduler do.
fn from_each<'a>(expr: &'a CronExpr, zone: Tz, starts: &'a [DateTime<Utc>]) -> impl FnMut() + 'a {
    let mut i = 0;
    move || {
        black_box(expr.next_after(black_box(starts[i % starts.len()]), black_box(zone)));
        i += 1;
    }
}

fn bench_next_after(bench: &mut Bench) {
    let from = at("2026-01-01T00:00:00Z");
    let year = spread(from, TimeDelta::days(365), 1024);
    // The two New York change days of 2026 (Mar 8 spring gap, Nov 1 repeated hour),
    // ±1 day, where next_after takes its gap and repeated-hour paths.
    let mut dst_days = spread(at("2026-03-07T05:00:00Z"), TimeDelta::days(2), 512);
    dst_days.extend(spread(at("2026-10-31T04:00:00Z"), TimeDelta::days(2), 512));

    let cases: [(&str, Tz, &'static str); 4] = [
        ("*/5 * * * *", UTC, "UTC"),
        ("0 9 * * 1-5", UTC, "UTC"),
        ("30 2 * * *", New_York, "America/New_York"),
        ("0 0 29 2 *", UTC, "UTC"),
    ];
    for (source, zone, zone_name) in cases {
        let expr = CronExpr::parse(source).expect("bench expressions are valid");
        assert!(
            expr.next_after(from, zone).is_some(),
            "{source} must fire after {from}"
        );
        let case = || format!("next_after  {source}");
        bench.run(case(), zone_name, "chained", chained(&expr, zone, from));
        bench.run(
            case(),
            zone_name,
            "spread over 2026",
            from_each(&expr, zone, &year),
        );
        if zone == New_York {
            bench.run(
                case(),
                zone_name,
                "NY DST change days",
                from_each(&expr, zone, &dst_days),
            );
        }
    }
}

fn bench_parse(bench: &mut Bench) {
    let now = at("2026-11-22T12:00:00Z");
    for input in ["every 2h", "weekdays at 9am", "0 9 * * *"] {
        parse_schedule(input, now, New_York, None).expect("bench schedules are valid");
        bench.run(
            format!("parse_schedule  \"{input}\""),
            "America/New_York",
            "-",
            || {
                black_box(parse_schedule(
                    black_box(input),
                    black_box(now),
                    black_box(New_York),
                    None,
                ))
                .ok();
            },
        );
    }
    // What `hermes cron list` pays per cron job when it reads a stored expression.
    bench.run(
        "CronExpr::parse  \"0 9 * * *\"".to_string(),
        "-",
        "-",
        || {
            black_box(CronExpr::parse(black_box("0 9 * * *"))).ok();
        },
    );
}

/// `1234567` → `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<36} {:<17} {:<19} {:>12} {:>10} {:>13}",
        "case", "zone", "starts", "iterations", "ns/op", "ops/s"
    );
    for row in rows {
        let ns_per_op = row.elapsed.as_nanos() as f64 / row.iterations as f64;
        let ops_per_s = row.iterations as f64 / row.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        println!(
            "{:<36} {:<17} {:<19} {:>12} {:>10.1} {:>13}",
            row.case,
            row.zone,
            row.starts,
            grouped(row.iterations),
            ns_per_op,
            grouped(ops_per_s as u64)
        );
    }
}

fn main() {
    let mut bench = Bench::from_args();
    if bench.measure.is_zero() {
        println!("next_fire: smoke run (one call per case); use `cargo bench` for figures");
    }
    bench_next_after(&mut bench);
    bench_parse(&mut bench);
    print_table(&bench.rows);
}
