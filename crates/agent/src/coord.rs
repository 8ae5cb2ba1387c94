//! The coordinator: binds the origin servers, starts the workers, merges
//! their interval snapshots in order ([`Merger`]), decides goal phases on
//! the [`Timeline`], and accumulates phases and the total.

use crate::fds::{self, raise_fd_limits, FdLimits};
use crate::merge::{Merger, WorkerMsg};
use crate::shared::Shared;
use crate::shared::Via;
use crate::timeline::Timeline;
use crate::worker::{run_worker, WorkerSetup};
use crate::AgentError;
use cacheoff_stats::{Accum, IntervalStats, RunStats};
use cacheoff_workload::{AddrMap, ObjectSpace, PlanDigest, TracedRequest, Workload};
use socket2::{Domain, Socket, Type};
use std::net::{Ipv4Addr, SocketAddr};
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
    /// Worker threads (one per core by default).
    pub workers: usize,
    /// Replay this trace instead of the workload's plan.
    pub trace: Option<TraceFeed>,
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

fn bind_servers(wl: &Workload) -> Result<Vec<std::net::TcpListener>, AgentError> {
    let first = u32::from(wl.servers.first_ip);
    (0..wl.servers.count)
        .map(|i| {
            let addr = SocketAddr::new(Ipv4Addr::from(first + i).into(), wl.servers.port);
            let bind = || -> std::io::Result<std::net::TcpListener> {
                let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
                s.set_reuse_address(true)?;
                s.set_nonblocking(true)?;
                s.bind(&addr.into())?;
                s.listen(4096)?;
                Ok(s.into())
            };
            bind().map_err(|source| AgentError::Bind { addr, source })
        })
        .collect()
}

/// The origin servers' listening sockets, bound before a run so their
/// addresses (and the [`AddrMap`] naming them) are known in advance.
#[derive(Debug)]
pub struct BoundServers(Vec<std::net::TcpListener>);

impl BoundServers {
    pub fn bind(wl: &Workload) -> Result<BoundServers, AgentError> {
        bind_servers(wl).map(BoundServers)
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
    let workers = cfg.workers.max(1);
    let hosts = wl.robots.hosts() as usize;
    if hosts * workers > cacheoff_workload::MAX_GALAXIES {
        return Err(AgentError::TooManyWorlds {
            hosts,
            workers,
            max: cacheoff_workload::MAX_GALAXIES,
        });
    }
    let needed = fds_needed(&wl);
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
    let listeners = match &cfg.bound {
        Some(b) => b.try_clone(),
        None => bind_servers(&wl),
    }
    .map_err(|e| match e {
        AgentError::Bind { source, .. } if fds::is_out_of_fds(&source) => fd_guard.error(),
        e => e,
    })?;
    let servers: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("bound listener has an address"))
        .collect();
    let start_wall = SystemTime::now() + START_DELAY;
    let shared = Arc::new(Shared {
        objects: ObjectSpace::new(wl.seed, &wl.content).for_run(run_nonce()),
        timeline: Timeline::new(&wl),
        server_hosts: match cfg.via {
            Via::Surrogate(_) => AddrMap::for_servers(&servers)
                .names()
                .map(str::to_string)
                .collect(),
            _ => servers.iter().map(|a| a.to_string()).collect(),
        },
        servers: servers.clone(),
        via: cfg.via,
        start: Instant::now() + START_DELAY,
        epoch: start_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        workers,
        abort_key: cacheoff_base::rng::key(wl.seed, cacheoff_base::rng::Stream::Aborts),
        trace: cfg.trace,
        workload: wl,
    });
    sink.started(&servers, shared.start);

