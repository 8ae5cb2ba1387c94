//! `cacheoff run` as a whole: the target chosen, live metrics, the run,
//! a `.pg` file kept beside it, and the verdict; the part every command
//! that runs one shares (`measure`, with its `Output`).

use crate::finish::conclude;
use crate::metrics::Metrics;
use crate::target::{Target, TargetSpec};
use crate::watch::Watch;
use crate::workload::Source;
use crate::{run_setup, RunError, RunResult, Setup};
use cacheoff_agent::StopHandle;
use cacheoff_rundir::RunDir;
use cacheoff_workload::Workload;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A run as the command line asked for it, its workload resolved.
pub struct RunPlan {
    /// Where the workload came from (a `.pg` file is kept in the run
    /// directory).
    pub source: Source,
    /// The workload, runnable (`Source::runnable`).
    pub workload: Workload,
    pub target: TargetSpec,
    /// Run on these agents instead of this host (`--agents`).
    pub fleet: Option<cacheoff_fleet::Fleet>,
    /// The test CA (`--tls-dir`).
    pub tls_dir: Option<PathBuf>,
    pub output: Output,
}

/// How a run is named, sized and kept, alike for every command that
/// runs one (`run`, `replay`).
pub struct Output {
    /// What the proxy under test is (`--label`); the reference proxy
    /// names itself.
    pub label: Option<String>,
    pub workers: usize,
    /// The run directory (default: `runs/<timestamp>-<workload>`).
    pub out: Option<PathBuf>,
    /// Only the final summary, not a line per interval.
    pub quiet: bool,
    /// Serve live metrics here (`--metrics`).
    pub metrics: Option<SocketAddr>,
    /// What to watch (`--watch PID|CGROUP-PATH`); the embedded reference
    /// proxy is watched without it.
    pub watch: Option<String>,
}

/// Runs `plan` (`argv` goes into the manifest) until it ends or the first
/// SIGINT/SIGTERM, then concludes: a disqualified run is an error.
pub fn run(plan: RunPlan, argv: &[String]) -> Result<RunResult, RunError> {
    let RunPlan {
        source,
        workload,
        target,
        fleet,
        tls_dir,
        output,
    } = plan;
    let t = Target::choose(&workload, &target, source.spec(), fleet.is_some())?;
    let how = How {
        trace: None,
        fleet,
        tls_dir,
    };
    measure(workload, t, &output, how, argv, |r| source.keep(&r.dir))
}

/// What only some runs have: a trace's feed, agents, a test CA.
pub(crate) struct How {
    pub trace: Option<crate::Replay>,
    pub fleet: Option<cacheoff_fleet::Fleet>,
    pub tls_dir: Option<PathBuf>,
}

/// Runs `workload` through `t` into `output`'s directory, with live
/// metrics and the watch, stopping at the first SIGINT/SIGTERM; `after`
/// sees the run before its verdict.
pub(crate) fn measure(
    workload: Workload,
    t: Target,
    output: &Output,
    how: How,
    argv: &[String],
    after: impl FnOnce(&RunResult),
) -> Result<RunResult, RunError> {
    let dir = output
        .out
        .clone()
        .unwrap_or_else(|| RunDir::default_path(&workload.name));
    let label = t.label(output.label.clone());
    let Target {
        via,
        bound,
        embedded,
    } = t;
    let stop = StopHandle::new();
    crate::signals::stop_runs_on_signals(&stop);
    let metrics = output
        .metrics
        .map(|addr| Metrics::start(addr, embedded.as_ref()))
        .transpose()?;
    let setup = Setup {
        workload,
        via,
        bound,
        label,
        workers: output.workers,
        quiet: output.quiet,
        on_start: None,
        trace: how.trace,
        metrics: metrics.as_ref().map(|m| m.run.clone()),
        fleet: how.fleet,
        tls_dir: how.tls_dir,
        watch: Watch::for_run(output.watch.as_deref(), embedded.is_some())?,
    };
    let r = run_setup(&dir, setup, argv, &stop)?;
    after(&r);
    let verdict = conclude(&r, embedded, output.quiet);
    if let Some(m) = metrics {
        m.linger();
    }
    verdict.map(|()| r)
}
