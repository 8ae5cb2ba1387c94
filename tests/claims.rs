//! What a proxy claims, held against the transaction echo (issue 17): a
//! proxy that says hit on its misses is caught in the claim counts, and
//! the faithful reference proxy's claims are all true. Robots -> the
//! reference proxy -> origin servers, in-process on port 0.

use crate::support;

use cacheoff_proxy::{Fault, Faults};
use cacheoff_stats::{Counts, Entry};
use cacheoff_workload::Workload;
use support::proxy;
use support::run::run;

fn short() -> Workload {
    support::run::simple(300.0, 20, 4, 1.0, 3.0)
}

/// The run's counts, its successful hits and misses.
fn tally(total: &Entry) -> (Counts, u64, u64) {
    (
        total.raw_counts(),
        total.rt_ms.hit.count,
        total.rt_ms.miss.count,
    )
}

#[test]
fn a_proxy_that_claims_hits_on_its_misses_is_caught() {
    let liar = proxy::start(|c| c.faults = Faults::new(vec![(Fault::ClaimHit, 1.0)]));
    let (dir, r) = run(short(), Some(liar.addr()));
    let t = &r.summary.total;
    let (c, hits, misses) = tally(t);
    assert!(misses > 0 && hits > 0, "{misses} misses, {hits} hits");
    // The fault lies on every reply not served from the store: each miss.
    assert_eq!(c.claim_hit_was_miss, misses);
    assert_eq!(c.cache_status_hit_was_miss, misses);
    assert_eq!(c.x_cache_hit_was_miss, misses);
    assert_eq!((c.claim_miss_was_hit, c.claim_none), (0, 0));
    // The replies themselves are right: no error.
    assert!(t.errors.by_kind.is_empty(), "{:?}", t.errors.by_kind);
    let report = cacheoff_report::write_page(dir.path()).unwrap();
    let html = std::fs::read_to_string(report).unwrap();
    assert!(html.contains("What the proxy claims"));
    assert!(
        html.contains(&format!("{misses} of its claims were false")),
        "{html}"
    );
}

#[test]
fn the_reference_proxy_claims_only_what_is_true() {
    let faithful = proxy::caching();
    let (_dir, r) = run(short(), Some(faithful.addr()));
    let t = &r.summary.total;
    let (c, hits, misses) = tally(t);
    assert!(misses > 0 && hits > 0, "{misses} misses, {hits} hits");
    assert_eq!(
        (c.claim_hit_was_miss, c.claim_miss_was_hit, c.claim_none),
        (0, 0, 0),
        "{c:?}"
    );
    // Every reply says it in both headers, truly.
    assert_eq!(
        (
            c.cache_status_hit_was_miss,
            c.cache_status_miss_was_hit,
            c.cache_status_none
        ),
        (0, 0, 0)
    );
    assert_eq!(
        (
            c.x_cache_hit_was_miss,
            c.x_cache_miss_was_hit,
            c.x_cache_none
        ),
        (0, 0, 0)
    );
    // It adds no Via to replies.
    assert_eq!(c.via_none, t.xacts);
}

#[test]
fn without_a_proxy_nothing_is_claimed() {
    let (_dir, r) = run(short(), None);
    let t = &r.summary.total;
    let c = t.raw_counts();
    assert!(t.xacts > 0);
    assert_eq!(c.claim_none, t.xacts);
    assert_eq!((c.claim_hit_was_miss, c.claim_miss_was_hit), (0, 0));
}

/// What Debian's Squid claims, read from a run through it (no parent):
/// its `X-Cache` is true to the echo, and it sends no `Cache-Status`.
#[test]
#[ignore = "needs Debian's squid; .ci/run installs it"]
fn squid_s_x_cache_is_read_and_true() {
    use cacheoff_products::{Mode, ProductSpec, Settings};
    let dir = tempfile::tempdir().unwrap();
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], cacheoff_testkit::free_port()));
    let settings = Settings {
        listen,
        mem: 64 << 20,
        disk: None,
        addrmap: None,
        parent: None,
        dir: dir.path().join("squid"),
        exe: env!("CARGO_BIN_EXE_cacheoff").into(),
        tls: None,
    };
    let mut squid = ProductSpec::builtin("squid")
        .unwrap()
        .start(Mode::Forward, &settings)
        .unwrap();
    squid
        .wait_ready(std::time::Duration::from_secs(60))
        .unwrap();
    let (_run, r) = run(short(), Some(listen));
    squid.stop().unwrap();
    let t = &r.summary.total;
    let (c, hits, misses) = tally(t);
    eprintln!("squid: {hits} hits, {misses} misses, {c:?}");
    assert!(misses > 0 && hits > 0, "{misses} misses, {hits} hits");
    assert_eq!(c.cache_status_none, t.xacts);
    assert_eq!(c.x_cache_none, 0);
    assert_eq!(
        (c.x_cache_hit_was_miss, c.x_cache_miss_was_hit),
        (0, 0),
        "{c:?}"
    );
}
