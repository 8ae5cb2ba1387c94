//! `cacheoff run`: resolve the workload, prepare the run directory, run,
//! and write the summary.

use crate::cli::RunArgs;
use crate::console;
use crate::Failure;
use anyhow::Context;
use cacheoff_agent::{RunConfig, Sink, StopHandle};
use cacheoff_rundir::{Build, Manifest, RunDir, RunDirError, Summary};
use cacheoff_stats::IntervalStats;
use cacheoff_workload::{load, Workload};
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
    if o.cache_size.is_none() && a.proxy.is_none() && !a.direct {
        // Testing the reference proxy: its memory store is the cache.
        let proxy = cacheoff_proxy::ProxyConfig::new((std::net::Ipv4Addr::LOCALHOST, 0).into());
        o.cache_size = Some(cacheoff_base::Bytes(proxy.memory));
    }
    let w = load(&a.workload, &o).map_err(Failure::usage)?;
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
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if let Some(p) = a.proxy {
        crate::preflight::check(p)?;
    }
    // No proxy named and no --direct: test the reference proxy.
    let embedded = match (a.proxy, a.direct) {
        (None, false) => Some(start_reference_proxy(&workload)?),
        _ => None,
    };
    let proxy = a.proxy.or(embedded.as_ref().map(|p| p.addr()));
    let label = a
        .label
        .clone()
        .or_else(|| embedded.as_ref().map(reference_label));
    let stop = StopHandle::new();
    install_signal_handlers(&stop);
    let r = run_labelled(&dir, workload, proxy, label, workers, a.quiet, argv, &stop)?;
    if !a.quiet {
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
    match crate::report_cmd::html_report(&dir) {
        Ok(path) => console::print(&format!("report card: {}", path.display())),
        Err(e) => console::print(&format!(
            "cacheoff: warning: cannot render the report card: {e:#}"
        )),
    }
    Ok(r)
}

/// The reference proxy, sized to the workload's cache size.
fn start_reference_proxy(w: &Workload) -> Result<cacheoff_proxy::Proxy, Failure> {
    let mut cfg = cacheoff_proxy::ProxyConfig::new((std::net::Ipv4Addr::LOCALHOST, 0).into());
    if let Some(size) = w.cache_size {
        cfg.memory = size.0;
    }
    cacheoff_proxy::Proxy::start(cfg)
        .context("cannot start the reference proxy")
        .map_err(Failure::run)
}

fn reference_label(p: &cacheoff_proxy::Proxy) -> String {
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
    run_labelled(dir, workload, proxy, None, workers, quiet, argv, stop)
}

/// The build running, for manifests.
pub fn build() -> Build {
    Build {
        version: env!("CARGO_PKG_VERSION").into(),
        git_revision: env!("CACHEOFF_GIT_REV").into(),
    }
}

/// The run directory and the console, fed by the run-time.
struct Recorder<'a> {
    dir: &'a mut RunDir,
    quiet: bool,
    xacts_so_far: u64,
    /// The first write that failed; the run goes on and fails at the end.
    error: Option<RunDirError>,
}

impl Sink for Recorder<'_> {
    fn started(&mut self, servers: &[std::net::SocketAddr]) {
        if let Err(e) = self.dir.servers_bound(servers) {
            self.error.get_or_insert(e);
        }
    }
    fn interval(&mut self, iv: &IntervalStats) {
        match self.dir.interval(iv) {
            Ok(r) => {
                self.xacts_so_far += r.stats.xacts;
                if !self.quiet {
                    console::print(&console::interval_line(&r, self.xacts_so_far));
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
    fn warn(&mut self, message: &str) {
        eprintln!("cacheoff: warning: {message}");
    }
}

/// [`run_in`] with a label for the proxy under test (`--label`).
#[allow(clippy::too_many_arguments)]
pub fn run_labelled(
    dir: &Path,
    workload: Workload,
    proxy: Option<std::net::SocketAddr>,
    label: Option<String>,
    workers: usize,
    quiet: bool,
    argv: &[String],
    stop: &StopHandle,
) -> Result<RunResult, Failure> {
    let manifest = Manifest::new(workload.clone(), proxy, label, workers, argv, &build());
    let mut run_dir = RunDir::create(dir, manifest).map_err(|e| match e {
        RunDirError::HoldsARun(_) => Failure::usage(e),
        e => Failure::usage(anyhow::Error::new(e).context("cannot create the run directory")),
    })?;
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
            proxy.map_or("direct (no proxy)".to_string(), |p| format!(
                "via proxy {p}"
            )),
            dir.display()
        ));
        console::print(console::header());
    }
    let mut recorder = Recorder {
        dir: &mut run_dir,
        quiet,
        xacts_so_far: 0,
        error: None,
    };
    let cfg = RunConfig {
        workload,
        proxy,
        workers,
    };
    let stats = cacheoff_agent::run(cfg, &mut recorder, stop)
        .context("run failed")
        .map_err(Failure::run)?;
    if let Some(e) = recorder.error.take() {
        return Err(Failure::run(e));
    }
    let summary = run_dir.finish(&stats).map_err(Failure::run)?;
    Ok(RunResult {
        dir: dir.to_path_buf(),
        summary,
    })
}

/// First SIGINT/SIGTERM stops the run gracefully; a second exits at once.
fn install_signal_handlers(stop: &StopHandle) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let stop = stop.clone();
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if stop.is_stopped() {
                std::process::exit(130);
            }
            eprintln!("cacheoff: stopping (finishing the current interval; signal again to abort)");
            stop.stop();
        }
    });
}
