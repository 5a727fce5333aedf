//! What a run is made of, below the agent and the binary: the runner interface (what the
//! scheduler calls to carry out one due job; scripts and the LLM agent plug in here — a
//! runner reports activity as it works so the scheduler can stop a run that went
//! silent), the run's [`world`] (config.yaml, `.env` and what is made of them) with its
//! cron [`settings`] and [`zone`]s, the [`sandbox`] that confines what a run starts, the
//! [`process`] groups that die with their run, the [`script`] runner (a job's script,
//! and a monitor's), and the [`pricing`] of its model calls.
//!
//! It builds on the `jobs` and `foundation` crates only: nothing here can reach the
//! scheduler, the CLI, the API or the agent.

pub mod pricing;
pub mod process;
pub mod reads;
pub mod sandbox;
pub mod script;
pub mod settings;
pub mod world;
pub mod zone;

// The foundation crate under the paths these modules have always used
// (`crate::config::Config`, `crate::redact::Redactor`).
use foundation::{config, environment, logged, redact};

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs::{Context, Job};

pub use crate::reads::StoreReads;
use crate::settings::CronSettings;
use crate::world::World;

/// The last moment a run showed life (a model response, tool or script output), on the
/// monotonic timer: wall-clock jumps never make a run look idle or busy.
#[derive(Debug, Clone)]
pub struct Activity(Arc<ActivityMark>);

#[derive(Debug)]
struct ActivityMark {
    start: tokio::time::Instant,
    /// Milliseconds after `start` of the last sign of life.
    last: AtomicU64,
}

impl Activity {
    /// A mark that starts the clock now (no `Default`: that would hide the start).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Activity {
        Activity(Arc::new(ActivityMark {
            start: tokio::time::Instant::now(),
            last: AtomicU64::new(0),
        }))
    }

    fn elapsed_millis(&self) -> u64 {
        u64::try_from(self.0.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub fn touch(&self) {
        self.0.last.store(self.elapsed_millis(), Ordering::Relaxed);
    }

    /// How long the run has shown no life.
    pub fn idle(&self) -> Duration {
        let last = self.0.last.load(Ordering::Relaxed);
        Duration::from_millis(self.elapsed_millis().saturating_sub(last))
    }
}

/// Reads a child's stdout or stderr to its end, keeping at most `cap` bytes and touching
/// `activity` on every chunk (output is life: it keeps the inactivity timeout away).
pub async fn read_output(
    mut stream: impl tokio::io::AsyncRead + Unpin,
    activity: Activity,
    cap: usize,
) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        activity.touch();
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    kept
}

/// What a run has produced and spent so far: the agent writes each of its turns and its
/// running spend here as it goes, so a run stopped before its end — even one cancelled
/// from outside at its runtime cap — leaves its work in the output document and its
/// spend in the ledger. The lock guards these alone and is held only to update or copy.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<std::sync::Mutex<(String, Spent)>>);

/// What a run's model requests have spent: the accounting of a [`RunOutcome`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub model: Option<String>,
    pub cost_usd: Option<f64>,
}

impl Progress {
    fn state(&self) -> std::sync::MutexGuard<'_, (String, Spent)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One more turn of the run's work.
    pub fn push(&self, text: &str) {
        let text_so_far = &mut self.state().0;
        if !text_so_far.is_empty() {
            text_so_far.push_str("\n\n");
        }
        text_so_far.push_str(text);
    }

    /// The run's spend so far, replacing what was noted before.
    pub fn spent(&self, spent: Spent) {
        self.state().1 = spent;
    }

    /// The work so far and its spend.
    pub fn so_far(&self) -> (String, Spent) {
        self.state().clone()
    }
}

/// Everything a runner may use besides the job itself.
pub struct RunEnv {
    pub home: PathBuf,
    pub settings: CronSettings,
    pub activity: Activity,
    /// The store, to read: what a prompt draws from the job's notepad and other runs,
    /// a monitor's last snapshot. A run cannot write it.
    pub store: StoreReads,
    /// Where a run reports what it changed beyond its outcome, while it runs: the
    /// scheduler records it.
    pub reports: Arc<dyn RunReports>,
    /// "Now" and the zones as the run started.
    pub ctx: Context,
    /// config.yaml, `.env` and what is made of them, as read for this run (read again
    /// only when a file changes: [`crate::world`]).
    pub world: Arc<World>,
    /// What the run has produced and spent so far.
    pub progress: Progress,
    /// The upstream run a chained run follows: its output is given to the prompt as
    /// `context_from` gives a job's output.
    pub upstream: Option<Upstream>,
}

/// The run of the job a chained job's `after` names, that this run follows.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    pub job_id: String,
    /// The upstream job's name (empty when unknown).
    pub job_name: String,
    /// Its ledger row.
    pub run: i64,
    /// How it ended (its ledger status).
    pub status: jobs::ledger::RunStatus,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    /// A reply to deliver.
    Reply(String),
    /// Succeeded with nothing to deliver (`[SILENT]`, empty script output, wake gate);
    /// the text is still saved.
    Silent(String),
    /// Failed; the text says why.
    Failed(String),
    /// Stopped by a spending cap: a failure with its own status.
    OverBudget(OverBudget),
}

