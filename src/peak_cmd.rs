//! `cacheoff peak`: the peak finder. Orchestration only: the search, the
//! limits and the phase cut are `cacheoff_peak`'s, `peak.json` is
//! `cacheoff_rundir::peak`'s, each step is a run through
//! [`cacheoff_run::run_setup`] into `DIR/step-NN-<load>/` (the warm-up once
//! before them into `DIR/warmup/`), against one target kept for the whole
//! search (the embedded reference proxy stays warm) and one set of origin
//! servers bound once (the URLs, and so the cache, stay the same).

use crate::cli::WorkloadArgs;
use crate::Failure;
use anyhow::Context;
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_base::Dur;
use cacheoff_base::Rate;
use cacheoff_peak::{Figures, Limits, Outcome, Role, SearchConfig, Stop};
use cacheoff_run::workload::Source;
use cacheoff_run::{console, run_setup, Setup, Target};
use cacheoff_rundir::peak::{Limit, Peak, PeakStep, PEAK_FORMAT, PEAK_VERSION};
use cacheoff_rundir::{RunDir, Summary};
use cacheoff_workload::{Overrides, PeakRate, Workload};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `cacheoff peak`'s arguments (its variant is in `cli`).
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit status: 0 a peak was found and confirmed, 1 none was (no rate kept the limit, or the repeat failed), 2 bad input or set-up."
)]
pub struct PeakArgs {
    /// Workload whose measured phase is stepped (a built-in, a workload
    /// file or a Web Polygraph `.pg` file).
    pub workload: String,
    #[command(flatten)]
    pub pgl: crate::cli::PglArgs,
    #[command(flatten)]
    pub target: crate::cli::TargetArgs,
    /// The response-time limit every step must keep, from the intended
    /// start: `mean<=TIME` or `p99<=TIME` (e.g. 'p99<=50ms').
    #[arg(long, value_name = "STAT<=TIME")]
    pub rt_limit: String,
    /// Most errors a step may have, in percent of requests.
    #[arg(long, value_name = "PCT%", default_value = "0.1%")]
    pub error_limit: String,
    /// Stop bisecting once the bracket is this narrow (relative).
    #[arg(long, value_name = "PCT%", default_value = "5%")]
    pub precision: String,
    /// Highest rate (or closed-loop robots) tried.
    #[arg(long, value_name = "N", default_value = "100000")]
    pub max_load: f64,
    /// Most steps before the confirmation (rechecks of failed steps not
    /// counted).
    #[arg(long, value_name = "N", default_value = "16")]
    pub max_steps: usize,
    /// Pause between steps, for the proxy to drain what a failed step
    /// left queued.
    #[arg(long, value_name = "TIME", default_value = "2s")]
    pub rest: Dur,
    /// Skip the warm-up (the phases before the plateau).
    #[arg(long)]
    pub no_warmup: bool,
    /// What the proxy under test is, for reports.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    // --rate (the first step's; `max` steps robots instead), --plateau, ...
    #[command(flatten)]
    pub settings: WorkloadArgs,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Output directory: peak.json, warmup/ and a run directory per step
    /// (default: runs/<timestamp>-<workload>-peak).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only a line per step.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// What a finished search leaves behind.
#[derive(Debug)]
pub struct PeakResult {
    pub dir: PathBuf,
    pub peak: Peak,
}

/// The figures of a step's measured phase (the whole run without one).
pub fn figures(s: &Summary) -> Figures {
    let e = s
        .measured_phase
        .as_ref()
        .and_then(|m| s.phases.iter().find(|p| &p.name == m))
        .unwrap_or(&s.total);
    Figures {
        rate_xps: e.rate_xps,
        xacts: e.xacts,
        rt_ms_mean: e.rt_ms.all.mean,
        rt_ms_p99: e.rt_ms.all.p99,
        error_pct: e.errors.percent,
    }
}

/// The settings every step shares, and how one step's workload is made.
struct Plan {
    source: Source,
    overrides: Overrides,
    closed_loop: bool,
    /// Robots and servers of the first resolution, kept by every step so
    /// the origin servers, their objects and the cache's URLs stay.
    robots: u32,
    servers: u32,
}

impl Plan {
    /// The plateau at `load` (a rate, or robots in a closed loop).
    fn step(&self, load: f64) -> Result<Workload, Failure> {
        let mut o = self.overrides.clone();
        o.servers = Some(self.servers);
        if self.closed_loop {
            o.robots = Some(load as u32);
        } else {
            o.rate = Some(PeakRate::PerSecond(Rate(load)));
            o.robots = Some(self.robots);
        }
        let w = self.source.runnable(&o)?;
        Ok(cacheoff_peak::cut(&w).map_err(Failure::usage)?.step)
    }
}

fn parse_pct(flag: &str, text: &str) -> Result<f64, Failure> {
    cacheoff_peak::parse_error_pct(text)
        .map_err(|e| Failure::usage(anyhow::anyhow!("--{flag} {e}")))
}

/// A step's directory name: `step-03-262.5xps`, `step-04-8robots`.
fn step_name(n: usize, load: f64, closed_loop: bool) -> String {
    if closed_loop {
        format!("step-{n:02}-{load}robots")
    } else {
        format!("step-{n:02}-{load}xps")
    }
}

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

/// A search against a target that is already there (a proxy started by
/// the caller, or by `run`).
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

/// Runs `cacheoff peak`; `argv` goes into every step's manifest.
pub fn run(a: &PeakArgs, argv: &[String]) -> Result<PeakResult, Failure> {
    let limits = Limits::parse(&a.rt_limit, Some(&a.error_limit))
        .map_err(|e| Failure::usage(anyhow::anyhow!("--rt-limit/--error-limit {e}")))?;
    let precision = parse_pct("precision", &a.precision)? / 100.0;
    if precision <= 0.0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--precision {}: must be above 0%",
            a.precision
        )));
    }
    let spec = a.target.spec();
    let mut overrides = a.settings.0.clone();
    spec.settle(&mut overrides);
    let source = Source::open(&a.workload, &a.pgl.options())?;
    let workload = source.runnable(&overrides)?;
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| RunDir::default_path(&format!("{}-peak", workload.name)));
    let target = Target::choose(&workload, &spec, &a.workload, false)?;
    let label = target.label(a.label.clone());
    let stop = StopHandle::new();
    cacheoff_run::signals::stop_runs_on_signals(&stop);
    let s = Search {
        workload: source,
        overrides,
        limits,
        knobs: Knobs {
            precision,
            max_load: a.max_load,
            max_steps: a.max_steps,
            rest: a.rest.0,
            warmup: !a.no_warmup,
        },
        via: target.via,
        bound: target.bound.clone(),
        label,
        workers: crate::cli::workers(a.workers),
        quiet: a.quiet,
        argv,
        stop: &stop,
    };
    let found = search(&dir, s);
    if let Some(p) = target.embedded {
        p.stop();
    }
    let file = found?;
    if file.peak_rate_xps.is_none() {
        return Err(Failure::run(anyhow::anyhow!(
            "no peak: {} ({} steps; {})",
            if file.outcome == Stop::NonePassed.name() {
                "no rate kept the limit"
            } else {
                "the best rate failed its repeat runs"
            },
            file.steps.len(),
            dir.display()
        )));
    }
    Ok(PeakResult { dir, peak: file })
}

