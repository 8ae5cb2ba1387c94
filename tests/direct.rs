//! Direct runs, robots -> origin servers with no proxy, in-process on port
//! 0: what a workload offers (hit ratios, request and content mixes,
//! rates) and how the robots measure it (latency from the intended start,
//! WAN emulation).

mod support;

use cacheoff_base::Dur;
use cacheoff_rundir::RunDir;
use cacheoff_workload::{Dist, Quantity};
use support::run::{changing, phase_names, polymix_content, polymix_requests, run, simple};

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
    assert_eq!(phase_names(&r.summary), ["warm", "meas"]);

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
fn origin_answers_if_modified_since_and_the_request_mix_is_kept() {
    let mut w = simple(3000.0, 100, 20, 1.0, 3.0);
    polymix_requests(&mut w);
    // Objects that change every few minutes, so dates really move.
    changing(&mut w, 300.0, 1.0);
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
