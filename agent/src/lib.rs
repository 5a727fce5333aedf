//! The built-in agent that runs a job (docs/AGENT.md): a fresh conversation per run, no
//! history. It reads its configuration anew each run (`inference`), assembles and scans the
//! prompt (`prompt`, `skills`), then loops: call the model (`model_api`, through the
//! retries and fallback of `retry`), run the tools it asks for (`tools`) in parallel,
//! put the results back in the order asked, and call again until a text answer.
//!
//! Budget (`agent.max_turns`, default 90 model calls): at 70 % a "consolidate your work"
//! notice is appended to the last tool result, at 90 % a "final answer now" notice, and
//! when the budget is spent one last call without tools asks for a summary. The job's
//! own caps (`budget`) are checked before every call; token usage and its cost from
//! every call are summed into the run's outcome (the scheduler writes the ledger).
//! With `agent.backend: command` the prompt goes to another agent program instead
//! (`command`). This crate never touches the store, delivery or the ledger: what the
//! prompt draws from the store comes in a [`prompt::PromptContext`] the caller gathers.

pub mod budget;
pub mod command;
pub mod inference;
pub mod mcp;
pub mod model_api;
pub mod prompt;
pub mod provider_registry;
pub mod reasoning;
pub mod retry;
pub mod skills;
pub mod system_prompt;
pub mod tools;

// The crates below under the paths these modules have always used
// (`crate::runner::RunEnv`, `crate::sandbox::Policy`, `crate::config::Config`).
use ::delivery;
use ::runner;
use foundation::{config, environment, logged, outbound, redact};
use runner::{pricing, process, sandbox};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jobs::Job;
use serde_json::Value;

use self::inference::{AgentConfig, Backend};
use self::model_api::{ChatRequest, Message, ToolSpec};
use self::prompt::{assemble, is_silent, PromptContext, ScriptSection};
use self::retry::{Caller, ModelCallFailed, Sleeper, TokioSleeper};
use self::tools::ToolContext;
use crate::config::CronApproval;
use crate::logged::logged;
use crate::runner::{RunEnv, RunOutcome, RunResult};

pub const EMPTY_RESPONSE: &str = "Agent completed but produced empty response";

const CONSOLIDATE_NOTICE: &str = "[SYSTEM: You have used 70% of your turn budget for this run. Consolidate your work and start wrapping up.]";
const FINAL_NOTICE: &str =
    "[SYSTEM: You have used 90% of your turn budget. Give your final answer now.]";
const SUMMARY_REQUEST: &str = "[SYSTEM: The turn budget for this run is used up and no more tools can be called. Give your final answer now: summarise what you did and what you found.]";

/// A run ended by a model call that failed everywhere: what the scheduler makes of it
/// (docs/AGENT.md, "Unreachable model", "Quota hold").
fn call_failed(prompt: String, error: ModelCallFailed, spend: &budget::Spend) -> RunOutcome {
    let mut failed = spend.outcome(prompt, RunResult::Failed(error.to_string()));
    failed.signals.unreachable = spend.requests() == 0 && error.is_unreachable();
    failed.signals.quota_window = error.quota_window();
    failed
}

/// A final reply: empty is a failure, a silence marker is silent, else deliver it.
pub fn reply_result(text: String) -> RunResult {
    if text.trim().is_empty() {
        RunResult::Failed(EMPTY_RESPONSE.to_string())
    } else if is_silent(&text) {
        RunResult::Silent(text)
    } else {
        RunResult::Reply(text.trim().to_string())
    }
}

/// The job's workdir, else the Hermes home (where an external agent command runs).
fn workdir(job: &Job, env: &RunEnv) -> PathBuf {
    job.workdir()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| env.home.clone())
}

/// Runs the agent part of a job, after its script (if any) left `script` and its
/// monitor (if any) the block of a first or changed output, with what its prompt draws
/// from the store gathered in `context`.
pub async fn run_agent(
    job: &Job,
    env: &RunEnv,
    context: &PromptContext,
    script: ScriptSection,
    monitor: Option<&str>,
) -> RunOutcome {
    run_agent_with(job, env, context, script, monitor, &TokioSleeper).await
}

