//! The one exchange every sender's requests go through: the HTTP client, how an answer
//! or a failed request is classified (retry, wait, give up, or unknown outcome), the
//! retry budget of a request within a run, and per-chat pacing so that a burst of parts
//! or jobs stays under the platforms' limits instead of provoking 429s. It holds no
//! process-wide state: the client and the pacer are parts of the delivery ([`Shared`]).
//! A request that may have reached the platform (timeout after sending) is never
//! repeated: [`Failure::Unknown`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::Shared;
use crate::BoxFuture;

/// Attempts per request within a run for transient failures (connection refused, 5xx).
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest 429 wait honoured within a run; longer waits go to the outbox.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How many 429s one request may meet within a run before it goes to the outbox.
pub const MAX_RATE_LIMITED: u32 = 5;
/// How many times one request may be changed and sent again at once (plain text
/// instead of markup, a migrated chat id, no topic) before its last refusal stands.
const MAX_CHANGES: u32 = 3;

/// Why a send did not go through.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    /// May pass (connection refused, 429, 5xx): worth another try later (outbox).
    #[error("{0}")]
    Transient(String),
    /// Will not pass by retrying (403 blocked, 400 bad chat, bad token).
    #[error("{0}")]
    Final(String),
    /// The request may have reached the platform; repeating it could post twice.
    #[error("{0}")]
    Unknown(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient(m) | Failure::Final(m) | Failure::Unknown(m) => m,
        }
    }

    /// The same kind of failure with another message.
    pub fn reworded(&self, message: String) -> Failure {
        match self {
            Failure::Transient(_) => Failure::Transient(message),
            Failure::Final(_) => Failure::Final(message),
            Failure::Unknown(_) => Failure::Unknown(message),
        }
    }
}

/// A platform's answer: status, `Retry-After` header, body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

impl Answer {
    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// `"<status> <what>"`: the platform's own words when `said` finds them in the
    /// JSON body, else the start of the body.
    pub fn described(&self, said: impl Fn(&serde_json::Value) -> Option<String>) -> String {
        match said(&self.json()) {
            Some(words) => format!("{} {words}", self.status),
            None => format!("{} {}", self.status, snippet(&self.body)),
        }
    }

    /// The `errcode` of an answer that carries one in its body (DingTalk, WeCom), and
    /// the text of a failure: `errcode <code>: <errmsg>`, else the status and body.
    pub fn errcode(&self) -> (Option<i64>, String) {
        let body = self.json();
        let text = match body["errmsg"].as_str() {
            Some(m) => format!("errcode {}: {m}", body["errcode"]),
            None => format!("{} {}", self.status, snippet(&self.body)),
        };
        (body["errcode"].as_i64(), text)
    }

    /// The verdict most platforms give by status alone: 2xx taken, 429 waited out
    /// (`Retry-After`, else `wait`), 5xx retried, the rest final.
    pub fn by_status(&self, wait: Duration) -> Verdict {
        match self.status {
            200..=299 => Verdict::Done,
            429 => Verdict::RateLimited(self.retry_after.unwrap_or(wait)),
            500..=599 => Verdict::Retry,
            _ => Verdict::Final,
        }
    }
}

/// The settings of every delivery client: timeouts, no redirects, our user agent.
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        // A redirect could carry a bot token in the URL elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("hermes-cron/", env!("CARGO_PKG_VERSION")))
}

/// The HTTP client of a delivery: connection reuse across parts and jobs.
pub fn build_client() -> reqwest::Client {
    client_builder().build().unwrap_or_else(|e| {
        tracing::warn!("cannot set up the HTTP client as configured ({e}); using the defaults");
        reqwest::Client::new()
    })
}

/// What a sender tells whoever keeps track of its requests (the outbox, for a retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flight {
    /// A request is about to go out.
    Out,
    /// Its answer came back (2xx: the platform took the item) or it never left.
    Back { delivered: bool },
}

/// Receives the [`Flight`] events of the requests sent inside [`recording_flights`]; a
/// request goes out once its `Out` is recorded (the returned future is done).
pub type FlightRecorder =
    std::sync::Arc<dyn Fn(Flight) -> crate::BoxFuture<'static, ()> + Send + Sync>;

