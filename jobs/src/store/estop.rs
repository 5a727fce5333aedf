//! The global pause (`hermes pause` / `hermes resume`): while it is engaged no
//! scheduler claims due jobs. This module is the pause as a value; where it is kept is
//! the store's ([`crate::store::Control`]): on a Hermes home the `ESTOP` file Python Hermes
//! 0.22 writes, read and written only by the file store's control room
//! (`store/file/control.rs`, which also has [`crate::store::HomeEstop`]).

use serde::{Deserialize, Serialize};

/// An engaged pause: when and why, as far as anyone said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalPause {
    pub engaged_at: Option<String>,
    pub reason: Option<String>,
}
