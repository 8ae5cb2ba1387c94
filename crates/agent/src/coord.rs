//! The coordinator: binds servers, starts workers, merges their interval
//! snapshots, and builds the summary.

use crate::shared::{Jump, Shared};
use crate::worker::{run_worker, WorkerSetup};
use crate::AgentError;
use cacheoff_stats::{Accum, Entry, IntervalRecord, Snapshot, Summary, FORMAT_VERSION};
use cacheoff_workload::{ObjectSpace, Workload};
use socket2::{Domain, Socket, Type};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: Workload,
    /// Forward proxy under test; `None` sends straight to the servers.
    pub proxy: Option<SocketAddr>,
    /// Worker threads (one per core by default).
    pub workers: usize,
}

/// Receives the run's progress on the coordinator thread.
pub trait Sink {
    /// Servers are listening and robots are about to start.
    fn started(&mut self, _servers: &[SocketAddr]) {}
    /// Something the user should know before trusting the run.
    fn warn(&mut self, _message: &str) {}
    /// One merged interval, in order.
    fn interval(&mut self, record: &IntervalRecord);
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

/// The result of a finished (or interrupted) run.
#[derive(Debug)]
pub struct RunOutcome {
    pub summary: Summary,
    pub servers: Vec<SocketAddr>,
}

pub(crate) enum WorkerMsg {
    Interval {
        worker: u32,
        index: u32,
        end_s: f64,
        /// The worker's final snapshot (schedule over, or stopped).
        last: bool,
        snap: Box<Snapshot>,
    },
    Failed(u32, std::io::Error),
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

/// Raises the soft descriptor limit to what the run may need (up to the
/// hard limit); fails clearly instead of letting connects fail mid-run.
fn raise_fd_limit(needed: u64) -> Result<(), AgentError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    let want = needed.min(lim.rlim_max);
    lim.rlim_cur = want;
    // SAFETY: valid pointer to an rlimit.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    if want < needed {
        return Err(AgentError::FdLimit {
            needed,
            limit: want,
        });
    }
    Ok(())
}

