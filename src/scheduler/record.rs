//! Record: what a finished run leaves behind, in order — its output document, its
//! incident (a failure; see [`super::alert`]), its delivery (each destination kept in
//! the outbox before its first request, so a crash mid-delivery never resends what may
//! have arrived), the job's outcome fields and the ledger row. A failed delivery never
//! turns a good run into a failed one; a reply whose first line is `[CRON_FAILURE]`
//! does.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use jobs::ledger::{RunEnd, RunSource, RunStatus};
use jobs::outbox::{retry_delay, NewOutboxItem, OutboxState};
use jobs::output::{Gate, OutputDocument};
use jobs::store::Flight;
use jobs::{Context, Job, JobState};

use super::aftermath::{self, Aftermath, Notice, Plan};
use super::alert::Joined;
use super::budget;
use super::execute::ClaimedRun;
use super::settings::CronSettings;
use super::{lock, BoxFuture, RunReport, Scheduler};
use crate::agent::prompt::cron_failure_evidence;
use crate::delivery::http::{self, FlightRecorder};
use crate::delivery::{Delivered, DeliveryReport, HomeFiles, RunDelivery, SettledAs, Tracked};
use crate::redact::Redactor;
use crate::runner::{RunEnv, RunOutcome, RunResult};
use crate::world::World;

/// What a finished run changes in its job.
pub(super) struct JobRecord {
    job_id: String,
    last_run_at: DateTime<Utc>,
    zone: Tz,
    last_status: RunStatus,
    error: Option<String>,
    delivery_error: Option<String>,
    source: RunSource,
    /// Re-run, hold or neither ([`aftermath`]).
    plan: Plan,
    preflight_alerted: Option<bool>,
    /// Stopped on request ([`super::cancel`]): the status is said, nothing else of the
    /// job's outcome changes (no error, the failure streak kept, the schedule kept).
    cancelled: bool,
}

impl JobRecord {
    /// What a cancelled run changes in its job: its last run and status, nothing else.
    pub(super) fn cancelled(
        job_id: &str,
        last_run_at: DateTime<Utc>,
        zone: Tz,
        source: RunSource,
    ) -> JobRecord {
        JobRecord {
            job_id: job_id.to_string(),
            last_run_at,
            zone,
            last_status: RunStatus::Cancelled,
            error: None,
            delivery_error: None,
            source,
            plan: Plan::Keep,
            preflight_alerted: None,
            cancelled: true,
        }
    }

    fn apply(&self, stored: &mut Job, ctx: &Context) {
        // The run is over: no scheduler needs to keep off the job any more.
        if stored.has_run_claim() {
            stored.set_run_claim(None, self.zone);
        }
        stored.set_last_run_at(Some(self.last_run_at), self.zone);
        if self.cancelled {
            stored.record_cancelled();
        } else {
            self.apply_outcome(stored, ctx);
        }
        if self.source == RunSource::Scheduler {
            let repeat = stored.repeat();
            let used_up = repeat.times.is_some_and(|t| repeat.completed >= t);
            let one_shot = stored.schedule(ctx).is_ok_and(|s| !s.is_recurring());
            // The pass that fired the last run before `until` left no next run.
            let ended = stored.next_run_at(ctx).is_none() && stored.instant("until", ctx).is_some();
            if (used_up || one_shot || ended) && stored.state() != JobState::Paused {
                stored.complete();
            }
        }
    }

    fn apply_outcome(&self, stored: &mut Job, ctx: &Context) {
        stored.record_outcome(
            &self.last_status,
            self.error.as_deref(),
            self.delivery_error.as_deref(),
        );
        if let Some(error) = &self.error {
            stored.stamp_failure(self.last_run_at, self.zone, error);
        }
        if let Some(alerted) = self.preflight_alerted {
            stored.set_preflight_alerted(alerted);
        }
        self.plan.apply(stored, ctx, self.zone);
    }
}

