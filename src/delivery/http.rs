//! What every sender shares: the HTTP client, how a failed request is classified
//! (retry, give up, or unknown outcome), backoff, and per-chat pacing so that a burst of
//! parts or jobs stays under the platforms' limits instead of provoking 429s.
//! A request that may have reached the platform (timeout after sending) is never
//! repeated: [`Failure::Unknown`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use jobs::target::Platform;

use super::target::platform_var;

/// Attempts per request within a run for transient failures (connection refused, 5xx).
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest 429 wait honoured within a run; longer waits go to the outbox.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How many 429s one request may meet within a run before it goes to the outbox.
pub const MAX_RATE_LIMITED: u32 = 5;

/// Why a send did not go through.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// May pass (connection refused, 429, 5xx): worth another try later (outbox).
    Transient(String),
    /// Will not pass by retrying (403 blocked, 400 bad chat, bad token).
    Final(String),
    /// The request may have reached the platform; repeating it could post twice.
    Unknown(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient(m) | Failure::Final(m) | Failure::Unknown(m) => m,
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

/// One shared client per process: connection reuse across parts and jobs.
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            // A redirect could carry a bot token in the URL elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("hermes-cron/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("build the HTTP client")
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
    std::sync::Arc<dyn Fn(Flight) -> crate::scheduler::BoxFuture<'static, ()> + Send + Sync>;

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

/// Sends a request once. Transport errors are classified: a failure to connect never
/// reached the platform (transient); anything after that (timeout, reset) is unknown.
/// A 2xx answer counts as one item delivered.
pub async fn send_once(request: reqwest::RequestBuilder) -> Result<Answer, Failure> {
    send_judged(
        request,
        Some(&|answer: &Answer| (200..300).contains(&answer.status)),
    )
    .await
}

/// [`send_once`] for a request whose answer says in its body whether the item arrived
/// (a JSON-RPC error inside HTTP 200), or — with `delivered: None` — a step that is not
/// an item at all (an upload, a lookup): it posts nothing, so it is not reported as a
/// flight and a crash during it leaves nothing unknown.
pub async fn send_judged(
    request: reqwest::RequestBuilder,
    delivered: Option<&(dyn Fn(&Answer) -> bool + Sync)>,
) -> Result<Answer, Failure> {
    send_judged_with_headers(request, delivered)
        .await
        .map(|(answer, _)| answer)
}

/// [`send_judged`], also handing back the answer's headers (for senders that read a
/// platform's rate-limit headers).
pub async fn send_judged_with_headers(
    request: reqwest::RequestBuilder,
    delivered: Option<&(dyn Fn(&Answer) -> bool + Sync)>,
) -> Result<(Answer, reqwest::header::HeaderMap), Failure> {
    let tracked = delivered.is_some();
    if tracked {
        report(Flight::Out).await;
    }
    let sent = request.send().await;
    if tracked
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
        } else if !tracked {
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
    if let Some(delivered) = delivered {
        report(Flight::Back {
            delivered: delivered(&answer),
        })
        .await;
    }
    Ok((answer, headers))
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
    /// Retrying cannot help (bad token, unknown chat, refused content).
    Final,
}

/// One request of a sender, whether it posts an item or only prepares one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Posts a part or a file: reported as a flight, never repeated once out.
    Item,
    /// An upload or lookup that posts nothing visible.
    Step,
}

