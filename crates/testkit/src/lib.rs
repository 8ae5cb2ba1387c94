//! Test peers for scenario tests.
//!
//! [`TestProxy`] is a small caching forward proxy, an ideal cache: it keeps
//! every `200` reply marked `Cache-Control: public` by URL forever, serves
//! repeats from memory, collapses concurrent misses for one URL into one
//! fetch, sends reloads (`no-cache`) to the origin, drops a URL's copy
//! on POST, and answers `If-Modified-Since` from the stored
//! `Last-Modified`. It can misbehave on
//! purpose ([`Faults`]) so tests can check that robots catch it. It runs on its own thread and runtime, listening on
//! `127.0.0.1:0`.

use cacheoff_http::chunked::write_chunk;
use cacheoff_http::echo::ECHO_HEADER;
use cacheoff_http::request::parse_request;
use cacheoff_http::response::parse_response;
use cacheoff_http::{Framing, RequestHead};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Deliberate misbehaviour.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Flip one byte in the body of every reply with a body.
    pub corrupt_body: bool,
    /// Drop the transaction echo header from every reply.
    pub strip_echo: bool,
    /// Cache replies the origin marked uncachable too.
    pub cache_uncachable: bool,
    /// Serve stored replies without looking at `If-Modified-Since` or
    /// `no-cache`: reloads become hits, IMS requests get the stored 200.
    pub ignore_request_headers: bool,
    /// Keep a URL's copy after a POST to it (RFC 9111 §4.4 says drop it).
    pub keep_after_post: bool,
}

/// How the proxy delimits reply bodies to its clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReplyFraming {
    #[default]
    ContentLength,
    /// `Transfer-Encoding: chunked`, in pieces of up to 1000 bytes.
    Chunked,
    /// No length: the body ends when the proxy closes the connection.
    CloseDelimited,
}

/// Proxy settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyOptions {
    /// Cache public replies (otherwise forward everything).
    pub cache: bool,
    pub faults: Faults,
    pub framing: ReplyFraming,
}

/// What the proxy did, for assertions.
#[derive(Debug, Default)]
pub struct ProxyCounters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

struct Stored {
    status: u16,
    head: Vec<u8>,
    body: Vec<u8>,
    cachable: bool,
    /// `Last-Modified`, in Unix seconds.
    last_modified: Option<u64>,
}

/// A cache slot: a stored reply, or a fetch in progress that concurrent
/// requests for the same URL wait for (collapsed forwarding).
enum Slot {
    Ready(Arc<Stored>),
    Pending(watch::Receiver<Option<Arc<Stored>>>),
}

type Cache = Arc<Mutex<HashMap<String, Slot>>>;

/// What to do with one request.
enum Plan {
    Hit(Arc<Stored>),
    Wait(watch::Receiver<Option<Arc<Stored>>>),
    Fetch(Option<watch::Sender<Option<Arc<Stored>>>>),
}

