//! `hermes cron list`: what is scheduled, when it runs next, and how it last went.

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use jobs::ledger::RunStatus;
use jobs::store::{
    list_normalized, list_summaries, write_jobs_normalized, ExtraField, Keep, PageQuery,
    SummarySink,
};
use jobs::{JobState, JobSummary};

use super::error::CliError;
use super::timefmt::write_absolute_and_relative;
use super::Session;

pub async fn list(session: &Session, all: bool, as_json: bool) -> Result<(), CliError> {
    if as_json {
        return list_json(session, all).await;
    }
    let default_sandbox = session
        .config
        .cron
        .sandbox
        .as_deref()
        .and_then(crate::sandbox::Level::parse)
        .unwrap_or_default();
    let listing = Arc::new(Mutex::new(Listing {
        default_sandbox,
        all,
        now: session.ctx.now,
        out: String::new(),
        shown: 0,
        hidden: 0,
    }));
    list_summaries(&*session.store, &session.ctx, listing.clone()).await?;
    let mut listing = listing
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (mut out, shown, hidden) = (
        std::mem::take(&mut listing.out),
        listing.shown,
        listing.hidden,
    );
    drop(listing);
    if shown == 0 {
        if hidden == 0 {
            say!("No scheduled jobs. Create one with: hermes cron add \"every 2h\" \"summarize inbox\"");
        } else {
            say!("No scheduled jobs ({hidden} completed; see them with: hermes cron list --all)");
        }
        return Ok(());
    }
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} completed job(s) not shown; use --all)\n"
        ));
    }
    crate::stdout::emit(&out);
    Ok(())
}

/// A page of the listing, as `--limit` and `--offset` ask.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub limit: usize,
    pub offset: usize,
}

/// The page size of `--offset` without `--limit`.
pub const PAGE_DEFAULT: usize = 50;

/// One page of the listing and the count of every job it pages through: the store
/// reads only that page (a million jobs in PostgreSQL list as fast as fifty).
pub async fn list_page(
    session: &Session,
    all: bool,
    as_json: bool,
    page: Page,
) -> Result<(), CliError> {
    let query = PageQuery {
        offset: page.offset,
        limit: page.limit,
        completed: all,
        ..PageQuery::default()
    };
    let found = session.store.job_page(&session.ctx, &query).await?;
    let (count, total) = (found.jobs.len(), found.total);
    let next = (count > 0 && page.offset + count < total).then_some(page.offset + count);
    if as_json {
        let mut out = b"{\"jobs\":[".to_vec();
        let described = [ExtraField::schedule_description()];
        write_jobs_normalized(&session.ctx, found.jobs, &described, &mut out)?;
        let next = next.map_or_else(|| "null".to_string(), |n| n.to_string());
        out.extend_from_slice(
            format!(
                "],\"total\":{total},\"offset\":{},\"limit\":{},\"next_offset\":{next}}}\n",
                page.offset, page.limit
            )
            .as_bytes(),
        );
        crate::stdout::emit_bytes(&out);
        return Ok(());
    }
    let mut out = String::new();
    for job in &found.jobs {
        render_job(
            &mut out,
            session.ctx.now,
            &JobSummary::of(job, &session.ctx),
        );
    }
    let which = if all {
        "job(s)"
    } else {
        "job(s) not completed"
    };
    if count == 0 {
        let _ = writeln!(
            out,
            "No jobs at offset {} ({total} {which} in all)",
            page.offset
        );
    } else {
        let _ = writeln!(
            out,
            "Jobs {}–{} of {total} {which}",
            page.offset + 1,
            page.offset + count
        );
    }
    if let Some(next) = next {
        let all = if all { " --all" } else { "" };
        let _ = writeln!(
            out,
            "Next page: hermes cron list{all} --limit {} --offset {next}",
            page.limit
        );
    }
    crate::stdout::emit(&out);
    Ok(())
}

/// The text listing, rendered as the summaries come.
struct Listing {
    /// `cron.sandbox`: the level of a job without its own.
    default_sandbox: crate::sandbox::Level,
    all: bool,
    now: DateTime<Utc>,
    out: String,
    shown: usize,
    hidden: usize,
}

impl SummarySink for Listing {
    fn summary(&mut self, job: &JobSummary<'_>) {
        if self.all || is_listed(job.state) {
            self.shown += 1;
            render_job(&mut self.out, self.now, job);
            render_sandbox(&mut self.out, job, self.default_sandbox);
        } else {
            self.hidden += 1;
        }
    }

    fn restart(&mut self) {
        self.out.clear();
        (self.shown, self.hidden) = (0, 0);
    }
}

/// Shown without `--all`: every job but the completed ones (paused jobs too, as Hermes
/// 0.22 lists them: a paused job still needs its owner).
fn is_listed(state: JobState) -> bool {
    state != JobState::Completed
}

/// `{"jobs": [...]}` on one line, each job in its normalized form. The text is printed
/// once the whole store has been read, so a store that turns out unreadable prints
/// nothing but the error.
async fn list_json(session: &Session, all: bool) -> Result<(), CliError> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(b"{\"jobs\":[");
    let keep: Keep = Arc::new(move |job| all || is_listed(job.state));
    let described = vec![ExtraField::schedule_description()];
    let mut out = list_normalized(&*session.store, &session.ctx, keep, described, out).await?;
    out.extend_from_slice(b"]}\n");
    crate::stdout::emit_bytes(&out);
    Ok(())
}

