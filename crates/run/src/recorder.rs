//! The run-time's sink: each interval into the run directory, the live
//! console and metrics, with what the watched product spent in it.

use crate::console;
use crate::watch::Watch;
use cacheoff_agent::Sink;
use cacheoff_rundir::{RunDir, RunDirError};
use cacheoff_stats::IntervalStats;
use cacheoff_workload::AddrMap;
use std::path::Path;

/// Called once the run has started, with its start (see
/// `Setup::on_start`).
pub type OnStart = Box<dyn FnOnce(std::time::Instant) + Send>;

/// In a reverse-mode run directory: the origin servers by name.
pub const ADDR_MAP_FILE: &str = "addrmap.txt";

/// The run directory and the console, fed by the run-time.
pub(crate) struct Recorder<'a> {
    pub dir: &'a mut RunDir,
    pub on_start: Option<OnStart>,
    pub path: &'a Path,
    pub surrogate: bool,
    pub quiet: bool,
    pub xacts_so_far: u64,
    /// The first write that failed; the run goes on and fails at the end.
    pub error: Option<RunDirError>,
    pub metrics: Option<std::sync::Arc<cacheoff_metrics::RunMetrics>>,
    /// The product whose spending each interval records.
    pub watch: Option<Watch>,
}

impl Sink for Recorder<'_> {
    fn started(&mut self, servers: &[std::net::SocketAddr], start: std::time::Instant) {
        if let Some(hook) = self.on_start.take() {
            hook(start);
        }
        if let Some(w) = &mut self.watch {
            w.restart();
        }
        if let Err(e) = self.dir.servers_bound(servers) {
            self.error.get_or_insert(e);
        }
        if self.surrogate {
            let path = self.path.join(ADDR_MAP_FILE);
            if let Err(source) = std::fs::write(&path, AddrMap::for_servers(servers).to_text()) {
                self.error
                    .get_or_insert(RunDirError::Write { path, source });
            }
        }
    }
    fn interval(&mut self, iv: &IntervalStats) {
        if let Some(m) = &self.metrics {
            m.interval(iv);
        }
        let usage = self.watch.as_mut().map(Watch::interval);
        match self.dir.interval(iv, usage) {
            Ok(r) => {
                self.xacts_so_far += r.stats.xacts;
                if !self.quiet {
                    console::print(&console::interval_line(&r, self.xacts_so_far));
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
    fn warn(&mut self, message: &str) {
        eprintln!("cacheoff: warning: {message}");
    }
}

impl cacheoff_fleet::AgentsSink for Recorder<'_> {
    fn agents(&mut self, agents: &[cacheoff_rundir::AgentRecord]) {
        if let Err(e) = self.dir.set_agents(agents.to_vec()) {
            self.error.get_or_insert(e);
        }
    }
}
