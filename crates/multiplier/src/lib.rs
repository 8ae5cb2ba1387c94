//! The SPE Multiplier (docs/multiplier.md): clients use it as their
//! forward proxy; it serves them the Collector's replies and sends a copy
//! of every request to each proxy under test, whose replies it times and
//! compares with the Collector's.
//!
//! [`start`] binds one listening socket per client worker thread
//! (`SO_REUSEPORT`), each running a single-threaded runtime (`listen`)
//! that admits clients by address and within the connection cap, and
//! serves them (`client`) within the head and body deadlines, with its own
//! keep-alive pool to the Collector (`wire::Pool`). A request is checked
//! from its head (`admit`: tunnels, loops by `Via` token or own address,
//! `--allow-dest`) before its body is read. Every proxy under test has a
//! thread of its own (`copies`): a bounded queue the client workers
//! `try_send` copies into (a full queue, by count or by bytes, drops the
//! copy, so a slow proxy never slows clients) and a runtime with up to
//! `conns_per_proxy` connections, each copy within `copy_timeout`. Byte
//! budgets, slots and deadlines are `limits`. The Collector's
//! reply facts ([`Facts`], `facts`) reach a copy through a `watch` per
//! request; [`claim`] and [`verdict`] say hit or miss, [`compare`] finds
//! the [`Mismatch`]. Counters and histograms (`stats`) are folded by the
//! interval thread (`coord`) into `intervals.jsonl` and, at
//! [`Multiplier::stop`], `summary.json` (formats in
//! `cacheoff_rundir::spe`).

mod admit;
mod claim;
mod client;
mod compare;
mod config;
mod coord;
mod copies;
mod facts;
mod inbound;
mod limits;
mod listen;
mod request;
mod stats;
mod wire;

pub use cacheoff_access::{DestRule, IpNet};
pub use cacheoff_rundir::spe::{Interval, Mismatch, Refusal, Summary};
pub use claim::{claim, collector_claim, stamp, verdict, Verdict, COLLECTED_HEADER, COPY_HEADER};
pub use compare::compare;
pub use config::{
    parse_proxies, parse_proxy, Config, IntervalHook, ProxyArgError, ProxyUnderTest, SampleHook,
};
pub use facts::Facts;
pub use request::is_safe;

use cacheoff_access::{Budget, Slots};
use cacheoff_rundir::spe::{Manifest, ProxyAddr, SpeDir};
use cacheoff_rundir::RunDirError;
use copies::{CopySettings, ProxyShared};
use stats::{ClientSideCounts, CollectorAcc, ProxyAcc};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use tokio::sync::{mpsc, watch};

