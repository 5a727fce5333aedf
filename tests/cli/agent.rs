//! Agent runs against local fake model servers. (Being built.)
