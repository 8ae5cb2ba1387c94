//! Reverse (surrogate) mode, in-process on port 0: robots send
//! origin-form requests naming each server in `Host`, the reference proxy
//! routes them by the address map, and hits, offered ratios and errors
//! come out as in forward mode; a surrogate that ignores `Host` is caught.

use crate::support;

use cacheoff_agent::BoundServers;
use cacheoff_proxy::Upstream;
use cacheoff_workload::AddrMap;
use std::sync::Arc;
use support::proxy;
use support::run::{assert_every_planned_request_ended, planned, run_reverse, simple};

fn by_host(map: &AddrMap) -> Upstream {
    let m = map
        .entries()
        .iter()
        .map(|(n, a)| (n.clone(), a.to_string()))
        .collect();
    Upstream::ByHost(Arc::new(m))
}

#[test]
fn a_surrogate_run_counts_hits_as_the_surrogate_serves_them() {
    let w = simple(1000.0, 50, 10, 1.0, 4.0);
    let plan = planned(&w);
    let bound = Arc::new(BoundServers::bind(&w).unwrap());
    let map = bound.addr_map();
    let surrogate = proxy::start(|c| c.upstream = by_host(&map));
    let (dir, r) = run_reverse(w, surrogate.addr(), bound);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_every_planned_request_ended(&plan, t);
    assert!(t.rt_ms.hit.count > 1000, "hits {}", t.rt_ms.hit.count);
    assert_eq!(t.rt_ms.hit.count, proxy::hits(&surrogate));
    assert_eq!(t.rt_ms.miss.count, proxy::misses(&surrogate));
    assert!(
        (t.dhr.measured - t.dhr.ideal).abs() < 2.0,
        "measured {} ideal {}",
        t.dhr.measured,
        t.dhr.ideal
    );
    // The run directory says how it ran and names the servers.
    let manifest = std::fs::read_to_string(dir.path().join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(manifest["mode"], "reverse");
    let written = std::fs::read_to_string(dir.path().join("addrmap.txt")).unwrap();
    assert_eq!(AddrMap::parse(&written).unwrap(), map);
}

#[test]
fn a_surrogate_that_ignores_host_serves_wrong_objects_and_is_caught() {
    let w = simple(300.0, 20, 4, 0.5, 2.0);
    let bound = Arc::new(BoundServers::bind(&w).unwrap());
    // Every request goes to the first server, whatever its Host says.
    let first = bound.addrs()[0].to_string();
    let surrogate = proxy::start(|c| c.upstream = Upstream::Reverse(first));
    let (_dir, r) = run_reverse(w, surrogate.addr(), bound);
    let t = &r.summary.total;
    // Objects of the other three servers came from the wrong one.
    assert!(
        t.errors.total * 2 > t.xacts,
        "{} errors of {}: {:?}",
        t.errors.total,
        t.xacts,
        t.errors.by_kind
    );
}
