//! Hostile clients and misbehaving proxies under test, each attack beside
//! legitimate traffic that is still served: clients outside `--allow`,
//! destinations outside `--allow-dest`, loops, slow heads and bodies,
//! connection floods, and proxies whose replies never end; and the count
//! of every copy.

use crate::support;

use cacheoff_multiplier::{IpNet, Refusal};
use cacheoff_testkit::closed_now;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

/// A non-loopback address of this machine, for a client that is not on
/// loopback (its packets never leave the machine); `None` without one.
fn outside_address() -> Option<IpAddr> {
    let u = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // A route lookup only: nothing is sent.
    u.connect("192.0.2.1:9").ok()?;
    let ip = u.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// This machine's name, when it resolves to loopback addresses only.
fn host_name_on_loopback() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_ascii_lowercase();
    let addrs: Vec<SocketAddr> = (name.as_str(), 80).to_socket_addrs().ok()?.collect();
    let ok = !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback());
    let plain = name.contains(|c: char| c.is_ascii_alphabetic()) && !name.contains(' ');
    (ok && plain && name != "localhost").then_some(name)
}

/// One request on a new connection: the reply's status, and its head
/// and body.
fn status_of(m: SocketAddr, raw: &str) -> (u16, Vec<u8>) {
    let mut s = client(m);
    s.write(raw.as_bytes());
    let r = s.reply(false);
    (r.status, [r.raw_head, r.body].concat())
}

