//! The run's time line: phases, their stats intervals, goals, and where
//! the run stands on them.
//!
//! Ownership: one `Timeline` per run, shared read-only by the workers. The
//! only thing that changes is a goal phase ending early, decided once by
//! the coordinator ([`Timeline::check_goal`]) and published through a
//! `OnceLock`: workers read it ([`schedule_s`](Timeline::schedule_s),
//! [`next_interval`](Timeline::next_interval)) and never write it.

use cacheoff_stats::{Accum, Snapshot};
use cacheoff_workload::{Interval, Phase, Schedule, Workload};
use std::sync::{Arc, OnceLock};

/// A goal phase that ended early: after interval `after`, the schedule goes
/// on with interval `to`, and schedule time runs `shift_s` ahead of run
/// time from schedule time `at_s` on.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Jump {
    pub after: u32,
    pub to: u32,
    pub at_s: f64,
    pub shift_s: f64,
}

#[derive(Debug)]
pub struct Timeline {
    schedule: Schedule,
    intervals: Vec<Interval>,
    /// The cache size goals are measured in, in bytes.
    cache_bytes: f64,
    /// Shared with whoever decides it when that is another host's
    /// coordinator ([`Timeline::following`]).
    jump: Arc<OnceLock<Jump>>,
}

impl Timeline {
    pub fn new(w: &Workload) -> Timeline {
        Timeline::following(w, Arc::default())
    }

    /// A time line whose goal phases another coordinator decides: it
    /// sets `jump`, this run follows.
    pub fn following(w: &Workload, jump: Arc<OnceLock<Jump>>) -> Timeline {
        let schedule = w.schedule();
        Timeline {
            intervals: schedule.intervals(w.interval.as_secs_f64()),
            schedule,
            cache_bytes: w.cache_size.map_or(0, |c| c.0) as f64,
            jump,
        }
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    pub fn phases(&self) -> &[Phase] {
        self.schedule.phases()
    }

    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    pub fn interval(&self, index: u32) -> Interval {
        self.intervals[index as usize]
    }

    /// Schedule time (phases, intervals) for `real_s` seconds of run time.
    pub fn schedule_s(&self, real_s: f64) -> f64 {
        match self.jump.get() {
            Some(j) if real_s >= j.at_s => real_s + j.shift_s,
            _ => real_s,
        }
    }

    /// Run time for schedule time `sched_s` (the inverse of
    /// [`schedule_s`](Self::schedule_s)).
    pub fn real_s(&self, sched_s: f64) -> f64 {
        match self.jump.get() {
            Some(j) if sched_s >= j.at_s + j.shift_s => sched_s - j.shift_s,
            _ => sched_s,
        }
    }

    /// The interval that follows `index`, past a goal phase that ended.
    pub fn next_interval(&self, index: u32) -> u32 {
        match self.jump.get() {
            Some(j) if j.after == index => j.to,
            _ => index + 1,
        }
    }

    /// The decided jump, if a goal phase ended early.
    pub fn jump(&self) -> Option<Jump> {
        self.jump.get().copied()
    }

    /// After merged interval `index` (whose phase has accumulated `phase`
    /// so far; `last` is the interval itself), ends its goal phase if the
    /// goal is met: the cache was filled `fill` times over and, if asked,
    /// every worker's working set stopped growing. Called by the
    /// coordinator only, in interval order. Returns the jump it decided.
    pub(crate) fn check_goal(
        &self,
        index: u32,
        phase: &Accum,
        last: &Snapshot,
        workers: usize,
    ) -> Option<Jump> {
        let iv = self.interval(index);
        let goal = self.phases()[iv.phase].goal?;
        if self.jump.get().is_some() {
            return None;
        }
        let filled = phase.snap.counters.fill_bytes as f64 >= goal.fill * self.cache_bytes;
        let frozen = !goal.freeze || last.counters.ws_full as usize == workers;
        if filled && frozen {
            self.end_goal_phase(index);
        }
        self.jump()
    }

    /// Ends the goal phase of interval `index` two intervals later (workers
    /// are already in the next one), unless it ends by then anyway.
    fn end_goal_phase(&self, index: u32) {
        let phase = self.interval(index).phase;
        let after = index + 2;
        let Some(after_iv) = self
            .intervals
            .get(after as usize)
            .filter(|iv| iv.phase == phase)
        else {
            return;
        };
        let next = self.intervals.iter().find(|iv| iv.phase > phase);
        let Some(next) = next.filter(|n| n.index > after + 1) else {
            return;
        };
        let _ = self.jump.set(Jump {
            after,
            to: next.index,
            at_s: after_iv.end_s,
            shift_s: next.start_s - after_iv.end_s,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::{Bytes, Dur};
    use cacheoff_workload::{load, FillGoal, Overrides};

    /// A 60 s fill phase with a goal, then a 20 s measured phase, in 5 s
    /// intervals: 12 + 4.
    fn goal_timeline(freeze: bool) -> Timeline {
        let mut w = load("simple", &Overrides::default()).unwrap();
        w.cache_size = Some(Bytes(1000));
        w.phases[0].duration = Dur::secs(60.0);
        w.phases[0].goal = Some(FillGoal { fill: 2.0, freeze });
        w.phases[1].duration = Dur::secs(20.0);
        Timeline::new(&w)
    }

    fn filled(bytes: u64, ws_full: u64) -> (Accum, Snapshot) {
        let mut s = Snapshot::default();
        s.counters.fill_bytes = bytes;
        s.counters.ws_full = ws_full;
        let mut a = Accum::default();
        a.add_interval(&s, 5.0);
        (a, s)
    }

    #[test]
    fn a_met_goal_ends_its_phase_two_intervals_later() {
        let t = goal_timeline(false);
        assert_eq!(t.intervals().len(), 16);
        let (a, s) = filled(1999, 0);
        t.check_goal(3, &a, &s, 2);
        assert_eq!(t.jump(), None, "not filled twice yet");
        let (a, s) = filled(2000, 0);
        t.check_goal(3, &a, &s, 2);
        let j = t.jump().expect("goal met");
        assert_eq!((j.after, j.to), (5, 12));
        assert_eq!((j.at_s, j.shift_s), (30.0, 30.0));
        // Workers read the shifted time line.
        assert_eq!(t.next_interval(4), 5);
        assert_eq!(t.next_interval(5), 12);
        assert_eq!(t.schedule_s(29.0), 29.0);
        assert_eq!(t.schedule_s(31.0), 61.0);
        assert_eq!(t.real_s(61.0), 31.0);
        // Decided once.
        t.check_goal(6, &a, &s, 2);
        assert_eq!(t.jump(), Some(j));
    }

    #[test]
    fn a_freezing_goal_waits_for_every_working_set() {
        let t = goal_timeline(true);
        let (a, s) = filled(5000, 1);
        t.check_goal(2, &a, &s, 2);
        assert_eq!(t.jump(), None, "one of two workers still growing");
        let (a, s) = filled(5000, 2);
        t.check_goal(2, &a, &s, 2);
        assert!(t.jump().is_some());
    }

    #[test]
    fn a_goal_met_at_the_phase_end_changes_nothing() {
        let t = goal_timeline(false);
        let (a, s) = filled(5000, 0);
        t.check_goal(10, &a, &s, 1);
        assert_eq!(t.jump(), None);
        assert_eq!(t.next_interval(11), 12);
    }
}
