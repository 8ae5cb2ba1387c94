//! Same seed, same plan: two runs of one workload with one seed issue the
//! same requests (the run's plan digest equals the plan walked without
//! sockets), and a direct run gives the same figures.

use crate::support;

use cacheoff_base::{Dur, Rate};
use cacheoff_rundir::Summary;
use cacheoff_workload::{digest, load, Aborts, ObjectSpace, Overrides, Workload};
use support::run::WORKERS;

/// PolyMix-4's content and requests (pages with images, IMS, reloads,
/// POST, HEAD, byte-hit-ratio discrimination), compressed to a warm-up and
/// a measured phase. Without aborts, which are drawn per transaction id,
/// in the order transactions happen to be sent.
fn workload() -> Workload {
    let mut w = load("polymix-4", &Overrides::default()).unwrap();
    let simple = load("simple", &Overrides::default()).unwrap();
    w.phases = simple.phases;
    w.phases[0].duration = Dur::secs(2.0);
    w.phases[1].duration = Dur::secs(4.0);
    w.aborts = Aborts::default();
    w.peak_rate = Some(Rate(300.0));
    w.robots.count = 60;
    w.robots.per_host = None;
    w.servers.count = 8;
    w.servers.think_time =
        cacheoff_workload::Dist::parse(cacheoff_workload::Quantity::Time, "0s").unwrap();
    w.seed = 4242;
    w.check_runnable().unwrap();
    w
}

fn run(w: &Workload) -> Summary {
    support::run::run(w.clone(), None).1.summary
}

#[test]
fn the_same_seed_gives_the_same_plan_and_the_same_figures() {
    let w = workload();
    let objects = ObjectSpace::new(w.seed, &w.content);
    let planned = format!("{:016x}", digest(&w, &objects, WORKERS as u32).get());
    let a = run(&w);
    let b = run(&w);
    assert_eq!(a.plan_digest.as_deref(), Some(planned.as_str()), "run 1");
    assert_eq!(b.plan_digest.as_deref(), Some(planned.as_str()), "run 2");
    let (ta, tb) = (&a.total, &b.total);
    assert_eq!(ta.errors.total, 0, "{:?}", ta.errors.by_kind);
    assert!(ta.xacts > 1000, "{} transactions", ta.xacts);
    assert_eq!(ta.xacts, tb.xacts);
    assert_eq!(ta.bytes, tb.bytes);
    assert_eq!(ta.dhr.offered, tb.dhr.offered);
    assert_eq!(ta.bhr.offered, tb.bhr.offered);
    assert_eq!(ta.request_types, tb.request_types);
    // Another seed, another plan.
    let mut other = w.clone();
    other.seed += 1;
    let objects = ObjectSpace::new(other.seed, &other.content);
    assert_ne!(
        format!("{:016x}", digest(&other, &objects, 2).get()),
        planned
    );
}
