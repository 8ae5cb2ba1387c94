//! The suite catches a deliberately wrong cache: the reference proxy with
//! one `--fault` on every request fails the checks of the rule it breaks
//! (and the JSON says so under the names outside checks read).

use cacheoff_conform::{Mode, Origin, Target};
use cacheoff_proxy::{Fault, Faults, Proxy, ProxyConfig};
use std::sync::Arc;

/// Results of the forward suite against the proxy with `fault`, by id.
fn results_with(fault: Fault) -> serde_json::Value {
    let origin = Arc::new(Origin::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.memory = 64 << 20;
    cfg.workers = 2;
    cfg.faults = Faults::new(vec![(fault, 1.0)]);
    let proxy = Proxy::start(cfg).unwrap();
    let target = Target {
        mode: Mode::Forward,
        proxy: proxy.addr(),
        origin: origin.addr(),
        host: None,
    };
    let report = cacheoff_conform::run(target, origin);
    proxy.stop();
    serde_json::from_str(&report.json()).unwrap()
}

fn result_of<'a>(v: &'a serde_json::Value, id: &str) -> &'a str {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["result"].as_str())
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn fails(fault: Fault, ids: &[&str]) {
    let v = results_with(fault);
    for id in ids {
        assert_eq!(result_of(&v, id), "fail", "{id} with the {fault:?} fault");
    }
    let failed = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["result"] == "fail")
        .count();
    assert_eq!(v["failed"].as_u64(), Some(failed as u64));
    assert!(v["passed"].as_u64().unwrap() > 0);
}

#[test]
fn serving_stale_copies_fails_the_freshness_checks() {
    fails(
        Fault::Stale,
        &["stale-max-age", "expires-past", "must-revalidate-stale"],
    );
}

#[test]
fn storing_what_may_not_be_stored_fails_no_store_and_private() {
    fails(
        Fault::CacheUncachable,
        &["no-store-response", "private-response"],
    );
}

#[test]
fn serving_reloads_from_the_store_fails_request_no_cache() {
    fails(Fault::ReloadHit, &["no-cache-request"]);
}

#[test]
fn keeping_a_copy_after_a_post_fails_invalidation() {
    fails(
        Fault::KeepAfterPost,
        &["post-invalidates", "put-invalidates"],
    );
}
