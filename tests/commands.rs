//! The `cacheoff` binary's commands as a user runs them (docs/testing.md):
//! exit codes, messages and signals, workload files and `.pg` files,
//! traces, SPE, the descriptor limit and the MSL test.

mod support;

mod cli;
mod fd_limit;
mod msl;
mod pgl;
mod replay;
mod spe;
mod workload_safety;
