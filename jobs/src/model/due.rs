//! The due scan of one scheduler pass (docs/SCHEDULES.md, "Missed runs and catch-up"; docs/RUNNING.md, "One scheduler pass"): which jobs fire now, which
//! one-shots were missed, which late runs are skipped — and the store changes that make
//! each decision crash-safe. It runs under the store lock and moves every due job's
//! `next_run_at` forward *before* anything runs, so a crash can never fire the same
//! occurrence twice. Pure: "now" comes in through the [`Context`].

use chrono::{DateTime, Timelike, Utc};

use schedules::{
    format_instant, grace_period, Planned as Next, RunWindow, Schedule, ONE_SHOT_GRACE,
};

use crate::model::job::{Context, Job, JobState};

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
    /// A one-shot dispatched before (by a scheduler whose run ended without recording
    /// it, its claim expired) that has used up its runs: marked completed, not run.
    Completed { scheduled_at: DateTime<Utc> },
    /// An overdue run held back to its turn in the catch-up spread: its `next_run_at`
    /// is now `to`, when it fires as an on-time run.
    Deferred {
        scheduled_at: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

/// One job's decision, with a snapshot of the job as the pass left it.
#[derive(Debug, Clone)]
pub struct Planned {
    pub job: Job,
    pub decision: Decision,
}

/// Options of the scan that come from configuration.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions<'a> {
    /// `cron.catch_up_missed` (default true).
    pub catch_up_missed: bool,
    /// Who stamps the `run_claim` of a one-shot this pass dispatches: Python Hermes'
    /// `HERMES_MACHINE_ID`, else `<host>:<pid>` (see [`run_claim_owner`]).
    pub claim_owner: &'a str,
    /// How long a one-shot's `run_claim` keeps other schedulers off it (see
    /// [`run_claim_ttl`]).
    pub run_claim_ttl: chrono::Duration,
    /// `cron.catch_up_spread` (default 5 minutes; zero fires every overdue run at once):
    /// the window over which the overdue runs one pass finds start, in their due order.
    pub catch_up_spread: chrono::Duration,
}

/// A recurring run found more than this long after its time is overdue: the scheduler
/// was not running (a start, a resume after `hermes pause`, a host waking up), and the
/// catch-up spread applies to it. A running scheduler wakes at each run's time.
pub const OVERDUE_AFTER: chrono::Duration = chrono::Duration::seconds(60);

/// The `run_claim` lifetime Python Hermes uses: three times `HERMES_CRON_TIMEOUT`
/// (seconds; none = unlimited), at least 30 minutes.
pub fn run_claim_ttl(inactivity_timeout_secs: Option<u64>) -> chrono::Duration {
    let floor = 1800;
    let secs = inactivity_timeout_secs.map_or(floor, |t| t.saturating_mul(3).max(floor));
    chrono::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 1000))
}

/// The `run_claim.by` of this process, as Python Hermes writes its own.
pub fn run_claim_owner(machine_id: Option<&str>, host: &str, pid: u32) -> String {
    match machine_id.map(str::trim) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("{host}:{pid}"),
    }
}

/// A one-shot that another scheduler is running carries a `run_claim` younger than the
/// claim lifetime (Python Hermes stamps it at dispatch, refreshes it every minute and
/// clears it when the run is recorded). A claim dated in the future or unreadable does
/// not count, as in Python Hermes.
fn fresh_run_claim(job: &Job, ctx: &Context, ttl: chrono::Duration) -> Option<DateTime<Utc>> {
    job.run_claim_at(ctx).filter(|&at| {
        let age = ctx.now - at;
        age >= chrono::Duration::zero() && age < ttl
    })
}

