//! Delivery of a run's result (docs/DELIVERY.md): where it goes, what it says, and sending it
//! over each chat platform's real API (one sender module per platform) or to a webhook.
//!
//! * Targets are resolved when the run ends, from the real environment over
//!   `<home>/.env` (read afresh each run): see [`target`] for the grammar. A target
//!   that resolves to nothing is the delivery error
//!   `no delivery target resolved for deliver=<target>`; `local`, and `origin` with no
//!   origin and no home channel anywhere, send nothing and are not errors.
//! * The text is the reply inside the response wrapper (docs/DELIVERY.md; `cron.wrap_response: false` sends the
//!   bare reply); a failed run sends a one-line notice naming the error class, with a
//!   nudge from the third failure in a row, to `failure_deliver` when the job has one
//!   (`local` mutes it); a silent run sends nothing. Everything sent
//!   is secret-redacted ([`foundation::redact`]). `MEDIA:/path` lines become attachments.
//! * Webhooks get `{job_id, name, scheduled_at, status, text}` with the unwrapped text.
//! * Transient failures (connection refused, 429, 5xx) are retried within the run;
//!   what still failed is returned as [`PendingDelivery`] for the outbox, retried on
//!   later passes for `cron.delivery_retry_hours`. Failures that retrying cannot fix
//!   (403, unknown chat, missing token) and sends whose outcome is unknown (a timeout
//!   after the request went out) are recorded and never repeated.
//!
//! This crate never touches jobs.json or the ledger: the scheduler records what it
//! returns. It depends on `jobs` (the job and its targets) and `foundation` (`.env`,
//! config.yaml, redaction, the address policy), never on the binary: the scheduler uses
//! its [`Delivery`] trait from here.

pub mod bluebubbles;
pub mod channels;
pub mod dingtalk;
pub mod discord;
pub mod email;
pub mod feishu;
pub mod format;
pub mod homeassistant;
pub mod http;
pub mod matrix;
pub mod mattermost;
pub mod platform_delivery;
pub mod platforms;
pub mod qqbot;
pub mod sender;
pub mod signal;
pub mod slack;
pub mod sms;
pub mod target;
pub mod telegram;
pub mod webhook;
pub mod websocket;
pub mod wecom;
pub mod wecom_callback;
pub mod weixin;
pub mod whatsapp;
pub mod whatsapp_cloud;
pub mod yuanbao;
pub mod yuanbao_proto;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use jobs::Job;

use foundation::config::Config;
use foundation::environment::Environment;
use foundation::logged::logged;
use foundation::outbound::{AddressPolicy, Door};
use foundation::redact::Redactor;
use http::Failure;
use target::Destination;

/// A boxed future, for the object-safe [`Delivery`] trait.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends what runs produced. [`platform_delivery::PlatformDelivery`] speaks to the real chat APIs; the
/// scheduler holds an `Arc<dyn Delivery>`, so its tests pass a fake.
pub trait Delivery: Send + Sync {
    /// Sends one finished run's result to its job's targets.
    fn deliver<'a>(&'a self, run: RunDelivery<'a>) -> BoxFuture<'a, DeliveryReport>;
    /// Sends a kept message again to one target key, skipping the `skip` items that
    /// arrived before. `Ok` when it arrived; else the failure and the items now arrived.
    fn retry<'a>(
        &'a self,
        files: HomeFiles<'a>,
        target: &'a str,
        payload: &'a str,
        skip: usize,
    ) -> BoxFuture<'a, Result<(), (Failure, usize)>>;
}

/// What every send of a delivery shares, for as long as the delivery lives (the daemon's
/// lifetime): built once with the delivery, never a process-wide global, so a test
/// builds its own.
pub struct Shared {
    /// One client: connection reuse across parts and jobs.
    pub client: reqwest::Client,
    /// The slots of every chat sent to.
    pub pacer: http::Pacer,
    /// The rate limits Discord's answers announced.
    pub discord: discord::Limits,
    /// Channel names resolved to ids.
    pub channels: channels::Cache,
}

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            client: http::build_client(),
            pacer: http::Pacer::default(),
            discord: discord::Limits::default(),
            channels: channels::Cache::default(),
        }
    }
}

