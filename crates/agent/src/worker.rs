//! One worker: a thread with a single-threaded runtime running a share of
//! the robots and origin servers.
//!
//! Ownership: everything in [`WorkerCtx`] belongs to this thread; interior
//! mutability is `Cell`/`RefCell` and is never held across an `.await`.

use crate::coord::WorkerMsg;
use crate::ledger::Ledger;
use crate::robot::{self, Robot};
use crate::server;
use crate::shared::Shared;
use crate::world::World;
use cacheoff_stats::{ErrorKind, Snapshot};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

pub struct WorkerCtx {
    pub id: u32,
    pub shared: Arc<Shared>,
    pub stats: RefCell<Snapshot>,
    /// One working set per client host (indexed by host); each host's
    /// robots on this worker share it.
    pub worlds: Vec<RefCell<World>>,
    /// This worker's robots per client host.
    host_robots: Vec<u32>,
    xact_seq: Cell<u64>,
    /// POSTs and the copies they forbid, for judging hits.
    pub ledger: RefCell<Ledger>,
    /// Transactions started and not yet finished (for draining).
    pub in_flight: Cell<u64>,
    pub drained: Notify,
    /// Robot-side connections currently open.
    pub open_conns: Cell<u64>,
    /// Set when robots must stop sending.
    pub stopping: Cell<bool>,
    date_cache: RefCell<(u64, String)>,
    /// Spare I/O buffers, lent out only while a response is being written
    /// or a body read, so idle connections hold no large buffers.
    spare_bufs: RefCell<Vec<Vec<u8>>>,
}

/// Size of a lent I/O buffer.
pub const IO_BUF: usize = 16 * 1024;
/// Most spare buffers kept per worker.
const SPARE_BUFS: usize = 256;

impl WorkerCtx {
    /// Lends a buffer with at least [`IO_BUF`] bytes of capacity; its
    /// contents are whatever the last user left.
    pub fn take_buf(&self) -> Vec<u8> {
        self.spare_bufs
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(IO_BUF))
    }

    /// Returns a lent buffer.
    pub fn give_buf(&self, mut b: Vec<u8>) {
        let mut spare = self.spare_bufs.borrow_mut();
        if spare.len() < SPARE_BUFS && b.capacity() <= 4 * IO_BUF {
            b.truncate(IO_BUF);
            spare.push(b);
        }
    }

    /// A run-unique transaction id: worker in the top bits.
    pub fn next_xact(&self) -> u64 {
        let s = self.xact_seq.get() + 1;
        self.xact_seq.set(s);
        u64::from(self.id) << 48 | s
    }

    /// The id of the last transaction [`next_xact`](Self::next_xact) gave.
    pub fn last_xact(&self) -> u64 {
        u64::from(self.id) << 48 | self.xact_seq.get()
    }

    pub fn error(&self, kind: ErrorKind) {
        self.stats.borrow_mut().record_error(kind);
    }

    pub fn xact_done(&self) {
        let n = self.in_flight.get() - 1;
        self.in_flight.set(n);
        if n == 0 {
            self.drained.notify_waiters();
        }
    }

    /// The current `Date` header value, formatted once per second.
    pub fn with_date<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        let now = std::time::SystemTime::now();
        let secs = now
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut c = self.date_cache.borrow_mut();
        if c.0 != secs || c.1.is_empty() {
            *c = (secs, cacheoff_http::date::format(secs as i64));
        }
        f(&c.1)
    }
}

/// What a worker gets from the coordinator.
pub struct WorkerSetup {
    pub id: u32,
    pub shared: Arc<Shared>,
    pub listeners: Vec<(u32, std::net::TcpListener)>,
    pub robots: Vec<u32>,
    pub to_coord: Sender<WorkerMsg>,
    pub stop: watch::Receiver<bool>,
    pub shutdown: watch::Receiver<bool>,
}

pub fn run_worker(setup: WorkerSetup) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, worker_main(setup))
}

