//! Collapsed forwarding: while one request fetches an object, others for
//! the same URL wait for that fetch instead of asking the origin again,
//! but not for ever.
//!
//! A fetch's body comes from the origin at the origin's pace, whatever
//! its leader's client does (`pump`), and the fetch reports its progress
//! here ([`Leader::progress`]). A waiter waits while the fetch keeps up:
//! it is late once it has received nothing for `collapse_wait` (from its
//! start, then from its last byte), or less than `collapse_min_rate`
//! bytes a second beyond its first `collapse_wait` ([`late_at`]). Every
//! waiter of a fetch judges it by the same figures, so they find it late
//! together; the first to look takes its place in the table and leads a
//! new fetch ([`Inflight::take_over`]), the others wait for that one.
//! A stalled origin sees one more request each `collapse_wait`, not one
//! per waiter. The late fetch goes on for its own client; if it stores
//! first, its object also answers the waiters of the fetch that took its
//! place.
//!
//! Locking: one mutex over the map, held only to join, take over or
//! leave; a fetch's progress is in atomics, its outcome in a `watch`.
//! Waiters get the stored object; or word that the reply was not stored,
//! and then go to the origin themselves; or the fetch's failure, which
//! they answer at once rather than each trying (and timing out) again;
//! or word that it was cut off, and then one of them takes over.

use cacheoff_cache::Object;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
// The runtime's clock, so tests can pause it.
use tokio::time::{timeout_at, Instant};

/// How a fetch others waited for ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    Stored(Arc<Object>),
    /// The reply is not stored (uncachable, larger than the store takes):
    /// known as soon as its head or its size says so.
    NotStored,
    /// The origin failed; the status the leader's client got.
    Failed(u16),
    /// The fetch ended without a verdict (its body was cut off, or its
    /// leader went away): a waiter takes over.
    Abandoned,
}

/// One fetch under way: what its waiters watch.
pub struct Fetch {
    started: Instant,
    /// Bytes of the reply (head and body) received so far.
    received: AtomicU64,
    /// When the last of them came, in nanoseconds after `started`.
    last_byte: AtomicU64,
    outcome: watch::Sender<Option<Outcome>>,
}

impl Fetch {
    fn late_at(&self, wait: Duration, min_rate: u64) -> Instant {
        let last = Duration::from_nanos(self.last_byte.load(Ordering::Relaxed));
        let received = self.received.load(Ordering::Relaxed);
        late_at(self.started, received, last, wait, min_rate)
    }

    fn new() -> Arc<Fetch> {
        Arc::new(Fetch {
            started: Instant::now(),
            received: AtomicU64::new(0),
            last_byte: AtomicU64::new(0),
            outcome: watch::Sender::new(None),
        })
    }
}

/// When a fetch that started at `started` and has received `received`
/// bytes, the last `last_byte` after its start, becomes late: `wait`
/// after its last byte (or its start), or once it falls behind `min_rate`
/// bytes a second after a grace of `wait` (0: no rate rule), whichever
/// comes first.
pub fn late_at(
    started: Instant,
    received: u64,
    last_byte: Duration,
    wait: Duration,
    min_rate: u64,
) -> Instant {
    // A bound past any run's length stands for "never" (no overflow).
    let after = |d: Duration| started.checked_add(d).unwrap_or(started + NEVER);
    let idle = after(last_byte.saturating_add(wait));
    if min_rate == 0 {
        return idle;
    }
    let paid = Duration::try_from_secs_f64(received as f64 / min_rate as f64).unwrap_or(NEVER);
    idle.min(after(wait.saturating_add(paid)))
}

const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

#[derive(Default)]
pub struct Inflight {
    fetches: Mutex<HashMap<u64, Arc<Fetch>>>,
}

/// The request that fetches; dropping it unfinished tells the waiters
/// the fetch was abandoned.
pub struct Leader {
    key: u64,
    inflight: Arc<Inflight>,
    fetch: Arc<Fetch>,
    ended: bool,
}

/// A request waiting for another's fetch.
pub struct Waiter {
    fetch: Arc<Fetch>,
    rx: watch::Receiver<Option<Outcome>>,
}

