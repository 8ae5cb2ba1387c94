//! Helpers shared by the root integration tests. Each test file declares
//! `mod support;` (Cargo builds no test target from this directory):
//!
//! - [`run`]: workloads as the tests build them, and in-process runs
//!   (`cacheoff_run::run_in`) into their own directories, at most
//!   [`run::RUNS_AT_ONCE`] at once;
//! - [`proxy`]: the reference proxy in-process on port 0, and its counters;
//! - [`process`]: the `cacheoff` binary as a user runs it, and signals;
//! - [`wait`]: readiness signals instead of fixed sleeps.
// Each test file uses its own part.
#![allow(dead_code)]

pub mod process;
pub mod proxy;
pub mod run;
pub mod wait;

use std::path::Path;

/// A file of this repository (`docs/...`, `ops/...`) as text.
pub fn repo_file(rel: impl AsRef<Path>) -> String {
    let rel = rel.as_ref();
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

/// A loopback port nobody listens on: bound, learnt, closed.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
