//! `cacheoff workload list|show|check`.

use crate::cli::WorkloadCommand;
use crate::console::print;
use crate::Failure;
use cacheoff_workload::{builtin_names, describe, expected_offered, load, Overrides};

pub fn run(cmd: &WorkloadCommand) -> Result<(), Failure> {
    match cmd {
        WorkloadCommand::List => {
            for name in builtin_names() {
                let w = load(name, &Overrides::default()).map_err(Failure::run)?;
                print(&format!("{name:<12} {}", w.description));
            }
            Ok(())
        }
        WorkloadCommand::Show { workload, settings } => {
            let w = load(workload, &settings.0).map_err(Failure::usage)?;
            print(&describe(&w));
            let e = expected_offered(&w);
            let pct = |v: f64| format!("{:.1}%", v * 100.0);
            print(&format!(
                "\nExpected offered hit ratio in the measured phase (the plan run without sockets)\n  \
                 {:<22} DHR {}, BHR {} (every revisit of a cachable object, as Web Polygraph counts)\n  \
                 {:<22} DHR {}, BHR {} (leaves out revisits no cache can hit: images of pages first answered 304)",
                "offered",
                pct(e.dhr),
                pct(e.bhr),
                "ideal cache",
                pct(e.dhr_ideal),
                pct(e.bhr_ideal),
            ));
            Ok(())
        }
        WorkloadCommand::Check { file } => {
            let w = load(file, &Overrides::default()).map_err(Failure::usage)?;
            let total: f64 = w.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
            print(&format!(
                "{file}: ok ({}: {} robots, {} servers, {} phases, {})",
                w.name,
                w.robots.count,
                w.servers.count,
                w.phases.len(),
                cacheoff_base::Dur::secs(total)
            ));
            Ok(())
        }
    }
}
