//! The run directory: the one owner of every file a run writes and a
//! report reads (`docs/run-directory.md` describes them, and a test holds
//! the two together).
//!
//! - [`RunDir::create`] starts a run's directory: it refuses one that
//!   already holds a run, writes `manifest.json` ([`Manifest`]) and returns
//!   the [`RunDir`] that appends `intervals.jsonl` ([`IntervalRecord`]) and
//!   ends with `summary.json` ([`Summary`]).
//! - [`RunDir::open`] reads a directory back as a [`Run`], refusing files of
//!   a newer format version; a run killed before its summary is folded from
//!   its intervals.
//! - `downtime.json` ([`Outage`], written by [`write_downtime`]): when the
//!   product under test lost and regained power in a downtime run; read
//!   with the run as [`Run::outage`].
//! - `trace.json` ([`Replayed`], written by [`RunDir::replaying`]): the
//!   trace a replay replayed and its ceilings, which the summary repeats.
//! - `peak.json` ([`peak::Peak`]): what `cacheoff peak` found, in a
//!   directory of step runs ([`peak::is_peak`]).
//! - `ab.json` ([`ab::write`], [`ab::read`]): an A/B experiment's record
//!   (`cacheoff_ab::AbReport`), in a directory of its runs.
//! - A lineup's `summary.json` ([`lineup::LineupSummary`]) and
//!   `products.toml` ([`lineup::Products`]), in the directory of its
//!   products' runs, naming them by paths relative to it
//!   ([`relative_path`]).
//! - Rules decided once: which phase is measured ([`measured_phase`]), and
//!   records built from the run-time's [`IntervalStats`] and [`RunStats`]
//!   (every derived figure comes from `cacheoff_stats::Entry`).
//!
//! No tokio and no knowledge of the run-time: a report can always be
//! rebuilt offline from a directory.

pub mod ab;
mod agents;
mod files;
pub mod lineup;
mod manifest;
mod outage;
pub mod peak;
mod records;
mod replayed;
pub mod rules;
mod run;
pub mod spe;
pub mod spending;

pub use agents::{partial, AgentRecord, AgentState};
pub use files::{
    relative_path, FORMAT_VERSION, INTERVALS_FILE, MANIFEST_FILE, REPORT_FILE, SUMMARY_FILE,
};
pub use manifest::{now_rfc3339, Build, Host, Manifest, Mode, MANIFEST_FORMAT};
pub use outage::{write_downtime, Outage, DOWNTIME_FILE, DOWNTIME_FORMAT};
pub use records::{measured_phase, IntervalRecord, Summary, SUMMARY_FORMAT};
pub use replayed::{write_trace, Ceiling, Replayed, TRACE_FILE, TRACE_FORMAT};
pub use run::{Run, RunState};

use cacheoff_stats::{IntervalStats, RunStats};
use files::LineLog;
use records::Names;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{} already holds a run (manifest.json exists)", .0.display())]
    HoldsARun(PathBuf),
    #[error("{0} is not a cacheoff run directory (no manifest.json)")]
    NotARun(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Read { path: PathBuf, why: String },
    #[error("{path}: written by a newer cacheoff (format version {version}; this one reads up to {FORMAT_VERSION})")]
    NewerFormat { path: PathBuf, version: u64 },
}

/// A run's directory while the run writes it.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    manifest: Manifest,
    intervals: LineLog,
    names: Names,
    replayed: Option<Replayed>,
    /// The records so far, kept for the summary's spending when watched.
    watched: Vec<IntervalRecord>,
}

