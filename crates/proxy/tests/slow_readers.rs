//! Slow readers of a large hit: each holds no copy of the object (the
//! store's bytes are shared), and one that takes no bytes for the write
//! timeout is closed.

use crate::script;

use cacheoff_testkit::{rss, small_window, until};
use script::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

const BIG: usize = 2 << 20;

fn big_origin(tune: impl FnOnce(&mut cacheoff_proxy::ProxyConfig)) -> Bench {
    Bench::tuned(
        |seen| {
            // `/huge` outgrows the kernel's socket buffers on both sides.
            let len = if seen.path == "/huge" { 8 * BIG } else { BIG };
            let body = "x".repeat(len);
            ok("Cache-Control: max-age=600\r\n", &body)
        },
        tune,
    )
}

#[test]
fn many_slow_readers_of_one_large_hit_share_its_bytes() {
    if !cacheoff_testkit::alone!(many_slow_readers_of_one_large_hit_share_its_bytes) {
        return;
    }
    let b = big_origin(|c| {
        c.memory = 1 << 30;
        c.client_write_timeout = Duration::from_secs(30);
    });
    let first = b.get("/huge", "");
    assert_eq!((first.status, first.body.len()), (200, 8 * BIG));
    assert_eq!(b.get("/huge", "").x_cache(), "HIT");
    let before = rss();
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
    for s in &readers {
        s.set_nonblocking(true).unwrap();
        until(
            "every reader's first bytes",
            Duration::from_secs(60),
            || matches!(s.peek(&mut [0u8; 1]), Ok(n) if n > 0),
        );
    }
    let grown = rss().saturating_sub(before);
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
    until("the reply's end", Duration::from_secs(60), || {
        std::fs::read_to_string(log.path()).unwrap().lines().count() >= 2
    });
    // What it wrote is less than the reply, then the connection ends.
    let (closed, got) = cacheoff_testkit::closed_within(&mut s, Duration::from_secs(20));
    assert!(closed, "never closed");
    assert!(
        got.len() < 8 * BIG,
        "got {} bytes: the whole reply",
        got.len()
    );
    // Others are served as before.
    assert_eq!(b.get("/big", "").body.len(), BIG);
}
