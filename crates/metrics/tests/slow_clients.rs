//! Slow clients beside scrapers: clients dribbling a request head a byte
//! at a time hold a slot until the request deadline at most (or until a
//! newer connection takes their slot), never a thread, and every scrape
//! beside them is answered.

use cacheoff_metrics::{Limits, Registry, Server, SLOTS};
use cacheoff_testkit::{read_all, threads, threads_named, within};
use prometheus_client::metrics::counter::Counter;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn registry() -> Registry {
    let mut reg = Registry::default();
    let c = Counter::<u64>::default();
    c.inc_by(7);
    reg.register("cacheoff_test", "a figure to scrape", c);
    reg
}

/// One scrape on a new connection, as Prometheus sends it: the whole
/// head in one write.
fn scrape(addr: SocketAddr) -> Result<String, String> {
    let request = b"GET /metrics HTTP/1.1\r\nHost: prometheus\r\nAccept: text/plain\r\n\r\n";
    let out = read_all(addr, request).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out).into_owned();
    if text.starts_with("HTTP/1.1 200 OK\r\n") && text.contains("\ncacheoff_test_total 7\n") {
        Ok(text)
    } else {
        Err(text)
    }
}

/// What the slow clients saw.
struct Dribbled {
    opened: u64,
    /// Connections the server closed (every one, once the clients stop).
    closed: u64,
}