/// The run's texts as saved and sent: secrets redacted.
struct Texts {
    /// The reply, or the error text.
    result: Result<String, String>,
    /// The run's error, when it failed.
    error: Option<String>,
    /// The agent declared the run failed (`[CRON_FAILURE]`): `error` is its evidence and
    /// `result` keeps the whole reply for the output document.
    declared: bool,
    prompt: String,
}

impl Texts {
    /// `agent`: the reply came from an agent (a script's output never declares failure).
    fn of(outcome: &RunOutcome, redactor: &Redactor, agent: bool) -> Texts {
        const EMPTY: &str = "Agent completed but produced empty response";
        let evidence = match &outcome.result {
            RunResult::Reply(text) | RunResult::Silent(text) if agent => {
                cron_failure_evidence(text)
            }
            _ => None,
        };
        let declared = evidence.is_some();
        let (result, error) = match &outcome.result {
            RunResult::Reply(text) if text.trim().is_empty() => {
                (Err(EMPTY.to_string()), Some(EMPTY.to_string()))
            }
            RunResult::Reply(text) | RunResult::Silent(text) => (Ok(text.clone()), evidence),
            RunResult::Failed(error) => (Err(error.clone()), Some(error.clone())),
            RunResult::OverBudget(stop) => (Err(stop.document()), Some(stop.error.clone())),
        };
        Texts {
            result: result
                .map(|text| redactor.redact(&text))
                .map_err(|e| redactor.redact(&e)),
            error: error.map(|e| redactor.redact(&e)),
            declared,
            prompt: redactor.redact(&outcome.prompt),
        }
    }

    fn delivered<'a>(&'a self, outcome: &RunOutcome, notice: &'a Notice) -> Delivered<'a> {
        match (&self.result, &self.error, &outcome.result, notice) {
            (_, Some(_), _, Notice::Withheld) => Delivered::Silent,
            (Ok(_), Some(evidence), _, _) if self.declared => Delivered::Declared(evidence),
            (Ok(_), _, RunResult::Silent(_), _) => Delivered::Silent,
            (Ok(text), _, _, _) => Delivered::Reply(text),
            (Err(_), _, _, Notice::Composed(text)) => Delivered::Notice(text),
            // A stopped run's notice names the cap; its document keeps the rest.
            (Err(_), Some(error), RunResult::OverBudget(_), _) => Delivered::Failed(error),
            (Err(e), _, _, Notice::FromError | Notice::Withheld) => Delivered::Failed(e),
        }
    }

    /// The error recorded instead of the runner's (`[blocked_config] …`).
    fn recorded_as(&mut self, error: &str, redactor: &Redactor) {
        let error = redactor.redact(error);
        self.result = Err(error.clone());
        self.error = Some(error);
    }
}

/// A finished run on its way to the record.
struct Finished<'a> {
    claimed: &'a ClaimedRun,
    /// The home's files as the run was given them (its redactor among them).
    world: Arc<World>,
    started: DateTime<Utc>,
    /// The job's zone: its times are written in it.
    zone: Tz,
    ctx: Context,
    settings: CronSettings,
    texts: Texts,
    outcome: RunOutcome,
    after: Aftermath,
}

/// One run's delivery bookkeeping: the outbox key and what a kept row says of the run.
pub(super) struct Bookkeeping<'a> {
    /// The outbox occurrence: a manual run's key is made unique by its ledger row.
    pub(super) key: String,
    pub(super) job: &'a Job,
    /// The run's `last_run_at`, kept with the zone it is written in.
    pub(super) run_at: DateTime<Utc>,
    pub(super) run_zone: Tz,
    pub(super) now: DateTime<Utc>,
    pub(super) expires: DateTime<Utc>,
}

