//! Phases, goals and time compression: phase factors shape the load, a
//! fill phase ends at its goal, and the built-in workloads compressed to
//! a short run keep their phases and figures.

use crate::support;

use cacheoff_proxy::ProxyStats;
use cacheoff_rundir::RunDir;
use cacheoff_workload::expected_offered;
use support::proxy;
use support::run::{
    assert_every_planned_request_ended, compressed, from_text, phase, phase_names, planned, run,
};

#[test]
fn phase_factors_shape_recurrence_population_and_special_requests() {
    let text = r#"
name = "factors"
peak_rate = "1500/s"
[robots]
count = 100
[servers]
count = 10
[requests]
basic = 0.9
ims304 = 0.1
[[phases]]
name = "fresh"
duration = "3s"
recurrence_begin = 0.0
recurrence_end = 0.0
[[phases]]
name = "half"
duration = "3s"
population_begin = 0.5
population_end = 0.5
[[phases]]
name = "special"
duration = "3s"
special_begin = 3.0
special_end = 3.0
measured = true
"#;
    let w = from_text("factors.toml", text);
    let (_dir, r) = run(w, None);
    let p = |name: &str| phase(&r.summary, name);
    assert_eq!(
        r.summary.total.errors.total, 0,
        "{:?}",
        r.summary.total.errors.by_kind
    );
    // No revisits: nothing is offered as a hit.
    assert_eq!(p("fresh").dhr.offered, 0.0);
    assert!(p("special").dhr.offered > 40.0);
    // Half the robots: half the rate. Counted as the pacer issued them
    // (replies that a busy machine delays would move between phases).
    let ratio = p("half").issued as f64 / p("special").issued as f64;
    assert!((ratio - 0.5).abs() < 0.06, "issued ratio {ratio}");
    // Special requests tripled: 30% IMS (304s), 70% basic.
    let s = p("special");
    let ims = s.request_types["ims304"] as f64 / s.xacts as f64;
    assert!((ims - 0.3).abs() < 0.03, "ims304 share {ims}");
    let f = p("fresh");
    let ims = f.request_types["ims304"] as f64 / f.xacts as f64;
    assert!((ims - 0.1).abs() < 0.02, "ims304 share {ims}");
}

#[test]
fn a_fill_phase_ends_once_its_goal_is_met() {
    let text = r#"
name = "fill-test"
peak_rate = "2000/s"
fill_rate = "1000/s"
cache_size = "2MB"
interval = "1s"
[robots]
count = 100
[servers]
count = 10
[[content]]
name = "o"
share = 1.0
size = "const(10KB)"
cachable = 1.0
[popularity]
recurrence = 0.0
working_set_cap = 1000   # fills within the fill phase: one second of it
[[phases]]
name = "warm"
duration = "1s"
[[phases]]
name = "fill"
duration = "60s"
load_begin = "fill"
load_end = "fill"
goal = { fill = 2.0, freeze = true }
[[phases]]
name = "top"
duration = "2s"
measured = true
"#;
    let w = from_text("fill.toml", text);
    let started = std::time::Instant::now();
    let (dir, r) = run(w, None);
    // 4 MB of 10 KB misses at 1000/s take well under a second (a few on a
    // busy machine); the phase ends two intervals after the one that met
    // the goal, far from its 60 s limit.
    assert!(
        started.elapsed().as_secs() < 45,
        "the 60 s limit was not used"
    );
    assert!(!r.summary.interrupted);
    let p = |n: &str| phase(&r.summary, n);
    let fill = p("fill");
    assert!(
        fill.duration_s >= 2.0 && fill.duration_s <= 10.0,
        "fill {}",
        fill.duration_s
    );
    assert!(fill.fill_bytes >= 4 * 1024 * 1024, "{}", fill.fill_bytes);
    // The fill phase ran at the fill rate, the top phase at the peak, as
    // the pacer issued them.
    let issued_rate = |p: &cacheoff_stats::Entry| p.issued as f64 / p.duration_s;
    assert!(
        (issued_rate(fill) / 1000.0 - 1.0).abs() < 0.1,
        "fill rate {}",
        issued_rate(fill)
    );
    let top = p("top");
    assert!((top.duration_s - 2.0).abs() < 0.01);
    assert!(
        (issued_rate(top) / 2000.0 - 1.0).abs() < 0.1,
        "top rate {}",
        issued_rate(top)
    );
    // Interval times are run time: contiguous across the jump.
    let iv = RunDir::open(dir.path()).unwrap().intervals;
    for pair in iv.windows(2) {
        assert!((pair[1].start_s - pair[0].end_s).abs() < 1e-6, "{pair:?}");
    }
    assert!(iv.last().unwrap().end_s < 20.0);
}

