//! Hostile and slow clients against the reference proxy, in-process on
//! port 0: each test sends the bytes of one attack, asserts the proxy's
//! answer and what reached the origin, and that a well-behaved client is
//! still served meanwhile. Timeouts are configured in hundreds of
//! milliseconds so the whole file runs in a few seconds.

use cacheoff_proxy::{Proxy, ProxyConfig, ProxyStats, Upstream};
use cacheoff_testkit::{closed_within, read_all, until, Client, Origin, Reply};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

struct Setup {
    origin: Origin,
    proxy: Proxy,
}

impl Setup {
    /// A forward proxy without a store (every request reaches the origin).
    /// Its head timeout (also a body's grace) is long enough that no busy
    /// machine makes a well-behaved client miss it; the tests of slow
    /// clients shorten it.
    fn new(tune: impl FnOnce(&mut ProxyConfig)) -> Setup {
        // Every request answered `200 ok` (uncachable), each one kept.
        let origin =
            cacheoff_testkit::origin(|_| Reply::new(200, &[("Cache-Control", "no-store")], "ok"));
        let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.workers = 1;
        cfg.memory = 0;
        cfg.client_header_timeout = Duration::from_secs(30);
        tune(&mut cfg);
        let proxy = Proxy::start(cfg).unwrap();
        Setup { origin, proxy }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.origin.addr())
    }

    fn connect(&self) -> Client {
        Client::connect(self.proxy.addr())
    }

    /// A well-behaved GET on its own connection.
    fn get(&self, path: &str) -> u16 {
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\n\r\n",
            self.url(path),
            self.origin.addr()
        );
        self.exchange(req.as_bytes())
    }

    fn exchange(&self, raw: &[u8]) -> u16 {
        self.connect().send(raw).status
    }

    fn stat(&self, f: impl Fn(&ProxyStats) -> &std::sync::atomic::AtomicU64) -> u64 {
        ProxyStats::get(f(self.proxy.stats()))
    }
}

/// Writes `bytes` one at a time, `gap` apart, until done or the proxy
/// closes; in the background, so the test reads the answer meanwhile.
fn drip(mut s: TcpStream, bytes: Vec<u8>, gap: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for b in bytes {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(gap);
        }
    })
}

#[test]
fn a_head_sent_a_byte_at_a_time_gets_408_while_others_are_served() {
    let t = Setup::new(|c| {
        c.client_header_timeout = Duration::from_millis(300);
        c.client_idle_timeout = Duration::from_secs(60);
    });
    let mut s = t.connect();
    // Long enough that its drip takes half a minute.
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nX-Slow: {}\r\n\r\n",
        t.url("/slow"),
        "s".repeat(700)
    );
    let start = Instant::now();
    let dripper = drip(
        s.s.try_clone().unwrap(),
        head.into_bytes(),
        Duration::from_millis(40),
    );
    assert_eq!(t.get("/fine"), 200, "others are served meanwhile");
    assert_eq!(s.reply(false).status, 408);
    // The head timeout, not the idle one nor the whole drip (a busy
    // machine may answer seconds late).
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(15),
        "{took:?}"
    );
    dripper.join().unwrap();
    assert!(t.origin.seen("/slow").is_empty());
    assert_eq!(t.stat(|s| &s.client_timeouts), 1);
}

#[test]
fn a_keep_alive_connection_waits_the_idle_timeout_not_the_head_timeout() {
    let t = Setup::new(|c| {
        c.client_header_timeout = Duration::from_millis(300);
        c.client_idle_timeout = Duration::from_secs(60);
    });
    let mut s = t.connect();
    let req = format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", t.url("/again"));
    for _ in 0..2 {
        s.write(req.as_bytes());
        assert_eq!(s.reply(false).status, 200);
        // The test itself: idle far longer than the 300 ms head timeout,
        // well within the idle one.
        std::thread::sleep(Duration::from_millis(1500));
    }
    assert_eq!(t.origin.seen("/again").len(), 2);
}

