//! Traces end to end, one binary (docs/testing.md): errors, every format
//! written and read back, and the sample traces.

mod errors;
mod roundtrip;
mod samples;
