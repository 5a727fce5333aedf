//! `hermes cron cost`: what the runs of a window spent, per job or per model, from the
//! ledger (docs/COMMANDS.md, "cost"). The costs are the ones recorded with each run; this
//! verb never prices anything again.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use jobs::caps::{parse_duration_seconds, usd_text};
use jobs::spend::{grouped, By, SpendLine};

use super::error::CliError;
use super::Session;
use crate::cli::CostBy;

/// The start of the window `--since` names: a duration back from now (`7d`, `12h`), an
/// ISO-8601 instant, or a date (its 00:00 UTC).
fn since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, CliError> {
    let text = text.trim();
    if let Some(seconds) = parse_duration_seconds(text) {
        let back = chrono::Duration::try_seconds(i64::try_from(seconds).unwrap_or(i64::MAX))
            .unwrap_or(chrono::Duration::MAX);
        return Ok(now
            .checked_sub_signed(back)
            .unwrap_or(DateTime::<Utc>::MIN_UTC));
    }
    if let Ok(instant) = DateTime::parse_from_rfc3339(text) {
        return Ok(instant.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if let Some(midnight) = date.and_hms_opt(0, 0, 0) {
            return Ok(Utc.from_utc_datetime(&midnight));
        }
    }
    Err(CliError::user(format!(
        "Invalid --since '{text}': give a duration back from now such as 7d or 12h, a date such as 2026-03-01, or an ISO-8601 instant"
    )))
}

/// Prints the spend since `--since`, per job or per model, the most expensive first.
pub async fn cost(
    session: &Session,
    since_text: &str,
    by: CostBy,
    json: bool,
) -> Result<(), CliError> {
    let now = session.ctx.now;
    let from = since(since_text, now)?;
    let by = match by {
        CostBy::Job => By::Job,
        CostBy::Model => By::Model,
    };
    let lines = grouped(&session.store.spend_since(from).await?, by);
    if json {
        say!(
            "{}",
            serde_json::to_string(&lines).unwrap_or_else(|_| "[]".into())
        );
        return Ok(());
    }
    if lines.is_empty() {
        say!(
            "No run used a model since {}.",
            from.format("%Y-%m-%d %H:%M UTC")
        );
        return Ok(());
    }
    let names: HashMap<String, String> = match by {
        By::Job => session
            .store
            .load_view(&session.ctx, &["id", "name"])
            .await?
            .iter()
            .map(|job| (job.id().to_string(), job.name().to_string()))
            .collect(),
        By::Model => HashMap::new(),
    };
    say!("Spend since {}:", from.format("%Y-%m-%d %H:%M UTC"));
    let header = match by {
        By::Job => "JOB",
        By::Model => "MODEL",
    };
    say!(
        "{header:<32}  {:>6}  {:>12}  {:>12}  COST",
        "RUNS",
        "PROMPT",
        "COMPLETION"
    );
    for line in &lines {
        say!("{}", row(&label(line, &names), line));
    }
    let total = SpendLine {
        job_id: None,
        model: None,
        runs: lines.iter().map(|l| l.runs).sum(),
        prompt_tokens: lines.iter().map(|l| l.prompt_tokens).sum(),
        completion_tokens: lines.iter().map(|l| l.completion_tokens).sum(),
        cost_usd: lines.iter().filter_map(|l| l.cost_usd).reduce(|a, b| a + b),
        unpriced_runs: lines.iter().map(|l| l.unpriced_runs).sum(),
    };
    say!("{}", row("total", &total));
    if total.unpriced_runs > 0 {
        say!(
            "{} run(s) used a model without a known price and count no cost: add it under pricing: in config.yaml",
            total.unpriced_runs
        );
    }
    Ok(())
}

/// A line's name: the job's id and name, or the model (`-` when none was recorded).
fn label(line: &SpendLine, names: &HashMap<String, String>) -> String {
    match (&line.job_id, &line.model) {
        (Some(id), _) => match names.get(id) {
            Some(name) => format!("{id} {}", shown(name, 19)),
            None => format!("{id} (removed)"),
        },
        (None, Some(Some(model))) => shown(model, 32),
        _ => "-".to_string(),
    }
}

/// A stored name as the terminal may show it: at most `max` characters, none of them a
/// control character (an escape sequence another program stored would reach it).
fn shown(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

fn row(label: &str, line: &SpendLine) -> String {
    let cost = match line.cost_usd {
        Some(usd) => usd_text(usd),
        None => "unknown".to_string(),
    };
    format!(
        "{:<32}  {:>6}  {:>12}  {:>12}  {cost}",
        label.chars().take(32).collect::<String>(),
        line.runs,
        line.prompt_tokens,
        line.completion_tokens,
    )
}
