//! Delivery of a run's result: the delivery crate (`delivery/`, docs/DELIVERY.md), under
//! the path the binary has always used.

pub use ::delivery::*;