#[derive(Debug, thiserror::Error)]
pub enum MultiplierError {
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("no proxies under test")]
    NoProxies,
    #[error(transparent)]
    Proxy(#[from] ProxyArgError),
    #[error("{0} must be at least 1")]
    Zero(&'static str),
}

/// What every thread shares: the settings, the proxies, the counters.
pub(crate) struct Shared {
    cfg: Config,
    /// Where clients connect, as bound.
    addr: SocketAddr,
    /// This Multiplier's `Via` pseudonym (`admit::via_token`).
    via: String,
    /// `cfg.dest_rules()`, once.
    dest_rules: Option<Vec<DestRule>>,
    proxies: Vec<Arc<ProxyShared>>,
    /// One per client worker, recorded only by it.
    collector: Vec<Mutex<CollectorAcc>>,
    requests: AtomicU64,
    /// Since the last interval (the interval thread swaps it out).
    refused: AtomicU64,
    /// By kind over the run, never reset.
    refusals: [AtomicU64; Refusal::COUNT],
    next_id: AtomicU64,
    slots: Arc<Slots>,
    /// Request bodies being buffered, and held until their relay ends.
    uploads: Arc<Budget>,
}

impl Shared {
    /// Counts a connection or request the Multiplier refused itself.
    fn refuse(&self, kind: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.refusals[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn reply_timeouts(&self) -> wire::ReplyTimeouts {
        wire::ReplyTimeouts {
            first_byte: self.cfg.first_byte_timeout,
            idle: self.cfg.idle_timeout,
            max_header: self.cfg.max_header,
        }
    }
}

/// A running Multiplier; dropping it stops it as [`Multiplier::stop`]
/// does, the summary written but not returned.
pub struct Multiplier {
    addr: SocketAddr,
    out: PathBuf,
    shared: Arc<Shared>,
    client_stop: watch::Sender<bool>,
    workers: Vec<JoinHandle<()>>,
    copy_stop: watch::Sender<Option<Instant>>,
    copiers: Vec<JoinHandle<()>>,
    coord_stop: Option<std::sync::mpsc::Sender<()>>,
    coord: Option<JoinHandle<Result<Summary, MultiplierError>>>,
}

/// Binds, creates the run directory, starts every thread and returns.
pub fn start(cfg: Config) -> Result<Multiplier, MultiplierError> {
    if cfg.proxies.is_empty() {
        return Err(MultiplierError::NoProxies);
    }
    for (what, n) in [
        ("queue", cfg.queue),
        ("conns_per_proxy", cfg.conns_per_proxy),
        ("workers", cfg.workers),
        ("max_client_connections", cfg.max_client_connections),
    ] {
        if n == 0 {
            return Err(MultiplierError::Zero(what));
        }
    }
    let names: Vec<String> = cfg
        .proxies
        .iter()
        .map(|p| format!("{}={}", p.name, p.addr))
        .collect();
    parse_proxies(&names)?;
    let listen_err = |source| MultiplierError::Listen {
        addr: cfg.listen,
        source,
    };
    let first = listen::listener(cfg.listen).map_err(listen_err)?;
    let addr = first.local_addr().map_err(listen_err)?;
    let mut listeners = vec![first];
    for _ in 1..cfg.workers {
        listeners.push(listen::listener(addr).map_err(listen_err)?);
    }
    let manifest = Manifest::new(
        &cfg.build,
        &cfg.argv,
        addr,
        cfg.collector,
        cfg.proxies
            .iter()
            .map(|p| ProxyAddr {
                name: p.name.clone(),
                addr: p.addr,
            })
            .collect(),
        cfg.settings(),
    );
    let dir = SpeDir::create(&cfg.out, manifest)?;
    let (copy_stop, copy_stop_rx) = watch::channel(None);
    let settings = CopySettings {
        conns: cfg.conns_per_proxy,
        connect_timeout: cfg.connect_timeout,
        reply: wire::ReplyTimeouts {
            first_byte: cfg.first_byte_timeout,
            idle: cfg.idle_timeout,
            max_header: cfg.max_header,
        },
        facts_wait: cfg.facts_wait,
        copy_timeout: cfg.copy_timeout,
    };
    let share = cfg.max_queued_bytes / cfg.proxies.len() as u64;
    let mut proxies = Vec::new();
    let mut queues = Vec::new();
    for p in &cfg.proxies {
        let (tx, rx) = mpsc::channel(cfg.queue);
        proxies.push(Arc::new(ProxyShared {
            name: p.name.clone(),
            addr: p.addr,
            tx,
            budget: Budget::new(share),
            client: Arc::new(ClientSideCounts::default()),
            acc: Mutex::new(ProxyAcc::new()),
        }));
        queues.push(rx);
    }
    let shared = Arc::new(Shared {
        collector: (0..cfg.workers)
            .map(|_| Mutex::new(CollectorAcc::new()))
            .collect(),
        addr,
        via: admit::via_token(),
        dest_rules: cfg.dest_rules(),
        slots: Slots::new(cfg.max_client_connections),
        uploads: Budget::new(cfg.max_buffered_uploads),
        cfg,
        proxies,
        requests: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        refusals: std::array::from_fn(|_| AtomicU64::new(0)),
        next_id: AtomicU64::new(1),
    });
    let copiers = shared
        .proxies
        .iter()
        .zip(queues)
        .map(|(p, rx)| copies::spawn(p.clone(), rx, settings, copy_stop_rx.clone()))
        .collect();
    let (client_stop, client_stop_rx) = watch::channel(false);
    let workers = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (sh, rx) = (shared.clone(), client_stop_rx.clone());
            std::thread::Builder::new()
                .name(format!("multiplier-{i}"))
                .spawn(move || listen::worker(i, l, sh, rx))
                .expect("spawn multiplier worker")
        })
        .collect();
    let (coord_stop, coord_stop_rx) = std::sync::mpsc::channel();
    let sh = shared.clone();
    let start = Instant::now();
    let coord = std::thread::Builder::new()
        .name("multiplier-intervals".into())
        .spawn(move || coord::run(sh, dir, start, coord_stop_rx))
        .expect("spawn interval thread");
    Ok(Multiplier {
        addr,
        out: shared.cfg.out.clone(),
        shared,
        client_stop,
        workers,
        copy_stop,
        copiers,
        coord_stop: Some(coord_stop),
        coord: Some(coord),
    })
}

impl Multiplier {
    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The run directory.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// The `Via` pseudonym this Multiplier adds to what it sends, and
    /// refuses (508) in what it receives.
    pub fn via(&self) -> &str {
        &self.shared.via
    }

    /// Bytes the copies queued or in flight hold now, over every proxy.
    pub fn queued_bytes(&self) -> u64 {
        self.shared.proxies.iter().map(|p| p.budget.used()).sum()
    }

    /// The most each proxy's copies ever held, added over the proxies (at
    /// least the most they held together; at most `max_queued_bytes`).
    pub fn queued_bytes_peak(&self) -> u64 {
        self.shared.proxies.iter().map(|p| p.budget.peak()).sum()
    }

    /// The most request body bytes ever buffered at once (at most
    /// `max_buffered_uploads`).
    pub fn buffered_uploads_peak(&self) -> u64 {
        self.shared.uploads.peak()
    }

    /// Client connections open now.
    pub fn client_connections(&self) -> usize {
        self.shared.slots.open()
    }

    /// Connections and requests refused for `kind` since the start (the
    /// run directory's `refused` adds every kind).
    pub fn refusals(&self, kind: Refusal) -> u64 {
        self.shared.refusals[kind as usize].load(Ordering::Relaxed)
    }

    /// Stops accepting and closes client connections, lets queued and
    /// in-flight copies finish within `stop_grace`, writes the last
    /// interval and `summary.json`, and returns the summary.
    pub fn stop(mut self) -> Result<Summary, MultiplierError> {
        self.shutdown();
        let coord = self.coord.take().expect("stopped once");
        coord.join().expect("interval thread")
    }

    fn shutdown(&mut self) {
        let _ = self.client_stop.send(true);
        for t in self.workers.drain(..) {
            let _ = t.join();
        }
        let _ = self
            .copy_stop
            .send(Some(Instant::now() + self.shared.cfg.stop_grace));
        for t in self.copiers.drain(..) {
            let _ = t.join();
        }
        if let Some(tx) = self.coord_stop.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for Multiplier {
    fn drop(&mut self) {
        self.shutdown();
        if let Some(c) = self.coord.take() {
            let _ = c.join();
        }
    }
}
