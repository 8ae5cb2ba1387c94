//! The records of `intervals.jsonl` and `summary.json`, built from what
//! the run-time hands over ([`IntervalStats`], [`RunStats`]), and the rule
//! for which phase the headline figures come from.

use crate::files::FORMAT_VERSION;
use cacheoff_resources::{IntervalUsage, Resources};
use cacheoff_stats::{Accum, Distributions, Entry, IntervalStats, RunStats};
use cacheoff_workload::{Phase, Workload};
use serde::{Deserialize, Serialize};

/// One line of `intervals.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub version: u32,
    pub interval: u32,
    pub phase: String,
    /// Seconds from the run start.
    pub start_s: f64,
    pub end_s: f64,
    /// Live robots during the interval.
    pub robots: u32,
    /// Load factor at the interval's middle.
    pub load: f64,
    #[serde(flatten)]
    pub stats: Entry,
    /// What the watched product spent in the interval (`--watch`, or a
    /// product cacheoff started); absent when nothing was watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<IntervalUsage>,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub format: String,
    pub version: u32,
    pub workload: String,
    /// True if the run was stopped before its schedule ended.
    pub interrupted: bool,
    /// The phase headline figures are taken from.
    pub measured_phase: Option<String>,
    pub phases: Vec<Entry>,
    pub total: Entry,
    /// Response-time and size distributions of the measured phase (or the
    /// whole run); absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributions: Option<Distributions>,
    /// Digest of every open-loop request the plan issued, in plan order
    /// (16 hex digits): the same seed and workload on as many workers give
    /// the same digest. Absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    /// A replay's ceilings (from `trace.json`): the hit ratios an
    /// infinite, an LRU and an optimal cache would reach on the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<crate::Ceiling>,
    /// A run many hosts ran: its agents and how each ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<crate::AgentRecord>>,
    /// A run many hosts ran: true when an agent was lost, so part of the
    /// load is missing from part of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// What the watched product spent in the measured phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// The same for every phase, in schedule order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources_by_phase: Vec<Resources>,
}

pub const SUMMARY_FORMAT: &str = "cacheoff-summary";

/// The phase headline figures come from (an index into `phases`): the
/// last phase the workload marks measured that the run reached.
pub fn measured_phase(phases: &[Phase], reached: impl Fn(usize) -> bool) -> Option<usize> {
    (0..phases.len())
        .rev()
        .find(|&i| phases[i].measured && reached(i))
}

/// Names the records need: phases in schedule order and content types.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub phases: Vec<Phase>,
    pub content_types: Vec<String>,
    pub workload: String,
}

impl Names {
    pub fn of(w: &Workload) -> Names {
        Names {
            phases: w.schedule().phases().to_vec(),
            content_types: w.content.iter().map(|t| t.name.clone()).collect(),
            workload: w.name.clone(),
        }
    }

    pub fn record(&self, iv: &IntervalStats) -> IntervalRecord {
        let name = &self.phases[iv.phase].name;
        let mut acc = Accum::default();
        acc.add_interval(&iv.snap, iv.end_s - iv.start_s);
        IntervalRecord {
            version: FORMAT_VERSION,
            interval: iv.index,
            phase: name.clone(),
            start_s: iv.start_s,
            end_s: iv.end_s,
            robots: iv.robots,
            load: iv.load,
            stats: acc.entry(name, &self.content_types),
            resources: None,
        }
    }

    pub fn summary(&self, run: &RunStats) -> Summary {
        let measured = measured_phase(&self.phases, |i| {
            run.phases.get(i).is_some_and(Option::is_some)
        });
        let phases = self
            .phases
            .iter()
            .zip(&run.phases)
            .filter_map(|(p, a)| a.as_ref().map(|a| a.entry(&p.name, &self.content_types)))
            .collect();
        let distributions = measured
            .and_then(|i| {
                let acc = run.phases[i].as_ref()?;
                Some(acc.distributions(&self.phases[i].name))
            })
            .unwrap_or_else(|| run.total.distributions("total"));
        Summary {
            format: SUMMARY_FORMAT.into(),
            version: FORMAT_VERSION,
            workload: self.workload.clone(),
            interrupted: run.interrupted,
            measured_phase: measured.map(|i| self.phases[i].name.clone()),
            phases,
            total: run.total.entry("total", &self.content_types),
            distributions: Some(distributions),
            plan_digest: Some(format!("{:016x}", run.plan_digest)),
            ceiling: None,
            agents: None,
            partial: None,
            resources: None,
            resources_by_phase: Vec::new(),
        }
    }
}
