//! The cacheoff reference caching proxy, and the SPE Collector.
//!
//! [`Proxy::start`] binds one listening socket per worker thread
//! (`SO_REUSEPORT`, so the kernel spreads connections over cores); each
//! worker runs a single-threaded runtime serving its connections with its
//! own origin connection pool (`upstream`). Workers share only the
//! [`Shared`] state: the sharded [`Cache`], the in-flight fetch table for
//! collapsed forwarding (`inflight`), the access log and the counters.
//!
//! A request's path through the modules: `conn` reads it and refuses what
//! it cannot serve (`limits` bounds slow and greedy clients,
//! `cacheoff_access` says who may connect and where a forward proxy may
//! connect); `answer` decides hit, revalidation, miss or collapse, and
//! the `Decision` it comes to (`decision`: one enum, from
//! which the access log's code, `Cache-Status` and the counters are
//! derived) is counted once before the reply goes out; `hit` serves
//! stored objects (the Collector's hits replay recorded miss timing,
//! `replay`); `relay` passes origin replies on and fills the store
//! (`store` holds the store's reads and writes; `pump` moves the body:
//! from the origin at the origin's pace, to the client at the client's
//! own, so requests collapsed onto a fetch never wait for its leader's
//! client, only, within deadlines, for the origin: `inflight`);
//! `framing` writes what the proxy adds to a reply ([`ReplyFraming`]
//! says how bodies are delimited, `cache_status` its `Cache-Status`,
//! `lines` the header-line bytes); [`Fault`]s misbehave on purpose where
//! each decision is made, `damage` holding those that only mangle bytes;
//! `capacity` queues requests to serve no faster than a set rate. The
//! request's own types (`Xact`, its `Target`, what it came to: `Done`)
//! are `xact`'s; [`Role`] says whether the proxy is the Collector. No
//! module imports one that imports it back (tests/architecture.rs).

mod access_log;
mod answer;
mod cache_status;
mod capacity;
mod config;
mod conn;
mod damage;
mod decision;
mod fault;
mod framing;
mod hit;
mod inflight;
mod limits;
mod lines;
mod pump;
mod range;
mod relay;
mod replay;
mod send;
mod store;
mod upstream;
mod xact;

pub use access_log::LogCode;
pub use cacheoff_access::DestRule;
pub use config::{ProxyConfig, ReplyFraming, Role, Upstream, DEFAULT_MEMORY};
pub use fault::{Fault, Faults};
pub use replay::ReplayPrecision;

use access_log::AccessLog;
use cacheoff_cache::{Cache, DiskStore, OpenReport};
use inflight::Inflight;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Disk(#[from] cacheoff_cache::DiskError),
    #[error("cannot open access log {path}")]
    AccessLog {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Counters, for tests and the console.
#[derive(Debug, Default)]
pub struct ProxyStats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    /// Stale copies checked with the origin ...
    pub stale: AtomicU64,
    /// ... and found unchanged (304).
    pub revalidated: AtomicU64,
    /// Hits that waited for another request's fetch.
    pub collapsed: AtomicU64,
    /// Requests that found the fetch they waited for late (past
    /// `collapse_wait`, behind `collapse_min_rate`) or cut off, and led a
    /// fetch of their own in its place (the others waited for that one).
    pub collapse_takeovers: AtomicU64,
    /// Requests refused (bad syntax, limits, access).
    pub client_errors: AtomicU64,
    pub origin_errors: AtomicU64,
    pub disk_errors: AtomicU64,
    /// Connections closed at once: `max_client_connections` were open.
    pub connections_refused: AtomicU64,
    /// Requests answered 408: a head or body too slow.
    pub client_timeouts: AtomicU64,
    /// Uploads answered 503: the buffered-upload budget was spent.
    pub uploads_refused: AtomicU64,
    /// Requests answered 403 for where they wanted to go.
    pub destinations_denied: AtomicU64,
    /// Hits the `slow-hit` fault answered late, and the delay they got in
    /// all (µs): the 1 ms asked for plus the wake-up after it.
    pub slowed_hits: AtomicU64,
    pub slowed_hits_us: AtomicU64,
}

impl ProxyStats {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// A running proxy's counters and stores, read at any time from any
/// thread ([`Proxy::probe`]): atomics and the stores' own locks, each held
/// only to read a size.
#[derive(Clone)]
pub struct Probe {
    shared: Arc<Shared>,
    disk_report: Option<OpenReport>,
}

/// The disk store's state as a [`Probe`] reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskState {
    pub objects: u64,
    pub bytes: u64,
    pub capacity: u64,
    pub evictions: u64,
    pub corrupt_reads: u64,
    /// What opening the store found.
    pub opened: OpenReport,
}

impl Probe {
    pub fn stats(&self) -> &ProxyStats {
        &self.shared.stats
    }
    /// Objects and bytes in the memory store, and its budget.
    pub fn memory(&self) -> (u64, u64, u64) {
        let (n, b) = self.shared.cache.memory_usage();
        (n as u64, b, self.shared.cfg.memory)
    }
    /// URLs the memory store evicted so far.
    pub fn memory_evictions(&self) -> u64 {
        self.shared.cache.memory_evictions()
    }
    pub fn disk(&self) -> Option<DiskState> {
        let d = self.shared.cache.disk()?;
        Some(DiskState {
            objects: d.len() as u64,
            bytes: d.bytes(),
            capacity: d.capacity(),
            evictions: d.evictions(),
            corrupt_reads: d.corrupt_reads(),
            opened: self.disk_report.unwrap_or_default(),
        })
    }
    pub fn is_collector(&self) -> bool {
        self.shared.cfg.role == Role::Collector
    }
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Probe")
    }
}

