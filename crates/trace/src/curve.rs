//! Byte-weighted LRU hit ratios at many cache sizes in one pass (the
//! exact LRU curve), by stack distance.
//!
//! With every object no larger than the cache, an LRU cache of `C` bytes
//! holds the longest run of most recently used objects whose sizes sum to
//! at most `C` (eviction takes from the tail until the newcomer fits; a hit
//! moves an object within that run). So a request hits iff the sizes of the
//! distinct objects used since its key's last use, plus its own, sum to at
//! most `C`. A Fenwick tree over last-use positions gives that sum: each use
//! adds the object's size at its new position and takes it from its old.
//! An object larger than `C` is never stored at that size (nor evicts
//! anything), so the sum at size `C` must leave it out: objects fall in the
//! class of the smallest size asked that holds them, one tree per class,
//! and the sum at a size adds the classes up to it. Positions are renumbered
//! when they run out, so memory follows the distinct objects, not the
//! requests. An object keeps the size it was first seen with, as
//! [`crate::ceiling`]'s LRU does.
//!
//! FIFO and S3-FIFO (the reference proxy's policy, its own code from
//! `cacheoff_cache::policy`) are simulated at each size ([`Simulated`]).

use crate::{Method, Record};
use cacheoff_cache::Eviction;
use std::collections::HashMap;

/// LRU hit counts at each of a list of cache sizes: [`LruCurve::access`]
/// each eligible request in order.
#[derive(Debug)]
pub struct LruCurve {
    /// Cache sizes in bytes, ascending.
    sizes: Vec<u64>,
    /// One tree per size class (objects no larger than `sizes[c]` and
    /// larger than `sizes[c - 1]`).
    trees: Vec<Fenwick>,
    /// Key → (last-use position, size, class).
    objects: HashMap<u64, (usize, u64, usize)>,
    /// The next position to use.
    now: usize,
    hits: Vec<u64>,
    hit_bytes: Vec<u64>,
    requests: u64,
    bytes: u64,
}

/// Request and byte hit ratios (%) at each size.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub sizes: Vec<u64>,
    pub rhr: Vec<f64>,
    pub bhr: Vec<f64>,
}

impl LruCurve {
    /// The curve at `sizes` (bytes; sorted and deduplicated here).
    pub fn new(sizes: &[u64]) -> LruCurve {
        let mut sizes = sizes.to_vec();
        sizes.sort_unstable();
        sizes.dedup();
        let k = sizes.len();
        LruCurve {
            trees: (0..k).map(|_| Fenwick::new(1024)).collect(),
            sizes,
            objects: HashMap::new(),
            now: 0,
            hits: vec![0; k],
            hit_bytes: vec![0; k],
            requests: 0,
            bytes: 0,
        }
    }

    /// One request of `key`, `size` bytes (an object keeps the size it was
    /// first seen with).
    pub fn access(&mut self, key: u64, size: u64) {
        if self.now == self.trees.first().map_or(usize::MAX, Fenwick::len) {
            self.renumber();
        }
        let at = self.now;
        self.now += 1;
        self.requests += 1;
        let (size, class) = match self.objects.get(&key) {
            Some(&(last, size, class)) => {
                self.count_hits(last, at, size, class);
                if let Some(t) = self.trees.get_mut(class) {
                    t.add(last, -(size as i64));
                }
                (size, class)
            }
            None => (size, self.sizes.partition_point(|&c| c < size)),
        };
        self.bytes += size;
        if let Some(t) = self.trees.get_mut(class) {
            t.add(at, size as i64);
        }
        self.objects.insert(key, (at, size, class));
    }

    /// A repeat use at `at` of an object last used at `last`.
    fn count_hits(&mut self, last: usize, at: usize, size: u64, class: usize) {
        let mut between = 0u64;
        for (c, tree) in self.trees.iter().enumerate() {
            between += tree.between(last, at);
            if c >= class && between + size <= self.sizes[c] {
                self.hits[c] += 1;
                self.hit_bytes[c] += size;
            }
        }
    }

    /// Gives every known object a new position in the order of its last
    /// use, from 0, in trees sized for twice as many.
    fn renumber(&mut self) {
        let mut live: Vec<(usize, u64)> =
            self.objects.iter().map(|(&k, &(p, _, _))| (p, k)).collect();
        live.sort_unstable();
        let len = (2 * live.len()).max(1024);
        for t in &mut self.trees {
            *t = Fenwick::new(len);
        }
        for (i, (_, key)) in live.iter().enumerate() {
            let o = self.objects.get_mut(key).expect("a live key");
            o.0 = i;
            if let Some(t) = self.trees.get_mut(o.2) {
                t.add(i, o.1 as i64);
            }
        }
        self.now = live.len();
    }

