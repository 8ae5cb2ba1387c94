//! The hit ratios a trace allows at best, computed in one pass over its
//! records: an infinite cache, an LRU cache and Belady's MIN of a size.
//!
//! Ratios are document-hit ratios in percent: hits over all requests. Only
//! GET requests that the trace does not mark uncachable are *eligible*: they
//! may hit and fill the cache; the others (other methods, HEAD included,
//! and uncachable statuses) count in the denominator, never hit and leave
//! the cache as it is. An object is its key; its size is that of its first
//! eligible request (later changes are not modelled).
//!
//! Memory: per object, its index in a map and its size and LRU links (a few
//! dozen bytes); per request, nothing for the infinite and LRU caches. MIN
//! needs each request's next use: oracleGeneral traces carry it, so MIN
//! then runs along in the pass with no per-request memory; other traces
//! keep 4 bytes (the object's index) per eligible request that fits the
//! cache, and at `finish` 4 more (the next use, found by a backward pass)
//! plus 4 per object: at most 8 bytes per request.

use std::collections::{BTreeSet, HashMap};

use crate::{Method, Record, NEVER};

/// The ceilings of one trace for one cache size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceilings {
    /// An infinite cache: every eligible request of an object hits but the
    /// first (%).
    pub infinite: f64,
    /// An LRU cache of the given bytes; larger objects are never stored (%).
    pub lru: f64,
    /// Belady's MIN with variable sizes (see [`CeilingCalc`]) (%); NaN past
    /// 2^32 - 2 eligible requests or objects.
    pub belady: f64,
    pub requests: u64,
    /// Eligible requests: GETs not marked uncachable.
    pub cachable_requests: u64,
    /// Distinct keys, over all requests.
    pub objects: u64,
    /// Bytes of all requests.
    pub bytes: u64,
    /// The last record's time (records start at 0).
    pub duration_us: u64,
}

const NONE: u32 = u32::MAX;

/// The one-pass calculator: `add` each record, then `finish`.
///
/// MIN here is the farthest-next-use rule with bypass, for variable sizes:
/// a hit keeps the object (dropping it if it is never used again); on a
/// miss of an object used again and no larger than the cache, the objects
/// with the farthest next use among the stored ones *and the requested
/// one* are removed until the rest fits; if the requested object is
/// reached, it is not admitted (the ones removed before it stay out). For
/// unit sizes this is Belady's optimal MIN; for variable sizes it is the
/// standard farthest-next-use heuristic, not the optimum (which is
/// NP-hard), so a ceiling in practice rather than a proven bound.
#[derive(Debug)]
pub struct CeilingCalc {
    cache_bytes: u64,
    ids: HashMap<u64, u32>,
    /// Per object: the size of its first eligible request, or `u64::MAX`.
    sizes: Vec<u64>,
    lru: Lru,
    future: Future,
    requests: u64,
    eligible: u64,
    bytes: u64,
    duration_us: u64,
    infinite_hits: u64,
    lru_hits: u64,
    min_hits: u64,
    overflow: bool,
}

#[derive(Debug)]
enum Future {
    /// Not known yet: decided by the first record.
    Undecided,
    /// Next uses come with the records (oracleGeneral): MIN runs along.
    Given(Min),
    /// Next uses found at the end from each eligible request's object.
    Later(Vec<u32>),
}

const UNSEEN: u64 = u64::MAX;

impl CeilingCalc {
    pub fn new(cache_bytes: u64) -> Self {
        CeilingCalc {
            cache_bytes,
            ids: HashMap::new(),
            sizes: Vec::new(),
            lru: Lru::new(cache_bytes),
            future: Future::Undecided,
            requests: 0,
            eligible: 0,
            bytes: 0,
            duration_us: 0,
            infinite_hits: 0,
            lru_hits: 0,
            min_hits: 0,
            overflow: false,
        }
    }

