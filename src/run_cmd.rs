//! `cacheoff run`: resolve the workload, prepare the run directory, run,
//! and write the summary.

use crate::cli::{RunArgs, TargetArgs};
use crate::console;
use crate::Failure;
use anyhow::Context;
use cacheoff_agent::{BoundServers, RunConfig, StopHandle, Via};
use cacheoff_rundir::{Build, Manifest, Mode, RunDir, RunDirError, Summary};
use cacheoff_workload::{AddrMap, Workload};
use std::path::{Path, PathBuf};

/// What a finished `run` leaves behind.
#[derive(Debug)]
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// Turns command-line settings into the resolved workload.
pub fn resolve_workload(a: &RunArgs) -> Result<Workload, Failure> {
    let mut o = a.settings.0.clone();
    a.target.settle(&mut o);
    let w = crate::workload_file::load(&a.workload, &o, &a.pgl)?;
    w.check_runnable().map_err(Failure::usage)?;
    Ok(w)
}

/// Runs `cacheoff run` with its arguments; `argv` goes into the manifest.
pub fn run(a: &RunArgs, argv: &[String]) -> Result<RunResult, Failure> {
    let workload = resolve_workload(a)?;
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| RunDir::default_path(&workload.name));
    let workers = crate::cli::workers(a.workers);
    let fleet = crate::agent_cmd::fleet(&a.fleet)?;
    let Target {
        via,
        bound,
        embedded,
    } = match &fleet {
        Some(_) => fleet_target(&workload, &a.target)?,
        None => choose_target(&workload, &a.target, &a.workload)?,
    };
    let label = a
        .label
        .clone()
        .or_else(|| embedded.as_ref().map(reference_label));
    let stop = StopHandle::new();
    crate::signals::stop_runs_on_signals(&stop);
    let metrics = a
        .metrics
        .map(|addr| Metrics::start(addr, embedded.as_ref()))
        .transpose()?;
    let setup = Setup {
        workload,
        via,
        bound,
        label,
        workers,
        quiet: a.quiet,
        on_start: None,
        trace: None,
        metrics: metrics.as_ref().map(|m| m.run.clone()),
        fleet,
        tls_dir: a.tls_dir.clone(),
        watch: crate::watch::Watch::for_run(a.watch.as_deref(), embedded.is_some())?,
    };
    let r = run_setup(&dir, setup, argv, &stop)?;
    crate::workload_file::keep_source(&a.workload, &a.pgl, &r.dir);
    let verdict = conclude(&r, embedded, a.quiet);
    if let Some(m) = metrics {
        m.linger();
    }
    verdict.map(|()| r)
}

/// `--metrics HOST:PORT`: the run's families (and the embedded reference
/// proxy's) served on `/metrics` for as long as this lives.
pub struct Metrics {
    pub run: std::sync::Arc<cacheoff_metrics::RunMetrics>,
    pub server: cacheoff_metrics::Server,
}

/// After the run, how long `/metrics` waits for a scrape of the final
/// figures before the process goes on (and exits).
pub const METRICS_LINGER: std::time::Duration = std::time::Duration::from_secs(15);

impl Metrics {
    /// Starts serving on `addr`, with `proxy`'s own figures if given.
    pub fn start(
        addr: std::net::SocketAddr,
        proxy: Option<&cacheoff_proxy::Proxy>,
    ) -> Result<Metrics, Failure> {
        let mut reg = cacheoff_metrics::Registry::default();
        let run = cacheoff_metrics::RunMetrics::register(&mut reg);
        if let Some(p) = proxy {
            reg.register_collector(Box::new(cacheoff_metrics::ProxyCollector::new(p.probe())));
        }
        let server = serve_metrics(addr, reg)?;
        Ok(Metrics { run, server })
    }

    /// Waits (up to [`METRICS_LINGER`]) until a scraper has read the
    /// final figures, so that they are not lost when the process exits.
    pub fn linger(self) {
        let seen = self.server.scrapes();
        self.server.wait_for_scrape(seen, METRICS_LINGER);
    }
}

/// Starts the `/metrics` server on `addr` for `reg`, announcing it on
/// stderr (stdout's first lines are for the command's own output).
pub fn serve_metrics(
    addr: std::net::SocketAddr,
    reg: cacheoff_metrics::Registry,
) -> Result<cacheoff_metrics::Server, Failure> {
    let server = cacheoff_metrics::Server::start(addr, reg)
        .with_context(|| format!("--metrics {addr}: cannot listen"))
        .map_err(Failure::usage)?;
    eprintln!(
        "cacheoff: serving metrics on http://{}/metrics",
        server.addr()
    );
    Ok(server)
}

