//! `cacheoff run --agents`: the coordinator's side of a run over many
//! hosts, feeding the same run directory and console as a run here.

use crate::{console, RunError};
use cacheoff_agent::{StopHandle, Via};
use cacheoff_fleet::wire::ViaSpec;
use cacheoff_fleet::{AgentsSink, Fleet, FleetRun, Ready};
use cacheoff_rundir::{AgentRecord, AgentState};
use cacheoff_workload::Workload;
use std::path::Path;

/// Reaches `fleet` and gives each agent its share of `wl`, before the run
/// directory exists: a fleet that disagrees leaves nothing behind. The
/// run id (which names the agents' own logs) comes from `dir`.
pub fn prepare(wl: &Workload, via: Via, fleet: &Fleet, dir: &Path) -> Result<Ready, RunError> {
    let via = match via {
        Via::Direct => ViaSpec::Direct,
        Via::Proxy(a) => ViaSpec::Proxy(a),
        Via::Surrogate(a) => ViaSpec::Surrogate(a),
    };
    let nonce = cacheoff_fleet::run_nonce();
    let name = dir
        .file_name()
        .map_or("run".into(), |n| n.to_string_lossy().into_owned());
    let run_id = cacheoff_fleet::guard::run_id(&name, nonce);
    // Two descriptors per agent (its link, and a copy to write on).
    let needed = 2 * fleet.agents.len() as u64 + 256;
    cacheoff_agent::raise_fd_limit(needed).map_err(RunError::FdLimit)?;
    // Whether that is usage (nothing started) or a failure: RunError::code.
    cacheoff_fleet::prepare(wl, via, fleet, &run_id, nonce)
        .map_err(|e| RunError::FleetPrepare(Box::new(e)))
}

/// Runs the prepared fleet into `sink` (the run directory, the console).
pub fn run(
    ready: Ready,
    sink: &mut dyn AgentsSink,
    stop: &StopHandle,
) -> Result<FleetRun, RunError> {
    ready
        .run(sink, stop)
        .map_err(|e| RunError::Fleet(Box::new(e)))
}

/// One line per agent: its share and how it ended.
pub fn print_agents(agents: &[AgentRecord]) {
    for a in agents {
        let state = match a.state {
            AgentState::Lost => format!(
                "LOST at {:.1} s ({})",
                a.lost_at_s.unwrap_or(0.0),
                a.lost_why.as_deref().unwrap_or("?")
            ),
            AgentState::Complete => "complete".into(),
            AgentState::Running => "running".into(),
        };
        console::print(&format!(
            "agent {} ({}): robots {}, origin servers {}..{}, clock {:+.1} ms, {state}",
            a.addr, a.role, a.share, a.servers[0], a.servers[1], a.clock_offset_ms
        ));
    }
    if cacheoff_rundir::partial(agents) {
        console::print("the run is PARTIAL: an agent was lost (summary.json: partial)");
    }
}
