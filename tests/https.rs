//! HTTPS and HTTP/2, in-process on port 0: robots speaking TLS (with and
//! without session resumption) and HTTP/2 (over TLS and in the clear)
//! straight to the origin servers, and HTTPS through a forward proxy's
//! `CONNECT` tunnels; each run answers every planned request with the
//! same verdicts as HTTP/1.1 in the clear, and counts its handshakes.

use crate::support;

use cacheoff_stats::Entry;
use cacheoff_workload::{HttpVersion, Workload};
use std::net::SocketAddr;
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

#[test]
fn http2_in_the_clear_uses_prior_knowledge() {
    let (_dir, t) = checked_run(workload(false, HttpVersion::Http2), None);
    let c = counts(&t);
    assert_eq!(c.tls_handshakes, 0);
    assert!(t.xacts > c.conns_opened, "{c:?}");
}

/// A forward proxy that only tunnels: `CONNECT host:port`, then bytes
/// both ways, counting the tunnels it opened.
fn tunnel_proxy() -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let opened = std::sync::Arc::new(AtomicU64::new(0));
    let count = opened.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (mut client, _) = listener.accept().await.unwrap();
                let count = count.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    while !head.ends_with(b"\r\n\r\n") {
                        let mut b = [0u8; 1];
                        if client.read(&mut b).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(b[0]);
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let target = text.split(' ').nth(1).unwrap_or("").to_string();
                    let Ok(mut server) = tokio::net::TcpStream::connect(&target).await else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                        return;
                    };
                    count.fetch_add(1, Ordering::Relaxed);
                    client
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        .await
                        .unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
            }
        });
    });
    (addr, opened)
}

#[test]
fn https_through_a_forward_proxy_goes_through_connect_tunnels() {
    let (proxy, opened) = tunnel_proxy();
    let (_dir, t) = checked_run(workload(true, HttpVersion::Http1), Some(proxy));
    let c = counts(&t);
    assert!(c.tunnels > 0);
    assert_eq!(c.tunnels, opened.load(std::sync::atomic::Ordering::Relaxed));
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
