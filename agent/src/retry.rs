//! Retries, backoff and fallback around one model call (docs/AGENT.md, "Retries and fallback"). It owns only the
//! decision "wait how long and try what next"; the waiting itself goes through a
//! [`Sleeper`] so tests can check every wait without spending it.
//!
//! Per endpoint, `agent.api_max_retries` attempts: an invalid response waits
//! `jittered_backoff(n, 5 s, 120 s)`; a transport error, timeout, 429 or 5xx waits the
//! server's `Retry-After`, else `jittered_backoff(n, 2 s, 60 s)`; a 429 asking for more
//! than five minutes is not waited for (a closed usage window). 413/context length and
//! other 4xx are not retried. After a transport error uses up the budget the HTTP client
//! is rebuilt once (fresh pool) for one more attempt. Then each of `fallback_providers`
//! is tried in order with a fresh budget. Once a fallback answers, the rest of the run
//! stays on it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use rand::Rng;

use super::inference::Endpoint;
use super::model_api::{build_client, call, CallError, ChatRequest, ErrorClass, ModelReply};
use crate::logged::logged;
use crate::runner::Activity;

/// Every endpoint of the run failed one model call: what each answered last, in the
/// order tried (the text is the run's error).
#[derive(Debug, thiserror::Error)]
#[error("model call failed: {}", listed(.0))]
pub struct ModelCallFailed(Vec<(String, CallError)>);

impl ModelCallFailed {
    /// No endpoint was reached: each failed on the network (refused, unresolved,
    /// unreachable, timed out) — the run may be re-run at no cost (docs/AGENT.md,
    /// "Unreachable model").
    pub fn is_unreachable(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|(_, e)| is_transport(e.class))
    }

    /// Every endpoint refused with a rate limit, and one said to come back later than a
    /// run waits ([`LONGEST_WAIT`]): the provider's usage window is closed that long (the
    /// longest said). A shorter wait was waited out in the run: an ordinary failure.
    pub fn quota_window(&self) -> Option<Duration> {
        let all_limited =
            !self.0.is_empty() && self.0.iter().all(|(_, e)| e.class == ErrorClass::RateLimit);
        all_limited
            .then(|| self.0.iter().filter_map(|(_, e)| come_back_after(e)).max())
            .flatten()
            .filter(|window| *window > LONGEST_WAIT)
    }
}

/// When a rate-limited answer says to come back: its `Retry-After`, or a "retry after
/// Ns" in its text (Hermes 0.22 reads the latter), whichever is longer.
fn come_back_after(error: &CallError) -> Option<Duration> {
    let said = regex::Regex::new(r"(?i)retry after (\d+)\s*s")
        .ok()
        .and_then(|re| re.captures(&error.message))
        .and_then(|c| c[1].parse::<u64>().ok())
        .map(Duration::from_secs);
    [error.retry_after, said]
        .into_iter()
        .flatten()
        .filter(|wait| !wait.is_zero())
        .max()
}

fn listed(failures: &[(String, CallError)]) -> String {
    failures
        .iter()
        .map(|(endpoint, error)| format!("{} ({endpoint}): {error}", error.class.as_str()))
        .collect::<Vec<_>>()
        .join("; then fallback ")
}

/// The longest `Retry-After` a run waits out on the same endpoint.
const LONGEST_WAIT: Duration = Duration::from_secs(300);

/// How the retry loop waits.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, wait: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// Really waits.
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, wait: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(wait))
    }
}

/// `min(base·2^(n−1), max) + uniform(0, 0.5·that)`, n counted from 1.
pub fn jittered_backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = attempt.saturating_sub(1).min(30);
    let plain = base.saturating_mul(1u32 << exp).min(max);
    let jitter = rand::rng().random_range(0.0..=0.5);
    plain + plain.mul_f64(jitter)
}

fn is_transport(class: ErrorClass) -> bool {
    matches!(class, ErrorClass::Network | ErrorClass::Timeout)
}

