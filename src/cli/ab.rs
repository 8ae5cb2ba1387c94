//! `cacheoff ab`'s arguments (the command is `ab_cmd`).

use super::{PglArgs, WorkloadArgs};
use clap::Args;
use std::path::PathBuf;

/// `cacheoff ab`'s arguments.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit status: 0 every run ran (whatever the verdicts), 1 a run failed, 2 bad input or set-up."
)]
pub struct AbArgs {
    /// Workload of every run (a built-in, a TOML or a .pg file).
    pub workload: String,
    #[command(flatten)]
    pub pgl: PglArgs,
    /// A: a proxy already running (HOST:PORT: a forward proxy, or a
    /// surrogate for a surrogate workload such as webaxe-4, configured
    /// with the address map of --server-port), or a product cacheoff
    /// starts afresh for each run, in a cgroup of its own (a product
    /// file's name or path: reference, squid, varnish, ...).
    #[arg(long, value_name = "ADDR|PRODUCT")]
    pub a: String,
    /// B, as A; differences are B's against A's.
    #[arg(long, value_name = "ADDR|PRODUCT")]
    pub b: String,
    /// Rounds: each runs A and B once, back to back (an even number
    /// cancels a linear drift of the machine; a multiple of 4 a quadratic
    /// one).
    #[arg(long, value_name = "N", default_value = "6")]
    pub rounds: usize,
    /// What A spends, when A is an address: a pid or a cgroup2 directory.
    #[arg(long, value_name = "PID|CGROUP-PATH")]
    pub a_watch: Option<String>,
    /// What B spends, when B is an address.
    #[arg(long, value_name = "PID|CGROUP-PATH")]
    pub b_watch: Option<String>,
    // --plateau, --peak-rate, --cache-size, ...
    #[command(flatten)]
    pub settings: WorkloadArgs,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Output directory: ab.json and a run directory per run
    /// (default: runs/<timestamp>-<workload>-ab).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only a line per run and the table.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
