//! The due scan of one scheduler pass (SPEC §3.4, §5.2): which jobs fire now, which
//! one-shots were missed, which late runs are skipped — and the store changes that make
//! each decision crash-safe. It runs under the store lock and moves every due job's
//! `next_run_at` forward *before* anything runs, so a crash can never fire the same
//! occurrence twice. Pure: "now" comes in through the [`Context`].

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use schedules::{format_instant, grace_period, Schedule, ONE_SHOT_GRACE};

use crate::job::{Context, Job, JobState};

/// What the pass decided for one job.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run it for the occurrence scheduled at `scheduled_at`.
    Fire {
        scheduled_at: DateTime<Utc>,
        late: bool,
    },
    /// A one-shot more than 120 s late: never run, recorded as missed.
    Missed { scheduled_at: DateTime<Utc> },
    /// A recurring job later than its grace, with catch-up off: skipped.
    SkippedLate { scheduled_at: DateTime<Utc> },
    /// The job's next run cannot be computed: it stays enabled in `state: error`.
    Broken { reason: String },
}

/// One job's decision, with a snapshot of the job as the pass left it.
#[derive(Debug, Clone)]
pub struct Planned {
    pub job: Job,
    pub decision: Decision,
}

/// Options of the scan that come from configuration.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// `cron.catch_up_missed` (default true).
    pub catch_up_missed: bool,
}

/// The earliest `next_run_at` among runnable jobs — how long the daemon may sleep.
pub fn earliest_next_run(jobs: &[Job], ctx: &Context) -> Option<DateTime<Utc>> {
    jobs.iter()
        .filter(|j| j.state() == JobState::Scheduled)
        .filter_map(|j| j.next_run_at(ctx))
        .min()
}

fn set_time(job: &mut Job, key: &str, at: Option<DateTime<Utc>>, ctx: &Context) {
    let zone = job.zone(ctx);
    job.set(
        key,
        at.map_or(Value::Null, |t| json!(format_instant(t, zone))),
    );
}

/// Counts a dispatch in `repeat.completed`; returns whether the job has now used up its runs.
fn count_dispatch(job: &mut Job) -> bool {
    let mut repeat = job.repeat();
    repeat.completed += 1;
    let mut object = match job.get("repeat") {
        Some(Value::Object(o)) => o.clone(),
        _ => Default::default(),
    };
    object.insert("times".into(), json!(repeat.times));
    object.insert("completed".into(), json!(repeat.completed));
    job.set("repeat", Value::Object(object));
    repeat.times.is_some_and(|times| repeat.completed >= times)
}

/// Marks a job finished for good: kept, disabled, no next run (SPEC §3.5).
pub fn mark_completed(job: &mut Job) {
    job.set("enabled", json!(false));
    job.set("state", json!("completed"));
    job.set("next_run_at", Value::Null);
}

/// Scans `jobs` at `ctx.now`, applies each decision's store change, and returns them.
pub fn plan_pass(jobs: &mut [Job], ctx: &Context, options: ScanOptions) -> Vec<Planned> {
    let mut planned = Vec::new();
    for job in jobs.iter_mut() {
        if job.state() != JobState::Scheduled {
            continue;
        }
        if let Some(decision) = plan_job(job, ctx, options) {
            planned.push(Planned {
                job: job.clone(),
                decision,
            });
        }
    }
    planned
}