#[test]
fn clients_outside_allow_are_refused_unread_and_destinations_held_to_allow_dest() {
    let Some(ip) = outside_address() else {
        eprintln!("skipped: this machine has no address but loopback");
        return;
    };
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let honest = stage.fake(Fake::Honest);
    let private = private_service();
    let secret = private.addr();
    let tmp = tempfile::tempdir().unwrap();

    // Loopback clients only (the default), listening on every address.
    let mut cfg = config(
        stage.collector(),
        &[("honest", honest)],
        &tmp.path().join("a"),
    );
    cfg.listen = "0.0.0.0:0".parse().unwrap();
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let port = m.addr().port();
    let mut outsider = TcpStream::connect((ip, port)).unwrap();
    let _ = write!(
        outsider,
        "GET http://{origin}/outside HTTP/1.1\r\nHost: {origin}\r\n\r\n"
    );
    let (closed, got) = closed_within(&mut outsider, Duration::from_secs(30));
    assert!(closed, "the outsider's connection is closed");
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 403 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // A loopback client beside it is served.
    let mut s = client(SocketAddr::from(([127, 0, 0, 1], port)));
    let r = get(&mut s, origin, "/inside");
    assert_eq!((r.status, r.body), (200, body_of("/inside")));
    assert_eq!(m.refusals(Refusal::ClientDenied), 1);
    drop(s);
    let summary = m.stop().unwrap();
    assert_eq!(summary.requests, 1, "nothing of the outsider was read");
    assert_eq!(summary.refused, 1);
    assert_eq!(summary.proxy("honest").unwrap().span.counts.copied, 1);

    // The outsider allowed, and where it may go said.
    let mut cfg = config(
        stage.collector(),
        &[("honest", honest)],
        &tmp.path().join("b"),
    );
    cfg.listen = "0.0.0.0:0".parse().unwrap();
    cfg.allow = vec![IpNet::from(ip)];
    cfg.allow_dest = Some(vec![
        format!("127.0.0.1:{}", origin.port()).parse().unwrap(),
        format!("*:{}", secret.port()).parse().unwrap(),
    ]);
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let outside = SocketAddr::new(ip, m.addr().port());
    let mut s = client(outside);
    let r = get(&mut s, origin, "/allowed");
    assert_eq!((r.status, r.body), (200, body_of("/allowed")));
    // A Host naming the private service beside an allowed target: the
    // target decides, and the Host sent on is the target's.
    let (status, got) = status_of(
        outside,
        &format!("GET http://{origin}/h HTTP/1.1\r\nHost: {secret}\r\n\r\n"),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    assert!(got.ends_with(&body_of("/h")));
    let sp = secret.port();
    let mut attacks = vec![
        format!("GET http://{secret}/ HTTP/1.1\r\nHost: {secret}\r\n\r\n"),
        format!("GET / HTTP/1.1\r\nHost: {secret}\r\n\r\n"),
        format!("GET http://localhost:{sp}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("GET http://[::ffff:127.0.0.1]:{sp}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("GET http://0.0.0.0:{sp}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("POST http://127.0.0.1:{sp}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"),
    ];
    // A name `*` admits that resolves to this machine.
    if let Some(name) = host_name_on_loopback() {
        attacks.push(format!(
            "GET http://{name}:{sp}/ HTTP/1.1\r\nHost: x\r\n\r\n"
        ));
    }
    for raw in &attacks {
        let (status, got) = status_of(outside, raw);
        assert_eq!(status, 403, "{raw}: {}", String::from_utf8_lossy(&got));
    }
    assert_eq!(m.refusals(Refusal::DestDenied), attacks.len() as u64);
    // Still served beside the attacks.
    let mut s = client(outside);
    let r = get(&mut s, origin, "/still");
    assert_eq!((r.status, r.body), (200, body_of("/still")));
    drop(s);
    let summary = m.stop().unwrap();
    assert_eq!(
        private.connections(),
        0,
        "the private service was never reached"
    );
    assert_eq!(summary.refused, attacks.len() as u64);
    // The allowed requests only were copied.
    assert_eq!(summary.proxy("honest").unwrap().span.counts.copied, 3);
}

/// Sums a proxy's completed and failed copies as the intervals report them.
fn finished_copies(cfg: &mut cacheoff_multiplier::Config, name: &'static str) -> Arc<AtomicU64> {
    let n = Arc::new(AtomicU64::new(0));
    let seen = n.clone();
    cfg.on_interval = Some(Arc::new(move |iv| {
        for p in iv.proxies.iter().filter(|p| p.name == name) {
            seen.fetch_add(p.counts.completed + p.counts.errors, Ordering::SeqCst);
        }
    }));
    n
}

#[test]
fn requests_naming_the_multiplier_get_508_and_a_loop_ends_at_its_second_hop() {
    let posts = Arc::new(AtomicU64::new(0));
    let stage = Stage::new(posts.clone());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    let finished = finished_copies(&mut cfg, "honest");
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let own = m.addr();
    // Its own address, in two spellings: refused before anything is sent.
    let (status, _) = status_of(
        own,
        &format!(
            "POST http://{own}/form HTTP/1.1\r\nHost: {own}\r\nContent-Length: 5\r\n\r\nhello"
        ),
    );
    assert_eq!(status, 508);
    let (status, _) = status_of(
        own,
        &format!(
            "GET http://localhost:{}/x HTTP/1.1\r\nHost: x\r\n\r\n",
            own.port()
        ),
    );
    assert_eq!(status, 508);
    // Another name for it (a port forward): the Collector's request back
    // carries this Multiplier's Via token.
    let (fwd, carried) = forwarder(own);
    let (status, got) = status_of(
        own,
        &format!(
            "POST http://{fwd}/form HTTP/1.1\r\nHost: {fwd}\r\nContent-Length: 5\r\n\r\nhello"
        ),
    );
    assert_eq!(status, 508, "{}", String::from_utf8_lossy(&got));
    let (status, _) = status_of(
        own,
        &format!("GET http://{fwd}/loop HTTP/1.1\r\nHost: {fwd}\r\n\r\n"),
    );
    assert_eq!(status, 508);
    // Served beside the loops.
    let mut s = client(own);
    let r = get(&mut s, origin, "/beside");
    assert_eq!((r.status, r.body), (200, body_of("/beside")));
    drop(s);
    // The GET's copy (to the proxy, its Collector, the forward, back
    // here) and the legitimate one, before the Multiplier stops listening.
    until("both copies end", || finished.load(Ordering::SeqCst) >= 2);
    let loops = m.refusals(Refusal::Loop);
    let summary = m.stop().unwrap();
    let carried = carried.load(Ordering::SeqCst);
    // Each trip through the forward came back once and was refused: two
    // from the clients' requests, at most one more from the GET's copy
    // (none if the Collector served it the 508 it had just fetched).
    assert!((2..=3).contains(&carried), "{carried}");
    assert_eq!(loops, 2 + carried);
    assert_eq!(
        summary.requests,
        2 + 2 + carried + 1,
        "no hop beyond the second"
    );
    assert_eq!(
        posts.load(Ordering::SeqCst),
        0,
        "no POST reached the origin"
    );
    let c = summary.proxy("honest").unwrap().span.counts;
    assert_eq!((c.copied, c.not_copied_unsafe), (2, 1), "{c:?}");
}

/// `n` connections that have sent the first byte of a head; nonblocking.
fn half_heads(m: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(m).unwrap();
            s.write_all(b"G").unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect()
}

#[test]
fn slow_heads_are_cut_off_at_the_header_deadline_and_the_client_beside_them_is_served() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    cfg.client_header_timeout = Duration::from_secs(1);
    cfg.client_idle_timeout = Duration::from_secs(1);
    let m = cacheoff_multiplier::start(cfg).unwrap();
    // 300 connections that drip a head a byte every 100 ms, never ending
    // it (once the request line and Host are sent, one endless line).
    let head = format!("ET http://{origin}/slow HTTP/1.1\r\nHost: {origin}\r\nX: ");
    let head = head.as_bytes();
    let mut slow: Vec<Option<TcpStream>> =
        half_heads(m.addr(), 300).into_iter().map(Some).collect();
    // The client beside them.
    let mut s = client(m.addr());
    for p in ["/beside/1", "/beside/2"] {
        let r = get(&mut s, origin, p);
        assert_eq!((r.status, r.body), (200, body_of(p)));
    }
    let t = Instant::now();
    let mut sent = 0;
    let mut answered_408 = 0;
    while slow.iter().any(Option::is_some) {
        let open = slow.iter().filter(|s| s.is_some()).count();
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "{open} slow connections still open"
        );
        for slot in &mut slow {
            let Some(c) = slot else { continue };
            let mut got = [0u8; 512];
            let closed = match c.read(&mut got) {
                Ok(0) => true,
                Ok(n) => {
                    answered_408 += u64::from(got[..n].starts_with(b"HTTP/1.1 408 "));
                    false
                }
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            };
            let byte = head.get(sent..sent + 1).unwrap_or(b"a");
            if closed || c.write(byte).is_err() {
                *slot = None;
            }
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(m.refusals(Refusal::HeaderTimeout), 300);
    assert!(answered_408 > 0, "timed-out heads are answered 408");
    // The client beside them idles out quietly, and nothing stays open.
    let (closed, got) = closed_within(&mut s.s, Duration::from_secs(30));
    assert!(
        closed && got.is_empty(),
        "{}",
        String::from_utf8_lossy(&got)
    );
    until("every connection closed", || m.client_connections() == 0);
    let summary = m.stop().unwrap();
    assert_eq!(summary.proxy("honest").unwrap().span.counts.completed, 2);
    assert_eq!(summary.requests, 302);
    assert_eq!(summary.refused, 300);
}

#[test]
fn at_the_connection_cap_the_longest_waiting_is_closed_and_the_newcomer_served() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    cfg.max_client_connections = 100;
    // Long enough that the flood is held, not timed out, while it lasts.
    cfg.client_header_timeout = Duration::from_secs(60);
    let m = cacheoff_multiplier::start(cfg).unwrap();
    // A served keep-alive connection with a request in progress is never
    // chosen: this one's request waits on its body.
    let mut busy = client(m.addr());
    write!(
        busy.s,
        "POST http://{origin}/form HTTP/1.1\r\nHost: {origin}\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    )
    .unwrap();
    // Its head was read: the Multiplier asks for the body.
    let mut go = [0u8; 25];
    busy.s.read_exact(&mut go).unwrap();
    assert_eq!(&go, b"HTTP/1.1 100 Continue\r\n\r\n");
    let flood = half_heads(m.addr(), 300);
    // The client beside them: connection 302 with 100 allowed.
    let mut s = client(m.addr());
    let r = get(&mut s, origin, "/beside");
    assert_eq!((r.status, r.body), (200, body_of("/beside")));
    // 99 flood connections fit; each of the other 201 closed the oldest.
    assert_eq!(m.refusals(Refusal::Evicted), 202);
    assert_eq!(m.refusals(Refusal::OverCapacity), 0);
    until("the evicted are closed", || {
        flood[..202].iter().all(closed_now)
    });
    assert!(!flood[202..].iter().any(closed_now), "the newest 98 stay");
    busy.write(b"ok");
    assert_eq!(busy.reply(false).status, 200);
    let summary = m.stop().unwrap();
    assert_eq!(summary.refused, 202);
    drop(flood);
}

#[test]
fn a_dripped_body_gets_408_and_a_steady_one_beside_it_is_served() {
    let posts = Arc::new(AtomicU64::new(0));
    let stage = Stage::new(posts.clone());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[("honest", stage.fake(Fake::Honest))],
        tmp.path(),
    );
    cfg.client_header_timeout = Duration::from_millis(500);
    cfg.client_body_min_rate = 1000;
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut drip = client(m.addr()).s;
    write!(
        drip,
        "POST http://{origin}/drip HTTP/1.1\r\nHost: {origin}\r\nContent-Length: 100000\r\n\r\n"
    )
    .unwrap();
    drip.set_nonblocking(true).unwrap();
    let t = Instant::now();
    let mut got = Vec::new();
    loop {
        assert!(t.elapsed() < Duration::from_secs(60), "never cut off");
        let mut b = [0u8; 512];
        match drip.read(&mut b) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        if drip.write(b"x").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        got.starts_with(b"HTTP/1.1 408 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // A body at a steady pace, beside it.
    let mut s = client(m.addr());
    let body = vec![b'b'; 64 * 1024];
    write!(
        s.s,
        "POST http://{origin}/form HTTP/1.1\r\nHost: {origin}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write(&body);
    let r = s.reply(false);
    assert_eq!((r.status, r.body), (200, b"posted 1".to_vec()));
    assert_eq!(m.refusals(Refusal::BodyTimeout), 1);
    let summary = m.stop().unwrap();
    assert_eq!(
        posts.load(Ordering::SeqCst),
        1,
        "the dripped body went nowhere"
    );
    assert_eq!(summary.refused, 1);
}

#[test]
fn misbehaving_proxies_end_at_the_copy_deadline_and_every_copy_is_counted_once() {
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let slow = ["endless_body", "endless_continue", "silent"];
    let mut cfg = config(
        stage.collector(),
        &[
            ("endless_body", stage.fake(Fake::EndlessBody)),
            ("endless_continue", stage.fake(Fake::EndlessContinue)),
            ("silent", stage.fake(Fake::Stall)),
            ("honest", stage.fake(Fake::Honest)),
        ],
        tmp.path(),
    );
    cfg.copy_timeout = Duration::from_secs(1);
    cfg.first_byte_timeout = Duration::from_secs(60);
    cfg.idle_timeout = Duration::from_secs(60);
    cfg.conns_per_proxy = 2;
    cfg.queue = 4;
    cfg.stop_grace = Duration::from_millis(100);
    // Copies ended so far, by proxy, as the intervals say.
    let timeouts = Arc::new(Mutex::new(std::collections::BTreeMap::<String, u64>::new()));
    let seen = timeouts.clone();
    cfg.on_interval = Some(Arc::new(move |iv| {
        let mut t = seen.lock().unwrap();
        for p in &iv.proxies {
            *t.entry(p.name.clone()).or_default() +=
                p.mismatches_by_kind.get("timeout").copied().unwrap_or(0);
        }
    }));
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let mut s = client(m.addr());
    const N: u64 = 30;
    for i in 0..N {
        let p = format!("/copy/{i}");
        assert_eq!(get(&mut s, origin, &p).body, body_of(&p));
    }
    // Copies of each run into the deadline...
    until("each slow proxy's copies time out", || {
        let t = timeouts.lock().unwrap();
        slow.iter().all(|n| t.get(*n).copied().unwrap_or(0) >= 1)
    });
    // ... and one more request's copies are queued or in flight when the
    // Multiplier stops, with less grace than their deadline: cut off.
    let r = get(&mut s, origin, "/copy/last");
    assert_eq!(r.body, body_of("/copy/last"));
    let summary = m.stop().unwrap();
    for p in &summary.proxies {
        let (name, c) = (&p.span.name, p.span.counts);
        // Every copy made is counted once: not queued, or queued and then
        // completed, failed, or cut off at stop.
        assert_eq!(c.copied + c.dropped, N + 1, "{name}: {c:?}");
        assert_eq!(
            c.completed + c.errors + c.unfinished,
            c.copied,
            "{name}: {c:?}"
        );
        if slow.contains(&name.as_str()) {
            assert_eq!(c.completed, 0, "{name}: {c:?}");
            assert!(c.errors >= 1, "{name}: {c:?}");
            assert_eq!(
                p.span.mismatches_by_kind.get("timeout"),
                Some(&c.errors),
                "{name}: {:?}",
                p.span.mismatches_by_kind
            );
            assert!(c.unfinished >= 1, "{name}: cut off at stop: {c:?}");
        }
    }
}
