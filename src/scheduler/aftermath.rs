//! Aftermath: what a finished run's outcome does beyond its own record, as Hermes 0.22
//! decides it — a fire that never reached the model is re-run at +5, +15 and +30
//! minutes (docs/AGENT.md, "Unreachable model"); a closed provider usage window parks
//! the job past it (docs/AGENT.md, "Quota hold"); a blocked configuration alerts once
//! (docs/AGENT.md, "The pre-run check"); and which failure notice, if any, is sent.
//! Decided from the job as the pass left it and applied to the stored job with the
//! run's record; a re-run instant is an ordinary `next_run_at`, so the pass claims it
//! once in the ledger like any occurrence. Manual runs never move the schedule.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use jobs::ledger::{RunSource, RunStatus};
use jobs::{Context, Job, JobState};
use schedules::Schedule;

use super::execute::ClaimedRun;
use super::settings::CronSettings;
use crate::runner::{Preflight, RunOutcome};

/// The re-runs of a fire that never reached the model, after the failed fire (Hermes
/// 0.22's ladder).
const RETRY_DELAYS: [Duration; 3] = [
    Duration::seconds(300),
    Duration::seconds(900),
    Duration::seconds(1800),
];
/// A held job resumes this long after the provider's window was said to close.
const HOLD_SLACK: Duration = Duration::seconds(60);

/// What the run does to the job's next run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Plan {
    /// A manual run: the schedule and its markers stay as they are.
    Keep,
    /// No re-run pending, no hold.
    Clear,
    /// Re-run number `attempt` at `at`, before the schedule's own next occurrence.
    Retry { attempt: u32, at: DateTime<Utc> },
    /// Hold the job's fires until `until`; `recovery_expr` when that instant is a
    /// recovery fire off the cron schedule's own instants.
    Hold {
        until: DateTime<Utc>,
        recovery_expr: Option<String>,
    },
}

/// What becomes of a failed run's notice.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Notice {
    /// The usual notice, made from the error.
    FromError,
    /// This text.
    Composed(String),
    /// Nothing is sent: a re-run is pending, the operator was told already.
    Withheld,
}

/// Everything a finished run's outcome decides besides its own fields.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Aftermath {
    pub plan: Plan,
    /// `preflight_alerted` after the run: set, removed, or (`None`) left alone.
    pub preflight_alerted: Option<bool>,
    /// The run's error as recorded, when it differs from the runner's
    /// (`[blocked_config] …`).
    pub error: Option<String>,
    /// `last_status` when it is not the usual one.
    pub status: Option<RunStatus>,
    pub notice: Notice,
}

impl Plan {
    /// Applies the plan to the stored job. A job paused or given another next run
    /// while this one ran keeps what it has; a re-run comes only before its next run.
    pub(super) fn apply(&self, stored: &mut Job, ctx: &Context, zone: Tz) {
        let runnable = stored.state() == JobState::Scheduled;
        let next = stored.next_run_at(ctx);
        match self {
            Plan::Keep => {}
            Plan::Retry { attempt, at } if runnable && next.is_some_and(|n| n > *at) => {
                stored.plan_unreachable_retry(*attempt, *at, zone);
                stored.set_quota_hold(None, zone);
            }
            Plan::Hold {
                until,
                recovery_expr,
            } if runnable && next.is_some() => {
                stored.end_unreachable_retry();
                stored.set_quota_hold(Some((*until, recovery_expr.as_deref())), zone);
            }
            _ => {
                stored.end_unreachable_retry();
                stored.set_quota_hold(None, zone);
            }
        }
    }
}

