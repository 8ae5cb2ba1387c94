//! Every product as a proxy under test of an SPE run: forward mode with a
//! parent proxy (the Collector) that gets every miss. A tiny parent here
//! answers any request, absolute-form (Squid, Traffic Server, the
//! reference proxy) or origin-form with the Host (Varnish, nginx), with a
//! cachable reply naming its URL, and records what it was asked. The URLs
//! name hosts the product must never reach itself: a trap listening on
//! 127.0.0.9 counts direct connections, and `s9.bench.tst` resolves to
//! nothing.
//!
//! Ignored like the other product tests (they need the products:
//! `ops/install-products.sh`); a missing product is skipped with a
//! message.

use crate::support;

use cacheoff_products::{Mode, Running, Settings};
use cacheoff_testkit::Reply;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};
use support::{
    cacheoff_exe, free_port, log_counts, product_with, request, run_dir, Response, READY,
};

/// One request as the parent saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// The request target as sent: absolute-form or origin-form.
    target: String,
    host: String,
    /// The URL it asks for: the target if absolute, else `http://` Host
    /// target.
    url: String,
}

/// The stand-in Collector: every reply carries `X-Count` (its request
/// count, also as `X-Cacheoff-Echo`), one `Last-Modified` an hour before
/// it started (an `If-Modified-Since` not before it gets a 304),
/// `Cache-Control: public, max-age=3600`, and the body `parent: URL`.
/// Request bodies are read and dropped.
struct Parent {
    scripted: cacheoff_testkit::Origin,
    addr: SocketAddr,
    last_modified: SystemTime,
}

/// The URL a request asks for: its target if absolute, else Host and
/// target.
fn url_of(target: &str, host: &str) -> String {
    if target.starts_with("http://") {
        target.to_string()
    } else {
        format!("http://{host}{target}")
    }
}

