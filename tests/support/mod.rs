//! What the root integration tests share that is the root's own; each
//! test binary (`tests/runs.rs`, ...) declares `mod support;` (Cargo
//! builds no test target from this directory). Origins, clients, waits
//! and this process's figures come from `crates/testkit`.
//!
//! - [`run`]: workloads as the tests build them, in-process runs
//!   (`cacheoff_run::run_in`) into their own directories, at most
//!   [`run::RUNS_AT_ONCE`] at once, and the intervals a run has written
//!   so far;
//! - [`proxy`]: the reference proxy in-process on port 0, its counters,
//!   and Squid under a Collector;
//! - [`process`]: the `cacheoff` binary as a user runs it, and signals.
// Each test file uses its own part.
#![allow(dead_code)]

pub mod process;
pub mod proxy;
pub mod run;

use std::path::Path;

/// A file of this repository (`docs/...`, `ops/...`) as text.
pub fn repo_file(rel: impl AsRef<Path>) -> String {
    let rel = rel.as_ref();
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}