/// What a finished run hands to delivery.
#[derive(Debug, Clone, Copy)]
pub enum Delivered<'a> {
    /// A reply to send.
    Reply(&'a str),
    /// The run failed with this error: a notice is sent.
    Failed(&'a str),
    /// The run failed and this is its notice, composed already.
    Notice(&'a str),
    /// The agent declared the run failed (`[CRON_FAILURE]`) with this evidence: it is
    /// sent as written.
    Declared(&'a str),
    /// Nothing to send (`[SILENT]`, empty script output, wake gate closed).
    Silent,
}

/// A delivery to retry on a later pass.
#[derive(Debug, Clone)]
pub struct PendingDelivery {
    /// [`Destination::key`].
    pub target: String,
    /// The [`Message`] as JSON.
    pub payload: String,
    /// Parts (then attachments) already delivered.
    pub sent_parts: i64,
    pub error: String,
}

/// What delivery did, for the scheduler to record.
#[derive(Debug, Clone, Default)]
pub struct DeliveryReport {
    /// For the ledger's `delivery` column: `local`, `silent`, `sent: telegram:1 (3 parts)`…
    pub summary: String,
    /// The job's `last_delivery_error` when something did not arrive.
    pub error: Option<String>,
    /// Transient failures of untracked destinations, to keep for a later retry.
    pub retry_later: Vec<PendingDelivery>,
    /// How each tracked destination ended (see [`RunDelivery::track`]).
    pub settled: Vec<Settled>,
}

/// How the send to a tracked destination ended: its row, what became of it, and the
/// parts (then attachments) delivered.
#[derive(Debug, Clone)]
pub struct Settled {
    pub row: i64,
    pub outcome: SettledAs,
    pub sent_parts: i64,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettledAs {
    Sent,
    /// Transient: retried later from the row.
    Retry,
    /// Final, or outcome unknown: never resent.
    Failed,
}

/// Called for each destination before its first request, with the target key and the
/// message as JSON: returns the row that tracks the send and the recorder of its
/// requests, or `None` to send it untracked.
pub type Track<'a> = &'a (dyn Fn(String, String) -> crate::BoxFuture<'a, Tracked> + Sync);

/// What [`Track`] gives: the outbox row of a send and the recorder of its requests.
pub type Tracked = Option<(i64, http::FlightRecorder)>;

/// One message as sent to every destination (and kept in the outbox).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub job_id: String,
    pub name: String,
    pub scheduled_at: String,
    /// `ok` or `error`.
    pub status: String,
    /// The redacted reply or notice, unwrapped, as a webhook gets it.
    pub content: String,
    /// What a chat gets: wrapped, redacted, without `MEDIA:` lines.
    pub text: String,
    /// `MEDIA:` files to attach after the text.
    pub media: Vec<String>,
    /// Sent without a notification where the platform allows it
    /// (`cron.delivery.notify: false`).
    #[serde(default)]
    pub silent: bool,
}

/// Everything delivery needs about one finished run.
pub struct RunDelivery<'a> {
    pub home: &'a Path,
    /// The run's variables, secrets and config, as the run was given them.
    pub files: HomeFiles<'a>,
    pub job: &'a Job,
    pub scheduled_at: DateTime<Utc>,
    pub result: Delivered<'a>,
    /// Failures in a row including this run (for the nudge).
    pub failure_streak: u64,
    pub wrap_response: bool,
    /// `cron.delivery.notify`: `false` sends silently where the platform allows it.
    pub notify: bool,
    /// Write-ahead tracking of each send (the scheduler keeps a `sending` outbox row per
    /// destination before its first request, so a crash mid-delivery leaves a row the
    /// next pass can resolve). `None`: untracked.
    pub track: Option<Track<'a>>,
}

/// What delivery uses of the home's files, as its caller read them (the scheduler reads
/// config.yaml and `.env` once per change, not per send): the variables targets and
/// credentials come from, the secrets masked in everything sent, and the config whose
/// `delivery` section sets the outbound address policy.
#[derive(Clone, Copy)]
pub struct HomeFiles<'a> {
    pub environment: &'a Environment,
    pub redactor: &'a Redactor,
    pub config: &'a Config,
}

impl HomeFiles<'_> {
    /// The outbound address policy of webhook targets.
    fn webhook_policy(&self) -> AddressPolicy {
        AddressPolicy::for_delivery(&self.config.delivery, Door::Webhook)
    }
}

/// Builds the message of a run (redacted) — `None` for a silent run.
pub fn build_message(run: &RunDelivery<'_>, redactor: &Redactor) -> Option<Message> {
    let (status, content) = match run.result {
        Delivered::Silent => return None,
        Delivered::Reply(text) => ("ok", text.trim().to_string()),
        Delivered::Failed(error) => (
            "error",
            format::failure_notice(run.job.id(), error, run.failure_streak),
        ),
        Delivered::Notice(notice) => ("error", notice.trim().to_string()),
        Delivered::Declared(evidence) => (
            "error",
            format::declared_failure_notice(run.job.id(), evidence, run.failure_streak),
        ),
    };
    let content = redactor.redact(&content);
    let (body, media) = format::extract_media(&content);
    let text = if run.wrap_response {
        format::wrap(run.job.name(), run.job.id(), &body)
    } else {
        body
    };
    Some(Message {
        job_id: run.job.id().to_string(),
        name: run.job.name().to_string(),
        scheduled_at: run.scheduled_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        status: status.to_string(),
        content,
        text: redactor.redact(&text),
        media,
        silent: !run.notify,
    })
}

/// A destination as shown in errors and logs: a webhook URL shows only its host, since
/// webhook paths often carry a token.
pub fn shown(destination: &Destination) -> String {
    match destination {
        Destination::Webhook { url } => {
            let host = url
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .unwrap_or("");
            format!("webhook:{}", host)
        }
        chat => chat.key(),
    }
}

/// Sends a message to one destination, skipping the `skip` items already delivered.
/// Returns how many items (parts, attachments) the message has in all.
pub async fn send_to(
    shared: &Shared,
    destination: &Destination,
    env: &Environment,
    policy: &AddressPolicy,
    message: &Message,
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    match destination {
        Destination::Webhook { url } => webhook::send(shared, env, policy, url, message)
            .await
            .map(|()| 1)
            .map_err(|f| (f, 0)),
        Destination::Chat {
            platform,
            chat,
            thread,
        } => {
            let chat = (chat.as_str(), thread.as_deref());
            sender::send_chat(shared, env, *platform, chat, message, skip).await
        }
    }
}

/// The delivery error for a chat on a platform this build does not know (written by
/// another Hermes), naming those it sends to.
pub fn cannot_send(platform: &str) -> String {
    let sendable: Vec<&str> = platforms::ALL.iter().map(|d| d.platform.as_str()).collect();
    format!(
        "this build cannot send to {platform} (it sends to {} and webhooks)",
        sendable.join(", ")
    )
}

/// Resolves the job's targets and sends the run's message to each, in order.
pub async fn deliver_run(shared: &Arc<Shared>, run: RunDelivery<'_>) -> DeliveryReport {
    let Some(message) = build_message(&run, run.files.redactor) else {
        return DeliveryReport {
            summary: "silent".to_string(),
            ..DeliveryReport::default()
        };
    };
    let env = run.files.environment;
    let policy = run.files.webhook_policy();
    // Failure notices take the job's failure lane; replies always `deliver`.
    let lane = match run.result {
        Delivered::Failed(_) | Delivered::Notice(_) | Delivered::Declared(_) => {
            run.job.failure_lane()
        }
        _ => run.job.deliver(),
    };
    let resolution = target::resolve(run.job, &lane, env);
    let payload = serde_json::to_string(&message).unwrap_or_default();
    let outcomes = send_all(
        shared,
        &resolution.destinations,
        (env.clone(), policy),
        message,
        &payload,
        run.track,
    )
    .await;
    let mut tally = Tally {
        errors: resolution.errors,
        ..Tally::default()
    };
    for (destination, row, result) in outcomes {
        tally.count(&run, &destination, row, result, &payload);
    }
    tally.report()
}

/// One destination's send: where, its outbox row when tracked, and how it went.
type Outcome = (Destination, Option<i64>, Result<usize, (Failure, usize)>);

/// Sends to every destination at once (they are independent chats; pacing is per chat)
/// and returns the outcomes in the order the job lists them. A tracked destination gets
/// its row before its first request, and every request is reported to that row.
async fn send_all(
    shared: &Arc<Shared>,
    destinations: &[Destination],
    (env, policy): (Environment, AddressPolicy),
    message: Message,
    payload: &str,
    track: Option<Track<'_>>,
) -> Vec<Outcome> {
    let env = Arc::new(env);
    let policy = Arc::new(policy);
    let message = Arc::new(message);
    let mut sends = tokio::task::JoinSet::new();
    let mut rows = vec![None; destinations.len()];
    for (index, destination) in destinations.iter().enumerate() {
        let tracked = match track {
            Some(track) => track(destination.key(), payload.to_string()).await,
            None => None,
        };
        let recorder = tracked.as_ref().map(|(_, recorder)| recorder.clone());
        rows[index] = tracked.map(|(row, _)| row);
        let (destination, env, policy, message, shared) = (
            destination.clone(),
            Arc::clone(&env),
            Arc::clone(&policy),
            Arc::clone(&message),
            Arc::clone(shared),
        );
        sends.spawn(async move {
            let sending = send_to(&shared, &destination, &env, &policy, &message, 0);
            let result = match recorder {
                Some(recorder) => http::recording_flights(recorder, sending).await,
                None => sending.await,
            };
            (index, result)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = sends.join_next().await {
        match joined {
            Ok(result) => results.push(result),
            Err(e) => tracing::error!("a delivery task failed: {e}"),
        }
    }
    results.sort_by_key(|(index, _)| *index);
    results
        .into_iter()
        .map(|(index, result)| (destinations[index].clone(), rows[index], result))
        .collect()
}

/// What the sends of one run came to, for the report.
#[derive(Default)]
struct Tally {
    sent: Vec<String>,
    errors: Vec<String>,
    retry_later: Vec<PendingDelivery>,
    settled: Vec<Settled>,
}

impl Tally {
    fn count(
        &mut self,
        run: &RunDelivery<'_>,
        destination: &Destination,
        row: Option<i64>,
        result: Result<usize, (Failure, usize)>,
        payload: &str,
    ) {
        let name = shown(destination);
        let mut settle = |outcome, sent_parts: usize, error: Option<&str>| {
            if let Some(row) = row {
                self.settled.push(Settled {
                    row,
                    outcome,
                    sent_parts: sent_parts as i64,
                    error: error.map(str::to_string),
                });
            }
        };
        let (failure, delivered) = match result {
            Ok(items) => {
                settle(SettledAs::Sent, items, None);
                self.sent.push(match items {
                    0 | 1 => name,
                    _ => format!("{name} ({items} parts)"),
                });
                return;
            }
            Err(failed) => failed,
        };
        let text = run.files.redactor.redact(failure.message());
        tracing::warn!(job = run.job.id(), target = %name, "delivery failed: {}", logged(&text));
        match failure {
            Failure::Transient(_) => {
                settle(SettledAs::Retry, delivered, Some(&text));
                self.errors.push(format!("{name}: {text} (will retry)"));
                if row.is_none() {
                    self.retry_later.push(PendingDelivery {
                        target: destination.key(),
                        payload: payload.to_string(),
                        sent_parts: delivered as i64,
                        error: text,
                    });
                }
            }
            Failure::Final(_) | Failure::Unknown(_) => {
                settle(SettledAs::Failed, delivered, Some(&text));
                self.errors.push(format!("{name}: {text}"));
            }
        }
    }

    fn report(self) -> DeliveryReport {
        let (sent, errors) = (self.sent.join(", "), self.errors.join("; "));
        let summary = match (sent.is_empty(), errors.is_empty()) {
            (true, true) => "local".to_string(),
            (false, true) => format!("sent: {sent}"),
            (true, false) => format!("failed: {errors}"),
            (false, false) => format!("sent: {sent}; failed: {errors}"),
        };
        DeliveryReport {
            summary,
            error: (!errors.is_empty()).then_some(errors),
            retry_later: self.retry_later,
            settled: self.settled,
        }
    }
}

/// Retries one outbox delivery. `Ok` when it arrived; else the failure (redacted) and
/// how many items have now been delivered.
pub async fn retry(
    shared: &Shared,
    files: HomeFiles<'_>,
    target_key: &str,
    payload: &str,
    sent_parts: usize,
) -> Result<(), (Failure, usize)> {
    let destination = Destination::from_key(target_key).ok_or_else(|| {
        (
            Failure::Final(format!("unreadable outbox target '{target_key}'")),
            sent_parts,
        )
    })?;
    let message: Message = serde_json::from_str(payload).map_err(|e| {
        (
            Failure::Final(format!("unreadable outbox message: {e}")),
            sent_parts,
        )
    })?;
    let (env, redactor) = (files.environment, files.redactor);
    let policy = files.webhook_policy();
    send_to(shared, &destination, env, &policy, &message, sent_parts)
        .await
        .map(|_| ())
        .map_err(|(failure, n)| {
            let text = format!(
                "{}: {}",
                shown(&destination),
                redactor.redact(failure.message())
            );
            (failure.reworded(text), n)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobs::target::Platform;

    /// Every platform has a sender: without its variables, each refuses by naming the
    /// first one to set, and no request leaves.
    #[tokio::test]
    async fn every_platform_has_a_sender_that_names_what_to_set() {
        let message = Message {
            job_id: "abcdef012345".into(),
            name: "n".into(),
            scheduled_at: "2026-01-01T00:00:00Z".into(),
            status: "ok".into(),
            content: "hi".into(),
            text: "hi".into(),
            media: Vec::new(),
            silent: false,
        };
        let shared = Shared::default();
        for platform in Platform::ALL {
            let destination = Destination::Chat {
                platform,
                chat: "1".into(),
                thread: None,
            };
            let env = Environment::default();
            let policy = AddressPolicy::for_delivery(&Default::default(), Door::Webhook);
            let refused = match send_to(&shared, &destination, &env, &policy, &message, 0).await {
                Err((failure, _)) => failure.message().to_string(),
                Ok(_) => String::new(),
            };
            let first = platforms::required_vars(platform)[0];
            assert!(
                refused.starts_with(&format!("{first} is not set")),
                "{platform}: {refused}"
            );
        }
    }
}
