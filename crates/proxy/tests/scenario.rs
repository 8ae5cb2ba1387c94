//! Scenario tests: a client -> the reference proxy -> a scripted origin,
//! in-process on port 0. Freshness is judged by a manual clock shared by
//! proxy and origin, so nothing sleeps to wait for a lifetime to pass.

use cacheoff_base::{Clock, ManualClock};
use cacheoff_http::Framing;
use cacheoff_proxy::{Proxy, ProxyConfig, ProxyStats, Role, Upstream};
use cacheoff_testkit::{
    chunked, exchange, paced, raw, raw_and_close, within, Client, Reply, Response, Seen,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T0: u64 = 1_800_000_000;

fn date(t: u64) -> String {
    cacheoff_http::date::format(t as i64)
}

/// `/timed`'s wait before its first byte, and before the rest.
const TIMED_FIRST_BYTE: Duration = Duration::from_millis(400);
const TIMED_REST: Duration = Duration::from_millis(300);

/// An origin whose replies the path chooses:
/// `/max-age/N`, `/expires/N`, `/lm` (Last-Modified only), `/no-store`,
/// `/private`, `/slow` (max-age 60, answered once the test calls
/// [`Origin::release_slow`]), `/chunked`, `/timed` (uncachable; first
/// byte after 400 ms, the rest 300 ms later),
/// `/garbage`. Every object's Last-Modified is `T0 - 1000` until the test
/// moves it; `If-Modified-Since` gets a 304 when not older than that.
struct Origin {
    scripted: cacheoff_testkit::Origin,
    state: Arc<State>,
}

/// What the tests change in the origin.
#[derive(Default)]
struct State {
    /// Last-Modified per path, where the test changed it.
    modified: Mutex<HashMap<String, u64>>,
    /// Set when `/slow` may answer.
    slow_released: AtomicBool,
}

impl Origin {
    fn start(clock: Arc<ManualClock>) -> Origin {
        let state = Arc::new(State::default());
        let s = state.clone();
        let scripted = cacheoff_testkit::origin(move |seen| answer(seen, &s, clock.unix_now()));
        Origin { scripted, state }
    }

    fn addr(&self) -> SocketAddr {
        self.scripted.addr()
    }

    fn fetches(&self, path: &str) -> u32 {
        self.scripted.seen(path).len() as u32
    }

    fn modify(&self, path: &str, lm: u64) {
        self.state.modified.lock().unwrap().insert(path.into(), lm);
    }

    /// The If-Modified-Since of the last request for `path`.
    fn last_ims(&self, path: &str) -> Option<u64> {
        let last = self.scripted.seen(path).pop()?;
        ims(&last)
    }

    /// Lets `/slow` answer.
    fn release_slow(&self) {
        self.state.slow_released.store(true, Ordering::SeqCst);
    }

    fn connections(&self) -> usize {
        self.scripted.connections()
    }
}

fn ims(seen: &Seen) -> Option<u64> {
    cacheoff_http::date::parse(seen.header("if-modified-since")?.as_bytes())
}

fn answer(seen: &Seen, state: &State, now: u64) -> Reply {
    let path = seen.path.as_str();
    let lm = state
        .modified
        .lock()
        .unwrap()
        .get(path)
        .copied()
        .unwrap_or(T0 - 1000);
    let body = format!("{path} last modified {lm} ").repeat(40);
    let mut cc = "Cache-Control: public\r\n".to_string();
    let mut extra = String::new();
    if let Some(n) = path.strip_prefix("/max-age/") {
        cc = format!("Cache-Control: public, max-age={n}\r\n");
    } else if let Some(n) = path.strip_prefix("/expires/") {
        extra = format!("Expires: {}\r\n", date(now + n.parse::<u64>().unwrap()));
    } else if path == "/lm" {
        cc.clear();
    } else if path == "/no-store" {
        cc = "Cache-Control: no-store\r\n".into();
    } else if path == "/private" || path == "/timed" {
        cc = "Cache-Control: private, no-cache\r\nPragma: no-cache\r\n".into();
    } else if path == "/slow" {
        // Held (for a minute at most) while the test gathers requests.
        within(Duration::from_secs(60), || {
            state.slow_released.load(Ordering::SeqCst)
        });
        cc = "Cache-Control: public, max-age=60\r\n".into();
    } else if path == "/garbage" {
        return raw_and_close("NOT HTTP AT ALL\r\n\r\n");
    }
    let head = format!(
        "Date: {}\r\nLast-Modified: {}\r\n{cc}{extra}Content-Type: text/plain\r\n",
        date(now),
        date(lm)
    );
    if ims(seen).is_some_and(|ims| ims >= lm) {
        return raw(format!("HTTP/1.1 304 Not Modified\r\n{head}\r\n"));
    }
    if seen.method == "HEAD" {
        return raw(format!(
            "HTTP/1.1 200 OK\r\n{head}Content-Length: {}\r\n\r\n",
            body.len()
        ));
    }
    if path == "/chunked" {
        let out = format!("HTTP/1.1 200 OK\r\n{head}Transfer-Encoding: chunked\r\n\r\n");
        return raw([out.as_bytes(), &chunked(body.as_bytes(), 333)].concat());
    }
    let out = format!(
        "HTTP/1.1 200 OK\r\n{head}Content-Length: {}\r\n\r\n",
        body.len()
    );
    if path == "/timed" {
        let (a, b) = body.as_bytes().split_at(body.len() / 2);
        return paced(vec![
            (TIMED_FIRST_BYTE, [out.as_bytes(), a].concat()),
            (TIMED_REST, b.to_vec()),
        ]);
    }
    raw(out + &body)
}

struct Setup {
    clock: Arc<ManualClock>,
    origin: Origin,
    proxy: Proxy,
}

impl Setup {
    fn new(tune: impl FnOnce(&mut ProxyConfig)) -> Setup {
        let clock = Arc::new(ManualClock::new(T0));
        let origin = Origin::start(clock.clone());
        let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.workers = 2;
        cfg.memory = 16 << 20;
        cfg.clock = clock.clone();
        tune(&mut cfg);
        let proxy = Proxy::start(cfg).unwrap();
        Setup {
            clock,
            origin,
            proxy,
        }
    }

    fn get_with(&self, path: &str, extra: &str) -> Response {
        let req = format!(
            "GET http://{}{path} HTTP/1.1\r\nHost: {}\r\n{extra}Connection: close\r\n\r\n",
            self.origin.addr(),
            self.origin.addr()
        );
        exchange(self.proxy.addr(), req.as_bytes())
    }

    fn get(&self, path: &str) -> Response {
        self.get_with(path, "")
    }
}

#[test]
fn fresh_replies_are_hits_until_they_expire_then_revalidate() {
    let t = Setup::new(|_| {});
    let p = "/max-age/60";
    let first = t.get(p);
    assert_eq!((first.status, first.x_cache().as_str()), (200, "MISS"));
    let hit = t.get(p);
    assert_eq!(hit.x_cache(), "HIT");
    assert_eq!(hit.body, first.body);
    assert_eq!(t.origin.fetches(p), 1);
    t.clock.advance(30);
    let aged = t.get(p);
    assert_eq!(aged.x_cache(), "HIT");
    assert_eq!(aged.header("Age").as_deref(), Some("30"));
    // Past its lifetime: the proxy asks the origin with the stored
    // Last-Modified, gets a 304 and serves the stored body.
    t.clock.advance(31);
    let reval = t.get(p);
    assert_eq!(
        (reval.status, reval.x_cache().as_str()),
        (200, "REVALIDATED")
    );
    assert_eq!(reval.body, first.body);
    assert_eq!(t.origin.fetches(p), 2);
    assert_eq!(t.origin.last_ims(p), Some(T0 - 1000));
    // Fresh again for another 60 s.
    assert_eq!(t.get(p).x_cache(), "HIT");
    assert_eq!(ProxyStats::get(&t.proxy.stats().revalidated), 1);
}

#[test]
fn cache_status_says_how_each_reply_was_served() {
    let t = Setup::new(|_| {});
    let p = "/max-age/60";
    let miss = t.get(p);
    assert_eq!(
        miss.cache_status(),
        ["cacheoff; fwd=uri-miss; fwd-status=200; ttl=60; stored"]
    );
    t.clock.advance(30);
    let hit = t.get(p);
    assert_eq!(hit.cache_status(), ["cacheoff; hit; ttl=30"]);
    // Stale, but the request accepts it: a hit that says by how much.
    t.clock.advance(35);
    let stale = t.get_with(p, "Cache-Control: max-stale=100\r\n");
    assert_eq!(
        (stale.x_cache().as_str(), stale.own_status().as_str()),
        ("HIT", "cacheoff; hit; ttl=-5")
    );
    // Revalidated: the origin answered 304, the refreshed copy was kept.
    let reval = t.get(p);
    assert_eq!(reval.x_cache(), "REVALIDATED");
    assert_eq!(
        reval.own_status(),
        "cacheoff; fwd=stale; fwd-status=304; ttl=60; stored"
    );
    // A reload, and a reply never stored (no ttl, not stored).
    let reload = t.get_with(p, "Cache-Control: no-cache\r\n");
    assert_eq!(
        reload.own_status(),
        "cacheoff; fwd=request; fwd-status=200; ttl=60; stored"
    );
    assert_eq!(
        t.get("/no-store").own_status(),
        "cacheoff; fwd=uri-miss; fwd-status=200"
    );
    // A conditional miss answered 304 from what it fetched says so too.
    let ims = format!("If-Modified-Since: {}\r\n", date(T0));
    let cond = t.get_with("/max-age/61", &ims);
    assert_eq!(cond.status, 304);
    assert_eq!(
        cond.own_status(),
        "cacheoff; fwd=uri-miss; fwd-status=200; ttl=61; stored"
    );
}

#[test]
fn the_claim_hit_fault_says_hit_on_misses_only() {
    let t = Setup::new(|c| {
        c.faults = cacheoff_proxy::Faults::new(vec![(cacheoff_proxy::Fault::ClaimHit, 1.0)])
    });
    let p = "/max-age/60";
    let miss = t.get(p);
    assert_eq!(
        (miss.x_cache().as_str(), miss.own_status().as_str()),
        ("HIT", "cacheoff; hit")
    );
    assert_eq!(t.origin.fetches(p), 1);
    // A real hit keeps its own member.
    assert_eq!(t.get(p).own_status(), "cacheoff; hit; ttl=60");
    assert_eq!(t.get("/no-store").own_status(), "cacheoff; hit");
}

#[test]
fn a_changed_object_replaces_the_stale_copy() {
    let t = Setup::new(|_| {});
    let p = "/expires/10";
    let old = t.get(p);
    t.clock.advance(11);
    t.origin.modify(p, T0 + 5);
    let new = t.get(p);
    assert_eq!((new.status, new.x_cache().as_str()), (200, "MISS"));
    assert_ne!(new.body, old.body);
    let again = t.get(p);
    assert_eq!(again.x_cache(), "HIT");
    assert_eq!(again.body, new.body);
}

#[test]
fn heuristic_freshness_comes_from_last_modified() {
    // Modified 1000 s before the reply: fresh for a tenth of that.
    let t = Setup::new(|_| {});
    t.get("/lm");
    t.clock.advance(99);
    assert_eq!(t.get("/lm").x_cache(), "HIT");
    t.clock.advance(2);
    assert_eq!(t.get("/lm").x_cache(), "REVALIDATED");
}

#[test]
fn no_store_and_private_replies_are_never_served_from_the_store() {
    let t = Setup::new(|_| {});
    for p in ["/no-store", "/private"] {
        for _ in 0..3 {
            assert_eq!(t.get(p).x_cache(), "MISS");
        }
        assert_eq!(t.origin.fetches(p), 3, "{p}");
    }
    // A request that says no-store is not stored either.
    let p = "/max-age/100";
    t.get_with(p, "Cache-Control: no-store\r\n");
    assert_eq!(t.get(p).x_cache(), "MISS");
}

#[test]
fn reloads_go_to_the_origin_and_refresh_the_store() {
    let t = Setup::new(|_| {});
    let p = "/max-age/600";
    t.get(p);
    for reload in [
        "Cache-Control: no-cache\r\n",
        "Pragma: no-cache\r\n",
        "Cache-Control: max-age=0\r\n",
    ] {
        let before = t.origin.fetches(p);
        let r = t.get_with(p, reload);
        assert_eq!(r.x_cache(), "MISS", "{reload}");
        assert_eq!(t.origin.fetches(p), before + 1, "{reload}");
        // The reload fetched the whole object, not a 304.
        assert_eq!(t.origin.last_ims(p), None);
    }
    t.origin.modify(p, T0 + 1);
    let fresh = t.get_with(p, "Pragma: no-cache\r\n");
    assert_eq!(
        t.get(p).body,
        fresh.body,
        "the reload replaced the stored copy"
    );
}

#[test]
fn if_modified_since_is_judged_by_last_modified_never_by_expires() {
    let t = Setup::new(|_| {});
    // Fresh until T0 + 3600 (Expires), last modified at T0 - 1000.
    let p = "/expires/3600";
    t.get(p);
    let ims = |at: u64| format!("If-Modified-Since: {}\r\n", date(at));
    // Modified after the client's date: the whole object, though the
    // stored copy is fresh and the date is before Expires.
    let r = t.get_with(p, &ims(T0 - 1001));
    assert_eq!((r.status, r.x_cache().as_str()), (200, "HIT"));
    assert!(!r.body.is_empty());
    let r = t.get_with(p, &ims(T0 - 999));
    assert_eq!((r.status, r.x_cache().as_str()), (304, "HIT"));
    assert!(r.body.is_empty());
    assert!(r.header("Content-Length").is_none());
    assert_eq!(r.header("Last-Modified"), Some(date(T0 - 1000)));
    assert_eq!(t.origin.fetches(p), 1);
    // A conditional miss fetches the whole object for the store and still
    // answers the client's condition.
    let q = "/expires/3601";
    let r = t.get_with(q, &ims(T0));
    assert_eq!((r.status, r.x_cache().as_str()), (304, "MISS"));
    assert_eq!(t.origin.last_ims(q), None);
    assert_eq!(t.get(q).x_cache(), "HIT");
}

#[test]
fn concurrent_misses_collapse_into_one_origin_fetch() {
    let t = Setup::new(|_| {});
    let (addr, origin) = (t.proxy.addr(), t.origin.addr());
    let replies: Vec<Response> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..10)
            .map(|_| {
                s.spawn(move || {
                    let req = format!("GET http://{origin}/slow HTTP/1.1\r\nHost: x\r\n\r\n");
                    exchange(addr, req.as_bytes())
                })
            })
            .collect();
        // The origin answers once all ten reached the proxy, however slowly
        // this machine started them.
        within(Duration::from_secs(60), || {
            ProxyStats::get(&t.proxy.stats().requests) >= 10
        });
        t.origin.release_slow();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(t.origin.fetches("/slow"), 1);
    let misses = replies.iter().filter(|r| r.x_cache() == "MISS").count();
    assert_eq!(misses, 1);
    // The one that fetched says so; the others were collapsed onto it.
    let says = |m: &str| replies.iter().filter(|r| r.own_status() == m).count();
    assert_eq!(
        says("cacheoff; fwd=uri-miss; fwd-status=200; ttl=60; stored"),
        1
    );
    assert_eq!(
        says("cacheoff; fwd=uri-miss; fwd-status=200; ttl=60; collapsed"),
        9
    );
    assert!(replies
        .iter()
        .all(|r| r.status == 200 && r.body == replies[0].body));
    assert_eq!(ProxyStats::get(&t.proxy.stats().collapsed), 9);
}

