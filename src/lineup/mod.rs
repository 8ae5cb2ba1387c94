//! `cacheoff lineup`: the cache-off in a box. For each product of the
//! lineup (a product file: `cacheoff_products`) and each of its modes:
//! start it in its own directory, run the workload through it (fill
//! included), then the downtime test (a power cut: [`downtime`]) and the
//! MSL test (`cacheoff_msl`, beside the main run: it only needs the
//! product listening), stop it; one no-proxy baseline per workload; then
//! the executive summary (`cacheoff_report`). Each finished product is
//! written down at once, so an interrupted lineup keeps what it measured.

pub mod downtime;
pub mod file;
pub(crate) mod product;
pub mod spe;
pub(crate) mod summary;

use crate::Failure;
use anyhow::{anyhow, Context};
use cacheoff_agent::{BoundServers, StopHandle, Via};
use cacheoff_products::Mode;
use cacheoff_run::console;
use cacheoff_run::{run_setup, RunResult, Setup};
use cacheoff_workload::{Overrides, Workload};
use file::Lineup;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One product in one mode, as the lineup runs it.
#[derive(Debug, Clone)]
pub struct Contender {
    pub spec: cacheoff_products::ProductSpec,
    pub mode: Mode,
    pub settings: Vec<(String, String)>,
    pub price_usd: Option<f64>,
}

impl Contender {
    /// `squid-forward`: the directory and the row.
    pub fn key(&self) -> String {
        format!("{}-{}", self.spec.name, self.mode.name())
    }
}

/// What the lineup needs besides its file.
pub struct Options {
    pub out: PathBuf,
    /// Worker threads of each run.
    pub workers: usize,
    /// Print only each run's summary table.
    pub quiet: bool,
    /// Live metrics of the run in progress (`--metrics`).
    pub metrics: Option<Arc<cacheoff_metrics::RunMetrics>>,
    /// Live metrics of the Multiplier (`--metrics` with `--spe`).
    pub spe_metrics: Option<Arc<cacheoff_metrics::SpeMetrics>>,
}

impl Options {
    /// A run of the lineup's: its workers, its quietness.
    fn setup(
        &self,
        workload: Workload,
        via: Via,
        bound: Option<Arc<BoundServers>>,
        label: String,
    ) -> Setup {
        let tls_dir = workload.robots.tls.then(|| self.out.join("tls"));
        Setup {
            workload,
            via,
            bound,
            label: Some(label),
            workers: self.workers,
            quiet: self.quiet,
            on_start: None,
            trace: None,
            metrics: self.metrics.clone(),
            fleet: None,
            // One test CA for the whole lineup, made by its first HTTPS
            // run or product.
            tls_dir,
            watch: None,
        }
    }
}

/// What one contender left behind.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    pub key: String,
    pub run_dir: Option<PathBuf>,
    pub downtime_dir: Option<PathBuf>,
    pub msl: Option<product::MslVerdict>,
    /// The product's version, as its binary says.
    pub version: Option<String>,
    /// The peak search (`[peak]`), and the rate it found.
    pub peak_dir: Option<PathBuf>,
    pub peak_rate_xps: Option<f64>,
    /// The conformance suite's score (`[conformance]`).
    pub conformance: Option<cacheoff_rundir::lineup::Conformance>,
    /// Why a step could not be done (the product did not start, …).
    pub failures: Vec<String>,
}