tokio::task_local! {
    static FLIGHTS: FlightRecorder;
}

/// Runs `sending` with every request it makes reported to `recorder`. A request whose
/// outcome is unknown (timeout, reset after sending) reports no `Back`: it stays out.
pub async fn recording_flights<F: std::future::Future>(
    recorder: FlightRecorder,
    sending: F,
) -> F::Output {
    FLIGHTS.scope(recorder, sending).await
}

/// Tells the recorder of the send under way (if any) about one item's flight; for
/// senders that do not speak HTTP (email, a WebSocket frame), which report their own.
pub async fn report(flight: Flight) {
    if let Ok(recording) = FLIGHTS.try_with(|recorder| recorder(flight)) {
        recording.await;
    }
}

/// How a sender reads one answer of its platform.
#[derive(Debug)]
pub enum Verdict {
    /// The platform took it.
    Done,
    /// Too many requests: wait this long, then try again.
    RateLimited(Duration),
    /// A server-side failure worth another attempt (5xx and the like).
    Retry,
    /// The platform refused what it was sent, and the sender changed the request as
    /// the platform asked (plain text instead of markup, a migrated chat id): send it
    /// again at once. Nothing was posted.
    Changed,
    /// Retrying cannot help (bad token, unknown chat, refused content).
    Final,
}

/// One request of a sender, whether it posts an item or only prepares one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Posts a part or a file: paced, reported as a flight, never repeated once out.
    Item,
    /// An upload or lookup that posts nothing visible: neither paced nor reported.
    Step,
    /// A step the platform counts against the chat's rate (an upload into the chat).
    PacedStep,
}

/// Reads one answer into a [`Verdict`] and the platform's own error text.
pub type Judge<'a> = &'a (dyn Fn(&Answer) -> (Verdict, String) + Sync);
/// Builds one request with the delivery's client (again for every attempt).
pub type Build<'a> = &'a (dyn Fn(&reqwest::Client) -> reqwest::RequestBuilder + Sync);

/// Paces a platform by what its answers say (Discord's rate-limit headers) rather than
/// by a fixed [`Pacing`].
pub trait Limiter: Sync {
    /// Waits until `key` may send again, and takes that turn.
    fn wait<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()>;
    /// Learns from an answer's headers and its verdict.
    fn learn(&self, key: &str, headers: &reqwest::header::HeaderMap, verdict: &Verdict);
}

/// How one destination's item requests are spaced.
#[derive(Clone, Copy)]
pub enum Pace<'a> {
    /// Not at all (the platform names no limit that one run could reach).
    Free,
    /// By the pacer, per chat.
    Chat(Pacing),
    /// By what the platform's answers say.
    Answers(&'a dyn Limiter),
}

/// One destination's way to its platform: the delivery's client and pacer, the
/// platform's name and the key its requests are paced and held under (usually the chat).
#[derive(Clone)]
pub struct Link<'a> {
    pub shared: &'a Shared,
    pub platform: &'a str,
    pub key: String,
    pub pace: Pace<'a>,
}

impl<'a> Link<'a> {
    pub fn new(shared: &'a Shared, platform: &'a str, key: &str, pace: Pace<'a>) -> Link<'a> {
        Link {
            shared,
            platform,
            key: key.to_string(),
            pace,
        }
    }

    pub fn client(&self) -> &'a reqwest::Client {
        &self.shared.client
    }