#[test]
fn an_idle_connection_is_closed_once_a_wait_lasts_the_idle_timeout() {
    let t = Setup::new(|c| c.client_idle_timeout = Duration::from_millis(1000));
    let mut s = t.connect();
    let req = format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", t.url("/idle"));
    // Each pause is over half the limit: the timer set in one wait fires
    // in the next, which must go on until its own limit.
    for _ in 0..3 {
        s.write(req.as_bytes());
        assert_eq!(s.reply(false).status, 200);
        std::thread::sleep(Duration::from_millis(600));
    }
    assert_eq!(t.origin.seen("/idle").len(), 3);
    // Then no request: the proxy closes the connection.
    let (closed, got) = closed_within(&mut s.s, Duration::from_secs(20));
    assert!(closed && got.is_empty(), "closed, nothing sent: {got:?}");
}

#[test]
fn a_body_slower_than_the_minimum_rate_gets_408_and_a_fast_one_passes() {
    let t = Setup::new(|c| {
        c.client_header_timeout = Duration::from_millis(200);
        c.client_body_min_rate = 1000;
    });
    let mut s = t.connect();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
        t.url("/drip")
    );
    s.write(head.as_bytes());
    let start = Instant::now();
    // 25 bytes a second: the 200 ms grace plus 1 ms per byte runs out
    // after about a quarter of a second.
    let dripper = drip(
        s.s.try_clone().unwrap(),
        vec![b'a'; 1000],
        Duration::from_millis(40),
    );
    assert_eq!(s.reply(false).status, 408);
    // Long before the whole 40 s drip.
    assert!(start.elapsed() < Duration::from_secs(20));
    drop(s);
    dripper.join().unwrap();
    let body = vec![b'b'; 100_000];
    let mut s = t.connect();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        t.url("/fast"),
        body.len()
    );
    s.write(&[head.as_bytes(), &body].concat());
    assert_eq!(s.reply(false).status, 200);
    assert!(t.origin.seen("/drip").is_empty());
    assert_eq!(t.origin.seen("/fast")[0].body, body);
    assert_eq!(t.stat(|s| &s.client_timeouts), 1);
}

#[test]
fn connections_over_the_cap_are_turned_away_and_the_others_served() {
    let t = Setup::new(|c| c.max_client_connections = 2);
    let req = format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", t.url("/cap"));
    let mut kept: Vec<Client> = (0..2)
        .map(|_| {
            let mut s = t.connect();
            s.write(req.as_bytes());
            assert_eq!(s.reply(false).status, 200);
            s
        })
        .collect();
    let mut third = t.connect();
    let start = Instant::now();
    let got = third.rest();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "turned away at once"
    );
    assert!(got.starts_with(b"HTTP/1.1 503 "), "{got:?}");
    assert_eq!(t.stat(|s| &s.connections_refused), 1);
    // The two open connections keep being served.
    for s in &mut kept {
        s.write(req.as_bytes());
        assert_eq!(s.reply(false).status, 200);
    }
    // A closed one frees its place (the proxy notices the close first).
    drop(kept.pop());
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        t.url("/cap")
    );
    until("a place freed", Duration::from_secs(30), || {
        let got = read_all(t.proxy.addr(), req.as_bytes()).unwrap_or_default();
        got.starts_with(b"HTTP/1.1 200 ")
    });
}

