//! A client connection: read a request (and its body, buffered), refuse
//! what cannot be copied, hand one copy per proxy to the proxies' queues,
//! relay the Collector's reply to the client unchanged while measuring
//! it, and only then read the next request (pipelined bytes stay in the
//! buffer). Nothing here waits for a copy.

use crate::claim::collector_claim;
use crate::copies::{CollectorReply, Job};
use crate::facts::{BodyTracker, Facts};
use crate::request::{absolute_target, forward, is_safe, refusal};
use crate::wire::{connect, read_head, read_some, Pool, WireError};
use crate::Shared;
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request_strict;
use cacheoff_http::{HeadScanner, RequestHead, ResponseHead};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

const CONNECT_REFUSAL: &str = "the Multiplier copies plain HTTP only: a CONNECT tunnel's bytes cannot be compared between proxies";

/// Serves one client connection until it closes, errs or idles out.
pub(crate) async fn serve(
    mut s: TcpStream,
    sh: Arc<Shared>,
    pool: std::rc::Rc<Pool>,
    worker: usize,
) {
    let _ = s.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut scanner = HeadScanner::new();
    loop {
        let head = match read_request(&mut s, &mut buf, &mut scanner, &sh).await {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(status) => {
                sh.requests.fetch_add(1, Ordering::Relaxed);
                return refuse(&mut s, &sh, status, "malformed or oversized request").await;
            }
        };
        sh.requests.fetch_add(1, Ordering::Relaxed);
        if head.method.as_str().eq_ignore_ascii_case("CONNECT") {
            return refuse(&mut s, &sh, 501, CONNECT_REFUSAL).await;
        }
        let Some(target) = absolute_target(&head) else {
            return refuse(
                &mut s,
                &sh,
                400,
                "a request to a proxy names http://host/...",
            )
            .await;
        };
        let body = match read_body(&mut s, &mut buf, &head, &sh).await {
            Ok(b) => b,
            Err(status) => {
                return refuse(&mut s, &sh, status, "bad or oversized request body").await
            }
        };
        scanner.reset();
        let keep_alive = head.keep_alive;
        let head_request = head.method.as_str() == "HEAD";
        let t0 = Instant::now();
        let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
        let request: Arc<[u8]> = forward(&head, &target, &body, id).into();
        let (tx, rx) = watch::channel(None);
        let copy = is_safe(&head.method) || sh.cfg.copy_unsafe;
        let url: Arc<str> = target.into();
        for p in &sh.proxies {
            if !copy {
                p.client.not_copied_unsafe.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let job = Job {
                id,
                request: request.clone(),
                url: url.clone(),
                head_request,
                queued: t0,
                facts: rx.clone(),
            };
            match p.tx.try_send(job) {
                Ok(()) => p.client.copied.fetch_add(1, Ordering::Relaxed),
                Err(_) => p.client.dropped.fetch_add(1, Ordering::Relaxed),
            };
        }
        drop(rx);
        let again = relay(&mut s, &request, head_request, t0, tx, &sh, &pool, worker).await;
        if !(again && keep_alive) {
            return;
        }
    }
}

async fn refuse(s: &mut TcpStream, sh: &Shared, status: u16, text: &str) {
    sh.refused.fetch_add(1, Ordering::Relaxed);
    let _ = tokio::time::timeout(sh.cfg.idle_timeout, s.write_all(&refusal(status, text))).await;
    let _ = s.shutdown().await;
}

/// The next request head, once whole; `Ok(None)` when the client closed
/// or idled out between requests; `Err(status)` for a bad one.
async fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    scanner: &mut HeadScanner,
    sh: &Shared,
) -> Result<Option<RequestHead>, u16> {
    let max = sh.cfg.max_header;
    loop {
        if let Some(n) = scanner.scan_within(buf, max).map_err(|e| e.status())? {
            return match parse_request_strict(&buf[..n], true, max) {
                Ok(Some(h)) => Ok(Some(h)),
                Ok(None) => Err(400),
                Err(e) => Err(e.status()),
            };
        }
        let between = buf.is_empty();
        let limit = if between {
            sh.cfg.client_idle_timeout
        } else {
            sh.cfg.idle_timeout
        };
        buf.reserve(8 * 1024);
        match tokio::time::timeout(limit, s.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) if between => return Ok(None),
            Ok(Ok(0)) | Ok(Err(_)) => return Err(400),
            Ok(Ok(_)) => {}
            Err(_) if between => return Ok(None),
            Err(_) => return Err(408),
        }
    }
}

/// Reads the request's body whole (it is copied), and drops the request
/// from `buf`, leaving any pipelined bytes after it.
async fn read_body(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    sh: &Shared,
) -> Result<Vec<u8>, u16> {
    let max = sh.cfg.max_request_body;
    let idle = sh.cfg.idle_timeout;
    let wants_continue = head
        .headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("expect") && v.eq_ignore_ascii_case(b"100-continue"));
    if wants_continue && (head.chunked || head.content_length.unwrap_or(0) > 0) {
        let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await;
    }
    buf.drain(..head.head_len);
    if head.chunked {
        let mut dec = ChunkedDecoder::default();
        let mut body = Vec::new();
        loop {
            let used = dec
                .decode(buf, |d| body.extend_from_slice(d))
                .map_err(|_| 400u16)?;
            buf.drain(..used);
            if body.len() as u64 > max {
                return Err(413);
            }
            if dec.is_done() {
                return Ok(body);
            }
            more(s, buf, idle).await?;
        }
    }
    let n = head.content_length.unwrap_or(0);
    if n > max {
        return Err(413);
    }
    let n = n as usize;
    while buf.len() < n {
        more(s, buf, idle).await?;
    }
    Ok(buf.drain(..n).collect())
}

