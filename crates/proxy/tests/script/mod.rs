//! The reference proxy in front of a scripted origin (`cacheoff_testkit`'s)
//! for conformance tests: each test says, per request, the exact bytes the
//! origin answers (split into the writes it wants), and reads back every
//! request the origin received.

#![allow(dead_code, unused_imports)]

use cacheoff_base::ManualClock;
use cacheoff_proxy::{Proxy, ProxyConfig, Upstream};
pub use cacheoff_testkit::{pieces, raw, Client, Origin, Reply, Response, Seen};
use std::sync::Arc;
use std::time::Duration;

pub const T0: u64 = 1_800_000_000;

pub fn date(t: u64) -> String {
    cacheoff_http::date::format(t as i64)
}

/// `200 OK` with these header lines (each ending `\r\n`) and body.
pub fn ok(headers: &str, body: &str) -> Reply {
    raw(format!(
        "HTTP/1.1 200 OK\r\nDate: {}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        date(T0),
        body.len()
    ))
}

/// The reference proxy in front of one scripted origin.
pub struct Bench {
    pub clock: Arc<ManualClock>,
    pub origin: Origin,
    pub proxy: Proxy,
}

impl Bench {
    pub fn new(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Bench {
        Bench::tuned(script, |_| {})
    }

    pub fn tuned(
        script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
        tune: impl FnOnce(&mut ProxyConfig),
    ) -> Bench {
        let clock = Arc::new(ManualClock::new(T0));
        let origin = cacheoff_testkit::origin(script);
        let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.upstream = Upstream::Reverse(origin.addr().to_string());
        cfg.workers = 1;
        cfg.memory = 16 << 20;
        cfg.read_timeout = Duration::from_secs(3);
        cfg.clock = clock.clone();
        tune(&mut cfg);
        let proxy = Proxy::start(cfg).unwrap();
        Bench {
            clock,
            origin,
            proxy,
        }
    }

    /// `GET path` with extra header lines (each ending `\r\n`).
    pub fn get(&self, path: &str, extra: &str) -> Response {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: o\r\n{extra}\r\n"))
    }

    pub fn send(&self, raw: &str) -> Response {
        self.client().send(raw.as_bytes())
    }

    pub fn client(&self) -> Client {
        Client::connect(self.proxy.addr())
    }

    /// The last request the origin saw.
    pub fn last(&self) -> Seen {
        self.origin.all().pop().expect("the origin saw a request")
    }
}
