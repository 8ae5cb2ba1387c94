//! `cacheoff workload list|show|check`.

use crate::cli::WorkloadCommand;
use crate::console::print;
use crate::Failure;
use cacheoff_workload::{builtin_names, describe, load, Overrides};

pub fn run(cmd: &WorkloadCommand) -> Result<(), Failure> {
    match cmd {
        WorkloadCommand::List => {
            for name in builtin_names() {
                let w = load(name, &Overrides::default()).map_err(Failure::run)?;
                print(&format!("{name:<12} {}", w.description));
            }
            Ok(())
        }
        WorkloadCommand::Show { workload } => {
            let w = load(workload, &Overrides::default()).map_err(Failure::usage)?;
            print(&describe(&w));
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
