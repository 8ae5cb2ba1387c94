//! Why a run could not be set up or did not pass, and the exit status
//! each maps to: 2 when the input or the set-up is wrong (nothing ran, or
//! what ran was not a measurement), 1 when the run failed or broke a
//! cache-off rule.
//!
//! A variant's message is what the command says; its source, when it has
//! one, follows it after `: ` (as `{:#}` of an `anyhow::Error` prints it).

use std::net::SocketAddr;
use std::path::PathBuf;

/// Exit status of bad input or set-up.
pub const EXIT_USAGE: u8 = 2;
/// Exit status of a run that failed or broke a cache-off rule.
pub const EXIT_RUN: u8 = 1;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The workload named cannot be read.
    #[error(transparent)]
    Load(#[from] cacheoff_workload::LoadError),
    /// The workload cannot run as it stands.
    #[error(transparent)]
    Workload(#[from] cacheoff_workload::WorkloadError),
    /// A Web Polygraph file cannot be imported.
    #[error(transparent)]
    Import(#[from] cacheoff_pgl::ImportError),
    #[error("{addr}: the surrogate must know the origin servers' addresses before the run: give them a port (--server-port PORT) and configure the surrogate with `cacheoff workload addrmap {what} --server-port PORT`")]
    SurrogateNeedsPort { addr: SocketAddr, what: String },
    /// The preflight check found no HTTP proxy at `addr`.
    #[error("no proxy to test at {addr}: {why}; start it or check the address")]
    NoProxy { addr: SocketAddr, why: String },
    #[error("cannot listen on the origin servers' addresses")]
    BindServers(#[source] cacheoff_agent::AgentError),
    #[error("--metrics {addr}: cannot listen")]
    Metrics {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("--watch {arg}: {error}")]
    Watch {
        arg: String,
        error: cacheoff_resources::Error,
    },
    #[error("the test CA for HTTPS")]
    TestCa(#[source] cacheoff_tls::TlsError),
    #[error("with --agents, name the surrogate (--reverse HOST:PORT): the agents' origin servers are known only once they listen")]
    FleetSurrogateUnnamed,
    #[error(
        "HTTPS runs over many hosts are not supported yet: every host would need the same test CA"
    )]
    FleetTls,
    /// Too few descriptors for a fleet's links.
    #[error(transparent)]
    FdLimit(cacheoff_agent::AgentError),
    /// The fleet could not be prepared (nothing started when the agents
    /// could not be reached, refused, disagreed on time or on the split).
    #[error(transparent)]
    FleetPrepare(Box<cacheoff_fleet::FleetError>),
    /// The run directory holds a run already.
    #[error(transparent)]
    HoldsARun(cacheoff_rundir::RunDirError),
    #[error("cannot create the run directory")]
    CreateDir(#[source] cacheoff_rundir::RunDirError),
    /// A peak search's or an experiment's directory.
    #[error("cannot create {}", path.display())]
    Mkdir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A workload without a plateau to step.
    #[error(transparent)]
    NoPlateau(#[from] cacheoff_peak::NoPlateau),
    #[error("{} already holds a peak search (peak.json exists)", .0.display())]
    HoldsAPeak(PathBuf),
    /// A trace to replay cannot be read, or has a malformed line.
    #[error(transparent)]
    Trace(#[from] cacheoff_trace::TraceError),
    #[error("{}: the trace has no requests", .0.display())]
    EmptyTrace(PathBuf),

    /// A product started for one run (`cacheoff ab`) failed to start or
    /// to stop.
    #[error("{name}: {why}")]
    Product { name: String, why: String },
    /// A finished run's directory could not be read back.
    #[error("cannot read the run back")]
    ReadBack(#[source] cacheoff_rundir::RunDirError),
    #[error("cannot read {}: {why}", path.display())]
    Summary { path: PathBuf, why: String },
    #[error("cannot start the reference proxy")]
    ReferenceProxy(#[source] cacheoff_proxy::ProxyError),
    #[error("cannot write the run directory")]
    WriteDir(#[source] cacheoff_rundir::RunDirError),
    /// An interval, the agents' records or the summary could not be
    /// written.
    #[error(transparent)]
    Record(cacheoff_rundir::RunDirError),
    #[error("run failed")]
    Agent(#[source] cacheoff_agent::AgentError),
    #[error("run failed")]
    Fleet(#[source] Box<cacheoff_fleet::FleetError>),
    #[error("the run is disqualified by the cache-off's rules: {}", .0.join("; "))]
    Disqualified(Vec<String>),
    /// A signal stopped a command of many runs between two.
    #[error("interrupted")]
    Interrupted,
    /// A peak search kept no rate.
    #[error("no peak: {why} ({steps} steps; {})", dir.display())]
    NoPeak {
        why: &'static str,
        steps: usize,
        dir: PathBuf,
    },
}

impl RunError {
    /// The exit status this maps to: [`EXIT_USAGE`] or [`EXIT_RUN`].
    pub fn code(&self) -> u8 {
        use cacheoff_fleet::FleetError as F;
        match self {
            RunError::Load(_)
            | RunError::Workload(_)
            | RunError::Import(_)
            | RunError::SurrogateNeedsPort { .. }
            | RunError::NoProxy { .. }
            | RunError::BindServers(_)
            | RunError::Metrics { .. }
            | RunError::Watch { .. }
            | RunError::TestCa(_)
            | RunError::FleetSurrogateUnnamed
            | RunError::FleetTls
            | RunError::FdLimit(_)
            | RunError::HoldsARun(_)
            | RunError::CreateDir(_)
            | RunError::Mkdir { .. }
            | RunError::NoPlateau(_)
            | RunError::HoldsAPeak(_)
            | RunError::Trace(_)
            | RunError::EmptyTrace(_) => EXIT_USAGE,
            RunError::FleetPrepare(e) => match **e {
                F::Unreachable { .. } | F::Refused { .. } | F::ClockSkew { .. } | F::Split(_) => {
                    EXIT_USAGE
                }
                _ => EXIT_RUN,
            },
            RunError::ReferenceProxy(_)
            | RunError::Product { .. }
            | RunError::ReadBack(_)
            | RunError::Summary { .. }
            | RunError::WriteDir(_)
            | RunError::Record(_)
            | RunError::Agent(_)
            | RunError::Fleet(_)
            | RunError::Disqualified(_)
            | RunError::Interrupted
            | RunError::NoPeak { .. } => EXIT_RUN,
        }
    }
}

impl From<cacheoff_rundir::RunDirError> for RunError {
    /// A write to the run directory during or after the run.
    fn from(e: cacheoff_rundir::RunDirError) -> RunError {
        RunError::Record(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_up_errors_are_usage_and_run_errors_are_failures() {
        assert_eq!(RunError::FleetTls.code(), EXIT_USAGE);
        assert_eq!(RunError::Disqualified(vec!["x".into()]).code(), EXIT_RUN);
        let skew = cacheoff_fleet::FleetError::Run("lost".into());
        assert_eq!(RunError::FleetPrepare(Box::new(skew)).code(), EXIT_RUN);
        let e = RunError::Disqualified(vec!["a".into(), "b".into()]);
        assert_eq!(
            e.to_string(),
            "the run is disqualified by the cache-off's rules: a; b"
        );
    }
}
