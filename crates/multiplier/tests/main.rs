//! The Multiplier end to end, one binary (docs/testing.md): its docs,
//! hostile clients and proxies, the memory it holds, SPE with the real
//! Collector.

mod support;

mod docs;
mod hostile;
mod memory;
mod spe;