fn plan_job(job: &mut Job, ctx: &Context, options: ScanOptions) -> Option<Decision> {
    let now = ctx.now;
    // Not due yet: decided without parsing the schedule, which keeps an idle pass over
    // thousands of jobs cheap.
    if job.next_run_at(ctx).is_some_and(|due_at| due_at > now) {
        return None;
    }
    let zone = job.zone(ctx);
    let schedule = match job.schedule(ctx) {
        Ok(schedule) => schedule,
        Err(e) => return Some(broken(job, format!("cannot read schedule: {e}"))),
    };
    let Some(due_at) = job.next_run_at(ctx) else {
        // No next run stored: a one-shot whose dispatch was recorded is done; anything
        // else (a hand-written record) gets its first run computed, not fired.
        let repeat = job.repeat();
        if repeat.times.is_some_and(|t| repeat.completed >= t)
            || !schedule.is_recurring() && job.last_run_at(ctx).is_some()
        {
            mark_completed(job);
            return None;
        }
        return match schedule.next_run(now, job.last_run_at(ctx), zone) {
            Some(next) => {
                set_time(job, "next_run_at", Some(next), ctx);
                None
            }
            None if schedule.is_recurring() => {
                Some(broken(job, "no future run can be computed".into()))
            }
            None => {
                mark_completed(job);
                None
            }
        };
    };
    if due_at > now {
        return None;
    }
    let lateness = now - due_at;
    match &schedule {
        Schedule::Once { .. } => {
            set_time(job, "next_run_at", None, ctx);
            if lateness > ONE_SHOT_GRACE {
                mark_completed(job);
                job.set("last_status", json!("missed"));
                job.set(
                    "last_error",
                    json!(format!(
                        "missed: the scheduler was not running at {} (more than 120 s late)",
                        format_instant(due_at, zone)
                    )),
                );
                return Some(Decision::Missed {
                    scheduled_at: due_at,
                });
            }
            count_dispatch(job);
            Some(Decision::Fire {
                scheduled_at: due_at,
                late: false,
            })
        }
        recurring => {
            let grace = recurring
                .period(due_at, zone)
                .map(grace_period)
                .unwrap_or(ONE_SHOT_GRACE);
            let late = lateness > grace;
            // On time: the next occurrence follows this one. Late: resume from now — one
            // catch-up fire at most, never a burst of missed runs.
            let base = if late { now } else { due_at.max(now) };
            let next = match recurring {
                Schedule::Interval { .. } if !late => recurring.next_run(now, Some(due_at), zone),
                _ => recurring.next_run(base, None, zone),
            };
            let Some(next) = next else {
                return Some(broken(job, "no future run can be computed".into()));
            };
            set_time(job, "next_run_at", Some(next), ctx);
            let catch_up = options.catch_up_missed && job.text_field("catch_up") != Some("skip");
            if late && !catch_up {
                return Some(Decision::SkippedLate {
                    scheduled_at: due_at,
                });
            }
            if count_dispatch(job) {
                set_time(job, "next_run_at", None, ctx);
            }
            Some(Decision::Fire {
                scheduled_at: due_at,
                late,
            })
        }
    }
}

