//! `cacheoff run`: resolve the workload, prepare the run directory, run,
//! and write the summary.

use crate::cli::{RateArg, RunArgs};
use crate::console;
use crate::rundir::{self, Manifest};
use crate::Failure;
use anyhow::Context;
use cacheoff_agent::{RunConfig, RunOutcome, Sink, StopHandle};
use cacheoff_stats::log::IntervalLog;
use cacheoff_stats::{IntervalRecord, Summary};
use cacheoff_workload::{load, Dist, Overrides, Quantity, Workload};
use std::path::{Path, PathBuf};

/// What a finished `run` leaves behind.
#[derive(Debug)]
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// Turns command-line settings into the resolved workload.
pub fn resolve_workload(a: &RunArgs) -> Result<Workload, Failure> {
    let dist = |q: Quantity, s: &Option<String>| -> Result<Option<Dist>, Failure> {
        s.as_deref()
            .map(|t| Dist::parse(q, t).map_err(Failure::usage))
            .transpose()
    };
    let o = Overrides {
        rate: a.rate.map(|r| match r {
            RateArg::PerSecond(r) => Some(r),
            RateArg::Max => None,
        }),
        robots: a.robots,
        servers: a.servers,
        duration: a.duration,
        warmup: a.warmup,
        plateau: a.plateau,
        // Testing the reference proxy: its memory store is the cache.
        cache_size: a.cache_size.or_else(|| {
            (a.proxy.is_none() && !a.direct).then(|| {
                cacheoff_base::Bytes(
                    cacheoff_proxy::ProxyConfig::new((std::net::Ipv4Addr::LOCALHOST, 0).into())
                        .memory,
                )
            })
        }),
        fill_rate: a.fill_rate,
        seed: a.seed,
        size: dist(Quantity::Size, &a.size)?,
        think_time: dist(Quantity::Time, &a.think_time)?,
        robot_ips: a.robot_ips,
        server_ips: a.server_ips,
        server_port: a.server_port,
        max_conns: a.max_conns,
    };
    let w = load(&a.workload, &o).map_err(Failure::usage)?;
    w.check_runnable().map_err(Failure::usage)?;
    Ok(w)
}

struct FileAndConsole {
    log: IntervalLog,
    quiet: bool,
    xacts_so_far: u64,
    write_error: Option<std::io::Error>,
}

impl Sink for FileAndConsole {
    fn interval(&mut self, r: &IntervalRecord) {
        if let Err(e) = self.log.append(r) {
            self.write_error.get_or_insert(e);
        }
        self.xacts_so_far += r.stats.xacts;
        if !self.quiet {
            console::print(&console::interval_line(r, self.xacts_so_far));
        }
    }
}

/// Runs `cacheoff run` with its arguments; `argv` goes into the manifest.
pub fn run(a: &RunArgs, argv: &[String]) -> Result<RunResult, Failure> {
    let workload = resolve_workload(a)?;
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| rundir::default_dir(&workload.name));
    rundir::create(&dir)
        .with_context(|| format!("cannot create run directory {}", dir.display()))
        .map_err(Failure::usage)?;
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
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

/// Runs a resolved workload into an existing, empty run directory; prints
/// interval lines unless `quiet`.
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
    let mut manifest = Manifest {
        label,
        format: rundir::MANIFEST_FORMAT.into(),
        version: cacheoff_stats::FORMAT_VERSION,
        command_line: argv.to_vec(),
        cacheoff_version: env!("CARGO_PKG_VERSION").into(),
        git_revision: env!("CACHEOFF_GIT_REV").into(),
        started_at: rundir::now_rfc3339(),
        finished_at: None,
        seed: workload.seed,
        proxy,
        workers,
        host: rundir::probe_host(),
        servers: Vec::new(),
        workload: workload.clone(),
    };
    let log = IntervalLog::create(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))
        .map_err(Failure::run)?;
    let mut sink = FileAndConsole {
        log,
        quiet,
        xacts_so_far: 0,
        write_error: None,
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
            proxy.map_or("direct (no proxy)".to_string(), |p| format!(
                "via proxy {p}"
            )),
            dir.display()
        ));
        console::print(console::header());
    }
    struct Starter<'a> {
        inner: &'a mut FileAndConsole,
        manifest: &'a mut Manifest,
        dir: &'a Path,
        err: Option<std::io::Error>,
    }
    impl Sink for Starter<'_> {
        fn started(&mut self, servers: &[std::net::SocketAddr]) {
            self.manifest.servers = servers.to_vec();
            if let Err(e) = rundir::write_manifest(self.dir, self.manifest) {
                self.err = Some(e);
            }
        }
        fn interval(&mut self, r: &IntervalRecord) {
            self.inner.interval(r);
        }
        fn warn(&mut self, message: &str) {
            eprintln!("cacheoff: warning: {message}");
        }
    }
    let mut starter = Starter {
        inner: &mut sink,
        manifest: &mut manifest,
        dir,
        err: None,
    };
    let cfg = RunConfig {
        workload,
        proxy,
        workers,
    };
    let outcome: RunOutcome = cacheoff_agent::run(cfg, &mut starter, stop)
        .context("run failed")
        .map_err(Failure::run)?;
    if let Some(e) = starter.err.take() {
        return Err(Failure::run(
            anyhow::Error::new(e).context("cannot write manifest.json"),
        ));
    }
    manifest.finished_at = Some(rundir::now_rfc3339());
    rundir::write_manifest(dir, &manifest)
        .context("cannot write manifest.json")
        .map_err(Failure::run)?;
    rundir::write_summary(dir, &outcome.summary)
        .context("cannot write summary.json")
        .map_err(Failure::run)?;
    if let Some(e) = sink.write_error {
        return Err(Failure::run(
            anyhow::Error::new(e).context("cannot append to intervals.jsonl"),
        ));
    }
    Ok(RunResult {
        dir: dir.to_path_buf(),
        summary: outcome.summary,
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
