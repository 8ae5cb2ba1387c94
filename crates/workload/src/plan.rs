//! The arrival plan: which robot asks for what, and when. Pure and
//! deterministic: a function of the workload (its seed included) and of
//! how robots are shared among workers, so the same seed gives the same
//! plan and a test can walk it without sockets ([`digest`]).
//!
//! Each worker owns one [`Plan`] for its robots. [`ArrivalTimes`] gives the
//! open-loop request times (a Poisson or constant stream per robot,
//! thinned by the schedule's load and live-robot factors); [`Plan::request`]
//! chooses the object and request type of each; [`Plan::embedded`] the
//! images of a page once it arrived, as a cache-less browser fetches them.
//!
//! Random streams (from the seed): `Robot(id)` for a robot's arrivals,
//! `Choices(id)` for its objects and request types, `Galaxy(id)` for a
//! galaxy's warm-up order. A page's images copy its request type and
//! repeat choice (as Polygraph's robots do), decided with the page, so
//! nothing about them depends on when the page arrived.

use crate::world::Galaxy;
use crate::{embedded_oid, ObjectInfo, ObjectSpace};
use crate::{Arrivals, Workload};
use crate::{Factors, Schedule};
use cacheoff_base::rng::{mix2, stream, Rng, SimRng, Stream};
use cacheoff_base::RequestType;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One planned request: the object and how it is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    pub info: ObjectInfo,
    /// The object (or, for an embedded object, its page) was requested
    /// before.
    pub repeat: bool,
    /// An earlier GET could have put the object in a cache: an ideal cache
    /// hits it.
    pub ideal_hit: bool,
    pub rtype: RequestType,
    /// Body bytes of a POST.
    pub post_len: u64,
    /// Which of the page's embedded objects an earlier request could have
    /// put in a cache (bit k-1 for the k-th), decided with the page.
    pub embeds_held: u128,
    /// A replayed trace's origin time to first byte (robots pass it on).
    pub ttfb_us: Option<u32>,
}

impl Planned {
    /// Web Polygraph's offered hit: a revisit of a cachable object (an
    /// embedded object revisits with its page), whether or not an earlier
    /// request fetched it.
    pub fn offered_hit(&self) -> bool {
        self.repeat && self.info.cachable
    }
}

/// The factors outside the schedule (closed-loop runs past the end).
const NEUTRAL: Factors = Factors {
    load: 1.0,
    recurrence: 1.0,
    special: 1.0,
    population: 1.0,
};

/// Open-loop request times of a set of robots: candidate arrivals at the
/// peak rate, each accepted with the load factor's share of the peak (exact
/// thinning for time-varying rates) while the robot is in the live
/// population.
pub struct ArrivalTimes {
    /// Next candidate of each robot: (ns from the run start, robot index).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    robots: Vec<(u32, SimRng)>,
    cand_rate: f64,
    constant: bool,
    max_load: f64,
    robot_count: f64,
}

impl ArrivalTimes {
    /// `robots`: the robot ids; `rate`: one robot's planned request rate at
    /// load factor 1.
    pub fn new(w: &Workload, schedule: &Schedule, robots: &[u32], rate: f64) -> ArrivalTimes {
        let max_load = schedule.max_load();
        let mut a = ArrivalTimes {
            heap: BinaryHeap::with_capacity(robots.len()),
            robots: robots
                .iter()
                .map(|&r| (r, stream(w.seed, Stream::Robot(r))))
                .collect(),
            cand_rate: rate * max_load,
            constant: w.robots.arrivals == Arrivals::Constant,
            max_load,
            robot_count: f64::from(w.robots.count),
        };
        if a.cand_rate > 0.0 {
            for i in 0..a.robots.len() {
                // Constant streams start at a random point of their first gap.
                let t = if a.constant {
                    let u: f64 = a.robots[i].1.gen();
                    (u * 1e9 / a.cand_rate) as u64
                } else {
                    a.gap_ns(i)
                };
                a.heap.push(Reverse((t, i)));
            }
        }
        a
    }