    /// Requests seen.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Hits and hit bytes at each size, ascending.
    pub fn hits(&self) -> (&[u64], &[u64]) {
        (&self.hits, &self.hit_bytes)
    }

    pub fn curve(&self) -> Curve {
        let pct = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                part as f64 * 100.0 / whole as f64
            }
        };
        Curve {
            sizes: self.sizes.clone(),
            rhr: self.hits.iter().map(|&h| pct(h, self.requests)).collect(),
            bhr: self.hit_bytes.iter().map(|&h| pct(h, self.bytes)).collect(),
        }
    }
}

/// Policies simulated beside the exact LRU curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulate {
    /// First in, first out: a hit changes nothing.
    Fifo,
    /// The reference proxy's policy (`cacheoff_cache::policy::S3Fifo`).
    S3Fifo,
}

/// One policy simulated at one cache size, as the reference proxy's
/// store drives its policy: a miss is inserted, then keys are evicted
/// while the bytes exceed the size; an object larger than the size is
/// never stored.
pub struct Simulated {
    cap: u64,
    policy: Box<dyn Eviction>,
    stored: std::collections::HashSet<u64>,
    hits: u64,
    hit_bytes: u64,
}

impl Simulated {
    pub fn new(policy: Simulate, cap: u64) -> Simulated {
        let policy: Box<dyn Eviction> = match policy {
            Simulate::Fifo => Box::new(Fifo::default()),
            Simulate::S3Fifo => cacheoff_cache::Policy::S3Fifo.build(cap),
        };
        Simulated {
            cap,
            policy,
            stored: Default::default(),
            hits: 0,
            hit_bytes: 0,
        }
    }

    pub fn access(&mut self, key: u64, size: u64) {
        if self.stored.contains(&key) {
            self.hits += 1;
            self.hit_bytes += size;
            self.policy.hit(key);
            return;
        }
        if size > self.cap {
            return;
        }
        self.policy.insert(key, size);
        self.stored.insert(key);
        while self.policy.bytes() > self.cap {
            match self.policy.evict() {
                Some(victim) => {
                    self.stored.remove(&victim);
                }
                None => break,
            }
        }
    }
}

/// FIFO with byte sizes: the oldest insertion goes first.
#[derive(Debug, Default)]
struct Fifo {
    queue: std::collections::VecDeque<(u64, u64)>,
    bytes: u64,
}

impl Eviction for Fifo {
    fn insert(&mut self, key: u64, size: u64) {
        self.queue.push_back((key, size));
        self.bytes += size;
    }
    fn update(&mut self, _: u64, _: u64) {}
    fn hit(&mut self, _: u64) {}
    fn remove(&mut self, _: u64) {}
    fn evict(&mut self) -> Option<u64> {
        let (key, size) = self.queue.pop_front()?;
        self.bytes -= size;
        Some(key)
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn len(&self) -> usize {
        self.queue.len()
    }
}

/// Whether a request may hit in a cache at all: a GET the trace does not
/// mark uncachable (as [`crate::ceiling`] counts).
pub fn eligible(r: &Record) -> bool {
    r.method == Method::Get && r.cachable != Some(false)
}

/// Distinct eligible objects and the bytes they take (each at the size it
/// was first seen with): what an infinite cache holds.
pub fn footprint(records: impl Iterator<Item = Record>) -> (u64, u64) {
    let mut seen = std::collections::HashSet::new();
    let mut bytes = 0u64;
    for r in records.filter(eligible) {
        if seen.insert(r.key) {
            bytes = bytes.saturating_add(r.size);
        }
    }
    (seen.len() as u64, bytes)
}

/// `n` cache sizes spaced evenly on a log scale from `low` to `high`
/// bytes (at least 1 byte each).
pub fn log_sizes(low: u64, high: u64, n: usize) -> Vec<u64> {
    let (lo, hi) = ((low.max(1)) as f64, (high.max(low).max(1)) as f64);
    (0..n)
        .map(|i| {
            let x = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                1.0
            };
            (lo * (hi / lo).powf(x)).round().max(1.0) as u64
        })
        .collect()
}

/// A trace's hit ratios against cache size: percent of all its requests
/// and bytes, ineligible ones included (they never hit).
#[derive(Debug, Clone, PartialEq)]
pub struct Survey {
    pub requests: u64,
    pub objects: u64,
    pub footprint_bytes: u64,
    /// An infinite cache: every eligible request of an object but the
    /// first hits (request %, byte %).
    pub infinite: (f64, f64),
    pub lru: Curve,
    pub fifo: Curve,
    pub s3fifo: Curve,
}

