//! Arguments of the commands that carry real traffic: the SPE
//! Multiplier, trace replays and sample traces.

use cacheoff_base::Bytes;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MultiplierArgs {
    /// Where clients connect.
    #[arg(long, default_value = "127.0.0.1:3128", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The Collector (`cacheoff proxy --collector`), whose replies the
    /// clients get.
    #[arg(long, value_name = "HOST:PORT")]
    pub collector: String,
    /// A proxy under test, fetching its misses through the Collector;
    /// repeat for more.
    #[arg(long = "proxy", value_name = "NAME=HOST:PORT", required = true)]
    pub proxies: Vec<String>,
    /// Run directory (default: runs/<timestamp>-multiplier).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Pending copies per proxy under test; more are dropped (and the
    /// proxy reported overloaded).
    #[arg(long, default_value = "8192", value_name = "N")]
    pub queue: usize,
    /// Connections open at once to each proxy under test (a copy waits
    /// as long as the origin did, so this many are in flight at the rate
    /// times that wait).
    #[arg(long, default_value = "1024", value_name = "N")]
    pub conns: usize,
    /// Copy non-idempotent requests (POST, ...) too; by default they go
    /// to the Collector only.
    #[arg(long)]
    pub copy_unsafe: bool,
    /// Client-side worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// No live line per interval.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Serve live Prometheus metrics on http://HOST:PORT/metrics while
    /// running (docs/metrics.md).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Sample what a proxy under test spends (CPU, memory, disk,
    /// descriptors, threads) every interval: NAME=PID or NAME=CGROUP-PATH
    /// (a pid with its descendants, or a cgroup2 directory), repeatable;
    /// with one proxy the NAME= may be left out (docs/resources.md).
    #[arg(long, value_name = "[NAME=]PID|CGROUP-PATH")]
    pub watch: Vec<String>,
}

/// How a replay decides which objects are cachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CachableRule {
    /// What the trace implies (method and status); all when it says nothing.
    Trace,
    /// Every GET and HEAD.
    All,
    /// None: every request must reach the origin.
    None,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace file (gzip or zstd compressed ones are read as they are).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Forward proxy under test (HOST:PORT); without it (and without
    /// --direct or --reverse) the reference proxy is started and tested.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["direct", "reverse"])]
    pub proxy: Option<SocketAddr>,
    /// Surrogate under test (HOST:PORT; needs --server-port), or without
    /// an address the reference proxy as the surrogate.
    #[arg(long, value_name = "HOST:PORT", num_args = 0..=1, conflicts_with = "direct")]
    pub reverse: Option<Option<SocketAddr>>,
    /// No proxy: straight to the origin servers.
    #[arg(long)]
    pub direct: bool,
    /// The trace's format (detected when left out; csv needs --columns
    /// unless its header names the fields).
    #[arg(long, value_name = "squid|clf|oracle-general|wikimedia|csv")]
    pub format: Option<String>,
    /// CSV columns, e.g. `time=ts,url=path,size=bytes` (docs/traces.md).
    #[arg(long, value_name = "SPEC")]
    pub columns: Option<String>,
    /// Replay time per trace time: 2 replays twice as fast.
    #[arg(long, value_name = "X", conflicts_with = "rate")]
    pub speed: Option<f64>,
    /// Replay at this average request rate instead (the trace's timing
    /// scaled to it).
    #[arg(long, value_name = "RATE")]
    pub rate: Option<cacheoff_base::Rate>,
    /// Which objects are cachable.
    #[arg(long, value_enum, default_value = "trace")]
    pub cachable: CachableRule,
    /// Size of the cache the ceilings assume, and of the reference proxy's
    /// memory when it is the one tested (default: its 256 MB).
    #[arg(long, value_name = "SIZE")]
    pub cache_size: Option<Bytes>,
    /// Origin servers the trace's sites are spread over.
    #[arg(long, default_value = "8", value_name = "N")]
    pub servers: u32,
    /// Robots the trace's clients are spread over.
    #[arg(long, default_value = "64", value_name = "N")]
    pub robots: u32,
    /// Origin servers' port (reverse mode: the surrogate's address map).
    #[arg(long, value_name = "PORT")]
    pub server_port: Option<u16>,
    /// Ignore the trace's time to first byte (origins answer at once).
    #[arg(long)]
    pub no_ttfb: bool,
    /// What the proxy under test is, for reports.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Run directory (default: runs/<timestamp>-replay).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print only the final summary, not a line per interval.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Serve live Prometheus metrics on http://HOST:PORT/metrics while
    /// running (docs/metrics.md).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Sample what the product under test spends (CPU, memory, disk,
    /// descriptors, threads) every interval: a pid (with its descendants)
    /// or a cgroup2 directory (docs/resources.md).
    #[arg(long, value_name = "PID|CGROUP-PATH")]
    pub watch: Option<String>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The workload whose plan makes the trace (a built-in or a file).
    pub workload: String,
    /// The format to write.
    #[arg(long, value_name = "squid|clf|oracle-general|wikimedia|csv")]
    pub format: String,
    /// Requests to write.
    #[arg(long, default_value = "10000", value_name = "N")]
    pub requests: usize,
    /// Output file (`.gz` compresses it).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
}
