//! `hermes cron incidents` and `hermes cron notepad`: what the store keeps about jobs
//! besides their records, shown and changed as Python Hermes 0.22's verbs do.

use serde_json::json;

use jobs::incident::{Incident, IncidentState};

use super::error::CliError;
use super::Session;
use crate::cli::{IncidentAction, IncidentStateArg, NotepadAction};

impl From<IncidentStateArg> for IncidentState {
    fn from(arg: IncidentStateArg) -> IncidentState {
        match arg {
            IncidentStateArg::Detected => IncidentState::Detected,
            IncidentStateArg::Alerted => IncidentState::Alerted,
            IncidentStateArg::Resolved => IncidentState::Resolved,
            IncidentStateArg::Closed => IncidentState::Closed,
        }
    }
}

pub async fn incidents(
    session: &Session,
    state: Option<IncidentStateArg>,
    action: IncidentAction,
    id: Option<&str>,
    as_json: bool,
) -> Result<(), CliError> {
    match action {
        IncidentAction::List => list(session, state.map(IncidentState::from), as_json).await,
        IncidentAction::Ack => {
            let id = id
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| {
                    CliError::user("Incident ID required: hermes cron incidents ack <incident_id>")
                })?;
            ack(session, id).await
        }
    }
}

async fn list(
    session: &Session,
    state: Option<IncidentState>,
    as_json: bool,
) -> Result<(), CliError> {
    let incidents = session.store.incidents(state).await?;
    if as_json {
        say!("{}", json!({ "incidents": incidents }));
        return Ok(());
    }
    if incidents.is_empty() {
        say!("No cron failure incidents recorded.");
        if let Some(state) = state {
            say!("  (filtered by state '{}')", state.as_str());
        }
        return Ok(());
    }
    say!("Cron failure incidents\n");
    for incident in &incidents {
        print_incident(incident);
    }
    say!(
        "  {} incident(s)  |  ack one with: hermes cron incidents ack <id>",
        incidents.len()
    );
    Ok(())
}

fn print_incident(incident: &Incident) {
    let mut error = incident
        .error
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if error.chars().count() > 160 {
        error = error
            .chars()
            .take(157)
            .collect::<String>()
            .trim_end()
            .to_string()
            + "...";
    }
    say!("  {}  {}", incident.id, incident.state);
    let rows = [
        ("Job", Some(incident.job_id.as_str())),
        ("Type", Some(incident.failure_type.as_str())),
        ("First seen", Some(incident.first_seen_at.as_str())),
        ("Last seen", Some(incident.last_seen_at.as_str())),
        ("Error", Some(error.as_str())),
        ("Output", incident.output_file.as_deref()),
    ];
    for (label, value) in rows {
        if let Some(value) = value {
            say!("    {:<12}{value}", format!("{label}:"));
        }
    }
    say!("");
}

async fn ack(session: &Session, id: &str) -> Result<(), CliError> {
    let (acked, _) = session.service().ack_incident(id).await?;
    say!("{}", acked.message(id));
    Ok(())
}

/// The id a notepad is kept under (see [`crate::job_service::JobService::notepad_owner`]).
async fn notepad_owner(session: &Session, reference: &str) -> Result<String, CliError> {
    if reference.trim().is_empty() {
        return Err(CliError::user(
            "A job ID is required: hermes cron notepad <job_id> list",
        ));
    }
    Ok(session.service().notepad_owner(reference).await?)
}

pub async fn notepad(
    session: &Session,
    reference: &str,
    action: NotepadAction,
    key: Option<String>,
    value: Option<String>,
    as_json: bool,
) -> Result<(), CliError> {
    let job_id = notepad_owner(session, reference).await?;
    let service = session.service();
    let usage = |args: &str| CliError::user(format!("Usage: hermes cron notepad <job_id> {args}"));
    let missing = |key: &str| CliError::user(format!("No notepad key '{key}' for job {job_id}"));
    match action {
        NotepadAction::List => {
            let notes = service.notes(&job_id).await?;
            if as_json {
                say!("{}", json!({ "job_id": job_id, "notes": notes }));
            } else if notes.is_empty() {
                say!("Notepad for job {job_id} is empty.");
            }
            for note in notes.iter().filter(|_| !as_json) {
                say!(
                    "  {} = {}\n    updated: {}",
                    note.key,
                    note.value,
                    note.updated_at
                );
            }
        }
        NotepadAction::Get => {
            let key = key.ok_or_else(|| usage("get <key>"))?;
            let notes = service.notes(&job_id).await?;
            let note = notes
                .iter()
                .find(|n| n.key == key)
                .ok_or_else(|| missing(&key))?;
            say!("{}", note.value);
        }
        NotepadAction::Set => {
            let (Some(key), Some(value)) = (key, value) else {
                return Err(usage("set <key> <value>"));
            };
            let note = service.set_note(&job_id, key, value).await?;
            say!("Set notepad key '{}' for job {job_id}.", note.key);
        }
        NotepadAction::Delete => {
            let key = key.ok_or_else(|| usage("delete <key>"))?;
            service.delete_note(&job_id, &key).await?;
            say!("Deleted notepad key '{key}' for job {job_id}.");
        }
    }
    Ok(())
}