/// The curves of `records` at `sizes`, in one pass.
pub fn survey(records: impl Iterator<Item = Record>, sizes: &[u64]) -> Survey {
    let mut lru = LruCurve::new(sizes);
    let sims = |p| -> Vec<Simulated> { lru.sizes.iter().map(|&c| Simulated::new(p, c)).collect() };
    let (mut fifo, mut s3fifo) = (sims(Simulate::Fifo), sims(Simulate::S3Fifo));
    let (mut requests, mut bytes) = (0u64, 0u64);
    let mut first: HashMap<u64, u64> = HashMap::new();
    let (mut inf_hits, mut inf_bytes, mut footprint) = (0u64, 0u64, 0u64);
    for r in records {
        requests += 1;
        bytes = bytes.saturating_add(r.size);
        if !eligible(&r) {
            continue;
        }
        let size = match first.get(&r.key) {
            Some(&size) => {
                inf_hits += 1;
                inf_bytes += size;
                size
            }
            None => {
                first.insert(r.key, r.size);
                footprint = footprint.saturating_add(r.size);
                r.size
            }
        };
        lru.access(r.key, size);
        for sim in fifo.iter_mut().chain(s3fifo.iter_mut()) {
            sim.access(r.key, size);
        }
    }
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    let (hits, hit_bytes) = lru.hits();
    let simulated = |sims: &[Simulated]| Curve {
        sizes: lru.sizes.clone(),
        rhr: sims.iter().map(|s| pct(s.hits, requests)).collect(),
        bhr: sims.iter().map(|s| pct(s.hit_bytes, bytes)).collect(),
    };
    Survey {
        fifo: simulated(&fifo),
        s3fifo: simulated(&s3fifo),
        requests,
        objects: first.len() as u64,
        footprint_bytes: footprint,
        infinite: (pct(inf_hits, requests), pct(inf_bytes, bytes)),
        lru: Curve {
            sizes: lru.sizes.clone(),
            rhr: hits.iter().map(|&h| pct(h, requests)).collect(),
            bhr: hit_bytes.iter().map(|&h| pct(h, bytes)).collect(),
        },
    }
}

