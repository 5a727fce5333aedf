//! The environment a run sees (`.env` under the real environment): the foundation
//! crate's [`foundation::environment`], under the path the binary has always used.

pub use foundation::environment::*;
