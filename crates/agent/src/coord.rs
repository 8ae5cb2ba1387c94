//! The coordinator: binds the origin servers, starts the workers, merges
//! their interval snapshots in order ([`Merger`]), decides goal phases on
//! the [`Timeline`], and accumulates phases and the total.

use crate::fds::{self, raise_fd_limits, FdLimits};
use crate::gather::Gather;
use crate::merge::WorkerMsg;
use crate::share::{bind_servers_at, Share};
use crate::shared::Shared;
use crate::shared::Via;
use crate::timeline::{Jump, Timeline};
use crate::worker::{run_worker, WorkerSetup};
use crate::AgentError;
use cacheoff_stats::{IntervalStats, RunStats};
use cacheoff_workload::{AddrMap, ObjectSpace, TracedRequest, Workload};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: Workload,
    /// Straight to the servers, or through the proxy or surrogate under
    /// test.
    pub via: Via,
    /// Origin-server listeners bound beforehand ([`BoundServers::bind`]),
    /// when their addresses had to be known before the run (a surrogate's
    /// address map); else the run binds them.
    pub bound: Option<Arc<BoundServers>>,
    /// Worker threads (one per core by default). In a [`Share`] with
    /// robots, one per worker of its range instead.
    pub workers: usize,
    /// Replay this trace instead of the workload's plan.
    pub trace: Option<TraceFeed>,
    /// This host's part of a run many hosts run (`None`: all of it).
    pub share: Option<Share>,
    /// The run's test CA: origin servers take TLS with its certificate,
    /// and robots trust it (needed when the workload asks for TLS).
    pub tls: Option<Arc<cacheoff_tls::Pki>>,
}

/// A replayed trace: called once on each worker's thread with `(worker,
/// workers)`, it gives that worker's share of the trace's requests in time
/// order (every request of an object goes to the same worker, so each
/// worker's [`TraceBook`](cacheoff_workload::TraceBook) sees its objects'
/// whole history). It runs on a thread of its own, reading ahead.
#[derive(Clone)]
pub struct TraceFeed(pub Arc<TraceFn>);

pub type TraceFn = dyn Fn(u32, u32) -> Box<dyn Iterator<Item = TracedRequest> + Send> + Send + Sync;

impl std::fmt::Debug for TraceFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceFeed")
    }
}

/// Receives the run's progress on the coordinator thread.
pub trait Sink {
    /// Servers are listening and robots are about to start; `start` is
    /// the run's time zero (every `_s` figure counts from it).
    fn started(&mut self, _servers: &[SocketAddr], _start: Instant) {}
    /// Something the user should know before trusting the run.
    fn warn(&mut self, _message: &str) {}
    /// One merged interval, in order.
    fn interval(&mut self, interval: &IntervalStats);
    /// A goal phase ends early (decided here, after an interval): hosts
    /// that follow this run's time line need to know.
    fn jumped(&mut self, _jump: &Jump) {}
}

/// Stops a run early from another thread (e.g. a signal handler).
#[derive(Clone)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl StopHandle {
    pub fn new() -> StopHandle {
        StopHandle(Arc::new(watch::channel(false).0))
    }
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }
}

impl Default for StopHandle {
    fn default() -> Self {
        StopHandle::new()
    }
}

/// How long after the start robots wait before their first request, so
/// every worker is ready.
const START_DELAY: Duration = Duration::from_millis(200);

/// The origin servers' listening sockets, bound before a run so their
/// addresses (and the [`AddrMap`] naming them) are known in advance.
#[derive(Debug)]
pub struct BoundServers(Vec<std::net::TcpListener>);

impl BoundServers {
    pub fn bind(wl: &Workload) -> Result<BoundServers, AgentError> {
        BoundServers::bind_range(wl, 0..wl.servers.count, None)
    }

    /// Servers `indices` only: each at its address of the workload's
    /// range, or all on `ip` with a port each (a host of many).
    pub fn bind_range(
        wl: &Workload,
        indices: std::ops::Range<u32>,
        ip: Option<std::net::Ipv4Addr>,
    ) -> Result<BoundServers, AgentError> {
        bind_servers_at(wl, indices, ip).map(BoundServers)
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.0
            .iter()
            .map(|l| l.local_addr().expect("bound listener has an address"))
            .collect()
    }

    /// The servers by name, as a surrogate routes to them.
    pub fn addr_map(&self) -> AddrMap {
        AddrMap::for_servers(&self.addrs())
    }

    fn try_clone(&self) -> Result<Vec<std::net::TcpListener>, AgentError> {
        self.0
            .iter()
            .map(|l| {
                l.try_clone().map_err(|source| AgentError::Bind {
                    addr: l.local_addr().unwrap_or_else(|_| ([0, 0, 0, 0], 0).into()),
                    source,
                })
            })
            .collect()
    }
}

