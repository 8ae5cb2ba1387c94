//! The reference proxy's disk store against `kill -9`: after a restart
//! every object it serves is byte-identical to the origin's, objects
//! written completely before the kill are hits, and a damaged file is
//! never served.

use crate::support;

use cacheoff_testkit::{binary, exchange, origin, until, Origin};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;
use support::process;

/// The origin's object `n`: deterministic bytes, some of them large.
fn body(n: u64) -> Vec<u8> {
    let len = if n % 10 == 9 {
        4 << 20
    } else {
        1000 + n as usize * 997
    };
    (0..len).map(|i| (i as u64 * 31 + n * 7) as u8).collect()
}

/// A plain origin: `GET /obj/N` returns `body(N)`, cachable for an hour;
/// its `count` is the requests it has had.
fn objects() -> Origin {
    origin(|seen| {
        let n = seen
            .path
            .strip_prefix("/obj/")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        binary(200, &[("Cache-Control", "public, max-age=3600")], body(n))
    })
}

struct ProxyProcess {
    child: Child,
    addr: SocketAddr,
}

fn start_proxy(disk: &Path) -> ProxyProcess {
    let mut child = process::command()
        .args(["proxy", "--listen", "127.0.0.1:0", "--mem", "1MB", "--disk"])
        .arg(disk)
        .args(["--disk-size", "256MB"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // "cacheoff 0.1.0 forward proxy on 127.0.0.1:PORT: ..."
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|r| r.split(": ").next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    ProxyProcess { child, addr }
}

/// Fetches object `n` through the proxy: (X-Cache, body).
fn fetch(proxy: SocketAddr, origin: SocketAddr, n: u64) -> (String, Vec<u8>) {
    let r = exchange(
        proxy,
        format!(
            "GET http://{origin}/obj/{n} HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.head_text());
    (r.header("X-Cache").unwrap_or_default(), r.body)
}

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        files_under(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn the_disk_store_survives_kill_9_and_never_serves_a_damaged_object() {
    let objects = objects();
    let (origin, served) = (objects.addr(), || objects.count());
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("cache");

    let mut p = start_proxy(&disk);
    for n in 0..30 {
        let (x, b) = fetch(p.addr, origin, n);
        assert_eq!((x.as_str(), b.len()), ("MISS", body(n).len()));
    }
    // Disk writes follow the replies; wait until all 30 are on disk.
    until("30 objects on disk", Duration::from_secs(60), || {
        files_under(&disk.join("objects")) == 30
    });
    // Kill it while large objects are being fetched and written: once the
    // origin has had all four requests.
    let addr = p.addr;
    let asked = served();
    let in_flight: Vec<_> = (100..104)
        .map(|k| {
            std::thread::spawn(move || {
                let _ = std::panic::catch_unwind(|| fetch(addr, origin, k * 10 + 9));
            })
        })
        .collect();
    until(
        "the large fetches at the origin",
        Duration::from_secs(60),
        || served() >= asked + 4,
    );
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    for t in in_flight {
        let _ = t.join();
    }

    let mut p = start_proxy(&disk);
    // Checked before any new fetch: later writes pass through tmp too.
    assert_eq!(
        files_under(&disk.join("tmp")),
        0,
        "leftovers of the kill were removed"
    );
    let before = served();
    for n in 0..30 {
        let (x, b) = fetch(p.addr, origin, n);
        assert_eq!(x, "HIT", "object {n} was on disk before the kill");
        assert!(b == body(n), "object {n} differs from the origin's");
    }
    assert_eq!(served(), before, "no origin fetches for hits");
    // The objects in flight at the kill: whole or absent, never torn.
    for k in 100..104 {
        let n = k * 10 + 9;
        let (_, b) = fetch(p.addr, origin, n);
        assert!(b == body(n), "object {n} differs from the origin's");
    }
    p.child.kill().unwrap();
    p.child.wait().unwrap();

    // Damage one stored file: it is dropped, fetched again, and correct.
    let objects = disk.join("objects");
    let victim = std::fs::read_dir(&objects)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    let mut p = start_proxy(&disk);
    // Checked before any new fetch: later writes pass through tmp too.
    assert_eq!(
        files_under(&disk.join("tmp")),
        0,
        "leftovers of the kill were removed"
    );
    let before = served();
    let mut misses = 0;
    for n in (0..30).chain((100..104).map(|k| k * 10 + 9)) {
        let (x, b) = fetch(p.addr, origin, n);
        assert!(b == body(n), "object {n} differs from the origin's");
        misses += usize::from(x == "MISS");
    }
    assert_eq!(misses, 1, "exactly the damaged object was fetched again");
    assert_eq!(served(), before + 1);
    p.child.kill().unwrap();
    p.child.wait().unwrap();
}
