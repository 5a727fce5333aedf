//! Copies between a jobs.json and any store: `hermes cron store import` (every field
//! kept, idempotent: a job already there is replaced by the file's record) and `export`
//! (a jobs.json Python Hermes reads). An unreadable file is refused whole; nothing of it
//! is copied.

use std::path::Path;

use super::{Store, StoreError};
use crate::jsonjobs::{parse_document, render_document, StoreDocument};
use crate::lifecycle::JobError;
use crate::model::job::{Context, Job};

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub added: usize,
    pub updated: usize,
}

/// Copies every job of the jobs.json at `path` into `store`.
pub async fn import_jobs_json(
    store: &dyn Store,
    path: &Path,
    ctx: &Context,
) -> Result<Imported, JobError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Err(JobError::Store(StoreError::Unavailable(format!(
                "cannot read {}: {e}; give the path of a jobs.json with --from",
                path.display()
            ))))
        }
    };
    let document = parse_document(&bytes, path)?;
    let mut imported = Imported::default();
    for record in document.jobs {
        let mut job = Job::from_record(record);
        let existing = match job.text_field("id") {
            Some(id) => store.get_job(ctx, id).await?,
            None => None,
        };
        // A record without a next run gets one computed from now when healed; the same
        // file imported again keeps the one computed the first time (idempotent).
        let stored_next = existing.as_ref().and_then(|stored| stored.next_run_at(ctx));
        if let (None, Some(next)) = (job.text_field("next_run_at"), stored_next) {
            let zone = job.zone(ctx);
            job.set_next_run_at(Some(next), zone);
        }
        job.heal(ctx);
        let id = job.id().to_string();
        if existing.is_some() {
            store
                .update_job(
                    ctx,
                    &id,
                    Box::new(move |stored| {
                        *stored = job;
                        Ok(())
                    }),
                )
                .await?;
            imported.updated += 1;
        } else {
            store.insert_job(ctx, job).await?;
            imported.added += 1;
        }
    }
    Ok(imported)
}

/// Every job of `store` as a jobs.json document.
pub async fn export_jobs_json(store: &dyn Store, ctx: &Context) -> Result<Vec<u8>, StoreError> {
    let document = StoreDocument {
        jobs: store
            .load_jobs(ctx)
            .await?
            .into_iter()
            .map(Job::into_record)
            .collect(),
        updated_at: Some(ctx.now_text()),
        ..StoreDocument::default()
    };
    Ok(render_document(&document))
}
