//! The run-time: robots and origin servers on per-core workers.
//!
//! [`run`] binds every origin-server address, starts one thread per worker
//! (each a single-threaded tokio runtime) and coordinates them: workers
//! send a [`Snapshot`](cacheoff_stats::Snapshot) at every interval
//! boundary; the coordinator merges them in order, hands each merged
//! interval to the caller's [`Sink`], and returns the run's
//! [`RunStats`](cacheoff_stats::RunStats). It knows no file formats: the
//! run directory is the caller's. Before it starts, `fds` raises the
//! process's descriptor limit for the run ([`raise_fd_limits`]); a run
//! that still runs out stops with [`AgentError::OutOfFds`].
//!
//! Control flows one way: `coord` starts `worker`s and reads their
//! messages (`merge`); a worker runs its `server`s and its `robot`s, which
//! share the worker's `local` state; everything reads the run's `shared`
//! data and its `timeline`, which only the coordinator advances.
//!
//! Inside `robot`: the `pacer` hands out the plan's arrivals
//! (`cacheoff_workload::Plan`) on time, `conns` keeps connections,
//! `exchange` talks on the wire, and `verdict` judges each reply.

mod coord;
mod fds;
mod gather;
mod h1text;
mod ledger;
mod link;
mod local;
mod merge;
mod reply;
mod robot;
mod server;
mod server_h2;
mod server_limits;
mod share;
mod shared;
mod timeline;
mod worker;

pub use coord::{run, BoundServers, RunConfig, Sink, StopHandle, TraceFeed, TraceFn};
pub use fds::{note_io_error, raise_fd_limit, raise_fd_limits, FdLimits};
pub use gather::Gather;
pub use share::Share;
pub use shared::{Tls, Via};
pub use timeline::{Jump, Timeline};

use std::net::SocketAddr;

/// How to give a process `n` descriptors, for the errors that need it.
fn fd_howto(n: u64) -> String {
    format!("raise it before starting: `ulimit -n {n}` in the shell (as root `ulimit -Hn {n}` first), LimitNOFILE={n} in a systemd unit, /proc/sys/fs/nr_open at least that")
}

/// Why a run could not start or continue.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot listen on origin server address {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start worker {worker}: {source}")]
    Worker {
        worker: usize,
        source: std::io::Error,
    },
    #[error("{needed} file descriptors needed but the limit is {soft} (hard limit {hard}, which only root or CAP_SYS_RESOURCE may raise, up to fs.nr_open = {nr_open}); {}", fd_howto(*needed))]
    FdLimit {
        needed: u64,
        soft: u64,
        hard: u64,
        nr_open: u64,
    },
    #[error("ran out of file descriptors at the limit of {soft} (hard limit {hard}) and stopped; the run may hold up to {needed} (both ends of robots x max_conns connections, and the listeners): {}, or run fewer robots or a lower --max-conns", fd_howto(*needed))]
    OutOfFds { needed: u64, soft: u64, hard: u64 },
    #[error("{hosts} client hosts x {workers} workers need {} working sets, more than the {max} object ids can tell apart; use fewer workers or a larger robots.per_host", hosts * workers)]
    TooManyWorlds {
        hosts: usize,
        workers: usize,
        max: usize,
    },
    #[error("worker {0} stopped unexpectedly")]
    WorkerDied(usize),
    #[error("the workload asks robots for TLS, but the run has no test CA")]
    NoTestCa,
    #[error("TLS: {0}")]
    Tls(#[from] cacheoff_tls::TlsError),
}