async fn worker_main(setup: WorkerSetup) -> std::io::Result<()> {
    let WorkerSetup {
        id,
        shared,
        listeners,
        robots,
        to_coord,
        mut stop,
        mut shutdown,
    } = setup;
    let hosts = shared.wl.robots.hosts();
    let mut host_robots = vec![0u32; hosts as usize];
    for &r in &robots {
        host_robots[shared.wl.robots.host_of(r) as usize] += 1;
    }
    let ctx = Rc::new(WorkerCtx {
        id,
        worlds: (0..hosts)
            .map(|h| {
                // The cap is divided among hosts and workers by robot count.
                let cap = shared.wl.popularity.working_set_cap.map(|c| {
                    c * u64::from(host_robots[h as usize]) / u64::from(shared.wl.robots.count)
                });
                RefCell::new(World::new(h * shared.workers as u32 + id, cap))
            })
            .collect(),
        host_robots,
        shared: shared.clone(),
        stats: RefCell::new(Snapshot::default()),
        xact_seq: Cell::new(0),
        ledger: RefCell::new(Ledger::default()),
        in_flight: Cell::new(0),
        drained: Notify::new(),
        open_conns: Cell::new(0),
        stopping: Cell::new(false),
        date_cache: RefCell::new((0, String::new())),
        spare_bufs: RefCell::new(Vec::new()),
    });
    for (idx, l) in listeners {
        let l = tokio::net::TcpListener::from_std(l)?;
        tokio::task::spawn_local(server::serve(ctx.clone(), idx, l));
    }
    let robots: Vec<Rc<Robot>> = robots
        .into_iter()
        .map(|r| Rc::new(Robot::new(&shared, r)))
        .collect();
    let pacer = tokio::task::spawn_local(robot::start_robots(ctx.clone(), robots));

    // Interval ticks: hand over the stats at each boundary.
    let intervals = shared.intervals.clone();
    let mut interrupted = false;
    let mut k = 0;
    while k < intervals.len() {
        let iv = intervals[k];
        let end_real = shared.real_s(iv.end_s);
        let due = tokio::time::Instant::from_std(shared.start + Duration::from_secs_f64(end_real));
        let last = k + 1 == intervals.len();
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {}
            Ok(_) = stop.wait_for(|s| *s) => { interrupted = true; }
        }
        if interrupted || last {
            let end_s = shared.schedule_s(shared.secs_at(Instant::now()).min(end_real));
            // The gauge before robots stop and close their connections.
            let open = ctx.open_conns.get();
            ctx.stopping.set(true);
            drain(&ctx).await;
            send(&ctx, &to_coord, iv.index, end_s, open, true);
            break;
        }
        send(
            &ctx,
            &to_coord,
            iv.index,
            iv.end_s,
            ctx.open_conns.get(),
            false,
        );
        k = match shared.jump.get() {
            Some(j) if j.after as usize == k => j.to as usize,
            _ => k + 1,
        };
    }
    pacer.abort();
    // Keep serving other workers' robots until everyone is done.
    let _ = shutdown.wait_for(|s| *s).await;
    Ok(())
}

/// Waits up to `timeouts.drain` for transactions in flight; those still
/// unfinished then are counted as such (and abandoned).
async fn drain(ctx: &WorkerCtx) {
    let deadline = tokio::time::Instant::now() + ctx.shared.wl.timeouts.drain.0;
    while ctx.in_flight.get() > 0 {
        let notified = ctx.drained.notified();
        if ctx.in_flight.get() == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            break;
        }
    }
    for _ in 0..ctx.in_flight.get() {
        ctx.error(ErrorKind::Unfinished);
    }
}

fn send(ctx: &WorkerCtx, to: &Sender<WorkerMsg>, index: u32, end_s: f64, open: u64, last: bool) {
    let snap = {
        let mut s = ctx.stats.borrow_mut();
        s.counters.conns_open = open;
        s.counters.ws_full = u64::from(
            ctx.worlds
                .iter()
                .zip(&ctx.host_robots)
                .filter(|(_, n)| **n > 0)
                .all(|(w, _)| w.borrow().is_full()),
        );
        let out = s.clone();
        s.reset();
        out
    };
    let _ = to.send(WorkerMsg::Interval {
        worker: ctx.id,
        index,
        end_s,
        last,
        snap: Box::new(snap),
    });
}
