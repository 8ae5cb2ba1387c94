//! `cacheoff peak`'s steps as runs. The search and its record are
//! `cacheoff_peak::search`'s; here each step is a run through
//! [`run_setup`] into `DIR/step-NN-<load>/` (the warm-up once before them
//! into `DIR/warmup/`), against one target kept for the whole search (the
//! embedded reference proxy stays warm) and one set of origin servers
//! bound once (the URLs, and so the cache, stay the same); `peak.json`
//! (`cacheoff_rundir::peak`) is written after every step and the page at
//! the end.

use crate::target::{Target, TargetSpec};
use crate::workload::Source;
use crate::{console, run_setup, RunError, Setup};
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_peak::{Figures, Limits, Plan, StepRunner, Stop};
use cacheoff_rundir::peak::Peak;
use cacheoff_rundir::{RunDir, Summary};
use cacheoff_workload::{Overrides, PeakRate, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a search goes, besides its limits.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    /// Relative width of the bracket the bisection stops at.
    pub precision: f64,
    /// Highest rate (or robots) tried.
    pub max_load: f64,
    pub max_steps: usize,
    /// Pause between steps.
    pub rest: std::time::Duration,
    /// Run the phases before the plateau once first.
    pub warmup: bool,
}

/// `cacheoff peak` as the command line asked for it.
pub struct PeakPlan {
    pub source: Source,
    /// The settings on the workload, settled for the target.
    pub overrides: Overrides,
    pub target: TargetSpec,
    pub limits: Limits,
    pub knobs: Knobs,
    /// What the proxy under test is; the reference proxy names itself.
    pub label: Option<String>,
    pub workers: usize,
    /// Default: `runs/<timestamp>-<workload>-peak`.
    pub out: Option<PathBuf>,
    /// Only a line per step.
    pub quiet: bool,
}

/// What a finished search leaves behind.
#[derive(Debug)]
pub struct PeakResult {
    pub dir: PathBuf,
    pub peak: Peak,
}

/// Runs `cacheoff peak` (`argv` goes into every step's manifest) until it
/// ends or the first SIGINT/SIGTERM; finding no peak is an error.
pub fn run(plan: PeakPlan, argv: &[String]) -> Result<PeakResult, RunError> {
    let PeakPlan {
        source,
        overrides,
        target,
        limits,
        knobs,
        label,
        workers,
        out,
        quiet,
    } = plan;
    let workload = source.runnable(&overrides)?;
    let dir = out.unwrap_or_else(|| RunDir::default_path(&format!("{}-peak", workload.name)));
    let target = Target::choose(&workload, &target, source.spec(), false)?;
    let label = target.label(label);
    let stop = StopHandle::new();
    crate::signals::stop_runs_on_signals(&stop);
    let s = Search {
        workload: source,
        overrides,
        limits,
        knobs,
        via: target.via,
        bound: target.bound.clone(),
        label,
        workers,
        quiet,
        argv,
        stop: &stop,
    };
    let found = search(&dir, s);
    if let Some(p) = target.embedded {
        p.stop();
    }
    let file = found?;
    if file.peak_rate_xps.is_none() {
        return Err(RunError::NoPeak {
            why: if file.outcome == Stop::NonePassed.name() {
                "no rate kept the limit"
            } else {
                "the best rate failed its repeat runs"
            },
            steps: file.steps.len(),
            dir,
        });
    }
    Ok(PeakResult { dir, peak: file })
}

/// A search against a target that is already there (a proxy started by
/// the caller, or by [`run`]).
pub struct Search<'a> {
    /// The workload, and the settings on it.
    pub workload: Source,
    pub overrides: Overrides,
    pub limits: Limits,
    pub knobs: Knobs,
    pub via: Via,
    /// The origin servers every step uses (bound here when `None`).
    pub bound: Option<Arc<BoundServers>>,
    pub label: Option<String>,
    pub workers: usize,
    /// Warm-up without interval lines.
    pub quiet: bool,
    pub argv: &'a [String],
    pub stop: &'a StopHandle,
}

