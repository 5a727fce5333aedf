//! The file store's jobs and claims ([`JobRecords`], and the faster [`Listing`]): jobs
//! in `cron/jobs.json`, read without a lock (the fast readers of `jsonjobs::scan` where the text
//! allows) and changed under `.jobs.lock` through the group commit; a pass decided under
//! `.tick.lock`, its occurrences claimed in the ledger of `executions.db`. It never writes
//! jobs.json while it cannot read it.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::jsonjobs::{DocumentError, JobsText};
use crate::ledger::notepad::NotepadBook;
use crate::ledger::RunRequest;
use crate::lifecycle::JobError;
use crate::model::due::{
    earliest_next_run, plan_pass, prune_completed_one_shots, Planned, ScanOptions,
};
use crate::model::fields::Layout;
use crate::model::job::{is_safe_id, Context, Job};
use crate::store::{
    claim_planned, BatchChange, ChangeMark, DuePass, DueScan, ExtraField, JobChange, JobRecords,
    JobViews, Keep, Listed, Listing, SharedSink, StoreError, SummarySink,
};

use super::{io_unavailable, lock, on_one_thread, FileStamp, FileStore, Files};

impl Files {
    /// The due scan of a pass. Most passes find nothing to do: that is decided on an
    /// unlocked scheduling view, so an idle scheduler never takes the store lock nor
    /// rewrites jobs.json. Jobs the view finds due are decided again on fresh records
    /// under the lock, every other record left as its very text.
    fn plan(
        &self,
        ctx: &Context,
        scan: &DueScan<'_>,
    ) -> Result<(Vec<Planned>, Option<DateTime<Utc>>), StoreError> {
        let options = scan.options;
        let ttl = options.run_claim_ttl;
        let (mut probe, settled_wake) = self.undecided_jobs(ctx)?;
        let before = probe.len();
        let candidates: HashSet<String> = plan_pass(&mut probe, ctx, options)
            .into_iter()
            .map(|p| p.job.id().to_string())
            .collect();
        prune_completed_one_shots(&mut probe, ctx, scan.completed_retention);
        let mut planned = Vec::new();
        let mut next_wake = earliest(earliest_next_run(&probe, ctx, ttl), settled_wake);
        // A due job is changed in place by its id; one without an id of its own (none, a
        // number, one another job shares) is only reached by healing the whole store.
        let by_id = candidates.iter().all(|id| !id.is_empty())
            && probe
                .iter()
                .filter(|job| candidates.contains(job.id()))
                .count()
                == candidates.len();
        if probe.len() != before || !by_id {
            // Pruning removes records, healing gives ids: the whole store is rewritten.
            self.jobs
                .update::<_, DocumentError>(&ctx.now_text(), |doc| {
                    let mut jobs = healed(std::mem::take(&mut doc.jobs), ctx);
                    planned = plan_pass(&mut jobs, ctx, options);
                    prune_completed_one_shots(&mut jobs, ctx, scan.completed_retention);
                    next_wake = earliest_next_run(&jobs, ctx, ttl);
                    doc.jobs = jobs.into_iter().map(Job::into_record).collect();
                    Ok(())
                })?;
        } else if !candidates.is_empty() {
            // A job that became due between the view and the lock is the next pass's,
            // which the wake-up brings at once.
            let others: Vec<Job> = probe
                .into_iter()
                .filter(|job| !candidates.contains(job.id()))
                .collect();
            let others_wake = earliest(earliest_next_run(&others, ctx, ttl), settled_wake);
            drop(others);
            let ids: HashSet<&str> = candidates.iter().map(String::as_str).collect();
            let mut fresh_wake = None;
            self.jobs
                .update_records::<_, DocumentError>(&ctx.now_text(), &ids, |records| {
                    let mut jobs = healed(records.iter_mut().map(std::mem::take).collect(), ctx);
                    planned = plan_pass(&mut jobs, ctx, options);
                    fresh_wake = earliest_next_run(&jobs, ctx, ttl);
                    for (record, job) in records.iter_mut().zip(jobs) {
                        *record = job.into_record();
                    }
                    Ok(())
                })?;
            next_wake = [others_wake, fresh_wake].into_iter().flatten().min();
        }
        Ok((planned, next_wake))
    }
}