#[test]
fn a_fill_goal_needs_the_cache_size() {
    let text =
        "name = \"x\"\n[[phases]]\nname = \"fill\"\nduration = \"1h\"\ngoal = { fill = 2.0 }\n";
    let w = from_text("x.toml", text);
    let e = w.check_runnable().unwrap_err().to_string();
    assert!(e.contains("--cache-size"), "{e}");
}

#[test]
fn datacomm_1_offers_55_percent_and_an_ideal_cache_achieves_it() {
    let w = compressed("datacomm-1", 500.0, 24.0, None);
    // 24 min warm-up : 216 min : 1 min, compressed.
    assert!((w.phases[0].duration.as_secs_f64() - 24.0 * 24.0 / 216.0).abs() < 1e-6);

    // The offered hit ratio, from a direct run (there every reply waits for
    // the think time, so no kind of reply is over-represented in a phase).
    // DataComm-1 aims at 55%; this short run's worlds (one per server)
    // are still filling, so the model predicts a little less.
    let expected = expected_offered(&w).dhr * 100.0;
    assert!((expected - 55.0).abs() < 4.0, "expected {expected}");
    let plan = planned(&w);
    let (_dir, direct) = run(w.clone(), None);
    let m = phase(&direct.summary, "meas");
    assert_eq!(
        direct.summary.total.errors.total, 0,
        "{:?}",
        direct.summary.total.errors.by_kind
    );
    assert_every_planned_request_ended(&plan, &direct.summary.total);
    assert!(m.issued > 10_000, "{}", m.issued);
    // Replies count where they end, 3 s (the think time) after the plan,
    // and here the offered ratio still grows as worlds fill: the run lags
    // the plan a little.
    assert!(
        (m.dhr.offered - expected).abs() <= 2.0,
        "offered {}, expected {expected}",
        m.dhr.offered
    );
    assert_eq!(m.dhr.measured, 0.0);
    // Misses pay the think time (3 s on average). (That they pay it once
    // is a time, `bench/planned-latency.sh`'s.)
    let miss = &m.rt_polygraph_ms.miss;
    assert!(miss.mean > 2800.0, "miss {}", miss.mean);

    // Through an ideal cache, every hit it can make is made. (Fast hits finish
    // inside a short phase more often than slow misses, which shifts both
    // ratios alike.)
    let proxy = proxy::caching();
    let (_dir, cached) = run(w, Some(proxy.addr()));
    let m = phase(&cached.summary, "meas");
    assert_eq!(
        cached.summary.total.errors.total, 0,
        "{:?}",
        cached.summary.total.errors.by_kind
    );
    assert!(
        (m.dhr.measured - m.dhr.ideal).abs() <= 2.0,
        "measured {} ideal {}",
        m.dhr.measured,
        m.dhr.ideal
    );
    // A hit skips the origin's 3 s: every hit the robots counted (by the
    // echo, a reply fetched for another transaction) the proxy served from
    // its store, with no fetch of its own. Those collapsed onto a fetch in
    // progress waited for it, which raises the hits' mean; they are too
    // few to be the median hit. (How long hits take against misses is
    // `bench/planned-latency.sh`'s.)
    let hits = proxy::hits(&proxy);
    let collapsed = ProxyStats::get(&proxy.stats().collapsed);
    eprintln!(
        "hits {hits}, collapsed {collapsed}, hit p50 {}",
        m.rt_ms.hit.p50
    );
    assert_eq!(cached.summary.total.rt_ms.hit.count, hits);
    assert!(
        m.rt_ms.hit.count > 1000 && 2 * collapsed < hits,
        "{collapsed} of {hits} hits waited for a fetch"
    );
}

#[test]
fn downtime_runs_constant_load_through_its_dark_phase() {
    let w = compressed("downtime", 60.0, 4.0, None);
    assert!(w.phases.iter().any(|p| p.dark && p.name == "dark"));
    let (_dir, r) = run(w, None);
    assert_eq!(phase_names(&r.summary), ["warm", "load", "dark", "meas"]);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // PolyMix content: pages bring their images.
    assert!(t.content_types["image"].xacts > t.content_types["html"].xacts * 3);
}

