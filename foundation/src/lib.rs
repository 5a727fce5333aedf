//! What every part of hermes-cron builds on, and nothing that runs a job: the typed
//! config.yaml of a Hermes home ([`config`]) and its `.env` over the process environment
//! ([`environment`]); the rules over what leaves a run that those settings decide —
//! secret redaction ([`redact`]) and the address policy for requests to users' URLs
//! ([`outbound`]); values from outside made safe for the log ([`logged`]); and this
//! machine's name ([`host`]).
//!
//! The binary, the delivery crate and the agent use these from here; this crate uses no
//! other crate of the workspace, so none of them can reach the scheduler, the CLI or the
//! API through it.

pub mod config;
pub mod environment;
pub mod host;
pub mod logged;
pub mod outbound;
pub mod redact;