/// A run stopped by a spending cap (docs/AGENT.md, "Budgets").
#[derive(Debug, Clone, PartialEq)]
pub struct OverBudget {
    pub cap: BudgetCap,
    /// The cap and the figure reached (`max_turns 2 reached`): the run's error.
    pub error: String,
    /// What the run produced before it stopped, kept in its output document.
    pub so_far: String,
}

impl OverBudget {
    /// The output document's text: the error, then what the run produced before.
    pub fn document(&self) -> String {
        match self.so_far.trim() {
            "" => self.error.clone(),
            so_far => format!("{}\n\n### Produced so far\n\n{so_far}", self.error),
        }
    }
}

/// Which cap stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetCap {
    /// One of the job's own (`budget_exceeded`).
    Job,
    /// The global daily or monthly cap (`budget_exhausted`); `notice`: this run carries
    /// the window's one notice.
    Global { notice: bool },
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The full prompt as assembled for this run (goes into the output document).
    pub prompt: String,
    pub result: RunResult,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    /// The model that answered the run's last request: its spend is counted under it.
    pub model: Option<String>,
    /// What the run's model requests cost in US dollars; `None` when unknown (no usage
    /// reported, or a model without a price).
    pub cost_usd: Option<f64>,
    /// What the scheduler acts on besides the result.
    pub signals: RunSignals,
}

impl RunOutcome {
    /// This outcome with `spent` as its accounting.
    pub fn with_spent(self, spent: Spent) -> RunOutcome {
        RunOutcome {
            prompt_tokens: spent.prompt_tokens,
            completion_tokens: spent.completion_tokens,
            model: spent.model,
            cost_usd: spent.cost_usd,
            ..self
        }
    }

    /// An outcome that spent nothing.
    pub fn of(prompt: String, result: RunResult) -> RunOutcome {
        RunOutcome {
            prompt,
            result,
            prompt_tokens: None,
            completion_tokens: None,
            model: None,
            cost_usd: None,
            signals: RunSignals::default(),
        }
    }

    pub fn failed(prompt: String, error: impl Into<String>) -> RunOutcome {
        RunOutcome::of(prompt, RunResult::Failed(error.into()))
    }
}

/// What a run tells the scheduler besides its result: how the document and the failure
/// notice read, and what the record does to the job's schedule and markers
/// (docs/AGENT.md, "Monitor jobs", "The pre-run check", "Unreachable model", "Quota
/// hold").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSignals {
    /// The run stopped before its agent: the document is these status lines.
    pub gate: Option<GateNote>,
    /// The notice a failed run delivers, composed already (instead of one made from
    /// its error).
    pub notice: Option<String>,
    /// What the pre-run configuration check found, when it ran.
    pub preflight: Option<Preflight>,
    /// Model calls that were answered.
    pub model_calls: u32,
    /// Failed on a passing network error before any model call answered.
    pub unreachable: bool,
    /// The provider refused with a rate limit and said when to come back: its usage
    /// window is closed this long.
    pub quota_window: Option<Duration>,
}

/// The status lines of a run stopped before its agent, as Hermes 0.22 writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct GateNote {
    /// `**Mode:**`, e.g. `monitor`.
    pub mode: Option<&'static str>,
    /// `**Status:**`, e.g. `no_change (agent run suppressed)`.
    pub status: String,
    /// What the document says under them, when not the run's error or reply.
    pub detail: Option<String>,
}

/// The pre-run configuration check's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Preflight {
    Passed,
    /// The run was refused before its agent for this reason.
    Blocked(String),
}

/// A monitor job's new output (its first, or one that differs from the last): its
/// SHA-256 in hex and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorChange {
    pub hash: String,
    pub output: String,
}

pub type ReportFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The scheduler's side of what a run changes beyond its outcome: a report is recorded
/// at once, while the run goes on; a failure to record is logged, not the run's.
pub trait RunReports: Send + Sync {
    /// A monitor job's new output, found before its agent runs. Detection is the state
    /// boundary (as in Hermes 0.22): it is recorded before the agent runs, so a failed
    /// or stopped agent run does not wake on the same content again.
    fn monitor_changed<'a>(&'a self, job: &'a Job, change: MonitorChange) -> ReportFuture<'a>;
}

pub type RunFuture<'a> = Pin<Box<dyn Future<Output = RunOutcome> + Send + 'a>>;

/// Carries out one run of a job. Dropping the future must stop the work (child
/// processes included): that is how timeouts and shutdown cancel a run.
pub trait Runner: Send + Sync {
    fn run<'a>(&'a self, job: &'a Job, env: &'a RunEnv) -> RunFuture<'a>;
}