impl RunDir {
    /// Creates the directory (and its parents), refusing one that already
    /// holds a run, and writes the manifest.
    pub fn create(path: &Path, manifest: Manifest) -> Result<RunDir, RunDirError> {
        if path.join(MANIFEST_FILE).exists() {
            return Err(RunDirError::HoldsARun(path.into()));
        }
        let write_err = |p: PathBuf| move |source| RunDirError::Write { path: p, source };
        std::fs::create_dir_all(path).map_err(write_err(path.into()))?;
        let log_path = path.join(INTERVALS_FILE);
        let intervals = LineLog::open(&log_path).map_err(write_err(log_path))?;
        let dir = RunDir {
            path: path.into(),
            names: Names::of(&manifest.workload),
            manifest,
            intervals,
            replayed: None,
            watched: Vec::new(),
        };
        dir.write_manifest()?;
        Ok(dir)
    }

    /// Reads a run directory back, whole or killed before its summary.
    pub fn open(path: &Path) -> Result<Run, RunDirError> {
        Run::load(path)
    }

    /// `runs/<UTC timestamp>-<workload>`, e.g. `runs/20261122T001530Z-simple`.
    pub fn default_path(workload: &str) -> PathBuf {
        let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let name: String = workload
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        PathBuf::from("runs").join(format!("{stamp}-{name}"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Records the origin servers' addresses once bound.
    pub fn servers_bound(&mut self, servers: &[SocketAddr]) -> Result<(), RunDirError> {
        self.manifest.servers = servers.to_vec();
        self.write_manifest()
    }

    /// The run samples what a product spends: `source` names it (and
    /// goes into the manifest); each interval then carries its usage.
    pub fn watching(&mut self, source: String) -> Result<(), RunDirError> {
        self.manifest.watched = Some(source);
        self.write_manifest()
    }

    /// Appends one interval, with what the watched product spent in it;
    /// returns the record written.
    pub fn interval(
        &mut self,
        iv: &IntervalStats,
        usage: Option<cacheoff_resources::IntervalUsage>,
    ) -> Result<IntervalRecord, RunDirError> {
        let mut record = self.names.record(iv);
        record.resources = usage;
        self.intervals
            .append(&record)
            .map_err(|source| RunDirError::Write {
                path: self.path.join(INTERVALS_FILE),
                source,
            })?;
        if self.manifest.watched.is_some() {
            self.watched.push(record.clone());
        }
        Ok(record)
    }

    /// This run replays a trace: writes `trace.json`; the summary will
    /// carry its ceilings.
    pub fn replaying(&mut self, r: Replayed) -> Result<(), RunDirError> {
        write_trace(&self.path, &r)?;
        self.replayed = Some(r);
        Ok(())
    }

    /// The agents of a run many hosts run, as they stand (the manifest
    /// lists them; the summary repeats their final state).
    pub fn set_agents(&mut self, agents: Vec<AgentRecord>) -> Result<(), RunDirError> {
        self.manifest.agents = Some(agents);
        self.write_manifest()
    }

    /// Writes the summary and the finished manifest.
    pub fn finish(mut self, run: &RunStats) -> Result<Summary, RunDirError> {
        let mut summary = self.names.summary(run);
        summary.ceiling = self.replayed.as_ref().map(|r| r.ceiling);
        if let Some(source) = &self.manifest.watched {
            let cache = self.manifest.workload.cache_size.map(|b| b.0);
            summary.resources_by_phase = spending::by_phase(&self.watched, source, cache);
            summary.resources = spending::measured(
                &summary.resources_by_phase,
                summary.measured_phase.as_deref(),
            );
        }
        if let Some(agents) = &self.manifest.agents {
            summary.partial = Some(partial(agents));
            summary.agents = Some(agents.clone());
        }
        self.manifest.finished_at = Some(now_rfc3339());
        self.write_manifest()?;
        let path = self.path.join(SUMMARY_FILE);
        files::write_json_atomic(&path, &summary)
            .map_err(|source| RunDirError::Write { path, source })?;
        Ok(summary)
    }

    fn write_manifest(&self) -> Result<(), RunDirError> {
        let path = self.path.join(MANIFEST_FILE);
        files::write_json_atomic(&path, &self.manifest)
            .map_err(|source| RunDirError::Write { path, source })
    }
}
