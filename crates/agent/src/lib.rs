//! The run-time: robots and origin servers on per-core workers.
//!
//! [`run`] binds every origin-server address, starts one thread per worker
//! (each a single-threaded tokio runtime) and coordinates them: workers
//! send a [`Snapshot`](cacheoff_stats::Snapshot) at every interval
//! boundary; the coordinator merges them in order, hands each merged
//! interval to the caller's [`Sink`], and returns the run's
//! [`RunStats`](cacheoff_stats::RunStats). It knows no file formats: the
//! run directory is the caller's.
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
mod ledger;
mod link;
mod local;
mod merge;
mod robot;
mod server;
mod shared;
mod timeline;
mod worker;

pub use coord::{
    raise_fd_limit, run, BoundServers, RunConfig, Sink, StopHandle, TraceFeed, TraceFn,
};
pub use shared::Via;

use std::net::SocketAddr;

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
    #[error("the run may need up to {needed} open files but the limit is {limit}; if connections fail, raise it (ulimit -n) or use fewer robots or --max-conns")]
    FdLimit { needed: u64, limit: u64 },
    #[error("{hosts} client hosts x {workers} workers need {} working sets, more than the {max} object ids can tell apart; use fewer workers or a larger robots.per_host", hosts * workers)]
    TooManyWorlds {
        hosts: usize,
        workers: usize,
        max: usize,
    },
    #[error("worker {0} stopped unexpectedly")]
    WorkerDied(usize),
}
