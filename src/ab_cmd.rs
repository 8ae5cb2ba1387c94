//! `cacheoff ab`: the same workload through A and through B in alternating
//! rounds (A B, B A, B A, A B, …), then for every headline figure B − A
//! with its 95% interval and a verdict. The rounds and the statistics are
//! `cacheoff_ab`'s (`experiment`; docs/ab.md); this module runs each run
//! (its `RoundRunner`) through an address or a product started afresh.

use crate::cli::AbArgs;
use crate::lineup::{product, Contender};
use crate::Failure;
use anyhow::{anyhow, Context};
use cacheoff_ab::{AbReport, RoundRunner, Side};
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_products::Mode;
use cacheoff_run::console;
use cacheoff_run::watch::Watch;
use cacheoff_run::{run_setup, Setup};
use cacheoff_rundir::RunDir;
use cacheoff_workload::Workload;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One side of the experiment.
pub enum Contestant {
    /// Running already: its cache carries over from run to run.
    Addr {
        addr: SocketAddr,
        watch: Option<String>,
    },
    /// Started afresh (empty cache) for each run, and stopped after it.
    Product(Box<Contender>),
}

impl Contestant {
    /// `arg` tested in `mode` (a surrogate workload's is reverse).
    pub fn parse(arg: &str, watch: Option<String>, mode: Mode) -> Result<Contestant, Failure> {
        if let Ok(addr) = arg.parse::<SocketAddr>() {
            return Ok(Contestant::Addr { addr, watch });
        }
        if watch.is_some() {
            return Err(Failure::usage(anyhow!(
                "{arg}: a product cacheoff starts is watched through its own cgroup; --a-watch/--b-watch are for addresses"
            )));
        }
        let spec = product::spec(arg).map_err(Failure::usage)?;
        if !spec.modes.contains(&mode) {
            return Err(Failure::usage(anyhow!(
                "{arg}: the workload needs a {m} proxy, and this product has no {m} mode",
                m = mode.name()
            )));
        }
        Ok(Contestant::Product(Box::new(Contender {
            spec,
            mode,
            settings: Vec::new(),
            price_usd: None,
        })))
    }

    fn describe(&self) -> String {
        match self {
            Contestant::Addr { addr, .. } => addr.to_string(),
            Contestant::Product(c) => c.spec.name.clone(),
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

pub fn run(a: &AbArgs) -> Result<AbReport, Failure> {
    if a.rounds == 0 {
        return Err(Failure::usage(anyhow!("--rounds must be at least 1")));
    }
    let workload = cacheoff_run::workload::load(&a.workload, &a.settings.0, &a.pgl.options())?;
    workload.check_runnable().map_err(Failure::usage)?;
    let out = a.out.clone().unwrap_or_else(|| {
        let mut p = RunDir::default_path(&workload.name).into_os_string();
        p.push("-ab");
        p.into()
    });
    let mode = if workload.surrogate {
        Mode::Reverse
    } else {
        Mode::Forward
    };
    let e = Experiment {
        a: Contestant::parse(&a.a, a.a_watch.clone(), mode)?,
        b: Contestant::parse(&a.b, a.b_watch.clone(), mode)?,
        rounds: a.rounds,
        workers: crate::cli::workers(a.workers),
        out,
        quiet: a.quiet,
        workload,
    };
    let stop = StopHandle::new();
    cacheoff_run::signals::stop_runs_on_signals(&stop);
    let report = experiment(&e, &stop)?;
    console::print(&cacheoff_ab::report_table(&report));
    console::print(&format!(
        "\nab: {}",
        e.out.join(cacheoff_rundir::ab::AB_FILE).display()
    ));
    Ok(report)
}

/// Runs every round into `e.out` and writes `ab.json`.
pub fn experiment(e: &Experiment, stop: &StopHandle) -> Result<AbReport, Failure> {
    std::fs::create_dir_all(&e.out)
        .with_context(|| format!("cannot create {}", e.out.display()))
        .map_err(Failure::usage)?;
    let plan = cacheoff_ab::Plan {
        workload: e.workload.name.clone(),
        a: e.a.describe(),
        b: e.b.describe(),
        rounds: e.rounds,
        plateau_s: plateau_s(&e.workload),
    };
    let report = cacheoff_ab::experiment(&plan, &mut Runner { e, stop })?;
    cacheoff_rundir::ab::write(&e.out, &report).map_err(|err| match err {
        // Said as before: the path, then the system's reason.
        cacheoff_rundir::RunDirError::Write { path, source } => Failure::run(
            anyhow::Error::new(source).context(format!("cannot write {}", path.display())),
        ),
        err => Failure::run(err),
    })?;
    Ok(report)
}

/// Runs an experiment's runs into its directory.
struct Runner<'a> {
    e: &'a Experiment,
    stop: &'a StopHandle,
}

impl RoundRunner for Runner<'_> {
    type Error = Failure;
    fn run(&mut self, round: usize, side: Side, name: &str) -> Result<serde_json::Value, Failure> {
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
            console::print(&format!(
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
    fn stopped(&mut self) -> Option<Failure> {
        self.stop
            .is_stopped()
            .then(|| Failure::run(anyhow!("stopped before the experiment ended")))
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
) -> Result<cacheoff_stats::Entry, Failure> {
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
                    return Err(Failure::usage(anyhow!(
                        "{addr}: a surrogate must know the origin servers' addresses before the run: give them a port (--server-port PORT) and configure it with `cacheoff workload addrmap {} --server-port PORT`",
                        w.name
                    )));
                }
                (Via::Surrogate(*addr), Some(bind(&w)?))
            } else {
                (Via::Proxy(*addr), None)
            };
            run_setup(dir, setup(via, bound, addr.to_string(), watch), &argv, stop)?
        }
        Contestant::Product(c) => {
            let bound = bind(&w)?;
            let running = product::start(c, &w, &bound, dir, None, None).map_err(Failure::run)?;
            let (addr, label, watch) = (running.addr(), running.label(), running.watch());
            let via = match c.mode {
                Mode::Reverse => Via::Surrogate(addr),
                Mode::Forward => Via::Proxy(addr),
            };
            let running = Mutex::new(running);
            let r = run_setup(
                &dir.join("run"),
                setup(via, Some(bound), label, watch),
                &argv,
                stop,
            );
            let stopped = product::stop(&running);
            let r = r?;
            stopped
                .context("cannot stop the product")
                .map_err(Failure::run)?;
            r
        }
    };
    let run = RunDir::open(&r.dir)
        .context("cannot read the run back")
        .map_err(Failure::run)?;
    Ok(run.headline())
}

/// The origin servers, bound before the proxy is started or told of them.
fn bind(w: &Workload) -> Result<Arc<BoundServers>, Failure> {
    BoundServers::bind(w)
        .map(Arc::new)
        .context("cannot bind the origin servers")
        .map_err(Failure::run)
}

/// A run's summary.json as the figures read it.
fn read_summary(dir: &Path) -> Result<serde_json::Value, Failure> {
    let path = summary_path(dir);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(Failure::run)?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not JSON", path.display()))
        .map_err(Failure::run)
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