fn broken(job: &mut Job, reason: String) -> Decision {
    job.set("state", json!("error"));
    job.set("last_error", json!(reason.clone()));
    Decision::Broken { reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Record;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn ctx(now: &str) -> Context {
        Context {
            now: at(now),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        }
    }

    fn job(schedule: Value, next: &str, times: Value) -> Job {
        let record: Record = serde_json::from_value(json!({
            "id": "abc123abc123", "name": "t", "prompt": "p", "schedule": schedule,
            "repeat": {"times": times, "completed": 0}, "enabled": true, "state": "scheduled",
            "next_run_at": next,
        }))
        .unwrap();
        Job::from_record(record)
    }

    const ON: ScanOptions = ScanOptions {
        catch_up_missed: true,
    };

    #[test]
    fn an_on_time_interval_fires_and_moves_forward_before_running() {
        let mut jobs = vec![job(
            json!({"kind":"interval","minutes":60}),
            "2026-11-22T09:00:00+00:00",
            Value::Null,
        )];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:01Z"), ON);
        assert_eq!(
            planned[0].decision,
            Decision::Fire {
                scheduled_at: at("2026-11-22T09:00:00Z"),
                late: false
            }
        );
        assert_eq!(
            jobs[0].get("next_run_at"),
            Some(&json!("2026-11-22T10:00:00+00:00"))
        );
        assert_eq!(jobs[0].repeat().completed, 1);
        // The same pass again finds nothing due: the occurrence cannot fire twice.
        assert!(plan_pass(&mut jobs, &ctx("2026-11-22T09:00:02Z"), ON).is_empty());
    }

    #[test]
    fn a_late_recurring_job_fires_once_and_resumes_from_now() {
        let mut jobs = vec![job(
            json!({"kind":"interval","minutes":5}),
            "2026-11-22T08:50:00+00:00",
            Value::Null,
        )];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:00Z"), ON);
        assert_eq!(
            planned[0].decision,
            Decision::Fire {
                scheduled_at: at("2026-11-22T08:50:00Z"),
                late: true
            }
        );
        assert_eq!(
            jobs[0].get("next_run_at"),
            Some(&json!("2026-11-22T09:05:00+00:00"))
        );
    }

    #[test]
    fn catch_up_off_skips_the_late_run() {
        let mut jobs = vec![job(
            json!({"kind":"cron","expr":"*/5 * * * *"}),
            "2026-11-22T08:50:00+00:00",
            Value::Null,
        )];
        let planned = plan_pass(
            &mut jobs,
            &ctx("2026-11-22T09:01:00Z"),
            ScanOptions {
                catch_up_missed: false,
            },
        );
        assert_eq!(
            planned[0].decision,
            Decision::SkippedLate {
                scheduled_at: at("2026-11-22T08:50:00Z")
            }
        );
        assert_eq!(
            jobs[0].get("next_run_at"),
            Some(&json!("2026-11-22T09:05:00+00:00"))
        );
        assert_eq!(jobs[0].repeat().completed, 0);
    }

    #[test]
    fn a_one_shot_fires_within_120s_and_is_missed_after() {
        let schedule = json!({"kind":"once","run_at":"2026-11-22T09:00:00+00:00"});
        let mut on_time = vec![job(schedule.clone(), "2026-11-22T09:00:00+00:00", json!(1))];
        let planned = plan_pass(&mut on_time, &ctx("2026-11-22T09:01:59Z"), ON);
        assert!(matches!(planned[0].decision, Decision::Fire { .. }));
        assert_eq!(on_time[0].get("next_run_at"), Some(&Value::Null));
        assert_eq!(on_time[0].repeat().completed, 1);
        let mut late = vec![job(schedule, "2026-11-22T09:00:00+00:00", json!(1))];
        let planned = plan_pass(&mut late, &ctx("2026-11-22T09:05:00Z"), ON);
        assert!(matches!(planned[0].decision, Decision::Missed { .. }));
        assert_eq!(late[0].state(), JobState::Completed);
        assert_eq!(late[0].get("last_status"), Some(&json!("missed")));
    }

    #[test]
    fn paused_jobs_never_fire_nor_catch_up() {
        let mut paused = job(
            json!({"kind":"interval","minutes":5}),
            "2026-11-22T08:00:00+00:00",
            Value::Null,
        );
        paused.set("enabled", json!(false));
        let mut jobs = vec![paused];
        assert!(plan_pass(&mut jobs, &ctx("2026-11-22T09:00:00Z"), ON).is_empty());
    }

    #[test]
    fn the_last_allowed_run_completes_the_job() {
        let mut jobs = vec![job(
            json!({"kind":"interval","minutes":5}),
            "2026-11-22T09:00:00+00:00",
            json!(1),
        )];
        plan_pass(&mut jobs, &ctx("2026-11-22T09:00:00Z"), ON);
        assert_eq!(jobs[0].get("next_run_at"), Some(&Value::Null));
        plan_pass(&mut jobs, &ctx("2026-11-22T09:30:00Z"), ON);
        assert_eq!(jobs[0].state(), JobState::Completed);
    }

    #[test]
    fn an_unreadable_schedule_is_an_error_state_not_a_silent_disable() {
        let mut jobs = vec![job(
            json!({"kind":"cron","expr":"99 * * * *"}),
            "2026-11-22T09:00:00+00:00",
            Value::Null,
        )];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:00Z"), ON);
        assert!(matches!(planned[0].decision, Decision::Broken { .. }));
        assert_eq!(jobs[0].state(), JobState::Error);
        assert!(jobs[0].enabled());
    }

    /// The scheduler decides on jobs reduced to `SCHEDULING_KEYS`: on every fixture
    /// store, at instants before, among and after their runs, that view must plan the
    /// same decisions with the same store changes and the same wake-up as whole records.
    #[test]
    fn the_scheduling_view_decides_like_whole_records_on_every_fixture_store() {
        use crate::job::SCHEDULING_KEYS;
        use crate::store::parse_document_keeping;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let (mut stores, mut decided) = (0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let Ok(full) = parse_document_keeping(&bytes, &path, None) else {
                continue;
            };
            let view = parse_document_keeping(&bytes, &path, Some(SCHEDULING_KEYS)).unwrap();
            stores += 1;
            for now in [
                "2020-01-01T00:00:00Z",
                "2026-03-08T07:30:00Z",
                "2026-06-01T12:00:00Z",
                "2026-12-25T13:01:00Z",
                "2031-01-01T00:00:00Z",
            ] {
                let ctx = ctx(now);
                for catch_up_missed in [true, false] {
                    let options = ScanOptions { catch_up_missed };
                    let mut whole: Vec<Job> =
                        full.jobs.iter().cloned().map(Job::from_record).collect();
                    let mut slim: Vec<Job> =
                        view.jobs.iter().cloned().map(Job::from_record).collect();
                    let a = plan_pass(&mut whole, &ctx, options);
                    let b = plan_pass(&mut slim, &ctx, options);
                    let decisions = |p: &[Planned]| -> Vec<(String, Decision)> {
                        p.iter()
                            .map(|p| (p.job.id().to_string(), p.decision.clone()))
                            .collect()
                    };
                    assert_eq!(decisions(&a), decisions(&b), "{} at {now}", path.display());
                    decided += a.len();
                    for (w, s) in whole.iter().zip(&slim) {
                        for key in SCHEDULING_KEYS {
                            assert_eq!(
                                w.get(key),
                                s.get(key),
                                "{key} of {} in {}",
                                w.id(),
                                path.display()
                            );
                        }
                    }
                    assert_eq!(
                        earliest_next_run(&whole, &ctx),
                        earliest_next_run(&slim, &ctx)
                    );
                }
            }
        }
        assert!(stores >= 6, "fixture stores read: {stores}");
        assert!(decided >= 20, "decisions compared: {decided}");
    }
}
