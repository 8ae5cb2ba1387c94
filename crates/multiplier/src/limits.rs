//! Per client worker, the connections waiting for a request
//! ([`Waiting`]): the ones a new connection may close at the cap. (Byte
//! budgets, connection slots and the body's pace are `cacheoff_access`'s,
//! as the proxy's are.) A `Waiting` belongs to one client worker's
//! thread (no lock).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;
use tokio::sync::Notify;

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
    use std::time::Duration;

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
