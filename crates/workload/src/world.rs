//! A client host's objects on one worker, as Web Polygraph keeps them: a
//! galaxy of worlds, one per origin server and directly requested content
//! type, each a sequence of object names.
//!
//! A request picks a server and a content type first, then decides repeat
//! or new: a repeat is possible only if that world holds objects and was
//! not frozen empty; otherwise the request names a new object. Before the
//! working set is frozen a repeat chooses among all of a world's objects;
//! once the galaxy has seen its share of the cap in fill transactions
//! (first fetches of cachable objects by basic requests, embedded ones
//! included) within one phase, every world keeps as its working set the number of objects
//! it held then, a window that slides as new objects arrive. The hot set
//! is a slice of each world's window that jumps elsewhere in it when the
//! window slides past it.

use crate::objects::{Place, MAX_NAMES};
use crate::Popularity;
use cacheoff_base::rng::{mix2, seeded, Rng, SimRng};
use cacheoff_base::RequestType;
#[cfg(test)]
use std::collections::HashMap;
use std::collections::HashSet;

/// One world: how many objects it named, and its frozen working set.
#[derive(Debug, Clone, Copy, Default)]
struct World {
    size: u64,
    /// `None` until the galaxy freezes; then the window's length.
    wss: Option<u64>,
    /// One past the hot set's last name, once frozen.
    hot_end: u64,
}

impl World {
    fn can_repeat(&self) -> bool {
        self.size > 0 && self.wss != Some(0)
    }

    /// First name of the window repeats choose from.
    fn window_start(&self) -> u64 {
        self.wss.map_or(0, |w| self.size.saturating_sub(w))
    }

    /// After the world grew or froze: a hot set the window slid past
    /// jumps to a random place inside the window (seeded by where it was,
    /// as Polygraph does, so the plan stays a function of the seed).
    fn sync_hot(&mut self, salt: u64) {
        if let Some(w) = self.wss.filter(|&w| w > 0) {
            if self.hot_end <= self.size - w {
                let mut rng = seeded(mix2(salt, self.hot_end));
                self.hot_end = self.size - rng.gen_range(0..w);
            }
        }
    }
}

/// One choice of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub oid: u64,
    /// The object was named before.
    pub repeat: bool,
}

/// A client host's worlds on one worker.
pub struct Galaxy {
    id: u32,
    /// The servers this galaxy's robots visit: `partition`, `partition +
    /// partitions`, ... below the server count (a worker's share).
    servers: Vec<u32>,
    partition: u32,
    partitions: u32,
    /// Directly requested types and their cumulative shares.
    types: Vec<(f64, u16)>,
    /// `servers.len() x types.len()` worlds, server-major.
    worlds: Vec<World>,
    /// Servers not visited yet, in the order the warm-up visits them.
    warm_up: Vec<u32>,
    /// Fill transactions of phase `fill_phase` so far, and how many
    /// freeze the working set.
    fills: u64,
    fill_phase: usize,
    cap: Option<u64>,
    frozen: bool,
    /// Objects requested only in ways that fill no cache so far (HEAD,
    /// POST, the images of a page answered without a body): no cache can
    /// hold them, so revisiting them offers no hit until a GET fetches
    /// them. Rare, and pruned as working sets slide.
    unfetched: HashSet<u64>,
    prune_at: usize,
}

impl Galaxy {
    /// Galaxy `id` over the servers of partition `partition` of
    /// `partitions` (of `servers` in all) with the directly requested
    /// types `types` (cumulative share, type index); `cap`: fill
    /// transactions that freeze its working set. Robots visit every server
    /// once first, in an order drawn from `rng` (Polygraph's warm-up).
    pub fn new(
        id: u32,
        (partition, partitions, servers): (u32, u32, u32),
        types: Vec<(f64, u16)>,
        cap: Option<u64>,
        rng: &mut SimRng,
    ) -> Galaxy {
        let servers: Vec<u32> = (partition..servers).step_by(partitions as usize).collect();
        let mut order: Vec<u32> = (0..servers.len() as u32).collect();
        // Fisher-Yates; popped from the back.
        for i in (1..order.len()).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
        Galaxy {
            id,
            worlds: vec![World::default(); servers.len() * types.len()],
            servers,
            partition,
            partitions,
            types,
            warm_up: order,
            fills: 0,
            fill_phase: 0,
            cap,
            frozen: false,
            unfetched: HashSet::new(),
            prune_at: 4096,
        }
    }