/// After a run: the summary on the console, the embedded proxy's
/// counters, the report card, and the verdict by the cache-off's rules (an
/// error when the run is disqualified).
pub fn conclude(
    r: &RunResult,
    embedded: Option<cacheoff_proxy::Proxy>,
    quiet: bool,
) -> Result<(), Failure> {
    let dir = &r.dir;
    if !quiet {
        console::print("");
    }
    console::print(&console::summary_table(&r.summary));
    if let Some(p) = embedded {
        console::print(&crate::proxy_cmd::counters_line(&p));
        p.stop();
    }
    console::print(&format!("run directory: {}", dir.display()));
    // The measurements are safe on disk already; a report that fails to
    // render is reported but does not fail the run.
    match crate::report_cmd::html_report(dir) {
        Ok(path) => console::print(&format!("report card: {}", path.display())),
        Err(e) => console::print(&format!(
            "cacheoff: warning: cannot render the report card: {e:#}"
        )),
    }
    let why = disqualified(dir);
    if !why.is_empty() {
        return Err(Failure::run(anyhow::anyhow!(
            "the run is disqualified by the cache-off's rules: {}",
            why.join("; ")
        )));
    }
    Ok(())
}

/// Where the robots send: a proxy or surrogate, none, or the reference
/// proxy started here (`embedded`).
pub struct Target {
    pub via: Via,
    /// Origin servers bound before the run (reverse mode).
    pub bound: Option<std::sync::Arc<BoundServers>>,
    pub embedded: Option<cacheoff_proxy::Proxy>,
}

/// The target of `--proxy`, `--reverse [HOST:PORT]` and `--direct`: a
/// surrogate workload (WebAxe) tests a surrogate unless told otherwise,
/// and with no proxy named the reference proxy is started and tested.
/// `what` names the workload in messages.
pub fn choose_target(workload: &Workload, t: &TargetArgs, what: &str) -> Result<Target, Failure> {
    let (proxy, reverse, direct) = (t.proxy, t.reverse_addr(), t.direct);
    let surrogate = reverse.is_some() || (workload.surrogate && proxy.is_none() && !direct);
    if let Some(p) = proxy.or(reverse.flatten()) {
        if surrogate && workload.servers.port == 0 {
            return Err(Failure::usage(anyhow::anyhow!(
                "--reverse {p}: the surrogate must know the origin servers' addresses before the run: give them a port (--server-port PORT) and configure the surrogate with `cacheoff workload addrmap {what} --server-port PORT`"
            )));
        }
        crate::preflight::check(p)?;
    }
    // Servers are bound first in reverse mode: the address map names them.
    let bound = if surrogate {
        Some(std::sync::Arc::new(
            BoundServers::bind(workload)
                .context("cannot listen on the origin servers' addresses")
                .map_err(Failure::usage)?,
        ))
    } else {
        None
    };
    let embedded = match (proxy, reverse, direct) {
        (None, None, false) if !surrogate => Some(start_reference_proxy(workload, None)?),
        (None, None | Some(None), false) => Some(start_reference_proxy(
            workload,
            bound.as_ref().map(|b| b.addr_map()),
        )?),
        _ => None,
    };
    let target = proxy
        .or(reverse.flatten())
        .or(embedded.as_ref().map(|p| p.addr()));
    let via = match target {
        None => Via::Direct,
        Some(t) if surrogate => Via::Surrogate(t),
        Some(t) => Via::Proxy(t),
    };
    Ok(Target {
        via,
        bound,
        embedded,
    })
}

/// The target of a run over many hosts: the agents' robots reach the
/// proxy or surrogate named, or the reference proxy started here (on
/// loopback: for agents on this machine).
fn fleet_target(workload: &Workload, t: &TargetArgs) -> Result<Target, Failure> {
    let (proxy, reverse, direct) = (t.proxy, t.reverse_addr(), t.direct);
    let surrogate = reverse.is_some() || (workload.surrogate && proxy.is_none() && !direct);
    let named = proxy.or(reverse.flatten());
    if let Some(p) = named {
        crate::preflight::check(p)?;
    }
    let (via, embedded) = match named {
        Some(p) if surrogate => (Via::Surrogate(p), None),
        Some(p) => (Via::Proxy(p), None),
        None if direct => (Via::Direct, None),
        None if surrogate => {
            return Err(Failure::usage(anyhow::anyhow!(
                "with --agents, name the surrogate (--reverse HOST:PORT): the agents' origin servers are known only once they listen"
            )))
        }
        None => {
            let p = start_reference_proxy(workload, None)?;
            (Via::Proxy(p.addr()), Some(p))
        }
    };
    Ok(Target {
        via,
        bound: None,
        embedded,
    })
}