    pub fn add(&mut self, r: &Record) {
        self.requests += 1;
        self.bytes = self.bytes.saturating_add(r.size);
        self.duration_us = self.duration_us.max(r.time_us);
        if matches!(self.future, Future::Undecided) {
            self.future = match r.next_access_vtime {
                Some(_) => Future::Given(Min::new(self.cache_bytes)),
                None => Future::Later(Vec::new()),
            };
        }
        let next_id = self.sizes.len();
        let obj = match u32::try_from(next_id) {
            Ok(id) if id != NONE => *self.ids.entry(r.key).or_insert(id),
            _ => match self.ids.get(&r.key) {
                Some(&o) => o,
                None => {
                    self.overflow = true;
                    return;
                }
            },
        };
        if obj as usize == self.sizes.len() {
            self.sizes.push(UNSEEN);
            self.lru.grow();
        }
        if r.method != Method::Get || r.cachable == Some(false) {
            return;
        }
        self.eligible += 1;
        let size = match self.sizes[obj as usize] {
            UNSEEN => {
                self.sizes[obj as usize] = r.size;
                r.size
            }
            s => {
                self.infinite_hits += 1;
                s
            }
        };
        if size > self.cache_bytes {
            return;
        }
        self.lru_hits += u64::from(self.lru.access(obj, size));
        match &mut self.future {
            Future::Given(min) => {
                let next = r.next_access_vtime.unwrap_or(NEVER);
                self.min_hits += u64::from(min.access(u64::from(obj), size, next));
            }
            Future::Later(uses) if uses.len() < NONE as usize - 1 => uses.push(obj),
            Future::Later(_) => self.overflow = true,
            Future::Undecided => unreachable!("decided above"),
        }
    }

    pub fn finish(mut self) -> Ceilings {
        if let Future::Later(uses) = std::mem::replace(&mut self.future, Future::Undecided) {
            self.min_hits = self.min_later(uses);
        }
        let pct = |hits: u64| {
            if self.requests == 0 {
                0.0
            } else {
                hits as f64 * 100.0 / self.requests as f64
            }
        };
        let min = if self.overflow {
            f64::NAN
        } else {
            pct(self.min_hits)
        };
        Ceilings {
            infinite: pct(self.infinite_hits),
            lru: pct(self.lru_hits),
            belady: min,
            requests: self.requests,
            cachable_requests: self.eligible,
            objects: self.sizes.len() as u64,
            bytes: self.bytes,
            duration_us: self.duration_us,
        }
    }

    /// MIN over the kept uses: next uses by a backward pass, then forward.
    fn min_later(&mut self, uses: Vec<u32>) -> u64 {
        self.ids = HashMap::new(); // counted already; its memory goes first
        let objects = self.sizes.len();
        let mut next = vec![NONE; uses.len()];
        let mut last = vec![NONE; objects];
        for (i, &o) in uses.iter().enumerate().rev() {
            next[i] = last[o as usize];
            last[o as usize] = i as u32;
        }
        drop(last);
        let mut min = Min::new(self.cache_bytes);
        let mut hits = 0;
        for (&o, &n) in uses.iter().zip(&next) {
            let n = if n == NONE { NEVER } else { u64::from(n) };
            hits += u64::from(min.access(u64::from(o), self.sizes[o as usize], n));
        }
        hits
    }
}

/// LRU over dense object indices: intrusive links per object, O(1).
#[derive(Debug)]
struct Lru {
    cap: u64,
    used: u64,
    prev: Vec<u32>,
    next: Vec<u32>,
    size: Vec<u64>,
    /// Most and least recently used.
    head: u32,
    tail: u32,
}

impl Lru {
    fn new(cap: u64) -> Self {
        Lru {
            cap,
            used: 0,
            prev: Vec::new(),
            next: Vec::new(),
            size: Vec::new(),
            head: NONE,
            tail: NONE,
        }
    }

    fn grow(&mut self) {
        self.prev.push(NONE);
        self.next.push(NONE);
        self.size.push(0);
    }

    fn stored(&self, o: u32) -> bool {
        self.head == o || self.prev[o as usize] != NONE
    }

    fn unlink(&mut self, o: u32) {
        let (p, n) = (self.prev[o as usize], self.next[o as usize]);
        match p {
            NONE => self.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NONE => self.tail = p,
            n => self.prev[n as usize] = p,
        }
        self.prev[o as usize] = NONE;
        self.next[o as usize] = NONE;
    }

    fn push_front(&mut self, o: u32) {
        self.next[o as usize] = self.head;
        match self.head {
            NONE => self.tail = o,
            h => self.prev[h as usize] = o,
        }
        self.head = o;
    }

