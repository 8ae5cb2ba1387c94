//! What the Multiplier's scenario tests share: a test origin, the real
//! Collector, proxies under test that misbehave exactly, a client.

#![allow(dead_code)]

use cacheoff_http::request::parse_request;
use cacheoff_http::response::parse_response;
use cacheoff_multiplier::{Config, ProxyUnderTest};
use cacheoff_proxy::{Proxy, ProxyConfig};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const LM: &str = "Sun, 22 Nov 2026 00:00:00 GMT";

/// Runs `serve` for every connection accepted on a new loopback listener,
/// on a thread of its own; returns the address.
pub fn serve_on_thread<F, Fut>(serve: F) -> SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            loop {
                let (s, _) = l.accept().await.unwrap();
                tokio::task::spawn_local(serve(s));
            }
        });
    });
    addr
}

/// Reads one request (head and Content-Length body) from `buf`/`s`.
pub async fn next_request(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Ok(Some(r)) = parse_request(buf, false) {
            let n = r.head_len + r.content_length.unwrap_or(0) as usize;
            if buf.len() >= n {
                return Some(buf.drain(..n).collect());
            }
        }
        if s.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
}

/// The body the origin serves for `path`.
pub fn body_of(path: &str) -> Vec<u8> {
    format!("{path} body ").repeat(50 + path.len()).into_bytes()
}

