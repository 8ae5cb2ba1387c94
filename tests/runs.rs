//! Runs and their figures, in-process on port 0 or through the binary
//! (docs/testing.md): what robots, origin servers and the reference proxy
//! do, and what the run directory, the report card and `/metrics` say of
//! it. The long PolyMix-3 fidelity run is ignored by a plain `cargo test`.

mod support;

mod caching;
mod claims;
mod direct;
mod faults;
mod fidelity;
mod https;
mod metrics;
mod peak;
mod phases;
mod plan;
mod proxy_disk;
mod report;
mod reverse;
mod robots;
