//! What bounds the Multiplier's hold on memory and connections: byte
//! budgets ([`Budget`]: the copies queued for a proxy, the request bodies
//! being buffered), the cap on client connections ([`Slots`]), the body's
//! pace ([`body_deadline`]) and, per client worker, the connections
//! waiting for a request ([`Waiting`]), the ones a new connection may
//! close at the cap.
//!
//! Budgets and slots are shared by every thread: atomics taken with a
//! compare-and-swap so a cap is never overshot, given back by the guards'
//! `Drop`, so no path (error, timeout, dropped task, a copy cut off at
//! stop) can leak them. A `Waiting` belongs to one client worker's
//! thread (no lock).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Bytes held at once, up to a cap; the most ever held is kept.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicU64,
    peak: AtomicU64,
    cap: u64,
}

impl Budget {
    pub(crate) fn new(cap: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            cap,
        })
    }

    /// A charge of `bytes`, or `None` if they do not fit.
    pub(crate) fn take(self: &Arc<Budget>, bytes: u64) -> Option<Charge> {
        let mut c = Charge {
            budget: self.clone(),
            bytes: 0,
        };
        c.grow_to(bytes).then_some(c)
    }

    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }
}

/// Bytes one holder has of a [`Budget`]; given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Charge {
    /// Grows the charge to `total` bytes; false (and unchanged) if the
    /// budget cannot spare them. Never shrinks.
    pub(crate) fn grow_to(&mut self, total: u64) -> bool {
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

/// When a request body must have grown past `received` bytes: `grace`
/// from the end of its head plus one second per `min_rate` bytes received
/// (Apache's mod_reqtimeout rule: a dripping body falls behind, a steady
/// one never does, and a chunked one is timed as a sized one). `None`
/// when `min_rate` is 0.
pub(crate) fn body_deadline(
    start: Instant,
    grace: Duration,
    min_rate: u64,
    received: u64,
) -> Option<Instant> {
    if min_rate == 0 {
        return None;
    }
    let earned = Duration::from_secs_f64(received as f64 / min_rate as f64);
    Some(start + grace + earned)
}

/// Client connections open across the workers, up to a cap.
#[derive(Debug)]
pub(crate) struct Slots {
    open: AtomicUsize,
    max: usize,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            open: AtomicUsize::new(0),
            max,
        })
    }

    /// A slot for one more connection, or `None` at the cap.
    pub(crate) fn take(self: &Arc<Slots>) -> Option<Slot> {
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
    pub(crate) fn replace(self: &Arc<Slots>) -> Slot {
        self.open.fetch_add(1, Ordering::AcqRel);
        Slot(self.clone())
    }

    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// One open client connection; its slot is free again when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One worker's connections that wait for (the rest of) a request head,
/// oldest wait first.
#[derive(Default)]
pub(crate) struct Waiting {
    next: Cell<u64>,
    by_age: RefCell<BTreeMap<(Instant, u64), Rc<Notify>>>,
}

impl Waiting {
    /// A connection starts waiting for a request, since `since`.
    pub(crate) fn enter(self: &Rc<Waiting>, since: Instant) -> WaitEntry {
        let id = self.next.get();
        self.next.set(id + 1);
        let notify = Rc::new(Notify::new());
        self.by_age.borrow_mut().insert((since, id), notify.clone());
        WaitEntry {
            reg: self.clone(),
            key: (since, id),
            notify,
        }
    }

    /// Tells the connection that has waited longest to close; false if
    /// none waits.
    pub(crate) fn evict_oldest(&self) -> bool {
        let oldest = self.by_age.borrow_mut().pop_first();
        oldest.map(|(_, n)| n.notify_one()).is_some()
    }
}

/// A connection's place among the waiting; it leaves when dropped.
pub(crate) struct WaitEntry {
    reg: Rc<Waiting>,
    key: (Instant, u64),
    notify: Rc<Notify>,
}

impl WaitEntry {
    /// Resolves once the connection was chosen to close (also if that
    /// happened before this was polled).
    pub(crate) async fn evicted(&self) {
        self.notify.notified().await
    }
}

impl Drop for WaitEntry {
    fn drop(&mut self) {
        self.reg.by_age.borrow_mut().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_share_one_budget_give_it_back_and_the_peak_stays() {
        let b = Budget::new(100);
        let c1 = b.take(60).unwrap();
        assert!(b.take(41).is_none());
        let mut c2 = b.take(10).unwrap();
        assert!(c2.grow_to(40));
        assert!(!c2.grow_to(41));
        assert!(c2.grow_to(5), "shrinking is a no-op");
        assert_eq!(b.used(), 100);
        drop(c1);
        assert_eq!(b.used(), 40);
        drop(c2);
        assert_eq!((b.used(), b.peak()), (0, 100));
    }

    #[test]
    fn the_body_clock_earns_time_with_bytes() {
        let t = Instant::now();
        let g = Duration::from_secs(2);
        assert_eq!(body_deadline(t, g, 1000, 0), Some(t + g));
        assert_eq!(
            body_deadline(t, g, 1000, 500),
            Some(t + Duration::from_millis(2500))
        );
        assert_eq!(body_deadline(t, g, 0, 10), None);
    }

    #[test]
    fn slots_stop_at_the_cap_and_free_on_drop() {
        let s = Slots::new(2);
        let a = s.take().unwrap();
        let _b = s.take().unwrap();
        assert!(s.take().is_none());
        let r = s.replace();
        assert_eq!(s.open(), 3);
        drop((a, r));
        assert!(s.take().is_some());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_longest_wait_is_evicted_first_and_leavers_are_not() {
        let w = Rc::new(Waiting::default());
        let t = Instant::now();
        let young = w.enter(t + Duration::from_secs(2));
        let old = w.enter(t);
        let gone = w.enter(t - Duration::from_secs(1));
        drop(gone);
        assert!(w.evict_oldest());
        // Told before it listens: the permit waits for it.
        old.evicted().await;
        assert!(w.evict_oldest());
        young.evicted().await;
        assert!(!w.evict_oldest());
    }
}
