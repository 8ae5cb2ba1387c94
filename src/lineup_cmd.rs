//! `cacheoff lineup`: reads the lineup, applies the command line, runs it
//! ([`crate::lineup`]) and turns the summary into the exit status.

use crate::cli::LineupArgs;
use crate::lineup::file::{Entry, Lineup};
use crate::lineup::{self, Options};
use crate::Failure;
use cacheoff_agent::StopHandle;
use cacheoff_run::console;
use std::path::PathBuf;

pub fn run(a: &LineupArgs) -> Result<(), Failure> {
    let mut l = match &a.file {
        Some(path) => Lineup::load(path).map_err(Failure::usage)?,
        None => Lineup::default(),
    };
    if !a.products.is_empty() {
        l.products = Vec::new();
        for (name, mode) in &a.products {
            match l.products.iter_mut().find(|e| &e.name == name) {
                Some(e) if mode.is_some() => e.modes.extend(*mode),
                _ => l.products.push(Entry {
                    name: name.clone(),
                    modes: mode.iter().copied().collect(),
                    settings: Vec::new(),
                    price_usd: None,
                }),
            }
        }
    }
    for (flag, value) in [
        ("peak-rate", &a.peak_rate),
        ("cache-size", &a.cache_size),
        ("plateau", &a.plateau),
        ("tls", &a.tls.then(|| "on".to_string())),
        ("http", &a.http),
    ] {
        if let Some(v) = value {
            cacheoff_workload::Overrides::default()
                .set(flag, v)
                .map_err(|e| Failure::usage(anyhow::anyhow!("--{flag} {v:?}: {e}")))?;
            l.set(flag, v.clone());
        }
    }
    if let Some(rt) = &a.find_peak {
        let (errors, step) = match &l.peak {
            Some(p) => (
                Some(format!("{}%", p.limits.error_pct)),
                p.step.map(|d| d.to_string()),
            ),
            None => (None, None),
        };
        l.peak = Some(
            crate::lineup::file::FindPeak::parse(rt, errors.as_deref(), step)
                .map_err(|e| Failure::usage(anyhow::anyhow!("--find-peak: {e:#}")))?,
        );
    }
    l.open_workloads(&a.pgl)?;
    l.downtime.enabled &= !a.no_downtime;
    l.msl.enabled &= !a.no_msl;
    l.conform &= !a.no_conform;
    let out = a.out.clone().unwrap_or_else(|| {
        let stamp = cacheoff_rundir::now_rfc3339().replace([':', '.'], "");
        PathBuf::from("lineups").join(stamp)
    });
    if out.join(cacheoff_rundir::lineup::SUMMARY_FILE).exists() {
        return Err(Failure::usage(anyhow::anyhow!(
            "{} holds a lineup already; name another --out",
            out.display()
        )));
    }
    // The runs' families (and the Multiplier's with --spe), served for
    // the whole lineup: counters add up over its runs.
    let mut reg = cacheoff_metrics::Registry::default();
    let (run_metrics, spe_metrics) = (
        cacheoff_metrics::RunMetrics::register(&mut reg),
        cacheoff_metrics::SpeMetrics::register(&mut reg, &[]),
    );
    let _server = a
        .metrics
        .map(|addr| cacheoff_run::metrics::serve_metrics(addr, reg))
        .transpose()?;
    let opts = Options {
        out: out.clone(),
        workers: crate::cli::workers(a.workers),
        quiet: a.quiet,
        metrics: a.metrics.map(|_| run_metrics),
        spe_metrics: a.metrics.map(|_| spe_metrics),
    };
    let stop = StopHandle::new();
    let interrupted = cacheoff_run::signals::on_signals(
        &stop,
        "stopping the lineup (the product under test is stopped)",
        lineup::kill_current,
    );
    if a.spe {
        return spe(&l, &opts, &stop, &interrupted);
    }
    let finished = lineup::run(&l, &opts, &stop)?;
    let verdict = lineup::summary::verdict(&out).map_err(Failure::run)?;
    console::print(&format!(
        "lineup: {} of {} contenders finished; summary: {}",
        finished.iter().filter(|f| f.run_dir.is_some()).count(),
        lineup::contenders(&l)?.len(),
        out.join(cacheoff_rundir::lineup::SUMMARY_FILE).display()
    ));
    for line in &verdict.lines {
        console::print(line);
    }
    if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Failure {
            error: anyhow::anyhow!("interrupted; the finished products' results are kept"),
            code: 130,
        });
    }
    if verdict.failed {
        return Err(Failure::run(anyhow::anyhow!(
            "a product failed a cache-off rule (see the summary)"
        )));
    }
    Ok(())
}

/// `--spe`: the products side by side through the Multiplier; fails when
/// one's replies differed from the Collector's.
fn spe(
    l: &Lineup,
    opts: &Options,
    stop: &StopHandle,
    interrupted: &std::sync::atomic::AtomicBool,
) -> Result<(), Failure> {
    let outcome = lineup::spe::run(l, opts, stop)?;
    if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Failure {
            error: anyhow::anyhow!("interrupted; what was measured is kept"),
            code: 130,
        });
    }
    let failed = outcome.failed();
    if !failed.is_empty() {
        return Err(Failure::run(anyhow::anyhow!(
            "replies differed from the Collector's: {}",
            failed.join("; ")
        )));
    }
    if !outcome.left_out.is_empty() {
        return Err(Failure::usage(anyhow::anyhow!(
            "not every product joined: {}",
            outcome
                .left_out
                .iter()
                .map(|(n, why)| format!("{n} ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    Ok(())
}
