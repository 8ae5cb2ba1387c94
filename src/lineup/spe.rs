//! `cacheoff lineup --spe`: every product of the lineup side by side on
//! one live stream (Simultaneous Proxy Evaluation). The robots' requests
//! go to the Multiplier (`cacheoff_multiplier`), which serves them the
//! Collector's replies (the reference proxy as the Collector, here in the
//! process) and copies each request to every product, each started with
//! the Collector as its parent; the Multiplier compares and times their
//! replies. What it writes (`spe/`) ranks the products; the robots' own
//! run (`clients/`) is what the users of this set-up saw.

use super::{contenders, product, workload_for, Contender, Options};
use crate::Failure;
use anyhow::{anyhow, Context};
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_multiplier::{Config, ProxyUnderTest, Summary};
use cacheoff_products::Mode;
use cacheoff_run::console;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::file::Lineup;

/// The Collector's memory: it keeps every reply for the whole run, so it
/// gets several times the products' cache, and at least this much.
const MIN_COLLECTOR_MEMORY: u64 = 1 << 30;

/// Connections the Multiplier opens at once to each product, and copies
/// it holds for one before it drops them.
const COPY_CONNS: usize = 1024;
const COPY_QUEUE: usize = 8192;

/// Products that could not join an SPE run, each with why.
pub type LeftOut = Vec<(String, String)>;

/// What an SPE lineup measured.
#[derive(Debug)]
pub struct Outcome {
    pub summary: Summary,
    /// Products that could not join (no parent support, or failed to
    /// start).
    pub left_out: LeftOut,
}

impl Outcome {
    /// Products whose replies differed from the Collector's.
    pub fn failed(&self) -> Vec<String> {
        self.summary
            .proxies
            .iter()
            .filter(|p| p.span.counts.mismatches > 0)
            .map(|p| format!("{}: {} mismatches", p.span.name, p.span.counts.mismatches))
            .collect()
    }
}

/// The lineup's products that can fetch through a parent, each once, in
/// forward mode (the Multiplier copies requests as to a forward proxy).
fn spe_contenders(l: &Lineup) -> Result<(Vec<Contender>, LeftOut), Failure> {
    let mut joined: Vec<Contender> = Vec::new();
    let mut left_out = Vec::new();
    for e in &l.products {
        let spec = product::spec(&e.name).map_err(Failure::usage)?;
        if !spec.supports_parent(Mode::Forward) {
            left_out.push((
                spec.name.clone(),
                "cannot fetch through a parent proxy (no forward mode with a parent)".into(),
            ));
            continue;
        }
        if joined.iter().any(|c| c.spec.name == spec.name) {
            continue;
        }
        joined.push(Contender {
            spec,
            mode: Mode::Forward,
            settings: e.settings.clone(),
            price_usd: e.price_usd,
        });
    }
    if joined.is_empty() {
        // The usual lineup checks say why there is nothing to run.
        contenders(l)?;
        return Err(Failure::usage(anyhow!(
            "no product of the lineup can fetch through a parent, so none can join an SPE run"
        )));
    }
    Ok((joined, left_out))
}

/// Runs the SPE lineup into `opts.out`.
pub fn run(l: &Lineup, opts: &Options, stop: &StopHandle) -> Result<Outcome, Failure> {
    let (all, mut left_out) = spe_contenders(l)?;
    let w = workload_for(l, Mode::Forward, &[])?;
    product::check_installed(&all).map_err(Failure::usage)?;
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("cannot create {}", opts.out.display()))
        .map_err(Failure::usage)?;
    let bound = Arc::new(
        BoundServers::bind(&w)
            .context("cannot bind the origin servers")
            .map_err(Failure::usage)?,
    );
    let cache = w.cache_size.map_or(0, |b| b.0);
    let collector = start_collector(&opts.out, cache)?;
    console::print(&format!(
        "== SPE: Collector on {} ({} memory)",
        collector.addr(),
        cacheoff_base::Bytes(collector.config().memory)
    ));
    let mut running = Vec::new();
    for c in &all {
        if stop.is_stopped() {
            break;
        }
        let dir = opts.out.join(c.spec.name.as_str());
        match start_contender(l, c, &bound, &dir, collector.addr()) {
            Ok(r) => {
                console::print(&format!("{} listening on {}", r.label(), r.addr()));
                running.push((c.spec.name.clone(), Arc::new(Mutex::new(r))));
            }
            Err(e) => left_out.push((c.spec.name.clone(), format!("{e:#}"))),
        }
    }
    for (name, why) in &left_out {
        console::print(&format!("cacheoff: {name} left out of the SPE run: {why}"));
    }
    let result = measure(&w, &bound, collector.addr(), &running, opts, stop);
    for (name, r) in &running {
        if let Err(e) = product::stop(r) {
            console::print(&format!("cacheoff: {name}: {e:#}"));
        }
    }
    collector.stop();
    Ok(Outcome {
        summary: result?,
        left_out,
    })
}

