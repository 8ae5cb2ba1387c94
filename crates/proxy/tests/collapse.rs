//! Collapsed forwarding with deadlines (docs/proxy.md, "Collapsed
//! forwarding"): a fetch fills the store at the origin's pace whatever
//! its leader's client does, and requests waiting for it give up on it
//! once it is late, one of them fetching in its place.
//!
//! Every test counts what the origin was asked and checks each body
//! byte for byte; none bounds a latency. Waiters read with a minute's
//! timeout, the leaders' write timeout is five minutes: before the fix
//! the waiters waited for the leader's client, so these tests failed.

use cacheoff_proxy::{Proxy, ProxyConfig, ProxyStats, Upstream};
use cacheoff_testkit::{small_window, until, Client, Origin, Reply, Response};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Large enough that the socket buffers between the proxy and a client
/// that reads nothing cannot hold it.
const BIG: usize = 16 << 20;
/// The longest any wait in these tests may take before it fails.
const HANG: Duration = Duration::from_secs(60);

/// Byte `i` of every body the origin sends.
fn byte(i: usize) -> u8 {
    (i % 251) as u8
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(byte).collect()
}

/// An origin that hands each request, numbered from 0 in the order they
/// came, to `answer` with its connection (the head says it closes).
fn origin(answer: impl Fn(usize, &mut TcpStream) + Send + Sync + 'static) -> Origin {
    let answer = Arc::new(answer);
    cacheoff_testkit::origin(move |seen| {
        let (n, answer) = (seen.n - 1, answer.clone());
        Reply::write(move |s| {
            answer(n, s);
            Ok(())
        })
    })
}

fn head(len: Option<usize>) -> String {
    let framing = len.map_or("Transfer-Encoding: chunked".to_string(), |n| {
        format!("Content-Length: {n}")
    });
    format!(
        "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\n{framing}\r\nConnection: close\r\n\r\n"
    )
}

fn proxy(origin: &Origin, tune: impl FnOnce(&mut ProxyConfig)) -> Proxy {
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.upstream = Upstream::Reverse(origin.addr().to_string());
    cfg.workers = 2;
    // Room for a 16 MB object in a memory shard (1/16 of the store).
    cfg.memory = 1 << 30;
    cfg.read_timeout = HANG;
    // A leader's client is never given up on during a test.
    cfg.client_write_timeout = Duration::from_secs(300);
    tune(&mut cfg);
    Proxy::start(cfg).unwrap()
}

const GET: &[u8] = b"GET /o HTTP/1.1\r\nHost: o\r\n\r\n";

/// A client that sent its request and advertises a tiny receive window,
/// so what it does not read stays in the proxy.
fn leader(addr: SocketAddr) -> TcpStream {
    let mut s = small_window(addr);
    s.write_all(GET).unwrap();
    s
}

/// `n` clients asking for the object at once, each reading its reply.
fn waiters(addr: SocketAddr, n: usize) -> Vec<std::thread::JoinHandle<Response>> {
    (0..n)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.s.set_read_timeout(Some(HANG)).unwrap();
                c.write(GET);
                c.reply(false)
            })
        })
        .collect()
}

fn counter(p: &Proxy, c: fn(&ProxyStats) -> &std::sync::atomic::AtomicU64) -> u64 {
    ProxyStats::get(c(p.stats()))
}

/// An origin sending a `len`-byte object by its length: the first half
/// at once, the rest once `release` is set.
fn gated_origin(len: usize, release: Arc<AtomicBool>) -> Origin {
    origin(move |_, s| {
        let b = body(len);
        let _ = s.write_all(head(Some(len)).as_bytes());
        let _ = s.write_all(&b[..len / 2]);
        until("released", HANG, || release.load(Ordering::SeqCst));
        let _ = s.write_all(&b[len / 2..]);
    })
}

