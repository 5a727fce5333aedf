//! `hermes cron backfill JOB --from ISO --to ISO [--dry-run]`: runs each occurrence of
//! the job's schedule in a past window once, oldest first (docs/COMMANDS.md, "backfill").

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use jobs::ledger::{occurrence_key, RunStatus};
use jobs::Job;
use schedules::{format_instant, parse_user_timestamp};

use super::error::CliError;
use super::scheduler_cmd::{print_report, scheduler_for};
use super::Session;
use crate::scheduler::{BackfillOccurrence, Backfilled};

/// The most occurrences one backfill runs: a window that holds more is refused.
pub const MAX_OCCURRENCES: usize = 1000;

/// The occurrences of `job` from `from` to `to` (both included), oldest first, each
/// with the instant of its ledger key (moved by the job's jitter, as the scheduler
/// fires it). Refuses a window in the future, a reversed one, and one too long.
pub fn plan(
    job: &Job,
    from: &str,
    to: &str,
    ctx: &jobs::Context,
) -> Result<Vec<BackfillOccurrence>, CliError> {
    let zone = job.zone(ctx);
    let read = |flag: &str, text: &str| -> Result<DateTime<Utc>, CliError> {
        parse_user_timestamp(text, zone)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                CliError::user(format!(
                    "Invalid {flag} '{text}': give an ISO-8601 date and time such as 2026-03-01T09:00:00+01:00 (without an offset it is read in the job's time zone)"
                ))
            })
    };
    let (from, to) = (read("--from", from)?, read("--to", to)?);
    if from > to {
        return Err(CliError::user(format!(
            "--from ({}) is after --to ({}): give the window's start first",
            format_instant(from, zone),
            format_instant(to, zone)
        )));
    }
    if to > ctx.now {
        return Err(CliError::user(format!(
            "--to ({}) is in the future: a backfill runs past occurrences only; give --to at or before now ({})",
            format_instant(to, zone),
            format_instant(ctx.now, zone)
        )));
    }
    let schedule = job
        .schedule(ctx)
        .map_err(|e| CliError::user(format!("Job {} has no readable schedule: {e}", job.id())))?;
    let window = job.run_window(ctx);
    let found = window
        .occurrences(&schedule, from, to, zone, MAX_OCCURRENCES)
        .ok_or_else(|| {
            CliError::user(format!(
                "The window holds more than {MAX_OCCURRENCES} occurrences of '{}': give a shorter window (backfill it in parts)",
                schedule.display()
            ))
        })?;
    Ok(found
        .into_iter()
        .map(|occurrence| BackfillOccurrence {
            occurrence,
            key_at: occurrence + window.offset(&schedule, occurrence, zone),
        })
        .collect())
}

pub async fn backfill(
    session: Session,
    reference: &str,
    from: &str,
    to: &str,
    dry_run: bool,
) -> Result<(), CliError> {
    let found = session.service().find(reference).await?;
    let (job, ctx) = (found.job, found.ctx);
    let occurrences = plan(&job, from, to, &ctx)?;
    let zone = job.zone(&ctx);
    let label = format!("{} ({})", job.name(), job.id());
    if occurrences.is_empty() {
        say!("No occurrence of {label} in that window: nothing to run.");
        return Ok(());
    }
    if dry_run {
        let done: HashSet<String> = session
            .store
            .recent_runs(Some(job.id()), MAX_OCCURRENCES * 2)
            .await?
            .into_iter()
            .map(|row| row.occurrence)
            .collect();
        say!(
            "Would run {} occurrence(s) of {label}, oldest first (dry run: nothing runs):",
            occurrences.len()
        );
        for at in &occurrences {
            let ran = done.contains(&occurrence_key(job.id(), at.key_at));
            say!(
                "  {}{}",
                format_instant(at.occurrence, zone),
                if ran { "  (already run: skipped)" } else { "" }
            );
        }
        return Ok(());
    }
    let scheduler = scheduler_for(&session, None)?;
    let (_, settings) = scheduler.context()?;
    let outcomes = scheduler
        .backfill(&job, &occurrences, settings.max_parallel)
        .await?;
    let (mut ran, mut skipped, mut failed) = (0, 0, 0);
    for outcome in &outcomes {
        match outcome {
            Backfilled::Ran(report) => {
                ran += 1;
                if report.status != RunStatus::Ok {
                    failed += 1;
                }
                print_report(report);
            }
            Backfilled::AlreadyRun(at) => {
                skipped += 1;
                say!(
                    "{} {}: already run; not run again",
                    format_instant(at.occurrence, zone),
                    job.name()
                );
            }
        }
    }
    say!("Backfill of {label}: {ran} run, {skipped} already run before.");
    match failed {
        0 => Ok(()),
        n => Err(CliError::user(format!(
            "{n} of the {ran} backfill runs of {} failed (above)",
            job.id()
        ))),
    }
}