pub struct TestProxy {
    pub addr: SocketAddr,
    pub counters: Arc<ProxyCounters>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestProxy {
    pub fn start(opts: ProxyOptions) -> TestProxy {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind test proxy");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let counters = Arc::new(ProxyCounters::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let c = counters.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                let cache: Cache = Arc::default();
                let accept = async {
                    loop {
                        let Ok((s, _)) = listener.accept().await else {
                            continue;
                        };
                        let _ = s.set_nodelay(true);
                        tokio::spawn(client(s, opts, cache.clone(), c.clone()));
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = rx => {}
                }
            });
            rt.shutdown_background();
        });
        TestProxy {
            addr,
            counters,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// An ideal cache.
    pub fn caching() -> TestProxy {
        TestProxy::caching_with(Faults::default())
    }

    /// A cache with deliberate faults.
    pub fn caching_with(faults: Faults) -> TestProxy {
        TestProxy::start(ProxyOptions {
            cache: true,
            faults,
            ..Default::default()
        })
    }

    pub fn hits(&self) -> u64 {
        self.counters.hits.load(Ordering::Relaxed)
    }
    pub fn misses(&self) -> u64 {
        self.counters.misses.load(Ordering::Relaxed)
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<RequestHead> {
    loop {
        if let Ok(Some(h)) = parse_request(buf, true) {
            return Some(h);
        }
        buf.reserve(4096);
        match s.read_buf(buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

async fn client(mut s: TcpStream, opts: ProxyOptions, cache: Cache, counters: Arc<ProxyCounters>) {
    let mut buf = Vec::with_capacity(4096);
    while let Some(req) = read_request(&mut s, &mut buf).await {
        buf.drain(..req.head_len);
        // The request body (POST), forwarded as is.
        let want = req.content_length.unwrap_or(0) as usize;
        while buf.len() < want {
            buf.reserve(want - buf.len());
            match s.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let body: Vec<u8> = buf.drain(..want).collect();
        let key = req.target.clone();
        let keep = |st: &Stored| st.cachable || opts.faults.cache_uncachable;
        let heed = !opts.faults.ignore_request_headers;
        let conditional = heed && req.ims.is_some();
        // Only GETs are looked up and stored. A reload always fetches (and
        // replaces the stored copy); a conditional miss fetches the whole
        // object, so the cache holds it for the requests that follow.
        let plan = if opts.cache && req.method == cacheoff_http::Method::Get {
            let mut map = cache.lock().expect("cache lock");
            match map.get(&key) {
                Some(Slot::Ready(hit)) if !(heed && req.no_cache) => Plan::Hit(hit.clone()),
                Some(Slot::Pending(rx)) if !(heed && req.no_cache) => Plan::Wait(rx.clone()),
                _ => {
                    let (tx, rx) = watch::channel(None);
                    map.insert(key.clone(), Slot::Pending(rx));
                    Plan::Fetch(Some(tx))
                }
            }
        } else {
            if opts.cache
                && req.method == cacheoff_http::Method::Post
                && !opts.faults.keep_after_post
            {
                // An unsafe method invalidates the URL (RFC 9111 §4.4).
                cache.lock().expect("cache lock").remove(&key);
            }
            Plan::Fetch(None)
        };
        let mut publish = None;
        let shared = match plan {
            Plan::Hit(hit) => Some(hit),
            Plan::Wait(mut rx) => {
                let got = rx
                    .wait_for(|v| v.is_some())
                    .await
                    .ok()
                    .and_then(|v| v.clone());
                got.filter(|st| keep(st))
            }
            Plan::Fetch(tx) => {
                publish = tx;
                None
            }
        };
        let hit = shared.is_some();
        let stored = match shared {
            Some(hit) => {
                counters.hits.fetch_add(1, Ordering::Relaxed);
                hit
            }
            None => {
                counters.misses.fetch_add(1, Ordering::Relaxed);
                // A fetch that fills the cache asks for the whole object.
                let whole = publish.is_some() && conditional;
                let fetched = fetch(&req, &body, whole).await.map(Arc::new);
                if publish.is_some() {
                    let mut map = cache.lock().expect("cache lock");
                    // Only the request that registered the fetch settles it.
                    if matches!(map.get(&key), Some(Slot::Pending(_))) {
                        match &fetched {
                            Some(f) if keep(f) => {
                                map.insert(key.clone(), Slot::Ready(f.clone()));
                            }
                            _ => {
                                map.remove(&key);
                            }
                        }
                    }
                }
                if let (Some(tx), Some(f)) = (publish.take(), &fetched) {
                    // Waiters get the reply; a dropped sender (failed fetch)
                    // sends them to the origin themselves.
                    let _ = tx.send(Some(f.clone()));
                }
                let Some(fetched) = fetched else {
                    let _ = s
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                };
                fetched
            }
        };
        if conditional && stored.status == 200 {
            if let (Some(ims), Some(lm)) = (req.ims, stored.last_modified) {
                if lm <= ims {
                    // A hit's 304 is built from the stored validator alone,
                    // as caches do; a miss's keeps the origin's echo.
                    let reply = not_modified(&stored, !hit);
                    if s.write_all(&reply).await.is_err() || !req.keep_alive {
                        return;
                    }
                    continue;
                }
            }
        }
        let mut out = Vec::with_capacity(stored.head.len() + stored.body.len());
        for line in stored.head.split(|&b| b == b'\n') {
            let l = line.strip_suffix(b"\r").unwrap_or(line);
            if l.is_empty() {
                continue;
            }
            let lower = l.to_ascii_lowercase();
            if lower.starts_with(b"connection:")
                || lower.starts_with(b"content-length:")
                || (opts.faults.strip_echo
                    && lower.starts_with(ECHO_HEADER.to_ascii_lowercase().as_bytes()))
            {
                continue;
            }
            out.extend_from_slice(l);
            out.extend_from_slice(b"\r\n");
        }
        let mut body = stored.body.clone();
        if opts.faults.corrupt_body && !body.is_empty() {
            let i = body.len() / 2;
            body[i] ^= 0x20;
        }
        match opts.framing {
            ReplyFraming::ContentLength => {
                out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
                out.extend_from_slice(b"Connection: keep-alive\r\n\r\n");
                out.extend_from_slice(&body);
            }
            ReplyFraming::Chunked => {
                out.extend_from_slice(
                    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
                );
                for piece in body.chunks(1000) {
                    write_chunk(&mut out, piece);
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
            ReplyFraming::CloseDelimited => {
                out.extend_from_slice(b"Connection: close\r\n\r\n");
                out.extend_from_slice(&body);
            }
        }
        let close = opts.framing == ReplyFraming::CloseDelimited || !req.keep_alive;
        if s.write_all(&out).await.is_err() || close {
            return;
        }
    }
}

/// A 304 for a stored reply: its `Last-Modified`, and its echo if asked.
fn not_modified(stored: &Stored, with_echo: bool) -> Vec<u8> {
    let mut out = b"HTTP/1.1 304 Not Modified\r\n".to_vec();
    let echo = ECHO_HEADER.to_ascii_lowercase();
    for line in stored.head.split(|&b| b == b'\n') {
        let l = line.strip_suffix(b"\r").unwrap_or(line);
        let lower = l.to_ascii_lowercase();
        if lower.starts_with(b"last-modified:") || (with_echo && lower.starts_with(echo.as_bytes()))
        {
            out.extend_from_slice(l);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"Connection: keep-alive\r\n\r\n");
    out
}

/// Fetches a request from its origin on a new connection; returns the
/// reply head (without the blank line) and body, and whether to cache it.
/// `whole` drops the request's `If-Modified-Since` so the origin sends the
/// object.
async fn fetch(req: &RequestHead, body: &[u8], whole: bool) -> Option<Stored> {
    let authority = req.authority()?;
    let mut up = TcpStream::connect(authority).await.ok()?;
    let mut out = Vec::new();
    out.extend_from_slice(
        format!("{} {} HTTP/1.1\r\n", req.method.as_str(), req.path()).as_bytes(),
    );
    for (name, value) in &req.headers {
        let n = name.to_ascii_lowercase();
        if n == "connection"
            || n == "proxy-connection"
            || n == "keep-alive"
            || (whole && n == "if-modified-since")
        {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(body);
    up.write_all(&out).await.ok()?;
    let mut buf = Vec::with_capacity(16 * 1024);
    let head = loop {
        buf.reserve(16 * 1024);
        if up.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
        if let Some(h) =
            parse_response(&buf, req.method == cacheoff_http::Method::Head, false).ok()?
        {
            break h;
        }
    };
    let mut body = buf.split_off(head.head_len);
    match head.framing {
        Framing::Length(n) => {
            while (body.len() as u64) < n {
                body.reserve(64 * 1024);
                if up.read_buf(&mut body).await.ok()? == 0 {
                    return None;
                }
            }
            body.truncate(n as usize);
        }
        Framing::UntilClose => {
            up.read_to_end(&mut body).await.ok()?;
        }
        Framing::Empty => body.clear(),
        Framing::Chunked => return None,
    }
    // Drop the blank line and the length; the client loop adds framing.
    let mut head_bytes = Vec::new();
    let mut last_modified = None;
    for line in buf[..head.head_len].split(|&b| b == b'\n') {
        let l = line.strip_suffix(b"\r").unwrap_or(line);
        let lower = l.to_ascii_lowercase();
        if l.is_empty() || lower.starts_with(b"content-length:") {
            continue;
        }
        if lower.starts_with(b"last-modified:") {
            last_modified = std::str::from_utf8(&l[b"last-modified:".len()..])
                .ok()
                .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
        }
        head_bytes.extend_from_slice(l);
        head_bytes.extend_from_slice(b"\r\n");
    }
    Some(Stored {
        status: head.status,
        head: head_bytes,
        body,
        cachable: head.status == 200 && head.cc_public && !head.cc_no_cache,
        last_modified,
    })
}