/// The wait before the next attempt after `error`, or `None` when this error is not
/// retried on the same endpoint.
pub fn wait_after(error: &CallError, attempt: u32) -> Option<Duration> {
    match error.class {
        ErrorClass::InvalidResponse if error.status.is_some_and(|s| (400..500).contains(&s)) => {
            None
        }
        ErrorClass::InvalidResponse => Some(jittered_backoff(
            attempt,
            Duration::from_secs(5),
            Duration::from_secs(120),
        )),
        // A rate limit that asks for a longer wait is a closed usage window: the run
        // ends instead of sleeping through it, and the job is held (docs/AGENT.md,
        // "Quota hold").
        ErrorClass::RateLimit if error.retry_after.is_some_and(|wait| wait > LONGEST_WAIT) => None,
        ErrorClass::RateLimit | ErrorClass::Server | ErrorClass::Network | ErrorClass::Timeout => {
            Some(error.retry_after.unwrap_or_else(|| {
                jittered_backoff(attempt, Duration::from_secs(2), Duration::from_secs(60))
            }))
        }
        ErrorClass::Auth | ErrorClass::ContextLength => None,
    }
}

/// The endpoints of a run and where the run stands among them.
pub struct Caller<'a> {
    pub endpoints: &'a [Endpoint],
    pub max_retries: u32,
    pub timeout: Duration,
    pub sleeper: &'a dyn Sleeper,
    pub activity: &'a Activity,
    /// Index of the endpoint that answered last (sticky after a fallback).
    pub current: usize,
    client: reqwest::Client,
}

