//! Values from outside as they go into the log: the foundation crate's
//! [`foundation::logged`], under the path the binary has always used.

pub use foundation::logged::*;