/// The leader is in with the origin, `n` waiters are waiting for its
/// fetch, which then ends; their replies.
fn collapse_onto(proxy: &Proxy, origin: &Origin, n: usize, release: &AtomicBool) -> Vec<Response> {
    until("the leader's fetch", HANG, || origin.count() == 1);
    let handles = waiters(proxy.addr(), n);
    let all = n as u64 + 1;
    until("every request in", HANG, || {
        counter(proxy, |s| &s.requests) == all
    });
    release.store(true, Ordering::SeqCst);
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn assert_whole(replies: &[Response], len: usize) {
    let want = body(len);
    for r in replies {
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), len);
        assert!(r.body == want, "a waiter's body differs");
    }
}

#[test]
fn a_leader_that_reads_nothing_holds_nobody() {
    let release = Arc::new(AtomicBool::new(false));
    let origin = gated_origin(BIG, release.clone());
    let p = proxy(&origin, |_| {});
    let stuck = leader(p.addr());
    let replies = collapse_onto(&p, &origin, 5, &release);
    // Five whole bodies from one fetch, while the leader took nothing.
    assert_whole(&replies, BIG);
    assert!(replies.iter().all(|r| r.x_cache() == "HIT"));
    assert_eq!(origin.count(), 1);
    assert_eq!(counter(&p, |s| &s.collapsed), 5);
    assert_eq!(counter(&p, |s| &s.collapse_takeovers), 0);
    // The object is stored: a newcomer is a plain hit.
    let newcomer = waiters(p.addr(), 1).pop().unwrap().join().unwrap();
    assert_whole(&[newcomer], BIG);
    assert_eq!(origin.count(), 1);
    drop(stuck);
}