    fn gap_ns(&mut self, i: usize) -> u64 {
        if self.constant {
            return (1e9 / self.cand_rate) as u64;
        }
        let u: f64 = self.robots[i].1.gen();
        (-(1.0 - u).ln() / self.cand_rate * 1e9) as u64
    }

    /// When the next candidate is due, in ns from the run start.
    pub fn peek_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Takes the next candidate, due at [`peek_ns`](Self::peek_ns), whose
    /// schedule factors are `factors`: the index of the robot (into the
    /// ids given to [`new`](Self::new)) if it asks for something then.
    pub fn pop(&mut self, factors: Option<Factors>) -> Option<usize> {
        let Reverse((t, i)) = self.heap.pop()?;
        let next = t + self.gap_ns(i).max(1);
        self.heap.push(Reverse((next, i)));
        let (id, rng) = &mut self.robots[i];
        let accept = factors.is_some_and(|f| {
            // Robots beyond the live population sit this one out.
            f64::from(*id) < f.population * self.robot_count
                && (f.load >= self.max_load || rng.gen::<f64>() * self.max_load < f.load)
        });
        accept.then_some(i)
    }
}

/// One worker's plan for its robots.
pub struct Plan {
    workload: Workload,
    objects: ObjectSpace,
    schedule: Schedule,
    /// This worker's robot ids.
    robots: Vec<u32>,
    /// Client host of each robot (by index into `robots`).
    hosts: Vec<u32>,
    choices: Vec<SimRng>,
    /// One galaxy per client host; each host's robots on this worker share
    /// it.
    galaxies: Vec<Galaxy>,
    /// This worker's robots per client host.
    host_robots: Vec<u32>,
}

impl Plan {
    /// The plan of worker `worker` of `workers`: robots `r` with
    /// `r % workers == worker`, each client host's galaxy its own, over
    /// this worker's share of the servers (so a direct run keeps each
    /// worker's traffic on its own servers).
    pub fn new(w: &Workload, objects: &ObjectSpace, worker: u32, workers: u32) -> Plan {
        let robots: Vec<u32> = (0..w.robots.count)
            .filter(|r| r % workers == worker)
            .collect();
        let n_hosts = w.robots.hosts();
        let mut host_robots = vec![0u32; n_hosts as usize];
        for &r in &robots {
            host_robots[w.robots.host_of(r) as usize] += 1;
        }
        let partitions = workers.clamp(1, w.servers.count.max(1));
        let servers = (worker % partitions, partitions, w.servers.count);
        let galaxies = (0..n_hosts)
            .map(|h| {
                // The cap is divided among hosts and workers by robot count.
                let cap = w
                    .popularity
                    .working_set_cap
                    .map(|c| c * u64::from(host_robots[h as usize]) / u64::from(w.robots.count));
                let id = h * workers + worker;
                let mut rng = stream(w.seed, Stream::Galaxy(id));
                Galaxy::new(id, servers, objects.mix().direct().to_vec(), cap, &mut rng)
            })
            .collect();
        Plan {
            hosts: robots.iter().map(|&r| w.robots.host_of(r)).collect(),
            choices: robots
                .iter()
                .map(|&r| stream(w.seed, Stream::Choices(r)))
                .collect(),
            robots,
            galaxies,
            host_robots,
            workload: w.clone(),
            objects: objects.clone(),
            schedule: w.schedule(),
        }
    }