#[test]
fn a_60kb_head_in_small_writes_is_parsed_whole() {
    let t = Setup::new(|_| {});
    let mut head = format!("GET {} HTTP/1.1\r\nHost: x\r\n", t.url("/big"));
    for i in 0..50 {
        head.push_str(&format!("X-Pad-{i}: {}\r\n", format!("{i:04}").repeat(300)));
    }
    head.push_str("\r\n");
    assert!(
        head.len() > 60_000 && head.len() < 64 * 1024,
        "{}",
        head.len()
    );
    let mut s = t.connect();
    for (n, piece) in head.as_bytes().chunks(100).enumerate() {
        s.write(piece);
        if n % 50 == 0 {
            // Let the proxy read what came so far: many reads, not one.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(s.reply(false).status, 200);
    let seen = &t.origin.seen("/big")[0];
    for i in 0..50 {
        let name = format!("X-Pad-{i}");
        let value = format!("{i:04}").repeat(300);
        assert_eq!(seen.header(&name), Some(value.as_str()));
    }
}

#[test]
fn expect_100_continue_is_met_by_the_proxy_and_not_forwarded() {
    let t = Setup::new(|_| {});
    let mut s = t.connect();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
        t.url("/cont")
    );
    s.write(head.as_bytes());
    let mut first = [0u8; 25];
    s.s.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write(b"hello");
    assert_eq!(s.reply(false).status, 200);
    let seen = &t.origin.seen("/cont")[0];
    assert_eq!(seen.body, b"hello");
    assert_eq!(seen.header("expect"), None);
    // Body sent with the head: no need to wait, answered all the same.
    let raw = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nworld",
        t.url("/cont")
    );
    assert_eq!(t.exchange(raw.as_bytes()), 200);
    // Any other expectation cannot be met.
    let raw = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 5\r\n\r\nhello",
        t.url("/teapot")
    );
    assert_eq!(t.exchange(raw.as_bytes()), 417);
    assert!(t.origin.seen("/teapot").is_empty());
    assert_eq!(t.origin.seen("/cont").len(), 2);
}

#[test]
fn uploads_beyond_the_shared_budget_get_503_until_it_is_free_again() {
    let t = Setup::new(|c| {
        c.max_buffered_uploads = 1000;
        c.max_request_body = 2000;
    });
    let post = |path: &str, len: usize, extra: &str| {
        format!(
            "POST {} HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n{extra}\r\n",
            t.url(path)
        )
    };
    // A holds 800 bytes of the budget: its 100 Continue says it has them.
    let mut a = t.connect();
    a.write(post("/a", 800, "Expect: 100-continue\r\n").as_bytes());
    let mut cont = [0u8; 25];
    a.s.read_exact(&mut cont).unwrap();
    a.write(&[b'a'; 100]);
    let b = [post("/b", 300, "").as_bytes(), &[b'b'; 300]].concat();
    assert_eq!(t.exchange(&b), 503);
    let c = [post("/c", 200, "").as_bytes(), &[b'c'; 200]].concat();
    assert_eq!(t.exchange(&c), 200);
    // Larger than any upload may be: 413 as before.
    assert_eq!(t.exchange(post("/huge", 5000, "").as_bytes()), 413);
    a.write(&[b'a'; 700]);
    assert_eq!(a.reply(false).status, 200);
    assert_eq!(t.origin.seen("/a")[0].body, vec![b'a'; 800]);
    // A's bytes are given back once it is answered (just after its reply
    // is written, so B may need another try).
    until("the budget given back", Duration::from_secs(30), || {
        t.exchange(&b) == 200
    });
    assert_eq!(t.origin.seen("/b")[0].body, vec![b'b'; 300]);
    // A chunked upload is held in one buffer and forwarded with a length.
    let chunked = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        t.url("/chunked")
    );
    assert_eq!(t.exchange(chunked.as_bytes()), 200);
    assert_eq!(t.origin.seen("/chunked")[0].body, b"hello world");
    let big_chunk = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4b0\r\n{}\r\n0\r\n\r\n",
        t.url("/big-chunk"),
        "z".repeat(1200)
    );
    assert_eq!(t.exchange(big_chunk.as_bytes()), 503);
    assert!(t.origin.seen("/big-chunk").is_empty());
    assert!(t.stat(|s| &s.uploads_refused) >= 2);
}

