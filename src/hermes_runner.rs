//! The runner the scheduler uses: a job's script first (docs/AGENT.md, "Scripts and script-only jobs"), then — unless the script
//! is the whole job or kept the agent asleep — the agent (docs/AGENT.md) with the script's output.

use std::path::PathBuf;

use jobs::Job;

use crate::agent::prompt::ScriptSection;
use crate::agent::run_agent;
use crate::runner::{RunEnv, RunFuture, RunOutcome, RunResult, Runner};
use crate::script::{resolve_script, run_script, wake_gate_closed, ScriptResult};

pub struct HermesRunner;

impl Runner for HermesRunner {
    fn run<'a>(&'a self, job: &'a Job, env: &'a RunEnv) -> RunFuture<'a> {
        Box::pin(run_job(job, env))
    }
}

fn silent(prompt: String, text: String) -> RunOutcome {
    RunOutcome::of(prompt, RunResult::Silent(text))
}

async fn run_job(job: &Job, env: &RunEnv) -> RunOutcome {
    let prompt = job.prompt().to_string();
    let mut section = ScriptSection::None;
    if let Some(script) = job.script() {
        let scripts_dir = env.home.join("scripts");
        let script_result = match resolve_script(&scripts_dir, script) {
            Ok(path) => {
                let workdir = job
                    .text_field("workdir")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| scripts_dir.clone());
                let extra = [
                    ("HERMES_HOME", env.home.display().to_string()),
                    ("HERMES_JOB_ID", job.id().to_string()),
                ];
                run_script(
                    &path,
                    &workdir,
                    &extra,
                    env.settings.script_timeout,
                    &env.activity,
                )
                .await
            }
            Err(e) => ScriptResult::Failed(e.to_string()),
        };
        match script_result {
            ScriptResult::Failed(error) if job.no_agent() => {
                return RunOutcome::failed(format!("script: {script}"), error);
            }
            ScriptResult::Output(out) if job.no_agent() => {
                let label = format!("script: {script}");
                return match out.trim().is_empty() {
                    true => silent(label, out),
                    false => RunOutcome::of(label, RunResult::Reply(out.trim_end().to_string())),
                };
            }
            ScriptResult::Output(out) if out.trim().is_empty() || wake_gate_closed(&out) => {
                return silent(prompt, out);
            }
            ScriptResult::Output(out) => section = ScriptSection::Output(out),
            ScriptResult::Failed(error) => section = ScriptSection::Error(error),
        }
    }
    run_agent(job, env, section).await
}
