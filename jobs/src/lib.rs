//! The job model, the `jobs.json` store, job lifecycle and the prompt safety scan.
//!
//! Nothing here reads the clock: operations take a [`Context`] with "now" and the zones.
pub mod due;
pub mod job;
pub mod ledger;
pub mod lifecycle;
pub mod outbox;
pub mod output;
pub mod store;
pub mod target;
pub mod threats;

pub use job::{Context, Job, JobState, Repeat};
pub use lifecycle::{
    create_job, edit_job, find_job, pause_job, remove_job, resume_job, JobEdit, JobError, JobStore,
    NewJob,
};
pub use store::{JsonFileStore, StoreError};
pub use target::{parse_deliver, Platform, Target, TargetError};

/// The names `lifecycle.rs` still calls, kept only until its call sites move to
/// [`target`] (`target::validate_deliver` and `Platform::parse`); remove it then.
pub mod deliver {
    pub use crate::target::validate_deliver;

    /// Every platform's name; see [`crate::Platform::NAMES`].
    pub const PLATFORMS: &[&str] = &crate::Platform::NAMES;
}