/// Sums over positions, updated and queried in O(log n).
#[derive(Debug)]
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(len: usize) -> Fenwick {
        Fenwick(vec![0; len + 1])
    }

    fn len(&self) -> usize {
        self.0.len() - 1
    }

    fn add(&mut self, at: usize, v: i64) {
        let mut i = at + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum over positions `..end`.
    fn prefix(&self, end: usize) -> i64 {
        let (mut i, mut s) = (end, 0);
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// The sum over positions strictly between `a` and `b`.
    fn between(&self, a: usize, b: usize) -> u64 {
        (self.prefix(b) - self.prefix(a + 1)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// LRU at one size, simulated: the reference the curve is held to.
    fn simulate(trace: &[(u64, u64)], cap: u64) -> (u64, u64) {
        let mut first_size: HashMap<u64, u64> = HashMap::new();
        let mut stored: HashMap<u64, (u64, u64)> = HashMap::new(); // key -> (last use, size)
        let mut order: BTreeMap<u64, u64> = BTreeMap::new(); // last use -> key
        let (mut used, mut hits, mut hit_bytes) = (0, 0, 0);
        for (t, &(key, size)) in trace.iter().enumerate() {
            let t = t as u64;
            let size = *first_size.entry(key).or_insert(size);
            if let Some((last, _)) = stored.get(&key).copied() {
                hits += 1;
                hit_bytes += size;
                order.remove(&last);
                order.insert(t, key);
                stored.insert(key, (t, size));
                continue;
            }
            if size > cap {
                continue;
            }
            while used + size > cap {
                let (_, victim) = order.pop_first().expect("something to evict");
                used -= stored.remove(&victim).expect("stored").1;
            }
            used += size;
            order.insert(t, key);
            stored.insert(key, (t, size));
        }
        (hits, hit_bytes)
    }

    /// A trace of `n` requests over `keys` keys, skewed popularity and
    /// sizes spread over three orders of magnitude, from `seed`.
    fn trace(n: usize, keys: u64, seed: u64) -> Vec<(u64, u64)> {
        let mut x = seed | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|_| {
                let u = (next() % 1_000_000) as f64 / 1e6;
                let key = ((u * u * u) * keys as f64) as u64;
                let size = 100 + (key.wrapping_mul(2_654_435_761) % 1000) * (1 + key % 97);
                (key, size)
            })
            .collect()
    }

    #[test]
    fn the_curve_equals_lru_simulated_at_every_size() {
        for seed in [1, 7, 42] {
            let t = trace(20_000, 3_000, seed);
            let sizes = [
                0,
                500,
                5_000,
                50_000,
                200_000,
                1_000_000,
                5_000_000,
                100_000_000,
            ];
            let mut c = LruCurve::new(&sizes);
            for &(k, s) in &t {
                c.access(k, s);
            }
            for (i, &cap) in c.sizes.clone().iter().enumerate() {
                let (hits, bytes) = simulate(&t, cap);
                assert_eq!(
                    (c.hits[i], c.hit_bytes[i]),
                    (hits, bytes),
                    "seed {seed}, {cap} bytes"
                );
            }
        }
    }

    #[test]
    fn positions_are_renumbered_without_changing_a_hit() {
        // Far more requests than the first trees' 1,024 positions.
        let t = trace(50_000, 200, 3);
        let mut c = LruCurve::new(&[10_000, 60_000]);
        for &(k, s) in &t {
            c.access(k, s);
        }
        assert!(c.trees[0].len() < 5_000, "{}", c.trees[0].len());
        for (i, cap) in [10_000, 60_000].into_iter().enumerate() {
            assert_eq!((c.hits[i], c.hit_bytes[i]), simulate(&t, cap));
        }
        // Ratios of all requests and bytes. (Not monotone in the size: a
        // small cache that bypasses large objects can hit more requests.)
        let curve = c.curve();
        let bytes: u64 = {
            let mut first = HashMap::new();
            t.iter().map(|&(k, s)| *first.entry(k).or_insert(s)).sum()
        };
        for i in 0..2 {
            assert_eq!(curve.rhr[i], c.hits[i] as f64 * 100.0 / t.len() as f64);
            assert_eq!(curve.bhr[i], c.hit_bytes[i] as f64 * 100.0 / bytes as f64);
        }
        assert_eq!(c.requests(), t.len() as u64);
    }

    #[test]
    fn at_one_size_the_curve_is_the_ceiling_s_lru_which_libcachesim_agrees_with() {
        let files = crate::sample::sample_files();
        assert!(files.len() >= 5);
        for (name, format, bytes) in files {
            let read = || {
                crate::TraceReader::from_reader(
                    std::io::Cursor::new(bytes.clone()),
                    Some(format.clone()),
                    name,
                )
                .unwrap()
                .map(|r| r.unwrap())
            };
            let (_, fp) = footprint(read());
            for cap in [fp / 50, fp / 5, fp] {
                let mut calc = crate::ceiling::CeilingCalc::new(cap);
                read().for_each(|r| calc.add(&r));
                let c = calc.finish();
                let s = survey(read(), &[cap]);
                assert!(
                    (s.lru.rhr[0] - c.lru).abs() < 1e-9,
                    "{name} at {cap}: {} vs {}",
                    s.lru.rhr[0],
                    c.lru
                );
                assert!((s.infinite.0 - c.infinite).abs() < 1e-9, "{name}");
                assert_eq!(s.requests, c.requests);
                assert!(
                    cap < fp || s.lru.rhr[0] > 0.0,
                    "{name}: no hit at the footprint"
                );
            }
        }
    }

    fn record(key: u64, size: u64) -> Record {
        crate::text::record(0, key, size)
    }

    #[test]
    fn fifo_keeps_order_where_lru_rewards_a_hit() {
        // Three one-byte objects fit: A B C A D A.
        let t = [1, 2, 3, 1, 4, 1].map(|k| record(k, 1));
        let s = survey(t.into_iter(), &[3]);
        // FIFO: A hits, D pushes A out, A misses; LRU keeps A both times.
        assert_eq!(s.fifo.rhr[0], 100.0 / 6.0);
        assert_eq!(s.lru.rhr[0], 200.0 / 6.0);
    }

    #[test]
    fn at_the_footprint_every_policy_is_the_infinite_cache() {
        let t: Vec<Record> = trace(20_000, 2_000, 9)
            .into_iter()
            .map(|(k, s)| record(k, s))
            .collect();
        let (_, fp) = footprint(t.iter().cloned());
        let s = survey(t.into_iter(), &[fp / 100, fp]);
        for c in [&s.lru, &s.fifo, &s.s3fifo] {
            assert_eq!((c.rhr[1], c.bhr[1]), s.infinite, "{c:?}");
            assert!(c.rhr[0] < c.rhr[1], "{c:?}");
        }
        // Where it must choose, S3-FIFO is not FIFO.
        assert_ne!(s.s3fifo.rhr[0], s.fifo.rhr[0]);
    }
}