impl Parent {
    fn start() -> Parent {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let last_modified = SystemTime::UNIX_EPOCH + Duration::from_secs(secs - 3600);
        let count = AtomicU64::new(0);
        let scripted = cacheoff_testkit::origin(move |seen| {
            let url = url_of(&seen.target, seen.header("host").unwrap_or(""));
            let n = (count.fetch_add(1, Ordering::SeqCst) + 1).to_string();
            let ims = seen
                .header("if-modified-since")
                .and_then(|v| httpdate::parse_http_date(v).ok());
            let not_modified = ims.is_some_and(|ims| last_modified <= ims);
            let body = format!("parent: {url}\n");
            let (date, lm) = (
                httpdate::fmt_http_date(SystemTime::now()),
                httpdate::fmt_http_date(last_modified),
            );
            let len = body.len().to_string();
            let headers = [
                ("Date", date.as_str()),
                ("Last-Modified", lm.as_str()),
                ("Cache-Control", "public, max-age=3600"),
                ("X-Count", n.as_str()),
                ("X-Cacheoff-Echo", n.as_str()),
                ("Content-Type", "text/plain"),
                ("Content-Length", len.as_str()),
            ];
            Reply::new(if not_modified { 304 } else { 200 }, &headers, &body)
        });
        Parent {
            addr: scripted.addr(),
            scripted,
            last_modified,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.scripted
            .all()
            .into_iter()
            .map(|s| {
                let host = s.header("host").unwrap_or("").to_string();
                Seen {
                    url: url_of(&s.target, &host),
                    method: s.method,
                    target: s.target,
                    host,
                }
            })
            .collect()
    }

    /// Requests for `url` (any method).
    fn requests(&self, url: &str) -> usize {
        self.seen().iter().filter(|s| s.url == url).count()
    }
}

/// A listener on an address the products are asked about but must never
/// connect to: it counts the connections it gets
/// ([`cacheoff_testkit::Origin::connections`]) and closes them.
fn trap() -> cacheoff_testkit::Origin {
    // 127.0.0.9 is this machine's (all of 127/8 is loopback).
    cacheoff_testkit::origin_on("127.0.0.9:0".parse().unwrap(), |_| Reply::Close)
}

/// The product in forward mode with `parent`, ready.
fn start(name: &str, parent: SocketAddr, dir: &std::path::Path) -> Running {
    let spec = product_with(name, Mode::Forward, true);
    assert!(spec.supports_parent(Mode::Forward), "{name}");
    let settings = Settings {
        listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        mem: 64 << 20,
        disk: None,
        addrmap: None,
        parent: Some(parent),
        dir: dir.join(name),
        exe: cacheoff_exe(),
        tls: None,
    };
    let t = Instant::now();
    let mut r = spec.start(Mode::Forward, &settings).unwrap();
    r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{name}: ready in {:?}", t.elapsed());
    r
}

fn spe(name: &str) {
    let t0 = Instant::now();
    let dir = run_dir();
    let parent = Parent::start();
    let trap = trap();
    let mut r = start(name, parent.addr, dir.path());
    let port = trap.addr().port();
    let a = format!("http://{}/a", trap.addr());
    let b = format!("http://s9.bench.tst:{port}/b?q=1&r=%2F");
    // The same path on another host: another object.
    let c = format!("http://127.0.0.10:{port}/a");
    let send = |method: &str, url: &str, headers: &[String], body: &str| -> Response {
        let host = url["http://".len()..].split('/').next().unwrap();
        let reply = request(r.listen(), method, url, host, headers, body);
        assert!(
            matches!(reply.status, 200 | 304),
            "{name}: {method} {url}: status {}\n{}",
            reply.status,
            r.tails()
        );
        reply
    };
    let count = |rep: &Response| rep.header("X-Count");
    let body = |rep: &Response| String::from_utf8_lossy(&rep.body).into_owned();

    // Misses go to the parent; the second request of a URL is a hit.
    for url in [&a, &b] {
        let first = send("GET", url, &[], "");
        let second = send("GET", url, &[], "");
        assert_eq!(body(&first), format!("parent: {url}\n"), "{name}: {url}");
        assert_eq!(body(&second), body(&first), "{name}: {url}");
        assert_eq!(count(&first), count(&second), "{name}: {url}: no hit");
        assert_eq!(
            parent.requests(url),
            1,
            "{name}: {url}: the parent's requests"
        );
    }
    let other = send("GET", &c, &[], "");
    assert_eq!(body(&other), format!("parent: {c}\n"), "{name}: {c}");
    assert_eq!(parent.requests(&c), 1, "{name}: {c}: the parent's requests");
    let logged = log_counts(&r, 5, 2);
    assert_eq!(
        (logged.requests, logged.hits),
        (5, 2),
        "{name}: the log's counts\n{}",
        std::fs::read_to_string(r.access_log()).unwrap_or_default()
    );

    // A reload goes to the parent too, and replaces the stored copy.
    let reload = ["Cache-Control: no-cache".into(), "Pragma: no-cache".into()];
    let before = send("GET", &a, &[], "");
    let reloaded = send("GET", &a, &reload, "");
    assert_ne!(
        count(&reloaded),
        count(&before),
        "{name}: a reload was a hit"
    );
    assert_eq!(parent.requests(&a), 2, "{name}: {a} after the reload");

    // If-Modified-Since on a missing object: asked of the parent; a
    // second before Last-Modified gets the whole object, a second after
    // it a 304.
    let ims = |url: &str, secs: i64| {
        let t = if secs < 0 {
            parent.last_modified - Duration::from_secs(secs.unsigned_abs())
        } else {
            parent.last_modified + Duration::from_secs(secs as u64)
        };
        let h = [format!("If-Modified-Since: {}", httpdate::fmt_http_date(t))];
        send("GET", url, &h, "")
    };
    let d = format!("http://{}/d", trap.addr());
    assert_eq!(ims(&d, 1).status, 304, "{name}: IMS after Last-Modified");
    assert!(
        parent.requests(&d) >= 1,
        "{name}: {d}: not asked of the parent"
    );
    let e = format!("http://s9.bench.tst:{port}/e?x");
    let whole = ims(&e, -1);
    assert_eq!(whole.status, 200, "{name}: IMS before Last-Modified");
    assert_eq!(body(&whole), format!("parent: {e}\n"), "{name}: {e}");

    // A POST goes to the parent and empties the cache of its URL.
    let post = send("POST", &a, &[], "x=1");
    assert_eq!(body(&post), format!("parent: {a}\n"), "{name}: POST {a}");
    let after = send("GET", &a, &[], "");
    assert_ne!(
        count(&after),
        count(&reloaded),
        "{name}: the copy from before a POST was served"
    );
    assert_ne!(
        count(&after),
        count(&post),
        "{name}: a POST's reply was served to a GET"
    );

    // Nothing went anywhere but to the parent, which was asked only for
    // the URLs we asked for, with the authority as Host.
    assert_eq!(trap.connections(), 0, "{name}: direct connections");
    let seen = parent.seen();
    for s in &seen {
        assert!(
            [&a, &b, &c, &d, &e].contains(&&s.url),
            "{name}: the parent was asked for {s:?}"
        );
        let authority = s.url["http://".len()..].split('/').next().unwrap();
        assert_eq!(s.host, authority, "{name}: the Host of {s:?}");
    }
    let form = |s: &Seen| {
        if s.target.starts_with("http://") {
            "absolute-form"
        } else {
            "origin-form"
        }
    };
    eprintln!(
        "{name}: the parent got {} requests, {}; methods {:?}",
        seen.len(),
        form(&seen[0]),
        seen.iter().map(|s| s.method.as_str()).collect::<Vec<_>>()
    );
    r.stop().unwrap();
    assert!(r.pids().is_empty(), "{name}: alive after stop");
    eprintln!("{name}: took {:?}", t0.elapsed());
}

macro_rules! spe_tests {
    ($($test:ident: $name:literal;)*) => {$(
        #[test]
        #[ignore = "needs the products (ops/install-products.sh); .ci/run runs it"]
        fn $test() {
            spe($name);
        }
    )*};
}

spe_tests! {
    squid_forward_with_a_parent: "squid";
    varnish_forward_with_a_parent: "varnish";
    nginx_forward_with_a_parent: "nginx";
    trafficserver_forward_with_a_parent: "trafficserver";
    reference_forward_with_a_parent: "reference";
}
