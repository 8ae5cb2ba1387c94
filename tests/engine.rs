//! Scenario tests: robots -> (the reference proxy) -> origin servers,
//! in-process on port 0, asserting on counters and the run directory.

use cacheoff::run_cmd::{run_in, RunResult};
use cacheoff_agent::StopHandle;
use cacheoff_base::{Dur, Rate};
use cacheoff_proxy::{Fault, Faults, ReplyFraming};
use cacheoff_rundir::RunDir;
use cacheoff_workload::{load, Dist, Overrides, Quantity, Workload};
use std::net::SocketAddr;
use std::sync::{Condvar, Mutex};

#[path = "support/proxy.rs"]
mod proxy_support;

fn simple(rate: f64, robots: u32, servers: u32, warm: f64, meas: f64) -> Workload {
    load(
        "simple",
        &Overrides {
            rate: Some(Rate(rate).into()),
            robots: Some(robots),
            servers: Some(servers),
            warmup: Some(Dur::secs(warm)),
            duration: Some(Dur::secs(meas)),
            ..Default::default()
        },
    )
    .unwrap()
}

fn run(w: Workload, proxy: Option<SocketAddr>) -> (tempfile::TempDir, RunResult) {
    run_stoppable(w, proxy, &StopHandle::new())
}

/// Runs share this machine's 2 cores and one process's descriptors: at
/// most two run at once, and a big one (thousands of robots) runs alone.
struct Gate {
    used: Mutex<u32>,
    freed: Condvar,
}

static GATE: Gate = Gate {
    used: Mutex::new(0),
    freed: Condvar::new(),
};

struct Slots(u32);

impl Drop for Slots {
    fn drop(&mut self) {
        *GATE.used.lock().unwrap_or_else(|e| e.into_inner()) -= self.0;
        GATE.freed.notify_all();
    }
}

fn take_slots(w: &Workload) -> Slots {
    let n = if w.robots.count >= 1000 { 2 } else { 1 };
    let mut used = GATE.used.lock().unwrap_or_else(|e| e.into_inner());
    while *used + n > 2 {
        used = GATE.freed.wait(used).unwrap_or_else(|e| e.into_inner());
    }
    *used += n;
    Slots(n)
}

fn run_stoppable(
    w: Workload,
    proxy: Option<SocketAddr>,
    stop: &StopHandle,
) -> (tempfile::TempDir, RunResult) {
    let _slots = take_slots(&w);
    let dir = tempfile::tempdir().unwrap();
    let r = run_in(dir.path(), w, proxy, 2, true, &["test".into()], stop)
        .map_err(|f| f.error)
        .unwrap();
    (dir, r)
}

#[test]
fn direct_run_has_no_hits_and_offers_the_configured_hit_ratio() {
    let (dir, r) = run(simple(4000.0, 200, 40, 1.0, 5.0), None);
    let t = &r.summary.total;
    assert!(t.xacts >= 20_000, "xacts {}", t.xacts);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.dhr.measured, 0.0);
    assert_eq!(t.rt_ms.hit.count, 0);
    assert!(
        (t.dhr.offered - 55.0).abs() <= 2.0,
        "offered DHR {}",
        t.dhr.offered
    );
    assert!(
        t.bhr.offered > 40.0 && t.bhr.offered < 70.0,
        "offered BHR {}",
        t.bhr.offered
    );
    assert!(!r.summary.interrupted);
    assert_eq!(r.summary.measured_phase.as_deref(), Some("meas"));
    let names: Vec<&str> = r.summary.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["warm", "meas"]);

    // The run directory describes the run.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["workload"]["name"], "simple");
    assert_eq!(manifest["seed"], 1);
    assert_eq!(manifest["servers"].as_array().unwrap().len(), 40);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    for entry in summary["phases"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&summary["total"]])
    {
        for path in [
            "/name",
            "/duration_s",
            "/xacts",
            "/rate_xps",
            "/bytes",
            "/dhr/offered",
            "/dhr/measured",
            "/bhr/offered",
            "/bhr/measured",
            "/rt_ms/all/mean",
            "/rt_ms/all/p50",
            "/rt_ms/all/p99",
            "/rt_ms/hit/mean",
            "/rt_ms/miss/mean",
            "/errors/total",
            "/errors/by_kind",
        ] {
            assert!(entry.pointer(path).is_some(), "summary lacks {path}");
        }
    }
    let intervals = RunDir::open(dir.path()).unwrap().intervals;
    // 1 s warm-up + 5 s measured, in 5 s intervals cut at the phase edge.
    assert_eq!(intervals.len(), 2);
    let sum: u64 = intervals.iter().map(|i| i.stats.xacts).sum();
    assert_eq!(sum, t.xacts, "intervals add up to the total");
}

