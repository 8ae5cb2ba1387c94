//! Slow readers of a large hit: each holds no copy of the object (the
//! store's bytes are shared), and one that takes no bytes for the write
//! timeout is closed.

mod script;

use script::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const BIG: usize = 2 << 20;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// A connection that advertises a tiny receive window, as slow-read
/// attackers do, so the proxy's kernel buffers cannot absorb the reply.
fn small_window(addr: std::net::SocketAddr) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    s.connect(&addr.into()).unwrap();
    s.into()
}

fn big_origin(tune: impl FnOnce(&mut cacheoff_proxy::ProxyConfig)) -> Bench {
    Bench::tuned(
        |seen| {
            // `/huge` outgrows the kernel's socket buffers on both sides.
            let len = if seen.head.path() == "/huge" {
                8 * BIG
            } else {
                BIG
            };
            let body = "x".repeat(len);
            ok("Cache-Control: max-age=600\r\n", &body)
        },
        tune,
    )
}

#[test]
fn many_slow_readers_of_one_large_hit_share_its_bytes() {
    let b = big_origin(|c| {
        c.memory = 1 << 30;
        c.client_write_timeout = Duration::from_secs(30);
    });
    let first = b.get("/huge", "");
    assert_eq!((first.status, first.body.len()), (200, 8 * BIG));
    assert_eq!(b.get("/huge", "").x_cache(), "HIT");
    let before = resident_bytes();
    let readers: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = small_window(b.proxy.addr());
            s.write_all(b"GET /huge HTTP/1.1\r\nHost: o\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    // Every reader's hit is under way: its first bytes have arrived (then
    // its small window fills at once).
    let deadline = Instant::now() + Duration::from_secs(60);
    for s in &readers {
        s.set_nonblocking(true).unwrap();
        while !matches!(s.peek(&mut [0u8; 1]), Ok(n) if n > 0) {
            assert!(Instant::now() < deadline, "a reader got nothing");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let grown = resident_bytes().saturating_sub(before);
    // A copy per reader would be 800 MB, less what the kernel buffers.
    assert!(
        grown < 100 << 20,
        "50 stalled readers of a 16 MB hit grew memory by {} MB",
        grown >> 20
    );
    drop(readers);
}

#[test]
fn a_reader_that_takes_nothing_is_closed_after_the_write_timeout() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let path = log.path().to_path_buf();
    let b = big_origin(|c| {
        c.memory = 256 << 20;
        c.client_write_timeout = Duration::from_millis(300);
        c.access_log = Some(path);
    });
    assert_eq!(b.get("/huge", "").status, 200);
    let mut s = TcpStream::connect(b.proxy.addr()).unwrap();
    s.write_all(b"GET /huge HTTP/1.1\r\nHost: o\r\n\r\n")
        .unwrap();
    // The proxy gave up: it logs the transaction when it ends (its log is
    // written out every second), before it closes the connection.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(log.path()).unwrap().lines().count() < 2 {
        assert!(Instant::now() < deadline, "the reply never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    // What it wrote is less than the reply, then the connection ends.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(started.elapsed() < Duration::from_secs(20), "never closed");
    assert!(got < 8 * BIG, "got {got} bytes: the whole reply");
    // Others are served as before.
    assert_eq!(b.get("/big", "").body.len(), BIG);
}