impl<'a> Bookkeeping<'a> {
    pub(super) fn item(&'a self, target: &'a str, payload: &'a str) -> NewOutboxItem<'a> {
        NewOutboxItem {
            occurrence: &self.key,
            target,
            job_id: self.job.id(),
            run_at: self.run_at,
            run_zone: self.run_zone,
            payload,
            sent_parts: 0,
            error: "",
            now: self.now,
            first_retry: self.now + retry_delay(0),
            expires_at: self.expires,
        }
    }
}

impl Scheduler {
    /// Saves, delivers and records a finished run.
    pub(super) async fn record(
        &self,
        claimed: &ClaimedRun,
        env: &RunEnv,
        started: DateTime<Utc>,
        outcome: RunOutcome,
    ) -> RunReport {
        // The run's own config and zones; only "now" has moved on.
        let ctx = Context {
            now: self.now(),
            ..env.ctx
        };
        let settings = claimed.settings.clone();
        let redactor = &env.world.redactor;
        let mut texts = Texts::of(&outcome, redactor, claimed.job.kind().runs_agent());
        let after = aftermath::decide(claimed, &outcome, texts.error.is_some(), &ctx, &settings);
        if let Some(error) = &after.error {
            texts.recorded_as(error, redactor);
        }
        let run = Finished {
            claimed,
            started,
            zone: claimed.job.zone(&ctx),
            texts,
            world: Arc::clone(&env.world),
            ctx,
            settings,
            outcome,
            after,
        };
        let output = self.save_document(&run).await;
        let job = &claimed.job;
        // A spent global budget is no failure of the job: no incident, and one notice
        // per window (budget.rs).
        let exhausted = budget::exhausted_notice(&run.outcome);
        let joined = match (&run.texts.error, exhausted) {
            (Some(_), Some(_)) => None,
            (Some(error), None) => {
                self.join_incident(job, error, output.as_deref(), &ctx, &run.settings)
                    .await
            }
            (None, _) => {
                self.resolve_incidents(job, &ctx).await;
                None
            }
        };
        let delivery = match (joined.as_ref().and_then(Joined::withheld), exhausted) {
            (_, Some(true)) => {
                let notified = budget::notice_job(job, &env.world.config);
                self.deliver(&run, &notified).await
            }
            (_, Some(false)) => DeliveryReport {
                summary: "withheld: the notice of this spent budget went out already".into(),
                ..DeliveryReport::default()
            },
            (Some(withheld), None) => withheld,
            (None, None) => self.deliver(&run, job).await,
        };
        if let Some(joined) = &joined {
            self.note_alert(joined, &delivery, &ctx).await;
        }
        let texts = &run.texts;
        let stopped = budget::status_of(&run.outcome);
        let status = match (&stopped, &texts.error) {
            (Some(status), _) => status.clone(),
            (None, Some(_)) => RunStatus::Error,
            (None, None) => RunStatus::Ok,
        };
        let last_status = match (stopped, &texts.error, &delivery.error) {
            (Some(status), _, _) => status,
            (None, Some(_), _) => run.after.status.clone().unwrap_or(RunStatus::Error),
            (None, None, Some(_)) => RunStatus::DeliveryFailed,
            (None, None, None) => RunStatus::Ok,
        };
        self.record_in_store(JobRecord {
            job_id: job.id().to_string(),
            last_run_at: started,
            zone: run.zone,
            last_status,
            error: texts.error.clone(),
            delivery_error: delivery.error.clone(),
            source: claimed.source,
            plan: run.after.plan.clone(),
            preflight_alerted: run.after.preflight_alerted,
            cancelled: false,
        })
        .await;
        let end = RunEnd {
            error: texts.error.clone(),
            delivery: Some(delivery.summary.clone()),
            prompt_tokens: run.outcome.prompt_tokens,
            completion_tokens: run.outcome.completion_tokens,
            cost_usd: run.outcome.cost_usd,
            model: run.outcome.model.clone(),
            output: output.clone(),
            identity: Some(claimed.identity(started)),
        };
        let finished = self.now();
        if let Err(e) = self
            .store()
            .finish_run(claimed.run, status.clone(), finished, &end)
            .await
        {
            tracing::error!(job = job.id(), "cannot record the run in the ledger: {e}");
        }
        self.observe(|o| o.run_ended(&status));
        self.observe_spend(job, &run.outcome);
        RunReport {
            job_id: job.id().to_string(),
            job_name: job.name().to_string(),
            occurrence: claimed.occurrence(),
            status,
            error: run.texts.error,
            output,
            response: run.texts.result.ok(),
            delivery: Some(delivery.summary),
        }
    }