#[test]
fn caching_proxy_hits_are_counted_and_uncachable_objects_never_hit() {
    let proxy = proxy_support::caching();
    let (_dir, r) = run(simple(1500.0, 100, 20, 1.0, 5.0), Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let robot_hits = t.rt_ms.hit.count;
    assert!(robot_hits > 1000, "hits {robot_hits}");
    // Every hit the proxy served is a hit the robots saw, and vice versa.
    assert_eq!(robot_hits, proxy_support::hits(&proxy));
    assert_eq!(t.rt_ms.miss.count, proxy_support::misses(&proxy));
    assert_eq!(t.errors.by_kind.get("uncachable_hit"), None);
    // A cache with room for everything achieves almost exactly the
    // offered hit ratio.
    assert!(
        (t.dhr.measured - t.dhr.offered).abs() < 2.0,
        "measured {} offered {}",
        t.dhr.measured,
        t.dhr.offered
    );
}

#[test]
fn chunked_and_close_delimited_replies_are_read_and_verified() {
    for framing in [ReplyFraming::Chunked, ReplyFraming::Close] {
        let proxy = proxy_support::start(|c| c.reply_framing = framing);
        let (_dir, r) = run(simple(300.0, 20, 5, 1.0, 2.0), Some(proxy.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{framing:?}: {:?}", t.errors.by_kind);
        assert!(t.xacts > 600, "{framing:?}: {}", t.xacts);
        assert_eq!(
            t.rt_ms.hit.count,
            proxy_support::hits(&proxy),
            "{framing:?}"
        );
        if framing == ReplyFraming::Close {
            // Every reply ends its connection.
            assert_eq!(t.conns.opened, t.xacts, "{framing:?}");
        } else {
            assert!(
                t.conns.opened < t.xacts / 4,
                "{framing:?}: {}",
                t.conns.opened
            );
        }
    }
}

#[test]
fn a_corrupted_chunked_body_is_caught() {
    // Every hit gets one byte flipped, inside a body sent in chunks.
    let proxy = proxy_support::start(|c| {
        c.reply_framing = ReplyFraming::Chunked;
        c.faults = Faults::new(vec![(Fault::FlipByte, 1.0)]);
    });
    let mut w = simple(200.0, 10, 5, 1.0, 1.0);
    w.content[0].size = Dist::constant(Quantity::Size, 5000.0);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    let bad = t.errors.by_kind.get("body_mismatch").copied().unwrap_or(0);
    assert!(bad > 100, "body_mismatch {bad}");
    assert_eq!(t.errors.total, bad, "{:?}", t.errors.by_kind);
    // Each corrupted hit was caught; none counts as a success.
    assert_eq!(bad, proxy_support::hits(&proxy));
    assert_eq!(t.rt_ms.hit.count, 0);
}

#[test]
fn forwarding_proxy_without_cache_gives_no_hits() {
    let proxy = proxy_support::start(|c| c.memory = 0);
    let (_dir, r) = run(simple(500.0, 50, 10, 1.0, 2.0), Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert!(t.xacts > 1000);
    assert_eq!(t.dhr.measured, 0.0);
    assert_eq!(proxy_support::misses(&proxy), t.xacts);
}

#[test]
fn latency_is_measured_from_the_intended_start() {
    // Two robots with one connection each, 100 ms think time: capacity is
    // 20 req/s but the plan asks for 30, so requests wait for a connection.
    let mut w = simple(30.0, 2, 2, 1.0, 3.0);
    w.robots.max_conns = 1;
    w.servers.think_time = Dist::constant(Quantity::Time, 0.1);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert!(t.xacts > 30);
    // Uncorrected time is the think time; corrected adds the queueing.
    assert!(t.rt_uncorrected_ms.all.mean >= 100.0 && t.rt_uncorrected_ms.all.mean < 150.0);
    assert!(
        t.rt_ms.all.mean > t.rt_uncorrected_ms.all.mean + 100.0,
        "corrected {} vs uncorrected {}",
        t.rt_ms.all.mean,
        t.rt_uncorrected_ms.all.mean
    );
    assert!(t.send_lag_ms.max > 300.0, "lag max {}", t.send_lag_ms.max);
}

#[test]
fn an_unreachable_proxy_counts_connect_errors_and_the_run_still_finishes() {
    // A port nobody listens on: bind, learn the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_dir, r) = run(
        simple(200.0, 10, 2, 1.0, 1.0),
        Some(SocketAddr::from(([127, 0, 0, 1], port))),
    );
    let t = &r.summary.total;
    assert_eq!(t.xacts, 0);
    assert!(t.errors.by_kind.get("connect_failed").copied().unwrap_or(0) > 200);
}

#[test]
fn a_stopped_run_keeps_its_intervals_and_is_marked_interrupted() {
    let stop = StopHandle::new();
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        s2.stop();
    });
    let mut w = simple(200.0, 10, 2, 1.0, 60.0);
    w.interval = Dur::secs(0.5);
    let (dir, r) = run_stoppable(w, None, &stop);
    t.join().unwrap();
    assert!(r.summary.interrupted);
    let intervals = RunDir::open(dir.path()).unwrap().intervals;
    assert!(
        intervals.len() >= 2 && intervals.len() <= 5,
        "{}",
        intervals.len()
    );
    let sum: u64 = intervals.iter().map(|i| i.stats.xacts).sum();
    assert_eq!(sum, r.summary.total.xacts);
    assert!(r.summary.total.duration_s < 3.0);
}

#[test]
fn thousands_of_robots_and_connections_in_one_process() {
    // 2,000 robots, each keeping up to 4 connections to 500 servers.
    let mut w = simple(4000.0, 2000, 500, 1.0, 2.0);
    w.robots.max_conns = 4;
    w.interval = Dur::secs(1.0);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert!(
        t.conns.open_max >= 4000,
        "open connections peaked at {}",
        t.conns.open_max
    );
}

fn polymix_requests(w: &mut Workload) {
    w.requests = cacheoff_workload::RequestMix {
        basic: 0.80,
        ims200: 0.05,
        ims304: 0.10,
        reload: 0.05,
        ..cacheoff_workload::RequestMix::basic_only()
    };
}

#[test]
fn origin_answers_if_modified_since_and_the_request_mix_is_kept() {
    let mut w = simple(3000.0, 100, 20, 1.0, 3.0);
    polymix_requests(&mut w);
    // Objects that change every few minutes, so dates really move.
    w.content[0].life_cycle = cacheoff_workload::LifeCycle {
        length: Dist::exp(Quantity::Time, 300.0),
        variance: 0.5,
        with_lmt: 1.0,
        modified_ago: None,
    };
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.dhr.measured, 0.0);
    let share = |k: &str| t.request_types[k] as f64 * 100.0 / t.xacts as f64;
    for (k, want) in [
        ("basic", 80.0),
        ("ims200", 5.0),
        ("ims304", 10.0),
        ("reload", 5.0),
    ] {
        assert!(
            (share(k) - want).abs() < 1.0,
            "{k}: {:.2}% of {}",
            share(k),
            t.xacts
        );
    }
    // Hit ratios count basic requests only.
    assert!(
        (t.dhr.offered - 55.0).abs() < 2.5,
        "offered {}",
        t.dhr.offered
    );
}

