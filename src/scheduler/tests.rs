//! Unit tests of the scheduler's units, on an in-memory store, a manual clock that moves
//! with tokio's paused timer, a fake runner and a fake delivery: nothing sleeps for real.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use jobs::ledger::RunStatus;
use jobs::store::prelude::*;
use jobs::store::{MemoryStore, Owner};
use jobs::{create_job, Context, Job, JobState, NewJob};

use super::settings::CronSettings;
use super::{BoxFuture, Delivery, Parts, RunReport, Scheduler};
use crate::clock::{Clock, ManualClock};
use crate::delivery::http::Failure;
use crate::delivery::{Delivered, DeliveryReport, RunDelivery, Settled, SettledAs};
use crate::runner::{RunEnv, RunFuture, RunOutcome, RunResult, Runner};

const START: &str = "2026-11-23T09:00:00Z";

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// What the fake runner does with a job.
#[derive(Clone, Copy)]
enum Work {
    /// Answers after this long.
    Answer(Duration),
    /// Never answers and shows no activity.
    Hang,
}

/// Records every run it starts (job id, the clock's time) and answers `done`.
struct FakeRunner {
    clock: Arc<dyn Clock>,
    work: Work,
    started: Mutex<Vec<(String, DateTime<Utc>)>>,
}

impl Runner for FakeRunner {
    fn run<'a>(&'a self, job: &'a Job, _env: &'a RunEnv) -> RunFuture<'a> {
        self.started
            .lock()
            .unwrap()
            .push((job.id().to_string(), self.clock.now()));
        Box::pin(async move {
            match self.work {
                Work::Answer(after) => tokio::time::sleep(after).await,
                Work::Hang => std::future::pending::<()>().await,
            }
            RunOutcome::of(
                job.prompt().to_string(),
                RunResult::Reply(format!("done: {}", job.name())),
            )
        })
    }
}

/// How the fake chat platform answers.
#[derive(Clone, Copy, PartialEq)]
enum Chat {
    Up,
    /// Takes the tracked row, then never answers (the process dies mid-delivery).
    HangsAfterTracking,
}

/// A chat platform that keeps what arrived.
struct FakeDelivery {
    chat: Chat,
    arrived: Mutex<Vec<String>>,
}

const TARGET: &str = "telegram:42";

impl Delivery for FakeDelivery {
    fn deliver<'a>(&'a self, run: RunDelivery<'a>) -> BoxFuture<'a, DeliveryReport> {
        Box::pin(async move {
            let text = match run.result {
                Delivered::Reply(text) => text.to_string(),
                Delivered::Failed(error)
                | Delivered::Notice(error)
                | Delivered::Declared(error) => {
                    format!("failed: {error}")
                }
                Delivered::Silent => return DeliveryReport::default(),
            };
            let tracked = match run.track {
                Some(track) => track(TARGET.to_string(), text.clone()).await,
                None => None,
            };
            let row = tracked.map(|(row, _)| row);
            if self.chat == Chat::HangsAfterTracking {
                std::future::pending::<()>().await;
            }
            self.arrived.lock().unwrap().push(text);
            DeliveryReport {
                summary: format!("sent: {TARGET}"),
                settled: row
                    .map(|row| Settled {
                        row,
                        outcome: SettledAs::Sent,
                        sent_parts: 1,
                        error: None,
                    })
                    .into_iter()
                    .collect(),
                ..DeliveryReport::default()
            }
        })
    }

    fn retry<'a>(
        &'a self,
        _files: crate::delivery::HomeFiles<'a>,
        target: &'a str,
        payload: &'a str,
        _skip: usize,
    ) -> BoxFuture<'a, Result<(), (Failure, usize)>> {
        Box::pin(async move {
            assert_eq!(target, TARGET);
            self.arrived.lock().unwrap().push(payload.to_string());
            Ok(())
        })
    }
}

fn settings() -> CronSettings {
    CronSettings {
        max_parallel: Some(4),
        catch_up_missed: true,
        catch_up_spread: chrono::Duration::zero(),
        output_retention: 50,
        completed_retention_days: 7,
        script_timeout: Duration::from_secs(300),
        inactivity_timeout: Some(Duration::from_secs(600)),
        wrap_response: true,
        delivery_retry: Duration::from_secs(6 * 3600),
        preflight: true,
        retry_unreachable: true,
        notify: true,
        failure_repeat_alert: Some(chrono::Duration::hours(6)),
    }
}

