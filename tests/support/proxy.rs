//! The reference proxy as the root scenario tests start it: in-process on
//! 127.0.0.1:0, with its counters to compare with what the robots saw.

use cacheoff_proxy::{Proxy, ProxyConfig, ProxyStats};

/// A memory store no test run fills (a few hundred MB at most are
/// fetched), so nothing is evicted; memory is only taken as objects are
/// stored.
const ROOM_FOR_EVERYTHING: u64 = 4 << 30;

/// The reference proxy with room for everything, then set up by `tune`.
pub fn start(tune: impl FnOnce(&mut ProxyConfig)) -> Proxy {
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.memory = ROOM_FOR_EVERYTHING;
    tune(&mut cfg);
    Proxy::start(cfg).expect("start the reference proxy")
}

/// A cache that evicts nothing: every object the origin lets it keep
/// stays until it expires.
pub fn caching() -> Proxy {
    start(|_| {})
}

/// The reference proxy as `cacheoff run` starts it without `--proxy`:
/// two workers and `memory` bytes of store.
pub fn reference(memory: u64) -> Proxy {
    start(|c| {
        c.memory = memory;
        c.workers = 2;
    })
}

/// Replies the proxy served from its store.
pub fn hits(p: &Proxy) -> u64 {
    ProxyStats::get(&p.stats().hits)
}

/// Requests the proxy sent to the origin without a stored copy.
pub fn misses(p: &Proxy) -> u64 {
    ProxyStats::get(&p.stats().misses)
}

/// Stale copies the origin confirmed unchanged (robots count these as
/// misses: the origin was asked).
pub fn revalidated(p: &Proxy) -> u64 {
    ProxyStats::get(&p.stats().revalidated)
}

/// Debian's Squid (64 MB memory) in forward mode under `parent` (SPE's
/// Collector), in `dir/squid`, answering.
pub fn squid_under(
    parent: std::net::SocketAddr,
    dir: &std::path::Path,
) -> cacheoff_products::Running {
    use cacheoff_products::{Mode, ProductSpec, Settings};
    let spec = ProductSpec::builtin("squid").unwrap();
    let settings = Settings {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], cacheoff_testkit::free_port())),
        mem: 64 << 20,
        disk: None,
        addrmap: None,
        parent: Some(parent),
        dir: dir.join("squid"),
        exe: env!("CARGO_BIN_EXE_cacheoff").into(),
        tls: None,
    };
    let mut r = spec.start(Mode::Forward, &settings).unwrap();
    r.wait_ready(std::time::Duration::from_secs(60)).unwrap();
    r
}
