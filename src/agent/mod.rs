//! The built-in agent that runs a job (SPEC §6). (Being built.)