#[test]
fn a_leader_reading_a_byte_at_a_time_does_not_pace_the_waiters() {
    let release = Arc::new(AtomicBool::new(false));
    let origin = gated_origin(BIG, release.clone());
    let p = proxy(&origin, |_| {});
    let mut slow = leader(p.addr());
    let (stop, read) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let reader = {
        let (stop, read) = (stop.clone(), read.clone());
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            while !stop.load(Ordering::SeqCst) && matches!(slow.read(&mut b), Ok(1)) {
                read.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let replies = collapse_onto(&p, &origin, 3, &release);
    let leader_had = read.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    assert_whole(&replies, BIG);
    assert_eq!(origin.count(), 1);
    assert_eq!(counter(&p, |s| &s.collapsed), 3);
    // The leader's client is far behind: the waiters did not wait for it.
    assert!(leader_had < BIG / 2, "the leader read {leader_had} bytes");
    drop(p);
    reader.join().unwrap();
}

#[test]
fn a_leader_that_leaves_does_not_abort_the_fetch() {
    let release = Arc::new(AtomicBool::new(false));
    let origin = gated_origin(BIG, release.clone());
    let p = proxy(&origin, |_| {});
    let gone = leader(p.addr());
    until("the leader's fetch", HANG, || origin.count() == 1);
    drop(gone);
    let replies = collapse_onto(&p, &origin, 4, &release);
    assert_whole(&replies, BIG);
    assert_eq!(origin.count(), 1);
    assert_eq!(counter(&p, |s| &s.collapsed), 4);
}

/// Chunks of the slow origin's body.
const PIECE: usize = 4096;

#[test]
fn waiters_stay_with_a_slow_fetch_that_keeps_its_pace() {
    // A hung leader; the origin sends 4 KB every 20 ms, for well over the
    // collapse bound, and ends once every waiter is in.
    let release = Arc::new(AtomicBool::new(false));
    let gate = release.clone();
    let origin = origin(move |_, s| {
        let _ = s.write_all(head(None).as_bytes());
        let (started, mut sent) = (Instant::now(), 0);
        while started.elapsed() < Duration::from_millis(1500) || !gate.load(Ordering::SeqCst) {
            let piece: Vec<u8> = (sent..sent + PIECE).map(byte).collect();
            let mut chunk = Vec::new();
            cacheoff_http::chunked::write_chunk(&mut chunk, &piece);
            if s.write_all(&chunk).is_err() || started.elapsed() > HANG {
                return;
            }
            sent += PIECE;
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = s.write_all(b"0\r\n\r\n");
    });
    let p = proxy(&origin, |c| c.collapse_wait = Duration::from_millis(500));
    let hung = leader(p.addr());
    let replies = collapse_onto(&p, &origin, 4, &release);
    let len = replies[0].body.len();
    assert!(len >= PIECE && len.is_multiple_of(PIECE), "{len} bytes");
    assert_whole(&replies, len);
    // One fetch: nobody left it for one of their own.
    assert_eq!(origin.count(), 1);
    assert_eq!(counter(&p, |s| &s.collapse_takeovers), 0);
    assert_eq!(counter(&p, |s| &s.collapsed), 4);
    drop(hung);
}

/// The object the origin sends once it answers.
const SMALL: usize = 100_000;

/// An origin that never answers its first request (`stall`) and answers
/// the others at once.
fn first_stalls(stall: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> Origin {
    origin(move |n, s| {
        if n == 0 {
            stall(s);
        } else {
            let _ = s.write_all(head(Some(SMALL)).as_bytes());
            let _ = s.write_all(&body(SMALL));
        }
    })
}

/// Five waiters on a fetch that falls late; what they and the leader got.
fn late_fetch(origin: &Origin, p: &Proxy) -> (Vec<Response>, std::thread::JoinHandle<Response>) {
    let first = waiters(p.addr(), 1).pop().unwrap();
    until("the leader's fetch", HANG, || origin.count() == 1);
    let replies: Vec<Response> = waiters(p.addr(), 5)
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    (replies, first)
}

fn assert_one_took_over(origin: &Origin, p: &Proxy, replies: &[Response]) {
    assert_whole(replies, SMALL);
    // The late fetch and one more: one waiter led it, the other four
    // waited for it (or, come late, found it stored).
    assert_eq!(origin.count(), 2);
    assert_eq!(counter(p, |s| &s.collapse_takeovers), 1);
    let misses = replies.iter().filter(|r| r.x_cache() == "MISS").count();
    assert_eq!(misses, 1);
    let took_over = replies.iter().find(|r| r.x_cache() == "MISS").unwrap();
    assert!(took_over
        .header("Cache-Status")
        .is_some_and(|c| c.contains("fwd=uri-miss") && c.ends_with("stored")));
}

#[test]
fn waiters_past_the_collapse_wait_fetch_once_in_place_of_a_stalled_origin() {
    let origin = first_stalls(|_| std::thread::sleep(Duration::from_secs(10)));
    let p = proxy(&origin, |c| {
        c.collapse_wait = Duration::from_millis(500);
        // Well after the waiters left it.
        c.read_timeout = Duration::from_secs(3);
    });
    let (replies, first) = late_fetch(&origin, &p);
    assert_one_took_over(&origin, &p, &replies);
    // The leader stays with its own fetch and gets its failure.
    assert_eq!(first.join().unwrap().status, 504);
    assert_eq!(origin.count(), 2);
}

#[test]
fn waiters_leave_a_fetch_that_trickles_below_the_minimum_rate() {
    // 50 bytes a second, never silent for the collapse bound.
    let origin = first_stalls(|s| {
        let _ = s.write_all(head(Some(SMALL)).as_bytes());
        let started = Instant::now();
        for i in 0..SMALL {
            if s.write_all(&[byte(i)]).is_err() || started.elapsed() > HANG {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let p = proxy(&origin, |c| {
        c.collapse_wait = Duration::from_millis(500);
        c.collapse_min_rate = 1024;
    });
    let (replies, first) = late_fetch(&origin, &p);
    assert_one_took_over(&origin, &p, &replies);
    drop(p);
    // The leader's fetch ended with the proxy.
    assert!(first.join().is_err());
}