    /// The retry budget of one request.
    pub fn retrier(&self) -> Retrier<'a> {
        Retrier {
            pacer: &self.shared.pacer,
            attempts: 0,
            rate_limited: 0,
            changes: 0,
        }
    }

    /// Waits for this destination's next turn when a request of `kind` is paced; tell
    /// the slot when the platform answered.
    pub async fn turn(&self, kind: Request) -> Option<Slot<'a>> {
        if kind == Request::Step {
            return None;
        }
        match self.pace {
            Pace::Free => None,
            Pace::Chat(pacing) => Some(
                self.shared
                    .pacer
                    .pace(self.platform, &self.key, pacing)
                    .await,
            ),
            Pace::Answers(limiter) => {
                limiter.wait(&self.key).await;
                None
            }
        }
    }

    /// An item request (paced, reported as a flight).
    pub async fn item(&self, build: Build<'_>, judge: Judge<'_>) -> Result<Answer, Failure> {
        self.exchange(Request::Item, build, judge).await
    }

    /// A step (unpaced, not a flight): an upload, a lookup, a token.
    pub async fn step(&self, build: Build<'_>, judge: Judge<'_>) -> Result<Answer, Failure> {
        self.exchange(Request::Step, build, judge).await
    }

    /// Sends one request until its platform takes it, within the run's retry budget:
    /// paced as the link says, transient failures retried with backoff, a rate limit
    /// waited out (holding the chat for every other send), a changed request sent again
    /// at once, the rest final. `judge` reads each answer once.
    pub async fn exchange(
        &self,
        kind: Request,
        build: Build<'_>,
        judge: Judge<'_>,
    ) -> Result<Answer, Failure> {
        let mut retrier = self.retrier();
        loop {
            let slot = self.turn(kind).await;
            let sent = send(build(self.client()), kind == Request::Item).await;
            if let Some(slot) = slot {
                slot.answered();
            }
            let judged = match sent {
                Ok((answer, headers)) => {
                    let (verdict, text) = judge(&answer);
                    if let Pace::Answers(limiter) = self.pace {
                        limiter.learn(&self.key, &headers, &verdict);
                    }
                    if kind == Request::Item {
                        report(Flight::Back {
                            delivered: matches!(verdict, Verdict::Done),
                        })
                        .await;
                    }
                    Ok((answer, verdict, text))
                }
                Err(failure) => Err(failure),
            };
            if let Some(answer) = retrier.judged(self, judged).await? {
                return Ok(answer);
            }
        }
    }
}

/// Sends a request once. Transport errors are classified: a failure to connect never
/// reached the platform (transient); anything after that (timeout, reset) is unknown
/// for an item, which is reported as a flight (its `Back` is the caller's, once judged).
async fn send(
    request: reqwest::RequestBuilder,
    item: bool,
) -> Result<(Answer, reqwest::header::HeaderMap), Failure> {
    if item {
        report(Flight::Out).await;
    }
    let sent = request.send().await;
    if item
        && sent
            .as_ref()
            .is_err_and(|e| e.is_connect() || e.is_builder())
    {
        report(Flight::Back { delivered: false }).await;
    }
    let response = sent.map_err(|e| {
        let e = e.without_url();
        if e.is_connect() || e.is_builder() {
            Failure::Transient(format!("cannot connect ({})", innermost(&e)))
        } else if !item {
            Failure::Transient(format!("the request failed ({})", error_chain(&e)))
        } else if e.is_timeout() {
            Failure::Unknown(format!(
                "no answer in time after the request was sent ({}); not resent, to never post twice",
                error_chain(&e)
            ))
        } else {
            Failure::Unknown(format!(
                "the connection failed after the request was sent ({}); not resent, to never post twice",
                error_chain(&e)
            ))
        }
    })?;
    let status = response.status().as_u16();
    // Feishu names its wait `x-ogw-ratelimit-reset` (seconds); everyone else `Retry-After`.
    let retry_after = [
        reqwest::header::RETRY_AFTER.as_str(),
        "x-ogw-ratelimit-reset",
    ]
    .into_iter()
    .find_map(|name| response.headers().get(name))
    .and_then(|v| v.to_str().ok())
    .and_then(|v| v.trim().parse::<f64>().ok())
    .map(seconds);
    let headers = response.headers().clone();
    let body = response.text().await.unwrap_or_default();
    let answer = Answer {
        status,
        retry_after,
        body,
    };
    Ok((answer, headers))
}

/// An error with its causes, each said once.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !text.contains(&msg) {
            text.push_str(": ");
            text.push_str(&msg);
        }
        source = s.source();
    }
    text
}

/// The root cause alone ("Connection refused (os error 111)").
fn innermost(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

pub fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 24.0 * 3600.0))
}

/// `0.5 s · 2^(attempt−1)` plus up to half of that again at random.
pub fn backoff(attempt: u32) -> Duration {
    let base = 0.5 * f64::from(1u32 << attempt.saturating_sub(1).min(6));
    let jitter = rand::random::<f64>() * base * 0.5;
    seconds(base + jitter)
}

