//! The runner interface: what the scheduler calls to carry out one due job. Scripts
//! (§6.7) plug in here now; the LLM agent plugs into the same interface. A runner
//! reports activity as it works so the scheduler can stop a run that went silent.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::Utc;
use jobs::Job;

use crate::settings::CronSettings;

/// The last moment a run showed life (a model response, tool or script output).
#[derive(Debug, Clone)]
pub struct Activity(Arc<AtomicI64>);

impl Activity {
    pub fn new() -> Activity {
        Activity(Arc::new(AtomicI64::new(Utc::now().timestamp_millis())))
    }

    pub fn touch(&self) {
        self.0
            .store(Utc::now().timestamp_millis(), Ordering::Relaxed);
    }

    pub fn idle_millis(&self) -> i64 {
        Utc::now().timestamp_millis() - self.0.load(Ordering::Relaxed)
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

/// Everything a runner may use besides the job itself.
pub struct RunEnv {
    pub home: PathBuf,
    pub settings: CronSettings,
    pub activity: Activity,
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
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The full prompt as assembled for this run (goes into the output document).
    pub prompt: String,
    pub result: RunResult,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
}

impl RunOutcome {
    pub fn failed(prompt: String, error: impl Into<String>) -> RunOutcome {
        RunOutcome {
            prompt,
            result: RunResult::Failed(error.into()),
            prompt_tokens: None,
            completion_tokens: None,
        }
    }
}

pub type RunFuture<'a> = Pin<Box<dyn Future<Output = RunOutcome> + Send + 'a>>;

/// Carries out one run of a job. Dropping the future must stop the work (child
/// processes included): that is how timeouts and shutdown cancel a run.
pub trait Runner: Send + Sync {
    fn run<'a>(&'a self, job: &'a Job, env: &'a RunEnv) -> RunFuture<'a>;
}
