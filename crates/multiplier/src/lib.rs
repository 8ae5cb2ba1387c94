//! The SPE Multiplier (docs/multiplier.md): clients use it as their
//! forward proxy; it serves them the Collector's replies and sends a copy
//! of every request to each proxy under test, whose replies it times and
//! compares with the Collector's.
//!
//! [`start`] binds one listening socket per client worker thread
//! (`SO_REUSEPORT`), each running a single-threaded runtime that serves
//! its clients (`client`) with its own keep-alive pool to the Collector
//! (`wire::Pool`). Every proxy under test has a thread of its own
//! (`copies`): a bounded queue the client workers `try_send` copies into
//! (a full queue drops the copy, so a slow proxy never slows clients) and
//! a runtime with up to `conns_per_proxy` connections. The Collector's
//! reply facts ([`Facts`], `facts`) reach a copy through a `watch` per
//! request; [`claim`] and [`verdict`] say hit or miss, [`compare`] finds
//! the [`Mismatch`]. Counters and histograms (`stats`) are folded by the
//! interval thread (`coord`) into `intervals.jsonl` and, at
//! [`Multiplier::stop`], `summary.json` (formats in
//! `cacheoff_rundir::spe`).

mod claim;
mod client;
mod compare;
mod config;
mod coord;
mod copies;
mod facts;
mod request;
mod stats;
mod wire;

pub use cacheoff_rundir::spe::{Interval, Mismatch, Summary};
pub use claim::{claim, collector_claim, stamp, verdict, Verdict, COLLECTED_HEADER, COPY_HEADER};
pub use compare::compare;
pub use config::{
    parse_proxies, parse_proxy, Config, IntervalHook, ProxyArgError, ProxyUnderTest, SampleHook,
};
pub use facts::Facts;
pub use request::is_safe;

use cacheoff_rundir::spe::{Manifest, ProxyAddr, SpeDir};
use cacheoff_rundir::RunDirError;
use copies::{CopySettings, ProxyShared};
use stats::{ClientSideCounts, CollectorAcc, ProxyAcc};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
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
    proxies: Vec<Arc<ProxyShared>>,
    /// One per client worker, recorded only by it.
    collector: Vec<Mutex<CollectorAcc>>,
    requests: AtomicU64,
    refused: AtomicU64,
    next_id: AtomicU64,
    connections: AtomicUsize,
}

impl Shared {
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

fn listener(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
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
    let first = listener(cfg.listen).map_err(listen_err)?;
    let addr = first.local_addr().map_err(listen_err)?;
    let mut listeners = vec![first];
    for _ in 1..cfg.workers {
        listeners.push(listener(addr).map_err(listen_err)?);
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
    };
    let mut proxies = Vec::new();
    let mut queues = Vec::new();
    for p in &cfg.proxies {
        let (tx, rx) = mpsc::channel(cfg.queue);
        proxies.push(Arc::new(ProxyShared {
            name: p.name.clone(),
            addr: p.addr,
            tx,
            client: ClientSideCounts::default(),
            acc: Mutex::new(ProxyAcc::new()),
        }));
        queues.push(rx);
    }
    let shared = Arc::new(Shared {
        collector: (0..cfg.workers)
            .map(|_| Mutex::new(CollectorAcc::new()))
            .collect(),
        cfg,
        proxies,
        requests: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        next_id: AtomicU64::new(1),
        connections: AtomicUsize::new(0),
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
                .spawn(move || worker(i, l, sh, rx))
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

/// Frees a client connection's slot when the connection ends.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

fn worker(
    id: usize,
    listener: std::net::TcpListener,
    sh: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("multiplier runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("register listener");
        let pool = Rc::new(wire::Pool::new(256));
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((mut s, _)) => {
                        let open = sh.connections.fetch_add(1, Ordering::Relaxed);
                        let slot = Slot(sh.clone());
                        if open >= sh.cfg.max_client_connections {
                            sh.refused.fetch_add(1, Ordering::Relaxed);
                            let busy = request::refusal(503, "too many client connections");
                            tokio::task::spawn_local(async move {
                                use tokio::io::AsyncWriteExt;
                                let _ = tokio::time::timeout(Duration::from_secs(1), s.write_all(&busy)).await;
                                drop(slot);
                            });
                            continue;
                        }
                        let (sh, pool) = (sh.clone(), pool.clone());
                        tokio::task::spawn_local(async move {
                            client::serve(s, sh, pool, id).await;
                            drop(slot);
                        });
                    }
                    // Out of descriptors: back off instead of spinning.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                },
                _ = stop.changed() => break,
            }
        }
    });
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