pub async fn run_agent_with(
    job: &Job,
    env: &RunEnv,
    context: &PromptContext,
    script: ScriptSection,
    monitor: Option<&str>,
    sleeper: &dyn Sleeper,
) -> RunOutcome {
    let raw_prompt = job.prompt().to_string();
    // config.yaml and .env were read for this run, so an edit applies from the next run on.
    let vars = &env.world.vars;
    let settings = match inference::resolve(job, &env.world.config, vars, &env.home) {
        Ok(s) => s,
        Err(e) => return RunOutcome::failed(raw_prompt, e.to_string()),
    };
    let sources = prompt::Sources {
        home: &env.home,
        context,
    };
    let assembled = assemble(job, &sources, &script).and_then(|p| match monitor {
        Some(block) => prompt::with_monitor_block(p, block),
        None => Ok(p),
    });
    let prompt = match assembled {
        Ok(p) => p,
        Err(e) => return RunOutcome::failed(raw_prompt, e.to_string()),
    };
    match &settings.backend {
        Backend::Command(argv) => {
            let result = command::run(argv, &prompt, &workdir(job, env), job, env, vars).await;
            RunOutcome::of(prompt, result)
        }
        Backend::BuiltIn => {
            let spend = match budget::Spend::for_run(job, &env.world.config, &settings.endpoints) {
                Ok(spend) => spend,
                Err(refused) => return RunOutcome::failed(prompt, refused),
            };
            agent_loop(job, env, &settings, prompt, sleeper, spend).await
        }
    }
}

fn enabled_toolsets(job: &Job) -> Option<Vec<String>> {
    match job.get("enabled_toolsets") {
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(Value::String(s)) if !s.trim().is_empty() => {
            Some(s.split(',').map(|p| p.trim().to_string()).collect())
        }
        _ => None,
    }
}

/// The built-in agent with its tools: the run's MCP servers start before the first
/// model call and are stopped after the last (docs/AGENT.md, "MCP servers").
async fn agent_loop(
    job: &Job,
    env: &RunEnv,
    settings: &AgentConfig,
    prompt: String,
    sleeper: &dyn Sleeper,
    spend: budget::Spend,
) -> RunOutcome {
    let enabled = enabled_toolsets(job);
    let level = match crate::sandbox::level_of(job, &env.world.config) {
        Ok(level) => level,
        Err(e) => return RunOutcome::failed(prompt, e),
    };
    let workdir = match job.workdir().map(PathBuf::from).filter(|p| p.is_dir()) {
        Some(dir) => dir,
        // A confined job without a work directory gets a private one, never the home.
        None if level.confined() => crate::sandbox::private_workdir(job.id()),
        None => env.home.clone(),
    };
    let sandbox = level.confined().then(|| tools::RunSandbox {
        level,
        workdir: workdir.clone(),
    });
    let mcp = mcp::for_run(
        env,
        enabled.as_deref(),
        &settings.disabled_toolsets,
        &workdir,
    )
    .await;
    let ctx = ToolContext {
        workdir,
        allow_private_fetch: settings.allow_private_fetch,
        activity: env.activity.clone(),
        mcp: mcp.clone(),
        home: env.home.clone(),
        todos: Arc::default(),
        // Hermes' `tools/approval.py`: arbitrary code in a cron run only when the user said so.
        execute_code: env.world.config.approvals.cron_mode == Some(CronApproval::Approve),
        code_timeout: env
            .world
            .config
            .code_execution
            .timeout
            .filter(|s| *s > 0)
            .map_or(tools::DEFAULT_CODE_TIMEOUT, Duration::from_secs),
        redactor: Arc::clone(&env.world.redactor),
        sandbox,
        backend: tools::backend::Backend::of(&env.world.config),
        network: level != crate::sandbox::Level::Strict,
    };
    let offered = tools::offered(enabled.as_deref(), &settings.disabled_toolsets, &ctx);
    // The directory the tools work in: under a sandbox, a job without a workdir has a
    // private one, and the model is told that one.
    let system = system_message(job, env, settings, !offered.is_empty(), &ctx.workdir);
    let opening = Opening { system, prompt };
    let outcome = converse(env, settings, opening, sleeper, &offered, &ctx, spend).await;
    mcp::finish(mcp, outcome).await
}

/// The two messages a conversation starts with.
struct Opening {
    system: String,
    prompt: String,
}