#[test]
fn unsafe_methods_invalidate_and_head_uses_the_stored_get() {
    let t = Setup::new(|_| {});
    let p = "/max-age/600";
    let head_miss = exchange(
        t.proxy.addr(),
        format!(
            "HEAD http://{}{p} HTTP/1.1\r\nHost: x\r\n\r\n",
            t.origin.addr()
        )
        .as_bytes(),
    );
    let body = t.get(p).body;
    assert_eq!(head_miss.x_cache(), "MISS");
    assert_eq!(
        head_miss.header("Content-Length"),
        Some(body.len().to_string())
    );
    let head = exchange(
        t.proxy.addr(),
        format!(
            "HEAD http://{}{p} HTTP/1.1\r\nHost: x\r\n\r\n",
            t.origin.addr()
        )
        .as_bytes(),
    );
    assert_eq!((head.status, head.x_cache().as_str()), (200, "HIT"));
    assert_eq!(head.header("Content-Length"), Some(body.len().to_string()));
    assert!(head.body.is_empty());
    let post = exchange(
        t.proxy.addr(),
        format!(
            "POST http://{}{p} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            t.origin.addr()
        )
        .as_bytes(),
    );
    assert_eq!((post.status, post.x_cache().as_str()), (200, "MISS"));
    assert_eq!(t.get(p).x_cache(), "MISS");
}

