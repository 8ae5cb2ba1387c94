//! Gathering a run's parts into intervals, phases and the total: the
//! parts are this host's workers, or, on a coordinator of many hosts,
//! the agents. Each merged interval goes to the [`Sink`]; goal phases are
//! decided here when this is where every part's figures meet.

use crate::merge::{Merger, WorkerInterval};
use crate::timeline::Timeline;
use crate::Sink;
use cacheoff_stats::{Accum, IntervalStats, RunStats, Snapshot};
use cacheoff_workload::PlanDigest;

/// Merges parts' interval snapshots in order and accumulates the run.
pub struct Gather<'t> {
    timeline: &'t Timeline,
    merger: Merger,
    run: RunStats,
    /// Each worker's plan digest (by its index in the whole run).
    digests: Vec<(u32, PlanDigest)>,
    last_end: f64,
    robots: u32,
    /// The run's worker count when goal phases are decided here; `None`
    /// when another coordinator decides them.
    goal_workers: Option<usize>,
}

impl<'t> Gather<'t> {
    pub fn new(
        timeline: &'t Timeline,
        parts: usize,
        robots: u32,
        goal_workers: Option<usize>,
    ) -> Gather<'t> {
        Gather {
            timeline,
            merger: Merger::new(parts),
            run: RunStats {
                phases: vec![None; timeline.phases().len()],
                ..RunStats::default()
            },
            digests: Vec::new(),
            last_end: 0.0,
            robots,
            goal_workers,
        }
    }

    /// Part `part`'s snapshot of interval `index`, ending at schedule time
    /// `end_s` (from another host: its final one is told by `end_part`).
    pub fn push_part(&mut self, part: usize, index: u32, end_s: f64, snap: Snapshot) {
        self.push(WorkerInterval {
            part: part as u32,
            worker: part as u32,
            index,
            end_s,
            snap: Box::new(snap),
            last: None,
        });
    }

    /// A local worker's snapshot; its final one carries its plan digest.
    pub(crate) fn push(&mut self, m: WorkerInterval) {
        if let Some(d) = m.last {
            self.digests.push((m.worker, d));
        }
        self.merger.push(m);
    }

    /// A part ended (or was lost) after the last interval it sent,
    /// leaving these plan digests of its workers.
    pub fn end_part(&mut self, part: usize, digests: &[(u32, PlanDigest)]) {
        self.digests.extend_from_slice(digests);
        self.merger.end_part(part);
    }

    pub fn is_done(&self) -> bool {
        self.merger.is_done()
    }

    pub fn has_finished(&self, part: usize) -> bool {
        self.merger.has_finished(part)
    }

    pub fn first_running(&self) -> Option<usize> {
        self.merger.first_running()
    }

    /// Hands every interval now complete to `sink`, in order.
    pub fn drain(&mut self, sink: &mut dyn Sink) {
        let timeline = self.timeline;
        while let Some(merged) = self.merger.pop(timeline) {
            let iv = timeline.interval(merged.index);
            let end_s = merged.end_s.max(iv.start_s);
            let duration = end_s - iv.start_s;
            // Records carry run time; a goal phase that ended early moved
            // the rest of the schedule earlier.
            let start_s = timeline.real_s(iv.start_s);
            sink.interval(&IntervalStats {
                index: merged.index,
                phase: iv.phase,
                start_s,
                end_s: start_s + duration,
                robots: self.robots,
                load: timeline.schedule().load_at((iv.start_s + end_s) / 2.0),
                snap: merged.snap.clone(),
            });
            let phase = self.run.phases[iv.phase].get_or_insert_with(Accum::default);
            phase.add_interval(&merged.snap, duration);
            if let Some(workers) = self.goal_workers {
                if let Some(jump) = timeline.check_goal(merged.index, phase, &merged.snap, workers)
                {
                    sink.jumped(&jump);
                }
            }
            self.run.total.add_interval(&merged.snap, duration);
            self.last_end = end_s;
        }
    }

    /// The run's figures; `stopped`: it was stopped on purpose.
    pub fn finish(mut self, stopped: bool) -> RunStats {
        let timeline = self.timeline;
        self.run.interrupted = stopped
            || (self.last_end + 1e-6) < timeline.schedule().total_s()
            || (self.merger.next_index(timeline) as usize) < timeline.intervals().len();
        self.digests.sort_by_key(|(w, _)| *w);
        let parts: Vec<PlanDigest> = self.digests.iter().map(|(_, d)| *d).collect();
        self.run.plan_digest = PlanDigest::combine(&parts).get();
        self.run.plan_parts = self.digests.iter().map(|(w, d)| (*w, d.get())).collect();
        self.run
    }
}