/// PolyMix-3's content types (workloads.md) in a short workload.
const POLYMIX_CONTENT: &str = r#"
name = "polymix-content"
peak_rate = "2000/s"
content = "polymix"
[robots]
count = 200
[servers]
count = 20
[popularity]
recurrence = 0.7237
[[phases]]
name = "warm"
duration = "1s"
[[phases]]
name = "meas"
duration = "8s"
measured = true
"#;

fn polymix_content() -> Workload {
    cacheoff_workload::load_text(
        "polymix-content.toml",
        POLYMIX_CONTENT,
        &Overrides::default(),
    )
    .unwrap()
}

#[test]
fn content_types_pages_and_embedded_images_follow_the_mix() {
    let w = polymix_content();
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // The total rate includes the embedded images. Pages are revisited at
    // random, so in a run this short the images per planned request vary
    // by a few percent.
    assert!(
        (t.rate_xps / 2000.0 - 1.0).abs() < 0.08,
        "rate {}",
        t.rate_xps
    );
    let ct = &t.content_types;
    // Planned requests pick types by their share of the directly requested
    // types (images come only inside pages). Revisits pick pages at random,
    // so a few thousand planned requests land within ~2 points.
    let planned = (ct["html"].xacts + ct["other"].xacts + ct["download"].xacts) as f64;
    for (k, want) in [("html", 0.15 / 0.35), ("other", 0.195 / 0.35)] {
        let share = ct[k].xacts as f64 / planned;
        assert!(
            (share - want).abs() < 0.03,
            "{k}: {share:.4} of planned vs {want:.4}"
        );
    }
    // Every page brings its zipf(13) images (mean 4.45), fetched after it.
    let per_page = ct["image"].xacts as f64 / ct["html"].xacts as f64;
    assert!((per_page - 4.45).abs() < 0.4, "images per page {per_page}");
    // Mean reply sizes per type. Repeats make the samples few (about 800
    // distinct pages), so allow 10%; the size distributions themselves are
    // tested on 100k samples in the workload crate.
    for (k, want) in [
        ("image", 4.5 * 1024.0),
        ("html", 8.5 * 1024.0),
        ("other", 25.0 * 1024.0),
    ] {
        let mean = ct[k].bytes as f64 / ct[k].xacts as f64;
        assert!((mean / want - 1.0).abs() < 0.10, "{k}: mean size {mean}");
    }
}