/// Why the run in `dir` fails a cache-off rule (the executive summary's
/// rules: errors, hit ratio), if it does.
pub fn disqualified(dir: &Path) -> Vec<String> {
    let rows = cacheoff_rundir::RunDir::open(dir)
        .ok()
        .and_then(|run| cacheoff_report::compare::rows(&[run], &Default::default(), None).ok());
    rows.into_iter()
        .flatten()
        .flat_map(|r| r.disqualified)
        .collect()
}

/// The reference proxy, sized to the workload's cache size: a forward
/// proxy, or with an address map a surrogate for those servers.
fn start_reference_proxy(
    w: &Workload,
    origins: Option<AddrMap>,
) -> Result<cacheoff_proxy::Proxy, Failure> {
    let mut cfg = cacheoff_proxy::ProxyConfig::new((std::net::Ipv4Addr::LOCALHOST, 0).into());
    if let Some(size) = w.cache_size {
        cfg.memory = size.0;
    }
    if let Some(map) = origins {
        let by_name = map
            .entries()
            .iter()
            .map(|(n, a)| (n.clone(), a.to_string()))
            .collect();
        cfg.upstream = cacheoff_proxy::Upstream::ByHost(std::sync::Arc::new(by_name));
        cfg.targeted = cacheoff_cache::Targeted::cdn();
    }
    cacheoff_proxy::Proxy::start(cfg)
        .context("cannot start the reference proxy")
        .map_err(Failure::run)
}

pub fn reference_label(p: &cacheoff_proxy::Proxy) -> String {
    let c = p.config();
    format!(
        "cacheoff reference proxy {} ({}, {} memory)",
        env!("CARGO_PKG_VERSION"),
        c.policy.name(),
        cacheoff_base::Bytes(c.memory)
    )
}

/// Runs a resolved workload into a new run directory; prints interval
/// lines unless `quiet`.
pub fn run_in(
    dir: &Path,
    workload: Workload,
    proxy: Option<std::net::SocketAddr>,
    workers: usize,
    quiet: bool,
    argv: &[String],
    stop: &StopHandle,
) -> Result<RunResult, Failure> {
    let setup = Setup {
        quiet,
        ..Setup::quiet(workload, proxy.map_or(Via::Direct, Via::Proxy), workers)
    };
    run_setup(dir, setup, argv, stop)
}

/// Everything a run needs besides its directory.
pub struct Setup {
    pub workload: Workload,
    pub via: Via,
    /// Origin servers bound beforehand (a surrogate's address map).
    pub bound: Option<std::sync::Arc<BoundServers>>,
    /// What the proxy under test is (`--label`).
    pub label: Option<String>,
    pub workers: usize,
    /// Only the final summary, not a line per interval.
    pub quiet: bool,
    /// Called once with the run's time zero, as robots are about to start.
    pub on_start: Option<OnStart>,
    /// A trace replayed instead of the workload's plan (`cacheoff replay`).
    pub trace: Option<Replay>,
    /// Live metrics (`--metrics`), fed each interval.
    pub metrics: Option<std::sync::Arc<cacheoff_metrics::RunMetrics>>,
    /// Run on these agents instead of this host (`--agents`).
    pub fleet: Option<cacheoff_fleet::Fleet>,
    /// The test CA (`--tls-dir`); else one in the run directory when
    /// the workload speaks TLS.
    pub tls_dir: Option<PathBuf>,
    /// The product whose spending each interval records.
    pub watch: Option<crate::watch::Watch>,
}

impl Setup {
    /// A quiet run of `workload` reaching the servers `via` on `workers`
    /// workers, with nothing else; callers set the rest by struct update.
    pub fn quiet(workload: Workload, via: Via, workers: usize) -> Setup {
        Setup {
            workload,
            via,
            bound: None,
            label: None,
            workers,
            quiet: true,
            on_start: None,
            trace: None,
            metrics: None,
            fleet: None,
            tls_dir: None,
            watch: None,
        }
    }
}

/// What `cacheoff replay` replays: the requests, and the trace's record
/// for the run directory.
pub struct Replay {
    pub feed: cacheoff_agent::TraceFeed,
    pub replayed: cacheoff_rundir::Replayed,
}

/// See [`Setup::on_start`].
pub type OnStart = Box<dyn FnOnce(std::time::Instant) + Send>;

