//! Runs over many hosts (docs/distributed.md): `cacheoff agent` on each
//! host ([`agent::serve`]) runs its share of a run; the coordinator
//! ([`coordinate`]) reaches the agents, refuses a fleet that disagrees on
//! version, workload or clock before anything starts, splits the robots by
//! exact fractions and the origin servers evenly ([`split`]), announces
//! the servers' addresses and a common start, and merges the agents'
//! intervals exactly into one run directory. The protocol is [`wire`]:
//! JSON lines, histograms in HdrHistogram's compressed form, over mutual
//! TLS under the fleet's CA ([`trust`]); what an agent takes from even an
//! authenticated coordinator is bounded by [`guard`].
//!
//! Faults: an agent lost mid-run leaves the run going, marked partial with
//! its share named; a coordinator lost stops every agent within one
//! interval; an agent in a run refuses another.

pub mod agent;
mod coordinator;
pub mod guard;
mod handshake;
mod listen;
pub mod split;
pub mod trust;
pub mod wire;

pub use agent::{default_data, AgentConfig};
pub use coordinator::{coordinate, prepare, AgentsSink, FleetRun, Ready};
pub use guard::{Limits, Targets};
pub use handshake::{AgentAddr, Fleet};
pub use listen::serve;
pub use split::Role;
pub use trust::{AgentTrust, CoordinatorTrust, Source, INSECURE_WARNING};

/// Why a run over many hosts could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("cannot reach agent {agent}: {why}")]
    Unreachable { agent: String, why: String },
    #[error("agent {agent} refused: {reason}")]
    Refused { agent: String, reason: String },
    #[error("agent {agent}'s clock is {offset_ms:+.1} ms off the coordinator's, more than the {limit_ms:.0} ms allowed (--max-skew); synchronize the clocks (NTP/chrony)")]
    ClockSkew {
        agent: String,
        offset_ms: f64,
        limit_ms: f64,
    },
    #[error("agent {agent}: the link failed: {why}")]
    Link { agent: String, why: String },
    #[error("agent {agent} broke the protocol: {what}")]
    Protocol { agent: String, what: String },
    #[error("{0}")]
    Split(#[from] split::SplitError),
    #[error("link: {0}")]
    Wire(#[from] wire::WireError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    RunDir(#[from] cacheoff_rundir::RunDirError),
    #[error("run failed: {0}")]
    Run(String),
    #[error("--data {}: {why}", dir.display())]
    Data {
        dir: std::path::PathBuf,
        why: String,
    },
}

/// What agents and coordinator compare: the version and the commit.
pub fn version_of(b: &cacheoff_rundir::Build) -> String {
    format!("{} ({})", b.version, b.git_revision)
}

/// A number that differs between runs, for the objects' URLs: every host
/// of one run uses the coordinator's.
pub fn run_nonce() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let x = (t ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 32) as u32
}

/// The wall clock in Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
