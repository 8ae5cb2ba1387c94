//! Arguments of the commands that carry real traffic: the SPE
//! Multiplier, trace replays and sample traces.

use cacheoff_base::{Bytes, Dur};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The Multiplier's defaults, which its flags show and take.
fn multiplier_defaults() -> cacheoff_multiplier::Config {
    let here = SocketAddr::from(([127, 0, 0, 1], 0));
    cacheoff_multiplier::Config::new(here, here, Vec::new(), PathBuf::new())
}

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
    #[arg(long, default_value_t = multiplier_defaults().queue, value_name = "N")]
    pub queue: usize,
    /// Bytes all queued and in-flight copies may hold at once, each proxy
    /// an equal share; a copy that does not fit its proxy's share is
    /// dropped (and the proxy reported overloaded).
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(multiplier_defaults().max_queued_bytes))]
    pub max_queued_bytes: Bytes,
    /// Connections open at once to each proxy under test (a copy waits
    /// as long as the origin did, so this many are in flight at the rate
    /// times that wait).
    #[arg(long, default_value_t = multiplier_defaults().conns_per_proxy, value_name = "N")]
    pub conns: usize,
    /// From a copy's start (leaving the queue; connecting included) to its reply's last byte; then the copy ends
    /// as a `timeout` mismatch (an endless body or 100 Continues, or no
    /// answer).
    #[arg(long, value_name = "TIME", default_value_t = Dur(multiplier_defaults().copy_timeout))]
    pub copy_timeout: Dur,
    /// Copy non-idempotent requests (POST, ...) too; by default they go
    /// to the Collector only.
    #[arg(long)]
    pub copy_unsafe: bool,
    /// Clients allowed besides loopback (CIDR; repeatable); others are
    /// answered 403 and closed before anything is read. Once other
    /// clients are allowed, requests may ask only for what --allow-dest
    /// says (by default ports 80 and 443).
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<cacheoff_multiplier::IpNet>,
    /// Where requests may ask for (repeatable), as `cacheoff proxy
    /// --allow-dest`: HOST[:PORTS], HOST being *, a name, *.domain, an
    /// address or a CIDR ([...] for IPv6 with a port), PORTS a port,
    /// LOW-HIGH or * (the default); * never matches this machine. Others
    /// get 403 before anything is relayed. Default: no check while only
    /// loopback clients are allowed; *:80 and *:443 once --allow admits
    /// others.
    #[arg(long, value_name = "HOST[:PORTS]")]
    pub allow_dest: Vec<cacheoff_multiplier::DestRule>,
    /// Client connections open at once; at the cap a new one closes the
    /// connection that has waited longest for a request (idle, or its
    /// head still arriving), or is answered 503 if none waits.
    #[arg(long, value_name = "N", default_value_t = multiplier_defaults().max_client_connections)]
    pub max_client_connections: usize,
    /// How long an idle keep-alive client connection waits for its next
    /// request.
    #[arg(long, value_name = "TIME", default_value_t = Dur(multiplier_defaults().client_idle_timeout))]
    pub client_idle_timeout: Dur,
    /// From a new connection's start, or a later request's first byte, to
    /// the end of the request's head (one deadline, not one per read);
    /// then 408 and close.
    #[arg(long, value_name = "TIME", default_value_t = Dur(multiplier_defaults().client_header_timeout))]
    pub client_header_timeout: Dur,
    /// Pace a request body must keep: it may take --client-header-timeout
    /// plus one second per this many bytes received (0: no pace); then
    /// 408 and close.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(multiplier_defaults().client_body_min_rate))]
    pub client_body_min_rate: Bytes,
    /// Request body bytes buffered at once across client connections; a
    /// body that does not fit is answered 503 before it is read.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(multiplier_defaults().max_buffered_uploads))]
    pub max_buffered_uploads: Bytes,
    /// Largest request body (413 beyond it; bodies are buffered to be
    /// copied).
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(multiplier_defaults().max_request_body))]
    pub max_request_body: Bytes,
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
    #[command(flatten)]
    pub target: super::TargetArgs,
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
    /// Requests to write. A plan that ends sooner is lengthened (more of
    /// its measured phase); one whose measured phase issues nothing is
    /// refused at once, with the number it holds.
    #[arg(long, default_value = "10000", value_name = "N")]
    pub requests: usize,
    /// Output file (`.gz` compresses it).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
}
