//! Arguments of runs over many hosts: `cacheoff agent`, and `run`'s
//! `--agents` (docs/distributed.md).

use cacheoff_base::Dur;
use cacheoff_fleet::Limits;
use clap::Args;
use std::net::Ipv4Addr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Address to wait for coordinators on (port 0 picks one; the line
    /// `cacheoff agent listening on ADDR` tells which).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    /// One address for this host's robots and origin servers (a pod's
    /// IP). Without it, each uses the workload's address range at its
    /// index in the whole run (agents on one machine's loopback).
    #[arg(long, value_name = "IP")]
    pub host_ip: Option<Ipv4Addr>,
    /// Where each run's own log is kept (DIR/<run id>/, a run directory);
    /// default cacheoff-agent-PORT, PORT the one it listens on. One agent
    /// at a time may use a directory.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub trust: TrustArgs,
    /// Where its robots may send traffic (repeatable, or comma-separated):
    /// CIDR or address, with :PORT or :LOW-HIGH. A run whose proxy,
    /// surrogate or origin servers (other than this agent's own) fall
    /// outside is refused before it starts. Without any: the run's own
    /// origin servers and the proxy its coordinator names.
    #[arg(long, value_name = "CIDR[:PORTS]", value_delimiter = ',')]
    pub allow_target: Vec<cacheoff_access::DestRule>,
    /// The most robots this agent runs of one run's share.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_robots)]
    pub max_robots: u64,
    /// The most origin servers this agent binds for one run.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_servers)]
    pub max_servers: u32,
    /// The highest request rate (per second, at the workload's peak) of
    /// this agent's share.
    #[arg(long, value_name = "PER_SECOND", default_value_t = Limits::default().max_rate)]
    pub max_rate: f64,
    /// Links open at once; more are closed as they come.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,
    /// Worker threads for robots and servers (default: one per core); a
    /// client agent's share of the robots is its threads over all.
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Exit after this many runs (default: serve until killed).
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
}

/// `run`'s options for a run over many hosts.
#[derive(Debug, Args, Default, Clone)]
pub struct FleetArgs {
    /// Run on many hosts: the `cacheoff agent`s at these addresses each
    /// run a share of the robots and origin servers; this process
    /// coordinates and writes the one run directory.
    #[arg(long, value_name = "HOST:PORT,...", value_delimiter = ',')]
    pub agents: Vec<String>,
    /// Give agents one role: `clients=HOST:PORT,...` (robots only) and
    /// `servers=HOST:PORT,...` (origin servers only); agents not named
    /// run both.
    #[arg(long, value_name = "ROLE=HOST:PORT,...", num_args = 1..)]
    pub roles: Vec<String>,
    /// Agents from a file: one `HOST:PORT [clients|servers|both]` per
    /// line, `#` comments.
    #[arg(long, value_name = "FILE")]
    pub agents_file: Option<PathBuf>,
    /// How long to keep trying to reach agents that are not up yet.
    #[arg(long, value_name = "TIME", default_value = "10s")]
    pub agent_wait: Dur,
    /// The largest clock difference allowed between this host and an
    /// agent (measured at the handshake).
    #[arg(long, value_name = "TIME", default_value = "50ms")]
    pub max_skew: Dur,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// How the ends of a fleet prove who they are (docs/security.md).
#[derive(Debug, Args, Default, Clone)]
pub struct TrustArgs {
    /// The fleet's credentials as `cacheoff tls DIR` made them (DIR, or
    /// its fleet/ subdirectory): mutual TLS, agents and coordinator each
    /// with a certificate of their role under the fleet's CA.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["secret_file", "insecure"])]
    pub fleet_dir: Option<PathBuf>,
    /// A file holding a secret shared by the fleet (at least 16 bytes):
    /// both ends derive the fleet's CA from it, then mutual TLS as with
    /// --fleet-dir.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub secret_file: Option<PathBuf>,
    /// Plaintext links, no authentication: anyone who reaches an agent
    /// can drive it (within its --allow-target). For a sealed lab only.
    #[arg(long)]
    pub insecure: bool,
}
