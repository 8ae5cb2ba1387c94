//! A run directory, read back: manifest, interval records and summary.

use crate::files::{read_json, read_lines};
use crate::records::measured_phase;
use crate::{
    IntervalRecord, Manifest, Outage, RunDirError, Summary, INTERVALS_FILE, MANIFEST_FILE,
    REPORT_FILE, SUMMARY_FILE,
};
use cacheoff_stats::Entry;
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
    /// Stable short name, for exports.
    pub fn name(&self) -> &'static str {
        match self {
            RunState::Complete => "complete",
            RunState::Interrupted => "interrupted",
            RunState::NoSummary => "no_summary",
        }
    }

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
    /// When the product lost and regained power (`downtime.json`), in a
    /// downtime run whose power cut was timed.
    pub outage: Option<Outage>,
    /// The replayed trace and its ceilings (`trace.json`), in a replay.
    pub replayed: Option<crate::Replayed>,
}

impl Run {
    pub(crate) fn load(dir: &Path) -> Result<Run, RunDirError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        if !manifest_path.exists() {
            return Err(RunDirError::NotARun(dir.into()));
        }
        let manifest: Manifest = read_json(&manifest_path)?;
        let intervals = read_lines(&dir.join(INTERVALS_FILE))?;
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
            outage: Outage::read(dir)?,
            replayed: crate::Replayed::read(dir)?,
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
            if !names.contains(&r.phase.as_str()) {
                names.push(&r.phase);
            }
        }
        names
            .iter()
            .map(|n| {
                let parts: Vec<&Entry> = self
                    .intervals
                    .iter()
                    .filter(|r| r.phase == *n)
                    .map(|r| &r.stats)
                    .collect();
                Entry::fold(n, &parts)
            })
            .collect()
    }

    /// The whole run.
    pub fn total(&self) -> Entry {
        match &self.summary {
            Some(s) => s.total.clone(),
            None => {
                let parts: Vec<&Entry> = self.intervals.iter().map(|r| &r.stats).collect();
                Entry::fold("total", &parts)
            }
        }
    }

    /// The phase headline figures come from: the summary's choice, else
    /// the same rule over the phases the intervals reached.
    pub fn measured_phase(&self) -> Option<String> {
        if let Some(s) = &self.summary {
            return s.measured_phase.clone();
        }
        let phases = &self.manifest.workload.phases;
        measured_phase(phases, |i| {
            self.intervals.iter().any(|r| r.phase == phases[i].name)
        })
        .map(|i| phases[i].name.clone())
    }

    /// Headline figures: the measured phase, or the whole run.
    pub fn headline(&self) -> Entry {
        let phases = self.phases();
        self.measured_phase()
            .and_then(|m| phases.into_iter().find(|p| p.name == m))
            .unwrap_or_else(|| self.total())
    }

    /// What the watched product spent, per phase: the summary's, or
    /// derived from the intervals when there is no summary.
    pub fn resources_by_phase(&self) -> Vec<cacheoff_resources::Resources> {
        if let Some(s) = &self.summary {
            return s.resources_by_phase.clone();
        }
        let Some(source) = &self.manifest.watched else {
            return Vec::new();
        };
        let cache = self.manifest.workload.cache_size.map(|b| b.0);
        crate::spending::by_phase(&self.intervals, source, cache)
    }

    /// The measured phase's spending, if the run watched a product.
    pub fn resources(&self) -> Option<cacheoff_resources::Resources> {
        match &self.summary {
            Some(s) => s.resources.clone(),
            None => crate::spending::measured(
                &self.resources_by_phase(),
                self.measured_phase().as_deref(),
            ),
        }
    }

    /// Writes the report card (rendered by the caller) as `report.html`,
    /// atomically; returns its path.
    pub fn write_report(&self, html: &str) -> Result<PathBuf, RunDirError> {
        let path = self.dir.join(REPORT_FILE);
        let tmp = self.dir.join(format!(".{REPORT_FILE}.tmp"));
        std::fs::write(&tmp, html)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| RunDirError::Write {
                path: path.clone(),
                source,
            })?;
        Ok(path)
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
