//! The MSL test against real Linux listeners on loopback, whose TIME-WAIT
//! is fixed at 60 s (TCP_TIMEWAIT_LEN). Raw sockets need root: the tests
//! are `#[ignore]`d (the suite's .ci/run runs them, as root) and skip with
//! a message otherwise. The slow one takes a minute.

use crate::support;

use cacheoff_testkit::{origin, raw, raw_and_close, Origin, Reply};
use serde_json::Value;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;
use support::process::{cacheoff, stderr, stdout};

fn root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // "Uid: real effective saved filesystem"
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(str::to_string));
    if euid.as_deref() == Some("0") {
        return true;
    }
    eprintln!("skipped: the MSL test needs raw sockets and TCP_REPAIR, so root");
    false
}

/// How a test server ends each connection.
#[derive(Clone, Copy)]
enum Close {
    /// Answers, then closes first: a FIN, then TIME-WAIT on its side.
    Fin,
    /// Answers, then resets (SO_LINGER 0): no TIME-WAIT.
    Reset,
    /// Answers and keeps the connection open.
    KeepOpen,
}

/// What the test server answers, whatever it is asked.
const REPLY: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A test server: the kit's origin on 127.0.0.1, port 0, a real Linux
/// listener whose accepted sockets the kernel keeps in TIME-WAIT when
/// they close first. It listens as long as the test keeps it, as a
/// product does.
fn server(close: Close) -> Origin {
    origin(move |_| match close {
        Close::Fin => raw_and_close(REPLY),
        Close::Reset => Reply::write(|s| {
            s.write_all(REPLY)?;
            socket2::SockRef::from(&*s).set_linger(Some(Duration::ZERO))?;
            Err(io::ErrorKind::ConnectionAborted.into())
        }),
        // Then waits for a next request: the connection stays open.
        Close::KeepOpen => raw(REPLY),
    })
}

/// `cacheoff msl ADDR --json`: exit status and the JSON object.
fn msl_json(addr: SocketAddr) -> (Option<i32>, Value) {
    let out = cacheoff(&["msl", &addr.to_string(), "--json"]);
    let text = stdout(&out);
    let v: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {text}\n{}", stderr(&out)));
    (out.status.code(), v)
}

#[test]
#[ignore = "root, and a minute: the MSL test of a Linux listener"]
fn a_linux_listener_keeps_time_wait_60_s_and_passes() {
    if !root() {
        return;
    }
    let server = server(Close::Fin);
    let (code, v) = msl_json(server.addr());
    let tw = v["time_wait_s"].as_f64().unwrap();
    eprintln!("Linux listener: {v}");
    assert!((55.0..=65.0).contains(&tw), "{v}");
    assert_eq!(v["pass"], true, "{v}");
    assert_eq!(v["ending"], "accepted", "{v}");
    assert_eq!(code, Some(0));
    // The TIME-WAIT answered the probes (Linux: at most two ACKs a second).
    assert!(v["time_wait_acks"].as_u64().unwrap() >= 50, "{v}");
}

#[test]
#[ignore = "root: the MSL test of a server that closes with a RST"]
fn a_server_that_resets_leaves_no_time_wait_and_fails() {
    if !root() {
        return;
    }
    let server = server(Close::Reset);
    let (code, v) = msl_json(server.addr());
    eprintln!("RST server: {v}");
    assert!(v["time_wait_s"].as_f64().unwrap() < 1.0, "{v}");
    assert_eq!(v["pass"], false, "{v}");
    assert_eq!(v["closed_with_reset"], true, "{v}");
    assert_eq!(code, Some(1));
}

#[test]
#[ignore = "root: why the guard socket is there"]
fn without_the_guard_our_kernel_s_rst_ends_the_time_wait() {
    if !root() {
        return;
    }
    // The product's ACK to the first probe draws a RST from our kernel,
    // which kills a Linux TIME-WAIT (net.ipv4.tcp_rfc1337=0, the default).
    let server = server(Close::Fin);
    let mut cfg = cacheoff_msl::MslConfig::new(server.addr());
    cfg.guard = false;
    cfg.timeout = Duration::from_secs(20);
    let r = cacheoff_msl::measure(&cfg).unwrap();
    eprintln!("without the guard: {r:?}");
    assert_eq!(r.ending, cacheoff_msl::Ending::Accepted, "{r:?}");
    assert!(r.time_wait_s() < 5.0, "{r:?}");
}

#[test]
#[ignore = "root: the MSL test cannot run against a product that stays open"]
fn a_product_that_keeps_the_connection_open_cannot_be_tested() {
    if !root() {
        return;
    }
    let server = server(Close::KeepOpen);
    let out = cacheoff(&["msl", &server.addr().to_string(), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("kept the connection open"), "{err}");
    assert!(
        err.contains("active closer") || err.contains("close first"),
        "{err}"
    );
}

#[test]
#[ignore = "root: nothing listening is a set-up error"]
fn nothing_listening_is_a_set_up_error() {
    if !root() {
        return;
    }
    let port = cacheoff_testkit::free_port();
    let out = cacheoff(&["msl", &format!("127.0.0.1:{port}")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
}