    /// Picks a server (the next unvisited one during the warm-up, else any
    /// of them alike), a content type by the direct mix, then a repeat
    /// (with probability `recurrence`, the phase's) if that world can
    /// repeat, else a new object. A repeat goes to the hot set or follows
    /// the popularity model; then, with the byte-hit-ratio discrimination's
    /// probability (PolyMix-4), if the chosen object is cachable, it takes
    /// the smallest cachable object within four names of it
    /// (`cachable_size` gives an object's size if cachable).
    pub fn pick<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        recurrence: f64,
        pop: &Popularity,
        cachable_size: &dyn Fn(u64) -> Option<u64>,
    ) -> Pick {
        let s = match self.warm_up.pop() {
            Some(s) => s as usize,
            None => rng.gen_range(0..self.servers.len()),
        };
        let u: f64 = rng.gen();
        let t = self
            .types
            .iter()
            .position(|(c, _)| u < *c)
            .unwrap_or(self.types.len() - 1);
        let place = |name| Place {
            galaxy: self.id,
            server: self.servers[s],
            ctype: self.types[t].1,
            name,
        };
        let wi = s * self.types.len() + t;
        let need_repeat = rng.gen::<f64>() < recurrence;
        let world = self.worlds[wi];
        if !(need_repeat && world.can_repeat()) {
            let name = world.size.min(MAX_NAMES - 1);
            let w = &mut self.worlds[wi];
            w.size += 1;
            w.sync_hot(place(0).oid());
            return Pick {
                oid: place(name).oid(),
                repeat: false,
            };
        }
        let lo = world.window_start();
        let hot = pop.hot_set.filter(|h| rng.gen::<f64>() < h.requests);
        let name = match (hot, world.wss) {
            (Some(h), Some(wss)) => {
                let len = ((wss as f64 * h.working_set).round() as u64).clamp(1, wss);
                let end = world.hot_end.clamp(lo + len, world.size);
                end - len + rng.gen_range(0..len)
            }
            // Before the freeze the hot set is the whole world.
            (Some(_), None) => rng.gen_range(0..world.size),
            (None, _) => world.size - pop.model.rank(world.size - lo, rng.gen::<f64>()),
        };
        let d = pop.bhr_discrimination;
        let name = if d > 0.0 && rng.gen::<f64>() < d && cachable_size(place(name).oid()).is_some()
        {
            let last = (name + 4).min(world.size - 1);
            (name.saturating_sub(4).max(lo)..=last)
                .filter_map(|n| cachable_size(place(n).oid()).map(|size| (size, n)))
                .min()
                .map_or(name, |(_, n)| n)
        } else {
            name
        };
        Pick {
            oid: place(name).oid(),
            repeat: true,
        }
    }

    /// Counts a fill transaction of phase `phase`; the first to bring a
    /// phase's count to the cap freezes every world at its size. Fills
    /// count per phase, as Polygraph's freezer reads the current phase's
    /// count: a fill phase starts from zero whatever came before it.
    pub fn note_fill(&mut self, phase: usize) {
        if phase != self.fill_phase {
            self.fill_phase = phase;
            self.fills = 0;
        }
        self.fills += 1;
        if !self.frozen && self.cap.is_some_and(|c| self.fills >= c) {
            self.frozen = true;
            let salt = u64::from(self.id);
            for (i, w) in self.worlds.iter_mut().enumerate() {
                w.wss = Some(w.size);
                w.sync_hot(mix2(salt, i as u64));
            }
        }
    }

    fn world_of(&self, p: Place) -> Option<&World> {
        let s = p.server.checked_sub(self.partition)? / self.partitions;
        let t = self.types.iter().position(|(_, c)| *c == p.ctype)?;
        self.worlds.get(s as usize * self.types.len() + t)
    }

    /// The working set stopped growing (every world is frozen).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Whether an earlier request could have put `oid` in a cache, for a
    /// request (`repeat`: of an object named before) not yet noted.
    pub fn held(&self, oid: u64, repeat: bool) -> bool {
        repeat && !self.unfetched.contains(&oid)
    }

    /// Notes a request of type `rtype` for `oid` (a page or an embedded
    /// object; `repeat`: named before) and tells whether an earlier request
    /// could have put the object in a cache: the offered hit. A GET can
    /// fill a cache; a POST empties it (a cache must invalidate the URL);
    /// HEAD leaves it as it was.
    pub fn note_request(&mut self, oid: u64, repeat: bool, rtype: RequestType) -> bool {
        let held = self.held(oid, repeat);
        if rtype.fills_cache() {
            self.unfetched.remove(&oid);
        } else if !repeat || rtype.empties_cache() {
            self.note_unfetched(oid);
        }
        held
    }

    /// Marks an object as never fetched (an embedded object of a new page
    /// answered without a body: the browser fetched none of them).
    pub fn note_unfetched(&mut self, oid: u64) {
        self.unfetched.insert(oid);
        if self.unfetched.len() >= self.prune_at {
            // Objects that left their world's window are never revisited.
            let mut unfetched = std::mem::take(&mut self.unfetched);
            unfetched.retain(|&o| {
                let p = Place::of(o);
                self.world_of(p).is_none_or(|w| p.name >= w.window_start())
            });
            self.unfetched = unfetched;
            self.prune_at = (self.unfetched.len() * 2).max(4096);
        }
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

    /// A galaxy over `servers` servers (one partition) and two direct
    /// types, 3 in 4 requests for type 0.
    fn galaxy(servers: u32, cap: Option<u64>) -> Galaxy {
        let mut rng = stream(9, Stream::Galaxy(0));
        Galaxy::new(5, (0, 1, servers), vec![(0.75, 0), (1.0, 2)], cap, &mut rng)
    }

    #[test]
    fn the_warm_up_visits_every_server_once_then_picks_alike() {
        let mut g = galaxy(50, None);
        let mut rng = stream(1, Stream::Robot(0));
        let first: HashSet<u32> = (0..50)
            .map(|_| Place::of(g.pick(&mut rng, 0.0, &pop(None, 0.0), &|_| None).oid).server)
            .collect();
        assert_eq!(first.len(), 50, "each server once");
        let mut per = [0u32; 50];
        for _ in 0..50_000 {
            let p = Place::of(g.pick(&mut rng, 0.0, &pop(None, 0.0), &|_| None).oid);
            assert_eq!(p.galaxy, 5);
            per[p.server as usize] += 1;
        }
        assert!(per.iter().all(|&n| (800..1200).contains(&n)), "{per:?}");
    }

    #[test]
    fn a_world_without_objects_cannot_repeat() {
        // One server: its type-2 world is empty until a type-2 request
        // names a new object, however much recurrence asks for repeats.
        let mut g = galaxy(1, None);
        let mut rng = stream(2, Stream::Robot(0));
        let mut seen = HashSet::new();
        let (mut type2, mut type2_repeats) = (0, 0);
        for _ in 0..10_000 {
            let p = g.pick(&mut rng, 1.0, &pop(None, 0.0), &|_| None);
            let place = Place::of(p.oid);
            assert_eq!(p.repeat, !seen.insert(p.oid), "repeat means named before");
            if place.ctype == 2 {
                type2 += 1;
                type2_repeats += u32::from(p.repeat);
            }
        }
        // With recurrence 1 only each world's first request is new.
        assert_eq!(type2 - type2_repeats, 1);
        assert_eq!(seen.len(), 2);
        // Many servers, few requests: most worlds are still empty, so most
        // requests name new objects whatever the recurrence.
        let mut g = galaxy(1000, None);
        let repeats = (0..300)
            .filter(|_| g.pick(&mut rng, 1.0, &pop(None, 0.0), &|_| None).repeat)
            .count();
        assert!(repeats < 50, "{repeats} repeats in 300");
    }

    #[test]
    fn the_freeze_keeps_each_worlds_size_as_its_sliding_window() {
        let mut g = galaxy(4, Some(100));
        let mut rng = stream(3, Stream::Robot(0));
        let p = pop(None, 0.0);
        let mut at_freeze: HashMap<(u32, u16), u64> = HashMap::new();
        for _ in 0..100 {
            assert!(!g.is_frozen());
            let place = Place::of(g.pick(&mut rng, 0.0, &p, &|_| None).oid);
            *at_freeze.entry((place.server, place.ctype)).or_default() += 1;
            g.note_fill(0);
        }
        assert!(g.is_frozen(), "the 100th fill freezes");
        let mut slid = 0;
        for _ in 0..40_000 {
            let pick = g.pick(&mut rng, 0.5, &p, &|_| None);
            let place = Place::of(pick.oid);
            let w = *g.world_of(place).unwrap();
            let wss = at_freeze[&(place.server, place.ctype)];
            assert_eq!(w.wss, Some(wss), "the window is the size at the freeze");
            if pick.repeat {
                // Among the last `wss` names (the pick did not grow it).
                assert!(place.name < w.size && place.name >= w.size - wss);
                slid += u32::from(place.name >= wss);
            } else {
                assert_eq!(place.name, w.size - 1, "new objects extend the world");
            }
        }
        assert!(slid > 10_000, "windows slid past their first names: {slid}");
    }

    #[test]
    fn worlds_frozen_empty_never_repeat() {
        let mut g = galaxy(200, Some(1));
        let mut rng = stream(4, Stream::Robot(0));
        let p = pop(None, 0.0);
        let first = Place::of(g.pick(&mut rng, 0.0, &p, &|_| None).oid);
        g.note_fill(0);
        assert!(g.is_frozen());
        for _ in 0..5_000 {
            let pick = g.pick(&mut rng, 1.0, &p, &|_| None);
            let place = Place::of(pick.oid);
            let same_world = (place.server, place.ctype) == (first.server, first.ctype);
            assert_eq!(pick.repeat, same_world && place.name == 0);
        }
    }

    #[test]
    fn the_hot_set_gets_its_share_and_jumps_when_passed() {
        let mut g = galaxy(1, Some(20_000));
        let mut rng = stream(5, Stream::Robot(0));
        let hot = pop(
            Some(HotSet {
                working_set: 0.01,
                requests: 0.10,
            }),
            0.0,
        );
        for _ in 0..20_000 {
            g.pick(&mut rng, 0.0, &hot, &|_| None);
            g.note_fill(0);
        }
        assert!(g.is_frozen());
        let w0 = g.worlds[0];
        let (wss, start) = (w0.wss.unwrap(), w0.hot_end);
        let len = (wss as f64 * 0.01).round() as u64;
        let (mut in_hot, mut repeats) = (0, 0);
        for _ in 0..100_000 {
            let pick = g.pick(&mut rng, 0.5, &hot, &|_| None);
            let place = Place::of(pick.oid);
            if pick.repeat && place.ctype == 0 {
                repeats += 1;
                let end = g.worlds[0].hot_end;
                in_hot += u32::from(place.name + len >= end && place.name < end);
            }
        }
        // 10% aimed at the hot set plus the uniform picks that land there.
        let share = f64::from(in_hot) / f64::from(repeats);
        assert!(share > 0.09 && share < 0.13, "hot share {share}");
        // 37,500 new type-0 objects slid the window past the start.
        let w0 = g.worlds[0];
        assert!(
            w0.hot_end > w0.size - wss,
            "the hot set moved into the window"
        );
        assert_ne!(w0.hot_end, start);
    }

    #[test]
    fn byte_hit_ratio_discrimination_prefers_small_cachable_objects() {
        let w = load("simple", &Overrides::default()).unwrap();
        let objects = ObjectSpace::new(w.seed, &w.content);
        let size = |oid: u64| {
            let o = objects.get(oid);
            o.cachable.then_some(o.size)
        };
        let mean_repeat_size = |d: f64| {
            let mut rng = stream(3, Stream::Galaxy(0));
            let mut g = Galaxy::new(0, (0, 1, 1), vec![(1.0, 0)], None, &mut rng);
            let (mut total, mut n) = (0u64, 0u64);
            for _ in 0..200_000 {
                let p = g.pick(&mut rng, 0.7, &pop(None, d), &size);
                if p.repeat {
                    total += objects.get(p.oid).size;
                    n += 1;
                }
            }
            total as f64 / n as f64
        };
        // The smallest of up to nine exp(13KB) objects, when the chosen
        // one is cachable (80%).
        let plain = mean_repeat_size(0.0);
        let biased = mean_repeat_size(0.9);
        assert!((plain / 13312.0 - 1.0).abs() < 0.05, "plain {plain}");
        assert!(biased < plain * 0.4, "biased {biased} vs {plain}");
    }

    #[test]
    fn zipf_popularity_favours_recent_objects_as_polygraph_does() {
        // A full, frozen world of n objects; every request a revisit.
        let n = 1000u64;
        let alpha = 0.7;
        let mut rng = stream(4, Stream::Galaxy(0));
        let mut g = Galaxy::new(0, (0, 1, 1), vec![(1.0, 0)], Some(n), &mut rng);
        let mut p = pop(None, 0.0);
        p.model = PopModel::Zipf(alpha);
        for _ in 0..n {
            g.pick(&mut rng, 0.0, &p, &|_| None);
            g.note_fill(0);
        }
        let samples = 200_000usize;
        let mut ranks: Vec<f64> = (0..samples)
            .map(|_| {
                let pick = g.pick(&mut rng, 1.0, &p, &|_| None);
                assert!(pick.repeat);
                (n - Place::of(pick.oid).name) as f64
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
    }

    #[test]
    fn only_requests_that_can_fill_a_cache_offer_later_hits() {
        let mut g = galaxy(1, None);
        let (get, head, post) = (RequestType::Basic, RequestType::Head, RequestType::Post);
        // First asked for by HEAD: a revisit offers no hit...
        assert!(!g.note_request(7, false, head));
        assert!(!g.note_request(7, true, get), "HEAD filled no cache");
        // ...until a GET fetched it.
        assert!(g.note_request(7, true, get));
        assert!(
            g.note_request(7, true, head),
            "a later HEAD changes nothing"
        );
        // First asked for by GET: revisits offer hits...
        assert!(!g.note_request(8, false, RequestType::Ims304));
        assert!(g.note_request(8, true, get));
        // ...until a POST made caches drop it.
        assert!(g.note_request(8, true, post));
        assert!(!g.note_request(8, true, get));
        assert!(g.note_request(8, true, get));
        // Embedded objects of a page answered without a body.
        g.note_unfetched(9);
        assert!(!g.held(9, true));
        assert!(!g.note_request(9, true, get));
        assert!(g.note_request(9, true, get));
    }
}