#[test]
fn chunked_origin_replies_are_stored_and_served_with_a_length() {
    let t = Setup::new(|_| {});
    // Asked as HTTP/1.0, the miss is close-delimited.
    let req = format!("GET http://{}/chunked HTTP/1.0\r\n\r\n", t.origin.addr());
    let miss = exchange(t.proxy.addr(), req.as_bytes());
    assert_eq!(miss.head.framing, Framing::UntilClose);
    let miss_body = miss.body;
    let hit = t.get("/chunked");
    assert_eq!(hit.x_cache(), "HIT");
    assert_eq!(hit.body, miss_body);
    assert_eq!(
        hit.header("Content-Length"),
        Some(miss_body.len().to_string())
    );
}

/// Sends a GET that closes the connection; returns the reply, its body
/// decoded from whatever framing the proxy chose, and nothing after it.
fn get_raw(t: &Setup, path: &str) -> Response {
    let req = format!(
        "GET http://{}{path} HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n",
        t.origin.addr()
    );
    let mut c = Client::connect(t.proxy.addr());
    let r = c.send(req.as_bytes());
    assert_eq!(c.rest(), b"", "{path}: bytes after the reply");
    r
}

#[test]
fn reply_framing_applies_to_misses_and_hits() {
    use cacheoff_proxy::ReplyFraming;
    for (setting, framing) in [
        (ReplyFraming::Chunked, Framing::Chunked),
        (ReplyFraming::Close, Framing::UntilClose),
    ] {
        let t = Setup::new(|c| c.reply_framing = setting);
        // One origin reply with a length, one chunked.
        for p in ["/max-age/60", "/chunked"] {
            let (miss, hit) = (get_raw(&t, p), get_raw(&t, p));
            for (r, want) in [(&miss, "MISS"), (&hit, "HIT")] {
                assert_eq!(r.head.framing, framing, "{setting:?} {p} {want}");
                assert_eq!(
                    r.header("X-Cache").as_deref(),
                    Some(want),
                    "{setting:?} {p}"
                );
            }
            assert!(miss.body.starts_with(p.as_bytes()), "{setting:?} {p}");
            assert_eq!(hit.body, miss.body, "{setting:?} {p}");
            assert_eq!(t.origin.fetches(p), 1);
        }
    }
}

