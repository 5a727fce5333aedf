//! What runs leave behind, kept beside the jobs: the run ledger (`cron/executions.db`,
//! [`runs`], whose items are also at this room's root, where they always were), what
//! runs spent ([`spend`]), failure incidents ([`incident`]), the delivery outbox
//! ([`outbox`]), output documents ([`output`]) and the per-job notepads ([`notepad`]).
//!
//! Each module holds its rules once and, where the file store keeps it in SQLite or
//! files, that table or directory; the store rooms ([`crate::store`]) are the only
//! callers that open them.

pub mod incident;
pub mod notepad;
pub mod outbox;
pub mod output;
pub mod runs;
pub mod spend;
pub mod status;

pub use runs::*;