/// Sends one request until its platform takes it, within the run's retry budget:
/// paced per chat when `pacing` is given, transient failures retried with backoff, a
/// rate limit waited out (holding the chat for every other send), the rest final.
/// `judge` reads an answer into a [`Verdict`] and the platform's own error text.
pub async fn exchange(
    platform: Platform,
    chat: &str,
    pacing: Option<Pacing>,
    kind: Request,
    build: &(dyn Fn() -> reqwest::RequestBuilder + Sync),
    judge: &(dyn Fn(&Answer) -> (Verdict, String) + Sync),
) -> Result<Answer, Failure> {
    let mut retrier = Retrier::default();
    let delivered = |answer: &Answer| matches!(judge(answer).0, Verdict::Done);
    loop {
        let slot = match pacing {
            Some(pacing) => Some(pace(platform.as_str(), chat, pacing).await),
            None => None,
        };
        let judged: Option<&(dyn Fn(&Answer) -> bool + Sync)> = match kind {
            Request::Item => Some(&delivered),
            Request::Step => None,
        };
        let sent = send_judged(build(), judged).await;
        if let Some(slot) = slot {
            slot.answered();
        }
        let answer = match sent {
            Ok(answer) => answer,
            Err(Failure::Transient(m)) => {
                retrier.transient(m).await?;
                continue;
            }
            Err(other) => return Err(other),
        };
        match judge(&answer) {
            (Verdict::Done, _) => return Ok(answer),
            (Verdict::RateLimited(wait), text) => {
                retrier
                    .rate_limited(platform.as_str(), chat, wait, text)
                    .await?
            }
            (Verdict::Retry, text) => retrier.transient(text).await?,
            (Verdict::Final, text) => return Err(Failure::Final(text)),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
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

/// A platform's bot token (`<PLATFORM>_BOT_TOKEN`) and API base (`<PLATFORM>_API_BASE`,
/// else `default_base`, without a trailing slash); a missing token is a final failure that
/// says what to set.
pub fn credentials<'a>(
    env: &'a crate::environment::Environment,
    platform: Platform,
    default_base: &'a str,
) -> Result<(&'a str, &'a str), Failure> {
    let token_var = platform_var(platform, "BOT_TOKEN");
    let token = env.get(&token_var).ok_or_else(|| {
        Failure::Final(format!("{token_var} is not set (add it to ~/.hermes/.env)"))
    })?;
    let base = env
        .get(&platform_var(platform, "API_BASE"))
        .unwrap_or(default_base)
        .trim_end_matches('/');
    Ok((token, base))
}

/// The variables a platform's sender needs, every one of them, as Python Hermes names
/// them: a token, or a server and a token, or an account. Doctor names the missing ones.
pub fn required_vars(platform: Platform) -> &'static [&'static str] {
    match platform {
        Platform::Telegram => &["TELEGRAM_BOT_TOKEN"],
        Platform::Discord => &["DISCORD_BOT_TOKEN"],
        Platform::Slack => &["SLACK_BOT_TOKEN"],
        Platform::Signal => &["SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT"],
        Platform::Matrix => &["MATRIX_HOMESERVER", "MATRIX_ACCESS_TOKEN"],
        Platform::Mattermost => &["MATTERMOST_URL", "MATTERMOST_TOKEN"],
        Platform::HomeAssistant => &["HASS_URL", "HASS_TOKEN"],
        Platform::Sms => &[
            "TWILIO_ACCOUNT_SID",
            "TWILIO_AUTH_TOKEN",
            "TWILIO_PHONE_NUMBER",
        ],
        Platform::WhatsAppCloud => &[
            "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
            "WHATSAPP_CLOUD_ACCESS_TOKEN",
        ],
        Platform::DingTalk => &["DINGTALK_WEBHOOK_URL"],
        Platform::Feishu => &["FEISHU_APP_ID", "FEISHU_APP_SECRET"],
        Platform::WhatsApp => &["WHATSAPP_ENABLED"],
        Platform::BlueBubbles => &["BLUEBUBBLES_SERVER_URL", "BLUEBUBBLES_PASSWORD"],
        Platform::QqBot => &["QQ_APP_ID", "QQ_CLIENT_SECRET"],
        Platform::WeComCallback => &[
            "WECOM_CALLBACK_CORP_ID",
            "WECOM_CALLBACK_CORP_SECRET",
            "WECOM_CALLBACK_AGENT_ID",
        ],
        Platform::Email => &["EMAIL_ADDRESS", "EMAIL_PASSWORD", "EMAIL_SMTP_HOST"],
        Platform::Weixin => &["WEIXIN_TOKEN", "WEIXIN_ACCOUNT_ID"],
        Platform::WeCom => &["WECOM_BOT_ID", "WECOM_SECRET"],
        Platform::Yuanbao => &["YUANBAO_APP_ID", "YUANBAO_APP_SECRET"],
    }
}

/// A required variable's value, or its former or alternative name's as Hermes reads it
/// (`YUANBAO_APP_KEY` for `YUANBAO_APP_ID`).
pub fn setting<'a>(env: &'a crate::environment::Environment, var: &str) -> Option<&'a str> {
    let alias = match var {
        "YUANBAO_APP_ID" => Some("YUANBAO_APP_KEY"),
        _ => None,
    };
    env.get(var).or_else(|| alias.and_then(|a| env.get(a)))
}

