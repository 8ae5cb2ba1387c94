//! What the Multiplier's scenario tests share: a test origin and the real
//! Collector in front of it, proxies under test that misbehave exactly
//! (all three on `cacheoff_testkit`'s scripted origin), a port forward,
//! a private service, the Multiplier's configuration.

#![allow(dead_code, unused_imports)]

use cacheoff_multiplier::{Config, ProxyUnderTest};
use cacheoff_proxy::{Proxy, ProxyConfig, Role};
pub use cacheoff_testkit::{closed_within, rss, Client, Response};
use cacheoff_testkit::{endless, hold, raw, raw_and_close, Origin, Reply, Seen};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const LM: &str = "Sun, 22 Nov 2026 00:00:00 GMT";

/// The longest any wait in these tests may take before it fails.
pub const HANG: Duration = Duration::from_secs(60);

/// How long a misbehaving proxy keeps at it when nobody hangs up.
const MISBEHAVE: Duration = Duration::from_secs(600);

/// Waits (at most [`HANG`]) until `f` holds.
pub fn until(what: &str, f: impl FnMut() -> bool) {
    cacheoff_testkit::until(what, HANG, f)
}

/// The body the origin serves for `path`.
pub fn body_of(path: &str) -> Vec<u8> {
    format!("{path} body ").repeat(50 + path.len()).into_bytes()
}

/// The origin, the real Collector, and the proxies under test started so
/// far (they live as long as the stage).
pub struct Stage {
    origin: Origin,
    collector: Proxy,
    fakes: Mutex<Vec<Origin>>,
}

impl Stage {
    /// An origin with a cachable object per path (Last-Modified, max-age),
    /// POSTs counted in `posts`, and the Collector.
    pub fn new(posts: Arc<AtomicU64>) -> Stage {
        let origin = cacheoff_testkit::origin(move |seen| {
            let (cc, body) = if seen.method == "POST" {
                let n = posts.fetch_add(1, Ordering::SeqCst) + 1;
                ("no-store", format!("posted {n}"))
            } else {
                let body = String::from_utf8(body_of(&seen.path)).unwrap();
                ("public, max-age=3600", body)
            };
            let headers = [
                ("Last-Modified", LM),
                ("Cache-Control", cc),
                ("Content-Type", "text/plain"),
            ];
            Reply::ok(&headers, &body)
        });
        // Requests with large bodies must not grow this process.
        origin.forget_bodies();
        let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        c.role = Role::Collector;
        c.workers = 1;
        let collector = Proxy::start(c).unwrap();
        Stage {
            origin,
            collector,
            fakes: Mutex::default(),
        }
    }

    pub fn origin(&self) -> SocketAddr {
        self.origin.addr()
    }

    pub fn collector(&self) -> SocketAddr {
        self.collector.addr()
    }

    /// A proxy under test that relays each request to the Collector on a
    /// connection of its own and misbehaves as told.
    pub fn fake(&self, how: Fake) -> SocketAddr {
        let parent = self.collector();
        let fake = cacheoff_testkit::origin(move |seen| misbehave(parent, how, seen));
        fake.forget_bodies();
        let addr = fake.addr();
        self.fakes.lock().unwrap().push(fake);
        addr
    }

    /// Requests the proxy under test at `fake` has been sent so far.
    pub fn sent_to(&self, fake: SocketAddr) -> usize {
        let fakes = self.fakes.lock().unwrap();
        let f = fakes.iter().find(|f| f.addr() == fake).expect("a fake");
        f.count()
    }
}

#[derive(Clone, Copy)]
pub enum Fake {
    Honest,
    /// Flips the body's first byte.
    Corrupt,
    /// Sends half the body, then closes.
    Truncate,
    /// Reads requests, never answers.
    Stall,
    /// Dates its Last-Modified a day earlier.
    Stale,
    /// Answers 404 with the Collector's body.
    NotFound,
    /// A 200 whose chunked body never ends (a chunk every 20 ms).
    EndlessBody,
    /// `100 Continue` every 20 ms, never a final reply.
    EndlessContinue,
}

