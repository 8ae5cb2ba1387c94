//! False hits: copies no cache may hold.
//!
//! A hit's echo names the transaction whose reply the cache kept. After a
//! successful POST to a URL, caches must drop what they hold for it (RFC
//! 9111 §4.4), so a later hit may not carry the reply of a request that
//! had finished before the POST was sent — nor the POST's own reply. The
//! ledger records, per object, the POST that last emptied caches and the
//! transactions that might still have been on their way into a cache when
//! it was sent: in flight, or finished less than [`FENCE`] before it (a
//! cache may store a reply a moment after its client has it). Only
//! transactions of this worker can be judged: objects belong to the worker
//! whose robots request them.

use cacheoff_base::XactId;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// Replies finished this shortly before a POST may still enter a cache
/// after it.
pub const FENCE: Duration = Duration::from_secs(1);

/// Objects whose POSTs are remembered; the oldest are forgotten beyond
/// this (their later hits go unjudged), so memory stays bounded.
const MAX_MARKS: usize = 1 << 16;

/// One POST to an object and what it leaves open.
#[derive(Debug)]
struct Barrier {
    post: XactId,
    /// Transactions for the object sent before the POST that finished after
    /// it was sent, or within the fence before.
    open: HashSet<XactId>,
    /// When its reply arrived; `None` while it is in flight.
    done: Option<Instant>,
}

#[derive(Debug, Default)]
struct Marks {
    /// The last POST whose reply arrived successfully.
    judged: Option<Barrier>,
    /// A POST in flight.
    pending: Option<Barrier>,
}

#[derive(Debug, Default)]
pub struct Ledger {
    marks: HashMap<u64, Marks>,
    /// Objects in `marks`, oldest first.
    marked: VecDeque<u64>,
    /// Transactions finished within the fence: (when, xact, object).
    recent: VecDeque<(Instant, XactId, u64)>,
}

impl Ledger {
    /// A POST for `oid` is being sent as transaction `xact`.
    pub fn post_sent(&mut self, oid: u64, xact: XactId, now: Instant) {
        self.prune(now);
        let open = self
            .recent
            .iter()
            .filter(|&&(_, _, o)| o == oid)
            .map(|&(_, x, _)| x)
            .collect();
        let marks = self.marks.entry(oid).or_insert_with(|| {
            self.marked.push_back(oid);
            Marks::default()
        });
        marks.pending = Some(Barrier {
            post: xact,
            open,
            done: None,
        });
        if self.marked.len() > MAX_MARKS {
            let oldest = self.marked.pop_front().expect("not empty");
            self.marks.remove(&oldest);
        }
    }

    /// Transaction `xact` for `oid` has ended (its reply arrived or it
    /// failed); `post_ok` when it was a POST answered with success.
    pub fn finished(&mut self, oid: u64, xact: XactId, now: Instant, post_ok: Option<bool>) {
        self.prune(now);
        self.recent.push_back((now, xact, oid));
        let Some(marks) = self.marks.get_mut(&oid) else {
            return;
        };
        for b in [&mut marks.judged, &mut marks.pending]
            .into_iter()
            .flatten()
        {
            if xact.seq() < b.post.seq() {
                b.open.insert(xact);
            }
        }
        match post_ok {
            Some(ok) if marks.pending.as_ref().is_some_and(|b| b.post == xact) => {
                let mut b = marks.pending.take().expect("checked");
                if ok {
                    b.done = Some(now);
                    marks.judged = Some(b);
                }
            }
            _ => {}
        }
    }

    /// Whether a hit for `oid`, sent at `sent`, that carries the reply of
    /// transaction `filler`, is false. `issued` is the last transaction
    /// this worker has sent.
    pub fn is_false_hit(&self, oid: u64, filler: XactId, sent: Instant, issued: XactId) -> bool {
        if filler.worker() != issued.worker() {
            return false;
        }
        let seq = filler.seq();
        if seq == 0 || seq > issued.seq() {
            // No such transaction was ever sent.
            return true;
        }
        let Some(b) = self.marks.get(&oid).and_then(|m| m.judged.as_ref()) else {
            return false;
        };
        let emptied = b.done.is_some_and(|d| sent > d);
        emptied && (filler == b.post || (seq < b.post.seq() && !b.open.contains(&filler)))
    }

    fn prune(&mut self, now: Instant) {
        while self
            .recent
            .front()
            .is_some_and(|&(t, _, _)| now.saturating_duration_since(t) > FENCE)
        {
            self.recent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transaction `n` of worker 3.
    fn x(n: u64) -> XactId {
        XactId::new(3, n)
    }

    #[test]
    fn a_copy_from_before_a_post_is_false_and_one_from_after_is_not() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut l = Ledger::default();
        // GET 1 finishes long before POST 3 is sent; GET 2 is in flight.
        l.finished(7, x(1), at(0), None);
        l.post_sent(7, x(3), at(2000));
        l.finished(7, x(2), at(2001), None);
        // Before the POST's reply, nothing is judged.
        assert!(!l.is_false_hit(7, x(1), at(2002), x(4)));
        l.finished(7, x(3), at(2005), Some(true));
        assert!(
            l.is_false_hit(7, x(1), at(2010), x(5)),
            "kept after the POST"
        );
        assert!(
            l.is_false_hit(7, x(3), at(2010), x(5)),
            "the POST's own reply"
        );
        assert!(!l.is_false_hit(7, x(2), at(2010), x(5)), "was in flight");
        assert!(
            !l.is_false_hit(7, x(4), at(2010), x(5)),
            "sent after the POST"
        );
        // A hit sent before the POST's reply arrived is not judged.
        assert!(!l.is_false_hit(7, x(1), at(2004), x(5)));
        // Other objects and other workers' transactions are not judged.
        assert!(!l.is_false_hit(8, x(1), at(2010), x(5)));
        assert!(!l.is_false_hit(7, XactId::new(4, 1), at(2010), x(5)));
        // An echo of a transaction never sent.
        assert!(l.is_false_hit(9, x(99), at(2010), x(5)));
    }

    #[test]
    fn replies_just_before_a_post_and_failed_posts_are_given_the_benefit() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut l = Ledger::default();
        l.finished(7, x(1), at(0), None);
        l.post_sent(7, x(2), at(500));
        l.finished(7, x(2), at(510), Some(true));
        assert!(!l.is_false_hit(7, x(1), at(600), x(3)), "inside the fence");

        l.finished(8, x(4), at(0), None);
        l.post_sent(8, x(5), at(3000));
        l.finished(8, x(5), at(3010), Some(false));
        assert!(!l.is_false_hit(8, x(4), at(3100), x(6)), "the POST failed");
    }

    #[test]
    fn memory_stays_bounded() {
        let t0 = Instant::now();
        let mut l = Ledger::default();
        for oid in 0..(MAX_MARKS as u64 + 10) {
            l.post_sent(oid, x(oid + 1), t0);
        }
        assert_eq!(l.marks.len(), MAX_MARKS);
        assert_eq!(l.marked.len(), MAX_MARKS);
        assert!(!l.marks.contains_key(&0), "the oldest went first");
    }
}