    async fn save_document(&self, run: &Finished<'_>) -> Option<String> {
        let job = &run.claimed.job;
        let schedule = job
            .schedule(&run.ctx)
            .map(|s| s.display().to_string())
            .unwrap_or_default();
        // A run stopped before its agent writes its status lines, and what it says
        // under them, as Hermes 0.22 does.
        let gate = run.outcome.signals.gate.as_ref();
        let detail = gate
            .and_then(|g| g.detail.as_deref())
            .map(|d| run.world.redactor.redact(d));
        let result = run.texts.result.as_deref().map_err(String::as_str);
        let doc = OutputDocument {
            job_id: job.id(),
            job_name: job.name(),
            schedule: &schedule,
            run_time: run.started,
            zone: run.zone,
            prompt: &run.texts.prompt,
            result: match (&detail, result) {
                (Some(detail), Ok(_)) => Ok(detail.as_str()),
                (Some(detail), Err(_)) => Err(detail.as_str()),
                (None, result) => result,
            },
            gate: gate.map(|g| Gate {
                mode: g.mode,
                status: &g.status,
            }),
        };
        self.store()
            .save_output(&doc, run.settings.output_retention)
            .await
            .map_err(|e| tracing::error!(job = job.id(), "cannot save the output document: {e}"))
            .ok()
    }

    /// Sends the run's result to `job`'s targets (the run's job, or the one its budget
    /// notice goes to). Each destination gets its outbox row before its first request
    /// (write-ahead): if this process dies while delivering, a later pass sends what did
    /// not go out and never resends what may have.
    async fn deliver(&self, run: &Finished<'_>, job: &Job) -> DeliveryReport {
        let claimed = run.claimed;
        let books = Bookkeeping {
            key: match claimed.source {
                RunSource::Scheduler | RunSource::Chain | RunSource::Backfill => {
                    claimed.occurrence()
                }
                RunSource::Manual | RunSource::Replay => {
                    format!("{}#{}", claimed.occurrence(), claimed.run)
                }
            },
            job,
            run_at: run.started,
            run_zone: run.zone,
            now: run.ctx.now,
            expires: run.ctx.now
                + chrono::Duration::from_std(run.settings.delivery_retry)
                    .unwrap_or(chrono::Duration::hours(6)),
        };
        let books = &books;
        let track = |target, payload| self.track(books, job, target, payload);
        let streak = job.failure_streak();
        let report = self
            .parts
            .delivery
            .deliver(RunDelivery {
                home: &self.parts.home,
                files: HomeFiles {
                    environment: &run.world.environment,
                    redactor: &run.world.redactor,
                    config: &run.world.config,
                },
                job,
                scheduled_at: claimed.scheduled_at.unwrap_or(run.started),
                result: run.texts.delivered(&run.outcome, &run.after.notice),
                failure_streak: if run.texts.error.is_some() {
                    streak + 1
                } else {
                    0
                },
                wrap_response: run.settings.wrap_response,
                notify: run.settings.notify,
                track: Some(&track),
            })
            .await;
        self.keep_outcomes(&report, books).await;
        report
    }