/// Searches into the new peak directory `dir`: the warm-up, the steps,
/// `peak.json` (after every step) and the page. A search that found no
/// peak is no error here: `peak_rate_xps` is `None`.
pub fn search(dir: &Path, s: Search) -> Result<Peak, Failure> {
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
    let cut = cacheoff_peak::cut(&workload).map_err(Failure::usage)?;
    let start = if closed_loop {
        f64::from(overrides.robots.unwrap_or(1))
    } else {
        workload.peak_rate.map_or(400.0, |r| r.per_sec())
    };
    if cacheoff_rundir::peak::is_peak(dir) {
        return Err(Failure::usage(anyhow::anyhow!(
            "{} already holds a peak search (peak.json exists)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
        .map_err(Failure::usage)?;
    // Forward mode too: the same servers (addresses, URLs) for every step.
    let bound = match bound {
        Some(b) => b,
        None => Arc::new(
            BoundServers::bind(&workload)
                .context("cannot listen on the origin servers' addresses")
                .map_err(Failure::usage)?,
        ),
    };
    let plan = Plan {
        source,
        overrides,
        closed_loop,
        robots: workload.robots.count,
        servers: workload.servers.count,
    };
    let runner = Runner {
        dir,
        via,
        bound,
        label,
        workers,
        argv,
        stop,
    };
    let mut file = Peak {
        format: PEAK_FORMAT.into(),
        version: PEAK_VERSION,
        workload: workload.name.clone(),
        closed_loop,
        peak_rate_xps: None,
        peak_robots: None,
        outcome: "searching".into(),
        precision: knobs.precision,
        limit: Limit {
            text: limits.to_string(),
            rt_stat: limits.rt.stat.name().into(),
            rt_ms: limits.rt.ms,
            error_pct: limits.error_pct,
        },
        warmup_dir: None,
        steps: Vec::new(),
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
    if let (Some(warm), true) = (cut.warmup, knobs.warmup) {
        console::print(&format!(
            "warm-up: {} ({})",
            warm.phases
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            cacheoff_base::Dur::secs(warm.phases.iter().map(|p| p.duration.as_secs_f64()).sum())
        ));
        runner.run("warmup", warm, quiet)?;
        file.warmup_dir = Some("warmup".into());
    }
    file.write(dir).map_err(Failure::run)?;
    let cfg = SearchConfig {
        precision: knobs.precision,
        max: knobs.max_load,
        max_steps: knobs.max_steps,
        whole: closed_loop,
        ..SearchConfig::new(start)
    };
    let mut n = 0;
    let outcome = cacheoff_peak::find(&cfg, &limits, |load, role| {
        if stop.is_stopped() {
            return Err(Failure::run(anyhow::anyhow!("interrupted")));
        }
        if n > 0 || file.warmup_dir.is_some() {
            std::thread::sleep(knobs.rest);
        }
        n += 1;
        let name = step_name(n, load, closed_loop);
        let summary = runner.run(&name, plan.step(load)?, true)?;
        let f = figures(&summary);
        let pass = limits.judge(&f);
        file.steps.push(PeakStep {
            rate_xps: if closed_loop { f.rate_xps } else { load },
            robots: closed_loop.then_some(load as u32),
            throughput_xps: f.rate_xps,
            rt_ms_mean: f.rt_ms_mean,
            rt_ms_p99: f.rt_ms_p99,
            error_pct: f.error_pct,
            pass,
            confirm: role == Role::Confirm,
            recheck: role == Role::Recheck,
            dir: name,
        });
        file.write(dir).map_err(Failure::run)?;
        console::print(&step_line(n, load, closed_loop, role, &f, pass));
        Ok(f)
    })?;
    conclude(&mut file, &outcome, closed_loop);
    file.write(dir).map_err(Failure::run)?;
    match crate::report_cmd::html_report(dir) {
        Ok(path) => console::print(&format!("report card: {}", path.display())),
        Err(e) => console::print(&format!(
            "cacheoff: warning: cannot render the report card: {e:#}"
        )),
    }
    console::print(&match file.peak_rate_xps {
        Some(r) => format!(
            "peak: {r:.1}/s{} keeps {} ({}; {} steps) -> {}",
            file.peak_robots
                .map_or(String::new(), |n| format!(" ({n} robots)")),
            limits,
            file.outcome,
            file.steps.len(),
            dir.join(cacheoff_rundir::peak::PEAK_FILE).display()
        ),
        None => format!("no peak: {} ({} steps)", file.outcome, file.steps.len()),
    });
    Ok(file)
}

/// The search's result into the file.
fn conclude(file: &mut Peak, outcome: &Outcome, closed_loop: bool) {
    file.outcome = outcome.stop.name().into();
    file.peak_rate_xps = match (outcome.peak, outcome.peak_figures) {
        (Some(_), Some(f)) if closed_loop => Some(f.rate_xps),
        (Some(load), _) => Some(load),
        _ => None,
    };
    file.peak_robots = outcome.peak.filter(|_| closed_loop).map(|l| l as u32);
}

fn step_line(n: usize, load: f64, closed: bool, role: Role, f: &Figures, pass: bool) -> String {
    format!(
        "step {n:2}{} {:>10}: {:8.1} xact/s, rt mean {:7.1} ms, p99 {:7.1} ms, errors {:5.2}%  {}",
        match role {
            Role::Probe => "",
            Role::Confirm => " (repeat)",
            Role::Recheck => " (recheck)",
        },
        if closed {
            format!("{load} robots")
        } else {
            format!("{load}/s")
        },
        f.rate_xps,
        f.rt_ms_mean,
        f.rt_ms_p99,
        f.error_pct,
        if pass { "pass" } else { "FAIL" }
    )
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
}

impl Runner<'_> {
    fn run(&self, name: &str, workload: Workload, quiet: bool) -> Result<Summary, Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_named_by_their_load() {
        assert_eq!(step_name(3, 262.5, false), "step-03-262.5xps");
        assert_eq!(step_name(12, 8.0, true), "step-12-8robots");
    }
}
