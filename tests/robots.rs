//! Robots and their connections, in-process on port 0: thousands of
//! robots and connections in one process, HTTP/1.0 keep-alive, deliberate
//! aborts, an unreachable proxy, transactions unfinished at the end-of-run
//! drain, and a run stopped early.

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_base::Dur;
use cacheoff_rundir::RunDir;
use cacheoff_workload::{Dist, Quantity};
use std::net::SocketAddr;
use support::proxy;
use support::run::{
    assert_every_planned_request_ended, planned, run, run_into, simple, stop_after, WORKERS,
};

#[test]
fn an_unreachable_proxy_counts_connect_errors_and_the_run_still_finishes() {
    let port = cacheoff_testkit::free_port();
    let w = simple(200.0, 10, 2, 1.0, 1.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, Some(SocketAddr::from(([127, 0, 0, 1], port))));
    let t = &r.summary.total;
    assert_eq!(t.xacts, 0);
    // Each planned request tried to connect, and failed.
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(
        t.errors.by_kind.get("connect_failed").copied(),
        Some(plan.total),
        "{:?}",
        t.errors.by_kind
    );
}

#[test]
fn a_stopped_run_keeps_its_intervals_and_is_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let stop = StopHandle::new();
    // Stopped 1.5 s into a 61 s run: once three half-second intervals are
    // on disk (on a busy machine, a little later).
    let t = stop_after(dir.path(), 3, &stop);
    let mut w = simple(200.0, 10, 2, 1.0, 60.0);
    w.interval = Dur::secs(0.5);
    let r = run_into(dir.path(), w, None, WORKERS, &stop);
    t.join().unwrap();
    assert!(r.summary.interrupted);
    // The three, and the one the stop cut short; far from the 122 of the
    // whole run.
    let intervals = RunDir::open(dir.path()).unwrap().intervals;
    assert!(
        intervals.len() >= 3 && intervals.len() <= 40,
        "{}",
        intervals.len()
    );
    let sum: u64 = intervals.iter().map(|i| i.stats.xacts).sum();
    assert_eq!(sum, r.summary.total.xacts);
    assert!(r.summary.total.duration_s < 20.0);
}

#[test]
fn thousands_of_robots_and_connections_in_one_process() {
    // 2,000 robots, each keeping up to 4 connections to 500 servers,
    // which hold every reply a second: each request keeps its connection
    // busy that long, so the 4,000 requested in any second are open at
    // once at its end, on a busy machine too (slower replies only keep
    // more open).
    let mut w = simple(4000.0, 2000, 500, 1.0, 2.0);
    w.robots.max_conns = 4;
    w.servers.think_time = Dist::constant(Quantity::Time, 1.0);
    w.interval = Dur::secs(1.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_every_planned_request_ended(&plan, t);
    assert!(
        t.conns.open_max >= 3500,
        "open connections peaked at {}",
        t.conns.open_max
    );
}

#[test]
fn the_reference_proxy_holds_thousands_of_client_connections() {
    // 2,500 robots with up to 2 connections each, all to the proxy, and
    // the proxy's own connections to 300 servers.
    let mut w = simple(5000.0, 2500, 300, 1.0, 2.0);
    w.robots.max_conns = 2;
    w.interval = Dur::secs(1.0);
    let proxy = proxy::reference(64 << 20);
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
fn transactions_still_in_flight_after_the_drain_are_counted_unfinished() {
    // Servers take 30 s per reply; the run may wait only 0.3 s at its end.
    let mut w = simple(100.0, 20, 4, 1.0, 1.0);
    w.servers.think_time = Dist::constant(Quantity::Time, 30.0);
    w.timeouts.drain = Dur::secs(0.3);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    // About 200 requests were due; every robot's connections (4 each)
    // were busy to the end, the rest waited in backlogs and were not
    // sent: all of them end unfinished, so every issued request ends.
    let unfinished = t.errors.by_kind.get("unfinished").copied().unwrap_or(0);
    assert!(t.issued > 20 * 4, "issued {}", t.issued);
    assert_eq!(unfinished, t.issued, "{:?}", t.errors.by_kind);
    assert_eq!(t.errors.by_kind.len(), 1, "{:?}", t.errors.by_kind);
    assert_eq!(t.xacts, 0);
    // The run (2 s) ended within the drain (on a busy machine, a few
    // seconds later), long before the replies.
    let written = |f: &str| {
        std::fs::metadata(r.dir.join(f))
            .unwrap()
            .modified()
            .unwrap()
    };
    let took = written("summary.json")
        .duration_since(written("manifest.json"))
        .unwrap();
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
}

#[test]
fn http10_keep_alive_connections_persist() {
    for proxy in [None, Some(proxy::caching())] {
        let mut w = simple(600.0, 20, 2, 1.0, 2.0);
        w.robots.http10 = true;
        let plan = planned(&w);
        let (_dir, r) = run(w, proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
        assert_every_planned_request_ended(&plan, t);
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
    for proxy in [None, Some(proxy::caching())] {
        let mut w = simple(1000.0, 50, 10, 1.0, 3.0);
        w.aborts = cacheoff_workload::Aborts {
            robot: 0.05,
            server: 0.05,
        };
        let plan = planned(&w);
        let (_dir, r) = run(w, proxy.as_ref().map(|p| p.addr()));
        let t = &r.summary.total;
        // Each planned request was answered or aborted...
        assert_every_planned_request_ended(&plan, t);
        match &proxy {
            None => assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind),
            // ... except, through a cache, requests that waited for a fetch
            // the server aborted: the proxy answers them its gateway error
            // (requests in flight together, more of them on a busy
            // machine). Those are the only errors, each one the proxy
            // counted, and far fewer than the aborts.
            Some(p) => {
                let status = t.errors.by_kind.get("http_status").copied().unwrap_or(0);
                assert_eq!(t.errors.total, status, "{:?}", t.errors.by_kind);
                let gateway = cacheoff_proxy::ProxyStats::get(&p.stats().origin_errors);
                assert!(status <= gateway, "{status} vs {gateway}");
                assert!(status < t.aborts.server, "{status} vs {:?}", t.aborts);
            }
        }
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