impl<'a> Caller<'a> {
    pub fn new(
        endpoints: &'a [Endpoint],
        max_retries: u32,
        timeout: Duration,
        sleeper: &'a dyn Sleeper,
        activity: &'a Activity,
    ) -> Caller<'a> {
        Caller {
            endpoints,
            max_retries: max_retries.max(1),
            timeout,
            sleeper,
            activity,
            current: 0,
            client: build_client(timeout),
        }
    }

    /// One model call with retries and fallback. The error lists what each endpoint
    /// answered last, each with its class.
    pub async fn call(&mut self, request: &ChatRequest<'_>) -> Result<ModelReply, ModelCallFailed> {
        let mut failures = Vec::new();
        for index in self.current..self.endpoints.len() {
            let endpoint = &self.endpoints[index];
            if index > self.current {
                self.client = build_client(self.timeout);
            }
            match self.on_endpoint(endpoint, request).await {
                Ok(reply) => {
                    if index != self.current {
                        tracing::warn!("model call answered by fallback {}", endpoint.label());
                    }
                    self.current = index;
                    return Ok(reply);
                }
                Err(error) => {
                    tracing::warn!(
                        "model call to {} failed: {}",
                        endpoint.label(),
                        logged(&error.to_string())
                    );
                    failures.push((endpoint.label(), error));
                }
            }
        }
        Err(ModelCallFailed(failures))
    }

    async fn on_endpoint(
        &mut self,
        endpoint: &Endpoint,
        request: &ChatRequest<'_>,
    ) -> Result<ModelReply, CallError> {
        let mut attempt = 1;
        let last = loop {
            let error = match call(&self.client, endpoint, request).await {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            let Some(wait) = wait_after(&error, attempt) else {
                return Err(error);
            };
            if attempt >= self.max_retries {
                break error;
            }
            tracing::info!(
                "model call attempt {attempt} failed ({}); retrying in {:.1}s",
                logged(&error.to_string()),
                wait.as_secs_f64()
            );
            self.activity.touch();
            self.sleeper.sleep(wait).await;
            self.activity.touch();
            attempt += 1;
        };
        if !is_transport(last.class) {
            return Err(last);
        }
        tracing::info!("retries exhausted on a transport error; rebuilding the HTTP client once");
        self.client = build_client(self.timeout);
        call(&self.client, endpoint, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::ApiMode;
    use crate::model_api::Message;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct RecordingSleeper(Mutex<Vec<Duration>>);

    impl Sleeper for RecordingSleeper {
        fn sleep(&self, wait: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            self.0.lock().unwrap().push(wait);
            Box::pin(async {})
        }
    }

    /// A fake model server answering each request with the next scripted reply
    /// (status, extra header, body, delay); the last one repeats. Returns its base URL
    /// and the count of requests it saw.
    /// (status, extra header, body, delay in ms)
    type Scripted = (u16, Option<(&'static str, &'static str)>, &'static str, u64);

    fn fake(script: Vec<Scripted>) -> (String, Arc<Mutex<usize>>) {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
        let seen = Arc::new(Mutex::new(0usize));
        let counter = Arc::clone(&seen);
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let n = {
                    let mut c = counter.lock().unwrap();
                    *c += 1;
                    *c - 1
                };
                let (status, header, text, delay) = script[n.min(script.len() - 1)];
                std::thread::spawn(move || {
                    if delay > 0 {
                        std::thread::sleep(Duration::from_millis(delay));
                    }
                    let mut response =
                        tiny_http::Response::from_string(text).with_status_code(status);
                    if let Some((k, v)) = header {
                        response.add_header(tiny_http::Header::from_bytes(k, v).unwrap());
                    }
                    let _ = request.respond(response);
                });
            }
        });
        (base, seen)
    }

    const OK: &str = r#"{"choices":[{"message":{"role":"assistant","content":"done"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;

    fn endpoint(base: &str) -> Endpoint {
        Endpoint {
            provider: "custom".into(),
            model: "m".into(),
            base_url: base.into(),
            api_key: None,
            missing_key: None,
            mode: ApiMode::ChatCompletions,
        }
    }

    async fn run(
        endpoints: Vec<Endpoint>,
        retries: u32,
        timeout_ms: u64,
    ) -> (Result<ModelReply, ModelCallFailed>, Vec<Duration>) {
        let sleeper = RecordingSleeper::default();
        let activity = Activity::new();
        let messages = vec![Message::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            reasoning: None,
        };
        let mut caller = Caller::new(
            &endpoints,
            retries,
            Duration::from_millis(timeout_ms),
            &sleeper,
            &activity,
        );
        let result = caller.call(&request).await;
        let waits = sleeper.0.lock().unwrap().clone();
        (result, waits)
    }

    fn within(wait: Duration, plain_secs: f64) -> bool {
        let s = wait.as_secs_f64();
        s >= plain_secs && s <= plain_secs * 1.5 + 1e-9
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_up_to_half_jitter() {
        // (attempt, base, cap, the wait before jitter), in seconds.
        for (attempt, base, cap, plain) in [
            (1, 2, 60, 2.0),
            (3, 2, 60, 8.0),
            (9, 2, 60, 60.0),
            (2, 5, 120, 10.0),
        ] {
            for _ in 0..50 {
                let wait =
                    jittered_backoff(attempt, Duration::from_secs(base), Duration::from_secs(cap));
                assert!(within(wait, plain), "{attempt}: {wait:?}");
            }
        }
    }

    #[test]
    fn only_network_failures_are_unreachable_and_only_long_rate_limits_close_a_window() {
        let error = |class, retry_after: Option<u64>, message: &str| {
            (
                "ep".to_string(),
                CallError {
                    class,
                    status: None,
                    retry_after: retry_after.map(Duration::from_secs),
                    message: message.into(),
                },
            )
        };
        let refused = ModelCallFailed(vec![
            error(ErrorClass::Network, None, "connection refused"),
            error(ErrorClass::Timeout, None, "timed out"),
        ]);
        assert!(refused.is_unreachable());
        assert_eq!(refused.quota_window(), None);
        let mixed = ModelCallFailed(vec![
            error(ErrorClass::Network, None, "connection refused"),
            error(ErrorClass::Auth, Some(1), "HTTP 401"),
        ]);
        assert!(!mixed.is_unreachable());
        let closed = ModelCallFailed(vec![error(
            ErrorClass::RateLimit,
            Some(3600),
            "HTTP 429: usage limit reached; Retry after 7200s",
        )]);
        assert_eq!(closed.quota_window(), Some(Duration::from_secs(7200)));
        let brief = ModelCallFailed(vec![error(ErrorClass::RateLimit, Some(30), "HTTP 429")]);
        assert_eq!(brief.quota_window(), None, "waited out within the run");
        assert!(!ModelCallFailed(Vec::new()).is_unreachable());
    }

    #[tokio::test]
    async fn a_429_waits_its_retry_after_then_succeeds() {
        let (base, seen) = fake(vec![
            (429, Some(("Retry-After", "7")), "{}", 0),
            (200, None, OK, 0),
        ]);
        let (result, waits) = run(vec![endpoint(&base)], 3, 5000).await;
        assert_eq!(result.unwrap().message.content, "done");
        assert_eq!(waits, vec![Duration::from_secs(7)]);
        assert_eq!(*seen.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn a_500_waits_the_2s_backoff_twice_then_succeeds() {
        let (base, _) = fake(vec![
            (500, None, "oops", 0),
            (502, None, "oops", 0),
            (200, None, OK, 0),
        ]);
        let (result, waits) = run(vec![endpoint(&base)], 3, 5000).await;
        assert!(result.is_ok());
        assert_eq!(waits.len(), 2);
        assert!(within(waits[0], 2.0), "{waits:?}");
        assert!(within(waits[1], 4.0), "{waits:?}");
    }

    #[tokio::test]
    async fn empty_choices_wait_the_5s_backoff() {
        let (base, _) = fake(vec![
            (200, None, r#"{"choices":[]}"#, 0),
            (200, None, OK, 0),
        ]);
        let (result, waits) = run(vec![endpoint(&base)], 3, 5000).await;
        assert!(result.is_ok());
        assert_eq!(waits.len(), 1);
        assert!(within(waits[0], 5.0), "{waits:?}");
    }

    #[tokio::test]
    async fn a_timeout_is_retried_with_the_2s_backoff() {
        // The retry must be answered within the timeout too: 1 s leaves room on a loaded host.
        let (base, _) = fake(vec![(200, None, OK, 3000), (200, None, OK, 0)]);
        let (result, waits) = run(vec![endpoint(&base)], 3, 1000).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(waits.len(), 1);
        assert!(within(waits[0], 2.0), "{waits:?}");
    }

    #[tokio::test]
    async fn a_401_is_not_retried_and_names_auth() {
        let (base, seen) = fake(vec![(401, None, "bad key", 0)]);
        let (result, waits) = run(vec![endpoint(&base)], 3, 5000).await;
        let error = result.unwrap_err().to_string();
        assert!(error.contains("auth") && error.contains("401"), "{error}");
        assert!(waits.is_empty());
        assert_eq!(*seen.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn after_the_budget_the_fallback_answers_with_a_fresh_budget() {
        let (primary, seen_primary) = fake(vec![(503, None, "down", 0)]);
        let (fallback, _) = fake(vec![(500, None, "x", 0), (200, None, OK, 0)]);
        let (result, waits) = run(vec![endpoint(&primary), endpoint(&fallback)], 2, 5000).await;
        assert_eq!(result.unwrap().message.content, "done");
        assert_eq!(*seen_primary.lock().unwrap(), 2);
        // One wait on the primary (between its 2 attempts), one on the fallback.
        assert_eq!(waits.len(), 2, "{waits:?}");
        assert!(within(waits[1], 2.0));
    }

    #[tokio::test]
    async fn a_413_goes_straight_to_the_fallback() {
        let (primary, seen_primary) = fake(vec![(413, None, "too big", 0)]);
        let (fallback, _) = fake(vec![(200, None, OK, 0)]);
        let (result, waits) = run(vec![endpoint(&primary), endpoint(&fallback)], 3, 5000).await;
        assert!(result.is_ok());
        assert!(waits.is_empty());
        assert_eq!(*seen_primary.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn transport_exhaustion_rebuilds_the_client_once() {
        // Nothing listens on this port: every attempt is a network error.
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/v1", l.local_addr().unwrap())
        };
        let (result, waits) = run(vec![endpoint(&dead)], 2, 2000).await;
        let error = result.unwrap_err().to_string();
        assert!(error.contains("network"), "{error}");
        assert_eq!(waits.len(), 1);
    }
}