async fn converse(
    env: &RunEnv,
    settings: &AgentConfig,
    opening: Opening,
    sleeper: &dyn Sleeper,
    offered: &[ToolSpec],
    ctx: &ToolContext,
    mut spend: budget::Spend,
) -> RunOutcome {
    let Opening { system, prompt } = opening;
    let mut caller = Caller::new(
        &settings.endpoints,
        settings.api_max_retries,
        settings.request_timeout,
        sleeper,
        &env.activity,
    );
    let mut messages = vec![Message::system(system), Message::user(prompt.clone())];
    let max = settings.max_turns;
    let planned = spend.turn_budget(max);
    let consolidate_at = (planned * 7).div_ceil(10).max(1);
    let final_at = (planned * 9).div_ceil(10).max(1);
    let (mut consolidated, mut finalised) = (false, false);
    for turn in 1..=max {
        if let Err(cap) = spend.check() {
            return spend.stopped(prompt, cap, &env.progress);
        }
        let reply = match caller
            .call(&ChatRequest {
                messages: &messages,
                tools: offered,
                reasoning: settings.reasoning,
            })
            .await
        {
            Ok(r) => r,
            Err(e) => return call_failed(prompt, e, &spend),
        };
        env.activity.touch();
        spend.add(&caller.endpoints[caller.current].model, reply.usage);
        env.progress.spent(spend.spent());
        if let Some(text) = budget::turn_text(&reply.message) {
            env.progress.push(&text);
        }
        if reply.message.tool_calls.is_empty() {
            return spend.outcome(prompt, reply_result(reply.message.content));
        }
        let calls = reply.message.tool_calls.clone();
        messages.push(reply.message);
        let results = run_tools(&calls, offered, ctx).await;
        for (call, result) in calls.iter().zip(results) {
            messages.push(Message::tool_result(&call.id, result));
        }
        let notice = if turn >= final_at && !finalised {
            finalised = true;
            consolidated = true;
            Some(FINAL_NOTICE)
        } else if turn >= consolidate_at && !consolidated {
            consolidated = true;
            Some(CONSOLIDATE_NOTICE)
        } else {
            None
        };
        if let (Some(notice), Some(last)) = (notice, messages.last_mut()) {
            last.content.push_str("\n\n");
            last.content.push_str(notice);
        }
    }
    messages.push(Message::user(SUMMARY_REQUEST));
    if let Err(cap) = spend.check() {
        return spend.stopped(prompt, cap, &env.progress);
    }
    match caller
        .call(&ChatRequest {
            messages: &messages,
            tools: &[],
            reasoning: settings.reasoning,
        })
        .await
    {
        Ok(reply) => {
            env.activity.touch();
            spend.add(&caller.endpoints[caller.current].model, reply.usage);
            spend.outcome(prompt, reply_result(reply.message.content))
        }
        Err(e) => call_failed(prompt, e, &spend),
    }
}

/// The run's system message (docs/AGENT.md, "The system message"), named after the
/// primary endpoint: a fallback keeps it unchanged, so its cache survives a switch.
fn system_message(
    job: &Job,
    env: &RunEnv,
    settings: &AgentConfig,
    has_tools: bool,
    cwd: &Path,
) -> String {
    let skills = skills::index(&env.home);
    let workdir = job.workdir().map(PathBuf::from).filter(|p| p.is_dir());
    let origin = job
        .get("origin")
        .and_then(|o| o.get("platform"))
        .and_then(Value::as_str);
    let platform = system_prompt::delivery_platform(&job.deliver(), origin);
    let (model, provider) = settings
        .endpoints
        .first()
        .map_or(("", ""), |e| (e.model.as_str(), e.provider.as_str()));
    system_prompt::build(&system_prompt::SystemInputs {
        home: &env.home,
        workdir: workdir.as_deref(),
        cwd,
        has_tools,
        skills: &skills,
        platform: platform.as_deref(),
        model,
        provider,
        now: env.ctx.now,
        zone: env.ctx.zone,
    })
}

/// Runs the calls concurrently; results come back in the order of `calls`.
async fn run_tools(
    calls: &[model_api::ToolCall],
    offered: &[ToolSpec],
    ctx: &ToolContext,
) -> Vec<String> {
    let mut set = tokio::task::JoinSet::new();
    for (index, call) in calls.iter().enumerate() {
        let (name, args) = (call.name.clone(), call.arguments.clone());
        let (offered, ctx) = (offered.to_vec(), ctx.clone());
        set.spawn(async move {
            tracing::info!(tool = %logged(&name), "tool call");
            (index, tools::dispatch(&name, &args, &offered, &ctx).await)
        });
    }
    let mut results = vec![String::new(); calls.len()];
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((index, text)) => results[index] = text,
            Err(e) => tracing::error!("a tool task failed: {e}"),
        }
    }
    for r in results.iter_mut().filter(|r| r.is_empty()) {
        *r = serde_json::json!({"error": "the tool failed without a result"}).to_string();
    }
    results
}
