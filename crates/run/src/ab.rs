//! `cacheoff ab`'s runs: the same workload through A and through B in
//! alternating rounds (`cacheoff_ab::experiment` with this module's
//! round runner), each run a run directory under the experiment's, then
//! `ab.json` (`cacheoff_rundir::ab`).
//!
//! A side is an address (running already: its cache carries over) or a
//! product started afresh for each run and stopped after it ([`Fresh`]:
//! the binary starts real products the way a lineup does).

use crate::watch::Watch;
use crate::{run_setup, RunError, Setup};
use cacheoff_ab::{AbReport, RoundRunner, Side};
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_rundir::RunDir;
use cacheoff_workload::Workload;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A product started for one run and stopped after it.
pub trait Fresh {
    /// Its name in the experiment's plan.
    fn name(&self) -> String;
    /// Whether it is a surrogate (else a forward proxy).
    fn reverse(&self) -> bool;
    /// Starts it for `w`, the origin servers `bound`, its files in `dir`;
    /// it answers when this returns.
    fn start(
        &self,
        w: &Workload,
        bound: &BoundServers,
        dir: &Path,
    ) -> Result<Box<dyn Started>, RunError>;
}

/// A product [`Fresh::start`] started.
pub trait Started {
    fn addr(&self) -> SocketAddr;
    /// Its name and version, for the run's manifest.
    fn label(&self) -> String;
    /// What it spends, watched through its own cgroup.
    fn watch(&self) -> Option<Watch>;
    /// Stops it, gracefully then by force.
    fn stop(self: Box<Self>) -> Result<(), RunError>;
}

/// One side of the experiment.
pub enum Contestant {
    /// Running already: its cache carries over from run to run.
    Addr {
        addr: SocketAddr,
        watch: Option<String>,
    },
    /// Started afresh (empty cache) for each run, and stopped after it.
    Product(Box<dyn Fresh>),
}

impl Contestant {
    fn describe(&self) -> String {
        match self {
            Contestant::Addr { addr, .. } => addr.to_string(),
            Contestant::Product(p) => p.name(),
        }
    }
}

/// An experiment, resolved.
pub struct Experiment {
    pub workload: Workload,
    pub a: Contestant,
    pub b: Contestant,
    pub rounds: usize,
    pub workers: usize,
    pub out: PathBuf,
    pub quiet: bool,
}

/// Runs every round into `e.out` and writes `ab.json`.
pub fn experiment(e: &Experiment, stop: &StopHandle) -> Result<AbReport, RunError> {
    std::fs::create_dir_all(&e.out).map_err(|source| RunError::Mkdir {
        path: e.out.clone(),
        source,
    })?;
    let plan = cacheoff_ab::Plan {
        workload: e.workload.name.clone(),
        a: e.a.describe(),
        b: e.b.describe(),
        rounds: e.rounds,
        plateau_s: plateau_s(&e.workload),
    };
    let report = cacheoff_ab::experiment(&plan, &mut Runner { e, stop })?;
    cacheoff_rundir::ab::write(&e.out, &report).map_err(RunError::WriteDir)?;
    Ok(report)
}

/// Runs an experiment's runs into its directory.
struct Runner<'a> {
    e: &'a Experiment,
    stop: &'a StopHandle,
}

impl RoundRunner for Runner<'_> {
    type Error = RunError;
    fn run(&mut self, round: usize, side: Side, name: &str) -> Result<serde_json::Value, RunError> {
        let e = self.e;
        // A and B of a round see the same requests; rounds see new ones,
        // so what a running cache kept from the last round is no hit.
        let mut w = e.workload.clone();
        w.seed = e.workload.seed.wrapping_add(round as u64);
        let who = match side {
            Side::A => &e.a,
            Side::B => &e.b,
        };
        let dir = e.out.join(name);
        let summary = run_one(e, who, w, &dir, self.stop)?;
        if !e.quiet {
            crate::console::print(&format!(
                "round {}/{} {}: {:.1} xact/s, DHR {:.1}%, hit mean {:.3} ms, {} errors ({})",
                round + 1,
                e.rounds,
                if side == Side::A { "A" } else { "B" },
                summary.rate_xps,
                summary.dhr.measured,
                summary.rt_ms.hit.mean,
                summary.errors.total,
                dir.display()
            ));
        }
        read_summary(&dir)
    }
    fn stopped(&mut self) -> Option<RunError> {
        self.stop.is_stopped().then_some(RunError::Interrupted)
    }
}

/// The measured phase's length (the plateau `--plateau` sets).
fn plateau_s(w: &Workload) -> f64 {
    w.phases
        .iter()
        .rev()
        .find(|p| p.measured)
        .map_or(0.0, |p| p.duration.0.as_secs_f64())
}

/// One run through `who` into `dir`: its headline entry.
fn run_one(
    e: &Experiment,
    who: &Contestant,
    w: Workload,
    dir: &Path,
    stop: &StopHandle,
) -> Result<cacheoff_stats::Entry, RunError> {
    let setup = |via, bound, label, watch| Setup {
        bound,
        label: Some(label),
        watch,
        ..Setup::quiet(w.clone(), via, e.workers)
    };
    let argv: Vec<String> = std::env::args().collect();
    let r = match who {
        Contestant::Addr { addr, watch } => {
            let watch = watch.as_deref().map(Watch::parse).transpose()?;
            // A surrogate knows the origin servers by the address map.
            let (via, bound) = if w.surrogate {
                if w.servers.port == 0 {
                    return Err(RunError::SurrogateNeedsPort {
                        addr: *addr,
                        what: w.name.clone(),
                    });
                }
                (Via::Surrogate(*addr), Some(bind(&w)?))
            } else {
                (Via::Proxy(*addr), None)
            };
            run_setup(dir, setup(via, bound, addr.to_string(), watch), &argv, stop)?
        }
        Contestant::Product(p) => {
            let bound = bind(&w)?;
            let running = p.start(&w, &bound, dir)?;
            let (addr, label, watch) = (running.addr(), running.label(), running.watch());
            let via = if p.reverse() {
                Via::Surrogate(addr)
            } else {
                Via::Proxy(addr)
            };
            let r = run_setup(
                &dir.join("run"),
                setup(via, Some(bound), label, watch),
                &argv,
                stop,
            );
            let stopped = running.stop();
            let r = r?;
            stopped?;
            r
        }
    };
    let run = RunDir::open(&r.dir).map_err(RunError::ReadBack)?;
    Ok(run.headline())
}

/// The origin servers, bound before the proxy is started or told of them.
fn bind(w: &Workload) -> Result<Arc<BoundServers>, RunError> {
    BoundServers::bind(w)
        .map(Arc::new)
        .map_err(RunError::BindServers)
}

/// A run's summary.json as the figures read it.
fn read_summary(dir: &Path) -> Result<serde_json::Value, RunError> {
    let path = summary_path(dir);
    let text = std::fs::read_to_string(&path).map_err(|e| RunError::Summary {
        path: path.clone(),
        why: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| RunError::Summary {
        path,
        why: format!("not JSON: {e}"),
    })
}

/// A product's run sits in `run/` beside its `product/`.
fn summary_path(dir: &Path) -> PathBuf {
    let nested = dir.join("run").join(cacheoff_rundir::SUMMARY_FILE);
    if nested.exists() {
        nested
    } else {
        dir.join(cacheoff_rundir::SUMMARY_FILE)
    }
}
