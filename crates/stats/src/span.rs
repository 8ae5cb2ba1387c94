//! What the run-time hands over, before any file format: each merged
//! interval with its place in the schedule, and the run's accumulated
//! phases and total. The run directory turns them into records.

use crate::snapshot::{Accum, Snapshot};

/// One interval, merged over every worker.
#[derive(Debug, Clone)]
pub struct IntervalStats {
    pub index: u32,
    /// Index of its phase in the schedule.
    pub phase: usize,
    /// Seconds from the run start.
    pub start_s: f64,
    pub end_s: f64,
    /// Live robots during the interval.
    pub robots: u32,
    /// Load factor at the interval's middle.
    pub load: f64,
    pub snap: Snapshot,
}

/// A finished (or interrupted) run's figures.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Per schedule phase; `None` for a phase the run never reached.
    pub phases: Vec<Option<Accum>>,
    pub total: Accum,
    /// Stopped before its schedule ended.
    pub interrupted: bool,
    /// Digest of every open-loop request the plan issued, in plan order:
    /// the same seed and workload on as many workers give the same digest.
    pub plan_digest: u64,
    /// Each worker's digest by its index in the run, which `plan_digest`
    /// combines in order (a host's share of a run many hosts ran).
    pub plan_parts: Vec<(u32, u64)>,
}