    /// Closes the outbox rows of the sends that were tracked, and keeps the transient
    /// failures of untracked ones for a retry on a later pass.
    pub(super) async fn keep_outcomes(&self, report: &DeliveryReport, books: &Bookkeeping<'_>) {
        let job = books.job.id();
        for settled in &report.settled {
            let state = match settled.outcome {
                SettledAs::Sent => OutboxState::Sent,
                SettledAs::Retry => OutboxState::Pending,
                SettledAs::Failed => OutboxState::Failed,
            };
            if state == OutboxState::Failed {
                self.observe(|o| o.delivery_failed());
            }
            let finished = self
                .store()
                .finish_delivery(
                    settled.row,
                    state,
                    books.now,
                    settled.sent_parts,
                    settled.error.as_deref(),
                )
                .await;
            if let Err(e) = finished {
                tracing::error!(job, "cannot record the delivery in the outbox: {e}");
            }
        }
        for pending in &report.retry_later {
            let mut item = books.item(&pending.target, &pending.payload);
            item.sent_parts = pending.sent_parts;
            item.error = &pending.error;
            if let Err(e) = self.store().keep_delivery(&item, false).await {
                tracing::error!(job, "cannot keep the failed delivery for a retry: {e}");
            }
        }
    }

    /// Marks outbox row `id` in flight while each of its requests is out, and counts the
    /// parts that arrived.
    pub(super) fn flight_recorder(&self, id: i64) -> FlightRecorder {
        let store = Arc::clone(&self.parts.store);
        Arc::new(move |flight| {
            let flight = match flight {
                http::Flight::Out => Flight::Out,
                http::Flight::Back { delivered } => Flight::Back { delivered },
            };
            let store = Arc::clone(&store);
            Box::pin(async move {
                if let Err(e) = store.flight(id, flight).await {
                    tracing::warn!(row = id, "cannot mark the outbox row: {e}");
                }
            })
        })
    }

    /// Queues a run's outcome and writes every queued one in a single store update,
    /// unless another task is already writing (it picks this one up before it stops).
    pub(super) async fn record_in_store(&self, record: JobRecord) {
        lock(&self.records).push(record);
        loop {
            {
                let Ok(_writer) = self.flushing.try_lock() else {
                    return;
                };
                loop {
                    let batch = std::mem::take(&mut *lock(&self.records));
                    if batch.is_empty() {
                        break;
                    }
                    self.write_records(batch).await;
                }
            }
            // A record queued after the last take but before the writer stepped down
            // would otherwise wait for the next run: look once more.
            if lock(&self.records).is_empty() {
                return;
            }
        }
    }

    async fn write_records(&self, batch: Vec<JobRecord>) {
        let ctx = match self.context() {
            Ok((ctx, _)) => ctx,
            Err(e) => {
                tracing::error!("cannot record {} run(s) in the store: {e}", batch.len());
                return;
            }
        };
        let ids: HashSet<String> = batch.iter().map(|r| r.job_id.clone()).collect();
        let count = batch.len();
        let apply = Box::new(move |stored: &mut Job| {
            // Several runs of one job in a batch apply in the order they ended.
            let id = stored.id().to_string();
            for record in batch.iter().filter(|r| r.job_id == id) {
                record.apply(stored, &ctx);
            }
        });
        if let Err(e) = self.store().update_jobs(&ctx, ids, apply).await {
            tracing::error!("cannot record {count} run(s) in the store: {e}");
        }
    }
}

impl Scheduler {
    /// Keeps one destination's send in the outbox before its first request.
    pub(super) fn track<'a>(
        &'a self,
        books: &'a Bookkeeping<'a>,
        job: &'a Job,
        target: String,
        payload: String,
    ) -> BoxFuture<'a, Tracked> {
        Box::pin(async move {
            let kept = self
                .store()
                .keep_delivery(&books.item(&target, &payload), true)
                .await;
            let row = kept
                .map_err(|e| {
                    tracing::error!(
                        job = job.id(),
                        "cannot keep the delivery in the outbox: {e}"
                    )
                })
                .ok()
                .flatten()?;
            Some((row, self.flight_recorder(row)))
        })
    }
}
