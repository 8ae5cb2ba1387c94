//! `cacheoff peak`'s arguments (the command is `peak_cmd`).

use super::{PglArgs, TargetArgs, WorkloadArgs};
use cacheoff_base::Dur;
use clap::Args;
use std::path::PathBuf;

/// `cacheoff peak`'s arguments.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit status: 0 a peak was found and confirmed, 1 none was (no rate kept the limit, or the repeat failed), 2 bad input or set-up."
)]
pub struct PeakArgs {
    /// Workload whose measured phase is stepped (a built-in, a workload
    /// file or a Web Polygraph `.pg` file).
    pub workload: String,
    #[command(flatten)]
    pub pgl: PglArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The response-time limit every step must keep, from the intended
    /// start: `mean<=TIME` or `p99<=TIME` (e.g. 'p99<=50ms').
    #[arg(long, value_name = "STAT<=TIME")]
    pub rt_limit: String,
    /// Most errors a step may have, in percent of requests.
    #[arg(long, value_name = "PCT%", default_value = "0.1%")]
    pub error_limit: String,
    /// Stop bisecting once the bracket is this narrow (relative).
    #[arg(long, value_name = "PCT%", default_value = "5%")]
    pub precision: String,
    /// Highest rate (or closed-loop robots) tried.
    #[arg(long, value_name = "N", default_value = "100000")]
    pub max_load: f64,
    /// Most steps before the confirmation (rechecks of failed steps not
    /// counted).
    #[arg(long, value_name = "N", default_value = "16")]
    pub max_steps: usize,
    /// Pause between steps, for the proxy to drain what a failed step
    /// left queued.
    #[arg(long, value_name = "TIME", default_value = "2s")]
    pub rest: Dur,
    /// Skip the warm-up (the phases before the plateau).
    #[arg(long)]
    pub no_warmup: bool,
    /// What the proxy under test is, for reports.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    // --rate (the first step's; `max` steps robots instead), --plateau, ...
    #[command(flatten)]
    pub settings: WorkloadArgs,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Output directory: peak.json, warmup/ and a run directory per step
    /// (default: runs/<timestamp>-<workload>-peak).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only a line per step.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