#[test]
fn an_ideal_cache_hits_every_offered_hit_of_the_content_mix() {
    let proxy = proxy_support::caching();
    let (_dir, r) = run(polymix_content(), Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.rt_ms.hit.count, proxy_support::hits(&proxy));
    assert!(
        (t.dhr.measured - t.dhr.offered).abs() < 2.0,
        "measured {} offered {}",
        t.dhr.measured,
        t.dhr.offered
    );
    // Recurrence 72.37% over ~80% cachable requests.
    assert!(
        t.dhr.offered > 50.0 && t.dhr.offered < 62.0,
        "offered {}",
        t.dhr.offered
    );
}

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
    let w = cacheoff_workload::load_text("factors.toml", text, &Overrides::default()).unwrap();
    let (_dir, r) = run(w, None);
    let p = |name: &str| r.summary.phases.iter().find(|p| p.name == name).unwrap();
    assert_eq!(
        r.summary.total.errors.total, 0,
        "{:?}",
        r.summary.total.errors.by_kind
    );
    // No revisits: nothing is offered as a hit.
    assert_eq!(p("fresh").dhr.offered, 0.0);
    assert!(p("special").dhr.offered > 40.0);
    // Half the robots: half the rate.
    let ratio = p("half").rate_xps / p("special").rate_xps;
    assert!((ratio - 0.5).abs() < 0.06, "rate ratio {ratio}");
    // Special requests tripled: 30% IMS (304s), 70% basic.
    let s = p("special");
    let ims = s.request_types["ims304"] as f64 / s.xacts as f64;
    assert!((ims - 0.3).abs() < 0.03, "ims304 share {ims}");
    let f = p("fresh");
    let ims = f.request_types["ims304"] as f64 / f.xacts as f64;
    assert!((ims - 0.1).abs() < 0.02, "ims304 share {ims}");
}

#[test]
fn constant_arrivals_keep_the_rate() {
    let mut w = simple(500.0, 50, 5, 1.0, 4.0);
    w.robots.arrivals = cacheoff_workload::Arrivals::Constant;
    let (_dir, r) = run(w, None);
    let m = &r.summary.phases[1];
    assert!(
        (m.rate_xps / 500.0 - 1.0).abs() < 0.03,
        "rate {}",
        m.rate_xps
    );
}

fn builtin_with(name: &str, o: Overrides) -> Workload {
    load(name, &o).unwrap()
}