/// Searches into the new peak directory `dir`: the warm-up, the steps,
/// `peak.json` (after every step) and the page. A search that found no
/// peak is no error here: `peak_rate_xps` is `None`.
pub fn search(dir: &Path, s: Search) -> Result<Peak, RunError> {
    let Search {
        workload: source,
        overrides,
        limits,
        knobs,
        via,
        bound,
        label,
        workers,
        quiet,
        argv,
        stop,
    } = s;
    let closed_loop = overrides.rate == Some(PeakRate::ClosedLoop);
    let workload = source.runnable(&overrides)?;
    let cut = cacheoff_peak::cut(&workload)?;
    let start = if closed_loop {
        f64::from(overrides.robots.unwrap_or(1))
    } else {
        workload.peak_rate.map_or(400.0, |r| r.per_sec())
    };
    if cacheoff_rundir::peak::is_peak(dir) {
        return Err(RunError::HoldsAPeak(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir).map_err(|source| RunError::Mkdir {
        path: dir.to_path_buf(),
        source,
    })?;
    // Forward mode too: the same servers (addresses, URLs) for every step.
    let bound = match bound {
        Some(b) => b,
        None => Arc::new(BoundServers::bind(&workload).map_err(RunError::BindServers)?),
    };
    let mut runner = Runner {
        dir,
        via,
        bound,
        label,
        workers,
        argv,
        stop,
        rest: knobs.rest,
        steps: Steps {
            source,
            overrides,
            closed_loop,
            robots: workload.robots.count,
            servers: workload.servers.count,
        },
    };
    console::print(&format!(
        "cacheoff {} peak {}: {} from {}{}, {} -> {}",
        env!("CARGO_PKG_VERSION"),
        workload.name,
        limits,
        start,
        if closed_loop { " robots" } else { "/s" },
        console::via(&runner.via),
        dir.display()
    ));
    let warm = cut.warmup.filter(|_| knobs.warmup);
    if let Some(warm) = &warm {
        console::print(&format!(
            "warm-up: {} ({})",
            warm.phases
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            cacheoff_base::Dur::secs(warm.phases.iter().map(|p| p.duration.as_secs_f64()).sum())
        ));
    }
    let warmed = warm.is_some();
    if let Some(warm) = warm {
        runner.run("warmup", warm, quiet)?;
    }
    let plan = Plan {
        workload: workload.name.clone(),
        closed_loop,
        start,
        limits,
        precision: knobs.precision,
        max_load: knobs.max_load,
        max_steps: knobs.max_steps,
        warmed,
    };
    let file = cacheoff_peak::search(&plan, &mut runner)?;
    match cacheoff_report::peak::write(dir) {
        Ok(path) => console::print(&format!("report card: {}", path.display())),
        Err(e) => crate::finish::warn_no_card(&e),
    }
    console::print(&match file.peak_rate_xps {
        Some(r) => format!(
            "peak: {r:.1}/s{} keeps {} ({}; {} steps) -> {}",
            file.peak_robots
                .map_or(String::new(), |n| format!(" ({n} robots)")),
            plan.limits,
            file.outcome,
            file.steps.len(),
            dir.join(cacheoff_rundir::peak::PEAK_FILE).display()
        ),
        None => format!("no peak: {} ({} steps)", file.outcome, file.steps.len()),
    });
    Ok(file)
}

/// The settings every step shares, and how one step's workload is made.
struct Steps {
    source: Source,
    overrides: Overrides,
    closed_loop: bool,
    /// Robots and servers of the first resolution, kept by every step so
    /// the origin servers, their objects and the cache's URLs stay.
    robots: u32,
    servers: u32,
}

impl Steps {
    /// The plateau at `load` (a rate, or robots in a closed loop).
    fn at(&self, load: f64) -> Result<Workload, RunError> {
        let mut o = self.overrides.clone();
        o.servers = Some(self.servers);
        if self.closed_loop {
            o.robots = Some(load as u32);
        } else {
            o.rate = Some(PeakRate::PerSecond(cacheoff_base::Rate(load)));
            o.robots = Some(self.robots);
        }
        let w = self.source.runnable(&o)?;
        Ok(cacheoff_peak::cut(&w)?.step)
    }
}

/// Runs workloads into subdirectories of the peak directory, all against
/// one target.
struct Runner<'a> {
    dir: &'a Path,
    via: Via,
    bound: Arc<BoundServers>,
    label: Option<String>,
    workers: usize,
    argv: &'a [String],
    stop: &'a StopHandle,
    rest: std::time::Duration,
    steps: Steps,
}

impl Runner<'_> {
    fn run(&self, name: &str, workload: Workload, quiet: bool) -> Result<Summary, RunError> {
        let setup = Setup {
            bound: Some(self.bound.clone()),
            label: self.label.clone(),
            quiet,
            ..Setup::quiet(workload, self.via, self.workers)
        };
        let r = run_setup(&self.dir.join(name), setup, self.argv, self.stop)?;
        Ok(r.summary)
    }
}

impl StepRunner for Runner<'_> {
    type Error = RunError;
    fn step(&mut self, name: &str, load: f64) -> Result<Figures, RunError> {
        let summary = self.run(name, self.steps.at(load)?, true)?;
        Ok(cacheoff_peak::figures(&summary))
    }
    fn record(&mut self, peak: &Peak) -> Result<(), RunError> {
        peak.write(self.dir)?;
        Ok(())
    }
    fn say(&mut self, line: &str) {
        console::print(line);
    }
    fn rest(&mut self) {
        std::thread::sleep(self.rest);
    }
    fn stopped(&mut self) -> Option<RunError> {
        self.stop.is_stopped().then_some(RunError::Interrupted)
    }
}
