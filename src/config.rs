//! config.yaml, typed: the foundation crate's [`foundation::config`], under the path the
//! binary has always used.

pub use foundation::config::*;
