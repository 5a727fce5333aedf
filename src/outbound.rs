//! The address policy for requests to users' URLs: the foundation crate's
//! [`foundation::outbound`], under the path the binary has always used.

pub use foundation::outbound::*;
