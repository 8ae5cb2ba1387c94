//! SPE end to end, in-process on port 0: clients -> the Multiplier ->
//! the real Collector (`cacheoff-proxy`, `collector = true`) -> a test
//! origin, with proxies under test that fetch through the Collector: the
//! reference proxy (`parent`) and small fakes whose misbehaviour is exact
//! (relay honestly, corrupt a byte, truncate, never answer).

use crate::support;

use cacheoff_proxy::{Proxy, ProxyConfig};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

#[test]
fn every_proxy_is_compared_with_the_collector_and_ranked() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let mut rc = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    rc.parent = Some(stage.collector().to_string());
    rc.workers = 1;
    let reference = Proxy::start(rc).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("spe");
    let cfg = config(
        stage.collector(),
        &[
            ("reference", reference.addr()),
            ("honest", stage.fake(Fake::Honest)),
            ("corrupt", stage.fake(Fake::Corrupt)),
            ("truncate", stage.fake(Fake::Truncate)),
        ],
        &out,
    );
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    let paths: Vec<String> = (1..=5).map(|i| format!("/obj/{i}")).collect();
    for p in &paths {
        let r = get(&mut s, origin, p);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, body_of(p), "the client gets the object's bytes");
        assert!(
            r.head_text().contains("X-Cacheoff-Collected: "),
            "{}",
            r.head_text()
        );
        // Every proxy answered this request's copy before the next one's
        // goes out: the examples come in the order of the requests.
        until("this request's copies answered", || m.queued_bytes() == 0);
    }
    // The reference proxy stored every object before the second round.
    until("the reference proxy stores round one", || {
        reference.memory_usage().0 >= paths.len()
    });
    for p in &paths {
        let r = get(&mut s, origin, p);
        assert_eq!(r.body, body_of(p));
        // The Collector's own reply, unchanged: its hit header and stamp.
        assert!(r.head_text().contains("X-Cache: HIT"), "{}", r.head_text());
        until("this request's copies answered", || m.queued_bytes() == 0);
    }
    drop(s);
    let summary = m.stop().unwrap();
    assert_eq!(summary.requests, 10);
    let p = |n: &str| summary.proxy(n).unwrap().clone();
    let reference_s = p("reference");
    let c = reference_s.span.counts;
    assert_eq!((c.copied, c.completed, c.mismatches), (10, 10, 0), "{c:?}");
    assert_eq!((c.validated_hits, c.validated_misses), (5, 5), "{c:?}");
    assert_eq!(c.claimed_hits, 5, "{c:?}");
    assert_eq!(reference_s.validated_hit_ratio, 50.0);
    let honest = p("honest").span;
    assert_eq!(honest.counts.mismatches, 0, "{:?}", honest.examples);
    assert_eq!(honest.counts.validated_misses, 10);
    let corrupt = p("corrupt").span;
    assert_eq!(corrupt.mismatches_by_kind.get("corrupt_body"), Some(&10));
    assert_eq!(corrupt.examples.len(), 5);
    assert!(corrupt.examples[0].url.ends_with("/obj/1"));
    let truncate = p("truncate").span;
    assert_eq!(
        truncate.mismatches_by_kind.get("truncated"),
        Some(&10),
        "{:?}",
        truncate
    );
    let ranked: Vec<&str> = summary
        .ranking
        .iter()
        .filter(|r| r.rank.is_some())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(ranked.len(), 2);
    assert!(ranked.contains(&"reference") && ranked.contains(&"honest"));
    assert_eq!(summary.collector.completed, 10);
    // Round two's hits at least: a copy may reach the Collector first.
    assert!(summary.collector.hits >= 5, "{:?}", summary.collector);

    // The files: the names outside checks read, and the directory reads back.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["requests"], 10);
    for pj in json["proxies"].as_array().unwrap() {
        for k in [
            "name",
            "copied",
            "dropped",
            "claimed_hits",
            "mismatches",
            "mismatches_by_kind",
        ] {
            assert!(pj.get(k).is_some(), "{k} missing in {pj}");
        }
        for k in ["hit", "miss", "all"] {
            for f in ["mean", "p50", "p99"] {
                assert!(pj["rt_ms"][k][f].is_number(), "rt_ms.{k}.{f} in {pj}");
            }
        }
    }
    let run = cacheoff_rundir::spe::open(&out).unwrap();
    assert_eq!(run.summary, summary);
    assert_eq!(run.manifest.kind, "multiplier");
    assert_eq!(run.manifest.proxies.len(), 4);
    assert!(!run.intervals.is_empty());
    let copied: u64 = run
        .intervals
        .iter()
        .flat_map(|i| i.proxies.iter().filter(|p| p.name == "corrupt"))
        .map(|p| p.counts.copied)
        .sum();
    assert_eq!(copied, 10, "intervals add up to the summary");
}