/// A cachable object per path (Last-Modified, max-age); POSTs counted.
pub fn origin(posts: Arc<AtomicU64>) -> SocketAddr {
    serve_on_thread(move |mut s| {
        let posts = posts.clone();
        async move {
            let mut buf = Vec::new();
            while let Some(raw) = next_request(&mut s, &mut buf).await {
                let req = parse_request(&raw, false).unwrap().unwrap();
                let path = req.path().to_string();
                let (cc, body) = if req.method == cacheoff_http::Method::Post {
                    let n = posts.fetch_add(1, Ordering::SeqCst) + 1;
                    ("no-store", format!("posted {n}").into_bytes())
                } else {
                    ("public, max-age=3600", body_of(&path))
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nLast-Modified: {LM}\r\nCache-Control: {cc}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                if s.write_all(&[head.as_bytes(), &body].concat())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    })
}

pub fn collector(origin_unused: SocketAddr) -> Proxy {
    let _ = origin_unused;
    let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    c.collector = true;
    c.workers = 1;
    Proxy::start(c).unwrap()
}

#[derive(Clone, Copy)]
pub enum Fake {
    Honest,
    /// Flips the body's first byte.
    Corrupt,
    /// Sends half the body, then closes.
    Truncate,
    /// Reads requests, never answers.
    Stall,
    /// Dates its Last-Modified a day earlier.
    Stale,
    /// Answers 404 with the Collector's body.
    NotFound,
    /// A 200 whose chunked body never ends (a chunk every 20 ms).
    EndlessBody,
    /// `100 Continue` every 20 ms, never a final reply.
    EndlessContinue,
}

/// A proxy under test that relays each request to the Collector on a
/// connection of its own and misbehaves as told.
pub fn fake_proxy(parent: SocketAddr, how: Fake) -> SocketAddr {
    serve_on_thread(move |mut s| async move {
        let mut buf = Vec::new();
        while let Some(raw) = next_request(&mut s, &mut buf).await {
            let endless: &[u8] = match how {
                Fake::Stall => continue,
                Fake::EndlessBody => {
                    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
                    if s.write_all(head).await.is_err() {
                        return;
                    }
                    b"1\r\nx\r\n"
                }
                Fake::EndlessContinue => b"HTTP/1.1 100 Continue\r\n\r\n",
                _ => b"",
            };
            if !endless.is_empty() {
                while s.write_all(endless).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                return;
            }
            let Some(mut reply) = fetch(parent, &raw).await else {
                return;
            };
            let head_len = parse_response(&reply, false, false)
                .unwrap()
                .unwrap()
                .head_len;
            match how {
                Fake::Corrupt if reply.len() > head_len => reply[head_len] ^= 0x20,
                Fake::Stale => {
                    let text = String::from_utf8(reply.clone()).unwrap();
                    let older = text.replace(LM, "Sat, 21 Nov 2026 00:00:00 GMT");
                    reply = older.into_bytes();
                }
                Fake::NotFound => reply[9..12].copy_from_slice(b"404"),
                Fake::Truncate => {
                    let cut = head_len + (reply.len() - head_len) / 2;
                    let _ = s.write_all(&reply[..cut]).await;
                    return;
                }
                _ => {}
            }
            if s.write_all(&reply).await.is_err() {
                return;
            }
        }
    })
}

/// One request to `to` on a new connection; the reply whole (Length framed).
pub async fn fetch(to: SocketAddr, raw: &[u8]) -> Option<Vec<u8>> {
    let mut c = tokio::net::TcpStream::connect(to).await.ok()?;
    c.write_all(raw).await.ok()?;
    let mut buf = Vec::new();
    loop {
        if let Ok(Some(h)) = parse_response(&buf, false, false) {
            if let cacheoff_http::Framing::Length(n) = h.framing {
                if buf.len() >= h.head_len + n as usize {
                    return Some(buf);
                }
            }
        }
        if c.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
    }
}

pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

/// Reads one Length-framed reply (or one ended by close) from `s`.
pub fn read_reply(s: &mut TcpStream, buf: &mut Vec<u8>) -> Reply {
    let mut chunk = [0u8; 16384];
    loop {
        if let Some(h) = parse_response(buf, false, false).unwrap() {
            let n = match h.framing {
                cacheoff_http::Framing::Length(n) => n as usize,
                _ => usize::MAX,
            };
            if n != usize::MAX && buf.len() >= h.head_len + n {
                let raw: Vec<u8> = buf.drain(..h.head_len + n).collect();
                return Reply {
                    status: h.status,
                    head: String::from_utf8_lossy(&raw[..h.head_len]).into_owned(),
                    body: raw[h.head_len..].to_vec(),
                };
            }
        }
        let got = s.read(&mut chunk).expect("reply within the read timeout");
        assert!(
            got > 0,
            "closed mid-reply: {:?}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&chunk[..got]);
    }
}

pub fn client(m: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(m).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

pub fn get(s: &mut TcpStream, buf: &mut Vec<u8>, origin: SocketAddr, path: &str) -> Reply {
    write!(
        s,
        "GET http://{origin}{path} HTTP/1.1\r\nHost: {origin}\r\n\r\n"
    )
    .unwrap();
    read_reply(s, buf)
}

pub fn config(
    collector: SocketAddr,
    proxies: &[(&str, SocketAddr)],
    out: &std::path::Path,
) -> Config {
    let proxies = proxies
        .iter()
        .map(|(n, a)| ProxyUnderTest {
            name: n.to_string(),
            addr: *a,
        })
        .collect();
    let mut c = Config::new(
        "127.0.0.1:0".parse().unwrap(),
        collector,
        proxies,
        out.into(),
    );
    c.workers = 1;
    c.interval = Duration::from_millis(200);
    c.facts_wait = Duration::from_secs(10);
    c.first_byte_timeout = Duration::from_secs(10);
    c.idle_timeout = Duration::from_secs(10);
    c.stop_grace = Duration::from_secs(10);
    c
}

/// Waits (bounded) until `f` holds.
pub fn until(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A TCP port forward to `to` (another name for it, as a NAT or a proxy
/// under test pointed back at the Multiplier would be); the connections
/// it carried.
pub fn forwarder(to: SocketAddr) -> (SocketAddr, Arc<AtomicU64>) {
    let carried = Arc::new(AtomicU64::new(0));
    let n = carried.clone();
    let addr = serve_on_thread(move |mut a| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            if let Ok(mut b) = tokio::net::TcpStream::connect(to).await {
                let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
            }
        }
    });
    (addr, carried)
}

/// A private service on loopback (what must not be readable through the
/// Multiplier): answers anything with its secret; counts its connections.
pub fn private_service() -> (SocketAddr, Arc<AtomicU64>) {
    let seen = Arc::new(AtomicU64::new(0));
    let n = seen.clone();
    let addr = serve_on_thread(move |mut s| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            let body = b"secret";
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = s.write_all(&[head.as_bytes(), body].concat()).await;
        }
    });
    (addr, seen)
}

/// This process's resident set, in bytes.
pub fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Reads until the peer closes (true) or `limit` passes (false); a reset
/// counts as closed. What was read is returned too.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> (bool, Vec<u8>) {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while t.elapsed() < limit {
        match s.read(&mut chunk) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (true, got),
        }
    }
    (false, got)
}