/// The earliest `next_run_at` among runnable jobs — how long the daemon may sleep. A
/// one-shot another scheduler holds counts from when its claim runs out, so the daemon
/// sleeps through someone else's run instead of waking for it again and again.
pub fn earliest_next_run(
    jobs: &[Job],
    ctx: &Context,
    run_claim_ttl: chrono::Duration,
) -> Option<DateTime<Utc>> {
    jobs.iter()
        .filter(|j| j.state() == JobState::Scheduled)
        .filter_map(|j| {
            let next = j.next_run_at(ctx)?;
            if next <= ctx.now && j.is_one_shot() {
                if let Some(held_from) = fresh_run_claim(j, ctx, run_claim_ttl) {
                    return Some(held_from + run_claim_ttl);
                }
            }
            Some(next)
        })
        .min()
}

/// The fields [`probe`] reads, in the order it takes them: what settles most jobs of a
/// pass without building them.
pub const PROBE_KEYS: [&str; 4] = ["state", "enabled", "paused_at", "next_run_at"];

/// What a pass makes of a job, judged from its [`PROBE_KEYS`] fields alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing to decide: not due, not to be pruned; a scheduled job's next run counts
    /// towards the wake-up ([`earliest_next_run`]).
    Settled { wake: Option<DateTime<Utc>> },
    /// Due, without a readable next run, or completed (maybe to be pruned): the pass
    /// must decide on the job's scheduling view.
    Undecided,
}

/// Judges a job from the values of [`PROBE_KEYS`]. A job it settles is one that
/// [`plan_pass`] leaves alone, [`prune_completed_one_shots`] keeps and
/// [`earliest_next_run`] counts with exactly that wake-up; on a store of 10,000 jobs
/// nothing due, an idle pass builds no job at all.
pub fn probe(fields: &[Option<serde_json::Value>; 4], ctx: &Context) -> Probe {
    let [state, enabled, paused_at, next_run_at] = fields;
    match crate::model::job::state_of(state.as_ref(), enabled.as_ref(), paused_at.as_ref()) {
        JobState::Paused | JobState::Error => Probe::Settled { wake: None },
        JobState::Completed => Probe::Undecided,
        JobState::Scheduled => match crate::model::job::instant_of(next_run_at.as_ref(), ctx) {
            Some(next) if next > ctx.now => Probe::Settled { wake: Some(next) },
            _ => Probe::Undecided,
        },
    }
}

/// Counts a dispatch in `repeat.completed`; returns whether the job has now used up its runs.
fn count_dispatch(job: &mut Job) -> bool {
    let mut repeat = job.repeat();
    repeat.completed += 1;
    job.set_repeat(repeat);
    repeat.times.is_some_and(|times| repeat.completed >= times)
}

/// Drops completed one-shots whose last run (else creation) is older than `retention`.
/// Decided on the stored state and schedule kind, without parsing any schedule.
pub fn prune_completed_one_shots(jobs: &mut Vec<Job>, ctx: &Context, retention: chrono::Duration) {
    jobs.retain(|job| {
        let prunable = job.state() == JobState::Completed
            && job.is_one_shot()
            && job
                .last_run_at(ctx)
                .or_else(|| job.instant("created_at", ctx))
                .is_some_and(|t| t < ctx.now - retention);
        !prunable
    });
}