#[test]
fn datacomm_1_offers_55_percent_and_an_ideal_cache_achieves_it() {
    let w = builtin_with(
        "datacomm-1",
        Overrides {
            rate: Some(Rate(500.0).into()),
            plateau: Some(Dur::secs(24.0)),
            ..Default::default()
        },
    );
    // 24 min warm-up : 216 min : 1 min, compressed.
    assert!((w.phases[0].duration.as_secs_f64() - 24.0 * 24.0 / 216.0).abs() < 1e-6);
    let meas = |r: &RunResult| {
        r.summary
            .phases
            .iter()
            .find(|p| p.name == "meas")
            .unwrap()
            .clone()
    };

    // The offered hit ratio, from a direct run (there every reply waits for
    // the think time, so no kind of reply is over-represented in a phase).
    let (_dir, direct) = run(w.clone(), None);
    let m = meas(&direct);
    assert_eq!(
        direct.summary.total.errors.total, 0,
        "{:?}",
        direct.summary.total.errors.by_kind
    );
    assert!(m.xacts > 10_000, "{}", m.xacts);
    assert!(
        (m.dhr.offered - 55.0).abs() <= 1.0,
        "offered {}",
        m.dhr.offered
    );
    assert_eq!(m.dhr.measured, 0.0);
    assert!(
        (m.rt_ms.miss.mean - 3000.0).abs() < 200.0,
        "miss {}",
        m.rt_ms.miss.mean
    );

    // Through an ideal cache, every offered hit is a hit. (Fast hits finish
    // inside a short phase more often than slow misses, which shifts both
    // ratios alike.)
    let proxy = proxy_support::caching();
    let (_dir, cached) = run(w, Some(proxy.addr()));
    let m = meas(&cached);
    assert_eq!(
        cached.summary.total.errors.total, 0,
        "{:?}",
        cached.summary.total.errors.by_kind
    );
    assert!(
        (m.dhr.measured - m.dhr.offered).abs() <= 2.0,
        "measured {} offered {}",
        m.dhr.measured,
        m.dhr.offered
    );
    // Most hits are immediate; those collapsed onto a fetch in progress
    // wait for it, which raises the mean but not the median.
    assert!(m.rt_ms.hit.p50 < 50.0, "hit p50 {}", m.rt_ms.hit.p50);
}

#[test]
fn downtime_runs_constant_load_through_its_dark_phase() {
    let w = builtin_with(
        "downtime",
        Overrides {
            rate: Some(Rate(60.0).into()),
            plateau: Some(Dur::secs(4.0)),
            ..Default::default()
        },
    );
    assert!(w.phases.iter().any(|p| p.dark && p.name == "dark"));
    let (_dir, r) = run(w, None);
    let names: Vec<&str> = r.summary.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["warm", "load", "dark", "meas"]);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // PolyMix content: pages bring their images.
    assert!(t.content_types["image"].xacts > t.content_types["html"].xacts * 3);
}

#[test]
fn wan_emulation_adds_the_expected_round_trips() {
    let case = |reuse: f64, size: f64| {
        let mut w = simple(3.0, 1, 1, 0.5, 4.0);
        w.robots.max_conns = 1;
        w.robots.conn_reuse = Dist::constant(Quantity::Count, reuse);
        w.content[0].size = Dist::constant(Quantity::Size, size);
        w.servers.link = Some(cacheoff_workload::LinkConfig {
            delay: Dur::secs(0.040),
            loss: 0.0,
        });
        let (_dir, r) = run(w, None);
        assert_eq!(r.summary.total.errors.total, 0);
        r.summary.total.rt_uncorrected_ms.all.p50
    };
    // New connection each time: SYN, SYN-ACK, request, response = 4 x 40 ms.
    let fresh = case(1.0, 1024.0);
    assert!((fresh - 160.0).abs() < 12.0, "new connection {fresh} ms");
    // Persistent connection: request and response = 2 x 40 ms.
    let reused = case(1000.0, 1024.0);
    assert!(
        (reused - 80.0).abs() < 12.0,
        "reused connection {reused} ms"
    );
    // 100 KB needs four slow-start rounds: 3 more round trips.
    let big = case(1000.0, 100.0 * 1024.0);
    assert!((big - 320.0).abs() < 15.0, "100 KB {big} ms");
}

