//! What bounds one client's hold on the proxy: the pace a request
//! body must keep ([`BodyClock`]), the proxy-wide budget of buffered
//! upload bytes ([`UploadBudget`]) and the cap on client connections
//! ([`Slots`]), and how long a keep-alive connection may wait for its
//! next request ([`IdleTimer`]).
//!
//! The budget and the slots are shared by every worker: plain atomics,
//! taken with a compare-and-swap so a limit is never overshot, and given
//! back by the guards' `Drop`, so no path (error, timeout, dropped task)
//! can leak them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pace a request body must keep, after Apache's mod_reqtimeout:
/// `grace` from the end of the head, plus one second for every
/// `min_rate` bytes received. A client sending at least `min_rate` bytes
/// a second never hits it; one dripping a byte every few seconds does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyClock {
    pub start: Instant,
    pub grace: Duration,
    /// Bytes per second; 0 turns the rule off.
    pub min_rate: u64,
}

impl BodyClock {
    /// When the body must have grown past `received` bytes.
    pub(crate) fn deadline(&self, received: u64) -> Option<Instant> {
        if self.min_rate == 0 {
            return None;
        }
        let earned = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
        Some(self.start + self.grace + earned)
    }
}

/// The wait of one connection for its next request, bounded by the idle
/// timeout with one timer for the connection's life instead of one per
/// request: a timer set and cancelled for every request would move an
/// entry in the runtime's timer wheel each time (about a tenth of the
/// proxy's own instructions per hit). The timer is set when a wait first
/// blocks; when it fires, the wait that is under way then is timed from
/// its own start and the timer set again for what is left, if anything.
pub(crate) struct IdleTimer {
    limit: Duration,
    since: Instant,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl IdleTimer {
    pub(crate) fn new(limit: Duration) -> IdleTimer {
        IdleTimer {
            limit,
            since: Instant::now(),
            sleep: None,
        }
    }

    /// A wait for the next request starts now.
    pub(crate) fn start(&mut self) {
        self.since = Instant::now();
    }

    /// Resolves once the current wait has lasted the idle limit.
    pub(crate) async fn expired(&mut self) {
        loop {
            let due = (self.since + self.limit).into();
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
            // Its deadline is never later than `due` (waits only start
            // later); one that fired for an earlier wait is set again.
            if sleep.is_elapsed() {
                sleep.as_mut().reset(due);
            }
            sleep.as_mut().await;
            if Instant::now() >= self.since + self.limit {
                return;
            }
        }
    }
}

/// Bytes of request bodies buffered across all connections.
#[derive(Debug)]
pub(crate) struct UploadBudget {
    used: AtomicU64,
    cap: u64,
}

impl UploadBudget {
    pub(crate) fn new(cap: u64) -> UploadBudget {
        UploadBudget {
            used: AtomicU64::new(0),
            cap,
        }
    }

    /// An empty reservation, grown as a body is buffered.
    pub(crate) fn reserve(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            bytes: 0,
        }
    }

    #[cfg(test)]
    fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// Upload bytes one request holds; given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    budget: &'a UploadBudget,
    bytes: u64,
}

impl Reservation<'_> {
    /// Grows the reservation to `total` bytes; false (and unchanged) if
    /// the budget cannot spare them.
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
            })
            .is_ok();
        if took {
            self.bytes = total;
        }
        took
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Client connections open across the proxy, up to a cap.
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
}

/// One open client connection; its slot is free again when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
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
    fn reservations_share_one_budget_and_give_it_back() {
        let b = UploadBudget::new(100);
        let mut r1 = b.reserve();
        assert!(r1.grow_to(60));
        let mut r2 = b.reserve();
        assert!(!r2.grow_to(41));
        assert!(r2.grow_to(40));
        assert!(r1.grow_to(30), "shrinking is a no-op");
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn slots_stop_at_the_cap_and_free_on_drop() {
        let s = Slots::new(2);
        let a = s.take().unwrap();
        let _b = s.take().unwrap();
        assert!(s.take().is_none());
        drop(a);
        assert!(s.take().is_some());
    }
}
