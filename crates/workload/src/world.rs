//! A client host's history of requested objects (on one worker): which
//! object a robot asks for next, and whether a revisit offers a hit.
//!
//! Owned by one worker's [`Plan`](crate::Plan); the robots of that host on
//! that worker share it.
//! The working set is the most recent `window` objects; repeat requests
//! choose among them uniformly, or, with the hot set's probability, within
//! the hot set (a small slice of the working set that jumps elsewhere when
//! the working set slides past it).

use crate::Popularity;
use crate::{split_oid, WORLD_SHIFT};
use cacheoff_base::rng::Rng;
use cacheoff_base::RequestType;
use std::collections::HashSet;

/// Repeat requests choose among at most this many recent objects unless
/// the workload caps the working set lower.
pub const DEFAULT_WINDOW: u64 = 1 << 22;

pub struct World {
    worker: u64,
    next: u64,
    window: u64,
    hot_start: u64,
    /// Objects requested only in ways that fill no cache so far (HEAD,
    /// POST, the images of a page asked for by HEAD): no cache can hold
    /// them, so revisiting them offers no hit until a GET fetches them.
    /// Rare, and pruned as the working set slides.
    unfetched: HashSet<u64>,
    prune_at: usize,
}

/// One choice of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub oid: u64,
    pub seq: u64,
    /// The object was requested before.
    pub repeat: bool,
}

impl World {
    pub fn new(worker: u32, window: Option<u64>) -> World {
        World {
            worker: u64::from(worker),
            next: 0,
            window: window.unwrap_or(DEFAULT_WINDOW).max(1),
            hot_start: 0,
            unfetched: HashSet::new(),
            prune_at: 4096,
        }
    }