/// `n` clients, each sending one byte of a head that never ends every
/// 50 ms, on one thread; a client whose connection the server closed
/// connects again after `pause` until `stop`; then it waits (at most a
/// minute) for the server to close those still open.
fn dribble(addr: SocketAddr, n: usize, pause: Duration, stop: Arc<AtomicBool>) -> Dribbled {
    const HEAD: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ";
    let mut conns: Vec<(Option<TcpStream>, usize, Instant)> =
        (0..n).map(|_| (None, 0, Instant::now() - pause)).collect();
    let mut out = Dribbled {
        opened: 0,
        closed: 0,
    };
    let mut stopped_at = None;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if stopping && stopped_at.is_none() {
            stopped_at = Some(Instant::now());
        }
        if stopped_at.is_some_and(|t| t.elapsed() > Duration::from_secs(60)) {
            return out;
        }
        let mut open = 0;
        for (conn, sent, closed_at) in conns.iter_mut() {
            match conn {
                None if !stopping && closed_at.elapsed() >= pause => {
                    if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                        s.set_nonblocking(true).unwrap();
                        *conn = Some(s);
                        *sent = 0;
                        out.opened += 1;
                        open += 1;
                    }
                }
                None => {}
                Some(s) => {
                    let mut buf = [0u8; 512];
                    let gone = match s.read(&mut buf) {
                        Ok(0) => true,
                        // The server's 408, before its close.
                        Ok(_) => false,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            let byte = HEAD.get(*sent).copied().unwrap_or(b'a');
                            match s.write(&[byte]) {
                                Ok(k) => {
                                    *sent += k;
                                    false
                                }
                                Err(e) => e.kind() != ErrorKind::WouldBlock,
                            }
                        }
                        Err(_) => true,
                    };
                    if gone {
                        *conn = None;
                        *closed_at = Instant::now();
                        out.closed += 1;
                    } else {
                        open += 1;
                    }
                }
            }
        }
        if stopping && open == 0 {
            return out;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What an attack of `n` slow clients for `secs` did to the scrapes
/// beside it, and to the process's threads.
struct Attack {
    scrapes: u64,
    failed: Vec<String>,
    dribbled: Dribbled,
    /// Most of the server's threads seen during the attack, and once it
    /// was gone, against those before.
    before: usize,
    during: usize,
    after: usize,
    cut: cacheoff_metrics::Cut,
}

/// The process's threads but the test harness's (named after this file
/// and its tests, started as it starts tests) and the slow clients'
/// driver: the server's, however it names them.
fn server_threads() -> usize {
    let harness = ["slow_clients", "more_slow_clien", "slow-clients"];
    threads() - harness.iter().map(|p| threads_named(p)).sum::<usize>()
}

fn attack(n: usize, limits: Limits, pause: Duration, secs: f64) -> Attack {
    let before = server_threads();
    let server = Server::start_with("127.0.0.1:0".parse().unwrap(), registry(), limits).unwrap();
    let addr = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("slow-clients".into())
            .spawn(move || dribble(addr, n, pause, stop))
            .unwrap()
    };
    let start = Instant::now();
    let (mut scrapes, mut failed, mut during) = (0, Vec::new(), 0);
    while start.elapsed().as_secs_f64() < secs || scrapes < 5 {
        during = during.max(server_threads());
        match scrape(addr) {
            Ok(_) => scrapes += 1,
            Err(e) => failed.push(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let dribbled = clients.join().unwrap();
    // Every connection is closed: its slot is given back.
    within(Duration::from_secs(30), || server.open() == 0);
    assert_eq!(server.open(), 0);
    let cut = server.cut();
    assert_eq!(server.scrapes(), scrapes);
    drop(server);
    eprintln!(
        "{n} slow clients: {} connections, {} cut at the deadline, {} evicted; {scrapes} scrapes, {} failed; threads {before} before, {during} at most during",
        dribbled.opened,
        cut.deadline,
        cut.evicted,
        failed.len()
    );
    Attack {
        scrapes,
        failed,
        dribbled,
        before,
        during,
        after: server_threads(),
        cut,
    }
}

#[test]
fn slow_clients_are_cut_at_the_request_deadline_and_scrapes_are_answered() {
    if !cacheoff_testkit::alone!(
        slow_clients_are_cut_at_the_request_deadline_and_scrapes_are_answered
    ) {
        return;
    }
    // The attack: 8 clients dribbling bytes, well within the
    // slots; each must finish its head within 1 s of its accept.
    let limits = Limits {
        request: Duration::from_secs(1),
        ..Limits::default()
    };
    let a = attack(8, limits, Duration::from_millis(100), 3.5);
    assert!(a.failed.is_empty(), "failed scrapes: {:?}", a.failed);
    assert!(a.scrapes >= 5);
    // Each client was cut at least once during the attack (3.5 s, a
    // deadline of 1 s), and every connection ended closed by the server
    // at the request deadline, none taken for another.
    assert!(a.dribbled.opened >= 16, "{}", a.dribbled.opened);
    assert_eq!(a.dribbled.closed, a.dribbled.opened);
    assert_eq!(a.cut.deadline, a.dribbled.opened);
    assert_eq!(a.cut.evicted, 0);
    // The server's one thread; none per connection.
    assert!(a.during <= a.before + 1, "{} > {} + 1", a.during, a.before);
    assert!(a.after <= a.before, "{} > {}", a.after, a.before);
}

#[test]
fn more_slow_clients_than_slots_take_each_other_s_slots_not_the_scrapes() {
    if !cacheoff_testkit::alone!(
        more_slow_clients_than_slots_take_each_other_s_slots_not_the_scrapes
    ) {
        return;
    }
    let limits = Limits {
        request: Duration::from_secs(1),
        ..Limits::default()
    };
    assert_eq!(limits.slots, SLOTS);
    let a = attack(SLOTS + 20, limits, Duration::from_millis(300), 3.5);
    assert!(a.failed.is_empty(), "failed scrapes: {:?}", a.failed);
    assert!(a.scrapes >= 5);
    // More clients than slots: newer connections took the oldest's slots,
    // the rest ran into the deadline; every one ended closed.
    assert!(a.dribbled.opened > SLOTS as u64 + 20);
    assert_eq!(a.dribbled.closed, a.dribbled.opened);
    assert!(a.cut.evicted > 0);
    assert_eq!(a.cut.deadline + a.cut.evicted, a.dribbled.opened);
    assert!(a.during <= a.before + 1, "{} > {} + 1", a.during, a.before);
    assert!(a.after <= a.before, "{} > {}", a.after, a.before);
}