/// Per-chat spacing: at least [`Pacing::spacing`] between two messages to one chat, at
/// most `window_max` per `window` for group chats, and at most `global_per_sec` overall.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    pub spacing: Duration,
    pub window: Duration,
    pub window_max: usize,
    pub global_per_sec: u32,
}

impl Pacing {
    /// At most `max` messages in any `window` to one chat, `global_per_sec` overall.
    pub const fn window(window: Duration, max: usize, global_per_sec: u32) -> Pacing {
        Pacing {
            spacing: Duration::ZERO,
            window,
            window_max: max,
            global_per_sec,
        }
    }

    /// At least `spacing` between two messages to one chat, `global_per_sec` overall.
    pub const fn spaced(spacing: Duration, global_per_sec: u32) -> Pacing {
        Pacing {
            spacing,
            window: Duration::from_secs(60),
            window_max: usize::MAX,
            global_per_sec,
        }
    }
}

/// Telegram: about one message per second per chat, 20 per minute per group, 30 per
/// second per bot. A little margin on each so clock jitter does not cross the line.
pub const TELEGRAM_PRIVATE: Pacing = Pacing::spaced(Duration::from_millis(1050), 28);
pub const TELEGRAM_GROUP: Pacing = Pacing {
    window_max: 20,
    window: Duration::from_millis(60_500),
    ..TELEGRAM_PRIVATE
};

#[derive(Default)]
struct ChatSlots {
    sent: VecDeque<Instant>,
    blocked_until: Option<Instant>,
}

#[derive(Default)]
struct PacerState {
    chats: HashMap<String, ChatSlots>,
    global: HashMap<String, Instant>,
}

/// The slots of every chat this delivery sends to, shared by its concurrent sends.
#[derive(Default)]
pub struct Pacer {
    /// Guards the reservations; held only while a slot is reserved or moved, never
    /// across an await.
    state: Mutex<PacerState>,
}

impl Pacer {
    fn state(&self) -> std::sync::MutexGuard<'_, PacerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for this chat's next free slot and takes it. Slots are reserved under a
    /// lock, so concurrent runs sending to one chat queue up instead of racing into a 429.
    ///
    /// A platform counts a message when it arrives, which may be well after the slot when
    /// the network or this host is slow: tell the returned [`Slot`] when the platform
    /// answered, and the message counts from then, so a late first part never lets the
    /// next ones crowd into its window.
    #[must_use = "tell the slot when the platform answered"]
    pub async fn pace(&self, platform: &str, chat: &str, pacing: Pacing) -> Slot<'_> {
        let key = format!("{platform}:{chat}");
        let at = reserve(&mut self.state(), &key, platform, pacing, Instant::now());
        tokio::time::sleep_until(at).await;
        Slot {
            pacer: self,
            key,
            at,
        }
    }

    /// A 429 told us to wait: every send to this chat waits at least that long.
    pub fn hold_chat(&self, platform: &str, chat: &str, wait: Duration) {
        let mut state = self.state();
        let slots = state.chats.entry(format!("{platform}:{chat}")).or_default();
        let until = Instant::now() + wait;
        slots.blocked_until = Some(slots.blocked_until.map_or(until, |t| t.max(until)));
    }
}

/// A message's place in its chat's pacing, taken by [`Pacer::pace`].
#[derive(Debug)]
pub struct Slot<'a> {
    pacer: &'a Pacer,
    key: String,
    at: Instant,
}

impl std::fmt::Debug for Pacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pacer")
    }
}

impl Slot<'_> {
    /// The platform answered (whatever it said): count the message from now.
    pub fn answered(self) {
        let mut state = self.pacer.state();
        if let Some(slots) = state.chats.get_mut(&self.key) {
            answered(slots, self.at, Instant::now());
        }
    }
}

/// Moves the message sent in slot `at` to `now`, keeping the slots in order (counted
/// again when another reservation pruned it as out of the window meanwhile).
fn answered(slots: &mut ChatSlots, at: Instant, now: Instant) {
    match slots.sent.iter_mut().rev().find(|t| **t == at) {
        Some(entry) => *entry = (*entry).max(now),
        None => slots.sent.push_back(now),
    }
    slots.sent.make_contiguous().sort_unstable();
}

