//! The runner the scheduler uses, in Hermes 0.22's order: a monitor job's source first
//! (docs/AGENT.md, "Monitor jobs": an unchanged output ends the run there), then the
//! job's script (docs/AGENT.md, "Scripts and script-only jobs"), then — unless the
//! script is the whole job or kept the agent asleep — the pre-run configuration check
//! (docs/AGENT.md, "The pre-run check") and the agent (docs/AGENT.md) with what the
//! monitor and the script left for it, and what its prompt draws from the store
//! (gathered here: the agent never reads the store).

use jobs::fields::MonitorSource;
use jobs::{Job, JobKind};

use crate::agent::prompt::{
    context_sources, ContextOutput, ContextSource, PromptContext, ScriptSection,
    CONTINUITY_LOOKBACK,
};
use crate::agent::run_agent;
use crate::monitor::{self, Verdict};
use crate::preflight;
use crate::runner::{GateNote, Preflight, RunEnv, RunFuture, RunOutcome, RunResult, Runner};
use crate::script::{run_for_job, wake_gate_closed, ScriptResult};

pub struct HermesRunner;

impl Runner for HermesRunner {
    fn run<'a>(&'a self, job: &'a Job, env: &'a RunEnv) -> RunFuture<'a> {
        Box::pin(run_job(job, env))
    }
}

fn silent(prompt: String, text: String) -> RunOutcome {
    RunOutcome::of(prompt, RunResult::Silent(text))
}

/// A monitor's verdict as the run's outcome, or the block its agent runs with.
async fn monitor_gate(
    job: &Job,
    source: MonitorSource<'_>,
    env: &RunEnv,
) -> Result<String, RunOutcome> {
    let note = |status: &str| GateNote {
        mode: Some("monitor"),
        status: status.to_string(),
        detail: None,
    };
    match monitor::check(job, source, env).await {
        Verdict::Wake(block) => Ok(block),
        Verdict::Unchanged => {
            let mut outcome = silent(job.prompt().to_string(), String::new());
            outcome.signals.gate = Some(note("no_change (agent run suppressed)"));
            Err(outcome)
        }
        Verdict::Failed(error) => {
            let mut outcome = RunOutcome::failed(job.prompt().to_string(), error.clone());
            outcome.signals.gate = Some(note("monitor source failed"));
            outcome.signals.notice = Some(monitor::failure_notice(job, &error, env));
            Err(outcome)
        }
    }
}