    /// This worker's robot ids.
    pub fn robots(&self) -> &[u32] {
        &self.robots
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The open-loop arrivals of this worker's robots, or `None` for a
    /// closed-loop (best effort) workload.
    pub fn arrivals(&self) -> Option<ArrivalTimes> {
        let rate = self.workload.robot_rate()?;
        // Embedded objects add to the planned requests; the plan makes up
        // the rest of the rate.
        let planned = rate * self.workload.direct_share();
        Some(ArrivalTimes::new(
            &self.workload,
            &self.schedule,
            &self.robots,
            planned,
        ))
    }

    /// The request of robot `robot` (an index into [`robots`](Self::robots))
    /// at schedule time `sched_s`, and with it what its page's embedded
    /// objects will be: the page's request type (a POST's images are plain
    /// GETs), fetched only if the page comes with a body. Fill transactions
    /// (basic requests of cachable objects no earlier request could have
    /// put in a cache) count towards the working-set freeze here, images
    /// included.
    pub fn request(&mut self, robot: usize, sched_s: f64) -> Planned {
        let f = self.schedule.factors_at(sched_s).unwrap_or(NEUTRAL);
        let phase = self.schedule.phase_at(sched_s).unwrap_or(usize::MAX);
        let w = &self.workload;
        let objects = &self.objects;
        let rng = &mut self.choices[robot];
        let galaxy = &mut self.galaxies[self.hosts[robot] as usize];
        let pick = galaxy.pick(
            rng,
            (w.popularity.recurrence * f.recurrence).clamp(0.0, 1.0),
            &w.popularity,
            &|oid| {
                let o = objects.get(oid);
                o.cachable.then_some(o.size)
            },
        );
        let info = objects.get(pick.oid);
        let (rtype, post_len) = choose_request(w, rng, f.special);
        let held = galaxy.note_request(info.oid, pick.repeat, rtype);
        let ideal_hit = held && info.cachable;
        if rtype == RequestType::Basic && info.cachable && !ideal_hit {
            galaxy.note_fill(phase);
        }
        let mut embeds_held = 0u128;
        for k in 1..=info.embeds {
            let e = objects.get(embedded_oid(info.oid, k));
            if !brings_images(rtype) {
                if !pick.repeat {
                    // Never fetched: revisits offer no hit until fetched.
                    galaxy.note_unfetched(e.oid);
                }
                continue;
            }
            let img_type = image_request(rtype);
            if galaxy.note_request(e.oid, pick.repeat, img_type) {
                embeds_held |= 1 << (k - 1);
            } else if img_type == RequestType::Basic && e.cachable {
                galaxy.note_fill(phase);
            }
        }
        Planned {
            info,
            repeat: pick.repeat,
            ideal_hit,
            rtype,
            post_len,
            embeds_held,
            ttfb_us: None,
        }
    }

    /// The embedded objects of `page`, once its body arrived: each a
    /// request of its own, asked for the way the page was.
    pub fn embedded<'a>(&'a self, page: &'a Planned) -> impl Iterator<Item = Planned> + 'a {
        let rtype = image_request(page.rtype);
        let n = if brings_images(page.rtype) {
            page.info.embeds
        } else {
            0
        };
        (1..=n).map(move |k| {
            let info = self.objects.get(embedded_oid(page.info.oid, k));
            Planned {
                info,
                repeat: page.repeat,
                ideal_hit: info.cachable && page.embeds_held & (1 << (k - 1)) != 0,
                rtype,
                post_len: 0,
                embeds_held: 0,
                ttfb_us: None,
            }
        })
    }

    /// Every client host with robots here has a frozen working set.
    pub fn working_sets_full(&self) -> bool {
        self.galaxies
            .iter()
            .zip(&self.host_robots)
            .filter(|(_, n)| **n > 0)
            .all(|(g, _)| g.is_frozen())
    }
}

/// A page asked for this way comes with a body whose images the browser
/// fetches (a HEAD or a 304 brings none).
fn brings_images(page: RequestType) -> bool {
    !matches!(page, RequestType::Head | RequestType::Ims304)
}

/// How a page's images are asked for: the way the page was, except that
/// images are always fetched with GET.
fn image_request(page: RequestType) -> RequestType {
    match page {
        RequestType::Post | RequestType::Head => RequestType::Basic,
        t => t,
    }
}

/// The request type of one transaction (and a POST's body length): the
/// workload's mix, with the phase's factor on the special requests (IMS
/// and reloads); basic requests fill the rest.
pub fn choose_request(w: &Workload, rng: &mut SimRng, special: f64) -> (RequestType, u64) {
    let u: f64 = rng.gen();
    let mut shares = w.requests.shares();
    for s in &mut shares[1..=3] {
        *s *= special;
    }
    shares[0] = (1.0 - shares[1..].iter().sum::<f64>()).max(0.0);
    let mut acc = 0.0;
    let rtype = RequestType::ALL
        .iter()
        .zip(shares)
        .find(|(_, share)| {
            acc += share;
            u < acc
        })
        .map_or(RequestType::Basic, |(t, _)| *t);
    let post_len = if rtype == RequestType::Post {
        w.requests.post_body.sample(rng) as u64
    } else {
        0
    };
    (rtype, post_len)
}

/// A running hash of planned requests, in plan order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanDigest(u64);

impl PlanDigest {
    /// Adds the request of robot `robot` intended `t_ns` after the start.
    #[inline]
    pub fn add(&mut self, t_ns: u64, robot: u32, p: &Planned) {
        for v in [
            t_ns,
            u64::from(robot),
            p.info.oid,
            p.rtype as u64,
            p.post_len,
            p.embeds_held as u64,
            (p.embeds_held >> 64) as u64,
            u64::from(p.ideal_hit),
        ] {
            self.0 = mix2(self.0, v);
        }
    }