/// Scans `jobs` at `ctx.now`, applies each decision's store change, and returns them.
pub fn plan_pass(jobs: &mut [Job], ctx: &Context, options: ScanOptions) -> Vec<Planned> {
    let mut planned = Vec::new();
    let turns = catch_up_turns(jobs, ctx, options);
    for job in jobs.iter_mut() {
        if job.state() != JobState::Scheduled {
            continue;
        }
        if let Some(&to) = turns.get(job.id()) {
            if let Some(scheduled_at) = job.next_run_at(ctx) {
                job.set_next_run_at(Some(to), job.zone(ctx));
                planned.push(Planned {
                    job: job.clone(),
                    decision: Decision::Deferred { scheduled_at, to },
                });
                continue;
            }
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

/// The catch-up spread (docs/SCHEDULES.md, "Missed runs and catch-up"): the overdue
/// recurring runs of this pass that would fire, oldest first (then by id), get turns
/// spread evenly from now over `catch_up_spread`: the first fires now, each other one
/// is deferred to its turn. Runs that catch-up skips, one-shots (run within 120 s or
/// missed) and a pending unreachable-model re-run take no turn. Returns the deferred
/// ones: job id → turn.
fn catch_up_turns(
    jobs: &[Job],
    ctx: &Context,
    options: ScanOptions,
) -> std::collections::HashMap<String, DateTime<Utc>> {
    let mut turns = std::collections::HashMap::new();
    if options.catch_up_spread <= chrono::Duration::zero() {
        return turns;
    }
    let mut overdue: Vec<(DateTime<Utc>, &str)> = jobs
        .iter()
        .filter(|job| job.state() == JobState::Scheduled && !job.is_one_shot())
        .filter_map(|job| {
            let due_at = job.next_run_at(ctx)?;
            if ctx.now - due_at <= OVERDUE_AFTER || job.is_unreachable_retry_fire(due_at, ctx) {
                return None;
            }
            let schedule = job.schedule(ctx).ok().filter(Schedule::is_recurring)?;
            let window = job.run_window(ctx);
            if window.until.is_some_and(|until| due_at > until)
                || window.start_at.is_some_and(|start| due_at < start)
            {
                return None;
            }
            let (late, catch_up) = lateness(job, &schedule, due_at, ctx, options);
            (!late || catch_up).then_some((due_at, job.id()))
        })
        .collect();
    overdue.sort();
    let count = i32::try_from(overdue.len()).unwrap_or(i32::MAX);
    for (k, (_, id)) in overdue.into_iter().enumerate().skip(1) {
        let k = i32::try_from(k).unwrap_or(i32::MAX);
        // Rounded up to a whole second, as `next_run_at` is stored: never two turns in
        // one second while the spread leaves a second or more between them, nor a turn
        // in the second the first run starts in.
        let turn = ctx.now + options.catch_up_spread * k / count;
        let whole = turn.with_nanosecond(0).unwrap_or(turn);
        let turn = if whole < turn {
            whole + chrono::Duration::seconds(1)
        } else {
            whole
        };
        turns.insert(id.to_string(), turn);
    }
    turns
}

/// Whether a recurring run due at `due_at` is late (past its grace) and whether the job
/// catches up on a late run.
fn lateness(
    job: &Job,
    recurring: &Schedule,
    due_at: DateTime<Utc>,
    ctx: &Context,
    options: ScanOptions,
) -> (bool, bool) {
    let grace = recurring
        .period(due_at, job.zone(ctx))
        .map(grace_period)
        .unwrap_or(ONE_SHOT_GRACE);
    let late = ctx.now - due_at > grace;
    let catch_up = options.catch_up_missed && job.text_field("catch_up") != Some("skip");
    (late, catch_up)
}

fn plan_job(job: &mut Job, ctx: &Context, options: ScanOptions) -> Option<Decision> {
    // Not due yet: decided without parsing the schedule, which keeps an idle pass over
    // thousands of jobs cheap.
    if job.next_run_at(ctx).is_some_and(|due_at| due_at > ctx.now) {
        return None;
    }
    // Another scheduler (Python Hermes on the same store) is running this one-shot.
    if job.is_one_shot() && fresh_run_claim(job, ctx, options.run_claim_ttl).is_some() {
        return None;
    }
    let schedule = match job.schedule(ctx) {
        Ok(schedule) => schedule,
        Err(e) => return Some(broken(job, format!("cannot read schedule: {e}"))),
    };
    match (job.next_run_at(ctx), &schedule) {
        (None, _) => plan_unscheduled(job, &schedule, ctx),
        (Some(due_at), _) if due_at > ctx.now => None,
        (Some(due_at), Schedule::Once { .. }) => Some(plan_one_shot(job, due_at, ctx, options)),
        (Some(due_at), recurring) => Some(plan_recurring(job, recurring, due_at, ctx, options)),
    }
}

/// No next run stored: a one-shot whose dispatch was recorded is done; anything else (a
/// hand-written record) gets its first run computed, not fired.
fn plan_unscheduled(job: &mut Job, schedule: &Schedule, ctx: &Context) -> Option<Decision> {
    let zone = job.zone(ctx);
    let repeat = job.repeat();
    if repeat.times.is_some_and(|t| repeat.completed >= t)
        || !schedule.is_recurring() && job.last_run_at(ctx).is_some()
    {
        job.complete();
        return None;
    }
    let next = match schedule.is_recurring() {
        true => job.planned_next(schedule, ctx.now, job.last_run_at(ctx), ctx),
        false => schedule
            .next_run(ctx.now, job.last_run_at(ctx), zone)
            .map_or(Next::Nothing, Next::At),
    };
    match next {
        Next::At(next) => {
            job.set_next_run_at(Some(next), zone);
            None
        }
        Next::Nothing if schedule.is_recurring() => {
            Some(broken(job, "no future run can be computed".into()))
        }
        // Past its `until`, a recurring job is done as a one-shot that ran is.
        Next::Ended | Next::Nothing => {
            job.complete();
            None
        }
    }
}

/// A due one-shot: fired within 120 s of its time (and claimed for this scheduler),
/// missed after that, settled when a dispatch was already counted.
fn plan_one_shot(
    job: &mut Job,
    due_at: DateTime<Utc>,
    ctx: &Context,
    options: ScanOptions,
) -> Decision {
    let zone = job.zone(ctx);
    let repeat = job.repeat();
    if repeat.times.is_some_and(|t| repeat.completed >= t) {
        // Dispatched already (Python Hermes counts the dispatch and keeps `next_run_at`
        // while it runs) and its claim has expired: the run that claimed it died. A
        // one-shot fires at most `times` times: done.
        job.complete();
        return Decision::Completed {
            scheduled_at: due_at,
        };
    }
    job.set_next_run_at(None, zone);
    if ctx.now - due_at > ONE_SHOT_GRACE {
        job.mark_missed(&format!(
            "missed: the scheduler was not running at {} (more than 120 s late)",
            format_instant(due_at, zone)
        ));
        return Decision::Missed {
            scheduled_at: due_at,
        };
    }
    count_dispatch(job);
    // Keeps other schedulers on this store off the job while it runs (Python Hermes
    // would otherwise take the counted dispatch for a dead one and remove the job); the
    // runner refreshes it and the result clears it.
    job.set_run_claim(Some((ctx.now, options.claim_owner)), zone);
    Decision::Fire {
        scheduled_at: due_at,
        late: false,
    }
}

/// A due recurring job: its next run moves forward first; then it fires, once even when
/// late (catch-up), or is skipped when late and catch-up is off. A pending
/// unreachable-model re-run fires like any occurrence (claimed once), but re-runs an
/// occurrence already counted: it spends no `repeat`.
fn plan_recurring(
    job: &mut Job,
    recurring: &Schedule,
    due_at: DateTime<Utc>,
    ctx: &Context,
    options: ScanOptions,
) -> Decision {
    let (now, zone) = (ctx.now, job.zone(ctx));
    let id = job.id().to_string();
    let window = RunWindow {
        seed: &id,
        ..job.run_window(ctx)
    };
    // A `next_run_at` outside the window (written by a scheduler that does not know
    // it, such as Python Hermes on a shared jobs.json) never fires: past `until` the
    // job is done, before `start_at` it waits for its first run.
    if window.until.is_some_and(|until| due_at > until) {
        job.complete();
        return Decision::Completed {
            scheduled_at: due_at,
        };
    }
    if window.start_at.is_some_and(|start| due_at < start) {
        return match window.next_run(recurring, now, None, zone) {
            Next::At(next) => {
                job.set_next_run_at(Some(next), zone);
                Decision::Deferred {
                    scheduled_at: due_at,
                    to: next,
                }
            }
            Next::Ended => {
                job.complete();
                Decision::Completed {
                    scheduled_at: due_at,
                }
            }
            Next::Nothing => broken(job, "no future run can be computed".into()),
        };
    }
    let (late, catch_up) = lateness(job, recurring, due_at, ctx, options);
    // On time: the next occurrence follows this one. Late: resume from now — one
    // catch-up fire at most, never a burst of missed runs.
    let base = if late { now } else { due_at.max(now) };
    // A re-run resumes the schedule from now, as Hermes 0.22 does.
    let retry = job.is_unreachable_retry_fire(due_at, ctx);
    let next = match recurring {
        _ if retry => window.next_run(recurring, now, None, zone),
        // An interval counts from the occurrence, not from the jitter-shifted run.
        Schedule::Interval { .. } if !late => {
            let occurrence = window.occurrence_of(recurring, due_at, zone);
            window.next_run(recurring, now, Some(occurrence), zone)
        }
        _ => window.next_run(recurring, base, None, zone),
    };
    let next = match next {
        Next::At(next) => Some(next),
        // This run is the last one before `until`: the job completes after it.
        Next::Ended => None,
        Next::Nothing => return broken(job, "no future run can be computed".into()),
    };
    job.set_next_run_at(next, zone);
    if late && !catch_up {
        if next.is_none() {
            job.complete();
        }
        return Decision::SkippedLate {
            scheduled_at: due_at,
        };
    }
    if !retry && count_dispatch(job) {
        job.set_next_run_at(None, zone);
    }
    Decision::Fire {
        scheduled_at: due_at,
        late,
    }
}

fn broken(job: &mut Job, reason: String) -> Decision {
    job.set_broken(&reason);
    Decision::Broken { reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonjobs::Record;
    use serde_json::{json, Value};

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
        claim_owner: "testhost:1",
        run_claim_ttl: chrono::Duration::seconds(1800),
        catch_up_spread: chrono::Duration::zero(),
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
                ..ON
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
        use crate::jsonjobs::parse_document_keeping;
        use crate::model::job::SCHEDULING_KEYS;
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
                    let options = ScanOptions {
                        catch_up_missed,
                        ..ON
                    };
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
                        earliest_next_run(&whole, &ctx, ON.run_claim_ttl),
                        earliest_next_run(&slim, &ctx, ON.run_claim_ttl)
                    );
                }
            }
        }
        assert!(stores >= 6, "fixture stores read: {stores}");
        assert!(decided >= 20, "decisions compared: {decided}");
    }

    /// An idle pass settles most jobs on their `PROBE_KEYS` fields without building
    /// them: every job the probe settles, on every fixture store and on odd hand-written
    /// values, must be one the whole pass leaves unchanged, keeps, and wakes for at the
    /// probe's instant.
    #[test]
    fn a_job_the_probe_settles_is_one_the_pass_leaves_alone() {
        use crate::jsonjobs::parse_document_keeping;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let mut jobs: Vec<Job> = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                if let Ok(doc) = parse_document_keeping(&std::fs::read(&path).unwrap(), &path, None)
                {
                    jobs.extend(doc.jobs.into_iter().map(Job::from_record));
                }
            }
        }
        let every_hour = json!({"kind": "interval", "minutes": 60});
        for (state, enabled, paused_at, next) in [
            (
                json!("scheduled"),
                json!("no"),
                Value::Null,
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (
                json!("scheduled"),
                json!(0),
                Value::Null,
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (
                json!("scheduled"),
                json!("yes"),
                json!(" "),
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (
                json!("scheduled"),
                json!(true),
                json!("x"),
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (
                json!("paused"),
                json!(true),
                Value::Null,
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (
                json!("error"),
                json!(true),
                Value::Null,
                json!("2026-11-22T09:00:00+00:00"),
            ),
            (json!("completed"), json!(false), Value::Null, Value::Null),
            (
                json!(7),
                Value::Null,
                Value::Null,
                json!("2026-11-22T09:00:00"),
            ),
            (
                Value::Null,
                json!("maybe"),
                Value::Null,
                json!(" 2026-11-22T09:00:00Z "),
            ),
            (json!("scheduled"), json!(true), Value::Null, json!(" ")),
            (
                json!("scheduled"),
                json!(true),
                Value::Null,
                json!(1_800_000_000),
            ),
            (json!("scheduled"), json!(true), Value::Null, json!("soon")),
        ] {
            let mut job = job(every_hour.clone(), "", Value::Null);
            job.set("state", state);
            job.set("enabled", enabled);
            job.set("paused_at", paused_at);
            job.set("next_run_at", next);
            jobs.push(job);
        }
        let mut settled = 0;
        for now in [
            "2020-01-01T00:00:00Z",
            "2026-11-22T08:00:00Z",
            "2026-11-22T10:00:00Z",
            "2031-01-01T00:00:00Z",
        ] {
            let ctx = ctx(now);
            for original in &jobs {
                let fields = PROBE_KEYS.map(|key| original.get(key).cloned());
                let Probe::Settled { wake } = probe(&fields, &ctx) else {
                    continue;
                };
                settled += 1;
                let mut one = vec![original.clone()];
                assert!(
                    plan_pass(&mut one, &ctx, ON).is_empty(),
                    "{:?}",
                    original.record()
                );
                assert_eq!(&one[0], original, "changed by the pass");
                prune_completed_one_shots(&mut one, &ctx, chrono::Duration::zero());
                assert_eq!(one.len(), 1, "pruned: {:?}", original.record());
                assert_eq!(
                    earliest_next_run(&one, &ctx, ON.run_claim_ttl),
                    wake,
                    "{:?}",
                    original.record()
                );
            }
        }
        assert!(settled >= 40, "settled jobs compared: {settled}");
    }

    fn one_shot(completed: u64, claim_at: Option<&str>) -> Job {
        let mut job = job(
            json!({"kind": "once", "run_at": "2026-11-22T09:00:00+00:00", "display": "once"}),
            "2026-11-22T09:00:00+00:00",
            json!(1),
        );
        job.set("repeat", json!({"times": 1, "completed": completed}));
        if let Some(at) = claim_at {
            job.set("run_claim", json!({"at": at, "by": "otherhost:42"}));
        }
        job
    }

    #[test]
    fn a_one_shot_another_scheduler_is_running_is_left_alone() {
        // As Python Hermes leaves it while it runs: dispatch counted, next_run_at kept,
        // a claim stamped ten minutes ago (its lifetime is 30 minutes).
        let mut jobs = vec![one_shot(1, Some("2026-11-22T10:00:00+01:00"))];
        let before = jobs.clone();
        assert!(plan_pass(&mut jobs, &ctx("2026-11-22T09:10:00Z"), ON).is_empty());
        assert_eq!(jobs, before, "nothing is changed");
        // A daemon sleeps until the claim runs out rather than waking for the job.
        assert_eq!(
            earliest_next_run(&jobs, &ctx("2026-11-22T09:10:00Z"), ON.run_claim_ttl),
            Some(at("2026-11-22T09:30:00Z"))
        );
    }

    #[test]
    fn a_dispatched_one_shot_whose_claim_expired_is_completed_not_fired_again() {
        let mut jobs = vec![one_shot(1, Some("2026-11-22T09:00:05+00:00"))];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:40:00Z"), ON);
        assert_eq!(
            planned[0].decision,
            Decision::Completed {
                scheduled_at: at("2026-11-22T09:00:00Z")
            }
        );
        assert_eq!(jobs[0].state(), JobState::Completed);
        assert_eq!(jobs[0].get("next_run_at"), Some(&Value::Null));
    }

    #[test]
    fn firing_a_one_shot_stamps_a_claim_and_a_future_dated_claim_does_not_hold_it() {
        let mut jobs = vec![one_shot(0, Some("2026-11-22T12:00:00+00:00"))];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:30Z"), ON);
        assert_eq!(
            planned[0].decision,
            Decision::Fire {
                scheduled_at: at("2026-11-22T09:00:00Z"),
                late: false
            }
        );
        assert_eq!(
            jobs[0].get("run_claim"),
            Some(&json!({"at": "2026-11-22T09:00:30+00:00", "by": "testhost:1"}))
        );
        assert_eq!(jobs[0].repeat().completed, 1);
    }

    #[test]
    fn an_unreachable_model_re_run_fires_once_without_spending_a_repeat() {
        let mut first = job(
            json!({"kind":"interval","minutes":60}),
            "2026-11-22T09:05:00+00:00",
            json!(3),
        );
        first.set("repeat", json!({"times": 3, "completed": 1}));
        first.set("last_run_at", json!("2026-11-22T09:00:00+00:00"));
        first.set(
            "unreachable_retry",
            json!({"attempt": 1, "at": "2026-11-22T09:05:00+00:00", "expr": null}),
        );
        let mut jobs = vec![first];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:05:01Z"), ON);
        assert_eq!(
            planned[0].decision,
            Decision::Fire {
                scheduled_at: at("2026-11-22T09:05:00Z"),
                late: false
            }
        );
        assert_eq!(jobs[0].repeat().completed, 1, "a re-run spends no repeat");
        assert_eq!(
            jobs[0].get("next_run_at"),
            Some(&json!("2026-11-22T10:05:01+00:00")),
            "the schedule resumes from now"
        );
        assert!(plan_pass(&mut jobs, &ctx("2026-11-22T09:05:02Z"), ON).is_empty());
        // A cron job whose expression changed since the re-run was planned: an ordinary
        // occurrence, counted.
        let mut edited = job(
            json!({"kind":"cron","expr":"*/30 * * * *"}),
            "2026-11-22T09:30:00+00:00",
            Value::Null,
        );
        edited.set(
            "unreachable_retry",
            json!({"attempt": 1, "at": "2026-11-22T09:30:00+00:00", "expr": "0 * * * *"}),
        );
        let mut jobs = vec![edited];
        plan_pass(&mut jobs, &ctx("2026-11-22T09:30:00Z"), ON);
        assert_eq!(jobs[0].repeat().completed, 1);
    }

    #[test]
    fn the_claim_lifetime_and_owner_follow_python_hermes() {
        assert_eq!(run_claim_ttl(None).num_seconds(), 1800);
        assert_eq!(run_claim_ttl(Some(600)).num_seconds(), 1800);
        assert_eq!(run_claim_ttl(Some(1000)).num_seconds(), 3000);
        assert_eq!(run_claim_owner(None, "vm", 7), "vm:7");
        assert_eq!(run_claim_owner(Some(" "), "vm", 7), "vm:7");
        assert_eq!(run_claim_owner(Some("box-1"), "vm", 7), "box-1");
    }

    /// A job of `job` with an id of its own.
    fn job_with_id(id: &str, schedule: Value, next: &str) -> Job {
        let mut job = job(schedule, next, Value::Null);
        job.set("id", json!(id));
        job
    }

    #[test]
    fn overdue_runs_take_turns_over_the_spread_and_skipped_ones_take_none() {
        let spread = ScanOptions {
            catch_up_spread: chrono::Duration::minutes(5),
            ..ON
        };
        let mut jobs = vec![
            job_with_id(
                "cccccccccccc",
                json!({"kind":"interval","minutes":60}),
                "2026-11-22T08:30:00+00:00",
            ),
            job_with_id(
                "aaaaaaaaaaaa",
                json!({"kind":"interval","minutes":60}),
                "2026-11-22T08:10:00+00:00",
            ),
            job_with_id(
                "bbbbbbbbbbbb",
                json!({"kind":"interval","minutes":60}),
                "2026-11-22T08:20:00+00:00",
            ),
            job_with_id(
                "dddddddddddd",
                json!({"kind":"interval","minutes":60}),
                "2026-11-22T08:00:00+00:00",
            ),
            // Due 30 s ago: on time, not overdue; it fires now and takes no turn.
            job_with_id(
                "eeeeeeeeeeee",
                json!({"kind":"interval","minutes":60}),
                "2026-11-22T08:59:30+00:00",
            ),
        ];
        jobs[3].set("catch_up", json!("skip"));
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:00Z"), spread);
        let decision = |id: &str| {
            planned
                .iter()
                .find(|p| p.job.id() == id)
                .unwrap()
                .decision
                .clone()
        };
        assert!(
            matches!(decision("dddddddddddd"), Decision::SkippedLate { .. }),
            "skipped at once, no turn"
        );
        assert!(
            matches!(decision("aaaaaaaaaaaa"), Decision::Fire { late: true, .. }),
            "the oldest fires now"
        );
        assert!(matches!(
            decision("eeeeeeeeeeee"),
            Decision::Fire { late: false, .. }
        ));
        assert_eq!(
            decision("bbbbbbbbbbbb"),
            Decision::Deferred {
                scheduled_at: at("2026-11-22T08:20:00Z"),
                to: at("2026-11-22T09:01:40Z")
            }
        );
        assert_eq!(
            decision("cccccccccccc"),
            Decision::Deferred {
                scheduled_at: at("2026-11-22T08:30:00Z"),
                to: at("2026-11-22T09:03:20Z")
            }
        );
        assert_eq!(
            jobs[0].get("next_run_at"),
            Some(&json!("2026-11-22T09:03:20+00:00"))
        );
        assert_eq!(
            jobs[0].repeat().completed,
            0,
            "a deferred run is not counted yet"
        );
        // At its turn it fires as an on-time run.
        let at_turn = plan_pass(&mut jobs, &ctx("2026-11-22T09:01:40Z"), spread);
        assert_eq!(at_turn.len(), 1);
        assert_eq!(
            at_turn[0].decision,
            Decision::Fire {
                scheduled_at: at("2026-11-22T09:01:40Z"),
                late: false
            }
        );
    }

    #[test]
    fn a_next_run_outside_the_window_never_fires() {
        let mut late = job(
            json!({"kind":"cron","expr":"0 9 * * *","display":"0 9 * * *"}),
            "2026-11-22T09:00:00+00:00",
            Value::Null,
        );
        late.set("until", json!("2026-11-21T09:00:00+00:00"));
        let mut early = job(
            json!({"kind":"cron","expr":"0 9 * * *","display":"0 9 * * *"}),
            "2026-11-22T09:00:00+00:00",
            Value::Null,
        );
        early.set("start_at", json!("2026-11-24T09:00:00+00:00"));
        let mut jobs = vec![late, early];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:01Z"), ON);
        assert!(matches!(planned[0].decision, Decision::Completed { .. }));
        assert_eq!(jobs[0].state(), JobState::Completed);
        assert!(matches!(planned[1].decision, Decision::Deferred { .. }));
        assert_eq!(
            jobs[1].get("next_run_at"),
            Some(&json!("2026-11-24T09:00:00+00:00"))
        );
    }

    #[test]
    fn the_last_run_before_until_fires_and_leaves_no_next_run() {
        let mut last = job(
            json!({"kind":"cron","expr":"0 9 * * *","display":"0 9 * * *"}),
            "2026-11-22T09:00:00+00:00",
            Value::Null,
        );
        last.set("until", json!("2026-11-22T12:00:00+00:00"));
        let mut jobs = vec![last];
        let planned = plan_pass(&mut jobs, &ctx("2026-11-22T09:00:01Z"), ON);
        assert!(matches!(planned[0].decision, Decision::Fire { .. }));
        assert_eq!(jobs[0].get("next_run_at"), Some(&Value::Null));
        // A later pass finds no next run within the window: done.
        assert!(plan_pass(&mut jobs, &ctx("2026-11-22T09:00:05Z"), ON).is_empty());
        assert_eq!(jobs[0].state(), JobState::Completed);
    }
}
