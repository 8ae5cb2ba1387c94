//! `cacheoff curve`'s arguments.

use clap::Args;

#[derive(Debug, Args)]
pub struct CurveArgs {
    /// A trace (any format `replay` reads), or a workload (a built-in,
    /// TOML or `.pg` file) whose plan is walked without sockets.
    pub input: String,
    /// The trace's format (default: detected from its first bytes).
    #[arg(long, value_name = "squid|clf|oracle-general|wikimedia|csv")]
    pub format: Option<String>,
    /// CSV columns, e.g. `time=ts,url=path,size=bytes`.
    #[arg(long, value_name = "SPEC")]
    pub columns: Option<String>,
    /// Cache sizes: a list (`1MB,10MB,1GB`) or a range (`1MB..100GB`, 12
    /// sizes spaced on a log scale). Default: 12 sizes from 0.1% to 100%
    /// of the footprint (the bytes of the distinct objects).
    #[arg(long, value_name = "LIST|A..B")]
    pub sizes: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}
