//! HTTPS and HTTP/2, in-process on port 0: robots speaking TLS (with and
//! without session resumption) and HTTP/2 (over TLS and in the clear)
//! straight to the origin servers, and HTTPS through a forward proxy's
//! `CONNECT` tunnels; each run answers every planned request with the
//! same verdicts as HTTP/1.1 in the clear, and counts its handshakes.

use crate::support;

use cacheoff_stats::Entry;
use cacheoff_testkit::{origin, Origin, Reply, TIMEOUT};
use cacheoff_workload::{Dist, HttpVersion, Quantity, Workload};
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use support::run::{assert_every_planned_request_ended, planned, run, simple};

fn workload(tls: bool, http: HttpVersion) -> Workload {
    let mut w = simple(1000.0, 60, 12, 1.0, 3.0);
    w.robots.tls = tls;
    w.robots.http = http;
    w
}

/// Runs `w` (through `proxy` if given): every planned request answered,
/// none failed, and nothing a direct run cannot see.
fn checked_run(w: Workload, proxy: Option<SocketAddr>) -> (tempfile::TempDir, Entry) {
    let plan = planned(&w);
    let (dir, r) = run(w, proxy);
    let t = r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_every_planned_request_ended(&plan, &t);
    assert_eq!(t.dhr.measured, 0.0, "no cache in the way");
    (dir, t)
}

fn counts(t: &Entry) -> cacheoff_stats::Counts {
    t.counts.expect("a new run writes its counts")
}

#[test]
fn https_direct_handshakes_every_connection_and_resumes_sessions() {
    let (dir, t) = checked_run(workload(true, HttpVersion::Http1), None);
    let c = counts(&t);
    assert!(c.conns_opened > 0);
    assert_eq!(
        c.tls_handshakes, c.conns_opened,
        "one handshake per connection"
    );
    assert!(
        c.tls_resumed > 0,
        "a robot's later connections to a server resume: {c:?}"
    );
    assert!(
        c.tls_resumed < c.tls_handshakes,
        "the first to each server cannot"
    );
    assert_eq!(t.tls_handshake_ms.count, c.tls_handshakes);
    assert!(t.tls_handshake_ms.p50 > 0.0);
    assert_eq!(c.h2_refused, 0);
    // The run made its own CA and says so in its directory.
    assert!(dir.path().join("tls/ca.pem").exists());
    assert!(dir.path().join("tls/server.pem").exists());
}

#[test]
fn https_without_resumption_makes_every_handshake_a_full_one() {
    let mut w = workload(true, HttpVersion::Http1);
    w.robots.tls_resume = false;
    let (_dir, t) = checked_run(w, None);
    let c = counts(&t);
    assert!(c.tls_handshakes > 0);
    assert_eq!(c.tls_resumed, 0);
}

#[test]
fn http2_over_tls_multiplexes_a_robots_requests_over_few_connections() {
    let (_dir, t) = checked_run(workload(true, HttpVersion::Http2), None);
    let c = counts(&t);
    assert_eq!(c.h2_refused, 0, "the origin servers speak h2 over ALPN");
    assert_eq!(c.tls_handshakes, c.conns_opened);
    // 60 robots x 12 servers: at most one connection per pair (and a new
    // one after every 128 transactions on it), far fewer than HTTP/1.1's.
    assert!(c.conns_opened <= 60 * 12 + c.xacts / 128 + 1, "{c:?}");
    assert!(t.xacts > c.conns_opened, "{c:?}");
}

/// Issue 35's CI: under load a robot opened an HTTP/2 connection per
/// request that came due while its first one to that server was still
/// being set up (879 for 720 robot-server pairs). Here one robot's
/// requests come due every half millisecond, many during its first TLS
/// handshake: they all wait for that one connection.
#[test]
fn http2_requests_wait_for_the_connection_being_opened_to_their_server() {
    let mut w = simple(2000.0, 1, 1, 0.5, 1.0);
    w.robots.tls = true;
    w.robots.http = HttpVersion::Http2;
    w.robots.max_conns = 8;
    w.robots.conn_reuse = Dist::constant(Quantity::Count, 1e6);
    let (_dir, t) = checked_run(w, None);
    let c = counts(&t);
    assert_eq!(c.conns_opened, 1, "{c:?}");
}

#[test]
fn http2_in_the_clear_uses_prior_knowledge() {
    let (_dir, t) = checked_run(workload(false, HttpVersion::Http2), None);
    let c = counts(&t);
    assert_eq!(c.tls_handshakes, 0);
    assert!(t.xacts > c.conns_opened, "{c:?}");
}

/// A forward proxy that only tunnels: the kit's origin reads each
/// `CONNECT host:port`, then bytes go both ways; it counts the tunnels it
/// opened.
fn tunnel_proxy() -> (Origin, Arc<AtomicU64>) {
    let opened = Arc::new(AtomicU64::new(0));
    let count = opened.clone();
    let proxy = origin(move |seen| {
        let (target, count) = (seen.target.clone(), count.clone());
        Reply::write(move |client| {
            let Ok(server) = TcpStream::connect(&target) else {
                client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")?;
                return Err(io::ErrorKind::ConnectionAborted.into());
            };
            count.fetch_add(1, Ordering::Relaxed);
            client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
            splice(client, server)?;
            // The tunnel is over: no further request on this connection.
            Err(io::ErrorKind::ConnectionAborted.into())
        })
    });
    (proxy, opened)
}

/// Copies bytes both ways until both sides have ended, passing each
/// side's end on to the other (as `tokio::io::copy_bidirectional`).
fn splice(client: &mut TcpStream, mut server: TcpStream) -> io::Result<()> {
    // Reads wait no longer than the kit's client does: a hang ends.
    server.set_read_timeout(Some(TIMEOUT))?;
    let (mut from_client, mut to_server) = (client.try_clone()?, server.try_clone()?);
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut server, client);
    let _ = client.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}

#[test]
fn https_through_a_forward_proxy_goes_through_connect_tunnels() {
    let (proxy, opened) = tunnel_proxy();
    let (_dir, t) = checked_run(workload(true, HttpVersion::Http1), Some(proxy.addr()));
    let c = counts(&t);
    assert!(c.tunnels > 0);
    assert_eq!(c.tunnels, opened.load(Ordering::Relaxed));
    assert_eq!(c.tls_handshakes, c.tunnels, "TLS inside every tunnel");
    assert_eq!(t.tunnel_ms.count, c.tunnels);
}

#[test]
fn a_proxy_that_refuses_connect_fails_every_request_as_tunnel_refused() {
    let proxy = support::proxy::caching();
    let mut w = simple(200.0, 10, 4, 0.5, 1.0);
    w.robots.tls = true;
    let plan = planned(&w);
    let (_dir, r) = run(w, Some(proxy.addr()));
    let t = r.summary.total;
    assert_eq!(t.xacts, 0);
    assert_eq!(t.errors.by_kind.get("tunnel_refused"), Some(&plan.total));
}
