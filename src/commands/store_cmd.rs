//! `hermes cron store status|import|export`: which store holds the jobs, and copies
//! between it and a jobs.json.

use std::io::Write;

use serde_json::json;

use jobs::store::{export_jobs_json, import_jobs_json, FileStore};

use super::error::CliError;
use super::Session;
use crate::cli::StoreVerb;

pub async fn store(session: &Session, verb: StoreVerb) -> Result<(), CliError> {
    match verb {
        StoreVerb::Status { json } => status(session, json).await,
        StoreVerb::Import { from } => {
            let path = from.unwrap_or_else(|| FileStore::jobs_file(&session.home.cron_dir()));
            let done = import_jobs_json(&*session.store, &path, &session.ctx).await?;
            say!(
                "Imported {} job(s) from {}: {} added, {} updated",
                done.added + done.updated,
                path.display(),
                done.added,
                done.updated
            );
            Ok(())
        }
        StoreVerb::Export => {
            let bytes = export_jobs_json(&*session.store, &session.ctx).await?;
            let mut out = std::io::stdout().lock();
            match out.write_all(&bytes).and_then(|()| out.flush()) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(CliError::internal(format!("cannot write the export: {e}"))),
            }
        }
    }
}

async fn status(session: &Session, as_json: bool) -> Result<(), CliError> {
    let info = session.store.describe().await?;
    let hosts = session.store.heartbeat().await?.hosts;
    let jobs = session.store.load_view(&session.ctx, &["id"]).await?.len();
    if as_json {
        let hosts: Vec<_> = hosts
            .iter()
            .map(|h| json!({"host": h.host, "pid": h.pid, "heartbeat_at": h.heartbeat_at.to_rfc3339()}))
            .collect();
        say!(
            "{}",
            json!({"backend": info.backend, "location": info.location,
                   "schema_version": info.schema_version, "jobs": jobs, "hosts": hosts})
        );
        return Ok(());
    }
    say!("Store: {} ({})", info.backend, info.location);
    if let Some(version) = info.schema_version {
        say!("Schema version {version}");
    }
    say!("Jobs: {jobs}");
    if info.backend == "postgresql" {
        say!("Live hosts: {}", hosts.len());
        for host in &hosts {
            say!(
                "  {} (pid {}), heartbeat {}",
                host.host,
                host.pid,
                host.heartbeat_at.to_rfc3339()
            );
        }
    }
    Ok(())
}
