//! The job model, the `jobs.json` store, job lifecycle and the prompt safety scan.
pub mod store;
pub mod threats;
