//! `cacheoff replay`: its arguments into a
//! [`cacheoff_run::replay::ReplayPlan`] (the survey, the trace's workload
//! and the run are `cacheoff_run::replay`'s).
//!
//! `cacheoff trace` writes sample traces from a workload's plan.

use crate::cli::{CachableRule, ReplayArgs, TraceArgs};
use crate::Failure;
use anyhow::Context;
use cacheoff_run::replay::ReplayPlan;
use cacheoff_run::{console, RunResult};
use cacheoff_trace::Format;
use cacheoff_workload::Overrides;

/// Runs `cacheoff replay`.
pub fn run(a: &ReplayArgs, argv: &[String]) -> Result<RunResult, Failure> {
    let format = match &a.format {
        Some(name) => Some(Format::parse(name, a.columns.as_deref()).map_err(Failure::usage)?),
        None if a.columns.is_some() => {
            Some(Format::parse("csv", a.columns.as_deref()).map_err(Failure::usage)?)
        }
        None => None,
    };
    if a.speed.is_some_and(|s| !(s.is_finite() && s > 0.0)) {
        return Err(Failure::usage(anyhow::anyhow!(
            "--speed must be a positive number"
        )));
    }
    if a.servers == 0 || a.robots == 0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--servers and --robots must be at least 1"
        )));
    }
    let plan = ReplayPlan {
        trace: a.trace.clone(),
        format,
        speed: a.speed,
        rate: a.rate,
        cachable: match a.cachable {
            CachableRule::Trace => cacheoff_run::replay::CachableRule::Trace,
            CachableRule::All => cacheoff_run::replay::CachableRule::All,
            CachableRule::None => cacheoff_run::replay::CachableRule::None,
        },
        cache_size: a.cache_size,
        servers: a.servers,
        robots: a.robots,
        server_port: a.server_port,
        ttfb: !a.no_ttfb,
        target: a.target.spec(),
        output: cacheoff_run::Output {
            label: a.label.clone(),
            workers: crate::cli::workers(a.workers),
            out: a.out.clone(),
            quiet: a.quiet,
            metrics: a.metrics,
            watch: a.watch.clone(),
        },
    };
    Ok(cacheoff_run::replay::run(plan, argv)?)
}

/// Runs `cacheoff trace`: a sample trace from a workload's plan.
pub fn write_sample(a: &TraceArgs) -> Result<(), Failure> {
    let format = Format::parse(&a.format, None).map_err(Failure::usage)?;
    let w = cacheoff_workload::load(&a.workload, &Overrides::default()).map_err(Failure::usage)?;
    // A plan too short for the trace asked is lengthened, or refused at
    // once with what it holds.
    let w = crate::sample_trace::fit(&w, a.requests).map_err(|held| {
        Failure::usage(anyhow::anyhow!(
            "{}: its plan gives {held} requests, fewer than --requests {}, and its measured phase issues none to lengthen",
            w.name,
            a.requests
        ))
    })?;
    let records = crate::sample_trace::PlanTrace::new(&w, a.requests);
    let file = std::fs::File::create(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))
        .map_err(Failure::usage)?;
    let gz = a.out.extension().is_some_and(|e| e == "gz");
    let written = if gz {
        let mut enc = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        cacheoff_trace::sample::write(&format, records, &mut enc)
            .and_then(|()| enc.finish().map(drop))
    } else {
        cacheoff_trace::sample::write(&format, records, file)
    };
    written
        .with_context(|| format!("cannot write {}", a.out.display()))
        .map_err(Failure::run)?;
    console::print(&format!(
        "{}: {} requests of {} in {} format",
        a.out.display(),
        a.requests,
        w.name,
        format.name()
    ));
    Ok(())
}