/// More request bytes: 400 if the client closed, 408 if it idled.
async fn more(s: &mut TcpStream, buf: &mut Vec<u8>, idle: Duration) -> Result<(), u16> {
    match read_some(s, buf, idle, WireError::IdleTimeout(idle)).await {
        Ok(0) | Err(WireError::Io(_)) => Err(400),
        Ok(_) => Ok(()),
        Err(_) => Err(408),
    }
}

async fn write_client(s: &mut TcpStream, bytes: &[u8], idle: Duration) -> bool {
    matches!(
        tokio::time::timeout(idle, s.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// Sends the request to the Collector and streams its reply to the client
/// unchanged, recording its facts for the copies; true if the client
/// connection may serve another request.
#[allow(clippy::too_many_arguments)]
async fn relay(
    client: &mut TcpStream,
    request: &[u8],
    head_request: bool,
    t0: Instant,
    facts: watch::Sender<Option<Arc<CollectorReply>>>,
    sh: &Shared,
    pool: &Pool,
    worker: usize,
) -> bool {
    let cfg = &sh.cfg;
    let t = sh.reply_timeouts();
    let mut failure = None;
    let mut got = None;
    for attempt in 0..2 {
        let pooled = if attempt == 0 { pool.take() } else { None };
        let reused = pooled.is_some();
        let mut c = match pooled {
            Some(c) => c,
            None => match connect(cfg.collector, cfg.connect_timeout).await {
                Ok(c) => c,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            },
        };
        if let Err(e) = c.write_all(request).await {
            failure = Some(e.into());
            if reused {
                continue;
            }
            break;
        }
        let mut buf = Vec::with_capacity(16 * 1024);
        let mut first = None;
        match read_head(&mut c, &mut buf, head_request, t, &mut first).await {
            Ok(h) => {
                got = Some((c, h, buf));
                break;
            }
            Err(WireError::Closed | WireError::Io(_)) if reused && buf.is_empty() => continue,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let collector_acc = &sh.collector[worker];
    let Some((mut c, head, mut buf)) = got else {
        collector_acc
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .error();
        let status = match failure {
            Some(
                WireError::ConnectTimeout
                | WireError::FirstByteTimeout(_)
                | WireError::IdleTimeout(_),
            ) => 504,
            _ => 502,
        };
        let why = failure.map_or_else(|| "no reply".to_string(), |e| e.to_string());
        let text = format!("the Collector failed: {why}");
        let _ = write_client(client, &refusal(status, &text), cfg.idle_timeout).await;
        return false;
    };
    let mut body = BodyTracker::new(head.framing);
    // The facts go out as soon as the body is whole, before its last bytes
    // are written to the client: the copies need not wait for a slow
    // client, nor lose their facts if the Multiplier stops just then.
    let mut published = None;
    let rest = buf.len() - head.head_len;
    let (used, mut extra) = match body.feed(&buf[head.head_len..]) {
        Ok(used) => (used, used < rest),
        Err(_) => (0, true),
    };
    if body.done() {
        published = Some(publish(&facts, collector_acc, &head, &body, t0));
    }
    // The head and the body bytes that came with it, in one write.
    let end = head.head_len + used;
    let mut client_ok = write_client(client, &buf[..end], cfg.idle_timeout).await;
    while !body.done() && !extra {
        buf.clear();
        match read_some(&mut c, &mut buf, t.idle, WireError::IdleTimeout(t.idle)).await {
            Ok(0) => {
                body.at_eof();
                published = Some(publish(&facts, collector_acc, &head, &body, t0));
                if client_ok {
                    let _ = client.shutdown().await;
                }
                break;
            }
            Ok(_) => match body.feed(&buf) {
                Ok(used) => {
                    extra = used < buf.len();
                    if body.done() {
                        published = Some(publish(&facts, collector_acc, &head, &body, t0));
                    }
                    if client_ok && used > 0 {
                        client_ok = write_client(client, &buf[..used], cfg.idle_timeout).await;
                    }
                }
                Err(_) => break,
            },
            Err(_) => break,
        }
    }
    let complete = published.unwrap_or_else(|| publish(&facts, collector_acc, &head, &body, t0));
    if complete && head.keep_alive && !extra {
        pool.put(c);
    }
    client_ok && complete && head.keep_alive && !extra
}

/// Records the Collector's reply and, if it is whole, hands its facts to
/// the copies; returns whether it was whole.
fn publish(
    tx: &watch::Sender<Option<Arc<CollectorReply>>>,
    acc: &std::sync::Mutex<crate::stats::CollectorAcc>,
    head: &ResponseHead,
    body: &BodyTracker,
    t0: Instant,
) -> bool {
    let rt_us = t0.elapsed().as_micros().try_into().unwrap_or(u64::MAX);
    let facts = Facts::of_head(head).with_body(body);
    let complete = facts.complete;
    let mut acc = acc.lock().unwrap_or_else(|e| e.into_inner());
    if complete {
        acc.reply(rt_us, collector_claim(&head.headers));
        let _ = tx.send(Some(Arc::new(CollectorReply { facts, rt_us })));
    } else {
        acc.error();
    }
    complete
}
