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

mod support;

use cacheoff_products::{Mode, Running, Settings};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use support::{cacheoff_exe, free_port, log_counts, product_with, request, run_dir, Reply, READY};

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
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    last_modified: SystemTime,
}

impl Parent {
    fn start() -> Parent {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let last_modified = SystemTime::UNIX_EPOCH + Duration::from_secs(secs - 3600);
        let (s, n) = (seen.clone(), Arc::new(AtomicU64::new(0)));
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let (s, n) = (s.clone(), n.clone());
                std::thread::spawn(move || serve(c, last_modified, &s, &n));
            }
        });
        Parent {
            addr,
            seen,
            last_modified,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Requests for `url` (any method).
    fn requests(&self, url: &str) -> usize {
        self.seen().iter().filter(|s| s.url == url).count()
    }
}

fn serve(c: TcpStream, last_modified: SystemTime, seen: &Mutex<Vec<Seen>>, count: &AtomicU64) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(30)));
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut w = c;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let method = words.next().unwrap_or("").to_string();
        let target = words.next().unwrap_or("").to_string();
        let (mut host, mut body_len, mut ims) = (String::new(), 0usize, None);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
            if let Some((n, v)) = h.split_once(':') {
                if n.eq_ignore_ascii_case("host") {
                    host = v.trim().to_string();
                } else if n.eq_ignore_ascii_case("content-length") {
                    body_len = v.trim().parse().unwrap_or(0);
                } else if n.eq_ignore_ascii_case("if-modified-since") {
                    ims = httpdate::parse_http_date(v.trim()).ok();
                }
            }
        }
        let mut body = vec![0; body_len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let url = if target.starts_with("http://") {
            target.clone()
        } else {
            format!("http://{host}{target}")
        };
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        let not_modified = ims.is_some_and(|ims| last_modified <= ims);
        let body = format!("parent: {url}\n");
        seen.lock().unwrap().push(Seen {
            method: method.clone(),
            target,
            host,
            url,
        });
        let reply = format!(
            "HTTP/1.1 {}\r\nDate: {}\r\nLast-Modified: {}\r\nCache-Control: public, max-age=3600\r\nX-Count: {n}\r\nX-Cacheoff-Echo: {n}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
            if not_modified { "304 Not Modified" } else { "200 OK" },
            httpdate::fmt_http_date(SystemTime::now()),
            httpdate::fmt_http_date(last_modified),
            body.len(),
            if method == "HEAD" || not_modified { "" } else { body.as_str() },
        );
        if w.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A listener on an address the products are asked about but must never
/// connect to: it counts the connections it gets.
struct Trap {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
}

impl Trap {
    fn start() -> Trap {
        // 127.0.0.9 is this machine's (all of 127/8 is loopback).
        let l = TcpListener::bind("127.0.0.9:0").unwrap();
        let addr = l.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let n = connections.clone();
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                n.fetch_add(1, Ordering::SeqCst);
                drop(c);
            }
        });
        Trap { addr, connections }
    }
}

/// The product in forward mode with `parent`, ready.
fn start(name: &str, parent: SocketAddr, dir: &std::path::Path) -> Option<Running> {
    let spec = product_with(name, Mode::Forward, true)?;
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
    Some(r)
}

fn spe(name: &str) {
    let t0 = Instant::now();
    let dir = run_dir();
    let parent = Parent::start();
    let trap = Trap::start();
    let Some(mut r) = start(name, parent.addr, dir.path()) else {
        return;
    };
    let port = trap.addr.port();
    let a = format!("http://{}/a", trap.addr);
    let b = format!("http://s9.bench.tst:{port}/b?q=1&r=%2F");
    // The same path on another host: another object.
    let c = format!("http://127.0.0.10:{port}/a");
    let send = |method: &str, url: &str, headers: &[String], body: &str| -> Reply {
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
    let count = |rep: &Reply| rep.header("X-Count").map(str::to_string);
    let body = |rep: &Reply| String::from_utf8_lossy(&rep.body).into_owned();

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
    let d = format!("http://{}/d", trap.addr);
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
    assert_eq!(
        trap.connections.load(Ordering::SeqCst),
        0,
        "{name}: direct connections"
    );
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
