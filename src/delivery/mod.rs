//! Delivery of a run's result (SPEC §7). (Being built.)
