//! A run directory, read back: manifest, interval records and summary.

use crate::fold::fold;
use crate::{Manifest, ReportError};
use cacheoff_stats::log::{read_intervals, MANIFEST_FILE, SUMMARY_FILE};
use cacheoff_stats::{Entry, IntervalRecord, Summary};
use std::path::{Path, PathBuf};

/// How the run ended, as far as its directory tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Ran its whole schedule.
    Complete,
    /// Stopped early (a signal) but wrote its summary.
    Interrupted,
    /// No summary: the process was killed (or is still running). Figures
    /// come from the intervals recorded so far.
    NoSummary,
}

impl RunState {
    pub fn describe(&self) -> &'static str {
        match self {
            RunState::Complete => "complete",
            RunState::Interrupted => "interrupted: stopped before the schedule ended",
            RunState::NoSummary => {
                "no summary: the run was killed or is still going; figures come from the intervals recorded, and percentiles are upper bounds"
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub intervals: Vec<IntervalRecord>,
    pub summary: Option<Summary>,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::Read {
        path: path.into(),
        why: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Read {
        path: path.into(),
        why: format!("not a valid file of this cacheoff version: {e}"),
    })
}

impl Run {
    pub fn load(dir: &Path) -> Result<Run, ReportError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        if !manifest_path.exists() {
            return Err(ReportError::NotARun(dir.into()));
        }
        let manifest: Manifest = read_json(&manifest_path)?;
        let intervals = read_intervals(dir).map_err(|e| ReportError::Read {
            path: dir.join(cacheoff_stats::log::INTERVALS_FILE),
            why: e.to_string(),
        })?;
        let summary_path = dir.join(SUMMARY_FILE);
        let summary = if summary_path.exists() {
            Some(read_json::<Summary>(&summary_path)?)
        } else {
            None
        };
        Ok(Run {
            dir: dir.into(),
            manifest,
            intervals,
            summary,
        })
    }

    pub fn state(&self) -> RunState {
        match &self.summary {
            Some(s) if s.interrupted => RunState::Interrupted,
            Some(_) => RunState::Complete,
            None => RunState::NoSummary,
        }
    }

    /// Per-phase figures, in schedule order: the summary's, or folded
    /// from the intervals when there is no summary.
    pub fn phases(&self) -> Vec<Entry> {
        if let Some(s) = &self.summary {
            return s.phases.clone();
        }
        let mut names: Vec<&str> = Vec::new();
        for r in &self.intervals {
            if names.last() != Some(&r.phase.as_str()) && !names.contains(&r.phase.as_str()) {
                names.push(&r.phase);
            }
        }
        names
            .iter()
            .map(|n| {
                let recs: Vec<&IntervalRecord> =
                    self.intervals.iter().filter(|r| r.phase == *n).collect();
                fold(n, &recs)
            })
            .collect()
    }

    /// The whole run.
    pub fn total(&self) -> Entry {
        match &self.summary {
            Some(s) => s.total.clone(),
            None => fold("total", &self.intervals.iter().collect::<Vec<_>>()),
        }
    }

    /// The phase headline figures come from: the summary's choice, else
    /// the last phase the workload marks measured that has intervals.
    pub fn measured_phase(&self) -> Option<String> {
        if let Some(s) = &self.summary {
            return s.measured_phase.clone();
        }
        let seen = self.phases();
        self.manifest
            .workload
            .phases
            .iter()
            .rev()
            .filter(|p| p.measured)
            .find(|p| seen.iter().any(|e| e.name == p.name))
            .map(|p| p.name.clone())
    }

    /// Headline figures: the measured phase, or the whole run.
    pub fn headline(&self) -> Entry {
        let phases = self.phases();
        self.measured_phase()
            .and_then(|m| phases.into_iter().find(|p| p.name == m))
            .unwrap_or_else(|| self.total())
    }

    /// The proxy under test: its label and address.
    pub fn proxy_label(&self) -> String {
        match (&self.manifest.label, self.manifest.proxy) {
            (Some(l), Some(p)) => format!("{l} ({p})"),
            (None, Some(p)) => p.to_string(),
            (Some(l), None) => format!("{l} (no proxy: robots talk to the origin servers)"),
            (None, None) => "none (robots talk to the origin servers)".into(),
        }
    }
}
