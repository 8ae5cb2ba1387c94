//! A worker's history of requested objects: which object a robot asks for
//! next, and whether a repeat is an offered hit.
//!
//! Owned by one worker (single-threaded); robots of that worker share it.

use cacheoff_base::rng::Rng;
use cacheoff_workload::WORLD_SHIFT as WORKER_SHIFT;
/// Repeat requests choose among at most this many recent objects unless
/// the workload caps the working set lower.
pub const DEFAULT_WINDOW: u64 = 1 << 22;

pub struct World {
    worker: u64,
    next: u64,
    window: u64,
    /// Ring bitset over the window: the object's first fetch completed, so a
    /// cache could have it.
    fetched: Vec<u64>,
}

/// One choice of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub oid: u64,
    pub seq: u64,
    pub repeat: bool,
}

impl World {
    pub fn new(worker: u32, window: Option<u64>) -> World {
        let window = window.unwrap_or(DEFAULT_WINDOW).clamp(1, DEFAULT_WINDOW);
        World {
            worker: u64::from(worker),
            next: 0,
            window,
            fetched: vec![0; window.div_ceil(64) as usize],
        }
    }

    /// Chooses a repeat (with probability `recurrence`, uniformly among the
    /// window's objects) or a new object.
    pub fn pick<R: Rng + ?Sized>(&mut self, rng: &mut R, recurrence: f64) -> Pick {
        if self.next > 0 && rng.gen::<f64>() < recurrence {
            let lo = self.next.saturating_sub(self.window);
            let seq = rng.gen_range(lo..self.next);
            return Pick {
                oid: self.oid(seq),
                seq,
                repeat: true,
            };
        }
        let seq = self.next;
        self.next += 1;
        self.set(seq, false);
        Pick {
            oid: self.oid(seq),
            seq,
            repeat: false,
        }
    }

    fn oid(&self, seq: u64) -> u64 {
        self.worker << WORKER_SHIFT | seq
    }

    fn in_window(&self, seq: u64) -> bool {
        seq < self.next && self.next - seq <= self.window
    }

    fn set(&mut self, seq: u64, v: bool) {
        let i = seq % self.window;
        let (w, b) = ((i / 64) as usize, i % 64);
        if v {
            self.fetched[w] |= 1 << b;
        } else {
            self.fetched[w] &= !(1 << b);
        }
    }

    /// Records that a fetch of `seq` completed.
    pub fn mark_fetched(&mut self, seq: u64) {
        if self.in_window(seq) {
            self.set(seq, true);
        }
    }

    pub fn is_fetched(&self, seq: u64) -> bool {
        if !self.in_window(seq) {
            return false;
        }
        let i = seq % self.window;
        self.fetched[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::rng::{stream, Stream};

    #[test]
    fn recurrence_and_fetched_marks() {
        let mut w = World::new(3, Some(100));
        let mut rng = stream(1, Stream::Robot(0));
        let n = 100_000;
        let mut repeats = 0;
        for _ in 0..n {
            let p = w.pick(&mut rng, 0.7);
            assert_eq!(p.oid >> WORKER_SHIFT, 3);
            if p.repeat {
                repeats += 1;
                assert!(w.next - p.seq <= 100, "repeat inside the window");
            } else {
                assert!(!w.is_fetched(p.seq));
                w.mark_fetched(p.seq);
                assert!(w.is_fetched(p.seq));
            }
        }
        let share = f64::from(repeats) / f64::from(n);
        assert!((share - 0.7).abs() < 0.01, "{share}");
        // Objects that fell out of the window are no longer offered.
        assert!(!w.is_fetched(0));
    }
}