/// Decides a finished run's aftermath. `failed` is whether the run failed.
pub(super) fn decide(
    claimed: &ClaimedRun,
    outcome: &RunOutcome,
    failed: bool,
    ctx: &Context,
    settings: &CronSettings,
) -> Aftermath {
    let job = &claimed.job;
    let signals = &outcome.signals;
    let mut after = Aftermath {
        plan: Plan::Clear,
        preflight_alerted: (!failed).then_some(false),
        error: None,
        status: None,
        notice: match &signals.notice {
            Some(text) => Notice::Composed(text.clone()),
            None => Notice::FromError,
        },
    };
    match &signals.preflight {
        Some(Preflight::Blocked(reason)) => {
            let told = job.preflight_alerted();
            after.preflight_alerted = Some(true);
            after.status = Some(RunStatus::BlockedConfig);
            after.error = Some(match told {
                true => format!("[blocked_config:silent] {reason}"),
                false => format!("[blocked_config] {reason}"),
            });
            if told {
                after.notice = Notice::Withheld;
            }
        }
        Some(Preflight::Passed) => after.preflight_alerted = Some(false),
        None => {}
    }
    if claimed.source != RunSource::Scheduler {
        after.plan = Plan::Keep;
        return after;
    }
    let Ok(schedule) = job.schedule(ctx) else {
        return after;
    };
    let zone = job.zone(ctx);
    if failed && signals.unreachable && settings.retry_unreachable {
        after.plan = retry(job, &schedule, ctx);
        if matches!(after.plan, Plan::Retry { .. }) {
            after.notice = Notice::Withheld;
        }
    } else if let (true, Some(window)) = (failed, signals.quota_window) {
        after.plan = hold(job, &schedule, window, ctx, zone);
        if let Plan::Hold { until, .. } = &after.plan {
            after.notice = match job.get("quota_hold_until").is_some_and(|v| !v.is_null()) {
                // The held fire failing again: the operator was told when it began.
                true => Notice::Withheld,
                false => Notice::Composed(held_notice(job, outcome, window, *until, zone)),
            };
        }
    }
    after
}

/// The next rung of the re-run ladder, unless the schedule's own next occurrence comes
/// first, the ladder is spent, or the job is not a recurring one that may run.
fn retry(job: &Job, schedule: &Schedule, ctx: &Context) -> Plan {
    let attempt = job.unreachable_retry().map_or(0, |r| r.attempt);
    let (Some(delay), true) = (
        RETRY_DELAYS.get(attempt as usize),
        schedule.is_recurring() && job.state() == JobState::Scheduled,
    ) else {
        if attempt as usize >= RETRY_DELAYS.len() {
            tracing::warn!(
                job = job.id(),
                "model unreachable after {attempt} automatic re-runs; waiting for the scheduled occurrence"
            );
        }
        return Plan::Clear;
    };
    let at = ctx.now + *delay;
    match job.next_run_at(ctx) {
        Some(natural) if natural > at => {
            tracing::info!(
                job = job.id(),
                "model unreachable with no model call answered; automatic re-run {}/{} at {at}",
                attempt + 1,
                RETRY_DELAYS.len()
            );
            Plan::Retry {
                attempt: attempt + 1,
                at,
            }
        }
        _ => Plan::Clear,
    }
}

/// Parks a recurring job past a closed usage window (plus a minute): at the first
/// occurrence after it, or — for a sparse cron schedule whose next occurrence is far
/// beyond it — one recovery fire at its end, as Hermes 0.22 does.
fn hold(
    job: &Job,
    schedule: &Schedule,
    window: std::time::Duration,
    ctx: &Context,
    zone: Tz,
) -> Plan {
    let Ok(window) = Duration::from_std(window) else {
        return Plan::Clear;
    };
    if !schedule.is_recurring() || job.state() != JobState::Scheduled {
        return Plan::Clear;
    }
    let Some(natural) = job.next_run_at(ctx) else {
        return Plan::Clear;
    };
    let window_end = ctx.now + window + HOLD_SLACK;
    let cron = matches!(schedule, Schedule::Cron { .. });
    if natural < window_end {
        let until = match cron {
            true => schedule
                .next_run(window_end, None, zone)
                .unwrap_or(window_end),
            false => window_end,
        };
        return Plan::Hold {
            until,
            recovery_expr: None,
        };
    }
    let already_held = job.get("quota_hold_until").is_some_and(|v| !v.is_null());
    let sparse = schedule
        .period(natural, zone)
        .is_some_and(|period| natural - window_end >= period / 2);
    match (cron, already_held, sparse) {
        (true, false, true) => Plan::Hold {
            until: window_end,
            recovery_expr: job.cron_expr().map(str::to_string),
        },
        _ => Plan::Clear,
    }
}

