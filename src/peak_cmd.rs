//! `cacheoff peak`: the peak finder's arguments into a
//! [`cacheoff_run::peak::PeakPlan`] (the search, the limits and the phase
//! cut are `cacheoff_peak`'s, the steps as runs `cacheoff_run::peak`'s).

use crate::cli::PeakArgs;
use crate::Failure;
use cacheoff_peak::Limits;
use cacheoff_run::peak::{Knobs, PeakPlan, PeakResult};
use cacheoff_run::workload::Source;

fn parse_pct(flag: &str, text: &str) -> Result<f64, Failure> {
    cacheoff_peak::parse_error_pct(text)
        .map_err(|e| Failure::usage(anyhow::anyhow!("--{flag} {e}")))
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
    let target = a.target.spec();
    let mut overrides = a.settings.0.clone();
    target.settle(&mut overrides);
    let plan = PeakPlan {
        source: Source::open(&a.workload, &a.pgl.options())?,
        overrides,
        target,
        limits,
        knobs: Knobs {
            precision,
            max_load: a.max_load,
            max_steps: a.max_steps,
            rest: a.rest.0,
            warmup: !a.no_warmup,
        },
        label: a.label.clone(),
        workers: crate::cli::workers(a.workers),
        out: a.out.clone(),
        quiet: a.quiet,
    };
    Ok(cacheoff_run::peak::run(plan, argv)?)
}