pub enum Join {
    Lead(Leader),
    Wait(Waiter),
}

impl Inflight {
    /// Leads the fetch of `key`, or waits for the one under way.
    pub fn join(self: &Arc<Self>, key: u64) -> Join {
        let mut map = self.fetches.lock().expect("inflight lock");
        if let Some(f) = map.get(&key) {
            return Join::Wait(Waiter::of(f.clone()));
        }
        Join::Lead(self.insert(&mut map, key))
    }

    /// Leads a fetch only if none is under way (reloads never wait).
    pub fn lead(self: &Arc<Self>, key: u64) -> Option<Leader> {
        match self.join(key) {
            Join::Lead(l) => Some(l),
            Join::Wait(_) => None,
        }
    }

    /// A waiter found its fetch late or abandoned: it leads a new fetch in
    /// that one's place, unless another waiter already did (then it waits
    /// for that one).
    pub fn take_over(self: &Arc<Self>, key: u64, gone: &Waiter) -> Join {
        let mut map = self.fetches.lock().expect("inflight lock");
        match map.get(&key) {
            Some(f) if !Arc::ptr_eq(f, &gone.fetch) => Join::Wait(Waiter::of(f.clone())),
            _ => Join::Lead(self.insert(&mut map, key)),
        }
    }

    fn insert(self: &Arc<Self>, map: &mut HashMap<u64, Arc<Fetch>>, key: u64) -> Leader {
        let fetch = Fetch::new();
        map.insert(key, fetch.clone());
        Leader {
            key,
            inflight: self.clone(),
            fetch,
            ended: false,
        }
    }
}

impl Waiter {
    fn of(fetch: Arc<Fetch>) -> Waiter {
        let rx = fetch.outcome.subscribe();
        Waiter { fetch, rx }
    }

    /// Waits for the fetch's outcome while it keeps up (see [`late_at`]);
    /// `None` once it is late.
    pub async fn wait(&mut self, wait: Duration, min_rate: u64) -> Option<Outcome> {
        loop {
            let due = self.fetch.late_at(wait, min_rate);
            let got = match timeout_at(due, self.rx.wait_for(Option::is_some)).await {
                Ok(Ok(v)) => v.clone(),
                // The sender lives as long as the fetch: not reached.
                Ok(Err(_)) => Some(Outcome::Abandoned),
                Err(_) => None,
            };
            // Late, unless bytes came meanwhile.
            if got.is_some() || Instant::now() >= self.fetch.late_at(wait, min_rate) {
                return got;
            }
        }
    }
}

