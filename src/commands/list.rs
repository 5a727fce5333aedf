//! `hermes cron list`: what is scheduled, when it runs next, and how it last went.

use serde_json::{json, Value};

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
    let ctx = &session.ctx;
    let jobs: Vec<Job> = if as_json {
        session.store.load_jobs(ctx)?
    } else {
        session.store.load_view(ctx, LISTING_KEYS)?
    };
    let (shown, hidden): (Vec<&Job>, Vec<&Job>) = jobs
        .iter()
        .partition(|job| all || matches!(job.state(), JobState::Scheduled | JobState::Error));
    if as_json {
        let records: Vec<Value> = shown
            .iter()
            .map(|job| Value::Object(job.normalized(ctx)))
            .collect();
        crate::output::emit_json(&json!({ "jobs": records }));
        return Ok(());
    }
    if shown.is_empty() {
        if hidden.is_empty() {
            say!("No scheduled jobs. Create one with: hermes cron add \"every 2h\" \"summarize inbox\"");
        } else {
            say!(
                "No enabled jobs ({} paused or completed; see them with: hermes cron list --all)",
                hidden.len()
            );
        }
        return Ok(());
    }
    let mut out = String::new();
    for job in &shown {
        render_job(&mut out, session, job);
    }
    if !hidden.is_empty() {
        out.push_str(&format!(
            "({} paused or completed job(s) not shown; use --all)\n",
            hidden.len()
        ));
    }
    crate::output::emit(&out);
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
    out.push_str(&format!(
        "{}  [{}]  {}\n",
        job.id(),
        job.state().as_str(),
        job.name()
    ));
    out.push_str(&format!(
        "    Schedule: {schedule}   Repeat: {repeat_text}\n"
    ));
    out.push_str(&format!("    Next run: {next}\n"));
    out.push_str(&format!("    Deliver:  {}\n", job.deliver()));
    // The lines Python Hermes shows for what a job runs.
    let skills = job.skills();
    if !skills.is_empty() {
        out.push_str(&format!("    Skills:   {}\n", skills.join(", ")));
    }
    if let Some(script) = job.script() {
        out.push_str(&format!("    Script:   {script}\n"));
    }
    if job.no_agent() {
        out.push_str("    Mode:     no-agent (script stdout delivered directly)\n");
    }
    if let Some(workdir) = job.text_field("workdir") {
        out.push_str(&format!("    Workdir:  {workdir}\n"));
    }
    out.push_str(&format!("    Last run: {last}\n"));
    if let Some(error) = job.text_field("last_error") {
        out.push_str(&format!("    Error:    {}\n", first_line(error)));
    }
    if let Some(error) = job.text_field("last_delivery_error") {
        out.push_str(&format!("    Delivery error: {}\n", first_line(error)));
    }
    if let Some(reason) = job.text_field("paused_reason") {
        out.push_str(&format!("    Paused:   {reason}\n"));
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
