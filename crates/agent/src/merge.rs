//! Merging the workers' interval snapshots into whole intervals, in order.
//!
//! Workers send a [`Snapshot`] at every interval boundary, and a last one
//! when they stop. An interval is complete when every worker sent it or
//! had already sent its last snapshot before it. A worker that passed the
//! end of a goal phase before the coordinator decided it sends intervals
//! the time line then skips: they are folded into the next one.
//! Pure bookkeeping, no channels: merging snapshots from many hosts works
//! the same way.

use crate::timeline::Timeline;
use cacheoff_stats::Snapshot;
use cacheoff_workload::PlanDigest;
use std::collections::BTreeMap;

/// What a worker tells the coordinator.
pub enum WorkerMsg {
    Interval(WorkerInterval),
    Failed(u32, std::io::Error),
}

/// One worker's snapshot of one interval, ending at schedule time `end_s`.
pub struct WorkerInterval {
    /// Which of the merger's parts sent it (a local worker's slot).
    pub part: u32,
    /// The worker's index in the whole run (its plan's).
    pub worker: u32,
    pub index: u32,
    pub end_s: f64,
    pub snap: Box<Snapshot>,
    /// On the worker's final snapshot (schedule over, or stopped): the
    /// digest of the requests it planned.
    pub last: Option<PlanDigest>,
}

/// A complete interval.
#[derive(Debug)]
pub struct Merged {
    pub index: u32,
    pub snap: Snapshot,
    /// Schedule time it ended (the latest worker's).
    pub end_s: f64,
}

struct Pending {
    workers: usize,
    snap: Snapshot,
    end_s: f64,
}

pub struct Merger {
    workers: usize,
    pending: BTreeMap<u32, Pending>,
    /// The index of each part's final snapshot once it sent it (-1: it
    /// ended before sending any).
    finished: Vec<Option<i64>>,
    /// The latest interval each part sent.
    last_pushed: Vec<Option<u32>>,
    next: u32,
    /// The last interval handed out, to find the next one once the
    /// coordinator has looked at it (it may end a goal phase).
    popped: Option<u32>,
    /// Skipped intervals, to be added to the next one.
    carry: Option<Snapshot>,
}

impl Merger {
    pub fn new(workers: usize) -> Merger {
        Merger {
            workers,
            pending: BTreeMap::new(),
            finished: vec![None; workers],
            last_pushed: vec![None; workers],
            next: 0,
            popped: None,
            carry: None,
        }
    }

    pub fn push(&mut self, m: WorkerInterval) {
        let e = self.pending.entry(m.index).or_insert_with(|| Pending {
            workers: 0,
            snap: Snapshot::default(),
            end_s: 0.0,
        });
        e.workers += 1;
        e.snap.add(&m.snap);
        e.end_s = e.end_s.max(m.end_s);
        let part = m.part as usize;
        self.last_pushed[part] = Some(self.last_pushed[part].map_or(m.index, |l| l.max(m.index)));
        if m.last.is_some() {
            self.finished[part] = Some(i64::from(m.index));
        }
    }

    /// Part `part` sends no more: it ended (or was lost) after the last
    /// interval it sent; later intervals complete without it.
    pub fn end_part(&mut self, part: usize) {
        if self.finished[part].is_none() {
            self.finished[part] = Some(self.last_pushed[part].map_or(-1, i64::from));
        }
    }

    /// The next complete interval, if there is one.
    pub fn pop(&mut self, timeline: &Timeline) -> Option<Merged> {
        if let Some(prev) = self.popped.take() {
            self.next = timeline.next_interval(prev);
            // A worker that passed the jump point before it was decided
            // sent intervals the time line skips.
            let skipped: Vec<u32> = self.pending.range(..self.next).map(|(i, _)| *i).collect();
            for i in skipped {
                let p = self.pending.remove(&i).expect("present");
                self.carry
                    .get_or_insert_with(Snapshot::default)
                    .add(&p.snap);
            }
        }
        let (&index, p) = self.pending.iter().next()?;
        if index != self.next {
            return None;
        }
        let done_before = self
            .finished
            .iter()
            .filter(|f| f.is_some_and(|l| l < i64::from(index)))
            .count();
        if p.workers + done_before < self.workers {
            return None;
        }
        let mut p = self.pending.remove(&index).expect("present");
        if let Some(c) = self.carry.take() {
            p.snap.add(&c);
        }
        self.popped = Some(index);
        Some(Merged {
            index,
            snap: p.snap,
            end_s: p.end_s,
        })
    }