/// Takes the earliest slot at or after `now` that keeps every pacing rule.
fn reserve(
    state: &mut PacerState,
    key: &str,
    platform: &str,
    pacing: Pacing,
    now: Instant,
) -> Instant {
    let global_next = state.global.get(platform).copied().unwrap_or(now);
    let slots = state.chats.entry(key.to_string()).or_default();
    while slots.sent.front().is_some_and(|t| *t + pacing.window < now) {
        slots.sent.pop_front();
    }
    let mut slot = now.max(global_next);
    if let Some(last) = slots.sent.back() {
        slot = slot.max(*last + pacing.spacing);
    }
    if slots.sent.len() >= pacing.window_max {
        let oldest = slots.sent[slots.sent.len() - pacing.window_max];
        slot = slot.max(oldest + pacing.window);
    }
    if let Some(until) = slots.blocked_until {
        slot = slot.max(until);
    }
    slots.sent.push_back(slot);
    let step = Duration::from_secs(1) / pacing.global_per_sec.max(1);
    state.global.insert(platform.to_string(), slot + step);
    slot
}

/// The retry budget of one request within a run.
#[derive(Debug)]
pub struct Retrier<'a> {
    pacer: &'a Pacer,
    attempts: u32,
    rate_limited: u32,
    changes: u32,
}

impl Retrier<'_> {
    /// A transient failure: wait and try again, or give up with it once the budget is spent.
    pub async fn transient(&mut self, message: String) -> Result<(), Failure> {
        self.attempts += 1;
        if self.attempts >= MAX_ATTEMPTS {
            return Err(Failure::Transient(format!(
                "{message} (after {} attempts)",
                self.attempts
            )));
        }
        tokio::time::sleep(backoff(self.attempts)).await;
        Ok(())
    }

    /// A 429: hold the chat for `wait` and try again, unless the wait is too long for a
    /// run or the platform keeps refusing (the outbox takes it from there).
    pub async fn rate_limited(
        &mut self,
        platform: &str,
        chat: &str,
        wait: Duration,
        message: String,
    ) -> Result<(), Failure> {
        self.rate_limited += 1;
        if wait > MAX_RETRY_AFTER || self.rate_limited > MAX_RATE_LIMITED {
            return Err(Failure::Transient(message));
        }
        tracing::info!(
            platform,
            chat,
            wait_s = wait.as_secs_f64(),
            "rate limited; waiting"
        );
        self.pacer.hold_chat(platform, chat, wait);
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// What one attempt came to, judged: `Some` when the platform took it, `None` to try
    /// again (after waiting as the verdict says), else the failure that ends the request.
    pub async fn judged<T>(
        &mut self,
        link: &Link<'_>,
        attempt: Result<(T, Verdict, String), Failure>,
    ) -> Result<Option<T>, Failure> {
        let (value, verdict, text) = match attempt {
            Ok(judged) => judged,
            Err(Failure::Transient(m)) => {
                self.transient(m).await?;
                return Ok(None);
            }
            Err(other) => return Err(other),
        };
        match verdict {
            Verdict::Done => return Ok(Some(value)),
            Verdict::RateLimited(wait) => {
                self.rate_limited(link.platform, &link.key, wait, text)
                    .await?
            }
            Verdict::Retry => self.transient(text).await?,
            Verdict::Changed if self.changes < MAX_CHANGES => self.changes += 1,
            Verdict::Changed | Verdict::Final => return Err(Failure::Final(text)),
        }
        Ok(None)
    }
}