    /// Whether `o` hits; it is then (or newly) the most recent. `size` is
    /// at most the cache's.
    fn access(&mut self, o: u32, size: u64) -> bool {
        if self.stored(o) {
            self.unlink(o);
            self.push_front(o);
            return true;
        }
        while self.used.saturating_add(size) > self.cap {
            let t = self.tail;
            self.unlink(t);
            self.used -= self.size[t as usize];
        }
        self.size[o as usize] = size;
        self.used += size;
        self.push_front(o);
        false
    }
}

/// Belady's MIN given each request's next use (see [`CeilingCalc`]).
#[derive(Debug)]
struct Min {
    cap: u64,
    used: u64,
    /// Object → (next use, size).
    stored: HashMap<u64, (u64, u64)>,
    /// (next use, object) of the stored ones, farthest last.
    order: BTreeSet<(u64, u64)>,
}

impl Min {
    fn new(cap: u64) -> Self {
        Min {
            cap,
            used: 0,
            stored: HashMap::new(),
            order: BTreeSet::new(),
        }
    }

    /// Whether `o` hits; `size` is at most the cache's.
    fn access(&mut self, o: u64, size: u64, next: u64) -> bool {
        if let Some(e) = self.stored.get_mut(&o) {
            self.order.remove(&(e.0, o));
            if next == NEVER {
                self.used -= e.1;
                self.stored.remove(&o);
            } else {
                e.0 = next;
                self.order.insert((next, o));
            }
            return true;
        }
        if next == NEVER {
            return false;
        }
        while self.used.saturating_add(size) > self.cap {
            let Some(&(far, victim)) = self.order.last() else {
                return false;
            };
            if far < next {
                return false; // the requested object is the farthest: bypass
            }
            self.order.pop_last();
            self.used -= self.stored.remove(&victim).map_or(0, |e| e.1);
        }
        self.stored.insert(o, (next, size));
        self.order.insert((next, o));
        self.used += size;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::record;

    /// Requests (object, size), one a second; `next` given (oracleGeneral)
    /// or found later.
    fn run(cache: u64, reqs: &[(u64, u64, Method)], given: bool) -> Ceilings {
        let mut c = CeilingCalc::new(cache);
        for (i, &(key, size, method)) in reqs.iter().enumerate() {
            let mut r = record(i as u64 * 1_000_000, key, size);
            r.method = method;
            if given {
                let next = reqs[i + 1..]
                    .iter()
                    .position(|&(k, _, m)| k == key && m == Method::Get);
                r.next_access_vtime = Some(next.map_or(NEVER, |n| (i + 1 + n) as u64));
            }
            c.add(&r);
        }
        c.finish()
    }

    fn gets(seq: &[(u64, u64)]) -> Vec<(u64, u64, Method)> {
        seq.iter().map(|&(k, s)| (k, s, Method::Get)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn unit_sizes_a_b_c_a_b_d_a_in_two_places() {
        let (a, b, c, d) = (1, 2, 3, 4);
        let seq = gets(&[(a, 1), (b, 1), (c, 1), (a, 1), (b, 1), (d, 1), (a, 1)]);
        // Infinite: a b c miss, a b hit, d miss, a hit: 3 of 7.
        // LRU (most recent first): a miss [a]; b miss [b a]; c miss, out a
        // [c b]; a miss, out b [a c]; b miss, out c [b a]; d miss, out a
        // [d b]; a miss, out b [a d]: 0 of 7.
        // MIN, next uses a0→3 b1→4 c2→never a3→6 b4→never d5→never
        // a6→never: a miss, in {a:3}; b miss, in {a:3 b:4}; c miss, never
        // used again: not admitted; a hit {a:6 b:4}; b hit, never again:
        // dropped {a:6}; d miss, never again; a hit: 3 of 7.
        for given in [false, true] {
            let c = run(2, &seq, given);
            assert!(close(c.infinite, 300.0 / 7.0), "{c:?}");
            assert!(close(c.lru, 0.0), "{c:?}");
            assert!(close(c.belady, 300.0 / 7.0), "{c:?}");
            assert_eq!((c.requests, c.cachable_requests, c.objects), (7, 7, 4));
            assert_eq!((c.bytes, c.duration_us), (7, 6_000_000));
        }
    }

    #[test]
    fn min_bypasses_the_farthest_request() {
        // One place, a b a b. MIN: a miss, in {a:2}; b miss, next use 3 is
        // farther than a's 2: bypassed; a hit, never again: dropped; b
        // miss: 1 of 4. Infinite: 2 of 4. LRU: a b a b all miss.
        for given in [false, true] {
            let c = run(1, &gets(&[(1, 1), (2, 1), (1, 1), (2, 1)]), given);
            assert_eq!((c.infinite, c.lru, c.belady), (50.0, 0.0, 25.0));
        }
    }

    #[test]
    fn variable_sizes() {
        // 10 bytes: a6 b5 a6 b5 c10 a6. Infinite: a b miss, a b hit, c
        // miss, a hit: 3 of 6.
        // LRU: a miss [a]; b miss, 11 > 10: out a [b]; a miss, out b [a];
        // b miss, out a [b]; c miss, out b [c]; a miss, out c [a]: 0.
        // MIN, next uses a0→2 b1→3 a2→5 b3→never c4→never a5→never: a
        // miss, in {a:2} (6 bytes); b miss, needs room: the farthest of
        // {a:2} and b:3 is b itself: bypassed; a hit {a:5}; b miss, never
        // again; c miss, never again; a hit: 2 of 6.
        let seq = gets(&[(1, 6), (2, 5), (1, 6), (2, 5), (3, 10), (1, 6)]);
        for given in [false, true] {
            let c = run(10, &seq, given);
            assert!(close(c.infinite, 50.0), "{c:?}");
            assert!(close(c.lru, 0.0), "{c:?}");
            assert!(close(c.belady, 200.0 / 6.0), "{c:?}");
        }
        // 12 bytes: both fit. LRU: a b miss, a b hit, c miss (out a, b), a
        // miss: 2 of 6. MIN: a, b in; a hit; b hit, dropped; c never again;
        // a hit: 3 of 6.
        let c = run(12, &seq, false);
        assert_eq!((c.lru, c.belady), (100.0 / 3.0, 50.0));
    }

    #[test]
    fn uncachable_requests_count_but_never_hit_nor_fill() {
        // a, POST a, a, HEAD b, b: the POST and HEAD miss and store
        // nothing; the third request hits everywhere, b's GET is its first
        // eligible one: 1 of 5.
        let seq = [
            (1, 5, Method::Get),
            (1, 5, Method::Post),
            (1, 5, Method::Get),
            (2, 5, Method::Head),
            (2, 5, Method::Get),
        ];
        for given in [false, true] {
            let c = run(100, &seq, given);
            assert_eq!((c.infinite, c.lru, c.belady), (20.0, 20.0, 20.0));
            assert_eq!((c.requests, c.cachable_requests, c.objects), (5, 3, 2));
        }
        // A GET the trace marks uncachable (a 302, say) is not eligible.
        let mut calc = CeilingCalc::new(100);
        for _ in 0..3 {
            let mut r = record(0, 9, 1);
            r.cachable = Some(false);
            calc.add(&r);
        }
        let c = calc.finish();
        assert_eq!((c.infinite, c.cachable_requests), (0.0, 0));
    }

    #[test]
    fn objects_larger_than_the_cache_are_never_stored() {
        // 10 bytes: big20 big20 a5 a5. Infinite: big and a hit once: 2 of
        // 4. LRU and MIN never store big: a hits once: 1 of 4.
        for given in [false, true] {
            let c = run(10, &gets(&[(1, 20), (1, 20), (2, 5), (2, 5)]), given);
            assert_eq!((c.infinite, c.lru, c.belady), (50.0, 25.0, 25.0));
        }
    }

    #[test]
    fn lru_keeps_the_recent_ones() {
        // Two places: a b a c b: a b miss; a hit [a b]; c miss, out b [c
        // a]; b miss: 1 of 5.
        let c = run(2, &gets(&[(1, 1), (2, 1), (1, 1), (3, 1), (2, 1)]), false);
        assert_eq!(c.lru, 20.0);
        assert_eq!(CeilingCalc::new(1).finish().infinite, 0.0);
    }
}