#[test]
fn a_stalled_proxy_drops_copies_and_clients_do_not_wait_for_it() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let honest = stage.fake(Fake::Honest);
    let mut cfg = config(
        stage.collector(),
        &[("stalled", stage.fake(Fake::Stall)), ("honest", honest)],
        tmp.path(),
    );
    cfg.queue = 2;
    cfg.conns_per_proxy = 1;
    cfg.first_byte_timeout = Duration::from_secs(60);
    cfg.stop_grace = Duration::from_millis(300);
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    let t = Instant::now();
    for i in 0..20 {
        let p = format!("/stall/{i}");
        assert_eq!(get(&mut s, origin, &p).body, body_of(&p));
        // The honest proxy keeps up: on its one connection, its copy of
        // this request came once the one before was answered, so its
        // queue never overflows however fast the client is.
        until("the honest proxy's copy", || stage.sent_to(honest) > i);
    }
    // 20 replies while the stalled proxy holds its one connection for 60 s:
    // only the Collector's time counts (a bound no busy machine misses).
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    let t = Instant::now();
    let summary = m.stop().unwrap();
    // Its 0.3 s grace, not the stalled copy's minute.
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "stop took {:?}",
        t.elapsed()
    );
    let stalled = summary.proxy("stalled").unwrap();
    let c = stalled.span.counts;
    assert_eq!(c.copied + c.dropped, 20, "{c:?}");
    // One in flight, at most one held by the dispatcher, two queued.
    assert!(c.dropped >= 16, "{c:?}");
    assert!(stalled.overloaded);
    assert_eq!(c.completed, 0);
    let honest = summary.proxy("honest").unwrap();
    assert_eq!(honest.span.counts.completed, 20);
    assert!(!honest.overloaded);
    let last = summary.ranking.last().unwrap();
    assert_eq!(last.name, "stalled");
    assert!(
        last.reason.as_deref().unwrap().contains("dropped"),
        "{last:?}"
    );
}

#[test]
fn unsafe_methods_reach_the_origin_once_and_tunnels_are_refused() {
    let posts = Arc::new(AtomicU64::new(0));
    let stage = Stage::new(posts.clone());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    write!(
        s.s,
        "POST http://{origin}/form HTTP/1.1\r\nHost: {origin}\r\nContent-Length: 5\r\n\r\nhello"
    )
    .unwrap();
    let r = s.reply(false);
    assert_eq!(r.body, b"posted 1");
    // A chunked upload is buffered and sent on with its length.
    write!(
        s.s,
        "POST http://{origin}/form HTTP/1.1\r\nHost: {origin}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    )
    .unwrap();
    assert_eq!(s.reply(false).body, b"posted 2");
    write!(
        s.s,
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
    )
    .unwrap();
    let r = s.reply(false);
    assert_eq!(r.status, 501);
    assert!(String::from_utf8_lossy(&r.body).contains("plain HTTP only"));
    let mut bad = client(m.addr());
    bad.s
        .write_all(
            b"GET http://x/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        )
        .unwrap();
    assert_eq!(bad.reply(false).status, 400);
    let summary = m.stop().unwrap();
    assert_eq!(posts.load(Ordering::SeqCst), 2);
    let c = summary.proxy("honest").unwrap().span.counts;
    assert_eq!((c.copied, c.not_copied_unsafe), (0, 2), "{c:?}");
    assert_eq!(summary.requests, 4);
    assert_eq!(summary.refused, 2);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    let lines = Arc::new(AtomicU64::new(0));
    let seen = lines.clone();
    cfg.on_interval = Some(Arc::new(move |iv| {
        seen.fetch_add(iv.requests, Ordering::SeqCst);
    }));
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    let paths = ["/p/a", "/p/bb", "/p/ccc", "/p/a"];
    let mut wire = String::new();
    for p in paths {
        wire.push_str(&format!(
            "GET http://{origin}{p} HTTP/1.1\r\nHost: {origin}\r\n\r\n"
        ));
    }
    s.write(wire.as_bytes());
    for p in paths {
        assert_eq!(s.reply(false).body, body_of(p), "{p}");
    }
    let summary = m.stop().unwrap();
    assert_eq!(summary.requests, 4);
    assert_eq!(summary.proxy("honest").unwrap().span.counts.completed, 4);
    assert_eq!(
        lines.load(Ordering::SeqCst),
        4,
        "the hook saw every interval"
    );
}

#[test]
fn stale_copies_and_wrong_statuses_are_named() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        stage.collector(),
        &[
            ("stale", stage.fake(Fake::Stale)),
            ("notfound", stage.fake(Fake::NotFound)),
        ],
        tmp.path(),
    );
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    for p in ["/s/1", "/s/2", "/s/3"] {
        assert_eq!(get(&mut s, origin, p).status, 200);
    }
    let summary = m.stop().unwrap();
    let stale = &summary.proxy("stale").unwrap().span;
    assert_eq!(stale.mismatches_by_kind.get("stale"), Some(&3), "{stale:?}");
    assert!(
        stale.examples[0].detail.contains("Sat, 21 Nov 2026"),
        "{:?}",
        stale.examples
    );
    let nf = &summary.proxy("notfound").unwrap().span;
    assert_eq!(
        nf.mismatches_by_kind.get("wrong_status"),
        Some(&3),
        "{nf:?}"
    );
    assert_eq!(nf.examples[0].detail, "expected status 200; got 404");
    assert!(summary.ranking.iter().all(|r| r.rank.is_none()));
}
