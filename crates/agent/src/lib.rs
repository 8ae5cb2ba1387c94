//! The run-time: robots and origin servers on per-core workers.
//!
//! [`run`] binds every origin-server address, starts one thread per worker
//! (each a single-threaded tokio runtime), and acts as the coordinator:
//! workers send a [`Snapshot`](cacheoff_stats::Snapshot) at every interval
//! boundary; the coordinator merges them, hands each merged interval to the
//! caller's [`Sink`], and returns the [`Summary`].
//!
//! Inside a worker: `robot` paces requests open-loop from the plan and runs
//! transactions; `server` answers them; `world` picks objects. Workers share
//! only the read-only `Shared` data; each owns its stats.

mod coord;
mod ledger;
mod link;
mod robot;
mod server;
mod shared;
mod worker;
mod world;

pub use coord::{run, RunConfig, RunOutcome, Sink, StopHandle};

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