/// One scheduler process on a shared store.
struct Rig {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    runner: Arc<FakeRunner>,
    delivery: Arc<FakeDelivery>,
    scheduler: Arc<Scheduler>,
    _home: tempfile::TempDir,
}

impl Rig {
    fn new() -> Rig {
        Rig::fresh(Work::Answer(Duration::from_secs(1)), Chat::Up, settings())
    }

    /// One process (pid 1) on a store of its own, at [`START`].
    fn fresh(work: Work, chat: Chat, settings: CronSettings) -> Rig {
        let store = Arc::new(MemoryStore::new(Owner {
            host: "testhost".into(),
            pid: 1,
        }));
        Rig::on(
            store,
            Arc::new(ManualClock::at(at(START))),
            work,
            chat,
            settings,
        )
    }

    fn on(
        store: Arc<MemoryStore>,
        clock: Arc<ManualClock>,
        work: Work,
        chat: Chat,
        settings: CronSettings,
    ) -> Rig {
        let home = tempfile::tempdir().unwrap();
        let runner = Arc::new(FakeRunner {
            clock: clock.clone(),
            work,
            started: Mutex::new(Vec::new()),
        });
        let delivery = Arc::new(FakeDelivery {
            chat,
            arrived: Mutex::new(Vec::new()),
        });
        let scheduler = Scheduler::new(Parts {
            home: home.path().to_path_buf(),
            store: store.clone(),
            clock: clock.clone(),
            runner: runner.clone(),
            delivery: delivery.clone(),
            settings: Some(settings),
            claim_owner: "testhost:1".into(),
            observer: None,
        })
        .unwrap();
        Rig {
            store,
            clock,
            runner,
            delivery,
            scheduler,
            _home: home,
        }
    }

    /// Another process (pid) on the same store and clock.
    fn second(&self, pid: u32, work: Work, chat: Chat) -> Rig {
        Rig::on(
            Arc::new(self.store.as_process(pid)),
            self.clock.clone(),
            work,
            chat,
            settings(),
        )
    }

    fn ctx(&self) -> Context {
        Context {
            now: self.clock.now(),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        }
    }

    async fn add(&self, schedule: &str, prompt: &str) -> String {
        let new = NewJob {
            schedule: schedule.into(),
            prompt: prompt.into(),
            name: Some(prompt.into()),
            deliver: Some("telegram:42".into()),
            ..NewJob::default()
        };
        create_job(&*self.store, &new, &self.ctx())
            .await
            .unwrap()
            .id()
            .to_string()
    }

    async fn job(&self, id: &str) -> Job {
        self.store.get_job(&self.ctx(), id).await.unwrap().unwrap()
    }

    /// One pass, every claimed run carried to its end.
    async fn tick(&self) -> Vec<RunReport> {
        self.scheduler.tick().await.unwrap().unwrap_or_default()
    }

    /// Starts every run a pass claimed, each as a task of its own.
    fn spawn_all(&self, pass: super::PassReport) -> Vec<tokio::task::JoinHandle<RunReport>> {
        pass.pending
            .into_iter()
            .map(|pending| tokio::spawn(pending.run(self.scheduler.clone())))
            .collect()
    }

    fn started(&self) -> Vec<(String, DateTime<Utc>)> {
        self.runner.started.lock().unwrap().clone()
    }

    async fn runs(&self, job: &str) -> Vec<jobs::ledger::RunRow> {
        self.store.recent_runs(Some(job), 100).await.unwrap()
    }
}

/// Moves time (the manual clock follows tokio's paused timer).
async fn pass_time(by: Duration) {
    tokio::time::sleep(by).await;
}