/// The first 300 characters of a body, on one line, for error messages.
pub fn snippet(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 300 {
        one_line.chars().take(300).chain(['…']).collect()
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step (upload, lookup) reports no flight; an item reports one, and counts as
    /// delivered only when the platform's judge says so (an error inside HTTP 200 does not).
    #[tokio::test]
    async fn steps_are_no_flights_and_items_count_only_when_judged_done() {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind a local server");
        let port = server.server_addr().to_ip().map(|a| a.port()).unwrap_or(0);
        let answering = std::thread::spawn(move || {
            for body in [r#"{"ok":1}"#, r#"{"error":{"code":-1}}"#, r#"{"ok":1}"#] {
                if let Ok(request) = server.recv() {
                    let _ = request.respond(tiny_http::Response::from_string(body));
                }
            }
        });
        let flights = std::sync::Arc::new(Mutex::new(Vec::new()));
        let seen = std::sync::Arc::clone(&flights);
        let recorder: FlightRecorder = std::sync::Arc::new(move |flight| {
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(flight);
            Box::pin(async {})
        });
        let url = format!("http://127.0.0.1:{port}/");
        let build = |client: &reqwest::Client| client.post(&url);
        let judge = |answer: &Answer| match answer.body.contains("error") {
            true => (Verdict::Final, "refused".to_string()),
            false => (Verdict::Done, String::new()),
        };
        let shared = Shared::default();
        let link = Link::new(&shared, "signal", "c", Pace::Free);
        let results = recording_flights(recorder, async {
            let step = link.step(&build, &judge).await;
            let refused = link.item(&build, &judge).await;
            let item = link.item(&build, &judge).await;
            (step.is_ok(), refused.err(), item.is_ok())
        })
        .await;
        let _ = answering.join();
        assert_eq!(
            results,
            (true, Some(Failure::Final("refused".into())), true)
        );
        let flights = flights.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(
            flights,
            [
                Flight::Out,
                Flight::Back { delivered: false },
                Flight::Out,
                Flight::Back { delivered: true }
            ]
        );
    }

    #[test]
    fn pacing_spaces_one_chat_and_caps_groups() {
        let mut state = PacerState::default();
        let start = Instant::now();
        let mut now = start;
        for _ in 0..3 {
            now = reserve(&mut state, "telegram:42", "telegram", TELEGRAM_PRIVATE, now);
        }
        assert!(now - start >= Duration::from_millis(2100));
        let start = now;
        for _ in 0..21 {
            now = reserve(&mut state, "telegram:-100", "telegram", TELEGRAM_GROUP, now);
        }
        assert!(now - start >= Duration::from_millis(60_500));
        // Another chat is not held back by the first one beyond the global rate.
        let other = reserve(&mut state, "telegram:7", "telegram", TELEGRAM_PRIVATE, now);
        assert!(other - now <= Duration::from_millis(100));
    }

    /// At most `max` messages a second to one chat, and no other rule.
    fn per_second(max: usize) -> Pacing {
        Pacing {
            spacing: Duration::ZERO,
            window: Duration::from_secs(1),
            window_max: max,
            global_per_sec: 1000,
        }
    }

    /// A part the platform took late counts from its answer: the window rule then holds
    /// at the platform even when the first request of a burst was slow to arrive.
    #[test]
    fn a_slot_counts_from_the_answer_when_that_is_later() {
        let five_a_second = per_second(5);
        let mut state = PacerState::default();
        let start = Instant::now();
        // Parts go one after another; the first is answered after 300 ms, the rest at once.
        let mut now = start;
        let mut first_answer = start;
        for part in 0..5 {
            let slot = reserve(&mut state, "qq:c", "qq", five_a_second, now);
            let latency = if part == 0 { 300 } else { 10 };
            now = slot + Duration::from_millis(latency);
            answered(state.chats.get_mut("qq:c").unwrap(), slot, now);
            if part == 0 {
                first_answer = now;
            }
        }
        let sixth = reserve(&mut state, "qq:c", "qq", five_a_second, now);
        assert_eq!(sixth, first_answer + Duration::from_secs(1));
    }

    /// An answer that comes after another reservation pruned its slot still counts.
    #[test]
    fn a_late_answer_counts_even_after_its_slot_was_pruned() {
        let one_a_second = per_second(1);
        let mut state = PacerState::default();
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let first = reserve(&mut state, "qq:c", "qq", one_a_second, start);
        // Another run reserves 1.5 s later and prunes the first slot as out of the window.
        assert_eq!(
            reserve(&mut state, "qq:c", "qq", one_a_second, ms(1500)),
            ms(1500)
        );
        // The first message's answer comes only now: it counts from here.
        answered(state.chats.get_mut("qq:c").unwrap(), first, ms(1600));
        let next = reserve(&mut state, "qq:c", "qq", one_a_second, ms(1700));
        assert_eq!(next, ms(2600));
    }
}