/// The values of [`required_vars`], in that order; the first one missing is a final
/// failure that says what to set. URLs lose a trailing slash.
pub fn settings(
    env: &crate::environment::Environment,
    platform: Platform,
) -> Result<Vec<&str>, Failure> {
    required_vars(platform)
        .iter()
        .map(|var| {
            setting(env, var)
                .map(|value| match value.starts_with("http") {
                    true => value.trim_end_matches('/'),
                    false => value,
                })
                .ok_or_else(|| {
                    Failure::Final(format!("{var} is not set (add it to ~/.hermes/.env)"))
                })
        })
        .collect()
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

/// Telegram: about one message per second per chat, 20 per minute per group, 30 per
/// second per bot. A little margin on each so clock jitter does not cross the line.
pub const TELEGRAM_PRIVATE: Pacing = Pacing {
    spacing: Duration::from_millis(1050),
    window: Duration::from_secs(60),
    window_max: usize::MAX,
    global_per_sec: 28,
};
pub const TELEGRAM_GROUP: Pacing = Pacing {
    window_max: 20,
    window: Duration::from_millis(60_500),
    ..TELEGRAM_PRIVATE
};
/// Slack's chat.postMessage: one message per second per channel.
pub const SLACK: Pacing = Pacing {
    spacing: Duration::from_millis(1050),
    window: Duration::from_secs(60),
    window_max: usize::MAX,
    global_per_sec: 50,
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

fn pacer() -> &'static Mutex<PacerState> {
    static PACER: OnceLock<Mutex<PacerState>> = OnceLock::new();
    PACER.get_or_init(Default::default)
}

/// Waits for this chat's next free slot and takes it. Slots are reserved under a lock,
/// so concurrent runs sending to one chat queue up instead of racing into a 429.
///
/// A platform counts a message when it arrives, which may be well after the slot when
/// the network or this host is slow: tell the returned [`Slot`] when the platform
/// answered, and the message counts from then, so a late first part never lets the
/// next ones crowd into its window.
#[must_use = "tell the slot when the platform answered"]
pub async fn pace(platform: &str, chat: &str, pacing: Pacing) -> Slot {
    let key = format!("{platform}:{chat}");
    let at = {
        let mut state = pacer().lock().unwrap_or_else(|p| p.into_inner());
        reserve(&mut state, &key, platform, pacing, Instant::now())
    };
    tokio::time::sleep_until(at).await;
    Slot { key, at }
}

/// A message's place in its chat's pacing, taken by [`pace`].
#[derive(Debug)]
pub struct Slot {
    key: String,
    at: Instant,
}

impl Slot {
    /// The platform answered (whatever it said): count the message from now.
    pub fn answered(self) {
        let mut state = pacer().lock().unwrap_or_else(|p| p.into_inner());
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

/// A 429 told us to wait: every send to this chat waits at least that long.
pub fn hold_chat(platform: &str, chat: &str, wait: Duration) {
    let mut state = pacer().lock().unwrap_or_else(|p| p.into_inner());
    let slots = state.chats.entry(format!("{platform}:{chat}")).or_default();
    let until = Instant::now() + wait;
    slots.blocked_until = Some(slots.blocked_until.map_or(until, |t| t.max(until)));
}

/// The retry budget of one request within a run.
#[derive(Debug, Default)]
pub struct Retrier {
    attempts: u32,
    rate_limited: u32,
}

impl Retrier {
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
        hold_chat(platform, chat, wait);
        tokio::time::sleep(wait).await;
        Ok(())
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
        let build = || client().post(&url);
        let judge = |answer: &Answer| match answer.body.contains("error") {
            true => (Verdict::Final, "refused".to_string()),
            false => (Verdict::Done, String::new()),
        };
        let results = recording_flights(recorder, async {
            let step = exchange(Platform::Signal, "c", None, Request::Step, &build, &judge).await;
            let refused =
                exchange(Platform::Signal, "c", None, Request::Item, &build, &judge).await;
            let item = exchange(Platform::Signal, "c", None, Request::Item, &build, &judge).await;
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
