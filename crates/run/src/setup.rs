//! One run into a new run directory: what it needs ([`Setup`]), the
//! manifest, the run-time (here, or on a fleet's agents) feeding the
//! directory and the console through the [`Recorder`], and the summary.

use crate::recorder::{OnStart, Recorder};
use crate::watch::Watch;
use crate::{console, RunError};
use cacheoff_agent::{BoundServers, RunConfig, StopHandle, Via};
use cacheoff_rundir::{Build, Manifest, Mode, RunDir, RunDirError, Summary};
use cacheoff_workload::Workload;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a finished run leaves behind.
#[derive(Debug)]
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// Everything a run needs besides its directory.
pub struct Setup {
    pub workload: Workload,
    pub via: Via,
    /// Origin servers bound beforehand (a surrogate's address map).
    pub bound: Option<Arc<BoundServers>>,
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
    pub metrics: Option<Arc<cacheoff_metrics::RunMetrics>>,
    /// Run on these agents instead of this host (`--agents`).
    pub fleet: Option<cacheoff_fleet::Fleet>,
    /// The test CA (`--tls-dir`); else one in the run directory when
    /// the workload speaks TLS.
    pub tls_dir: Option<PathBuf>,
    /// The product whose spending each interval records.
    pub watch: Option<Watch>,
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

/// The build running, for manifests and the fleet's version check.
pub fn build() -> Build {
    Build {
        version: env!("CARGO_PKG_VERSION").into(),
        git_revision: env!("CACHEOFF_GIT_REV").into(),
    }
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
) -> Result<RunResult, RunError> {
    let setup = Setup {
        quiet,
        ..Setup::quiet(workload, proxy.map_or(Via::Direct, Via::Proxy), workers)
    };
    run_setup(dir, setup, argv, stop)
}

/// Runs `setup` into the new run directory `dir`; `argv` goes into the
/// manifest.
pub fn run_setup(
    dir: &Path,
    setup: Setup,
    argv: &[String],
    stop: &StopHandle,
) -> Result<RunResult, RunError> {
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
        return Err(RunError::FleetTls);
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
        Some(f) => Some(crate::fleet::prepare(&workload, via, f, dir)?),
        None => None,
    };
    let mut run_dir = RunDir::create(dir, manifest).map_err(|e| match e {
        RunDirError::HoldsARun(_) => RunError::HoldsARun(e),
        e => RunError::CreateDir(e),
    })?;
    let trace = match trace {
        Some(Replay { feed, replayed }) => {
            run_dir.replaying(replayed).map_err(RunError::WriteDir)?;
            Some(feed)
        }
        None => None,
    };
    if !quiet {
        console::print(&console::run_line(&workload, via, dir));
        console::print(console::header());
    }
    if let Some(w) = &watch {
        run_dir.watching(w.describe()).map_err(RunError::WriteDir)?;
    }
    let mut recorder = Recorder {
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
            let run = crate::fleet::run(ready, &mut recorder, stop)?;
            crate::fleet::print_agents(&run.agents);
            run.run
        }
        None => {
            let cfg = RunConfig {
                tls: crate::tls::test_ca(&workload, tls_dir, dir)?,
                workload,
                via,
                bound,
                workers,
                trace,
                share: None,
            };
            cacheoff_agent::run(cfg, &mut recorder, stop).map_err(RunError::Agent)?
        }
    };
    if let Some(e) = recorder.error.take() {
        return Err(e.into());
    }
    let summary = run_dir.finish(&stats)?;
    if let Some(m) = &metrics {
        m.finish();
    }
    Ok(RunResult {
        dir: dir.to_path_buf(),
        summary,
    })
}
