//! Delivery outbox in the ledger database. (Being built.)