/// Runs the workload to its end (or until `stop`), feeding `sink`.
pub fn run(
    cfg: RunConfig,
    sink: &mut dyn Sink,
    stop: &StopHandle,
) -> Result<RunOutcome, AgentError> {
    let wl = cfg.workload;
    let workers = cfg.workers.max(1);
    let hosts = wl.robots.hosts() as usize;
    if hosts * workers > cacheoff_workload::MAX_WORLDS {
        return Err(AgentError::TooManyWorlds {
            hosts,
            workers,
            max: cacheoff_workload::MAX_WORLDS,
        });
    }
    // Robot and server ends of every connection, listeners, and slack.
    let fds = 2 * u64::from(wl.robots.count) * u64::from(wl.robots.max_conns)
        + u64::from(wl.servers.count)
        + 256;
    if let Err(e) = raise_fd_limit(fds) {
        // Not every robot keeps all its connections open at once, so the
        // run may still fit; running out shows as connect_failed errors.
        sink.warn(&e.to_string());
    }
    let listeners = bind_servers(&wl)?;
    let servers: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("bound listener has an address"))
        .collect();
    let schedule = wl.schedule();
    let start_wall = SystemTime::now() + START_DELAY;
    let shared = Arc::new(Shared {
        objects: ObjectSpace::new(wl.seed, &wl.content, wl.servers.count, workers as u32)
            .for_run(run_nonce()),
        intervals: schedule.intervals(wl.interval.as_secs_f64()),
        schedule,
        server_hosts: servers.iter().map(|a| a.to_string()).collect(),
        servers: servers.clone(),
        proxy: cfg.proxy,
        start: Instant::now() + START_DELAY,
        epoch: start_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        workers,
        abort_key: cacheoff_base::rng::key(wl.seed, cacheoff_base::rng::Stream::Aborts),
        jump: std::sync::OnceLock::new(),
        wl,
    });
    sink.started(&servers);

    let (to_coord, from_workers) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut per_worker: Vec<Vec<(u32, std::net::TcpListener)>> =
        (0..workers).map(|_| Vec::new()).collect();
    for (i, l) in listeners.into_iter().enumerate() {
        per_worker[i % workers].push((i as u32, l));
    }
    let mut handles = Vec::new();
    for (w, listeners) in per_worker.into_iter().enumerate() {
        let setup = WorkerSetup {
            id: w as u32,
            shared: shared.clone(),
            listeners,
            robots: (0..shared.wl.robots.count)
                .filter(|r| *r as usize % workers == w)
                .collect(),
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

    let result = collect(&shared, &handles, &from_workers, sink, stop);
    shutdown_tx.send_replace(true);
    for h in handles {
        let _ = h.join();
    }
    let summary = result?;
    Ok(RunOutcome { summary, servers })
}

/// Ends the goal phase of interval `idx` two intervals later (workers are
/// already in the next one), unless it ends by then anyway.
fn end_goal_phase(shared: &Shared, idx: u32) {
    let intervals = &shared.intervals;
    let phase = intervals[idx as usize].phase;
    let after = idx + 2;
    let Some(after_iv) = intervals.get(after as usize).filter(|iv| iv.phase == phase) else {
        return;
    };
    let next = intervals.iter().find(|iv| iv.phase > phase);
    let Some(next) = next.filter(|n| n.index > after + 1) else {
        return;
    };
    let _ = shared.jump.set(Jump {
        after,
        to: next.index,
        at_s: after_iv.end_s,
        shift_s: next.start_s - after_iv.end_s,
    });
}

/// Merges worker snapshots into intervals, phases and the total.
fn collect(
    shared: &Shared,
    threads: &[std::thread::JoinHandle<()>],
    rx: &mpsc::Receiver<WorkerMsg>,
    sink: &mut dyn Sink,
    stop: &StopHandle,
) -> Result<Summary, AgentError> {
    let intervals = &shared.intervals;
    let phases = shared.schedule.phases();
    let type_names: Vec<String> = shared.wl.content.iter().map(|t| t.name.clone()).collect();
    let mut pending: BTreeMap<u32, (usize, Snapshot, f64)> = BTreeMap::new();
    // The index of each worker's final snapshot, once sent.
    let workers = threads.len();
    let mut finished: Vec<Option<u32>> = vec![None; workers];
    let mut phase_acc: Vec<Option<Accum>> = vec![None; phases.len()];
    let mut total = Accum::default();
    let mut next_index = 0u32;
    let mut carry: Option<Snapshot> = None;
    let mut last_end = 0.0f64;

    loop {
        let msg = match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // A worker that ended without its final snapshot died (a
                // panic); do not wait for it forever.
                if let Some(w) =
                    (0..workers).find(|&w| threads[w].is_finished() && finished[w].is_none())
                {
                    return Err(AgentError::WorkerDied(w));
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(AgentError::WorkerDied(
                    finished.iter().position(Option::is_none).unwrap_or(0),
                ))
            }
        };
        match msg {
            WorkerMsg::Failed(w, source) => {
                return Err(AgentError::Worker {
                    worker: w as usize,
                    source,
                })
            }
            WorkerMsg::Interval {
                worker,
                index,
                end_s,
                last,
                snap,
            } => {
                let e = pending
                    .entry(index)
                    .or_insert_with(|| (0, Snapshot::default(), 0.0));
                e.0 += 1;
                e.1.add(&snap);
                e.2 = f64::max(e.2, end_s);
                if last {
                    finished[worker as usize] = Some(index);
                }
            }
        }
        // An interval is complete when every worker sent it or finished
        // before it.
        while let Some((&idx, entry)) = pending.iter().next() {
            if idx != next_index {
                break;
            }
            let done_before = finished
                .iter()
                .filter(|f| f.is_some_and(|l| l < idx))
                .count();
            if entry.0 + done_before < workers {
                break;
            }
            let (_, mut snap, end_s) = pending.remove(&idx).expect("present");
            if let Some(c) = carry.take() {
                snap.add(&c);
            }
            let iv = intervals[idx as usize];
            let end_s = end_s.max(iv.start_s);
            let duration = end_s - iv.start_s;
            let phase = &phases[iv.phase];
            let mut acc = Accum::default();
            acc.add_interval(&snap, duration);
            // Records carry run time; a goal phase that ended early moved
            // the rest of the schedule earlier.
            let real_start = shared.real_s(iv.start_s);
            let record = IntervalRecord {
                version: FORMAT_VERSION,
                interval: idx,
                phase: phase.name.clone(),
                start_s: real_start,
                end_s: real_start + duration,
                robots: shared.wl.robots.count,
                load: shared.schedule.load_at((iv.start_s + end_s) / 2.0),
                stats: acc.entry(&phase.name, &type_names),
            };
            sink.interval(&record);
            phase_acc[iv.phase]
                .get_or_insert_with(Accum::default)
                .add_interval(&snap, duration);
            total.add_interval(&snap, duration);
            last_end = end_s;
            if let Some(goal) = phase.goal {
                if shared.jump.get().is_none() {
                    let acc = phase_acc[iv.phase].as_ref().expect("just added");
                    let cache = shared.wl.cache_size.map_or(0, |c| c.0) as f64;
                    let filled = acc.snap.counters.fill_bytes as f64 >= goal.fill * cache;
                    let frozen = !goal.freeze || snap.counters.ws_full as usize == workers;
                    if filled && frozen {
                        end_goal_phase(shared, idx);
                    }
                }
            }
            next_index = match shared.jump.get() {
                Some(j) if j.after == idx => {
                    // A worker that passed the jump point before it was
                    // decided sent skipped intervals: fold them into the next.
                    let skipped: Vec<u32> = pending.range(..j.to).map(|(i, _)| *i).collect();
                    for i in skipped {
                        let (_, s, _) = pending.remove(&i).expect("present");
                        carry.get_or_insert_with(Snapshot::default).add(&s);
                    }
                    j.to
                }
                _ => idx + 1,
            };
        }
        if finished.iter().all(Option::is_some) && pending.is_empty() {
            break;
        }
    }

    let interrupted = stop.is_stopped()
        || (last_end + 1e-6) < shared.schedule.total_s()
        || (next_index as usize) < intervals.len();
    let phase_entries: Vec<Entry> = phases
        .iter()
        .zip(&phase_acc)
        .filter_map(|(p, a)| a.as_ref().map(|a| a.entry(&p.name, &type_names)))
        .collect();
    let measured_phase = phases
        .iter()
        .zip(&phase_acc)
        .filter(|(p, a)| p.measured && a.is_some())
        .map(|(p, _)| p.name.clone())
        .next_back();
    let distributions = Some(
        phases
            .iter()
            .zip(&phase_acc)
            .find(|(p, _)| Some(&p.name) == measured_phase.as_ref())
            .and_then(|(p, a)| a.as_ref().map(|a| a.distributions(&p.name)))
            .unwrap_or_else(|| total.distributions("total")),
    );
    Ok(Summary {
        format: "cacheoff-summary".into(),
        version: FORMAT_VERSION,
        workload: shared.wl.name.clone(),
        interrupted,
        measured_phase,
        phases: phase_entries,
        total: total.entry("total", &type_names),
        distributions,
    })
}

/// A number that differs between runs (the seed does not have to), for
/// the URLs: a cache kept from an earlier run cannot serve this one.
fn run_nonce() -> u32 {
    let t = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    cacheoff_base::rng::mix64(t ^ u64::from(std::process::id()) << 32) as u32
}
