//! Command-line arguments. Values use human units: `13KB`, `2min`, `400/s`.

use cacheoff_base::{Bytes, Dur};
use clap::{Args, Parser, Subcommand};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

mod ab;
mod conform;
mod curve;
mod fleet;
mod lineup;
mod peak;
mod traffic;
mod workload;

pub use ab::AbArgs;
pub use cacheoff_run::Surrogate;
pub use conform::ConformArgs;
pub use curve::CurveArgs;
pub use fleet::{AgentArgs, FleetArgs, TrustArgs};
pub use lineup::LineupArgs;
pub use peak::PeakArgs;
pub use traffic::{CachableRule, MultiplierArgs, ReplayArgs, TraceArgs};
pub use workload::{AddrMapFormat, PglArgs, WorkloadArgs, WorkloadCommand};

#[derive(Debug, Parser)]
#[command(
    name = "cacheoff",
    version,
    about = "Measure Web proxy caches the cache-off way: robots, origin servers and standard workloads",
    long_about = None,
    after_help = "Exit status: 0 passed, 1 the run failed or broke a cache-off rule (more than 3% errors, DHR under 25% over top2, TIME-WAIT under 60 s), 2 bad input or set-up (a bad setting, no proxy answering at --proxy or --reverse, a product not installed), 130 interrupted.",
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload: robots ask origin servers for objects, directly or
    /// through the proxy under test, and every transaction is measured.
    Run(Box<RunArgs>),
    /// List, describe and check workloads.
    #[command(subcommand)]
    Workload(WorkloadCommand),
    /// Render a run's report card (report.html in the run directory), or
    /// export its figures as JSON or CSV.
    Report(ReportArgs),
    /// The cache-off executive summary across runs: one row per product.
    Compare(CompareArgs),
    /// The reference caching proxy (forward, or reverse with --origin), or
    /// with --collector the SPE Collector: hits replay their miss's timing.
    Proxy(Box<ProxyArgs>),
    /// The cache-off MSL test: how long the product keeps a connection it
    /// closed in TIME-WAIT (60 s or more passes). Needs root.
    Msl(MslArgs),
    /// The cache-off in a box: each product of the lineup started, run
    /// (forward and/or reverse), power-cut (downtime test) and MSL-tested,
    /// then stopped; a baseline without a proxy; the executive summary.
    Lineup(Box<LineupArgs>),
    /// Replay a real access trace (Squid, CLF, oracleGeneral, Wikimedia,
    /// CSV) through the proxy under test, with every figure of `run` and
    /// the trace's own ceilings (infinite, LRU and Belady hit ratios).
    Replay(Box<ReplayArgs>),
    /// Write a sample trace in any trace format, made from a workload's
    /// plan (`cacheoff replay` reads it back).
    Trace(TraceArgs),
    /// Hit ratio against cache size of a trace or a workload's plan: an
    /// infinite cache's, and LRU's exactly at every size in one pass.
    Curve(CurveArgs),
    /// The SPE Multiplier: a forward proxy for clients that serves them the
    /// Collector's replies and copies every request to the proxies under
    /// test, comparing and timing their replies; runs until SIGINT/SIGTERM.
    Multiplier(Box<MultiplierArgs>),
    /// Find the highest request rate the proxy sustains while response
    /// time and errors stay inside limits: steps of the workload's
    /// plateau at rates grown, then bisected, then confirmed (peak.json).
    Peak(Box<PeakArgs>),
    /// Is a difference real? The same workload through A and through B in
    /// alternating rounds, then for every headline figure B − A, its 95%
    /// interval and a verdict (ab.json; docs/ab.md).
    Ab(Box<AbArgs>),
    /// Wait for a coordinator (`cacheoff run --agents`) and run its share
    /// of a run over many hosts: robots, origin servers or both.
    Agent(AgentArgs),
    /// HTTP caching conformance (RFC 9111, 9110, 5861, 9213) of a forward
    /// proxy or a surrogate: each check tied to its section, with the
    /// exchange that decided it (docs/conformance.md).
    Conform(ConformArgs),
    /// Make a test CA and a server certificate for HTTPS runs in DIR (or
    /// show the one there): configure the product under test with
    /// DIR/server.pem and DIR/server.key, and give runs --tls-dir DIR.
    /// Also the fleet's credentials in DIR/fleet/ (agents and coordinator
    /// take --fleet-dir DIR).
    Tls {
        /// Where the CA goes (ca.pem, server.pem, server.key, fleet/).
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 pass, 1 TIME-WAIT under 60 s (or the product never answered a probe), 2 cannot run (not root, nothing listening, the product did not close the connection)."
)]
pub struct MslArgs {
    /// The product under test: a forward proxy, or with --surrogate a
    /// reverse proxy (IPv4).
    #[arg(value_name = "HOST:PORT")]
    pub product: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Time between probe SYNs: the precision of the figure.
    #[arg(long, default_value = "0.1s", value_name = "TIME")]
    pub interval: Dur,
    /// How long to probe a TIME-WAIT before reporting "at least" that.
    #[arg(long, default_value = "180s", value_name = "TIME")]
    pub timeout: Dur,
    /// Test a surrogate: ask for / of this site (Host field) instead of a
    /// forward proxy's absolute URL.
    #[arg(long, value_name = "HOST")]
    pub surrogate: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3128", value_name = "HOST:PORT")]
    pub listen: SocketAddr,
    /// Memory store size (0 without --disk: store nothing and forward
    /// every request).
    #[arg(long, default_value = "256MB", value_name = "SIZE")]
    pub mem: cacheoff_base::Bytes,
    /// Disk store directory (kept across restarts).
    #[arg(long, value_name = "DIR")]
    pub disk: Option<PathBuf>,
    /// Disk store size.
    #[arg(long, default_value = "4GB", value_name = "SIZE", requires = "disk")]
    pub disk_size: cacheoff_base::Bytes,
    /// Reverse proxy (accelerator) for this origin instead of a forward proxy.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "origin_map")]
    pub origin: Option<String>,
    /// Surrogate for several origins, routed by the request's Host name:
    /// a file of `NAME HOST:PORT` lines (what `run --reverse` writes as
    /// addrmap.txt).
    #[arg(long, value_name = "FILE")]
    pub origin_map: Option<PathBuf>,
    /// Targeted cache-control field a reverse proxy obeys over
    /// Cache-Control and removes downstream (RFC 9213); repeat for more,
    /// the first present wins. Default in reverse mode: CDN-Cache-Control.
    #[arg(long, value_name = "NAME")]
    pub targeted_field: Vec<String>,
    /// The SPE Collector: store every reply, never reuse origin
    /// connections, and serve each hit with the timing of its miss.
    #[arg(long)]
    pub collector: bool,
    /// Fetch every miss through this parent proxy (forward mode), in
    /// absolute form: SPE's proxies under test use the Collector so.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["origin", "origin_map"])]
    pub parent: Option<String>,
    /// Eviction policy: s3fifo or lru.
    #[arg(long, default_value = "s3fifo", value_parser = parse_policy)]
    pub policy: cacheoff_cache::Policy,
    /// Clients allowed besides loopback (CIDR; repeatable). Once other
    /// clients are allowed, a forward proxy connects only where
    /// --allow-dest says (by default ports 80 and 443).
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<ipnet::IpNet>,
    /// Where a forward proxy may connect (repeatable): HOST[:PORTS], HOST
    /// being *, a name, *.domain, an address or a CIDR ([...] for IPv6
    /// with a port), PORTS a port, LOW-HIGH or * (the default); * never
    /// matches this machine (localhost, loopback, 0.0.0.0). Other
    /// destinations get 403 before any connection is tried, whether their
    /// port is open or not. Default: no check while only loopback clients
    /// are allowed; *:80 and *:443 once --allow admits others. Numeric
    /// hosts other than dotted quads (2130706433, 0x7f.1) get 400.
    #[arg(long, value_name = "HOST[:PORTS]")]
    pub allow_dest: Vec<cacheoff_proxy::DestRule>,
    /// Client connections open at once; more are answered 503 and closed
    /// at once while the open ones are served.
    #[arg(long, value_name = "N", default_value_t = proxy_defaults().max_client_connections)]
    pub max_client_connections: usize,
    /// Access log in Squid's native format.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Largest object stored.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().max_object))]
    pub max_object: Bytes,
    /// Largest request or reply header block (431 or 502 beyond it).
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().max_header as u64))]
    pub max_header: Bytes,
    /// Largest request body (413 beyond it; uploads are buffered).
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().max_request_body))]
    pub max_request_body: Bytes,
    /// Request body bytes buffered at once across all connections; an
    /// upload that does not fit what is left gets 503.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().max_buffered_uploads))]
    pub max_buffered_uploads: Bytes,
    /// Limit on opening a connection to an origin server (then 504).
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().connect_timeout))]
    pub connect_timeout: Dur,
    /// Longest wait for the next bytes from an origin server.
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().read_timeout))]
    pub read_timeout: Dur,
    /// How long an idle client connection stays open (waiting for the
    /// first byte of a request).
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().client_idle_timeout))]
    pub client_idle_timeout: Dur,
    /// How long a client may take no bytes of a reply before the proxy
    /// closes its connection (slow or stalled readers).
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().client_write_timeout))]
    pub client_write_timeout: Dur,
    /// Longest time from a request's first byte to the end of its header
    /// block (then 408 and close); also the grace before
    /// --client-body-min-rate applies.
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().client_header_timeout))]
    pub client_header_timeout: Dur,
    /// Pace a request body must keep, in bytes per second: it may take
    /// --client-header-timeout plus one second per this many bytes
    /// received (then 408 and close); 0 turns the rule off.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().client_body_min_rate))]
    pub client_body_min_rate: Bytes,
    /// Collapsed forwarding's bound: a request waiting for another's
    /// fetch of the same URL gives up on it once it has received nothing
    /// for this long (from its start, then from its last byte); one such
    /// waiter fetches in its place and the others wait for that fetch.
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().collapse_wait))]
    pub collapse_wait: Dur,
    /// A fetch others wait for is also late once it has received less
    /// than this many bytes a second beyond its first --collapse-wait;
    /// 0 turns this rule off.
    #[arg(long, value_name = "SIZE", default_value_t = Bytes(proxy_defaults().collapse_min_rate))]
    pub collapse_min_rate: Bytes,
    /// How long an idle origin connection stays pooled.
    #[arg(long, value_name = "TIME", default_value_t = Dur(proxy_defaults().pool_idle_timeout))]
    pub pool_idle_timeout: Dur,
    /// Idle origin connections kept per origin server (and worker).
    #[arg(long, value_name = "N", default_value_t = proxy_defaults().pool_per_origin)]
    pub pool_per_origin: usize,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// How reply bodies are delimited to clients: length (Content-Length
    /// where known), chunked (Transfer-Encoding: chunked to HTTP/1.1
    /// clients) or close (no length; every reply ends its connection).
    #[arg(long, value_name = "FRAMING", default_value = "length", value_parser = parse_reply_framing)]
    pub reply_framing: cacheoff_proxy::ReplyFraming,
    /// Misbehave on purpose, to check that a run catches it: KIND or
    /// KIND:PROB (share of requests, default 1); repeatable. Kinds: reset,
    /// close, truncate, garbage, drip, huge-header, stale, wrong-object,
    /// flip-byte, ims-by-expires, cache-uncachable, reload-hit, drop,
    /// stall, empty-body, bodiless-body, bad-md5, ignore-ims,
    /// keep-after-post, strip-echo, claim-hit, slow-hit (docs/proxy.md says what
    /// each does and what a run counts).
    #[arg(long = "fault", value_name = "KIND[:PROB]", value_parser = cacheoff_proxy::Faults::parse_one)]
    pub faults: Vec<(cacheoff_proxy::Fault, f64)>,
    /// Serve live Prometheus metrics on http://HOST:PORT/metrics while
    /// running (docs/metrics.md).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Serve requests no faster than this rate (e.g. 300/s), from one
    /// queue: a proxy of known capacity, whose response time grows
    /// without bound above it (for `cacheoff peak`).
    #[arg(long, value_name = "RATE")]
    pub capacity: Option<cacheoff_base::Rate>,
}

