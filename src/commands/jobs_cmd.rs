//! The verbs that change jobs: add, edit, pause, resume, remove.

use jobs::fields::MonitorSource;
use jobs::{CapTexts, Job, JobEdit, JobState, NewJob, RearmAt, WindowTexts};

use super::error::CliError;
use super::timefmt::absolute_and_relative;
use super::Session;
use crate::cli::{AddArgs, EditArgs, JobFields};

/// The few lines that tell the user what a job now is. `given` is the schedule as the
/// user wrote it, when this command set one: a bare duration (`30m`) is ambiguous
/// between Hermes versions, so the line says how to write the other reading.
fn print_summary(session: &Session, job: &Job, given: Option<&str>) {
    let ctx = &session.ctx;
    say!("  Name:     {}", job.name());
    let display = job
        .schedule_display(ctx)
        .unwrap_or_else(|e| format!("invalid ({e})"));
    match given
        .map(str::trim)
        .filter(|g| jobs::fields::is_bare_duration(g))
    {
        Some(bare) if job.is_one_shot() => {
            say!("  Schedule: {display} (write \"every {bare}\" to repeat)")
        }
        Some(bare) => say!("  Schedule: {display} (write \"in {bare}\" to run once)"),
        None => say!("  Schedule: {display}"),
    }
    let next = match (job.next_run_at(ctx), job.state()) {
        (Some(next), _) => absolute_and_relative(next, ctx.now, job.zone(ctx)),
        (None, JobState::Paused) => "none (paused; resume it to schedule it)".to_string(),
        (None, _) => "none".to_string(),
    };
    say!("  Next run: {next}");
    if let Some(window) = job.window_text(ctx) {
        say!("  Window:   {window}");
    }
    say!("  Deliver:  {}", job.deliver());
    // The lines for what Hermes 0.22's fields change, each only when set.
    if let Some(target) = job.failure_deliver() {
        say!("  Failures: {target}");
    }
    match job.monitor_source() {
        Some(MonitorSource::Script(source) | MonitorSource::Url(source)) => {
            say!("  Monitor:  {source} (the agent runs only when its output changes)")
        }
        None => {}
    }
    if let Some(after) = jobs::chain::After::of(job) {
        say!("  After:    {} (on {})", after.job, after.on.as_str());
    }
    if job.continuity() {
        say!("  Continuity: on (each run sees the previous run's output)");
    }
    if let Some(model) = job.model() {
        match job.provider() {
            Some(provider) => say!("  Model:    {model} ({provider})"),
            None => say!("  Model:    {model}"),
        }
    }
    if let Some(effort) = job.reasoning_effort() {
        say!("  Reasoning effort: {}", effort.as_str());
    }
    match job.overlap() {
        jobs::overlap::Overlap::Skip => {}
        overlap => say!("  Overlap:  {}", overlap.as_str()),
    }
    if let Some(python) = job.interpreter() {
        say!("  Python:   {python}");
    }
    let caps = job.caps().shown();
    if !caps.is_empty() {
        say!("  Caps:     {} per run", caps.join(", "));
    }
    if let (JobState::Paused, Some(reason)) = (job.state(), job.paused_reason()) {
        say!("  Paused:   {reason}");
    }
}

/// The job is saved; on stderr, one line for each thing that would stop it from
/// running or delivering as asked (what `hermes cron doctor` would flag), and for
/// another job with the same name (a reference by name would then be ambiguous).
async fn warn_about(session: &Session, job: &Job) {
    for problem in super::status::advice(session, job) {
        eprintln!("warning: {problem}");
    }
    let Ok(jobs) = session.store.load_jobs(&session.ctx).await else {
        return;
    };
    let twins: Vec<&str> = jobs
        .iter()
        .filter(|other| other.id() != job.id() && other.name().eq_ignore_ascii_case(job.name()))
        .map(Job::id)
        .collect();
    if !twins.is_empty() {
        eprintln!(
            "warning: another job is also named '{}' ({}): refer to these jobs by id, or rename one with `hermes cron edit ID --name NEW`",
            job.name(),
            twins.join(", ")
        );
    }
}

/// The caps `--max-turns`, `--max-runtime`, `--max-tokens` and `--max-cost` give.
fn caps(fields: &mut JobFields) -> CapTexts {
    CapTexts {
        max_turns: fields.max_turns.take(),
        max_runtime: fields.max_runtime.take(),
        max_tokens: fields.max_tokens.take(),
        max_cost_usd: fields.max_cost.take(),
    }
}

/// `--start-at`, `--until` and `--jitter`.
fn window(fields: &mut JobFields) -> WindowTexts {
    WindowTexts {
        start_at: fields.start_at.take(),
        until: fields.until.take(),
        jitter: fields.jitter.take(),
    }
}

/// `--toolsets` as the job takes it: `None` not given, `Some(None)` every tool.
fn toolsets(fields: &JobFields) -> Result<Option<Option<Vec<String>>>, CliError> {
    let Some(text) = &fields.toolsets else {
        return Ok(None);
    };
    Ok(Some(jobs::reach::toolsets_text(text)?))
}