impl Files {
    /// The jobs.json bytes; none for a missing file (an empty store).
    fn read_jobs(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.jobs.jobs_path();
        match std::fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io_unavailable(&path, e)),
        }
    }

    /// The jobs a pass must decide on, as scheduling views, and the earliest next run
    /// of all the others: the reader's due probe ([`JobsText::scheduling`]).
    fn undecided_jobs(
        &self,
        ctx: &Context,
    ) -> Result<(Vec<Job>, Option<DateTime<Utc>>), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        JobsText::new(&bytes, &path).scheduling(ctx)
    }
}

fn earliest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    [a, b].into_iter().flatten().min()
}

fn healed(records: Vec<crate::jsonjobs::Record>, ctx: &Context) -> Vec<Job> {
    records
        .into_iter()
        .map(|record| {
            let mut job = Job::from_record(record);
            job.heal(ctx);
            job
        })
        .collect()
}

impl Files {
    fn load_jobs(&self) -> Result<Vec<Job>, StoreError> {
        self.read_all(None)
    }

    /// Every job, whole or as a view of `keys`: the reader's jobs mode.
    fn read_all(&self, keys: Option<&[&str]>) -> Result<Vec<Job>, StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        let mut jobs = Vec::new();
        JobsText::new(&bytes, &path)
            .jobs(keys, &mut |record| jobs.push(Job::from_record(record)))?;
        Ok(jobs)
    }

    pub(super) fn for_each_job(
        &self,
        _ctx: &Context,
        keys: Option<&[&str]>,
        each: &mut dyn FnMut(Job),
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        JobsText::new(&bytes, &path).jobs(keys, &mut |record| each(Job::from_record(record)))
    }

    /// The reader's text listing ([`JobsText::summaries`]).
    fn for_each_summary(
        &self,
        ctx: &Context,
        sink: &mut dyn SummarySink,
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        JobsText::new(&bytes, &path).summaries(ctx, sink)
    }

    /// The reader's `list --json` listing ([`JobsText::normalized`]).
    fn write_normalized_jobs(
        &self,
        ctx: &Context,
        keep: &(dyn Fn(Listed) -> bool + Sync),
        extras: &[ExtraField],
        out: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let bytes = self.read_jobs()?;
        let path = self.jobs.jobs_path();
        JobsText::new(&bytes, &path).normalized(ctx, keep, extras, out)
    }

    fn layout(&self) -> Result<Layout, StoreError> {
        let mut known = lock(&self.layout);
        let path = self.jobs.jobs_path();
        let stamp = FileStamp::of(&path).map_err(|e| {
            StoreError::Unavailable(format!("cannot access {}: {e}", path.display()))
        })?;
        let Some(stamp) = stamp else {
            return Ok(Layout::of_store(&[]));
        };
        if let Some((read, layout)) = &*known {
            if *read == stamp {
                return Ok(*layout);
            }
        }
        // Stamped before the reading: a file replaced meanwhile is read again next time.
        let bytes = self.read_jobs()?;
        let layout = JobsText::new(&bytes, &path).layout()?;
        *known = Some((stamp, layout));
        Ok(layout)
    }

    fn load_view(&self, keys: &[&str]) -> Result<Vec<Job>, StoreError> {
        self.read_all(Some(keys))
    }

    // Job changes go through the group commit: changes made at the same time share one
    // rewrite and one sync of jobs.json. The whole document is healed and rewritten, as
    // Python Hermes and every earlier build do for a CLI change (on a canonical store the
    // jobs healing leaves alone are copied as text): the same operation leaves the same
    // bytes.
    fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        self.group.insert(&self.jobs, ctx, job)
    }

    fn update_job(&self, ctx: &Context, id: &str, change: JobChange) -> Result<Job, JobError> {
        self.group.update(&self.jobs, ctx, id, change)
    }

    fn update_jobs(
        &self,
        ctx: &Context,
        ids: &HashSet<&str>,
        change: &mut dyn FnMut(&mut Job),
    ) -> Result<(), StoreError> {
        self.jobs
            .update_records::<_, DocumentError>(&ctx.now_text(), ids, |records| {
                for record in records.iter_mut() {
                    let mut job = Job::from_record(std::mem::take(record));
                    job.heal(ctx);
                    change(&mut job);
                    *record = job.into_record();
                }
                Ok(())
            })?;
        Ok(())
    }

    fn remove_job(&self, ctx: &Context, id: &str) -> Result<Job, JobError> {
        if !is_safe_id(id) {
            return Err(JobError::Invalid(format!(
                "Job id '{id}' is not a safe file name; fix or remove it in jobs.json by hand"
            )));
        }
        let removed = self.group.remove(&self.jobs, ctx, id)?;
        if self.db_exists(&self.notepad, &self.notepad_path()) {
            self.with_db(&self.notepad, self.notepad_path(), NotepadBook::open, |n| {
                n.clear(id).map_err(StoreError::from)
            })?;
        }
        let output = self.output_root().join(id);
        match std::fs::remove_dir_all(&output) {
            Ok(()) => Ok(removed),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(removed),
            Err(e) => Err(JobError::Store(io_unavailable(&output, e))),
        }
    }

    fn change_mark(&self) -> ChangeMark {
        use std::hash::{Hash, Hasher};
        let Ok(meta) = std::fs::metadata(self.jobs.jobs_path()) else {
            return ChangeMark(0);
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        meta.modified().ok().hash(&mut hasher);
        meta.len().hash(&mut hasher);
        // Every write replaces the file (a new inode), so two writes of the same length
        // within one tick of the file system's coarse clock still differ.
        #[cfg(unix)]
        std::os::unix::fs::MetadataExt::ino(&meta).hash(&mut hasher);
        ChangeMark(hasher.finish())
    }

    fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        // Held until the occurrences are claimed: a second scheduler on this home does
        // nothing this round rather than deciding on the same records.
        let Some(tick_lock) = self.try_tick_lock()? else {
            return Ok(DuePass::default());
        };
        let (planned, next_wake) = self.plan(ctx, scan)?;
        if planned.is_empty() {
            // Nothing to claim: the ledger is not even opened.
            return Ok(DuePass::decided(Vec::new(), next_wake));
        }
        let occurrences = self.with_ledger(|ledger| {
            Ok(claim_planned(
                planned,
                ctx,
                scan,
                &mut |job_id| {
                    ledger
                        .is_running(job_id, &self.owner.host, &*self.alive)
                        .unwrap_or(false)
                },
                &mut |claim| {
                    ledger
                        .claim(&self.stamped(claim))
                        .map_err(|e| e.to_string())
                },
            ))
        })?;
        drop(tick_lock);
        Ok(DuePass::decided(occurrences, next_wake))
    }

    fn claim_chained(
        &self,
        job_id: &str,
        occurrence: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let claim = crate::store::chain_claim(job_id, occurrence, now);
        self.with_ledger(|ledger| {
            if ledger
                .is_running(job_id, &self.owner.host, &*self.alive)
                .unwrap_or(false)
            {
                return Ok(None);
            }
            ledger.claim(&self.stamped(&claim))
        })
    }

    fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let busy = self.with_ledger(|ledger| {
            Ok(ledger
                .is_running(job_id, &self.owner.host, &*self.alive)
                .unwrap_or(false))
        })?;
        if busy {
            return Err(JobError::Running(job_id.to_string()));
        }
        let occurrence = crate::store::manual_occurrence(job_id, now);
        let claim = crate::store::manual_claim(job_id, &occurrence, now);
        self.with_ledger(|ledger| ledger.claim(&self.stamped(&claim)))?
            .ok_or_else(|| {
                JobError::Invalid(
                    "a manual run was started at the same millisecond; try again".into(),
                )
            })
    }

    fn start_run(
        &self,
        run: i64,
        now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<bool, StoreError> {
        // On this store a claim is this process's run: a ledger that cannot take the
        // start time keeps the claim's, and the run goes ahead (recording its end meets
        // the same ledger and reports what is wrong with it).
        let _ = self.with_ledger(|ledger| ledger.start(run, now, request));
        Ok(true)
    }
}