#[test]
fn post_and_head_requests_reach_the_origin_and_are_checked() {
    let with_methods = || {
        let mut w = simple(1000.0, 50, 10, 1.0, 3.0);
        w.requests.basic = 0.9;
        w.requests.post = 0.05;
        w.requests.head = 0.05;
        w
    };
    for proxy in [None, Some(proxy_support::caching())] {
        let (_dir, r) = run(with_methods(), proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        for k in ["post", "head"] {
            let share = t.request_types[k] as f64 / t.xacts as f64;
            assert!((share - 0.05).abs() < 0.012, "{k}: {share}");
        }
        if proxy.is_some() {
            // Only basic GETs count in hit ratios, and an ideal cache hits them all.
            // (A revisit of an object only ever asked for by HEAD or POST
            // offers no hit: no cache could hold it.)
            assert!(
                (t.dhr.measured - t.dhr.offered).abs() < 0.5,
                "measured {} offered {}",
                t.dhr.measured,
                t.dhr.offered
            );
        }
    }
}

#[test]
fn transactions_still_in_flight_after_the_drain_are_counted_unfinished() {
    // Servers take 5 s per reply; the run may wait only 0.3 s at its end.
    let mut w = simple(100.0, 20, 4, 1.0, 1.0);
    w.servers.think_time = Dist::constant(Quantity::Time, 5.0);
    w.timeouts.drain = Dur::secs(0.3);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    // About 200 requests were due; every robot's connections (4 each)
    // were busy to the end, the rest waited in backlogs and were not sent.
    let unfinished = t.errors.by_kind.get("unfinished").copied().unwrap_or(0);
    assert_eq!(unfinished, 20 * 4, "{:?}", t.errors.by_kind);
    assert_eq!(t.errors.by_kind.len(), 1, "{:?}", t.errors.by_kind);
    assert_eq!(t.xacts, 0);
    // The run (2 s) ended within the drain, long before the replies.
    let written = |f: &str| {
        std::fs::metadata(r.dir.join(f))
            .unwrap()
            .modified()
            .unwrap()
    };
    let took = written("summary.json")
        .duration_since(written("manifest.json"))
        .unwrap();
    assert!(took < std::time::Duration::from_secs(4), "{took:?}");
}

#[test]
fn http10_keep_alive_connections_persist() {
    for proxy in [None, Some(proxy_support::caching())] {
        let mut w = simple(600.0, 20, 2, 1.0, 2.0);
        w.robots.http10 = true;
        let (_dir, r) = run(w, proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        assert!(
            t.conns.opened * 10 < t.xacts,
            "opened {} for {}",
            t.conns.opened,
            t.xacts
        );
    }
}

#[test]
fn deliberate_aborts_are_counted_as_aborts_not_errors() {
    for proxy in [None, Some(proxy_support::caching())] {
        let mut w = simple(1000.0, 50, 10, 1.0, 3.0);
        w.aborts = cacheoff_workload::Aborts {
            robot: 0.05,
            server: 0.05,
        };
        let (_dir, r) = run(w, proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        let share = |n: u64| n as f64 / t.sent as f64;
        assert!(
            (share(t.aborts.robot) - 0.05).abs() < 0.012,
            "robot {:?}",
            t.aborts
        );
        if proxy.is_none() {
            assert!(
                (share(t.aborts.server) - 0.05).abs() < 0.012,
                "server {:?}",
                t.aborts
            );
        } else {
            // Hits never reach the origin, so only misses can be aborted.
            assert!(
                t.aborts.server > 0 && share(t.aborts.server) < 0.05,
                "{:?}",
                t.aborts
            );
        }
    }
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
working_set_cap = 2000
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
    let w = cacheoff_workload::load_text("fill.toml", text, &Overrides::default()).unwrap();
    let started = std::time::Instant::now();
    let (dir, r) = run(w, None);
    // 4 MB of 10 KB misses at 1000/s take well under a second; the phase
    // ends two intervals after the one that met the goal.
    assert!(
        started.elapsed().as_secs() < 20,
        "the 60 s limit was not used"
    );
    assert!(!r.summary.interrupted);
    let p = |n: &str| {
        r.summary
            .phases
            .iter()
            .find(|p| p.name == n)
            .unwrap()
            .clone()
    };
    let fill = p("fill");
    assert!(
        fill.duration_s >= 2.0 && fill.duration_s <= 4.0,
        "fill {}",
        fill.duration_s
    );
    assert!(fill.fill_bytes >= 4 * 1024 * 1024, "{}", fill.fill_bytes);
    // The fill phase ran at the fill rate, the top phase at the peak.
    assert!(
        (fill.rate_xps / 1000.0 - 1.0).abs() < 0.1,
        "fill rate {}",
        fill.rate_xps
    );
    let top = p("top");
    assert!((top.duration_s - 2.0).abs() < 0.01);
    assert!(
        (top.rate_xps / 2000.0 - 1.0).abs() < 0.1,
        "top rate {}",
        top.rate_xps
    );
    // Interval times are run time: contiguous across the jump.
    let iv = RunDir::open(dir.path()).unwrap().intervals;
    for pair in iv.windows(2) {
        assert!((pair[1].start_s - pair[0].end_s).abs() < 1e-6, "{pair:?}");
    }
    assert!(iv.last().unwrap().end_s < 8.0);
}

#[test]
fn a_fill_goal_needs_the_cache_size() {
    let text =
        "name = \"x\"\n[[phases]]\nname = \"fill\"\nduration = \"1h\"\ngoal = { fill = 2.0 }\n";
    let w = cacheoff_workload::load_text("x.toml", text, &Overrides::default()).unwrap();
    let e = w.check_runnable().unwrap_err().to_string();
    assert!(e.contains("--cache-size"), "{e}");
}

#[test]
fn polymix_3_compressed_runs_every_phase() {
    let w = builtin_with(
        "polymix-3",
        Overrides {
            rate: Some(Rate(200.0).into()),
            cache_size: Some(cacheoff_base::Bytes(4 << 20)),
            plateau: Some(Dur::secs(6.0)),
            ..Default::default()
        },
    );
    let started = std::time::Instant::now();
    let (_dir, r) = run(w, None);
    let names: Vec<&str> = r.summary.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "warm", "framp", "fill", "fexit", "inc1", "top1", "dec1", "idle", "inc2", "top2",
            "dec2", "cool"
        ]
    );
    assert_eq!(r.summary.measured_phase.as_deref(), Some("top2"));
    let p = |n: &str| {
        r.summary
            .phases
            .iter()
            .find(|p| p.name == n)
            .unwrap()
            .clone()
    };
    // The fill phase (limit 24 h -> 36 s) ended at its goal: 8 MB of
    // cachable misses.
    let fill = p("fill");
    assert!(fill.duration_s < 30.0, "fill {}", fill.duration_s);
    assert!(started.elapsed().as_secs() < 75);
    let t = &r.summary.total;
    assert!(t.errors.percent < 1.0, "{:?}", t.errors.by_kind);
    // Warm-up offers about 5%, the peaks about 58%.
    assert!(
        p("warm").dhr.offered < 15.0,
        "warm {}",
        p("warm").dhr.offered
    );
    let top2 = p("top2");
    assert!(
        (top2.dhr.offered - 58.0).abs() < 6.0,
        "top2 offered {}",
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
    let w = builtin_with(
        "polymix-4",
        Overrides {
            rate: Some(Rate(250.0).into()),
            cache_size: Some(cacheoff_base::Bytes(4 << 20)),
            plateau: Some(Dur::secs(6.0)),
            ..Default::default()
        },
    );
    let (_dir, r) = run(w, None);
    let p = |n: &str| {
        r.summary
            .phases
            .iter()
            .find(|p| p.name == n)
            .unwrap()
            .clone()
    };
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
    let w = builtin_with(
        "polyfill",
        Overrides {
            rate: Some(Rate(200.0).into()),
            cache_size: Some(cacheoff_base::Bytes(2 << 20)),
            plateau: Some(Dur::secs(60.0)),
            ..Default::default()
        },
    );
    let (_dir, r) = run(w, None);
    let names: Vec<&str> = r.summary.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["framp", "fill", "fexit"]);
    assert_eq!(r.summary.measured_phase.as_deref(), Some("fill"));
    let fill = &r.summary.phases[1];
    // Its limit is 60 s (24 h compressed); 4 MB of cachable misses and a
    // frozen working set (about 700 objects) come well before.
    assert!(fill.duration_s < 40.0, "fill {} s", fill.duration_s);
    assert!(fill.fill_bytes >= 4 << 20, "{}", fill.fill_bytes);
    assert!(
        (fill.dhr.offered - 5.0).abs() < 3.0,
        "offered {}",
        fill.dhr.offered
    );
    assert_eq!(
        r.summary.total.errors.total, 0,
        "{:?}",
        r.summary.total.errors.by_kind
    );
}

/// The reference proxy, as `cacheoff run` starts it without `--proxy`.
fn reference_proxy(memory: u64) -> cacheoff_proxy::Proxy {
    let mut cfg = cacheoff_proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.memory = memory;
    cfg.workers = 2;
    cacheoff_proxy::Proxy::start(cfg).unwrap()
}

#[test]
fn the_reference_proxy_hits_every_offered_hit_of_the_polymix_mix() {
    // PolyMix content, request types and methods together: IMS answered
    // from the store, reloads sent on, POST and HEAD.
    let mut w = polymix_content();
    polymix_requests(&mut w);
    w.requests.basic -= 0.04;
    w.requests.post = 0.02;
    w.requests.head = 0.02;
    let proxy = reference_proxy(512 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let s = proxy.stats();
    let g = cacheoff_proxy::ProxyStats::get;
    // The robots' hits are the proxy's hits: no false hits, none missed.
    assert_eq!(t.rt_ms.hit.count, g(&s.hits));
    assert_eq!(t.xacts, g(&s.requests));
    // With room for everything, every offered hit is a hit.
    assert!(
        (t.dhr.measured - t.dhr.offered).abs() < 0.5,
        "measured {} offered {} proxy {s:?} robots {:?}",
        t.dhr.measured,
        t.dhr.offered,
        t.request_types
    );
    assert!(t.dhr.measured > 45.0, "{}", t.dhr.measured);
    assert_eq!(g(&s.origin_errors) + g(&s.client_errors), 0);
}

#[test]
fn a_small_reference_cache_evicts_and_still_serves_only_correct_replies() {
    // A 2 MB cache for a working set ten times larger: many offered hits
    // are misses, none is wrong.
    let w = polymix_content();
    let proxy = reference_proxy(2 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let (_, bytes) = proxy.memory_usage();
    assert!(bytes <= 2 << 20, "{bytes}");
    assert!(
        t.dhr.measured < t.dhr.offered - 10.0 && t.dhr.measured > 5.0,
        "measured {} offered {}",
        t.dhr.measured,
        t.dhr.offered
    );
}

#[test]
fn the_reference_proxy_revalidates_objects_that_change_during_the_run() {
    // Objects modified every few seconds: stored copies expire (Expires is
    // the next modification) and are revalidated; changed ones are fetched
    // again. Robots check every body and date, so a stale reply would be
    // an error.
    let mut w = simple(1000.0, 50, 10, 1.0, 8.0);
    polymix_requests(&mut w);
    w.content[0].life_cycle = cacheoff_workload::LifeCycle {
        length: Dist::exp(Quantity::Time, 4.0),
        variance: 0.5,
        with_lmt: 1.0,
        modified_ago: None,
    };
    let proxy = reference_proxy(256 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let s = proxy.stats();
    let g = cacheoff_proxy::ProxyStats::get;
    // Expires is the next modification, so a stale copy has nearly
    // always changed (dates have whole seconds: a copy can turn stale up
    // to a second early and be confirmed by a 304).
    assert!(g(&s.stale) > 50, "{s:?}");
    assert!(g(&s.revalidated) * 20 < g(&s.stale), "{s:?}");
    // A confirmed copy carries the origin's new echo (the 304's headers
    // replace the stored ones): the robots count a miss, as the origin
    // was asked.
    assert_eq!(t.rt_ms.hit.count, g(&s.hits), "{s:?}");
    // Changed objects cannot be hits, so fewer than offered are.
    assert!(
        t.dhr.measured < t.dhr.offered,
        "{} {}",
        t.dhr.measured,
        t.dhr.offered
    );
    assert!(t.dhr.measured > 20.0, "{}", t.dhr.measured);
}

#[test]
fn the_reference_proxy_holds_thousands_of_client_connections() {
    // 2,500 robots with up to 2 connections each, all to the proxy, and
    // the proxy's own connections to 300 servers.
    let mut w = simple(5000.0, 2500, 300, 1.0, 2.0);
    w.robots.max_conns = 2;
    w.interval = Dur::secs(1.0);
    let proxy = reference_proxy(64 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let g = cacheoff_proxy::ProxyStats::get;
    let accepted = g(&proxy.stats().connections);
    assert!(
        t.conns.open_max >= 1500,
        "open connections peaked at {}",
        t.conns.open_max
    );
    assert!(accepted >= 1500, "the proxy accepted {accepted}");
    assert_eq!(t.rt_ms.hit.count, g(&proxy.stats().hits));
}

#[test]
fn a_cache_kept_from_an_earlier_run_serves_no_hit_to_the_next() {
    // The same seed and server addresses twice through one proxy: every
    // URL names its run, so the second run starts cold, without false hits.
    let proxy = reference_proxy(64 << 20);
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let mut w = simple(800.0, 40, 8, 0.5, 2.0);
            w.servers.port = 18_911;
            run(w, Some(proxy.addr())).1
        })
        .collect();
    for r in &runs {
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        assert!((t.dhr.measured - t.dhr.offered).abs() < 1.0);
    }
}
