//! The job model: one job record and what it says, and the pure decisions made from it.
//!
//! - [`job`]: the record as jobs.json holds it, its typed readers and setters, the
//!   repairs every read applies and the `list --json` form;
//! - [`field_table`]: every field of the record declared once (what a new record writes,
//!   the flag that sets it, the readers that go by it), the key lists computed from it;
//! - [`fields`]: typed values of the fields Hermes 0.22 added and the record layout a
//!   new job is written in; [`caps`]: a job's own spending caps; [`window`]: its run
//!   window and jitter; [`overlap`]: what happens when it comes due while still running;
//! - [`chain`]: jobs that run after another job's run;
//! - [`due`]: the due scan of a scheduler pass (which jobs fire, which were missed).
//!
//! Nothing here touches a store, a file or a clock: "now" comes in a [`job::Context`].

pub mod caps;
pub mod chain;
pub mod due;
pub mod field_table;
pub mod fields;
pub mod job;
pub mod overlap;
pub mod reach;
pub mod window;