pub(crate) struct Shared {
    cfg: ProxyConfig,
    replay: replay::ReplayStats,
    cache: Cache,
    inflight: Arc<Inflight>,
    log: Option<AccessLog>,
    stats: Arc<ProxyStats>,
    /// `cfg.dest_rules()`, resolved once.
    dest_rules: Option<Vec<DestRule>>,
    uploads: Arc<cacheoff_access::Budget>,
    slots: Arc<cacheoff_access::Slots>,
    /// The queue of `cfg.capacity`.
    gate: Option<capacity::Gate>,
}

/// A running proxy; dropping it stops it.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
    disk_report: Option<OpenReport>,
}

/// The start of every proxy thread's name: an embedded proxy's spending is
/// sampled by it (`cacheoff_resources::Target::Threads`).
pub const THREAD_PREFIX: &str = "proxy-";

impl Proxy {
    pub fn start(mut cfg: ProxyConfig) -> Result<Proxy, ProxyError> {
        let listen_err = |source| ProxyError::Listen {
            addr: cfg.listen,
            source,
        };
        let first = cacheoff_access::listener(cfg.listen).map_err(listen_err)?;
        let addr = first.local_addr().map_err(listen_err)?;
        let mut listeners = vec![first];
        for _ in 1..cfg.workers.max(1) {
            listeners.push(cacheoff_access::listener(addr).map_err(listen_err)?);
        }
        // The bound port (port 0 asks for one), so a request naming this
        // proxy is seen to be a loop.
        cfg.listen = addr;
        let (disk, disk_report) = match &cfg.disk {
            Some((dir, size)) => {
                let (d, r) = DiskStore::open(dir, *size, cfg.policy)?;
                (Some(d), Some(r))
            }
            None => (None, None),
        };
        let log = match &cfg.access_log {
            Some(path) => {
                Some(
                    AccessLog::create(path).map_err(|source| ProxyError::AccessLog {
                        path: path.clone(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            cache: Cache::new(cfg.memory, cfg.policy, disk),
            inflight: Arc::default(),
            replay: replay::ReplayStats::default(),
            log,
            stats: Arc::default(),
            dest_rules: cfg.dest_rules(),
            uploads: cacheoff_access::Budget::new(cfg.max_buffered_uploads),
            slots: cacheoff_access::Slots::new(cfg.max_client_connections),
            gate: cfg.capacity.map(capacity::Gate::new),
            cfg,
        });
        let (stop, stop_rx) = watch::channel(false);
        let mut threads = Vec::new();
        for (i, l) in listeners.into_iter().enumerate() {
            let (sh, rx) = (shared.clone(), stop_rx.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{THREAD_PREFIX}{i}"))
                    .spawn(move || worker(l, sh, rx))
                    .expect("spawn proxy worker"),
            );
        }
        if shared.log.is_some() {
            let (sh, mut rx) = (shared.clone(), stop_rx);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{THREAD_PREFIX}log"))
                    .spawn(move || {
                        while !*rx.borrow_and_update() {
                            std::thread::sleep(Duration::from_millis(200));
                            if let Some(l) = &sh.log {
                                l.flush();
                            }
                        }
                    })
                    .expect("spawn access log flusher"),
            );
        }
        Ok(Proxy {
            addr,
            shared,
            stop,
            threads,
            disk_report,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> &ProxyStats {
        &self.shared.stats
    }

    /// A handle that reads the proxy's counters and stores from another
    /// thread (a metrics scrape); it keeps the stores alive while held.
    pub fn probe(&self) -> Probe {
        Probe {
            shared: self.shared.clone(),
            disk_report: self.disk_report,
        }
    }

    /// What the disk store held when the proxy started.
    pub fn disk_report(&self) -> Option<OpenReport> {
        self.disk_report
    }

    /// Objects and bytes in the memory store.
    pub fn memory_usage(&self) -> (usize, u64) {
        self.shared.cache.memory_usage()
    }

    /// How closely the Collector's hits matched their misses so far.
    pub fn replay_precision(&self) -> ReplayPrecision {
        self.shared.replay.precision()
    }

    pub fn config(&self) -> &ProxyConfig {
        &self.shared.cfg
    }

    /// Stops accepting, drops open connections, flushes the log.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(l) = &self.shared.log {
            l.flush();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn worker(listener: std::net::TcpListener, sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    if sh.cfg.role == Role::Collector {
        cacheoff_timer::lower_timer_slack();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name(format!("{THREAD_PREFIX}blocking"))
        .build()
        .expect("proxy runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("register listener");
        let pool = Rc::new(upstream::Pool::default());
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((s, peer)) => match sh.slots.take() {
                        Some(slot) => {
                            tokio::task::spawn_local(conn::serve(s, peer, sh.clone(), pool.clone(), slot));
                        }
                        None => conn::turn_away(s, &sh),
                    },
                    // Out of descriptors: back off instead of spinning.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                },
                _ = stop.changed() => break,
            }
        }
    });
}
