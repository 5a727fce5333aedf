//! Our side of the croniter differential check and ratio bench (`scripts/croniter/`).
//!
//! `croniter_diff next` reads one JSON object per line on stdin, `{"expr", "zone",
//! "after"}` (`after` an RFC 3339 instant), and writes one line per input, in order:
//! `{"next": "<RFC 3339 UTC>" | null, "offset": <zone's UTC offset at `after`, seconds>}`
//! or `{"error": "..."}` (the offset lets the script tell a tz-database mismatch between
//! chrono-tz and Python's zoneinfo from an engine difference). `croniter_diff bench`
//! reads `{"expr", "zone", "afters": [...], "iterations": N}` lines and prints, per
//! line, the nanoseconds per `next_after` call, timing only the calls (the expression
//! is parsed once, outside the timed loop). It never reads the clock except to time.

use std::hint::black_box;
use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

use chrono::{DateTime, Offset, SecondsFormat, Utc};
use chrono_tz::Tz;
use schedules::CronExpr;
use serde_json::{json, Value};

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let result = match mode.as_str() {
        "next" => next_fires(),
        "bench" => bench(),
        _ => Err("usage: croniter_diff next|bench  (JSON lines on stdin)".to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("croniter_diff: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A string field of a JSON line, or an error naming it.
fn field<'a>(line: &'a Value, name: &str) -> Result<&'a str, String> {
    line.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string field '{name}' in {line}"))
}

fn instant(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("bad instant '{text}': {e}"))
}

fn zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|e| format!("bad zone '{name}': {e}"))
}

/// The first fire strictly after `after`, as one output line.
fn answer(line: &Value) -> Result<Value, String> {
    let zone = zone(field(line, "zone")?)?;
    let after = instant(field(line, "after")?)?;
    let offset = after.with_timezone(&zone).offset().fix().local_minus_utc();
    Ok(match CronExpr::parse(field(line, "expr")?) {
        Err(e) => json!({ "error": e.to_string(), "offset": offset }),
        Ok(cron) => json!({
            "next": cron
                .next_after(after, zone)
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            "offset": offset,
        }),
    })
}

fn next_fires() -> Result<(), String> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
        writeln!(out, "{}", answer(&parsed)?).map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

fn bench() -> Result<(), String> {
    for line in io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
        let expr = field(&case, "expr")?;
        let zone = zone(field(&case, "zone")?)?;
        let cron = CronExpr::parse(expr).map_err(|e| e.to_string())?;
        let afters = case
            .get("afters")
            .and_then(Value::as_array)
            .ok_or("missing 'afters'")?
            .iter()
            .map(|v| instant(v.as_str().unwrap_or_default()))
            .collect::<Result<Vec<_>, _>>()?;
        let iterations = case
            .get("iterations")
            .and_then(Value::as_u64)
            .ok_or("missing 'iterations'")?;
        if afters.is_empty() {
            return Err("empty 'afters'".into());
        }
        // Warm-up: one pass over the instants (caches, branch predictors).
        for &after in &afters {
            black_box(cron.next_after(black_box(after), zone));
        }
        let started = Instant::now();
        for i in 0..iterations {
            let after = afters[(i as usize) % afters.len()];
            black_box(cron.next_after(black_box(after), zone));
        }
        let elapsed = started.elapsed();
        let ns_per_op = elapsed.as_nanos() as f64 / iterations as f64;
        println!(
            "{}",
            json!({ "expr": expr, "zone": zone.name(), "iterations": iterations, "ns_per_op": ns_per_op })
        );
    }
    Ok(())
}