fn start_collector(out: &Path, cache: u64) -> Result<cacheoff_proxy::Proxy, Failure> {
    let dir = out.join("collector");
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))
        .map_err(Failure::usage)?;
    let mut cfg = cacheoff_proxy::ProxyConfig::new((Ipv4Addr::LOCALHOST, 0).into());
    cfg.role = cacheoff_proxy::Role::Collector;
    cfg.memory = cache.saturating_mul(4).max(MIN_COLLECTOR_MEMORY);
    cfg.access_log = Some(dir.join("access.log"));
    cacheoff_proxy::Proxy::start(cfg)
        .context("cannot start the Collector")
        .map_err(Failure::run)
}

/// A product with the Collector as its parent, sized by the lineup's
/// settings and its own.
fn start_contender(
    l: &Lineup,
    c: &Contender,
    bound: &BoundServers,
    dir: &Path,
    collector: SocketAddr,
) -> anyhow::Result<product::Running> {
    let w = workload_for(l, Mode::Forward, &c.settings).map_err(|f| f.error)?;
    product::start(c, &w, bound, dir, Some(collector), None)
}

/// The robots through the Multiplier; the Multiplier's summary.
fn measure(
    w: &cacheoff_workload::Workload,
    bound: &Arc<BoundServers>,
    collector: SocketAddr,
    running: &[(String, Arc<Mutex<product::Running>>)],
    opts: &Options,
    stop: &StopHandle,
) -> Result<Summary, Failure> {
    if running.is_empty() {
        return Err(Failure::run(anyhow!("no product started")));
    }
    let proxies = running
        .iter()
        .map(|(name, r)| ProxyUnderTest {
            name: name.clone(),
            addr: r.lock().unwrap_or_else(|e| e.into_inner()).addr(),
        })
        .collect();
    let spe_dir = opts.out.join("spe");
    let mut cfg = Config::new(
        (Ipv4Addr::LOCALHOST, 0).into(),
        collector,
        proxies,
        spe_dir.clone(),
    );
    cfg.argv = std::env::args().collect();
    cfg.build = cacheoff_run::build();
    // A copy waits as long as the origin did (the Collector replays it),
    // so a product has the rate times that wait in flight.
    cfg.conns_per_proxy = COPY_CONNS;
    cfg.queue = COPY_QUEUE;
    crate::multiplier_cmd::raise_fds(running.len(), COPY_CONNS)?;
    let (quiet, metrics) = (opts.quiet, opts.spe_metrics.clone());
    if !quiet || metrics.is_some() {
        cfg.on_interval = Some(Arc::new(move |iv: &cacheoff_multiplier::Interval| {
            if let Some(m) = &metrics {
                m.interval(iv);
            }
            if !quiet {
                console::print(&format!("spe {}", crate::multiplier_cmd::line(iv)));
            }
        }));
    }
    let m = cacheoff_multiplier::start(cfg)
        .context("cannot start the Multiplier")
        .map_err(Failure::run)?;
    console::print(&format!(
        "Multiplier on {}: every request to the Collector and a copy to {}",
        m.addr(),
        running
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let setup = opts.setup(
        w.clone(),
        Via::Proxy(m.addr()),
        Some(bound.clone()),
        "SPE: the Collector through the Multiplier".into(),
    );
    let clients = super::run_one(&opts.out.join("clients"), setup, stop);
    let summary = m
        .stop()
        .context("the Multiplier failed")
        .map_err(Failure::run)?;
    crate::multiplier_cmd::conclude(&spe_dir, &summary);
    clients?;
    Ok(summary)
}
