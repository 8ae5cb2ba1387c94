//! `cacheoff ab`: the same workload through A and through B in alternating
//! rounds (A B, B A, B A, A B, …), then for every headline figure B − A
//! with its 95% interval and a verdict. The rounds and the statistics are
//! `cacheoff_ab`'s (docs/ab.md), the runs `cacheoff_run::ab`'s; this
//! module resolves the arguments, starts a named product afresh for each
//! run the way a lineup does (`Fresh`), and prints the table.

use crate::cli::AbArgs;
use crate::lineup::{product, Contender};
use crate::Failure;
use anyhow::anyhow;
use cacheoff_ab::AbReport;
use cacheoff_agent::{BoundServers, StopHandle};
use cacheoff_products::Mode;
use cacheoff_run::ab::{experiment, Contestant, Experiment, Fresh, Started};
use cacheoff_run::console;
use cacheoff_run::watch::Watch;
use cacheoff_run::RunError;
use cacheoff_rundir::RunDir;
use cacheoff_workload::Workload;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;

/// A product of the lineup's, started afresh for each run.
struct FreshProduct(Contender);

impl Fresh for FreshProduct {
    fn name(&self) -> String {
        self.0.spec.name.clone()
    }
    fn reverse(&self) -> bool {
        self.0.mode == Mode::Reverse
    }
    fn start(
        &self,
        w: &Workload,
        bound: &BoundServers,
        dir: &Path,
    ) -> Result<Box<dyn Started>, RunError> {
        let running =
            product::start(&self.0, w, bound, dir, None, None).map_err(|e| RunError::Product {
                name: self.name(),
                why: format!("{e:#}"),
            })?;
        Ok(Box::new(StartedProduct {
            name: self.name(),
            running: Mutex::new(running),
        }))
    }
}

struct StartedProduct {
    name: String,
    running: Mutex<product::Running>,
}

impl Started for StartedProduct {
    fn addr(&self) -> SocketAddr {
        product::lock(&self.running).addr()
    }
    fn label(&self) -> String {
        product::lock(&self.running).label()
    }
    fn watch(&self) -> Option<Watch> {
        product::lock(&self.running).watch()
    }
    fn stop(self: Box<Self>) -> Result<(), RunError> {
        product::stop(&self.running).map_err(|e| RunError::Product {
            name: self.name.clone(),
            why: format!("cannot stop the product: {e:#}"),
        })
    }
}

/// `arg` tested in `mode` (a surrogate workload's is reverse): an
/// address, or a product's name.
fn contestant(arg: &str, watch: Option<String>, mode: Mode) -> Result<Contestant, Failure> {
    if let Ok(addr) = arg.parse::<SocketAddr>() {
        return Ok(Contestant::Addr { addr, watch });
    }
    if watch.is_some() {
        return Err(Failure::usage(anyhow!(
            "{arg}: a product cacheoff starts is watched through its own cgroup; --a-watch/--b-watch are for addresses"
        )));
    }
    let spec = product::spec(arg).map_err(Failure::usage)?;
    if !spec.modes.contains(&mode) {
        return Err(Failure::usage(anyhow!(
            "{arg}: the workload needs a {m} proxy, and this product has no {m} mode",
            m = mode.name()
        )));
    }
    Ok(Contestant::Product(Box::new(FreshProduct(Contender {
        spec,
        mode,
        settings: Vec::new(),
        price_usd: None,
    }))))
}

pub fn run(a: &AbArgs) -> Result<AbReport, Failure> {
    if a.rounds == 0 {
        return Err(Failure::usage(anyhow!("--rounds must be at least 1")));
    }
    let workload = cacheoff_run::workload::load(&a.workload, &a.settings.0, &a.pgl.options())?;
    workload.check_runnable().map_err(Failure::usage)?;
    let out = a.out.clone().unwrap_or_else(|| {
        let mut p = RunDir::default_path(&workload.name).into_os_string();
        p.push("-ab");
        p.into()
    });
    let mode = if workload.surrogate {
        Mode::Reverse
    } else {
        Mode::Forward
    };
    let e = Experiment {
        a: contestant(&a.a, a.a_watch.clone(), mode)?,
        b: contestant(&a.b, a.b_watch.clone(), mode)?,
        rounds: a.rounds,
        workers: crate::cli::workers(a.workers),
        out,
        quiet: a.quiet,
        workload,
    };
    let stop = StopHandle::new();
    cacheoff_run::signals::stop_runs_on_signals(&stop);
    let report = experiment(&e, &stop)?;
    console::print(&cacheoff_ab::report_table(&report));
    console::print(&format!(
        "\nab: {}",
        e.out.join(cacheoff_rundir::ab::AB_FILE).display()
    ));
    Ok(report)
}
