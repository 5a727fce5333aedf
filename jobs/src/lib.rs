//! The job model, the store behind one interface ([`Store`]) with its jobs.json
//! implementation shared with Python Hermes, job lifecycle and the prompt safety scan.
//!
//! Nothing here reads the clock: operations take a [`Context`] with "now" and the zones.
pub mod caps;
pub mod chain;
pub mod due;
pub mod estop;
pub mod fields;
pub mod gateway_guard;
pub mod incident;
pub mod job;
pub mod jsonfile;
pub mod jsonscan;
pub mod ledger;
pub mod lifecycle;
pub mod limits;
pub mod listing;
pub mod notepad;
pub mod outbox;
pub mod output;
pub mod overlap;
pub mod spend;
pub mod store;
pub mod target;
pub mod threats;
pub mod window;

pub use caps::{CapTexts, Caps};
pub use fields::{BareDuration, Layout, ReasoningEffort, UnreachableRetry};
pub use job::{Context, Job, JobState, Repeat};
pub use lifecycle::{
    create_job, edit_job, find_job, pause_job, rearm_one_shot, remove_job, resume_job,
    InferenceNow, JobEdit, JobError, NewJob, RearmAt,
};
pub use listing::JobSummary;
pub use store::{FileStore, MemoryStore, Store, StoreError};
pub use target::{parse_deliver, Platform, Target, TargetError};
pub use window::WindowTexts;