pub async fn add(session: &Session, args: AddArgs) -> Result<(), CliError> {
    let mut fields = args.fields;
    let caps = caps(&mut fields);
    let window = window(&mut fields);
    let toolsets = toolsets(&fields)?;
    // The command line's parse settled that a schedule was given (cli::parse_from).
    let schedule = args.schedule.unwrap_or_default();
    let given = schedule.clone();
    let new = NewJob {
        schedule,
        prompt: args.prompt.unwrap_or_default(),
        name: fields.name,
        deliver: fields.deliver,
        repeat: fields.repeat,
        skills: args.skills,
        script: fields.script.clone(),
        no_agent: args.no_agent,
        workdir: fields.workdir,
        model: fields.model,
        provider: fields.provider,
        timezone: fields.timezone,
        paused: args.paused,
        paused_reason: args.paused_reason,
        failure_deliver: fields.failure_deliver,
        monitor_script: fields.monitor_script,
        monitor_url: fields.monitor_url,
        reasoning_effort: fields.reasoning_effort,
        interpreter: fields.interpreter,
        overlap: fields.overlap,
        sandbox: fields.sandbox,
        continuity: args.continuity,
        context_from: fields.context_from.unwrap_or_default(),
        enabled_toolsets: toolsets.flatten(),
        pin: args.pin,
        origin: args.origin,
        caps,
        after: fields.after,
        after_on: fields.after_on,
        window,
        ..NewJob::default()
    };
    let job = session.service().create(new).await?.job;
    say!("Created job: {}", job.id());
    print_summary(session, &job, Some(&given));
    warn_about(session, &job).await;
    Ok(())
}

pub async fn edit(session: &Session, args: EditArgs) -> Result<(), CliError> {
    let mut fields = args.fields;
    let caps = caps(&mut fields);
    let window = window(&mut fields);
    let toolsets = toolsets(&fields)?;
    let given = args.schedule.clone();
    let edit = JobEdit {
        schedule: args.schedule,
        prompt: args.prompt,
        name: fields.name,
        deliver: fields.deliver,
        repeat: fields.repeat,
        skills: (!args.skills.is_empty()).then_some(args.skills),
        add_skills: args.add_skills,
        remove_skills: args.remove_skills,
        clear_skills: args.clear_skills,
        script: fields.script,
        no_agent: match (args.no_agent, args.agent) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        workdir: fields.workdir,
        model: fields.model,
        provider: fields.provider,
        timezone: fields.timezone,
        failure_deliver: fields.failure_deliver,
        monitor_script: fields.monitor_script,
        monitor_url: fields.monitor_url,
        reasoning_effort: fields.reasoning_effort,
        interpreter: fields.interpreter,
        overlap: fields.overlap,
        sandbox: fields.sandbox,
        continuity: choice(args.continuity, args.no_continuity),
        context_from: fields.context_from,
        enabled_toolsets: toolsets,
        pin: choice(args.pin, args.unpin),
        caps,
        after: fields.after,
        after_on: fields.after_on,
        window,
        ..JobEdit::default()
    };
    if edit.is_empty() {
        return Err(CliError::user(
            "Nothing to change: give at least one flag, e.g. --schedule, --prompt, --name or --deliver",
        ));
    }
    let job = session.service().edit(&args.job, edit).await?.job;
    say!("Updated job: {}", job.id());
    print_summary(session, &job, given.as_deref());
    warn_about(session, &job).await;
    Ok(())
}

/// A pair of opposite flags (clap keeps them exclusive): `Some(true)`, `Some(false)` or
/// neither given.
fn choice(on: bool, off: bool) -> Option<bool> {
    match (on, off) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

pub async fn pause(
    session: &Session,
    reference: &str,
    reason: Option<&str>,
) -> Result<(), CliError> {
    let job = session.service().pause(reference, reason).await?.job;
    say!("Paused job: {} ({})", job.id(), job.name());
    Ok(())
}

/// Resumes a paused job, or re-arms a one-shot with `--at` / `--run-now`.
pub async fn resume(
    session: &Session,
    reference: &str,
    at: Option<String>,
    run_now: bool,
) -> Result<(), CliError> {
    let rearm = match (at, run_now) {
        (Some(at), _) => Some(RearmAt::At(at)),
        (None, true) => Some(RearmAt::Now),
        (None, false) => None,
    };
    let job = match &rearm {
        Some(at) => {
            let job = session.service().rearm(reference, at).await?.job;
            say!("Re-armed job: {} ({})", job.id(), job.name());
            job
        }
        None => {
            let job = session.service().resume(reference).await?.job;
            say!("Resumed job: {} ({})", job.id(), job.name());
            job
        }
    };
    print_summary(session, &job, None);
    Ok(())
}

pub async fn remove(session: &Session, reference: &str) -> Result<(), CliError> {
    let job = session.service().remove(reference).await?.job;
    say!("Removed job: {} ({})", job.id(), job.name());
    let waiting = session.service().waiting_on(job.id()).await;
    if let Some(note) = jobs::chain::waiting_note(job.id(), &waiting) {
        say!("{note}");
    }
    Ok(())
}
