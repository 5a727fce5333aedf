//! The job model, the store behind one interface ([`Store`]) with its jobs.json
//! implementation shared with Python Hermes, job lifecycle and the prompt safety scan.
//!
//! Nothing here reads the clock: operations take a [`Context`] with "now" and the zones.
//!
//! The crate's rooms (docs/ARCHITECTURE.md):
//! - [`model`]: the job record, its fields, and the pure decisions on it (due, chains);
//! - [`checks`]: the limits, the threat scan, the gateway guard and the `deliver` grammar
//!   every job change passes;
//! - [`lifecycle`]: create, edit, pause, resume, remove — the checks, then one store call;
//! - [`store`]: the store's capabilities (one trait per room) and its backends;
//! - [`jsonjobs`]: jobs.json's text, read and written (the file store's job document);
//! - [`ledger`]: what runs leave behind — runs, spend, incidents, the outbox, outputs and
//!   notepads.
pub mod checks;
pub mod jsonjobs;
pub mod ledger;
pub mod lifecycle;
pub mod model;
pub mod store;

// Each module also answers at the crate's root, under the name it had before the rooms
// (`jobs::job::Job`, `jobs::jsonfile::JsonFile`, …), which the binary, the benches and
// the fuzz targets use.
pub use checks::{gateway_guard, limits, target, threats};
pub use jsonjobs as jsonfile;
pub use jsonjobs::{listing, scan as jsonscan};
pub use ledger::{incident, notepad, outbox, output, spend};
pub use model::{caps, chain, due, field_table, fields, job, overlap, reach, window};
pub use store::estop;

pub use caps::{CapTexts, Caps};
pub use fields::{BareDuration, Layout, ReasoningEffort, UnreachableRetry};
pub use job::{Context, Job, JobKind, JobState, Repeat};
pub use lifecycle::{
    create_job, edit_job, find_job, pause_job, rearm_one_shot, remove_job, resume_job,
    InferenceNow, JobEdit, JobError, NewJob, RearmAt,
};
pub use listing::JobSummary;
pub use store::{FileStore, MemoryStore, Store, StoreError};
pub use target::{parse_deliver, Platform, Target, TargetError};
pub use window::WindowTexts;