    let (to_coord, from_workers) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut per_worker: Vec<Vec<(u32, std::net::TcpListener)>> =
        (0..workers).map(|_| Vec::new()).collect();
    // With fewer servers than workers, every worker accepts on every
    // server (as nginx's workers share one listening socket): whichever
    // is free takes the next connection, so no core only sends.
    let shared_servers = listeners.len() < workers;
    for (i, l) in listeners.into_iter().enumerate() {
        if shared_servers {
            for (w, list) in per_worker.iter_mut().enumerate() {
                if w != i % workers {
                    let copy = l.try_clone().map_err(|source| AgentError::Bind {
                        addr: servers[i],
                        source,
                    })?;
                    list.push((i as u32, copy));
                }
            }
        }
        per_worker[i % workers].push((i as u32, l));
    }
    let mut handles = Vec::new();
    for (w, listeners) in per_worker.into_iter().enumerate() {
        let setup = WorkerSetup {
            id: w as u32,
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

    let result = collect(&shared, &handles, &from_workers, sink, stop, &fd_guard);
    shutdown_tx.send_replace(true);
    for h in handles {
        let _ = h.join();
    }
    result
}

/// Merges worker snapshots into intervals, phases and the total.
fn collect(
    shared: &Shared,
    threads: &[std::thread::JoinHandle<()>],
    rx: &mpsc::Receiver<WorkerMsg>,
    sink: &mut dyn Sink,
    stop: &StopHandle,
    fd_guard: &FdGuard,
) -> Result<RunStats, AgentError> {
    let timeline = &shared.timeline;
    let mut out_of_fds = false;
    let workers = threads.len();
    let mut merger = Merger::new(workers);
    let mut digests = vec![PlanDigest::default(); workers];
    let mut run = RunStats {
        phases: vec![None; timeline.phases().len()],
        ..RunStats::default()
    };
    let mut last_end = 0.0f64;
    while !merger.is_done() {
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
                    (0..workers).find(|&w| threads[w].is_finished() && !merger.has_finished(w))
                {
                    return Err(AgentError::WorkerDied(w));
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(AgentError::WorkerDied(merger.first_running().unwrap_or(0)))
            }
        };
        match msg {
            WorkerMsg::Failed(w, source) => {
                return Err(AgentError::Worker {
                    worker: w as usize,
                    source,
                })
            }
            WorkerMsg::Interval(m) => {
                if let Some(d) = m.last {
                    digests[m.worker as usize] = d;
                }
                merger.push(m);
            }
        }
        while let Some(merged) = merger.pop(timeline) {
            let iv = timeline.interval(merged.index);
            let end_s = merged.end_s.max(iv.start_s);
            let duration = end_s - iv.start_s;
            // Records carry run time; a goal phase that ended early moved
            // the rest of the schedule earlier.
            let start_s = timeline.real_s(iv.start_s);
            sink.interval(&IntervalStats {
                index: merged.index,
                phase: iv.phase,
                start_s,
                end_s: start_s + duration,
                robots: shared.workload.robots.count,
                load: timeline.schedule().load_at((iv.start_s + end_s) / 2.0),
                snap: merged.snap.clone(),
            });
            let phase = run.phases[iv.phase].get_or_insert_with(Accum::default);
            phase.add_interval(&merged.snap, duration);
            timeline.check_goal(merged.index, phase, &merged.snap, workers);
            run.total.add_interval(&merged.snap, duration);
            last_end = end_s;
        }
    }
    run.interrupted = stop.is_stopped()
        || (last_end + 1e-6) < timeline.schedule().total_s()
        || (merger.next_index(timeline) as usize) < timeline.intervals().len();
    run.plan_digest = PlanDigest::combine(&digests).get();
    if out_of_fds || fd_guard.tripped() {
        return Err(fd_guard.error());
    }
    Ok(run)
}

/// Descriptors a run may hold at once: both ends of every connection its
/// robots may open (through a proxy, the far end counts for the proxy's
/// connections to our origin servers, usually fewer), the listeners, and
/// slack for the runtime, files and stdio.
fn fds_needed(wl: &Workload) -> u64 {
    2 * u64::from(wl.robots.count) * u64::from(wl.robots.max_conns)
        + u64::from(wl.servers.count)
        + 256
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