/// The one alert of a hold: the usual notice, then how long the job is held.
fn held_notice(
    job: &Job,
    outcome: &RunOutcome,
    window: std::time::Duration,
    until: DateTime<Utc>,
    zone: Tz,
) -> String {
    let error = match &outcome.result {
        crate::runner::RunResult::Failed(error) => error.as_str(),
        _ => "",
    };
    let notice = crate::delivery::format::failure_notice(job.id(), error, job.failure_streak() + 1);
    format!(
        "{notice}\nThe provider's usage window is closed for about {:.1}h. This job is held through {} and resumes at the first safe opportunity afterwards; no further alerts are sent while the provider is unavailable.",
        window.as_secs_f64() / 3600.0,
        until.with_timezone(&zone).format("%Y-%m-%d %H:%M %Z")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(schedule: serde_json::Value, next: &str, extra: serde_json::Value) -> Job {
        let mut record = json!({
            "id": "abcdefabcdef", "name": "j", "prompt": "p", "schedule": schedule,
            "enabled": true, "state": "scheduled", "next_run_at": next,
        });
        if let (Some(record), Some(extra)) = (record.as_object_mut(), extra.as_object()) {
            record.extend(extra.clone());
        }
        match record {
            serde_json::Value::Object(record) => Job::from_record(record),
            _ => unreachable!(),
        }
    }

    fn ctx(now: &str) -> Context {
        Context {
            now: DateTime::parse_from_rfc3339(now)
                .unwrap()
                .with_timezone(&Utc),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        }
    }

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    const TWO_HOURS: std::time::Duration = std::time::Duration::from_secs(7200);

    #[test]
    fn a_sparse_cron_job_gets_one_recovery_fire_at_the_end_of_the_window() {
        let daily = json!({"kind": "cron", "expr": "0 9 * * *"});
        let c = ctx("2026-03-01T09:00:00Z");
        let fresh = job(daily.clone(), "2026-03-02T09:00:00+00:00", json!({}));
        let schedule = fresh.schedule(&c).unwrap();
        assert_eq!(
            hold(&fresh, &schedule, TWO_HOURS, &c, chrono_tz::UTC),
            Plan::Hold {
                until: at("2026-03-01T11:01:00Z"),
                recovery_expr: Some("0 9 * * *".into())
            }
        );
        // The recovery fire failing again waits for the schedule's own next instant.
        let held = job(
            daily,
            "2026-03-02T09:00:00+00:00",
            json!({"quota_hold_until": "2026-03-01T09:00:00+00:00"}),
        );
        assert_eq!(
            hold(&held, &schedule, TWO_HOURS, &c, chrono_tz::UTC),
            Plan::Clear
        );
    }

    #[test]
    fn an_interval_inside_the_window_is_parked_at_its_end() {
        let hourly = job(
            json!({"kind": "interval", "minutes": 60}),
            "2026-03-01T10:00:00+00:00",
            json!({}),
        );
        let c = ctx("2026-03-01T09:00:00Z");
        let schedule = hourly.schedule(&c).unwrap();
        assert_eq!(
            hold(&hourly, &schedule, TWO_HOURS, &c, chrono_tz::UTC),
            Plan::Hold {
                until: at("2026-03-01T11:01:00Z"),
                recovery_expr: None
            }
        );
    }

    #[test]
    fn the_ladder_stops_before_the_natural_occurrence_and_after_three_rungs() {
        let c = ctx("2026-03-01T09:00:00Z");
        let every = |minutes: u64, extra| {
            job(
                json!({"kind": "interval", "minutes": minutes}),
                &format!(
                    "2026-03-01T{:02}:{:02}:00+00:00",
                    9 + minutes / 60,
                    minutes % 60
                ),
                extra,
            )
        };
        let hourly = every(60, json!({}));
        let schedule = hourly.schedule(&c).unwrap();
        assert_eq!(
            retry(&hourly, &schedule, &c),
            Plan::Retry {
                attempt: 1,
                at: at("2026-03-01T09:05:00Z")
            }
        );
        let ten = every(
            10,
            json!({"unreachable_retry": {"attempt": 1, "at": "x", "expr": null}}),
        );
        assert_eq!(
            retry(&ten, &ten.schedule(&c).unwrap(), &c),
            Plan::Clear,
            "the natural occurrence (09:10) comes before +15 min"
        );
        let spent = every(
            60,
            json!({"unreachable_retry": {"attempt": 3, "at": "x", "expr": null}}),
        );
        assert_eq!(retry(&spent, &schedule, &c), Plan::Clear);
    }
}