#[tokio::test(start_paused = true)]
async fn an_occurrence_is_claimed_once_and_the_schedule_moves_before_it_runs() {
    let rig = Rig::new();
    let id = rig.add("every 1h", "report").await;
    assert!(rig.tick().await.is_empty(), "nothing is due at creation");
    pass_time(Duration::from_secs(3600)).await;
    let pass = rig.scheduler.pass().await.unwrap();
    assert_eq!(pass.pending.len(), 1);
    // Claimed and moved forward before anything ran: a second pass finds nothing.
    assert_eq!(
        rig.job(&id).await.next_run_at(&rig.ctx()),
        Some(at("2026-11-23T11:00:00Z"))
    );
    assert!(rig.scheduler.pass().await.unwrap().pending.is_empty());
    for pending in pass.pending {
        let report = pending.run(rig.scheduler.clone()).await;
        assert_eq!(report.status, RunStatus::Ok);
        assert_eq!(report.occurrence, format!("{id}@2026-11-23T10:00:00Z"));
    }
    let runs = rig.runs(&id).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Ok);
    let job = rig.job(&id).await;
    assert_eq!(job.last_status(), Some(RunStatus::Ok));
    assert_eq!(
        rig.delivery.arrived.lock().unwrap().as_slice(),
        ["done: report"]
    );
}

#[tokio::test(start_paused = true)]
async fn two_schedulers_on_one_store_run_every_occurrence_exactly_once() {
    let first = Rig::new();
    let second = first.second(2, Work::Answer(Duration::from_secs(5)), Chat::Up);
    let mut ids: Vec<String> = Vec::new();
    for n in 0..10 {
        ids.push(first.add("every 1m", &format!("job {n}")).await);
    }
    for n in 0..10 {
        let (schedule, prompt) = (format!("in {}m", n + 1), format!("once {n}"));
        ids.push(first.add(&schedule, &prompt).await);
    }
    for _ in 0..15 {
        pass_time(Duration::from_secs(60)).await;
        let (a, b) = tokio::join!(first.tick(), second.tick());
        assert!(a.iter().chain(&b).all(|r| r.status == RunStatus::Ok));
    }
    let mut fired: BTreeMap<String, usize> = BTreeMap::new();
    for (job, when) in first.started().into_iter().chain(second.started()) {
        *fired.entry(format!("{job}@{when}")).or_default() += 1;
    }
    assert!(
        fired.values().all(|&n| n == 1),
        "an occurrence ran twice: {fired:?}"
    );
    let per_job = |id: &str| fired.keys().filter(|k| k.starts_with(id)).count();
    for id in &ids[..10] {
        assert_eq!(per_job(id), 15, "every minute of 15, once each");
    }
    for id in &ids[10..] {
        assert_eq!(per_job(id), 1, "a one-shot fires once");
        assert_eq!(first.job(id).await.state(), JobState::Completed);
    }
    let mut occurrences: HashSet<String> = HashSet::new();
    for id in &ids {
        occurrences.extend(first.runs(id).await.into_iter().map(|r| r.occurrence));
    }
    assert_eq!(
        occurrences.len(),
        fired.len(),
        "one ledger row per occurrence"
    );
}

#[tokio::test(start_paused = true)]
async fn a_late_recurring_job_catches_up_once_and_resumes_from_now() {
    let rig = Rig::new();
    let id = rig.add("every 5m", "ping").await;
    // The machine slept for an hour: twelve occurrences were missed.
    rig.clock.advance(chrono::Duration::hours(1));
    let reports = rig.tick().await;
    assert_eq!(reports.len(), 1, "one catch-up fire, never a burst");
    let now = rig.clock.now();
    let next = rig.job(&id).await.next_run_at(&rig.ctx()).unwrap();
    assert!(
        next > now && next <= now + chrono::Duration::minutes(5),
        "{next}"
    );
    assert!(rig.tick().await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn with_catch_up_off_a_late_run_is_skipped_and_recorded() {
    let mut off = settings();
    off.catch_up_missed = false;
    let rig = Rig::fresh(Work::Answer(Duration::ZERO), Chat::Up, off);
    let id = rig.add("every 5m", "ping").await;
    rig.clock.advance(chrono::Duration::hours(1));
    let reports = rig.tick().await;
    // Reported (for `hermes cron tick` to print), not run.
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].status, RunStatus::Skipped);
    assert!(rig.started().is_empty());
    let runs = rig.runs(&id).await;
    assert_eq!(runs[0].status, RunStatus::Skipped);
    assert_eq!(
        runs[0].error.as_deref(),
        Some("skipped: late and catch-up is off")
    );
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_more_than_two_minutes_late_is_missed_not_run() {
    let rig = Rig::new();
    let id = rig.add("in 10m", "remind me").await;
    rig.clock.advance(chrono::Duration::minutes(20));
    let reports = rig.tick().await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].status, RunStatus::Missed);
    assert!(rig.started().is_empty(), "a missed one-shot never runs");
    let job = rig.job(&id).await;
    assert_eq!(job.state(), JobState::Completed);
    assert_eq!(job.last_status(), Some(RunStatus::Missed));
    assert_eq!(rig.runs(&id).await[0].status, RunStatus::Missed);
    let note = rig.store.latest_output(&id).await.unwrap().unwrap();
    assert!(note.contains("was not run"), "{note}");
}

