//! What a listener holds at most for its clients: byte budgets
//! ([`Budget`]: bodies being buffered, copies queued), a cap on open
//! connections ([`Slots`]), and the pace a request body must keep
//! ([`BodyClock`]). Shared by the reference proxy and the Multiplier, so
//! both bound the same things by the same rules.
//!
//! Budgets and slots are shared by every thread: atomics taken with a
//! compare-and-swap so a cap is never overshot, given back by the guards'
//! `Drop`, so no path (error, timeout, dropped task) can leak them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes held at once, up to a cap; the most ever held is kept.
#[derive(Debug)]
pub struct Budget {
    used: AtomicU64,
    peak: AtomicU64,
    cap: u64,
}

impl Budget {
    pub fn new(cap: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            cap,
        })
    }

    /// A charge of nothing yet, grown as bytes come.
    pub fn charge(self: &Arc<Budget>) -> Charge {
        Charge {
            budget: self.clone(),
            bytes: 0,
        }
    }

    /// A charge of `bytes`, or `None` if they do not fit.
    pub fn take(self: &Arc<Budget>, bytes: u64) -> Option<Charge> {
        let mut c = self.charge();
        c.grow_to(bytes).then_some(c)
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }
}

/// Bytes one holder has of a [`Budget`]; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Charge {
    /// Grows the charge to `total` bytes; false (and unchanged) if the
    /// budget cannot spare them. Never shrinks.
    pub fn grow_to(&mut self, total: u64) -> bool {
        let Some(more) = total.checked_sub(self.bytes).filter(|&m| m > 0) else {
            return true;
        };
        let cap = self.budget.cap;
        let took = self
            .budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(more).filter(|&n| n <= cap)
            });
        match took {
            Ok(before) => {
                self.budget.peak.fetch_max(before + more, Ordering::AcqRel);
                self.bytes = total;
                true
            }
            Err(_) => false,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Client connections open at once, up to a cap.
#[derive(Debug)]
pub struct Slots {
    open: AtomicUsize,
    max: usize,
}

impl Slots {
    pub fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            open: AtomicUsize::new(0),
            max,
        })
    }

    /// A slot for one more connection, or `None` at the cap.
    pub fn take(self: &Arc<Slots>) -> Option<Slot> {
        let max = self.max;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self.clone()))
    }

    /// The slot of a connection that was just told to close, taken before
    /// it has gone: over the cap by at most the evictions under way.
    pub fn replace(self: &Arc<Slots>) -> Slot {
        self.open.fetch_add(1, Ordering::AcqRel);
        Slot(self.clone())
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// One open client connection; its slot is free again when dropped.
#[derive(Debug)]
pub struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The pace a request body must keep, after Apache's mod_reqtimeout:
/// `grace` from the end of the head, plus one second for every
/// `min_rate` bytes received. A client sending at least `min_rate` bytes
/// a second never hits it; one dripping a byte every few seconds does,
/// and a chunked body is timed as a sized one.
#[derive(Debug, Clone, Copy)]
pub struct BodyClock {
    pub start: Instant,
    pub grace: Duration,
    /// Bytes per second; 0 turns the rule off.
    pub min_rate: u64,
}

impl BodyClock {
    /// When the body must have grown past `received` bytes.
    pub fn deadline(&self, received: u64) -> Option<Instant> {
        if self.min_rate == 0 {
            return None;
        }
        let earned = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
        Some(self.start + self.grace + earned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_clock_earns_time_with_bytes() {
        let start = Instant::now();
        let c = BodyClock {
            start,
            grace: Duration::from_secs(2),
            min_rate: 1000,
        };
        assert_eq!(c.deadline(0), Some(start + Duration::from_secs(2)));
        assert_eq!(c.deadline(500), Some(start + Duration::from_millis(2500)));
        assert_eq!(BodyClock { min_rate: 0, ..c }.deadline(10), None);
    }

    #[test]
    fn charges_share_one_budget_give_it_back_and_keep_the_peak() {
        let b = Budget::new(100);
        let mut r1 = b.charge();
        assert!(r1.grow_to(60));
        let mut r2 = b.charge();
        assert!(!r2.grow_to(41));
        assert!(r2.grow_to(40));
        assert!(r1.grow_to(30), "shrinking is a no-op");
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        assert!(b.take(61).is_none());
        drop(r2);
        assert_eq!((b.used(), b.peak()), (0, 100));
    }

    #[test]
    fn slots_stop_at_the_cap_and_free_on_drop() {
        let s = Slots::new(2);
        let a = s.take().unwrap();
        let _b = s.take().unwrap();
        assert!(s.take().is_none());
        let over = s.replace();
        assert_eq!(s.open(), 3);
        drop((a, over));
        assert!(s.take().is_some());
    }
}
