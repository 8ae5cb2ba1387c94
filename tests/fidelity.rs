//! Workload fidelity: a compressed PolyMix-3 offers the hit ratio its
//! model predicts (`docs/workload-model.md`), an ideal cache makes every
//! hit it can,
//! and the run keeps the request-type, content-type and object-size mix of
//! the specification (`../shared/reference/workloads.md`) as Web Polygraph
//! delivers it: images copy their page's request type and a page answered
//! 304 brings none.
//!
//! About six minutes of load; `.ci/run` runs it (a plain `cargo test`
//! skips it).

use crate::support;

use cacheoff_proxy::Proxy;
use cacheoff_rundir::Summary;
use cacheoff_workload::{expected_offered, Offered};
use support::proxy;
use support::run::{compressed, phase, run};

fn share(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole as f64
}

/// A compressed PolyMix-3 at 600/s: 1,500 robots on two client hosts. Its
/// fill phase keeps ~1,500 origin fetches open at once (2.5 s think time),
/// so one run at a time fits this machine's 20,000 descriptors.
fn polymix_3(plateau_s: f64, proxy: Option<&Proxy>) -> (Offered, Summary) {
    let w = compressed("polymix-3", 600.0, plateau_s, Some(16 << 20));
    assert_eq!(w.robots.hosts(), 2);
    let expected = expected_offered(&w);
    let (_dir, r) = run(w, proxy.map(|p| p.addr()));
    for p in &r.summary.phases {
        eprintln!(
            "{:6} {:6} xacts  DHR {:5.2}/{:5.2}  errors {:?}",
            p.name, p.xacts, p.dhr.measured, p.dhr.offered, p.errors.by_kind
        );
    }
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(r.summary.measured_phase.as_deref(), Some("top2"));
    (expected, r.summary)
}

#[test]
#[ignore = "six minutes of load; .ci/run runs it"]
fn polymix_3_offers_its_hit_ratio_and_mixes_and_an_ideal_cache_achieves_it() {
    // Offered figures from a direct run: there every reply waits for the
    // think time, so no kind of reply finishes inside a phase more often
    // than another (through a fast cache, hits issued at a phase's end
    // still count in it while misses spill into the next phase).
    let (expected, direct) = polymix_3(60.0, None);
    // What the model predicts (the plan run without sockets), about 52%
    // here as Polygraph counts (the 1/80 setting gives 54-55%: a
    // workload unit test): the run offers it. A phase's ratio varies
    // between seeds, so each phase is held to 1.5 points and their mean
    // to 1.
    let want = expected.dhr * 100.0;
    assert!(want > 49.0 && want < 58.0, "{expected:?}");
    let top_mean = (phase(&direct, "top1").dhr.offered + phase(&direct, "top2").dhr.offered) / 2.0;
    assert!(
        (top_mean - want).abs() <= 1.0,
        "top1/top2 mean offered DHR {top_mean}, expected {want}"
    );
    for name in ["top1", "top2"] {
        let p = phase(&direct, name);
        // A minute of 600/s, images included: the plan's 221 pages a
        // second (its planned requests, counted as the pacer issues them).
        assert!(p.issued > 12_000, "{name}: {} issued", p.issued);
        assert!(
            (p.dhr.offered - want).abs() <= 1.5,
            "{name}: offered DHR {}",
            p.dhr.offered
        );
        // An ideal cache cannot hit the images of pages first answered 304.
        let ideal = expected.dhr_ideal * 100.0;
        assert!(
            p.dhr.ideal <= p.dhr.offered && (p.dhr.ideal - ideal).abs() <= 1.5,
            "{name}: DHR an ideal cache makes {}, expected {ideal}",
            p.dhr.ideal
        );

        // Request types over every transaction, embedded ones included.
        // Per page: basic 80%, ims200 5%, ims304 10%, reload 5%; 42.9% of
        // pages are HTML with zipf(13) images (4.45), which copy the
        // page's type, except that a 304 brings none: per page 2.328
        // basic, 0.146 ims200, 0.100 ims304, 0.146 reload (2.719 in all).
        // Polygraph delivered 85.3% basic, 9.1% IMS, 5.7% reload.
        let rt = &p.request_types;
        for (k, want) in [
            ("basic", 85.6),
            ("ims200", 5.35),
            ("ims304", 3.68),
            ("reload", 5.35),
        ] {
            let got = share(rt[k], p.xacts);
            assert!((got - want).abs() <= 1.0, "{name}: {k} {got:.2}%");
        }
    }

    // Content types over the whole run. Not per phase: a page's images
    // finish a think time (2.5 s) after the page, so a phase that follows
    // a ramp starts with fewer images in flight and one that precedes a
    // ramp down sheds them into the next (top2 gets about 1.2 points fewer
    // images than the plan, whatever the seed). Over the run, where the
    // final drain fetches every planned image, the shares are the plan's.
    // Pages bring images unless answered 304 (10%): per page 1.716
    // images, 0.429 HTML, 0.557 other, 0.014 downloads (2.716 in all).
    let t = &direct.total;
    for (k, want) in [
        ("image", 63.2),
        ("html", 15.8),
        ("other", 20.5),
        ("download", 0.53),
    ] {
        let got = share(t.content_types[k].xacts, t.xacts);
        assert!((got - want).abs() <= 1.0, "total: {k} {got:.2}% of xacts");
    }

    // Mean reply sizes over the whole run, replies that carried the whole
    // object. Revisits weigh popular (hot-set) objects more, so a type's
    // mean rests on a few thousand distinct objects: images (many) and
    // "other" (a narrow lognormal) hold 3%; HTML, exponential and 15% of
    // replies, varies by about 1.3% from run to run and is held to 5%.
    // The object space itself is tested to 1% on 400k objects in the
    // workload crate.
    let ct = &direct.total.content_types;
    for (k, want_kb, tol) in [
        ("image", 4.5, 0.03),
        ("other", 25.0, 0.03),
        ("html", 8.5, 0.05),
    ] {
        let c = ct[k];
        let mean = c.bytes as f64 / c.bodies as f64 / 1024.0;
        assert!(
            (mean / want_kb - 1.0).abs() <= tol,
            "{k} mean size {mean:.2}KB vs {want_kb}KB over {} replies",
            c.bodies
        );
    }

    // Through an ideal cache every hit an ideal cache can make is made:
    // the same run's measured and ideal ratios agree in every busy phase.
    let proxy = proxy::caching();
    let (cached_expected, cached) = polymix_3(20.0, Some(&proxy));
    assert_eq!(cached.total.rt_ms.hit.count, proxy::hits(&proxy));
    for p in cached.phases.iter().filter(|p| p.xacts > 2_000) {
        assert!(
            (p.dhr.measured - p.dhr.ideal).abs() <= 2.0,
            "{}: measured {} ideal {}",
            p.name,
            p.dhr.measured,
            p.dhr.ideal
        );
    }
    // 20-second plateaus freeze small worlds: about 33% is offered. Through
    // a fast cache, hits issued at a short phase's end still count in it
    // while misses spill into the next, which lifts a phase's ratios a
    // little (one run: top1 33.5%, top2 37.0%).
    let tops = (phase(&cached, "top1").dhr.measured + phase(&cached, "top2").dhr.measured) / 2.0;
    assert!(
        (tops - cached_expected.dhr_ideal * 100.0).abs() <= 4.0,
        "top1/top2 measured {tops}, expected {cached_expected:?}"
    );
}