    /// Combines the digests of workers `0..n`, in order.
    pub fn combine(parts: &[PlanDigest]) -> PlanDigest {
        PlanDigest(parts.iter().fold(0, |acc, d| mix2(acc, d.0)))
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// A digest as [`get`](PlanDigest::get) gave it (from another host).
    pub fn from_raw(v: u64) -> PlanDigest {
        PlanDigest(v)
    }
}

/// The digest of the whole open-loop plan of `w` on `workers` workers, as
/// a run that follows its schedule to the end issues it (a goal phase that
/// ends early shifts the rest of a real run). Objects come from `objects`.
pub fn digest(w: &Workload, objects: &ObjectSpace, workers: u32) -> PlanDigest {
    let parts: Vec<PlanDigest> = (0..workers)
        .map(|worker| {
            let mut plan = Plan::new(w, objects, worker, workers);
            let mut d = PlanDigest::default();
            let Some(mut arrivals) = plan.arrivals() else {
                return d;
            };
            let total_s = plan.schedule.total_s();
            while let Some(t) = arrivals.peek_ns() {
                let s = t as f64 / 1e9;
                if s >= total_s {
                    break;
                }
                if let Some(i) = arrivals.pop(plan.schedule.factors_at(s)) {
                    // Run time as a run computes it from the intended instant.
                    let p = plan.request(i, std::time::Duration::from_nanos(t).as_secs_f64());
                    d.add(t, plan.robots[i], &p);
                }
            }
            d
        })
        .collect();
    PlanDigest::combine(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, Overrides};

    fn polymix_like() -> Workload {
        let mut w = load("polymix-4", &Overrides::default()).unwrap();
        for p in &mut w.phases {
            p.duration = cacheoff_base::Dur::secs(2.0);
            p.goal = None;
        }
        w.robots.count = 40;
        w
    }

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_another() {
        let w = polymix_like();
        let objects = ObjectSpace::new(w.seed, &w.content);
        let a = digest(&w, &objects, 2);
        assert_eq!(a, digest(&w, &objects, 2));
        assert_ne!(a, PlanDigest::default());
        let mut other = w.clone();
        other.seed += 1;
        let objects = ObjectSpace::new(other.seed, &other.content);
        assert_ne!(a, digest(&other, &objects, 2));
    }

    #[test]
    fn arrivals_follow_the_rate_and_the_load_factor() {
        let mut w = load("simple", &Overrides::default()).unwrap();
        w.robots.count = 10;
        let schedule = w.schedule();
        let robots: Vec<u32> = (0..10).collect();
        // 10 robots at 20/s each for the whole schedule (70 s at load 1).
        let mut a = ArrivalTimes::new(&w, &schedule, &robots, 20.0);
        let (mut accepted, mut last) = (0u32, 0u64);
        while let Some(t) = a.peek_ns() {
            let s = t as f64 / 1e9;
            if s >= schedule.total_s() {
                break;
            }
            assert!(t >= last, "candidates come in time order");
            last = t;
            accepted += u32::from(a.pop(schedule.factors_at(s)).is_some());
        }
        let expected = 200.0 * schedule.total_s();
        assert!(
            (f64::from(accepted) - expected).abs() < 4.0 * expected.sqrt(),
            "{accepted} vs {expected}"
        );
        // Outside the schedule nothing is accepted.
        assert_eq!(a.pop(None), None);
    }

    #[test]
    fn requests_follow_the_mix_and_pages_bring_their_images() {
        let w = polymix_like();
        let objects = ObjectSpace::new(w.seed, &w.content);
        let mut plan = Plan::new(&w, &objects, 0, 1);
        let mut counts = [0u32; RequestType::COUNT];
        let mut images = 0usize;
        let n = 50_000;
        let special = plan.schedule().factors_at(1.0).unwrap().special;
        for k in 0..n {
            let p = plan.request(k % plan.robots().len(), 1.0);
            counts[p.rtype as usize] += 1;
            let embedded: Vec<Planned> = plan.embedded(&p).collect();
            // Images copy the page's choices; a HEAD or a 304 brings none.
            let brings = !matches!(p.rtype, RequestType::Head | RequestType::Ims304);
            assert_eq!(
                embedded.len() as u32,
                if brings { p.info.embeds } else { 0 }
            );
            for e in &embedded {
                let want = match p.rtype {
                    RequestType::Post => RequestType::Basic,
                    t => t,
                };
                assert_eq!((e.rtype, e.repeat, e.post_len), (want, p.repeat, 0));
                assert_eq!(e.info.server, p.info.server);
                assert!(!e.ideal_hit || e.offered_hit());
            }
            images += embedded.len();
        }
        assert!(images > 0, "PolyMix pages embed images");
        let mut shares = w.requests.shares();
        for s in &mut shares[1..=3] {
            *s *= special;
        }
        shares[0] = 1.0 - shares[1..].iter().sum::<f64>();
        for t in RequestType::ALL {
            let got = f64::from(counts[*t as usize]) / n as f64;
            let want = shares[*t as usize];
            assert!((got - want).abs() < 0.01, "{}: {got} vs {want}", t.name());
        }
    }

    #[test]
    fn fill_transactions_images_included_freeze_the_working_set() {
        let mut w = polymix_like();
        w.requests.basic = 1.0;
        (w.requests.ims200, w.requests.ims304, w.requests.reload) = (0.0, 0.0, 0.0);
        (w.requests.post, w.requests.head) = (0.0, 0.0);
        w.popularity.recurrence = 0.0;
        w.popularity.working_set_cap = Some(500);
        let objects = ObjectSpace::new(w.seed, &w.content);
        let mut plan = Plan::new(&w, &objects, 0, 1);
        assert_eq!(w.robots.hosts(), 1);
        // Every request is a new basic one: a fill if cachable, and so is
        // each cachable image of a page.
        let mut fills = 0;
        let mut images = 0;
        while fills < 500 {
            assert!(!plan.working_sets_full(), "frozen after {fills} fills");
            let p = plan.request(0, 1.0);
            assert!(!p.repeat && !p.ideal_hit);
            fills += u32::from(p.info.cachable);
            for e in plan.embedded(&p) {
                images += 1;
                fills += u32::from(e.info.cachable);
            }
        }
        assert!(images > 100, "pages brought {images} images");
        assert!(plan.working_sets_full(), "the 500th fill froze it");
    }
}
