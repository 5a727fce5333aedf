//! The checks a job change passes before the store is touched, one set for every front
//! door (they reach them through [`crate::lifecycle`]):
//!
//! - [`limits`]: the size limits of each field and the characters a one-line field may hold;
//! - [`threats`]: the prompt threat scan (also run on the assembled prompt before each run);
//! - [`gateway_guard`]: no job that would stop, restart or kill the Hermes gateway;
//! - [`target`]: the `deliver` grammar, from text to [`target::Target`]s and back.
//!
//! Each owns one decision and reads nothing but what it is handed.

pub mod gateway_guard;
pub mod limits;
pub mod target;
pub mod threats;
