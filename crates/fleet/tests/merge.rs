//! The coordinator's merge is exact: agents' snapshots, sent as the wire
//! sends them and gathered as the coordinator gathers them, give the
//! percentiles of one histogram of the union of every raw sample.

use cacheoff_agent::{Gather, Sink, Timeline};
use cacheoff_base::RequestType;
use cacheoff_fleet::wire::FromAgent;
use cacheoff_stats::{IntervalStats, Outcome, Snapshot, XactRecord};
use cacheoff_workload::{load, Overrides};

#[derive(Default)]
struct Keep(Vec<IntervalStats>);

impl Sink for Keep {
    fn interval(&mut self, iv: &IntervalStats) {
        self.0.push(iv.clone());
    }
}

fn xact(rt_us: u64, hit: bool) -> XactRecord {
    XactRecord {
        outcome: if hit { Outcome::Hit } else { Outcome::Miss },
        fills_cache: !hit,
        bytes: 1000 + rt_us % 5000,
        full_body: true,
        rtype: RequestType::Basic,
        ctype: 0,
        offered_hit: hit,
        ideal_hit: hit,
        rt_corrected_us: rt_us,
        rt_polygraph_us: rt_us / 2 + 1,
    }
}

#[test]
fn merged_percentiles_are_those_of_the_union_of_every_sample() {
    let w = load("simple", &Overrides::default()).unwrap();
    let timeline = Timeline::new(&w);
    let agents = 7usize;
    let mut gather = Gather::new(&timeline, agents, w.robots.count, Some(agents));
    let mut union = Snapshot::default();
    let mut keep = Keep::default();
    // A different spread of response times on every agent.
    let mut x: u64 = 12345;
    for k in 0..agents {
        let mut snap = Snapshot::default();
        for i in 0..3000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let rt = 100 + (x >> 33) % (1000 * (k as u64 + 1) * (1 + i % 7));
            let rec = xact(rt, x.is_multiple_of(3));
            snap.record_xact(&rec);
            union.record_xact(&rec);
        }
        let line = serde_json::to_string(&FromAgent::Interval {
            index: 0,
            duration_s: 5.0,
            snap: Box::new(snap.to_wire()),
        })
        .unwrap();
        let FromAgent::Interval { snap, .. } = serde_json::from_str(&line).unwrap() else {
            unreachable!()
        };
        gather.push_part(k, 0, 5.0, Snapshot::from_wire(&snap).unwrap());
    }
    gather.drain(&mut keep);
    let merged = &keep.0[0].snap;
    assert_eq!(merged.counters.xacts, union.counters.xacts);
    assert_eq!(merged.counters.basic_hits, union.counters.basic_hits);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        for (m, u) in [
            (&merged.rt.all, &union.rt.all),
            (&merged.rt.hit, &union.rt.hit),
            (&merged.rt.miss, &union.rt.miss),
            (&merged.rt_polygraph.all, &union.rt_polygraph.all),
        ] {
            assert_eq!(m.value_at_quantile(q), u.value_at_quantile(q), "q {q}");
        }
    }
    assert_eq!(merged.rt.all.mean(), union.rt.all.mean());
}