#[async_trait::async_trait]
impl JobRecords for FileStore {
    async fn load_jobs(&self, _ctx: &Context) -> Result<Vec<Job>, StoreError> {
        self.blocking(Files::load_jobs).await
    }

    async fn insert_job(&self, ctx: &Context, job: Job) -> Result<(), JobError> {
        if !on_one_thread() {
            let files = &self.files;
            return files.group.insert_awaiting(&files.jobs, ctx, job).await;
        }
        let ctx = *ctx;
        self.blocking(move |files| files.insert_job(&ctx, job))
            .await
    }

    async fn update_job(
        &self,
        ctx: &Context,
        id: &str,
        change: JobChange,
    ) -> Result<Job, JobError> {
        if !on_one_thread() {
            let files = &self.files;
            return files
                .group
                .update_awaiting(&files.jobs, ctx, id, change)
                .await;
        }
        let (ctx, id) = (*ctx, id.to_string());
        self.blocking(move |files| files.update_job(&ctx, &id, change))
            .await
    }

    async fn update_jobs(
        &self,
        ctx: &Context,
        ids: HashSet<String>,
        mut change: BatchChange,
    ) -> Result<(), StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            let ids: HashSet<&str> = ids.iter().map(String::as_str).collect();
            files.update_jobs(&ctx, &ids, &mut *change)
        })
        .await
    }

    async fn remove_job(&self, ctx: &Context, id: &str) -> Result<Job, JobError> {
        let (ctx, id) = (*ctx, id.to_string());
        self.blocking(move |files| files.remove_job(&ctx, &id))
            .await
    }

    async fn change_mark(&self) -> ChangeMark {
        self.blocking(|files| Ok::<_, StoreError>(files.change_mark()))
            .await
            .unwrap_or_default()
    }

    async fn claim_due(&self, ctx: &Context, scan: &DueScan<'_>) -> Result<DuePass, StoreError> {
        let (ctx, scan) = (*ctx, OwnedScan::of(scan));
        self.blocking(move |files| files.claim_due(&ctx, &scan.scan()))
            .await
    }

    async fn start_run(
        &self,
        run: i64,
        now: DateTime<Utc>,
        request: &RunRequest,
    ) -> Result<bool, StoreError> {
        let request = request.clone();
        self.blocking(move |files| files.start_run(run, now, &request))
            .await
    }

    async fn claim_chained(
        &self,
        job_id: &str,
        occurrence: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let (job_id, occurrence) = (job_id.to_string(), occurrence.to_string());
        self.blocking(move |files| files.claim_chained(&job_id, &occurrence, now))
            .await
    }

    async fn claim_manual(&self, job_id: &str, now: DateTime<Utc>) -> Result<i64, JobError> {
        let job_id = job_id.to_string();
        self.blocking(move |files| files.claim_manual(&job_id, now))
            .await
    }
}