/// Runs the workload to its end (or until `stop`), feeding `sink`.
pub fn run(cfg: RunConfig, sink: &mut dyn Sink, stop: &StopHandle) -> Result<RunStats, AgentError> {
    let wl = cfg.workload;
    let share = cfg.share;
    // The run's robot workers, this host's worker threads, and which of
    // the run's workers the first of them is.
    let (total, threads, first) = match &share {
        Some(s) if !s.workers.is_empty() => {
            (s.total_workers as usize, s.workers.len(), s.workers.start)
        }
        Some(s) => (
            s.total_workers as usize,
            cfg.workers.max(1),
            s.total_workers,
        ),
        None => (cfg.workers.max(1), cfg.workers.max(1), 0),
    };
    let runs_robots = share.as_ref().is_none_or(|s| !s.workers.is_empty());
    let tls = match &cfg.tls {
        Some(pki) => Some(crate::shared::Tls::new(pki, &wl)?),
        None if wl.robots.tls => return Err(AgentError::NoTestCa),
        None => None,
    };
    let hosts = wl.robots.hosts() as usize;
    if hosts * total > cacheoff_workload::MAX_GALAXIES {
        return Err(AgentError::TooManyWorlds {
            hosts,
            workers: total,
            max: cacheoff_workload::MAX_GALAXIES,
        });
    }
    let needed = fds_needed(&wl, if runs_robots { threads } else { 0 }, total);
    let limits = match raise_fd_limits(needed) {
        Ok(l) => l,
        // `needed` is the most the run could hold; robots seldom keep
        // every connection open at once, so it may well fit. No warning:
        // if it does not, it stops at the first descriptor it cannot get
        // (`OutOfFds`), naming the limit.
        Err(AgentError::FdLimit { soft, hard, .. }) => FdLimits { soft, hard },
        Err(e) => return Err(e),
    };
    let fd_guard = FdGuard {
        seen: fds::times_out_of_fds(),
        needed,
        limits,
    };
    let listeners = match (&cfg.bound, &share) {
        (Some(b), _) => b.try_clone(),
        (None, Some(_)) => Ok(Vec::new()),
        (None, None) => bind_servers_at(&wl, 0..wl.servers.count, None),
    }
    .map_err(|e| match e {
        AgentError::Bind { source, .. } if fds::is_out_of_fds(&source) => fd_guard.error(),
        e => e,
    })?;
    let bound: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("bound listener has an address"))
        .collect();
    let (servers, own): (Vec<SocketAddr>, Vec<u32>) = match &share {
        Some(s) => (s.servers.clone(), s.own_servers.clone()),
        None => (bound.clone(), (0..bound.len() as u32).collect()),
    };
    let (start, start_wall) = match &share {
        Some(s) => {
            let ahead = (s.start_unix - crate::shared::unix_now()).max(0.0);
            (
                Instant::now() + Duration::from_secs_f64(ahead),
                s.start_unix,
            )
        }
        None => (
            Instant::now() + START_DELAY,
            unix_secs(SystemTime::now() + START_DELAY),
        ),
    };
    let shared = Arc::new(Shared {
        objects: ObjectSpace::new(wl.seed, &wl.content)
            .for_run(share.as_ref().map_or_else(run_nonce, |s| s.nonce)),
        timeline: match &share {
            Some(s) => Timeline::following(&wl, s.jump.clone()),
            None => Timeline::new(&wl),
        },
        server_hosts: match cfg.via {
            Via::Surrogate(_) => AddrMap::for_servers(&servers)
                .names()
                .map(str::to_string)
                .collect(),
            _ => servers.iter().map(|a| a.to_string()).collect(),
        },
        servers: servers.clone(),
        via: cfg.via,
        start,
        epoch: start_wall,
        clock_offset_s: share.as_ref().map_or(0.0, |s| s.clock_offset_s),
        clock_slack_s: share.as_ref().map_or(0.0, |s| s.clock_slack_s),
        workers: total,
        robot_ip: share.as_ref().and_then(|s| s.robot_ip),
        abort_key: cacheoff_base::rng::key(wl.seed, cacheoff_base::rng::Stream::Aborts),
        trace: cfg.trace,
        tls,
        workload: wl,
    });
    sink.started(&servers, shared.start);

    let (to_coord, from_workers) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut per_worker: Vec<Vec<(u32, bool, std::net::TcpListener)>> =
        (0..threads).map(|_| Vec::new()).collect();
    // With fewer servers than workers, every worker accepts on every
    // server (as nginx's workers share one listening socket): whichever
    // is free takes the next connection, so no core only sends.
    let shared_servers = listeners.len() < threads;
    for (i, (l, &idx)) in listeners.into_iter().zip(&own).enumerate() {
        if shared_servers {
            for (w, list) in per_worker.iter_mut().enumerate() {
                if w != i % threads {
                    let copy = l.try_clone().map_err(|source| AgentError::Bind {
                        addr: bound[i],
                        source,
                    })?;
                    list.push((idx, false, copy));
                }
            }
        }
        per_worker[i % threads].push((idx, true, l));
    }
    let mut handles = Vec::new();
    for (w, listeners) in per_worker.into_iter().enumerate() {
        let setup = WorkerSetup {
            id: first + w as u32,
            slot: w as u32,
            robots: runs_robots,
            shared: shared.clone(),
            listeners,
            to_coord: to_coord.clone(),
            stop: stop.0.subscribe(),
            shutdown: shutdown_rx.clone(),
        };
        let tx = to_coord.clone();
        let h = std::thread::Builder::new()
            .name(format!("cacheoff-w{w}"))
            .spawn(move || {
                if let Err(e) = run_worker(setup) {
                    let _ = tx.send(WorkerMsg::Failed(w as u32, e));
                }
            })
            .map_err(|source| AgentError::Worker { worker: w, source })?;
        handles.push(h);
    }
    drop(to_coord);

    // Goal phases are decided where every worker's figures meet.
    let goal_workers = share.is_none().then_some(total);
    let result = collect(
        &shared,
        &handles,
        &from_workers,
        sink,
        stop,
        &fd_guard,
        goal_workers,
    );
    shutdown_tx.send_replace(true);
    for h in handles {
        let _ = h.join();
    }
    result
}

fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Merges worker snapshots into intervals, phases and the total.
fn collect(
    shared: &Shared,
    threads: &[std::thread::JoinHandle<()>],
    rx: &mpsc::Receiver<WorkerMsg>,
    sink: &mut dyn Sink,
    stop: &StopHandle,
    fd_guard: &FdGuard,
    goal_workers: Option<usize>,
) -> Result<RunStats, AgentError> {
    let mut out_of_fds = false;
    let workers = threads.len();
    let mut gather = Gather::new(
        &shared.timeline,
        workers,
        shared.workload.robots.count,
        goal_workers,
    );
    while !gather.is_done() {
        if !out_of_fds && fd_guard.tripped() {
            // Robots stop and drain; the run ends with the error below.
            out_of_fds = true;
            stop.stop();
        }
        let msg = match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // A worker that ended without its final snapshot died (a
                // panic); do not wait for it forever.
                if let Some(w) =
                    (0..workers).find(|&w| threads[w].is_finished() && !gather.has_finished(w))
                {
                    return Err(AgentError::WorkerDied(w));
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(AgentError::WorkerDied(gather.first_running().unwrap_or(0)))
            }
        };
        match msg {
            WorkerMsg::Failed(w, source) => {
                return Err(AgentError::Worker {
                    worker: w as usize,
                    source,
                })
            }
            WorkerMsg::Interval(m) => gather.push(m),
        }
        gather.drain(sink);
    }
    let run = gather.finish(stop.is_stopped());
    if out_of_fds || fd_guard.tripped() {
        return Err(fd_guard.error());
    }
    Ok(run)
}

/// Descriptors a run may hold at once: both ends of every connection its
/// robots may open (through a proxy, the far end counts for the proxy's
/// connections to our origin servers, usually fewer), the listeners, and
/// slack for the runtime, files and stdio. A host running `threads` of
/// the run's `total` workers holds that share of the robots.
fn fds_needed(wl: &Workload, threads: usize, total: usize) -> u64 {
    let robots = u64::from(wl.robots.count) * threads as u64 / total.max(1) as u64;
    2 * robots * u64::from(wl.robots.max_conns) + u64::from(wl.servers.count) + 256
}

/// Watches for the process running out of descriptors during a run.
struct FdGuard {
    /// [`fds::times_out_of_fds`] when the run started.
    seen: u64,
    needed: u64,
    limits: FdLimits,
}

impl FdGuard {
    fn tripped(&self) -> bool {
        fds::times_out_of_fds() > self.seen
    }

    fn error(&self) -> AgentError {
        AgentError::OutOfFds {
            needed: self.needed,
            soft: self.limits.soft,
            hard: self.limits.hard,
        }
    }
}

/// A number that differs between runs (the seed does not have to), for
/// the URLs: a cache kept from an earlier run cannot serve this one.
fn run_nonce() -> u32 {
    let t = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    cacheoff_base::rng::mix64(t ^ u64::from(std::process::id()) << 32) as u32
}