fn misbehave(parent: SocketAddr, how: Fake, seen: &Seen) -> Reply {
    let gap = Duration::from_millis(20);
    match how {
        Fake::Stall => return hold(MISBEHAVE),
        Fake::EndlessBody => {
            let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
            return endless(head, b"1\r\nx\r\n", gap, MISBEHAVE);
        }
        Fake::EndlessContinue => {
            return endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n", gap, MISBEHAVE)
        }
        _ => {}
    }
    let Some(r) = fetch(parent, &resend(seen)) else {
        return Reply::Close;
    };
    let head_len = r.raw_head.len();
    let mut wire = [r.raw_head, r.body].concat();
    match how {
        Fake::Corrupt if wire.len() > head_len => wire[head_len] ^= 0x20,
        Fake::Stale => {
            let text = String::from_utf8(wire).unwrap();
            wire = text
                .replace(LM, "Sat, 21 Nov 2026 00:00:00 GMT")
                .into_bytes();
        }
        Fake::NotFound => wire[9..12].copy_from_slice(b"404"),
        Fake::Truncate => {
            let cut = head_len + (wire.len() - head_len) / 2;
            wire.truncate(cut);
            return raw_and_close(wire);
        }
        _ => {}
    }
    raw(wire)
}

/// The request as the origin got it, to send on: its head's lines in
/// order and its body (with its length, had it come chunked).
fn resend(seen: &Seen) -> Vec<u8> {
    let mut head = format!("{} {} HTTP/1.1\r\n", seen.method, seen.target);
    let chunked = seen.header("transfer-encoding").is_some();
    for (n, v) in &seen.headers {
        if !n.eq_ignore_ascii_case("transfer-encoding") {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
    }
    if chunked {
        head.push_str(&format!("Content-Length: {}\r\n", seen.body.len()));
    }
    head.push_str("\r\n");
    [head.as_bytes(), &seen.body].concat()
}

/// One request to `to` on a new connection; its reply, if it came whole
/// and by its length.
fn fetch(to: SocketAddr, raw: &[u8]) -> Option<Response> {
    let mut c = Client::try_connect(to).ok()?;
    c.s.write_all(raw).ok()?;
    let r = c.try_reply(false)?;
    matches!(r.head.framing, cacheoff_http::Framing::Length(_)).then_some(r)
}

pub fn client(m: SocketAddr) -> Client {
    Client::connect(m)
}

pub fn get(c: &mut Client, origin: SocketAddr, path: &str) -> Response {
    c.send(format!("GET http://{origin}{path} HTTP/1.1\r\nHost: {origin}\r\n\r\n").as_bytes())
}

pub fn config(
    collector: SocketAddr,
    proxies: &[(&str, SocketAddr)],
    out: &std::path::Path,
) -> Config {
    let proxies = proxies
        .iter()
        .map(|(n, a)| ProxyUnderTest {
            name: n.to_string(),
            addr: *a,
        })
        .collect();
    let mut c = Config::new(
        "127.0.0.1:0".parse().unwrap(),
        collector,
        proxies,
        out.into(),
    );
    c.workers = 1;
    c.interval = Duration::from_millis(200);
    c.facts_wait = Duration::from_secs(10);
    c.first_byte_timeout = Duration::from_secs(10);
    c.idle_timeout = Duration::from_secs(10);
    c.stop_grace = Duration::from_secs(10);
    c
}

/// A TCP port forward to `to` (another name for it, as a NAT or a proxy
/// under test pointed back at the Multiplier would be); the connections
/// it carried. It forwards until the test process ends.
pub fn forwarder(to: SocketAddr) -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let carried = Arc::new(AtomicU64::new(0));
    let n = carried.clone();
    std::thread::spawn(move || {
        for a in l.incoming().flatten() {
            n.fetch_add(1, Ordering::SeqCst);
            let Ok(b) = TcpStream::connect(to) else {
                continue;
            };
            pipe(a.try_clone().unwrap(), b.try_clone().unwrap());
            pipe(b, a);
        }
    });
    (addr, carried)
}

/// Copies `from` to `to` on a thread of its own until either end closes.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

/// A private service on loopback (what must not be readable through the
/// Multiplier): answers anything with its secret; its connections are
/// counted ([`Origin::connections`]).
pub fn private_service() -> Origin {
    cacheoff_testkit::origin(|_| Reply::ok(&[], "secret"))
}
