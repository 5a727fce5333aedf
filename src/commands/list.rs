//! `hermes cron list`: what is scheduled, when it runs next, and how it last went.

use std::fmt::Write;

use jobs::{Job, JobState};

use super::timefmt::absolute_and_relative;
use super::Session;
use crate::error::CliError;

/// Every key the text listing reads ([`render_job`] and the shown/hidden split): a store
/// of 10,000 jobs is read without their prompts, skills and other keys.
const LISTING_KEYS: &[&str] = &[
    "id",
    "name",
    "enabled",
    "state",
    "paused_at",
    "paused_reason",
    "schedule",
    "schedule_display",
    "timezone",
    "repeat",
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "deliver",
    "origin",
    "skills",
    "skill",
    "script",
    "no_agent",
    "workdir",
];

pub fn list(session: &Session, all: bool, as_json: bool) -> Result<(), CliError> {
    if as_json {
        return list_json(session, all);
    }
    let ctx = &session.ctx;
    // Each job is rendered as it is read, so only the text is held, never every job.
    let (mut out, mut shown, mut hidden) = (String::new(), 0usize, 0usize);
    session
        .store
        .for_each_job(ctx, Some(LISTING_KEYS), &mut |job| {
            if all || is_listed(&job) {
                shown += 1;
                render_job(&mut out, session, &job);
            } else {
                hidden += 1;
            }
        })?;
    if shown == 0 {
        if hidden == 0 {
            say!("No scheduled jobs. Create one with: hermes cron add \"every 2h\" \"summarize inbox\"");
        } else {
            say!(
                "No enabled jobs ({hidden} paused or completed; see them with: hermes cron list --all)"
            );
        }
        return Ok(());
    }
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} paused or completed job(s) not shown; use --all)\n"
        ));
    }
    crate::output::emit(&out);
    Ok(())
}

/// Shown without `--all`.
fn is_listed(job: &Job) -> bool {
    matches!(job.state(), JobState::Scheduled | JobState::Error)
}

/// `{"jobs": [...]}` on one line, each job in its normalized form, serialized as it is
/// read. The text is printed once the whole store has been read, so a store that turns
/// out unreadable prints nothing but the error.
fn list_json(session: &Session, all: bool) -> Result<(), CliError> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(b"{\"jobs\":[");
    let mut first = true;
    let mut failed = None;
    session.store.for_each_job(&session.ctx, None, &mut |job| {
        if !(all || is_listed(&job)) || failed.is_some() {
            return;
        }
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        if let Err(e) = serde_json::to_writer(&mut out, &job.normalized(&session.ctx)) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(CliError::internal(format!(
            "cannot write the job list as JSON: {e}"
        )));
    }
    out.extend_from_slice(b"]}\n");
    crate::output::emit_bytes(&out);
    Ok(())
}

fn render_job(out: &mut String, session: &Session, job: &Job) {
    let ctx = &session.ctx;
    let zone = job.zone(ctx);
    let repeat = job.repeat();
    let repeat_text = match repeat.times {
        Some(times) => format!("{}/{times}", repeat.completed),
        None => "∞".to_string(),
    };
    let schedule = job
        .schedule_display(ctx)
        .unwrap_or_else(|e| format!("invalid: {e}"));
    let next = match (job.state(), job.next_run_at(ctx)) {
        (JobState::Paused, _) => "paused".to_string(),
        (_, Some(next)) => absolute_and_relative(next, ctx.now, zone),
        (_, None) => "none".to_string(),
    };
    let last = match job.last_run_at(ctx) {
        Some(last) => {
            let status = job.text_field("last_status").unwrap_or("unknown");
            format!("{} — {status}", absolute_and_relative(last, ctx.now, zone))
        }
        None => "never".to_string(),
    };
    let _ = writeln!(
        out,
        "{}  [{}]  {}",
        job.id(),
        job.state().as_str(),
        job.name()
    );
    let _ = writeln!(out, "    Schedule: {schedule}   Repeat: {repeat_text}");
    let _ = writeln!(out, "    Next run: {next}");
    let _ = writeln!(out, "    Deliver:  {}", job.deliver());
    // The lines Python Hermes shows for what a job runs.
    let skills = job.skills();
    if !skills.is_empty() {
        let _ = writeln!(out, "    Skills:   {}", skills.join(", "));
    }
    if let Some(script) = job.script() {
        let _ = writeln!(out, "    Script:   {script}");
    }
    if job.no_agent() {
        out.push_str("    Mode:     no-agent (script stdout delivered directly)\n");
    }
    if let Some(workdir) = job.text_field("workdir") {
        let _ = writeln!(out, "    Workdir:  {workdir}");
    }
    let _ = writeln!(out, "    Last run: {last}");
    if let Some(error) = job.text_field("last_error") {
        let _ = writeln!(out, "    Error:    {}", first_line(error));
    }
    if let Some(error) = job.text_field("last_delivery_error") {
        let _ = writeln!(out, "    Delivery error: {}", first_line(error));
    }
    if let Some(reason) = job.text_field("paused_reason") {
        let _ = writeln!(out, "    Paused:   {reason}");
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