#[test]
fn a_proxy_without_a_store_forwards_every_request() {
    let t = Setup::new(|c| c.memory = 0);
    let p = "/max-age/60";
    for _ in 0..3 {
        assert_eq!(t.get(p).x_cache(), "MISS");
    }
    assert_eq!(t.origin.fetches(p), 3);
    let s = t.proxy.stats();
    assert_eq!(
        (ProxyStats::get(&s.misses), ProxyStats::get(&s.hits)),
        (3, 0)
    );
}

#[test]
fn reverse_proxy_sends_every_request_to_its_origin() {
    let t = Setup::new(|_| {});
    let origin = t.origin.addr().to_string();
    let clock = t.clock.clone();
    let rev = Proxy::start({
        let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        c.upstream = Upstream::Reverse(origin);
        c.clock = clock;
        c
    })
    .unwrap();
    let req = b"GET /max-age/60 HTTP/1.1\r\nHost: www.example.com\r\n\r\n";
    assert_eq!(exchange(rev.addr(), req).x_cache(), "MISS");
    assert_eq!(exchange(rev.addr(), req).x_cache(), "HIT");
    assert_eq!(t.origin.fetches("/max-age/60"), 1);
}

#[test]
fn malformed_oversized_and_ambiguous_requests_are_refused() {
    let t = Setup::new(|c| c.max_header = 4096);
    let o = t.origin.addr();
    let huge = format!(
        "GET http://{o}/x HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(5000)
    );
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (huge.into_bytes(), 431),
        (format!("POST http://{o}/x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc").into_bytes(), 400),
        (format!("POST http://{o}/x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd").into_bytes(), 400),
        (b"GET /relative HTTP/1.0\r\n\r\n".to_vec(), 400),
        (b"GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n".to_vec(), 501),
        (format!("CONNECT {o} HTTP/1.1\r\nHost: {o}\r\n\r\n").into_bytes(), 501),
        (b"\x16\x03\x01 not http\r\n\r\n".to_vec(), 400),
    ];
    for (raw, want) in cases {
        let r = exchange(t.proxy.addr(), &raw);
        assert_eq!(
            r.status,
            want,
            "{}",
            String::from_utf8_lossy(&raw[..raw.len().min(60)])
        );
    }
    assert_eq!(t.origin.fetches("/x"), 0);
    assert_eq!(ProxyStats::get(&t.proxy.stats().client_errors), 7);
}