/// The build running, for manifests.
pub fn build() -> Build {
    Build {
        version: env!("CARGO_PKG_VERSION").into(),
        git_revision: env!("CACHEOFF_GIT_REV").into(),
    }
}

/// In a reverse-mode run directory: the origin servers by name.
pub const ADDR_MAP_FILE: &str = "addrmap.txt";

/// Runs `setup` into the new run directory `dir`.
pub fn run_setup(
    dir: &Path,
    setup: Setup,
    argv: &[String],
    stop: &StopHandle,
) -> Result<RunResult, Failure> {
    let Setup {
        workload,
        via,
        bound,
        label,
        workers,
        quiet,
        on_start,
        trace,
        metrics,
        fleet,
        tls_dir,
        watch,
    } = setup;
    if fleet.is_some() && (workload.robots.tls || tls_dir.is_some()) {
        return Err(Failure::usage(anyhow::anyhow!(
            "HTTPS runs over many hosts are not supported yet: every host would need the same test CA"
        )));
    }
    if let Some(m) = &metrics {
        m.begin(cacheoff_metrics::RunInfo {
            workload: workload.name.clone(),
            mode: match via {
                Via::Direct => "direct",
                Via::Proxy(_) => "forward",
                Via::Surrogate(_) => "reverse",
            },
            phases: workload.phases.iter().map(|p| p.name.clone()).collect(),
            peak_rate: workload.peak_rate.map(|r| r.0),
        });
    }
    let (mode, proxy) = match via {
        Via::Direct => (Mode::Direct, None),
        Via::Proxy(p) => (Mode::Forward, Some(p)),
        Via::Surrogate(p) => (Mode::Reverse, Some(p)),
    };
    let manifest = Manifest::new(
        workload.clone(),
        mode,
        proxy,
        label,
        workers,
        argv,
        &build(),
    );
    // A fleet is reached and checked before the run directory exists.
    let ready = match &fleet {
        Some(f) => Some(crate::fleet_run::prepare(&workload, via, f, dir)?),
        None => None,
    };
    let mut run_dir = RunDir::create(dir, manifest).map_err(|e| match e {
        RunDirError::HoldsARun(_) => Failure::usage(e),
        e => Failure::usage(anyhow::Error::new(e).context("cannot create the run directory")),
    })?;
    let trace = match trace {
        Some(Replay { feed, replayed }) => {
            run_dir
                .replaying(replayed)
                .context("cannot write the run directory")
                .map_err(Failure::run)?;
            Some(feed)
        }
        None => None,
    };
    if !quiet {
        console::print(&format!(
            "cacheoff {} run {}: {} robots, {} servers, {}, {} -> {}",
            env!("CARGO_PKG_VERSION"),
            workload.name,
            workload.robots.count,
            workload.servers.count,
            workload
                .peak_rate
                .map_or("closed-loop".to_string(), |r| format!("peak {r}")),
            match via {
                Via::Direct => "direct (no proxy)".to_string(),
                Via::Proxy(p) => format!("via proxy {p}"),
                Via::Surrogate(p) => format!("to surrogate {p}"),
            },
            dir.display()
        ));
        console::print(console::header());
    }
    if let Some(w) = &watch {
        run_dir
            .watching(w.describe())
            .context("cannot write the run directory")
            .map_err(Failure::run)?;
    }
    let mut recorder = crate::recorder::Recorder {
        dir: &mut run_dir,
        on_start,
        path: dir,
        surrogate: mode == Mode::Reverse,
        quiet,
        xacts_so_far: 0,
        error: None,
        metrics: metrics.clone(),
        watch,
    };
    let stats = match ready {
        Some(ready) => {
            let run = crate::fleet_run::run(ready, &mut recorder, stop)?;
            crate::fleet_run::print_agents(&run.agents);
            run.run
        }
        None => {
            let cfg = RunConfig {
                tls: crate::tls_cmd::test_ca(&workload, tls_dir, dir)?,
                workload,
                via,
                bound,
                workers,
                trace,
                share: None,
            };
            cacheoff_agent::run(cfg, &mut recorder, stop)
                .context("run failed")
                .map_err(Failure::run)?
        }
    };
    if let Some(e) = recorder.error.take() {
        return Err(Failure::run(e));
    }
    let summary = run_dir.finish(&stats).map_err(Failure::run)?;
    if let Some(m) = &metrics {
        m.finish();
    }
    Ok(RunResult {
        dir: dir.to_path_buf(),
        summary,
    })
}