async fn run_job(job: &Job, env: &RunEnv) -> RunOutcome {
    let prompt = job.prompt().to_string();
    let kind = job.kind();
    // Hermes runs a script-only job before and without any monitor.
    let monitor = match kind {
        JobKind::Monitored(source) => match monitor_gate(job, source, env).await {
            Ok(block) => Some(block),
            Err(outcome) => return outcome,
        },
        JobKind::Agent | JobKind::ScriptOnly => None,
    };
    let mut section = ScriptSection::None;
    if let Some(script) = job.script() {
        match run_for_job(job, script, env).await {
            ScriptResult::Failed(error) if kind == JobKind::ScriptOnly => {
                return RunOutcome::failed(format!("script: {script}"), error);
            }
            ScriptResult::Output(out) if kind == JobKind::ScriptOnly => {
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
    let checked = env.settings.preflight.then(|| preflight::check(job, env));
    if let Some(Err(reason)) = checked {
        return preflight::blocked(job, prompt, reason);
    }
    let context = prompt_context(job, env).await;
    let mut outcome = run_agent(job, env, &context, section, monitor.as_deref()).await;
    if checked.is_some() {
        outcome.signals.preflight = Some(Preflight::Passed);
    }
    outcome
}

/// What the prompt of `job` draws from the store, read now (docs/AGENT.md, "Prompt
/// assembly"): its notepad, the upstream run's output, then what `context_from` names.
/// Best effort, as the prompt always took them: a part that cannot be read is left
/// out (the notepad and the upstream output with a warning in the log).
async fn prompt_context(job: &Job, env: &RunEnv) -> PromptContext {
    let store = &env.store;
    let notes = store.notes(job.id()).await.unwrap_or_else(|e| {
        tracing::warn!(job = job.id(), "cannot read the job's notepad: {e}");
        Vec::new()
    });
    let upstream = match &env.upstream {
        Some(upstream) => {
            let document = store
                .run_output(upstream.run)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(
                        run = upstream.run,
                        "cannot read the upstream run's output: {e}"
                    );
                    None
                })
                .flatten();
            Some((upstream.clone(), document))
        }
        None => None,
    };
    let wanted = context_sources(job, env.upstream.as_ref());
    let names = match wanted.iter().any(|s| matches!(s, ContextSource::Job(_))) {
        true => store.job_names(&env.ctx).await.unwrap_or_default(),
        false => std::collections::HashMap::new(),
    };
    let mut outputs = Vec::with_capacity(wanted.len());
    for source in wanted {
        outputs.push(match source {
            ContextSource::Own => ContextOutput::Own(match jobs::job::is_safe_id(job.id()) {
                true => store
                    .recent_outputs(job.id(), CONTINUITY_LOOKBACK)
                    .await
                    .unwrap_or_default(),
                false => Vec::new(),
            }),
            ContextSource::Job(id) => ContextOutput::Job {
                name: names.get(&id).cloned().unwrap_or_default(),
                newest: store.latest_output(&id).await.ok().flatten(),
                id,
            },
        });
    }
    PromptContext {
        notes,
        upstream,
        outputs,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{TimeZone, Utc};
    use jobs::notepad::Note;
    use jobs::output::OutputDocument;
    use jobs::store::{JobRecords, Notes, Outputs, Owner};
    use jobs::{Context, MemoryStore};
    use serde_json::json;

    use super::*;
    use crate::agent::prompt::{assemble, Sources};
    use crate::runner::{Activity, Progress, Upstream};
    use crate::scheduler::settings::CronSettings;
    use crate::world::World;

    fn job(id: &str, name: &str, context_from: serde_json::Value) -> Job {
        let mut record = serde_json::Map::new();
        record.insert("id".into(), json!(id));
        record.insert("name".into(), json!(name));
        record.insert("prompt".into(), json!("Summarise"));
        record.insert("context_from".into(), context_from);
        Job::from_record(record)
    }

    async fn answer(store: &MemoryStore, job: &Job, response: &str, minute: u32) {
        let doc = OutputDocument {
            job_id: job.id(),
            job_name: job.name(),
            schedule: "every 1h",
            run_time: Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).unwrap(),
            zone: chrono_tz::UTC,
            prompt: job.prompt(),
            result: Ok(response),
            gate: None,
        };
        store.save_output(&doc, 10).await.unwrap();
    }

    #[tokio::test]
    async fn the_prompt_context_is_read_from_the_store_in_context_from_order() {
        let home = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new(Owner {
            host: "test".into(),
            pid: 1,
        }));
        let ctx = Context {
            now: Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap(),
            zone: chrono_tz::UTC,
            legacy_zone: chrono_tz::UTC,
        };
        let other = job("bbbbbbbbbbbb", "Other", json!([]));
        let upstream_job = job("cccccccccccc", "Upstream", json!([]));
        let this = job(
            "aaaaaaaaaaaa",
            "This",
            json!(["bbbbbbbbbbbb", "../etc", "cccccccccccc", "self"]),
        );
        for j in [&other, &upstream_job, &this] {
            store.insert_job(&ctx, j.clone()).await.unwrap();
        }
        answer(&store, &other, "the other job's answer", 1).await;
        answer(&store, &this, "my earlier answer", 2).await;
        store
            .set_note(&Note {
                job_id: this.id().into(),
                key: "seen".into(),
                value: "42".into(),
                updated_at: "2026-01-01T00:00:00Z".into(),
            })
            .await
            .unwrap();
        let settings = CronSettings::from_config(&crate::config::Config::default());
        let upstream = Upstream {
            job_id: upstream_job.id().into(),
            job_name: "Upstream".into(),
            run: 999,
            status: jobs::ledger::RunStatus::Ok,
        };
        let env = RunEnv {
            home: home.path().to_path_buf(),
            world: Arc::new(World::fixed(home.path(), settings.clone())),
            settings,
            activity: Activity::new(),
            store: crate::runner::StoreReads::new(store.clone()),
            reports: Arc::new(crate::scheduler::StoreReports {
                store: store.clone(),
                ctx,
            }),
            ctx,
            progress: Progress::default(),
            upstream: Some(upstream.clone()),
        };

        let context = prompt_context(&this, &env).await;
        assert_eq!(context.notes.len(), 1);
        // No such run: the upstream block says it left no output.
        assert_eq!(context.upstream, Some((upstream, None)));
        // The upstream job and the unsafe id are left out; the rest in their order.
        let [ContextOutput::Job { id, name, newest }, ContextOutput::Own(own)] =
            &context.outputs[..]
        else {
            panic!("{:?}", context.outputs);
        };
        assert_eq!((id.as_str(), name.as_str()), ("bbbbbbbbbbbb", "Other"));
        assert!(newest
            .as_deref()
            .unwrap()
            .contains("the other job's answer"));
        assert!(own[0].contains("my earlier answer"));

        let prompt = assemble(
            &this,
            &Sources {
                home: home.path(),
                context: &context,
            },
            &ScriptSection::None,
        )
        .unwrap();
        let order = [
            "seen",
            "## Output of job 'Upstream' (cccccccccccc)\n\nThis run follows run 999",
            "(the upstream run left no output)",
            "## Output of job 'Other' (bbbbbbbbbbbb)\n\nthe other job's answer",
            "## Your previous run's output",
            "my earlier answer",
            "Summarise",
        ];
        let mut at = 0;
        for part in order {
            at += prompt[at..]
                .find(part)
                .unwrap_or_else(|| panic!("{part} out of order in:\n{prompt}"));
        }
    }
}