#[test]
fn an_open_proxy_connects_only_where_allow_dest_says() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // Open to a LAN: by default only ports 80 and 443, never this host.
    let t = Setup::new(|c| c.allow = vec!["10.0.0.0/8".parse().unwrap()]);
    let get = |authority: &str| {
        let raw = format!("GET http://{authority}/x HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        t.exchange(raw.as_bytes())
    };
    let origin = t.origin.addr().to_string();
    // Open and closed ports look alike, and nothing is connected to.
    assert_eq!(get(&origin), 403);
    assert_eq!(get(&closed.to_string()), 403);
    assert_eq!(get("localhost"), 403);
    assert_eq!(get("127.0.0.1"), 403);
    assert_eq!(get("0.0.0.0"), 403);
    assert_eq!(get("[::1]:80"), 403);
    assert_eq!(get("[::ffff:127.0.0.1]"), 403);
    // Addresses spelled any way but std's are malformed.
    for odd in ["2130706433", "0x7f.1", "0177.0.0.1", "127.1"] {
        assert_eq!(get(odd), 400, "{odd}");
    }
    assert!(t.origin.seen("/x").is_empty());
    assert_eq!(t.stat(|s| &s.destinations_denied), 7);
    // Listing the origin lets it through, and only it.
    let port = t.origin.addr().port();
    let t2 = Setup::new(|c| {
        c.allow = vec!["10.0.0.0/8".parse().unwrap()];
        c.allow_dest = Some(vec![format!("127.0.0.1:{port}").parse().unwrap()]);
    });
    let get2 = |authority: &str| {
        let raw = format!("GET http://{authority}/y HTTP/1.1\r\nHost: {authority}\r\n\r\n");
        t2.exchange(raw.as_bytes())
    };
    assert_eq!(get2(&origin), 200);
    assert_eq!(get2(&t2.origin.addr().to_string()), 403, "another port");
    assert_eq!(t.origin.seen("/y").len(), 1);
    assert!(t2.origin.seen("/y").is_empty());
    // Loopback clients only (no --allow): no destination check, as runs
    // with origins on random loopback ports need.
    let local = Setup::new(|_| {});
    assert_eq!(local.get("/z"), 200);
}

#[test]
fn a_name_that_resolves_to_this_machine_does_not_pass_a_wildcard_rule() {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let resolves_here = std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), 80))
        .map(|mut a| a.any(|a| a.ip().is_loopback()))
        .unwrap_or(false);
    if name.is_empty() || name == "localhost" || !resolves_here {
        eprintln!("skipped: this machine's name ({name:?}) does not resolve to loopback");
        return;
    }
    // An origin reached through the proxies below, by this machine's name.
    let t = Setup::new(|_| {});
    let authority = format!("{name}:{}", t.origin.addr().port());
    let open_to = |rule: String| {
        Setup::new(move |c| {
            c.allow = vec!["10.0.0.0/8".parse().unwrap()];
            c.allow_dest = Some(vec![rule.parse().unwrap()]);
        })
    };
    let raw = format!("GET http://{authority}/w HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    // The name passes `*`, but where it points is this machine.
    let wildcard = open_to(format!("*:{}", t.origin.addr().port()));
    assert_eq!(wildcard.exchange(raw.as_bytes()), 403);
    assert!(t.origin.seen("/w").is_empty());
    // Naming the host trusts it with what it resolves to.
    let named = open_to(authority.clone());
    assert_eq!(named.exchange(raw.as_bytes()), 200);
    assert_eq!(t.origin.seen("/w").len(), 1);
}

#[test]
fn host_lines_and_header_counts_are_checked() {
    let t = Setup::new(|_| {});
    let url = t.url("/h");
    let two_hosts = format!("GET {url} HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    assert_eq!(t.exchange(two_hosts.as_bytes()), 400);
    let many: String = (0..70).map(|i| format!("X-{i}: v\r\n")).collect();
    let too_many = format!("GET {url} HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    assert_eq!(t.exchange(too_many.as_bytes()), 431);
    // HTTP/1.0 may leave Host out.
    assert_eq!(
        t.exchange(format!("GET {url} HTTP/1.0\r\n\r\n").as_bytes()),
        200
    );
    assert_eq!(t.origin.seen("/h").len(), 1);
    // A reverse proxy has only Host to go by: HTTP/1.1 without it is 400.
    let origin = t.origin.addr().to_string();
    let rev = Setup::new(|c| c.upstream = Upstream::Reverse(origin));
    let raw = b"GET /r HTTP/1.1\r\nConnection: close\r\n\r\n";
    assert_eq!(rev.exchange(raw), 400);
    assert!(rev.origin.seen("/r").is_empty() && t.origin.seen("/r").is_empty());
    assert_eq!(rev.get("/fine"), 200);
}