#[test]
fn origin_failures_become_gateway_errors() {
    let t = Setup::new(|c| c.connect_timeout = Duration::from_secs(2));
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let r = exchange(
        t.proxy.addr(),
        format!("GET http://{closed}/x HTTP/1.1\r\nHost: {closed}\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 503);
    assert_eq!(
        r.own_status(),
        "cacheoff; fwd=uri-miss; detail=origin-error"
    );
    let garbage = t.get("/garbage");
    assert_eq!(garbage.status, 502);
    assert_eq!(
        garbage.own_status(),
        "cacheoff; fwd=uri-miss; detail=origin-error"
    );
    assert_eq!(garbage.x_cache(), "MISS");
    assert!(ProxyStats::get(&t.proxy.stats().origin_errors) >= 2);
}

#[test]
fn the_access_log_reads_like_squids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    // One worker: each line is written before the next request is read.
    // (With two, a reply's line can follow the next reply's, as a client
    // may send its next request on a new connection, to the other worker,
    // between the last byte of a reply and the line that logs it.)
    let t = Setup::new(|c| {
        c.access_log = Some(path.clone());
        c.workers = 1;
    });
    t.get("/max-age/60");
    t.get("/max-age/60");
    t.get_with(
        "/max-age/60",
        &format!("If-Modified-Since: {}\r\n", date(T0)),
    );
    let origin = t.origin.addr();
    drop(t.proxy);
    let log = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Vec<&str>> = log
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{log}");
    let codes: Vec<&str> = lines.iter().map(|l| l[3]).collect();
    assert_eq!(
        codes,
        ["TCP_MISS/200", "TCP_MEM_HIT/200", "TCP_IMS_HIT/304"]
    );
    for l in &lines {
        assert_eq!(l.len(), 10, "{l:?}");
        assert_eq!(l[2], "127.0.0.1");
        assert_eq!(l[5], "GET");
        assert_eq!(l[6], format!("http://{origin}/max-age/60"));
        assert!(l[0].parse::<f64>().is_ok());
    }
    assert_eq!(lines[0][8], format!("HIER_DIRECT/{}", origin.ip()));
    assert_eq!(lines[1][8], "HIER_NONE/-");
    assert_eq!(lines[0][9], "text/plain");
}

#[test]
fn the_collector_stores_uncachable_replies_and_replays_their_timing() {
    let t = Setup::new(|c| c.role = Role::Collector);
    let timed = |t: &Setup| {
        let start = Instant::now();
        let r = t.get("/timed");
        (r, start.elapsed())
    };
    let (miss, miss_time) = timed(&t);
    let (hit, hit_time) = timed(&t);
    assert_eq!(
        (miss.x_cache().as_str(), hit.x_cache().as_str()),
        ("MISS", "HIT")
    );
    assert_eq!(hit.body, miss.body);
    assert_eq!(t.origin.fetches("/timed"), 1);
    // The miss took the origin's 700 ms; the hit takes as long (never
    // less), not the fraction of a millisecond a plain hit would, nor the
    // time twice. The origin's times are long enough that a busy machine
    // cannot blur them: bench/collector.sh measures the precision.
    let whole = TIMED_FIRST_BYTE + TIMED_REST;
    let ms = Duration::from_millis;
    assert!(miss_time >= whole, "{miss_time:?}");
    assert!(
        hit_time + ms(10) >= whole && hit_time < miss_time + TIMED_REST,
        "miss {miss_time:?} hit {hit_time:?}"
    );
    // An IMS request answered 304 waits only the first-byte time.
    let start = Instant::now();
    let r = t.get_with("/timed", &format!("If-Modified-Since: {}\r\n", date(T0)));
    let ims_time = start.elapsed();
    assert_eq!(r.status, 304);
    assert!(
        ims_time + ms(10) >= TIMED_FIRST_BYTE && ims_time < whole - ms(50),
        "{ims_time:?}"
    );
    // Every origin fetch used a new connection: three misses, three connections.
    t.get("/no-store");
    t.get("/no-store");
    t.get_with("/no-store", "Pragma: no-cache\r\n");
    assert_eq!(t.origin.connections(), 3);
}

/// SPE's chain: a proxy under test fetches its misses through the
/// Collector (`parent`), which stamps each reply with the copy's name; the
/// stamp shows whether the proxy under test fetched (its own name) or
/// served its store (an earlier name).
#[test]
fn a_child_fetches_through_its_parent_which_stamps_each_copy() {
    let t = Setup::new(|c| c.role = Role::Collector);
    let collector = t.proxy.addr();
    let child = Proxy::start({
        let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        c.parent = Some(collector.to_string());
        c.clock = t.clock.clone();
        c
    })
    .unwrap();
    let get = |copy: &str| {
        let req = format!(
            "GET http://{0}/max-age/60 HTTP/1.1\r\nHost: {0}\r\nX-Cacheoff-Copy: {copy}\r\nConnection: close\r\n\r\n",
            t.origin.addr()
        );
        exchange(child.addr(), req.as_bytes())
    };
    let first = get("00000000000000a1");
    assert_eq!((first.status, first.x_cache().as_str()), (200, "MISS"));
    // One member per cache, the Collector's (nearer the origin) first.
    assert_eq!(
        first.cache_status(),
        [
            "cacheoff-collector; fwd=uri-miss; fwd-status=200; ttl=60; stored",
            "cacheoff; fwd=uri-miss; fwd-status=200; ttl=60; stored"
        ]
    );
    assert_eq!(
        first.header("X-Cacheoff-Collected").as_deref(),
        Some("00000000000000a1")
    );
    let second = get("00000000000000a2");
    assert_eq!(second.x_cache(), "HIT");
    assert_eq!(second.own_status(), "cacheoff; hit; ttl=60");
    assert_eq!(second.body, first.body);
    // The child's stored copy names the request that filled it.
    assert_eq!(
        second.header("X-Cacheoff-Collected").as_deref(),
        Some("00000000000000a1")
    );
    assert_eq!(t.origin.fetches("/max-age/60"), 1);
    // The Collector's own answer to a second copy: its store, stamped anew.
    let direct = format!(
        "GET http://{0}/max-age/60 HTTP/1.1\r\nHost: {0}\r\nX-Cacheoff-Copy: 00000000000000a3\r\nConnection: close\r\n\r\n",
        t.origin.addr()
    );
    let from_collector = exchange(collector, direct.as_bytes());
    assert_eq!(
        from_collector.header("X-Cache").as_deref(),
        Some("HIT from cacheoff-collector")
    );
    assert_eq!(
        from_collector.header("X-Cacheoff-Collected").as_deref(),
        Some("00000000000000a3")
    );
    assert_eq!(t.origin.fetches("/max-age/60"), 1);
}

/// A surrogate in front of a forward proxy sends origin-form requests
/// naming the origin in Host (how Varnish and nginx use the Collector); a
/// request naming the proxy itself is a loop.
#[test]
fn a_forward_proxy_takes_origin_form_with_host_and_refuses_a_loop() {
    let t = Setup::new(|_| {});
    let req = format!(
        "GET /max-age/60 HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        t.origin.addr()
    );
    let r = exchange(t.proxy.addr(), req.as_bytes());
    assert_eq!((r.status, r.x_cache().as_str()), (200, "MISS"));
    assert_eq!(exchange(t.proxy.addr(), req.as_bytes()).x_cache(), "HIT");
    assert_eq!(t.origin.fetches("/max-age/60"), 1);
    let own = format!(
        "GET /x HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        t.proxy.addr()
    );
    assert_eq!(exchange(t.proxy.addr(), own.as_bytes()).status, 508);
}

/// The Collector keeps a reply no cache may reuse for the copies of the
/// client request that fetched it (SPE: each proxy under test asks for it
/// once more), never for the next client request.
#[test]
fn the_collector_keeps_an_uncachable_reply_for_its_requests_copies_only() {
    let t = Setup::new(|c| c.role = Role::Collector);
    let get = |copy: &str| t.get_with("/private", &format!("X-Cacheoff-Copy: {copy}\r\n"));
    let first = get("00000000000000b1");
    assert_eq!(first.x_cache(), "MISS");
    assert_eq!(t.origin.fetches("/private"), 1);
    // Two proxies under test ask for the same request's copy.
    for _ in 0..2 {
        let copy = get("00000000000000b1");
        assert_eq!(copy.x_cache(), "HIT");
        assert_eq!(copy.body, first.body);
        let stamps = copy.values("X-Cacheoff-Collected");
        assert_eq!(stamps.len(), 1, "one stamp, the copy's own");
    }
    assert_eq!(t.origin.fetches("/private"), 1);
    // The next client request is the origin's again, and so is a request
    // that names no copy.
    assert_eq!(get("00000000000000b2").x_cache(), "MISS");
    assert_eq!(t.origin.fetches("/private"), 2);
    assert_eq!(t.get("/private").x_cache(), "MISS");
    assert_eq!(t.origin.fetches("/private"), 3);
    // A cachable reply is every request's.
    get("00000000000000b3");
    let other = t.get_with("/max-age/60", "X-Cacheoff-Copy: 00000000000000b4\r\n");
    assert_eq!(other.x_cache(), "MISS");
    let again = t.get_with("/max-age/60", "X-Cacheoff-Copy: 00000000000000b5\r\n");
    assert_eq!(again.x_cache(), "HIT");
}