#[test]
fn polymix_3_compressed_runs_every_phase() {
    let w = compressed("polymix-3", 200.0, 6.0, Some(4 << 20));
    let expected = expected_offered(&w).dhr * 100.0;
    let (_dir, r) = run(w, None);
    assert_eq!(
        phase_names(&r.summary),
        [
            "warm", "framp", "fill", "fexit", "inc1", "top1", "dec1", "idle", "inc2", "top2",
            "dec2", "cool"
        ]
    );
    assert_eq!(r.summary.measured_phase.as_deref(), Some("top2"));
    let p = |n: &str| phase(&r.summary, n);
    // The fill phase (limit 24 h -> 36 s) ended at its goal: 8 MB of
    // cachable misses.
    let fill = p("fill");
    assert!(fill.duration_s < 30.0, "fill {}", fill.duration_s);
    let t = &r.summary.total;
    assert!(t.errors.percent < 1.0, "{:?}", t.errors.by_kind);
    // Warm-up offers about 5%, top2 what the model predicts (6-second
    // plateaus freeze tiny worlds, so far less than the full-scale 58%).
    assert!(
        p("warm").dhr.offered < 15.0,
        "warm {}",
        p("warm").dhr.offered
    );
    let top2 = p("top2");
    assert!(
        (top2.dhr.offered - expected).abs() < 6.0,
        "top2 offered {}, expected {expected}",
        top2.dhr.offered
    );
    // Misses pay the think time and the WAN round trips.
    assert!(
        top2.rt_ms.miss.mean > 2500.0,
        "miss {}",
        top2.rt_ms.miss.mean
    );
}

#[test]
fn polymix_4_compressed_varies_live_robots_and_mixes_methods() {
    let w = compressed("polymix-4", 250.0, 6.0, Some(4 << 20));
    let (_dir, r) = run(w, None);
    let p = |n: &str| phase(&r.summary, n);
    assert_eq!(r.summary.phases.len(), 10);
    let t = &r.summary.total;
    assert!(t.errors.percent < 1.0, "{:?}", t.errors.by_kind);
    // Load held at 1.0: the idle phase's 10% of live robots plan ~10% of
    // the top phase's requests per second. (Replies lag by the 2.5 s think
    // time, longer than this compressed idle phase, so compare the plan.)
    // The compressed idle phase lasts half a second, so its plan is a
    // handful of requests: allow Poisson noise (4 sd), and require that
    // the full population's rate would have been far outside it.
    let plan_rate = |n: &str| p(n).issued as f64 / p(n).duration_s;
    let full = plan_rate("top2") * p("idle").duration_s;
    let want = 0.1 * full;
    let got = p("idle").issued as f64;
    let slack = 4.0 * want.sqrt() + 1.0;
    assert!(
        (got - want).abs() <= slack,
        "idle planned {got}, want {want:.1} ± {slack:.1}"
    );
    assert!(
        full - want > 2.0 * slack,
        "the idle phase is too short to tell"
    );
    assert!(t.request_types["post"] > 0 && t.request_types["head"] > 0);
    assert!(t.aborts.robot + t.aborts.server > 0, "{:?}", t.aborts);
}

#[test]
fn polyfill_fills_until_its_goal_and_offers_few_hits() {
    let w = compressed("polyfill", 200.0, 60.0, Some(2 << 20));
    let expected = expected_offered(&w).dhr * 100.0;
    assert!(expected < 8.0, "expected {expected}");
    let (_dir, r) = run(w, None);
    assert_eq!(phase_names(&r.summary), ["framp", "fill", "fexit"]);
    assert_eq!(r.summary.measured_phase.as_deref(), Some("fill"));
    let fill = &r.summary.phases[1];
    // Its limit is 60 s (24 h compressed); 4 MB of cachable misses and a
    // frozen working set (about 700 objects) come well before.
    assert!(fill.duration_s < 40.0, "fill {} s", fill.duration_s);
    assert!(fill.fill_bytes >= 4 << 20, "{}", fill.fill_bytes);
    assert!(
        (fill.dhr.offered - expected).abs() < 3.0,
        "offered {}, expected {expected}",
        fill.dhr.offered
    );
    assert_eq!(
        r.summary.total.errors.total, 0,
        "{:?}",
        r.summary.total.errors.by_kind
    );
}