/// Pushes a stored text as the terminal should show it: a control character (an escape
/// sequence another program stored in a name, a CR, a newline that would break the
/// listing) is shown as its escape, never sent; a tab is harmless and stays.
fn push_shown(out: &mut String, text: &str) {
    let unsafe_char = |c: char| c.is_control() && c != '\t';
    // Every control character but the tab is a byte below 0x20, 0x7F, or U+0080–U+009F
    // (led by 0xC2): a byte scan clears almost every text without decoding it.
    let suspect = |b: &u8| (*b < 0x20 && *b != b'\t') || *b == 0x7f || *b == 0xc2;
    if !text.as_bytes().iter().any(suspect) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
}

fn render_job(out: &mut String, now: DateTime<Utc>, job: &JobSummary<'_>) {
    // Pieces pushed rather than formatted: a listing of 10,000 jobs is mostly this.
    for piece in [&*job.id, "  [", job.state.as_str(), "]  "] {
        out.push_str(piece);
    }
    push_shown(out, &job.name);
    out.push_str("\n    Schedule: ");
    match &job.schedule {
        Ok(display) => out.push_str(display),
        Err(e) => {
            let _ = write!(out, "invalid: {e}");
        }
    }
    if let Some(description) = &job.schedule_description {
        for piece in [" — ", description] {
            out.push_str(piece);
        }
    }
    out.push_str("   Repeat: ");
    match job.repeat.times {
        Some(times) => {
            let _ = writeln!(out, "{}/{times}", job.repeat.completed);
        }
        None => out.push_str("∞\n"),
    }
    out.push_str("    Next run: ");
    match (job.state, job.next_run_at) {
        (JobState::Paused, _) => out.push_str("paused"),
        (_, Some(next)) => write_absolute_and_relative(out, next, now, job.zone),
        (_, None) => out.push_str("none"),
    }
    if job.start_at.is_some() || job.until.is_some() || job.jitter_secs > 0 {
        out.push_str("\n    Window:   ");
        let mut parts = Vec::new();
        if let Some(start) = job.start_at {
            parts.push(format!(
                "from {}",
                schedules::format_instant(start, job.zone)
            ));
        }
        if let Some(until) = job.until {
            parts.push(format!(
                "until {}",
                schedules::format_instant(until, job.zone)
            ));
        }
        if job.jitter_secs > 0 {
            parts.push(format!(
                "jitter {}",
                schedules::format_span(job.jitter_secs)
            ));
        }
        out.push_str(&parts.join(", "));
    }
    out.push_str("\n    Deliver:  ");
    push_shown(out, &job.deliver);
    out.push('\n');
    // The lines Python Hermes shows for what a job runs.
    if !job.skills.is_empty() {
        out.push_str("    Skills:   ");
        push_shown(out, &job.skills.join(", "));
        out.push('\n');
    }
    if let Some(script) = &job.script {
        out.push_str("    Script:   ");
        push_shown(out, script);
        out.push('\n');
    }
    if job.no_agent {
        out.push_str("    Mode:     no-agent (script stdout delivered directly)\n");
    }
    if let Some(workdir) = &job.workdir {
        out.push_str("    Workdir:  ");
        push_shown(out, workdir);
        out.push('\n');
    }
    if !job.caps.is_empty() {
        let _ = writeln!(out, "    Caps:     {} per run", job.caps.shown().join(", "));
    }
    out.push_str("    Last run: ");
    match job.last_run_at {
        Some(last) => {
            write_absolute_and_relative(out, last, now, job.zone);
            let status = job
                .last_status
                .as_ref()
                .map_or("unknown", RunStatus::as_str);
            let _ = writeln!(out, " — {status}");
        }
        None => out.push_str("never\n"),
    }
    for (label, text) in [
        ("    Error:    ", job.last_error.as_deref().map(first_line)),
        (
            "    Delivery error: ",
            job.last_delivery_error.as_deref().map(first_line),
        ),
        ("    Paused:   ", job.paused_reason.as_deref()),
    ] {
        if let Some(text) = text {
            out.push_str(label);
            push_shown(out, text);
            out.push('\n');
        }
    }
}

/// A job whose runs are not confined says so; `strict` is shown too. A level that is
/// none of the three is shown as it is (its runs fail until it is fixed).
fn render_sandbox(out: &mut String, job: &JobSummary<'_>, default: crate::sandbox::Level) {
    use crate::sandbox::Level;
    let level = match job.sandbox.as_deref() {
        Some(text) => match Level::parse(text) {
            Some(level) => level,
            None => {
                out.push_str("    Sandbox:  ");
                push_shown(out, text);
                out.push_str(" (not a level: its runs fail; use strict, standard or off)\n");
                return;
            }
        },
        None => default,
    };
    match level {
        Level::Off => out.push_str("    Sandbox:  off (runs unconfined)\n"),
        Level::Strict => out.push_str("    Sandbox:  strict (no network; scripts confined too)\n"),
        Level::Standard => {}
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