impl Leader {
    /// `bytes` more of the reply arrived.
    pub fn progress(&self, bytes: u64) {
        let f = &self.fetch;
        f.received.fetch_add(bytes, Ordering::Relaxed);
        let at = f.started.elapsed().as_nanos();
        f.last_byte
            .store(u64::try_from(at).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The fetch ended: `stored` is what it left in the store, if anything.
    pub fn finish(self, stored: Option<Arc<Object>>) {
        self.end(stored.map_or(Outcome::NotStored, Outcome::Stored));
    }

    /// The fetch failed; waiters answer `status` too.
    pub fn fail(self, status: u16) {
        self.end(Outcome::Failed(status));
    }

    fn end(mut self, outcome: Outcome) {
        self.ended = true;
        self.leave(&outcome);
        self.fetch.outcome.send_replace(Some(outcome));
    }

    /// Leaves the table if the fetch is still in it. One that was taken
    /// over and stored hands its object to the waiters of the fetch in
    /// its place (which goes on for its own client).
    fn leave(&self, outcome: &Outcome) {
        let mut map = self.inflight.fetches.lock().expect("inflight lock");
        match map.get(&self.key) {
            Some(f) if Arc::ptr_eq(f, &self.fetch) => {
                map.remove(&self.key);
            }
            Some(successor) if matches!(outcome, Outcome::Stored(_)) => {
                successor.outcome.send_if_modified(|v| {
                    let unanswered = v.is_none();
                    if unanswered {
                        *v = Some(outcome.clone());
                    }
                    unanswered
                });
            }
            _ => {}
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if !self.ended {
            self.leave(&Outcome::Abandoned);
            self.fetch.outcome.send_replace(Some(Outcome::Abandoned));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_millis(100);

    #[test]
    fn a_fetch_is_late_after_a_silence_or_below_the_rate() {
        let t = Instant::now();
        let s = Duration::from_secs;
        // Nothing yet: late one wait after the start.
        assert_eq!(late_at(t, 0, s(0), s(5), 1000), t + s(5));
        // Bytes at the rate keep it going ...
        assert_eq!(late_at(t, 10_000, s(9), s(5), 1000), t + s(14));
        // ... until a silence of one wait ...
        assert_eq!(late_at(t, 1_000_000, s(9), s(5), 1000), t + s(14));
        // ... or bytes that come often but too few.
        assert_eq!(late_at(t, 2_000, s(9), s(5), 1000), t + s(7));
        // No rate rule: only silences count.
        assert_eq!(late_at(t, 0, s(9), s(5), 0), t + s(14));
        // Absurd bounds mean "never", not a panic.
        assert!(late_at(t, u64::MAX, s(9), Duration::MAX, 1) > t + s(1 << 30));
    }

    fn lead(j: Join) -> Leader {
        match j {
            Join::Lead(l) => l,
            Join::Wait(_) => panic!("waits"),
        }
    }

    fn waiter(j: Join) -> Waiter {
        match j {
            Join::Wait(w) => w,
            Join::Lead(_) => panic!("leads"),
        }
    }

    fn object() -> Arc<Object> {
        let fresh = cacheoff_cache::Freshness::of_reply(std::iter::empty(), 0, 0);
        Arc::new(Object {
            url: "http://o/x".into(),
            status: 200,
            head: bytes::Bytes::new(),
            body: bytes::Bytes::from_static(b"x"),
            fresh,
            timing: None,
            vary: None,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn late_waiters_elect_one_new_leader_and_the_rest_wait_for_it() {
        let table = Arc::new(Inflight::default());
        let first = lead(table.join(1));
        let mut a = waiter(table.join(1));
        let mut b = waiter(table.join(1));
        // Progress keeps them waiting past one wait.
        tokio::time::sleep(WAIT * 3 / 4).await;
        first.progress(10);
        assert!(a.wait(WAIT, 0).await.is_none());
        assert!(Instant::now() >= a.fetch.started + WAIT * 7 / 4);
        assert!(b.wait(WAIT, 0).await.is_none());
        // One takes over; the other waits for it, and so does a newcomer.
        let second = lead(table.take_over(1, &a));
        let mut b = waiter(table.take_over(1, &b));
        let mut c = waiter(table.join(1));
        assert!(Arc::ptr_eq(&b.fetch, &second.fetch));
        // The late fetch ends: the table keeps its successor.
        first.fail(504);
        assert!(Arc::ptr_eq(&waiter(table.join(1)).fetch, &second.fetch));
        second.finish(None);
        assert!(matches!(b.wait(WAIT, 0).await, Some(Outcome::NotStored)));
        assert!(matches!(c.wait(WAIT, 0).await, Some(Outcome::NotStored)));
        assert!(matches!(table.join(1), Join::Lead(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_fetch_that_stores_answers_its_successors_waiters() {
        let table = Arc::new(Inflight::default());
        let first = lead(table.join(1));
        let mut a = waiter(table.join(1));
        assert!(a.wait(WAIT, 0).await.is_none());
        let second = lead(table.take_over(1, &a));
        let mut b = waiter(table.join(1));
        first.finish(Some(object()));
        assert!(matches!(b.wait(WAIT, 0).await, Some(Outcome::Stored(_))));
        // The successor is still fetching for its client, in the table.
        assert!(matches!(table.join(1), Join::Wait(_)));
        drop(second);
        assert!(matches!(table.join(1), Join::Lead(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_gone_without_a_verdict_abandons_its_fetch() {
        let table = Arc::new(Inflight::default());
        let first = lead(table.join(1));
        let mut a = waiter(table.join(1));
        drop(first);
        assert!(matches!(a.wait(WAIT, 0).await, Some(Outcome::Abandoned)));
        // Nobody is in the table: the waiter leads.
        assert!(matches!(table.take_over(1, &a), Join::Lead(_)));
    }
}