/// The reference proxy's own defaults, shown by `--help`.
fn proxy_defaults() -> cacheoff_proxy::ProxyConfig {
    cacheoff_proxy::ProxyConfig::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 3128)))
}

fn parse_reply_framing(s: &str) -> Result<cacheoff_proxy::ReplyFraming, String> {
    cacheoff_proxy::ReplyFraming::from_name(s).ok_or_else(|| {
        let names: Vec<_> = cacheoff_proxy::ReplyFraming::ALL
            .iter()
            .map(|f| f.name())
            .collect();
        format!(
            "unknown reply framing {s:?} (expected one of {})",
            names.join(", ")
        )
    })
}

fn parse_policy(s: &str) -> Result<cacheoff_cache::Policy, String> {
    cacheoff_cache::Policy::parse(s).ok_or_else(|| {
        format!(
            "unknown eviction policy {s:?} (expected one of {})",
            cacheoff_cache::Policy::NAMES
        )
    })
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run directories, one per product (default: every run the products
    /// file names, in its order).
    pub runs: Vec<PathBuf>,
    /// Labels, versions, modes, prices, downtime runs and MSL results per
    /// run directory (TOML; keys: docs/lineup.md).
    #[arg(long)]
    pub products: Option<PathBuf>,
    /// A run without a proxy, for the time savings.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Output file: .md for Markdown, anything else for HTML.
    #[arg(short = 'o', long = "out", default_value = "cacheoff.html")]
    pub out: PathBuf,
    /// Also write the summary as JSON (a lineup's summary.json) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory.
    pub run: PathBuf,
    /// html: report.html in the run directory; json: one document on
    /// standard output (or -o); csv: intervals.csv and phases.csv in the
    /// run directory (or the directory -o names).
    #[arg(long, value_enum, default_value = "html")]
    pub format: ReportFormat,
    /// Where to write instead of the default.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Html,
    Json,
    Csv,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Workload to run: a built-in name (see `cacheoff workload list`), a
    /// workload file (TOML), or a Web Polygraph workload file (.pg).
    pub workload: String,

    #[command(flatten)]
    pub pgl: PglArgs,

    #[command(flatten)]
    pub target: TargetArgs,

    /// The test CA for HTTPS (made there by `cacheoff tls DIR` or the
    /// first run that names it): origin servers present its server.pem,
    /// robots trust its ca.pem alone. Default: a new one in the run
    /// directory's tls/.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,

    /// What the proxy under test is, for reports (e.g. "Squid 5.7, 2 GB").
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    // --rate, --robots, ... (the workload's parameter table).
    #[command(flatten)]
    pub settings: WorkloadArgs,

    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Run directory (default: runs/<timestamp>-<workload>).
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

    // --agents, --roles, ... (a run over many hosts).
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// `[http[s]://]HOST:PORT`: a surrogate under test.
pub fn surrogate(s: &str) -> Result<Surrogate, String> {
    let (rest, tls) = match s.split_once("://") {
        Some(("https", rest)) => (rest, true),
        Some(("http", rest)) => (rest, false),
        Some((scheme, _)) => return Err(format!("{s}: the scheme is http or https, not {scheme}")),
        None => (s, false),
    };
    Ok(Surrogate {
        addr: host_port(rest.trim_end_matches('/'))?,
        tls,
    })
}

/// Where a run's traffic goes, as every command that runs one says it
/// (`run`, `replay`, `peak`).
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArgs {
    /// Forward proxy under test (HOST:PORT). Without it (and without
    /// --direct or --reverse) the run starts cacheoff's reference proxy
    /// and tests that.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["direct", "reverse"], value_parser = host_port)]
    pub proxy: Option<SocketAddr>,

    /// Reverse-proxy (surrogate) mode: robots send `GET /path` with
    /// `Host: s<N>.bench.tst` to the surrogate at HOST:PORT, which routes
    /// each name to its origin server (the address map: `cacheoff
    /// workload addrmap`, and addrmap.txt in the run directory; needs
    /// --server-port). Without an address: the reference proxy as the
    /// surrogate.
    /// `https://HOST:PORT` speaks TLS to it (as --tls).
    #[arg(long, value_name = "[https://]HOST:PORT", num_args = 0..=1, conflicts_with = "direct", value_parser = surrogate)]
    pub reverse: Option<Option<Surrogate>>,

    /// No proxy: robots talk to the origin servers directly (the
    /// no-proxy baseline, and what the workload offers).
    #[arg(long)]
    pub direct: bool,
}

impl TargetArgs {
    /// The target as the run's library takes it.
    pub fn spec(&self) -> cacheoff_run::TargetSpec {
        cacheoff_run::TargetSpec {
            proxy: self.proxy,
            reverse: self.reverse,
            direct: self.direct,
        }
    }
}

/// `HOST:PORT` with HOST an address or a name (resolved now: a name in
/// a cluster, such as a Kubernetes Service's).
pub fn host_port(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    use std::net::ToSocketAddrs;
    let mut addrs = s
        .to_socket_addrs()
        .map_err(|e| format!("{s}: not an address or a name that resolves ({e})"))?;
    // IPv4 first: robots and origin servers are IPv4.
    let all: Vec<SocketAddr> = addrs.by_ref().collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("{s}: the name has no address"))
}

/// Worker threads: as asked (at least one), or one per core.
pub fn workers(asked: Option<usize>) -> usize {
    asked
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_workload::PeakRate;
    use clap::CommandFactory;

    fn run_args(args: &[&str]) -> Result<RunArgs, clap::Error> {
        let argv = ["cacheoff", "run", "simple"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Run(a) => Ok(*a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn workload_flags_fill_the_overrides() {
        let a = run_args(&["--peak-rate", "max", "--size", "exp(2KB)", "--direct"]).unwrap();
        let o = &a.settings.0;
        assert_eq!(o.rate, Some(PeakRate::ClosedLoop));
        assert_eq!(
            o.size.as_ref().map(|d| d.to_string()),
            Some("exp(2KB)".into())
        );
        assert_eq!((o.robots, a.target.direct), (None, true));
        let a = run_args(&["--rate", "50/s", "--plateau", "2min", "-q"]).unwrap();
        let o = &a.settings.0;
        assert_eq!(
            o.rate.and_then(PeakRate::rate).map(|r| r.per_sec()),
            Some(50.0)
        );
        assert_eq!(o.plateau.map(|d| d.as_secs_f64()), Some(120.0));
        let e = run_args(&["--size", "gauss(1KB)"]).unwrap_err().to_string();
        assert!(e.contains("'--size <DIST>'") && e.contains("gauss"), "{e}");
    }
}