#[async_trait::async_trait]
impl JobViews for FileStore {
    async fn load_view(&self, _ctx: &Context, keys: &[&str]) -> Result<Vec<Job>, StoreError> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        self.blocking(move |files| {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            files.load_view(&keys)
        })
        .await
    }

    async fn layout(&self, _ctx: &Context) -> Result<Layout, StoreError> {
        self.blocking(|files| files.layout()).await
    }

    fn listing(&self) -> Option<&dyn Listing> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl Listing for FileStore {
    async fn summaries(&self, ctx: &Context, sink: SharedSink) -> Result<(), StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            let mut sink = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            files.for_each_summary(&ctx, &mut *sink)
        })
        .await
    }

    async fn normalized(
        &self,
        ctx: &Context,
        keep: Keep,
        extras: Vec<ExtraField>,
        mut out: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        let ctx = *ctx;
        self.blocking(move |files| {
            files.write_normalized_jobs(&ctx, &*keep, &extras, &mut out)?;
            Ok(out)
        })
        .await
    }
}

/// A [`DueScan`] that owns what it names, to cross to the blocking thread.
struct OwnedScan {
    catch_up_missed: bool,
    claim_owner: String,
    run_claim_ttl: chrono::Duration,
    catch_up_spread: chrono::Duration,
    completed_retention: chrono::Duration,
    running_here: HashSet<String>,
    free_slots: Option<usize>,
}

impl OwnedScan {
    fn of(scan: &DueScan<'_>) -> OwnedScan {
        OwnedScan {
            catch_up_missed: scan.options.catch_up_missed,
            claim_owner: scan.options.claim_owner.to_string(),
            run_claim_ttl: scan.options.run_claim_ttl,
            catch_up_spread: scan.options.catch_up_spread,
            completed_retention: scan.completed_retention,
            running_here: scan.running_here.clone(),
            free_slots: scan.free_slots,
        }
    }

    fn scan(&self) -> DueScan<'_> {
        DueScan {
            options: ScanOptions {
                catch_up_missed: self.catch_up_missed,
                claim_owner: &self.claim_owner,
                run_claim_ttl: self.run_claim_ttl,
                catch_up_spread: self.catch_up_spread,
            },
            completed_retention: self.completed_retention,
            running_here: &self.running_here,
            free_slots: self.free_slots,
        }
    }
}