    /// Every worker sent its last snapshot and every interval was popped.
    pub fn is_done(&self) -> bool {
        self.finished.iter().all(Option::is_some) && self.pending.is_empty()
    }

    /// Whether worker `w` sent its last snapshot.
    pub fn has_finished(&self, w: usize) -> bool {
        self.finished[w].is_some()
    }

    /// The first worker still expected to send.
    pub fn first_running(&self) -> Option<usize> {
        self.finished.iter().position(Option::is_none)
    }

    /// The interval expected next (past the last one at the end).
    pub fn next_index(&self, timeline: &Timeline) -> u32 {
        match self.popped {
            Some(prev) => timeline.next_interval(prev),
            None => self.next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::{Bytes, Dur};
    use cacheoff_stats::Accum;
    use cacheoff_workload::{load, FillGoal, Overrides};

    fn msg(worker: u32, index: u32, xacts: u64, last: bool) -> WorkerInterval {
        let mut snap = Snapshot::default();
        snap.counters.xacts = xacts;
        WorkerInterval {
            part: worker,
            worker,
            index,
            end_s: f64::from(index + 1) * 5.0,
            snap: Box::new(snap),
            last: last.then(PlanDigest::default),
        }
    }

    fn timeline() -> Timeline {
        let mut w = load("simple", &Overrides::default()).unwrap();
        w.cache_size = Some(Bytes(1));
        w.phases[0].duration = Dur::secs(30.0);
        w.phases[0].goal = Some(FillGoal {
            fill: 1.0,
            freeze: false,
        });
        Timeline::new(&w)
    }

    #[test]
    fn intervals_complete_in_order_when_every_worker_sent_them() {
        let t = timeline();
        let mut m = Merger::new(2);
        m.push(msg(1, 1, 10, false));
        m.push(msg(0, 0, 1, false));
        assert!(m.pop(&t).is_none(), "worker 1 has not sent interval 0");
        m.push(msg(1, 0, 2, false));
        let a = m.pop(&t).unwrap();
        assert_eq!((a.index, a.snap.counters.xacts), (0, 3));
        assert!(m.pop(&t).is_none(), "worker 0 has not sent interval 1");
        // A worker that stopped early no longer holds intervals up.
        m.push(msg(0, 1, 5, true));
        assert_eq!(m.pop(&t).unwrap().snap.counters.xacts, 15);
        m.push(msg(1, 2, 7, true));
        let c = m.pop(&t).unwrap();
        assert_eq!((c.index, c.snap.counters.xacts), (2, 7));
        assert!(m.is_done());
    }

    #[test]
    fn a_part_that_ends_without_a_last_snapshot_no_longer_holds_intervals_up() {
        let t = timeline();
        let mut m = Merger::new(3);
        m.push(msg(0, 0, 1, false));
        m.push(msg(1, 0, 2, false));
        m.end_part(2);
        assert_eq!(
            m.pop(&t).unwrap().snap.counters.xacts,
            3,
            "part 2 never sent"
        );
        m.push(msg(0, 1, 1, true));
        assert!(m.pop(&t).is_none(), "part 1 is still running");
        m.end_part(1);
        assert_eq!(m.pop(&t).unwrap().snap.counters.xacts, 1);
        assert!(m.is_done());
        assert!(m.has_finished(1) && m.has_finished(2));
    }

    #[test]
    fn intervals_a_goal_jump_skips_are_folded_into_the_next() {
        let t = timeline();
        let mut m = Merger::new(1);
        for i in 0..5 {
            m.push(msg(0, i, 1, false));
        }
        assert_eq!(m.pop(&t).unwrap().index, 0);
        // The goal is met after interval 1: the phase ends after interval
        // 3, and interval 4 (still in the fill phase) is skipped.
        let b = m.pop(&t).unwrap();
        let mut phase = Accum::default();
        phase.add_interval(&b.snap, 5.0);
        phase.snap.counters.fill_bytes = 1;
        t.check_goal(b.index, &phase, &b.snap, 1);
        let j = t.jump().expect("goal met");
        assert_eq!((j.after, j.to), (3, 6));
        assert_eq!(m.pop(&t).unwrap().index, 2);
        assert_eq!(m.pop(&t).unwrap().index, 3);
        m.push(msg(0, 6, 1, true));
        let next = m.pop(&t).unwrap();
        assert_eq!(next.index, 6);
        assert_eq!(next.snap.counters.xacts, 2, "interval 4 folded in");
        assert!(m.is_done());
    }
}
