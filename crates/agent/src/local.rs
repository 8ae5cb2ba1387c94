//! A worker's own state: [`Local`] is what its origin servers and robots
//! both use; [`Clients`] is the robots' side (their plan, transactions in
//! flight, connections).
//!
//! Ownership: everything here belongs to one worker thread; interior
//! mutability is `Cell`/`RefCell` and is never held across an `.await`.

use crate::ledger::Ledger;
use crate::shared::Shared;
use cacheoff_base::XactId;
use cacheoff_stats::{ErrorKind, Snapshot};
use cacheoff_workload::{Plan, PlanDigest};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::Notify;

/// Size of a lent I/O buffer.
pub const IO_BUF: usize = 16 * 1024;
/// Most spare buffers kept per worker.
const SPARE_BUFS: usize = 256;

pub struct Local {
    pub id: u32,
    /// Whether this worker is one of the run's robot workers (a host of
    /// many may run workers with origin servers only).
    pub runs_robots: bool,
    pub shared: Arc<Shared>,
    /// This interval's counters and histograms.
    pub stats: RefCell<Snapshot>,
    pub bufs: BufPool,
    date: RefCell<(u64, String)>,
}

impl Local {
    pub fn new(id: u32, runs_robots: bool, shared: Arc<Shared>) -> Local {
        Local {
            id,
            runs_robots,
            shared,
            stats: RefCell::new(Snapshot::default()),
            bufs: BufPool::default(),
            date: RefCell::new((0, String::new())),
        }
    }

    pub fn error(&self, kind: ErrorKind) {
        self.stats.borrow_mut().record_error(kind);
    }

    /// Waits out what an emulated link charges, counted so that a run
    /// shows the delays it was given (`link_wait_us`).
    pub async fn link_wait(&self, d: std::time::Duration) {
        if !d.is_zero() {
            self.stats.borrow_mut().counters.link_wait_us += d.as_micros() as u64;
            tokio::time::sleep(d).await;
        }
    }

    /// The current `Date` header value, formatted once per second.
    pub fn with_date<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut c = self.date.borrow_mut();
        if c.0 != secs || c.1.is_empty() {
            *c = (secs, cacheoff_http::date::format(secs as i64));
        }
        f(&c.1)
    }
}

/// Spare I/O buffers, lent out only while a response is being written or
/// a body read, so idle connections hold no large buffers.
#[derive(Default)]
pub struct BufPool(RefCell<Vec<Vec<u8>>>);

impl BufPool {
    /// Lends a buffer with at least [`IO_BUF`] bytes of capacity; its
    /// contents are whatever the last user left.
    pub fn take(&self) -> Vec<u8> {
        self.0
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(IO_BUF))
    }

    /// Returns a lent buffer.
    pub fn give(&self, mut b: Vec<u8>) {
        let mut spare = self.0.borrow_mut();
        if spare.len() < SPARE_BUFS && b.capacity() <= 4 * IO_BUF {
            b.truncate(IO_BUF);
            spare.push(b);
        }
    }
}

/// The robots' side of a worker.
pub struct Clients {
    pub local: Rc<Local>,
    pub plan: RefCell<Plan>,
    /// Digest of the requests planned so far, in plan order.
    pub digest: Cell<PlanDigest>,
    /// POSTs and the copies they forbid, for judging hits.
    pub ledger: RefCell<Ledger>,
    xact_seq: Cell<u64>,
    /// Transactions started and not yet finished (for draining).
    in_flight: Cell<u64>,
    /// Issued requests waiting in robots' backlogs for a connection.
    pub waiting: Cell<u64>,
    drained: Notify,
    /// Robot-side connections currently open.
    pub open_conns: Cell<u64>,
    /// Set when the run is interrupted: robots stop sending.
    pub stopping: Cell<bool>,
}

impl Clients {
    pub fn new(local: Rc<Local>, plan: Plan) -> Clients {
        Clients {
            local,
            plan: RefCell::new(plan),
            digest: Cell::new(PlanDigest::default()),
            ledger: RefCell::new(Ledger::default()),
            xact_seq: Cell::new(0),
            in_flight: Cell::new(0),
            waiting: Cell::new(0),
            drained: Notify::new(),
            open_conns: Cell::new(0),
            stopping: Cell::new(false),
        }
    }

    pub fn shared(&self) -> &Shared {
        &self.local.shared
    }

    pub fn error(&self, kind: ErrorKind) {
        self.local.error(kind);
    }

    /// A run-unique transaction id, in this worker's sending order.
    pub fn next_xact(&self) -> XactId {
        let s = self.xact_seq.get() + 1;
        self.xact_seq.set(s);
        XactId::new(self.local.id, s)
    }

    /// The id of the last transaction [`next_xact`](Self::next_xact) gave.
    pub fn last_xact(&self) -> XactId {
        XactId::new(self.local.id, self.xact_seq.get())
    }

    /// A transaction starts.
    pub fn xact_begun(&self) {
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// A transaction ended; wakes a drain waiting for the last one.
    pub fn xact_done(&self) {
        let n = self.in_flight.get() - 1;
        self.in_flight.set(n);
        if n == 0 {
            self.drained.notify_waiters();
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight.get()
    }

    /// Waits until no transaction is in flight or `deadline` passes.
    pub async fn drained_by(&self, deadline: tokio::time::Instant) {
        while self.in_flight.get() > 0 {
            let notified = self.drained.notified();
            if self.in_flight.get() == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
    }
}

/// Counts a robot connection as open (`Clients::open_conns`) for as long
/// as it lives.
pub struct OpenGuard(Rc<Clients>);

impl OpenGuard {
    pub fn new(clients: &Rc<Clients>) -> OpenGuard {
        clients.open_conns.set(clients.open_conns.get() + 1);
        OpenGuard(clients.clone())
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open_conns.set(self.0.open_conns.get() - 1);
    }
}
