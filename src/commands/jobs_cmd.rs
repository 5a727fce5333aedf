//! The verbs that change jobs: add, edit, pause, resume, remove.

use jobs::{Job, JobEdit, NewJob};

use super::error::CliError;
use super::timefmt::absolute_and_relative;
use super::Session;
use crate::cli::{AddArgs, EditArgs};

/// The few lines that tell the user what a job now is.
fn print_summary(session: &Session, job: &Job) {
    let ctx = &session.ctx;
    say!("  Name:     {}", job.name());
    let display = job
        .schedule_display(ctx)
        .unwrap_or_else(|e| format!("invalid ({e})"));
    say!("  Schedule: {display}");
    let next = match job.next_run_at(ctx) {
        Some(next) => absolute_and_relative(next, ctx.now, job.zone(ctx)),
        None => "none".to_string(),
    };
    say!("  Next run: {next}");
    say!("  Deliver:  {}", job.deliver());
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

pub async fn add(session: &Session, args: AddArgs) -> Result<(), CliError> {
    let fields = args.fields;
    let new = NewJob {
        schedule: args.schedule,
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
        origin: args.origin,
        ..NewJob::default()
    };
    let job = session.service().create(new).await?.job;
    say!("Created job: {}", job.id());
    print_summary(session, &job);
    warn_about(session, &job).await;
    Ok(())
}

pub async fn edit(session: &Session, args: EditArgs) -> Result<(), CliError> {
    let fields = args.fields;
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
        ..JobEdit::default()
    };
    if edit.is_empty() {
        return Err(CliError::user(
            "Nothing to change: give at least one flag, e.g. --schedule, --prompt, --name or --deliver",
        ));
    }
    let job = session.service().edit(&args.job, edit).await?.job;
    say!("Updated job: {}", job.id());
    print_summary(session, &job);
    warn_about(session, &job).await;
    Ok(())
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

pub async fn resume(session: &Session, reference: &str) -> Result<(), CliError> {
    let job = session.service().resume(reference).await?.job;
    say!("Resumed job: {} ({})", job.id(), job.name());
    print_summary(session, &job);
    Ok(())
}

pub async fn remove(session: &Session, reference: &str) -> Result<(), CliError> {
    let job = session.service().remove(reference).await?.job;
    say!("Removed job: {} ({})", job.id(), job.name());
    Ok(())
}