#[tokio::test(start_paused = true)]
async fn a_job_whose_run_is_still_going_is_not_started_again() {
    let rig = Rig::fresh(Work::Answer(Duration::from_secs(150)), Chat::Up, settings());
    let id = rig.add("every 1m", "slow").await;
    pass_time(Duration::from_secs(60)).await;
    let first = rig.scheduler.pass().await.unwrap();
    assert_eq!(first.pending.len(), 1);
    let running: Vec<_> = first
        .pending
        .into_iter()
        .map(|p| tokio::spawn(p.run(rig.scheduler.clone())))
        .collect();
    pass_time(Duration::from_secs(60)).await;
    let second = rig.scheduler.pass().await.unwrap();
    assert!(
        second.pending.is_empty(),
        "the next occurrence waits for none"
    );
    let skipped = rig.runs(&id).await;
    assert_eq!(skipped[0].status, RunStatus::Skipped);
    assert_eq!(skipped[0].error.as_deref(), Some("skipped (still running)"));
    for handle in running {
        assert_eq!(handle.await.unwrap().status, RunStatus::Ok);
    }
    assert_eq!(rig.started().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_run_without_activity_is_stopped_at_the_limit_and_recorded_failed() {
    let mut limited = settings();
    limited.inactivity_timeout = Some(Duration::from_secs(30));
    let rig = Rig::fresh(Work::Hang, Chat::Up, limited);
    let id = rig.add("every 1m", "stuck").await;
    pass_time(Duration::from_secs(60)).await;
    let started = tokio::time::Instant::now();
    let reports = rig.tick().await;
    let stopped_after = started.elapsed();
    assert_eq!(reports.len(), 1);
    let error = reports[0].error.clone().unwrap();
    assert!(
        error.starts_with("stopped after 30s without activity (HERMES_CRON_TIMEOUT=30)"),
        "{error}"
    );
    assert!(stopped_after >= Duration::from_secs(30) && stopped_after <= Duration::from_secs(31));
    assert_eq!(rig.runs(&id).await[0].status, RunStatus::Error);
    assert_eq!(rig.job(&id).await.last_status(), Some(RunStatus::Error));
    // The failure notice still reaches the chat.
    let arrived = rig.delivery.arrived.lock().unwrap().clone();
    assert!(
        arrived[0].starts_with("failed: stopped after 30s"),
        "{arrived:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_delivery_cut_off_by_a_crash_is_sent_once_by_the_next_process() {
    let first = Rig::fresh(
        Work::Answer(Duration::ZERO),
        Chat::HangsAfterTracking,
        settings(),
    );
    let id = first.add("every 1h", "report").await;
    pass_time(Duration::from_secs(3600)).await;
    let pass = first.scheduler.pass().await.unwrap();
    let run = tokio::spawn(
        pass.pending
            .into_iter()
            .next()
            .unwrap()
            .run(first.scheduler.clone()),
    );
    pass_time(Duration::from_secs(5)).await;
    // The process dies while its message is being sent (nothing was out yet).
    run.abort();
    first.store.kill(1);
    let next = first.second(2, Work::Answer(Duration::ZERO), Chat::Up);
    let reports = next.tick().await;
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].status, RunStatus::Ok);
    assert_eq!(
        next.delivery.arrived.lock().unwrap().as_slice(),
        ["done: report"]
    );
    assert!(next.tick().await.is_empty(), "never sent twice");
    let occurrence = format!("{id}@2026-11-23T10:00:00Z");
    assert_eq!(
        next.store
            .delivery_state(&occurrence, TARGET)
            .await
            .unwrap()
            .as_deref(),
        Some("sent")
    );
    // The run itself never finished: the next daemon records it interrupted, not rerun.
    assert_eq!(next.scheduler.recover_interrupted().await.unwrap(), 1);
    assert_eq!(next.runs(&id).await[0].status, RunStatus::Interrupted);
    assert_eq!(next.started().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_daemon_fires_on_time_wakes_for_new_jobs_and_drains_on_shutdown() {
    let rig = Rig::new();
    let id = rig.add("every 1m", "tick").await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(super::run(rig.scheduler.clone(), async {
        let _ = stopped.await;
    }));
    pass_time(Duration::from_secs(150)).await;
    // Added while the daemon sleeps: picked up at once, due in 30 s.
    let late = {
        let new = NewJob {
            schedule: (rig.clock.now() + chrono::Duration::seconds(30)).to_rfc3339(),
            prompt: "once".into(),
            ..NewJob::default()
        };
        create_job(&*rig.store, &new, &rig.ctx())
            .await
            .unwrap()
            .id()
            .to_string()
    };
    pass_time(Duration::from_secs(40)).await;
    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
    let started = rig.started();
    let ticks: Vec<DateTime<Utc>> = started
        .iter()
        .filter(|(job, _)| *job == id)
        .map(|(_, when)| *when)
        .collect();
    assert_eq!(ticks.len(), 3, "09:01, 09:02 and 09:03 fired: {started:?}");
    for (n, when) in ticks.iter().enumerate() {
        let due = at(START) + chrono::Duration::minutes(n as i64 + 1);
        assert!(
            *when - due < chrono::Duration::milliseconds(300),
            "late: {when} for {due}"
        );
    }
    let once: Vec<_> = started.iter().filter(|(job, _)| *job == late).collect();
    assert_eq!(once.len(), 1);
    let heartbeat = rig.store.heartbeat().await.unwrap();
    assert!(
        heartbeat.seen && heartbeat.alive_at.is_none(),
        "a clean stop clears the heartbeat"
    );
}

#[tokio::test(start_paused = true)]
async fn runs_handed_out_and_waiting_for_a_slot_are_not_free_slots() {
    let rig = Rig::new();
    for n in 0..3 {
        rig.add("every 1h", &format!("hourly {n}")).await;
        rig.add("every 2h", &format!("two-hourly {n}")).await;
    }
    assert_eq!(rig.scheduler.free_slots(), Some(4));
    pass_time(Duration::from_secs(3600)).await;
    // Three claimed for four slots: one left, before and after they start.
    let pass = rig.scheduler.pass().await.unwrap();
    assert_eq!(pass.pending.len(), 3);
    assert_eq!(rig.scheduler.free_slots(), Some(1));
    let runs = rig.spawn_all(pass);
    tokio::task::yield_now().await;
    assert_eq!(rig.scheduler.free_slots(), Some(1));
    for run in runs {
        assert_eq!(run.await.unwrap().status, RunStatus::Ok);
    }
    assert_eq!(rig.scheduler.free_slots(), Some(4));
    // Six claimed for four slots: none free while two wait; one dropped before it starts
    // gives its place back.
    pass_time(Duration::from_secs(3600)).await;
    let pass = rig.scheduler.pass().await.unwrap();
    assert_eq!(pass.pending.len(), 6);
    assert_eq!(rig.scheduler.free_slots(), Some(0));
    let mut runs = rig.spawn_all(pass);
    tokio::task::yield_now().await;
    assert_eq!(rig.scheduler.free_slots(), Some(0));
    for run in runs.drain(4..) {
        run.abort();
        assert!(run.await.is_err(), "it was waiting for a slot");
    }
    assert_eq!(rig.scheduler.free_slots(), Some(0));
    for run in runs {
        assert_eq!(run.await.unwrap().status, RunStatus::Ok);
    }
    assert_eq!(rig.scheduler.free_slots(), Some(4));
}

/// A run that waited for a free slot after its claim is recorded as started when it got
/// the slot, not when it was claimed.
#[tokio::test(start_paused = true)]
async fn a_run_that_waits_for_a_slot_records_when_it_really_started() {
    let rig = Rig::new();
    let mut ids: Vec<String> = Vec::new();
    for n in 0..6 {
        ids.push(rig.add("every 1h", &format!("hourly {n}")).await);
    }
    pass_time(Duration::from_secs(3600)).await;
    let due = rig.clock.now();
    let reports = rig.tick().await;
    assert_eq!(reports.len(), 6);
    let mut started: Vec<DateTime<Utc>> = Vec::new();
    for id in &ids {
        let runs = rig.runs(id).await;
        started.push(at(runs[0].started_at.as_deref().unwrap()));
    }
    started.sort();
    // Four slots: four start at once, two when the first runs end a second later.
    let second = chrono::Duration::seconds(1);
    assert_eq!(started, [due, due, due, due, due + second, due + second]);
}

/// Others' claims waiting for a run slot wake a daemon only when it has a free slot: a
/// daemon with every slot busy sleeps on, and passes as soon as a slot frees up.
#[tokio::test(start_paused = true)]
async fn a_backlog_elsewhere_wakes_the_daemon_only_with_a_free_slot() {
    let one_slot = CronSettings {
        max_parallel: Some(1),
        ..settings()
    };
    let rig = Rig::fresh(Work::Answer(Duration::from_secs(30)), Chat::Up, one_slot);
    rig.add("every 1h", "hourly").await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(super::run(rig.scheduler.clone(), async {
        let _ = stopped.await;
    }));
    let last_pass = async || rig.store.heartbeat().await.unwrap().alive_at;
    // 10:00: the hourly job fires and holds the only slot for 30 s.
    pass_time(Duration::from_secs(3601)).await;
    assert_eq!(rig.started().len(), 1);
    assert_eq!(rig.scheduler.free_slots(), Some(0));
    let busy_pass = last_pass().await;
    rig.store.note_backlog();
    pass_time(Duration::from_secs(10)).await;
    assert_eq!(
        last_pass().await,
        busy_pass,
        "no free slot: no pass for the backlog"
    );
    // The run ends at 10:00:30 and frees the slot: a pass for the backlog at once (the
    // loop's own wake-up would come at 10:01).
    pass_time(Duration::from_secs(21)).await;
    let freed = at("2026-11-23T10:00:30Z");
    assert!(
        last_pass()
            .await
            .is_some_and(|at| at >= freed && at <= rig.clock.now()),
        "{:?}",
        last_pass().await
    );
    // With the slot free, a new backlog is looked at within a watch interval.
    let idle_pass = last_pass().await;
    pass_time(Duration::from_secs(5)).await;
    assert_eq!(last_pass().await, idle_pass, "nothing to do: asleep");
    rig.store.note_backlog();
    pass_time(Duration::from_secs(1)).await;
    assert!(last_pass().await > idle_pass, "{:?}", last_pass().await);
    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
}

/// A job added while a pass is deciding (after it read the store, before the loop goes
/// to sleep) is seen at the next look, not at the loop's own wake-up a minute later.
#[tokio::test(start_paused = true)]
async fn a_job_added_while_a_pass_decides_is_picked_up_at_the_next_look() {
    let rig = Rig::new();
    let (store, ctx) = (rig.store.clone(), rig.ctx());
    rig.store.after_next_pass(move || async move {
        let new = NewJob {
            schedule: "2026-11-23T09:00:10Z".into(),
            prompt: "added".into(),
            name: Some("added".into()),
            ..NewJob::default()
        };
        create_job(&*store, &new, &ctx).await.unwrap();
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(super::run(rig.scheduler.clone(), async {
        let _ = stopped.await;
    }));
    pass_time(Duration::from_secs(11)).await;
    let started = rig.started();
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0].1, at("2026-11-23T09:00:10Z"));
    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn under_the_global_pause_due_jobs_stay_due_and_fire_after_the_resume() {
    let rig = Rig::new();
    let id = rig.add("every 1h", "report").await;
    pass_time(Duration::from_secs(3600)).await;
    let pause = jobs::estop::GlobalPause {
        engaged_at: None,
        reason: Some("deploy".into()),
    };
    rig.store.set_global_pause(Some(&pause)).await.unwrap();
    let paused = rig.scheduler.pass().await.unwrap();
    assert!(paused.pending.is_empty());
    assert_eq!(
        paused.next_wake,
        Some(rig.clock.now() + chrono::Duration::seconds(1)),
        "a paused scheduler looks again soon"
    );
    assert_eq!(
        rig.job(&id).await.next_run_at(&rig.ctx()),
        Some(at("2026-11-23T10:00:00Z")),
        "the job stays due"
    );
    pass_time(Duration::from_secs(600)).await;
    rig.store.set_global_pause(None).await.unwrap();
    let reports = rig.tick().await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].occurrence, format!("{id}@2026-11-23T10:00:00Z"));
}

impl Rig {
    /// A job chained after `upstream` (on `on`), with a daily schedule of its own.
    async fn chained(&self, upstream: &str, on: &str) -> String {
        let new = NewJob {
            schedule: "every 24h".into(),
            prompt: "follow".into(),
            name: Some("follow".into()),
            after: Some(upstream.into()),
            after_on: Some(on.into()),
            ..NewJob::default()
        };
        create_job(&*self.store, &new, &self.ctx())
            .await
            .unwrap()
            .id()
            .to_string()
    }
}

#[tokio::test(start_paused = true)]
async fn a_chain_runs_once_per_upstream_run_one_at_a_time_oldest_first() {
    let rig = Rig::new();
    let up = rig.add("every 1h", "report").await;
    let down = rig.chained(&up, "success").await;
    // Two upstream runs end before the chain is looked at: two chained runs owed.
    let first = rig.scheduler.run_now(rig.job(&up).await).await.unwrap();
    pass_time(Duration::from_secs(2)).await;
    let second = rig.scheduler.run_now(rig.job(&up).await).await.unwrap();
    assert_eq!(
        (first.status, second.status),
        (RunStatus::Ok, RunStatus::Ok)
    );
    let upstream: Vec<i64> = rig.runs(&up).await.iter().rev().map(|r| r.id).collect();

    let pass = rig.scheduler.pass().await.unwrap();
    assert_eq!(pass.pending.len(), 1, "one chained run at a time");
    // While it runs, the next one waits.
    assert!(rig.scheduler.pass().await.unwrap().pending.is_empty());
    for handle in rig.spawn_all(pass) {
        handle.await.unwrap();
    }
    rig.tick().await;
    rig.tick().await;
    let chained: Vec<String> = rig
        .runs(&down)
        .await
        .iter()
        .rev()
        .map(|r| r.occurrence.clone())
        .collect();
    let expected: Vec<String> = upstream
        .iter()
        .map(|run| jobs::chain::occurrence(&down, *run))
        .collect();
    assert_eq!(chained, expected, "oldest first, once each");
    let ran: Vec<String> = rig.started().into_iter().map(|(id, _)| id).collect();
    assert_eq!(ran, vec![up.clone(), up.clone(), down.clone(), down]);
}

#[tokio::test(start_paused = true)]
async fn a_chain_ignores_runs_before_it_was_set_and_outcomes_it_does_not_wait_for() {
    let rig = Rig::new();
    let up = rig.add("every 1h", "report").await;
    rig.scheduler.run_now(rig.job(&up).await).await.unwrap();
    pass_time(Duration::from_secs(5)).await;
    let on_failure = rig.chained(&up, "failure").await;
    let on_success = rig.chained(&up, "success").await;
    assert!(rig.tick().await.is_empty(), "the run before the chain");
    pass_time(Duration::from_secs(5)).await;
    rig.scheduler.run_now(rig.job(&up).await).await.unwrap();
    rig.tick().await;
    assert!(rig.runs(&on_failure).await.is_empty());
    assert_eq!(rig.runs(&on_success).await.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_redelivery_sends_the_stored_answer_again_without_running_anything() {
    let rig = Rig::new();
    let id = rig.add("every 1h", "report").await;
    rig.scheduler.run_now(rig.job(&id).await).await.unwrap();
    let row = rig.runs(&id).await.remove(0);
    let report = rig.scheduler.resend(&row, None).await.unwrap();
    assert_eq!(report.error, None);
    assert_eq!(
        *rig.delivery.arrived.lock().unwrap(),
        vec!["done: report".to_string(), "done: report".to_string()]
    );
    assert_eq!(rig.started().len(), 1, "no run, no model request");
    let after = rig.runs(&id).await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].delivery.as_deref(), Some("sent: telegram:42"));
}

#[tokio::test(start_paused = true)]
async fn overdue_runs_found_at_start_are_spread_over_the_default_five_minutes_in_due_order() {
    let mut spread = settings();
    spread.catch_up_spread = chrono::Duration::minutes(5);
    let rig = Rig::fresh(Work::Answer(Duration::from_secs(1)), Chat::Up, spread);
    let mut ids = Vec::new();
    // Due at 10:00, 10:01, … 10:19; the scheduler starts at 12:00.
    for n in 0..20 {
        ids.push(
            rig.add(&format!("every {}m", 60 + n), &format!("job {n}"))
                .await,
        );
    }
    pass_time(Duration::from_secs(3 * 3600)).await;
    let started_at = rig.clock.now();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(super::run(rig.scheduler.clone(), async {
        let _ = stopped.await;
    }));
    pass_time(Duration::from_secs(330)).await;
    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
    let started = rig.started();
    let order: Vec<&String> = started.iter().map(|(id, _)| id).collect();
    assert_eq!(
        order,
        ids.iter().collect::<Vec<_>>(),
        "oldest due first, each once"
    );
    for pair in started.windows(2) {
        assert!(
            pair[1].1 - pair[0].1 >= chrono::Duration::seconds(1),
            "two starts in one second: {pair:?}"
        );
    }
    let last = started.last().unwrap().1;
    assert_eq!(started[0].1, started_at, "the oldest starts at once");
    assert!(last < started_at + chrono::Duration::minutes(5), "{last}");
    assert!(
        last >= started_at + chrono::Duration::minutes(4),
        "spread over the window: {last}"
    );
}

#[tokio::test(start_paused = true)]
async fn with_no_spread_overdue_runs_all_start_at_once() {
    let rig = Rig::new();
    // As many as the run slots (cron.max_parallel_jobs: 4).
    for n in 0..4 {
        rig.add(&format!("every {}m", 60 + n), &format!("job {n}"))
            .await;
    }
    pass_time(Duration::from_secs(3 * 3600)).await;
    let now = rig.clock.now();
    assert_eq!(rig.tick().await.len(), 4);
    assert!(rig.started().iter().all(|(_, at)| *at == now));
}

#[tokio::test(start_paused = true)]
async fn a_cancel_from_another_process_stops_a_hanging_run_without_alert_or_delivery() {
    let rig = Rig::fresh(Work::Hang, Chat::Up, settings());
    let other = rig.second(2, Work::Hang, Chat::Up);
    let id = rig.add("every 1h", "hangs").await;
    pass_time(Duration::from_secs(3600)).await;
    let mut handles = rig.spawn_all(rig.scheduler.pass().await.unwrap());
    pass_time(Duration::from_secs(3)).await;
    let next = rig.job(&id).await.next_run_at(&rig.ctx());
    let asked = other
        .store
        .request_cancel(jobs::ledger::CancelTarget::Job(&id), other.clock.now())
        .await
        .unwrap();
    assert_eq!(asked.len(), 1);
    pass_time(Duration::from_millis(1100)).await;
    let report = handles.remove(0).await.unwrap();
    assert_eq!(report.status, RunStatus::Cancelled);
    let runs = rig.runs(&id).await;
    assert_eq!(runs[0].status, RunStatus::Cancelled);
    assert_eq!(
        runs[0].delivery.as_deref(),
        Some("none: the run was cancelled")
    );
    assert!(rig.delivery.arrived.lock().unwrap().is_empty());
    assert!(rig.store.incidents(None).await.unwrap().is_empty());
    let job = rig.job(&id).await;
    assert_eq!(job.last_status(), Some(RunStatus::Cancelled));
    assert_eq!(job.failure_streak(), 0);
    assert_eq!(
        job.next_run_at(&rig.ctx()),
        next,
        "the schedule is untouched"
    );
}
