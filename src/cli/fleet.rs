//! Arguments of runs over many hosts: `cacheoff agent`, and `run`'s
//! `--agents` (docs/distributed.md).

use cacheoff_base::Dur;
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
    /// Where each run's own log is kept (DIR/<run id>/, a run directory).
    #[arg(long, value_name = "DIR", default_value = "cacheoff-agent")]
    pub data: PathBuf,
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
}
