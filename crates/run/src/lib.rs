//! A cacheoff run's front end, the same for every command that runs one
//! (`run`, `replay`, `peak`, `ab`, `lineup`) and for the tests that run
//! in-process.
//!
//! A command resolves its workload once ([`workload::Source`]: a
//! built-in, a TOML file or a `.pg` file imported once) and its target
//! once ([`Target::choose`] from a [`TargetSpec`]: direct, a forward
//! proxy, a surrogate over HTTP or HTTPS, the reference proxy started
//! here, on this host or a fleet's agents; a named proxy must answer
//! first, [`preflight`]). [`run_setup`] runs one [`Setup`] into a new run
//! directory: the manifest, the run-time (`cacheoff_agent`, or the
//! fleet's coordinator) feeding the directory, the live [`console`],
//! [`metrics`] and the [`watch`] of the product through one sink, then
//! `summary.json` ([`RunResult`]). [`finish::conclude`] says how it went
//! and judges it by the cache-off's rules. [`run`] is `cacheoff run`
//! whole, from a [`RunPlan`]; [`replay::run`] is `cacheoff replay` (a
//! trace surveyed, then replayed as the run's workload); [`peak::run`] is
//! `cacheoff peak`, its steps runs (`cacheoff_peak::search` with
//! [`peak`]'s step runner); [`ab::experiment`] is `cacheoff ab`'s rounds
//! (`cacheoff_ab::experiment` with [`ab`]'s round runner).
//!
//! Failures are [`RunError`]s; [`RunError::code`] is the exit status
//! (2 bad input or set-up, 1 the run failed or broke a rule). SIGINT and
//! SIGTERM are handled one way for every command ([`signals`]).

pub mod ab;
mod command;
pub mod console;
mod error;
pub mod finish;
mod fleet;
pub mod metrics;
pub mod peak;
pub mod preflight;
mod recorder;
pub mod replay;
mod setup;
pub mod signals;
mod target;
pub mod tls;
pub mod watch;
pub mod workload;

pub use command::{run, Output, RunPlan};
pub use error::{RunError, EXIT_RUN, EXIT_USAGE};
pub use recorder::{OnStart, ADDR_MAP_FILE};
pub use setup::{build, run_in, run_setup, Replay, RunResult, Setup};
pub use target::{reference_label, Surrogate, Target, TargetSpec};
