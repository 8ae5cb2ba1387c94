//! `cacheoff run`: its arguments into a [`cacheoff_run::RunPlan`].

use crate::cli::RunArgs;
use crate::Failure;
use cacheoff_run::workload::Source;
use cacheoff_run::RunResult;

/// Runs `cacheoff run` with its arguments; `argv` goes into the manifest.
pub fn run(a: &RunArgs, argv: &[String]) -> Result<RunResult, Failure> {
    let target = a.target.spec();
    let mut o = a.settings.0.clone();
    target.settle(&mut o);
    let source = Source::open(&a.workload, &a.pgl.options())?;
    let workload = source.runnable(&o)?;
    let fleet = crate::agent_cmd::fleet(&a.fleet)?;
    let plan = cacheoff_run::RunPlan {
        source,
        workload,
        target,
        fleet,
        tls_dir: a.tls_dir.clone(),
        output: cacheoff_run::Output {
            label: a.label.clone(),
            workers: crate::cli::workers(a.workers),
            out: a.out.clone(),
            quiet: a.quiet,
            metrics: a.metrics,
            watch: a.watch.clone(),
        },
    };
    Ok(cacheoff_run::run(plan, argv)?)
}
