//! Runs through the reference proxy, in-process on port 0: the robots'
//! hits are the proxy's, replies in every framing are read and checked,
//! a cache with room for everything makes every hit an ideal cache can, a small one evicts, a
//! changing object is revalidated, POST and HEAD reach the origin, and a
//! cache kept from an earlier run serves the next no hit.

use crate::support;

use cacheoff_proxy::{Fault, Faults, ReplyFraming};
use cacheoff_stats::Entry;
use cacheoff_workload::{Dist, Quantity};
use support::proxy;
use support::run::{
    assert_every_planned_request_ended, changing, planned, polymix_content, polymix_requests, run,
    simple,
};

/// Asserts that the measured document hit ratio is within `gap` points of
/// what an ideal cache makes of the offered hits.
fn assert_achieves_ideal(t: &Entry, gap: f64) {
    assert!(
        (t.dhr.measured - t.dhr.ideal).abs() < gap,
        "measured {} ideal {}",
        t.dhr.measured,
        t.dhr.ideal
    );
}

#[test]
fn caching_proxy_hits_are_counted_and_uncachable_objects_never_hit() {
    let proxy = proxy::caching();
    let w = simple(1000.0, 100, 20, 1.0, 5.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let robot_hits = t.rt_ms.hit.count;
    assert!(robot_hits > 1000, "hits {robot_hits}");
    // Every hit the proxy served is a hit the robots saw, and vice versa.
    assert_eq!(robot_hits, proxy::hits(&proxy));
    assert_eq!(t.rt_ms.miss.count, proxy::misses(&proxy));
    assert_eq!(t.errors.by_kind.get("uncachable_hit"), None);
    // A cache with room for everything achieves almost exactly what an
    // ideal cache does.
    assert_achieves_ideal(t, 2.0);
}

#[test]
fn chunked_and_close_delimited_replies_are_read_and_verified() {
    for framing in [ReplyFraming::Chunked, ReplyFraming::Close] {
        let proxy = proxy::start(|c| c.reply_framing = framing);
        let w = simple(300.0, 20, 5, 1.0, 2.0);
        let plan = planned(&w);
        let (_dir, r) = run(w, Some(proxy.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{framing:?}: {:?}", t.errors.by_kind);
        // Every planned reply was read whole, in this framing.
        assert_every_planned_request_ended(&plan, t);
        assert_eq!(t.rt_ms.hit.count, proxy::hits(&proxy), "{framing:?}");
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
    let proxy = proxy::start(|c| {
        c.reply_framing = ReplyFraming::Chunked;
        c.faults = Faults::new(vec![(Fault::FlipByte, 1.0)]);
    });
    let mut w = simple(200.0, 10, 5, 1.0, 1.0);
    w.content[0].size = Dist::constant(Quantity::Size, 5000.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_every_planned_request_ended(&plan, t);
    let bad = t.errors.by_kind.get("body_mismatch").copied().unwrap_or(0);
    assert!(bad > 100, "body_mismatch {bad}");
    assert_eq!(t.errors.total, bad, "{:?}", t.errors.by_kind);
    // Each corrupted hit was caught; none counts as a success.
    assert_eq!(bad, proxy::hits(&proxy));
    assert_eq!(t.rt_ms.hit.count, 0);
}

#[test]
fn forwarding_proxy_without_cache_gives_no_hits() {
    let proxy = proxy::start(|c| c.memory = 0);
    let w = simple(500.0, 50, 10, 1.0, 2.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.dhr.measured, 0.0);
    assert_eq!(proxy::misses(&proxy), t.xacts);
}

#[test]
fn an_ideal_cache_hits_every_offered_hit_of_the_content_mix() {
    let proxy = proxy::caching();
    let (_dir, r) = run(polymix_content(), Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.rt_ms.hit.count, proxy::hits(&proxy));
    assert_achieves_ideal(t, 2.0);
    // Recurrence 72.37% over ~80% cachable requests.
    assert!(
        t.dhr.ideal > 50.0 && t.dhr.ideal < 62.0,
        "ideal {}",
        t.dhr.ideal
    );
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
    let plan = planned(&with_methods());
    for proxy in [None, Some(proxy::caching())] {
        let (_dir, r) = run(with_methods(), proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        assert_every_planned_request_ended(&plan, t);
        for k in ["post", "head"] {
            let share = t.request_types[k] as f64 / t.xacts as f64;
            assert!((share - 0.05).abs() < 0.012, "{k}: {share}");
        }
        if proxy.is_some() {
            // Only basic GETs count in hit ratios, and an ideal cache hits them all.
            // (A revisit of an object only ever asked for by HEAD or POST
            // offers no hit: no cache could hold it.)
            assert_achieves_ideal(t, 0.5);
        }
    }
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
    let proxy = proxy::reference(512 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let s = proxy.stats();
    let g = cacheoff_proxy::ProxyStats::get;
    // The robots' hits are the proxy's hits: no false hits, none missed.
    assert_eq!(t.rt_ms.hit.count, g(&s.hits));
    assert_eq!(t.xacts, g(&s.requests));
    // With room for everything, every hit an ideal cache makes is made.
    assert!(
        (t.dhr.measured - t.dhr.ideal).abs() < 0.5,
        "measured {} ideal {} proxy {s:?} robots {:?}",
        t.dhr.measured,
        t.dhr.ideal,
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
    let proxy = proxy::reference(2 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    let (_, bytes) = proxy.memory_usage();
    assert!(bytes <= 2 << 20, "{bytes}");
    assert!(
        t.dhr.measured < t.dhr.ideal - 10.0 && t.dhr.measured > 5.0,
        "measured {} ideal {}",
        t.dhr.measured,
        t.dhr.ideal
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
    changing(&mut w, 4.0, 1.0);
    let plan = planned(&w);
    let proxy = proxy::reference(256 << 20);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_every_planned_request_ended(&plan, t);
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
    // Changed objects cannot be hits, so fewer than an ideal cache's are.
    assert!(
        t.dhr.measured < t.dhr.ideal,
        "{} {}",
        t.dhr.measured,
        t.dhr.ideal
    );
    assert!(t.dhr.measured > 20.0, "{}", t.dhr.measured);
}

#[test]
fn a_cache_kept_from_an_earlier_run_serves_no_hit_to_the_next() {
    // The same seed and server addresses twice through one proxy: every
    // URL names its run, so the second run starts cold, without false hits.
    let proxy = proxy::reference(64 << 20);
    // One port for both runs, free when chosen (servers bind with
    // SO_REUSEADDR, so the second run can take it again).
    let port = cacheoff_testkit::free_port();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let mut w = simple(800.0, 40, 8, 0.5, 2.0);
            w.servers.port = port;
            let plan = planned(&w);
            (plan, run(w, Some(proxy.addr())).1)
        })
        .collect();
    for (plan, r) in &runs {
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        assert_every_planned_request_ended(plan, t);
        assert_achieves_ideal(t, 1.0);
    }
}