    /// Chooses a repeat (with probability `recurrence`, the phase's) or a
    /// new object. A repeat goes to the hot set or follows the popularity
    /// model; then, with the byte-hit-ratio discrimination's probability
    /// (PolyMix-4), it takes the smallest cachable object among the chosen
    /// one and its four neighbours (`cachable_size` gives an object's size
    /// if cachable).
    pub fn pick<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        recurrence: f64,
        pop: &Popularity,
        cachable_size: &dyn Fn(u64) -> Option<u64>,
    ) -> Pick {
        let discrimination = pop.bhr_discrimination;
        if self.next > 0 && rng.gen::<f64>() < recurrence {
            let lo = self.next.saturating_sub(self.window);
            let n = self.next - lo;
            let seq = match &pop.hot_set {
                Some(h) if rng.gen::<f64>() < h.requests => {
                    let len = ((h.working_set * n as f64) as u64).clamp(1, n);
                    if self.hot_start < lo || self.hot_start + len > self.next {
                        self.hot_start = lo + rng.gen_range(0..=n - len);
                    }
                    self.hot_start + rng.gen_range(0..len)
                }
                _ => self.next - pop.model.rank(n, rng.gen::<f64>()),
            };
            let seq = if discrimination > 0.0 && rng.gen::<f64>() < discrimination {
                let first = seq.saturating_sub(2).max(lo);
                let last = (seq + 2).min(self.next - 1);
                (first..=last)
                    .filter_map(|q| cachable_size(self.oid(q)).map(|size| (size, q)))
                    .min()
                    .map_or(seq, |(_, q)| q)
            } else {
                seq
            };
            return Pick {
                oid: self.oid(seq),
                seq,
                repeat: true,
            };
        }
        let seq = self.next;
        self.next += 1;
        Pick {
            oid: self.oid(seq),
            seq,
            repeat: false,
        }
    }

    /// Notes a request of type `rtype` for `oid` (a page or an embedded
    /// object; `repeat`: requested before) and tells whether an earlier
    /// request could have put the object in a cache: the offered hit. A
    /// GET can fill a cache; a POST empties it (a cache must invalidate
    /// the URL); HEAD leaves it as it was.
    pub fn note_request(&mut self, oid: u64, repeat: bool, rtype: RequestType) -> bool {
        let held = repeat && !self.unfetched.contains(&oid);
        if rtype.fills_cache() {
            self.unfetched.remove(&oid);
        } else if !repeat || rtype.empties_cache() {
            self.unfetched.insert(oid);
            if self.unfetched.len() >= self.prune_at {
                // Objects that left the working set are never revisited.
                let lo = self.next.saturating_sub(self.window);
                self.unfetched
                    .retain(|&o| split_oid(o).0 & ((1 << WORLD_SHIFT) - 1) >= lo);
                self.prune_at = (self.unfetched.len() * 2).max(4096);
            }
        }
        held
    }

    /// Marks an object as never fetched (an embedded object of a page
    /// first asked for by HEAD: the browser fetched none of them).
    pub fn note_unfetched(&mut self, oid: u64) {
        self.unfetched.insert(oid);
    }

    /// The working set reached its cap and now slides (is frozen in size).
    pub fn is_full(&self) -> bool {
        self.next >= self.window
    }

    fn oid(&self, seq: u64) -> u64 {
        self.worker << WORLD_SHIFT | seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, HotSet, ObjectSpace, Overrides, PopModel};
    use cacheoff_base::rng::{stream, Stream};

    fn pop(hot_set: Option<HotSet>, bhr_discrimination: f64) -> Popularity {
        Popularity {
            hot_set,
            bhr_discrimination,
            ..Popularity::default()
        }
    }

    #[test]
    fn recurrence_and_the_working_set_window() {
        let mut w = World::new(3, Some(100));
        let mut rng = stream(1, Stream::Robot(0));
        let n = 100_000;
        let mut repeats = 0;
        for _ in 0..n {
            let p = w.pick(&mut rng, 0.7, &pop(None, 0.0), &|_| None);
            assert_eq!(p.oid >> WORLD_SHIFT, 3);
            if p.repeat {
                repeats += 1;
                assert!(w.next - p.seq <= 100, "repeat inside the window");
            }
        }
        let share = f64::from(repeats) / f64::from(n);
        assert!((share - 0.7).abs() < 0.01, "{share}");
    }

    #[test]
    fn the_hot_set_gets_its_share_and_jumps_when_passed() {
        let mut w = World::new(0, Some(10_000));
        let mut rng = stream(2, Stream::Robot(0));
        let hot = pop(
            Some(HotSet {
                working_set: 0.01,
                requests: 0.10,
            }),
            0.0,
        );
        // Fill the working set.
        for _ in 0..20_000 {
            w.pick(&mut rng, 0.0, &hot, &|_| None);
        }
        let start = w.hot_start;
        let mut in_hot = 0;
        let mut repeats = 0;
        for _ in 0..100_000 {
            let p = w.pick(&mut rng, 0.5, &hot, &|_| None);
            if p.repeat {
                repeats += 1;
                if p.seq >= w.hot_start && p.seq < w.hot_start + 100 {
                    in_hot += 1;
                }
            }
        }
        // 10% aimed at the hot set plus the uniform picks that land there.
        let share = f64::from(in_hot) / f64::from(repeats);
        assert!(share > 0.095 && share < 0.125, "hot share {share}");
        // 50,000 new objects slid the 10,000-object window past the start.
        assert!(w.hot_start >= w.next - 10_000, "the hot set moved");
        assert_ne!(w.hot_start, start);
    }

    #[test]
    fn byte_hit_ratio_discrimination_prefers_small_cachable_objects() {
        let w = load("simple", &Overrides::default()).unwrap();
        let objects = ObjectSpace::new(w.seed, &w.content, 600, 2);
        let size = |oid: u64| {
            let o = objects.get(oid);
            o.cachable.then_some(o.size)
        };
        let mean_repeat_size = |d: f64| {
            let mut world = World::new(0, None);
            let mut rng = stream(3, Stream::Robot(0));
            let (mut total, mut n) = (0u64, 0u64);
            for _ in 0..200_000 {
                let p = world.pick(&mut rng, 0.7, &pop(None, d), &size);
                if p.repeat {
                    total += objects.get(p.oid).size;
                    n += 1;
                }
            }
            total as f64 / n as f64
        };
        // The smallest of five exp(13KB) objects is about 13KB / 5.
        let plain = mean_repeat_size(0.0);
        let biased = mean_repeat_size(0.9);
        assert!((plain / 13312.0 - 1.0).abs() < 0.05, "plain {plain}");
        assert!(biased < plain * 0.4, "biased {biased} vs {plain}");
    }

    #[test]
    fn picks_offer_the_nominal_hit_ratio() {
        let w = load("simple", &Overrides::default()).unwrap();
        let objects = ObjectSpace::new(w.seed, &w.content, 600, 2);
        let mut world = World::new(0, None);
        let mut rng = stream(1, Stream::Robot(0));
        let (mut offered, n) = (0u64, 1_000_000u64);
        for _ in 0..n {
            let p = world.pick(&mut rng, w.popularity.recurrence, &w.popularity, &|_| None);
            if p.repeat && objects.get(p.oid).cachable {
                offered += 1;
            }
        }
        let share = offered as f64 / n as f64;
        assert!((share - 0.55).abs() < 0.003, "{share}");
    }

    #[test]
    fn zipf_popularity_favours_recent_objects_as_polygraph_does() {
        // A full, frozen window of n objects; every request a revisit.
        let n = 1000u64;
        let alpha = 0.7;
        let mut w = World::new(0, Some(n));
        let mut rng = stream(4, Stream::Robot(0));
        let mut p = pop(None, 0.0);
        p.model = PopModel::Zipf(alpha);
        for _ in 0..n {
            w.pick(&mut rng, 0.0, &p, &|_| None);
        }
        let samples = 200_000usize;
        let mut ranks: Vec<f64> = (0..samples)
            .map(|_| {
                let pick = w.pick(&mut rng, 1.0, &p, &|_| None);
                assert!(pick.repeat);
                (w.next - pick.seq) as f64
            })
            .collect();
        // P(rank <= k) = (ln(k+1) / ln(n+1))^(1/alpha): Kolmogorov-Smirnov
        // over the discrete ranks (conservative for a discrete law).
        ranks.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let cdf = |k: f64| (((k + 1.0).ln()) / ((n + 1) as f64).ln()).powf(1.0 / alpha);
        let mut d = 0.0f64;
        let mut i = 0;
        while i < samples {
            let k = ranks[i];
            let j = ranks.partition_point(|&r| r <= k);
            d = d.max((j as f64 / samples as f64 - cdf(k)).abs());
            i = j;
        }
        assert!(d < 1.95 / (samples as f64).sqrt(), "D = {d}");
        // The most recent object gets ln 2 / ln(n+1) ^ (1/alpha) of revisits.
        let top = ranks.iter().filter(|&&r| r == 1.0).count() as f64 / samples as f64;
        assert!((top - cdf(1.0)).abs() < 0.005, "rank 1: {top}");
    }

    #[test]
    fn only_requests_that_can_fill_a_cache_offer_later_hits() {
        let mut w = World::new(0, Some(100));
        // First asked for by HEAD: a revisit offers no hit...
        let (get, head, post) = (RequestType::Basic, RequestType::Head, RequestType::Post);
        assert!(!w.note_request(7, false, head));
        assert!(!w.note_request(7, true, get), "HEAD filled no cache");
        // ...until a GET fetched it.
        assert!(w.note_request(7, true, get));
        assert!(
            w.note_request(7, true, head),
            "a later HEAD changes nothing"
        );
        // First asked for by GET: revisits offer hits...
        assert!(!w.note_request(8, false, RequestType::Ims304));
        assert!(w.note_request(8, true, get));
        // ...until a POST made caches drop it.
        assert!(w.note_request(8, true, post));
        assert!(!w.note_request(8, true, get));
        assert!(w.note_request(8, true, get));
        // Embedded objects of a page asked for by HEAD were never fetched.
        w.note_unfetched(9);
        assert!(!w.note_request(9, true, get));
        assert!(w.note_request(9, true, get));
    }
}
