//! The service's control operations, for every door that does them: the global pause
//! (`hermes pause` / `hermes resume`, the API's status) and a job's notepad (`hermes cron
//! notepad`). The pause itself is the store's control room's ([`jobs::store::Control`],
//! through [`crate::global_pause`]): this service never touches a file.

use jobs::estop::GlobalPause;
use jobs::notepad::Note;

use super::{JobService, ServiceError};
use crate::global_pause;

impl JobService {
    /// The pause that holds this home's scheduler, if any.
    pub async fn global_pause(&self) -> Result<Option<GlobalPause>, ServiceError> {
        Ok(global_pause::engaged(&self.home, &*self.store).await?)
    }

    /// Engages the global pause (blank `reason`: none), now; returns it and whether one
    /// was engaged already.
    pub async fn pause_all(
        &self,
        reason: Option<&str>,
    ) -> Result<(GlobalPause, bool), ServiceError> {
        let now = self.clock.now();
        Ok(global_pause::engage(&self.home, &*self.store, reason, now).await?)
    }

    /// Lifts the global pause wherever it is kept; whether one was engaged.
    pub async fn resume_all(&self) -> Result<bool, ServiceError> {
        Ok(global_pause::lift(&self.home, &*self.store).await?)
    }

    /// The id a notepad is kept under: a stored job's id or name resolves to its id.
    /// Anything else is refused, so no note is kept under an id no job has (`../../x`
    /// included).
    pub async fn notepad_owner(&self, reference: &str) -> Result<String, ServiceError> {
        let (ctx, _) = self.context()?;
        let jobs = self.store.load_view(&ctx, &["id", "name"]).await?;
        Ok(jobs::find_job(&jobs, reference.trim())?.id().to_string())
    }

    /// Job `job_id`'s notes, by key.
    pub async fn notes(&self, job_id: &str) -> Result<Vec<Note>, ServiceError> {
        Ok(self.store.notes(job_id).await?)
    }

    /// Sets `key` of job `job_id`'s notepad to `value`, now (the store judges the
    /// notepad's limits).
    pub async fn set_note(
        &self,
        job_id: &str,
        key: String,
        value: String,
    ) -> Result<Note, ServiceError> {
        let (ctx, _) = self.context()?;
        let note = Note {
            job_id: job_id.to_string(),
            key,
            value,
            updated_at: ctx.now_text(),
        };
        self.store.set_note(&note).await?;
        Ok(note)
    }

    /// Deletes `key` from job `job_id`'s notepad; [`ServiceError::NoNote`] when it has
    /// no such key.
    pub async fn delete_note(&self, job_id: &str, key: &str) -> Result<(), ServiceError> {
        if self.store.delete_note(job_id, key).await? {
            Ok(())
        } else {
            Err(ServiceError::NoNote {
                job_id: job_id.to_string(),
                key: key.to_string(),
            })
        }
    }
}
