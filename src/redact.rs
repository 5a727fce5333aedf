//! Secret redaction (SPEC §9). (Being built.)
