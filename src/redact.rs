//! Secret redaction: the foundation crate's [`foundation::redact`], under the path the
//! binary has always used.

pub use foundation::redact::*;