/// Expands the lineup's entries into contenders, checking every product
/// file and mode before anything starts.
pub fn contenders(l: &Lineup) -> Result<Vec<Contender>, Failure> {
    let mut out: Vec<Contender> = Vec::new();
    for e in &l.products {
        let spec = product::spec(&e.name).map_err(Failure::usage)?;
        let modes = if e.modes.is_empty() {
            spec.modes.clone()
        } else {
            e.modes.clone()
        };
        for mode in modes {
            if !spec.modes.contains(&mode) {
                return Err(Failure::usage(anyhow!(
                    "product {}: no {} mode (it has {})",
                    spec.name,
                    mode.name(),
                    spec.modes
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let c = Contender {
                spec: spec.clone(),
                mode,
                settings: e.settings.clone(),
                price_usd: e.price_usd,
            };
            if out.iter().any(|o| o.key() == c.key()) {
                return Err(Failure::usage(anyhow!(
                    "{} is in the lineup twice",
                    c.key()
                )));
            }
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(Failure::usage(anyhow!(
            "the lineup names no product: give --product NAME or [[product]] entries ({})",
            cacheoff_products::ProductSpec::builtin_names().join(", ")
        )));
    }
    Ok(out)
}

/// The workload a contender runs: the lineup's for its mode, with the
/// lineup's settings, then its own.
pub fn workload_for(l: &Lineup, mode: Mode, own: &[(String, String)]) -> Result<Workload, Failure> {
    let mut o = Overrides::default();
    for (k, v) in l.settings.iter().chain(own) {
        o.set(k, v)
            .map_err(|e| Failure::usage(anyhow!("setting {k} = {v:?}: {e}")))?;
    }
    Ok(l.source(mode)?.runnable(&o)?)
}

/// Kills the product under test at once (a second Ctrl-C: the process
/// exits without unwinding).
pub fn kill_current() {
    product::kill_current();
}

/// Runs the lineup into `opts.out`; the summary's rows are returned.
pub fn run(l: &Lineup, opts: &Options, stop: &StopHandle) -> Result<Vec<Finished>, Failure> {
    let all = contenders(l)?;
    // Every workload resolves before anything starts.
    for c in &all {
        workload_for(l, c.mode, &c.settings)?;
    }
    product::check_installed(&all).map_err(Failure::usage)?;
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("cannot create {}", opts.out.display()))
        .map_err(Failure::usage)?;
    let mut finished: Vec<Finished> = Vec::new();
    let mut baselines: Vec<(Mode, PathBuf)> = Vec::new();
    if l.baseline {
        let modes = Mode::ALL
            .into_iter()
            .filter(|m| all.iter().any(|c| c.mode == *m));
        for mode in modes {
            if stop.is_stopped() {
                break;
            }
            let dir = opts.out.join(format!("baseline-{}", mode.name()));
            console::print(&format!("== baseline ({} workload, no proxy)", mode.name()));
            let w = workload_for(l, mode, &[])?;
            run_one(
                &dir,
                opts.setup(w, Via::Direct, None, "no proxy".into()),
                stop,
            )?;
            baselines.push((mode, dir));
        }
    }
    for c in &all {
        if stop.is_stopped() {
            break;
        }
        console::print(&format!("== {} ({})", c.spec.title, c.mode.name()));
        let f = contend(l, c, opts, stop);
        for why in &f.failures {
            console::print(&format!("cacheoff: {}: {why}", c.key()));
        }
        finished.push(f);
        summary::write(l, &all, &finished, &baselines, &opts.out).map_err(Failure::run)?;
    }
    if finished.is_empty() {
        summary::write(l, &all, &finished, &baselines, &opts.out).map_err(Failure::run)?;
    }
    Ok(finished)
}

/// One run into `dir` (the lineup's workers and quietness), printing its
/// summary table.
fn run_one(dir: &Path, setup: Setup, stop: &StopHandle) -> Result<RunResult, Failure> {
    let argv = std::env::args().collect::<Vec<_>>();
    let quiet = setup.quiet;
    let r = run_setup(dir, setup, &argv, stop)?;
    cacheoff_run::finish::print_summary(&r, quiet);
    if let Err(e) = cacheoff_run::finish::report_card(dir) {
        cacheoff_run::finish::warn_no_card(&e);
    }
    Ok(r)
}

/// Start, run, downtime and MSL for one contender; what failed is noted
/// and the lineup goes on.
fn contend(l: &Lineup, c: &Contender, opts: &Options, stop: &StopHandle) -> Finished {
    let mut f = Finished {
        key: c.key(),
        ..Finished::default()
    };
    let dir = opts.out.join(c.key());
    if let Err(e) = contend_in(l, c, &dir, opts, stop, &mut f) {
        f.failures.push(format!("{e:#}"));
    }
    f
}

fn contend_in(
    l: &Lineup,
    c: &Contender,
    dir: &Path,
    opts: &Options,
    stop: &StopHandle,
    f: &mut Finished,
) -> anyhow::Result<()> {
    let w = workload_for(l, c.mode, &c.settings).map_err(|f| f.error)?;
    let bound = Arc::new(BoundServers::bind(&w).context("cannot bind the origin servers")?);
    // A surrogate takes HTTPS with the lineup's test CA; a forward proxy
    // only tunnels it.
    let pki = match (w.robots.tls, c.mode) {
        (true, Mode::Reverse) => cacheoff_run::tls::test_ca(&w, Some(opts.out.join("tls")), dir)?,
        _ => None,
    };
    let running = product::start(c, &w, &bound, dir, None, pki.as_deref())?;
    let addr = running.addr();
    let robots_addr = running.robots_addr();
    let label = running.label();
    f.version = running.version();
    console::print(&format!("{label} listening on {addr}"));
    let running = Arc::new(Mutex::new(running));
    product::set_current(Some(running.clone()));
    let msl = (l.msl.enabled).then(|| product::msl_beside(addr, c.mode, &l.msl));
    let via = match c.mode {
        Mode::Forward => Via::Proxy(addr),
        Mode::Reverse => Via::Surrogate(robots_addr),
    };
    let w = match &l.peak {
        Some(p) if !stop.is_stopped() => {
            peak_first(l, c, p, &w, (via, &bound, &label), dir, opts, stop, f)?
        }
        _ => w,
    };
    // The peak search's requests are in the product's log too.
    let log_before = f
        .peak_dir
        .is_some()
        .then(|| product::log_counts(&running).ok())
        .flatten();
    let run_dir = dir.join("run");
    let setup = Setup {
        watch: product::lock(&running).watch(),
        ..opts.setup(w.clone(), via, Some(bound.clone()), label.clone())
    };
    let main = run_one(&run_dir, setup, stop);
    if main.is_ok() {
        f.run_dir = Some(run_dir.clone());
        product::compare_hits(&running, &run_dir, log_before);
    }
    let main_error = main.err().map(|e| anyhow!("the run failed: {:#}", e.error));
    if main_error.is_none() && l.downtime.enabled && !stop.is_stopped() {
        let dt_dir = dir.join("downtime");
        match downtime_test(l, &w, via, &bound, &running, &dt_dir, &label, opts, stop) {
            Ok(()) => f.downtime_dir = Some(dt_dir),
            Err(e) => f.failures.push(format!("downtime test: {e:#}")),
        }
    }
    if let Some(msl) = msl {
        match msl.join() {
            Ok(Ok(v)) => {
                console::print(&format!(
                    "MSL: TIME-WAIT {:.1} s, {}",
                    v.time_wait_s,
                    if v.pass { "pass" } else { "FAIL (under 60 s)" }
                ));
                f.msl = Some(v);
            }
            // Our set-up, not the product: the verdict stays unknown.
            Ok(Err(e @ cacheoff_msl::MslError::NotPermitted)) => {
                console::print(&format!("cacheoff: MSL test not run: {e}"));
            }
            Ok(Err(e)) => f.failures.push(format!("MSL test: {e}")),
            Err(_) => f
                .failures
                .push("MSL test: the probe thread panicked".into()),
        }
    }
    let stopped = product::stop(&running);
    product::set_current(None);
    if let Some(e) = main_error {
        return Err(e);
    }
    stopped?;
    if l.conform && !stop.is_stopped() {
        match product::conform(c, &dir.join("conform")) {
            Ok(score) => {
                console::print(&format!(
                    "conformance: {} passed, {} failed, {} optional not done ({:.1}% passed)",
                    score.passed,
                    score.failed,
                    score.optional,
                    score.percent()
                ));
                f.conformance = Some(score);
            }
            // Our set-up, not the product's caching: the score stays unknown.
            Err(e) => console::print(&format!("cacheoff: conformance suite not run: {e:#}")),
        }
    }
    Ok(())
}

/// Finds the contender's peak rate (into `DIR/peak`) and returns its
/// workload at that rate (the servers kept: the product knows them);
/// without a peak, the lineup's rate stays and the failure is noted.
#[allow(clippy::too_many_arguments)]
fn peak_first(
    l: &Lineup,
    c: &Contender,
    p: &file::FindPeak,
    w: &Workload,
    (via, bound, label): (Via, &Arc<BoundServers>, &str),
    dir: &Path,
    opts: &Options,
    stop: &StopHandle,
    f: &mut Finished,
) -> anyhow::Result<Workload> {
    let source = l.source(c.mode)?;
    let mut overrides = Overrides::default();
    for (k, v) in l.settings.iter().chain(&c.settings) {
        overrides
            .set(k, v)
            .map_err(|e| anyhow!("setting {k}: {e}"))?;
    }
    overrides.servers = Some(w.servers.count);
    if let Some(step) = p.step {
        overrides.duration = Some(step);
    }
    let argv = std::env::args().collect::<Vec<_>>();
    let peak_dir = dir.join("peak");
    let search = cacheoff_run::peak::Search {
        workload: source,
        overrides,
        limits: p.limits,
        knobs: cacheoff_run::peak::Knobs {
            precision: 0.05,
            max_load: 100_000.0,
            max_steps: 16,
            rest: std::time::Duration::from_secs(2),
            warmup: true,
        },
        via,
        bound: Some(bound.clone()),
        label: Some(label.to_string()),
        workers: opts.workers,
        quiet: opts.quiet,
        argv: &argv,
        stop,
    };
    let found = cacheoff_run::peak::search(&peak_dir, search)?;
    f.peak_dir = Some(peak_dir);
    let Some(rate) = found.peak_rate_xps.filter(|_| !found.closed_loop) else {
        f.failures.push(format!(
            "peak: none found ({}); the lineup's rate stays",
            found.outcome
        ));
        return Ok(w.clone());
    };
    f.peak_rate_xps = Some(rate);
    let own: Vec<(String, String)> = c
        .settings
        .iter()
        .cloned()
        .chain([
            ("rate".to_string(), format!("{rate}/s")),
            ("servers".to_string(), w.servers.count.to_string()),
        ])
        .collect();
    console::print(&format!("{}: peak {rate}/s is its peak rate", c.key()));
    workload_for(l, c.mode, &own).map_err(|e| e.error)
}

#[allow(clippy::too_many_arguments)]
fn downtime_test(
    l: &Lineup,
    main: &Workload,
    via: Via,
    bound: &Arc<BoundServers>,
    running: &Arc<Mutex<product::Running>>,
    dir: &Path,
    label: &str,
    opts: &Options,
    stop: &StopHandle,
) -> anyhow::Result<()> {
    let w = downtime::workload(main, &l.downtime)?;
    let (dark_at, dark) =
        downtime::dark_at(&w).context("the downtime workload has no dark phase")?;
    console::print(&format!(
        "downtime test: {} steady, power cut {:.0} s in, off for {:.1} s",
        l.downtime.rate,
        dark_at.as_secs_f64(),
        dark.as_secs_f64()
    ));
    let board: Arc<Mutex<Option<downtime::Switchboard>>> = Arc::new(Mutex::new(None));
    let switch: Arc<Mutex<dyn downtime::PowerSwitch>> = running.clone();
    let hook_board = board.clone();
    let on_start: cacheoff_run::OnStart = Box::new(move |start| {
        let b = downtime::Switchboard::start(switch, start, dark_at, dark);
        *hook_board.lock().unwrap_or_else(|e| e.into_inner()) = Some(b);
    });
    let setup = Setup {
        quiet: true,
        on_start: Some(on_start),
        watch: product::lock(running).watch(),
        ..opts.setup(w, via, Some(bound.clone()), label.into())
    };
    let r = run_one(dir, setup, stop);
    let board = board.lock().unwrap_or_else(|e| e.into_inner()).take();
    let outage = board.map(downtime::Switchboard::finish);
    r.map_err(|e| e.error)?;
    let outage = outage.context("the run never started")??;
    cacheoff_rundir::write_downtime(dir, outage.power_cut_s, outage.power_on_s)?;
    let run = cacheoff_rundir::RunDir::open(dir)?;
    let d = cacheoff_report::compare::time_till_first(&run);
    let s = |v: Option<f64>| v.map_or("none".into(), |v| format!("{v:.2} s"));
    console::print(&format!(
        "downtime: power on {:.2} s after the cut; first connection {}, TTFM {}, TTFH {}",
        outage.power_on_s - outage.power_cut_s,
        s(d.first_conn_s),
        s(d.ttfm_s),
        s(d.ttfh_s)
    ));
    Ok(())
}
