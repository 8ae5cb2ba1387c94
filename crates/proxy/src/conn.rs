//! One client connection: read requests, answer each from the store or
//! the origin, log it. The decisions (hit, revalidate, miss, collapse)
//! are in [`answer`]; the rest is framing.

use crate::access_log::{LogCode, LogEntry};
use crate::config::Upstream;
use crate::fault::Fault;
use crate::inflight::{self, Join, Leader};
use crate::replay;
use crate::upstream::{
    exchange, is_one_of, origin_request, Conditional, FetchError, OriginReply, HOP_BY_HOP,
};
use crate::Shared;
use bytes::Bytes;
use cacheoff_cache::freshness::storable;
use cacheoff_cache::{key_of, Directives, Freshness, Object, Timing};
use cacheoff_http::chunked::{write_chunk, ChunkedDecoder};
use cacheoff_http::date;
use cacheoff_http::request::parse_request_within;
use cacheoff_http::{HttpError, Method, RequestHead};
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::upstream::Pool;

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// Reply headers not passed on or stored as they are: hop by hop ones, and
/// the framing and age the proxy writes itself.
fn skip_reply_header(name: &str) -> bool {
    is_one_of(name, &HOP_BY_HOP) || is_one_of(name, &["content-length", "age"])
}

/// The end-to-end header lines of an origin reply.
fn end_to_end(reply: &OriginReply) -> Vec<u8> {
    let mut out = Vec::with_capacity(reply.raw_head.len());
    for (name, value) in &reply.head.headers {
        if skip_reply_header(name) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Where a request goes.
struct Target {
    /// The cache key and the logged URL: `http://host:port/path`.
    url: String,
    authority: String,
    path: String,
}

fn target(req: &RequestHead, upstream: &Upstream) -> Result<Target, u16> {
    if let Method::Other(m) = &req.method {
        if m == "CONNECT" {
            return Err(501);
        }
    }
    let (authority, path) = match upstream {
        Upstream::Reverse(origin) => (origin.clone(), req.path().to_string()),
        Upstream::Forward => {
            let t = &req.target;
            let scheme_ok = t.len() > 7 && t[..7].eq_ignore_ascii_case("http://");
            if !scheme_ok {
                // Origin-form to a forward proxy, or a scheme we do not speak.
                return Err(if t.starts_with('/') { 400 } else { 501 });
            }
            let rest = &t[7..];
            let (auth, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            if auth.is_empty() || auth.contains('@') {
                return Err(400);
            }
            (auth.to_ascii_lowercase(), path.to_string())
        }
    };
    Ok(Target {
        url: format!("http://{authority}{path}"),
        authority,
        path,
    })
}

/// What one transaction did, for the log and the counters.
struct Done {
    code: LogCode,
    status: u16,
    bytes: u64,
    peer: Option<IpAddr>,
    content_type: String,
    /// The connection can carry another request.
    keep_alive: bool,
}

impl Done {
    fn error(status: u16, bytes: u64) -> Done {
        Done {
            code: LogCode::None,
            status,
            bytes,
            peer: None,
            content_type: String::new(),
            keep_alive: false,
        }
    }
}

fn content_type_of<'a>(mut headers: impl Iterator<Item = (&'a str, &'a [u8])>) -> String {
    headers
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

fn error_reply(status: u16) -> Vec<u8> {
    let text = reason(status);
    format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nX-Cache: MISS\r\nConnection: close\r\n\r\n{text}\n",
        text.len() + 1
    )
    .into_bytes()
}

pub(crate) async fn serve(mut s: TcpStream, peer: SocketAddr, sh: Arc<Shared>, pool: Rc<Pool>) {
    sh.stats.connections.fetch_add(1, Ordering::Relaxed);
    let _ = s.set_nodelay(true);
    if !sh.cfg.allows(peer.ip()) {
        let done = Done {
            code: LogCode::Denied,
            ..refuse(&mut s, &sh, 403).await
        };
        log(&sh, peer.ip(), Instant::now(), "-", "-", &done);
        return;
    }
    let mut buf = Vec::with_capacity(4096);
    loop {
        let req = match read_head(&mut s, &mut buf, &sh).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(status) => {
                let done = refuse(&mut s, &sh, status).await;
                log(&sh, peer.ip(), Instant::now(), "-", "-", &done);
                return;
            }
        };
        let t0 = Instant::now();
        buf.drain(..req.head_len);
        let ready = match request_body(&mut s, &mut buf, &req, &sh).await {
            Ok(body) => target(&req, &sh.cfg.upstream).map(|t| (t, body)),
            Err(status) => Err(status),
        };
        let (done, url) = match ready {
            Ok((t, body)) => (
                answer(
                    &mut s,
                    &Xact {
                        req: &req,
                        t: &t,
                        body: &body,
                        t0,
                        sh: &sh,
                        pool: &pool,
                    },
                )
                .await,
                t.url,
            ),
            Err(status) => (refuse(&mut s, &sh, status).await, req.target.clone()),
        };
        log(&sh, peer.ip(), t0, req.method.as_str(), &url, &done);
        if !done.keep_alive {
            return;
        }
    }
}

/// Answers a request the proxy will not serve, and closes.
async fn refuse(s: &mut TcpStream, sh: &Shared, status: u16) -> Done {
    sh.stats.client_errors.fetch_add(1, Ordering::Relaxed);
    let reply = error_reply(status);
    let _ = s.write_all(&reply).await;
    Done::error(status, reply.len() as u64)
}

fn log(sh: &Shared, client: IpAddr, t0: Instant, method: &str, url: &str, d: &Done) {
    if let Some(l) = &sh.log {
        l.write(&LogEntry {
            finished: SystemTime::now(),
            elapsed: t0.elapsed(),
            client,
            code: d.code,
            status: d.status,
            bytes: d.bytes,
            method,
            url,
            peer: d.peer,
            content_type: &d.content_type,
        });
    }
}

/// Reads the next request head; `Ok(None)` when the client is done (or
/// idle too long), `Err(status)` for a request that cannot be served.
async fn read_head(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    sh: &Shared,
) -> Result<Option<RequestHead>, u16> {
    let limit = sh.cfg.max_header;
    loop {
        if !buf.is_empty() {
            match parse_request_within(buf, true, limit) {
                Ok(Some(h)) => return Ok(Some(h)),
                Ok(None) => {}
                Err(HttpError::HeadTooLarge(_)) => return Err(431),
                Err(_) => return Err(400),
            }
        }
        buf.reserve(4096);
        match tokio::time::timeout(sh.cfg.client_idle_timeout, s.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Ok(None),
            Ok(Ok(_)) => {}
        }
    }
}

async fn request_body(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    req: &RequestHead,
    sh: &Shared,
) -> Result<Vec<u8>, u16> {
    let limit = sh.cfg.max_request_body;
    if req.chunked {
        let mut dec = ChunkedDecoder::default();
        let mut body = Vec::new();
        loop {
            let used = dec
                .decode(buf, |d| body.extend_from_slice(d))
                .map_err(|_| 400u16)?;
            buf.drain(..used);
            if dec.is_done() {
                return Ok(body);
            }
            if body.len() as u64 > limit {
                return Err(413);
            }
            read_more(s, buf, sh).await?;
        }
    }
    let want = req.content_length.unwrap_or(0);
    if want > limit {
        return Err(413);
    }
    while (buf.len() as u64) < want {
        read_more(s, buf, sh).await?;
    }
    Ok(buf.drain(..want as usize).collect())
}

async fn read_more(s: &mut TcpStream, buf: &mut Vec<u8>, sh: &Shared) -> Result<(), u16> {
    buf.reserve(16 * 1024);
    match tokio::time::timeout(sh.cfg.read_timeout, s.read_buf(buf)).await {
        Ok(Ok(n)) if n > 0 => Ok(()),
        _ => Err(400),
    }
}

/// How a stored object is being served.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Served {
    Hit,
    Revalidated,
    /// Fetched for this very request (a miss whose 304 we build).
    Miss,
}

/// One request being answered: what every step needs.
#[derive(Clone, Copy)]
struct Xact<'a> {
    req: &'a RequestHead,
    t: &'a Target,
    /// The request body (uploads).
    body: &'a [u8],
    /// When the request head arrived.
    t0: Instant,
    sh: &'a Arc<Shared>,
    pool: &'a Pool,
}

/// Answers one request.
async fn answer(s: &mut TcpStream, x: &Xact<'_>) -> Done {
    let Xact { req, t, sh, .. } = *x;
    sh.stats.requests.fetch_add(1, Ordering::Relaxed);
    if !sh.cfg.faults.is_empty() {
        if let Some(done) = misbehave(s, sh).await {
            return done;
        }
    }
    let cacheable_method = matches!(req.method, Method::Get | Method::Head);
    if !cacheable_method {
        // Unsafe methods invalidate what is stored for the URL (RFC 9111 §4.4).
        let safe = matches!(&req.method, Method::Other(m) if m == "OPTIONS" || m == "TRACE");
        if !safe {
            remove(sh, &t.url).await;
        }
        return forward(s, x, None, LogCode::Miss).await;
    }
    let directives = Directives::parse(req.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
    let reload = (directives.no_cache || directives.max_age == Some(0))
        && !sh.cfg.faults.strikes(Fault::ReloadHit);
    let key = key_of(&t.url);
    if reload {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        let leader = if req.method == Method::Get {
            sh.inflight.lead(key)
        } else {
            None
        };
        return forward(s, x, leader, LogCode::ClientRefreshMiss).await;
    }
    if let Some(obj) = lookup(sh, &t.url).await {
        if sh.cfg.collector
            || obj.fresh.is_fresh(sh.cfg.clock.unix_now())
            || sh.cfg.faults.strikes(Fault::Stale)
        {
            sh.stats.hits.fetch_add(1, Ordering::Relaxed);
            return serve_stored(s, x, &obj, Served::Hit).await;
        }
        if req.method == Method::Get {
            if let Some(leader) = sh.inflight.lead(key) {
                return revalidate(s, x, obj, leader).await;
            }
        }
        // HEAD of a stale object, or a revalidation under way: ask the origin.
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, None, LogCode::Miss).await;
    }
    if req.method == Method::Head {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, None, LogCode::Miss).await;
    }
    match sh.inflight.join(key) {
        Join::Lead(leader) => {
            sh.stats.misses.fetch_add(1, Ordering::Relaxed);
            forward(s, x, Some(leader), LogCode::Miss).await
        }
        Join::Wait(rx) => match inflight::wait(rx).await {
            Some(obj) => {
                sh.stats.hits.fetch_add(1, Ordering::Relaxed);
                sh.stats.collapsed.fetch_add(1, Ordering::Relaxed);
                serve_stored(s, x, &obj, Served::Hit).await
            }
            None => {
                sh.stats.misses.fetch_add(1, Ordering::Relaxed);
                forward(s, x, None, LogCode::Miss).await
            }
        },
    }
}

async fn lookup(sh: &Arc<Shared>, url: &str) -> Option<Arc<Object>> {
    if let Some(o) = sh.cache.get_memory(url) {
        return Some(o);
    }
    if !sh.cache.has_disk() {
        return None;
    }
    let (sh, url) = (sh.clone(), url.to_string());
    tokio::task::spawn_blocking(move || sh.cache.get_disk(&url))
        .await
        .ok()
        .flatten()
}

async fn remove(sh: &Arc<Shared>, url: &str) {
    if sh.cache.has_disk() {
        let (sh, url) = (sh.clone(), url.to_string());
        let _ = tokio::task::spawn_blocking(move || sh.cache.remove(&url)).await;
    } else {
        sh.cache.remove(url);
    }
}

fn store(sh: &Arc<Shared>, obj: Arc<Object>) {
    sh.cache.put_memory(obj.clone());
    if sh.cache.has_disk() {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || {
            if sh.cache.put_disk(&obj).is_err() {
                sh.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// The stored `Last-Modified`, for IMS decisions (never `Expires`).
fn last_modified(obj: &Object) -> Option<u64> {
    obj.fresh.last_modified
}

/// Writes a stored object: 304 if the client's `If-Modified-Since` is not
/// older than its `Last-Modified`, else the whole reply (head only for
/// HEAD). The Collector replays the recorded origin timing on hits.
async fn serve_stored(s: &mut TcpStream, x: &Xact<'_>, obj: &Object, how: Served) -> Done {
    let Xact { req, t0, sh, .. } = *x;
    let by_expires = req.ims.is_some()
        && obj.fresh.is_fresh(sh.cfg.clock.unix_now())
        && sh.cfg.faults.strikes(Fault::ImsByExpires);
    let not_modified = obj.status == 200
        && (by_expires
            || matches!((req.ims, last_modified(obj)), (Some(ims), Some(lm)) if lm <= ims));
    let status = if not_modified { 304 } else { obj.status };
    let with_body = !not_modified && req.method != Method::Head;
    let x_cache = match how {
        Served::Hit => "HIT",
        Served::Revalidated => "REVALIDATED",
        Served::Miss => "MISS",
    };
    let body: &[u8] = if with_body { &obj.body } else { &[] };
    // Head and body in one buffer and one write: the hit path's cost.
    let mut out = Vec::with_capacity(obj.head.len() + 192 + body.len());
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    out.extend_from_slice(&obj.head);
    if how != Served::Miss {
        let _ = write!(
            out,
            "Age: {}\r\n",
            obj.fresh.current_age(sh.cfg.clock.unix_now())
        );
    }
    if !not_modified {
        let _ = write!(out, "Content-Length: {}\r\n", obj.body.len());
    }
    let _ = write!(out, "X-Cache: {x_cache}\r\n");
    out.extend_from_slice(if req.keep_alive {
        b"Connection: keep-alive\r\n\r\n".as_slice()
    } else {
        b"Connection: close\r\n\r\n".as_slice()
    });
    let head_len = out.len();
    let sent = match (sh.cfg.collector && how == Served::Hit, obj.timing) {
        (true, Some(timing)) => {
            // A 304 costs what an origin exchange without a body would.
            let timing = if with_body {
                timing
            } else {
                Timing {
                    transfer: std::time::Duration::ZERO,
                    ..timing
                }
            };
            let sent = replay::paced(s, &out, body, timing, t0).await;
            if sent.is_ok() && with_body {
                sh.replay.record(obj.key(), timing.served, t0.elapsed());
            }
            sent
        }
        _ if how == Served::Hit && with_body && !sh.cfg.faults.is_empty() => {
            damaged(s, sh, out, body).await
        }
        _ if how == Served::Hit && !with_body && sh.cfg.faults.strikes(Fault::BodilessBody) => {
            out.extend_from_slice(&obj.body);
            s.write_all(&out).await
        }
        _ => {
            out.extend_from_slice(body);
            s.write_all(&out).await
        }
    };
    Done {
        code: match how {
            Served::Hit if not_modified => LogCode::ImsHit,
            Served::Hit => LogCode::MemHit,
            Served::Revalidated => LogCode::RefreshUnmodified,
            Served::Miss => LogCode::Miss,
        },
        status,
        bytes: (head_len + body.len()) as u64,
        peer: None,
        content_type: if sh.log.is_some() {
            content_type_of(obj.headers())
        } else {
            String::new()
        },
        keep_alive: sent.is_ok() && req.keep_alive,
    }
}

/// A stale object: ask the origin whether it changed.
async fn revalidate(s: &mut TcpStream, x: &Xact<'_>, obj: Arc<Object>, leader: Leader) -> Done {
    let Xact {
        req, t, sh, pool, ..
    } = *x;
    sh.stats.stale.fetch_add(1, Ordering::Relaxed);
    let Some(lm) = last_modified(&obj) else {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, Some(leader), LogCode::RefreshModified).await;
    };
    let date = date::format(lm as i64);
    let sent_at = sh.cfg.clock.unix_now();
    let request = origin_request(
        req,
        &t.authority,
        &t.path,
        Conditional::Since(&date),
        &[],
        sh.cfg.collector,
    );
    let reply = match exchange(pool, &sh.cfg, &t.authority, &request, false, true).await {
        Ok(r) => r,
        Err(e) => return origin_failed(s, e, sh).await,
    };
    if reply.head.status != 304 {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return relay(s, x, reply, Some(leader), LogCode::RefreshModified, sent_at).await;
    }
    sh.stats.revalidated.fetch_add(1, Ordering::Relaxed);
    let by = Freshness::of_reply(
        reply
            .head
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice())),
        sent_at,
        sh.cfg.clock.unix_now(),
    );
    // The 304's headers replace the stored ones of the same name.
    let fresh_head = end_to_end(&reply);
    let mut head = Vec::with_capacity(obj.head.len() + fresh_head.len());
    let replaced = |name: &str| {
        reply
            .head
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    for (name, value) in obj.headers() {
        if !replaced(name) {
            head.extend_from_slice(format!("{name}: ").as_bytes());
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
    }
    head.extend_from_slice(&fresh_head);
    let updated = Arc::new(Object {
        url: obj.url.clone(),
        status: obj.status,
        head: Bytes::from(head),
        body: obj.body.clone(),
        fresh: obj.fresh.revalidated(&by),
        timing: obj.timing,
    });
    reply.release(pool, &sh.cfg);
    store(sh, updated.clone());
    leader.finish(Some(updated.clone()));
    serve_stored(s, x, &updated, Served::Revalidated).await
}

/// Sends the request to the origin and relays the reply.
async fn forward(s: &mut TcpStream, x: &Xact<'_>, leader: Option<Leader>, code: LogCode) -> Done {
    let Xact {
        req,
        t,
        body,
        sh,
        pool,
        ..
    } = *x;
    // A fetch that may fill the store asks for the whole object; the
    // client's own condition is then answered from it.
    let cond = if leader.is_some() {
        Conditional::Strip
    } else {
        Conditional::Keep
    };
    let sent_at = sh.cfg.clock.unix_now();
    let request = origin_request(req, &t.authority, &t.path, cond, body, sh.cfg.collector);
    let idempotent = matches!(req.method, Method::Get | Method::Head);
    match exchange(
        pool,
        &sh.cfg,
        &t.authority,
        &request,
        req.method == Method::Head,
        idempotent,
    )
    .await
    {
        Ok(reply) => relay(s, x, reply, leader, code, sent_at).await,
        Err(e) => origin_failed(s, e, sh).await,
    }
}

/// The client learns that the origin failed, as a proxy's error status.
async fn origin_failed(s: &mut TcpStream, e: FetchError, sh: &Shared) -> Done {
    sh.stats.origin_errors.fetch_add(1, Ordering::Relaxed);
    let status = e.status();
    let out = error_reply(status);
    let _ = s.write_all(&out).await;
    Done::error(status, out.len() as u64)
}

/// Relays an origin reply to the client, storing it when allowed.
async fn relay(
    s: &mut TcpStream,
    x: &Xact<'_>,
    mut reply: OriginReply,
    leader: Option<Leader>,
    code: LogCode,
    sent_at: u64,
) -> Done {
    let Xact {
        req,
        t,
        t0,
        sh,
        pool,
        ..
    } = *x;
    let headers = || {
        reply
            .head
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
    };
    let status = reply.head.status;
    let content_type = content_type_of(headers());
    let fits = reply.length().is_none_or(|n| n <= sh.cfg.max_object);
    // The Collector stores everything; so does a proxy with this fault,
    // which also keeps the copy fresh for an hour.
    let store_anyway =
        status == 200 && (sh.cfg.collector || sh.cfg.faults.strikes(Fault::CacheUncachable));
    let may_store = leader.is_some()
        && fits
        && if store_anyway {
            true
        } else {
            let req_cc =
                Directives::parse(req.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
            let authorized = req
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
            let has_expires = headers().any(|(n, _)| n.eq_ignore_ascii_case("expires"));
            storable(
                status,
                &req_cc,
                &Directives::parse(headers()),
                has_expires,
                authorized,
            )
        };
    let lm = headers()
        .find(|(n, _)| n.eq_ignore_ascii_case("last-modified"))
        .and_then(|(_, v)| date::parse(v));
    let mut fresh = Freshness::of_reply(headers(), sent_at, sh.cfg.clock.unix_now());
    if store_anyway && !sh.cfg.collector {
        fresh.no_cache = false;
        fresh.max_age = Some(3600);
    }
    // The client asked conditionally but we fetched the whole object.
    let client_304 = leader.is_some()
        && status == 200
        && matches!((req.ims, lm), (Some(ims), Some(lm)) if lm <= ims);
    let e2e = Bytes::from(end_to_end(&reply));
    let stream_to_client = !client_304;
    let chunk_to_client = reply.length().is_none() && req.minor >= 1;
    let keep_alive = req.keep_alive && (reply.length().is_some() || chunk_to_client);
    let mut written = 0u64;
    let mut client_ok = true;
    if stream_to_client {
        let mut head = Vec::with_capacity(e2e.len() + 128);
        head.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason(status)).as_bytes());
        head.extend_from_slice(&e2e);
        match reply.length() {
            // A HEAD reply states the length its GET would have.
            _ if req.method == Method::Head => {
                let length = reply
                    .head
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-length"));
                if let Some((_, v)) = length {
                    head.extend_from_slice(b"Content-Length: ");
                    head.extend_from_slice(v);
                    head.extend_from_slice(b"\r\n");
                }
            }
            Some(n) if status != 304 && status != 204 => {
                head.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
            }
            Some(_) => {}
            None if chunk_to_client => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            None => {}
        }
        head.extend_from_slice(b"X-Cache: MISS\r\n");
        head.extend_from_slice(if keep_alive {
            b"Connection: keep-alive\r\n\r\n".as_slice()
        } else {
            b"Connection: close\r\n\r\n".as_slice()
        });
        written += head.len() as u64;
        client_ok = s.write_all(&head).await.is_ok();
    }
    let mut stored_body = Vec::new();
    let mut storing = may_store;
    let mut piece = Vec::with_capacity(64 * 1024);
    let mut cut_off = false;
    loop {
        piece.clear();
        match reply.next(&mut piece).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(_) => {
                sh.stats.origin_errors.fetch_add(1, Ordering::Relaxed);
                // The client sees a cut-off reply, as from the origin.
                cut_off = true;
                break;
            }
        }
        if storing {
            if (stored_body.len() + piece.len()) as u64 > sh.cfg.max_object {
                storing = false;
                stored_body = Vec::new();
            } else {
                stored_body.extend_from_slice(&piece);
            }
        }
        if stream_to_client && client_ok && !piece.is_empty() {
            let res = if chunk_to_client {
                let mut c = Vec::with_capacity(piece.len() + 16);
                write_chunk(&mut c, &piece);
                written += c.len() as u64;
                s.write_all(&c).await
            } else {
                written += piece.len() as u64;
                s.write_all(&piece).await
            };
            client_ok = res.is_ok();
            // Nobody is reading and nobody will use it: stop fetching.
            if !client_ok && !storing {
                cut_off = true;
                break;
            }
        }
    }
    if cut_off {
        return Done {
            code,
            status,
            bytes: written,
            peer: reply.peer,
            content_type,
            keep_alive: false,
        };
    }
    if stream_to_client && client_ok && chunk_to_client {
        written += 5;
        client_ok = s.write_all(b"0\r\n\r\n").await.is_ok();
    }
    let peer = reply.peer;
    let first_byte = reply.first_byte;
    let last_byte = reply.last_byte;
    let object = storing.then(|| {
        Arc::new(Object {
            url: t.url.clone(),
            status,
            head: e2e.clone(),
            body: Bytes::from(stored_body),
            fresh,
            timing: Some(Timing {
                first_byte: first_byte.saturating_duration_since(t0),
                transfer: last_byte.saturating_duration_since(first_byte),
                served: t0.elapsed(),
            }),
        })
    });
    reply.release(pool, &sh.cfg);
    if let Some(o) = &object {
        store(sh, o.clone());
    }
    if let Some(l) = leader {
        l.finish(object.clone());
    }
    if client_304 {
        // Built from the fetched reply, stored or not.
        let o = object.unwrap_or_else(|| {
            Arc::new(Object {
                url: t.url.clone(),
                status,
                head: e2e,
                body: Bytes::new(),
                fresh,
                timing: None,
            })
        });
        return serve_stored(s, x, &o, Served::Miss).await;
    }
    Done {
        code,
        status,
        bytes: written,
        peer,
        content_type,
        keep_alive: keep_alive && client_ok,
    }
}

/// Request-level faults: a reply that is no reply.
async fn misbehave(s: &mut TcpStream, sh: &Shared) -> Option<Done> {
    let faults = &sh.cfg.faults;
    let (status, out): (u16, Vec<u8>) = if faults.strikes(Fault::Drop) {
        // Hold the request until the client gives up.
        let mut one = [0u8; 1];
        let _ = tokio::time::timeout(sh.cfg.client_idle_timeout, s.read(&mut one)).await;
        (0, Vec::new())
    } else if faults.strikes(Fault::Garbage) {
        (0, b"\x16\x03\x01 this is not HTTP at all\r\n\r\n".to_vec())
    } else if faults.strikes(Fault::HugeHeader) {
        let mut out = b"HTTP/1.1 200 OK\r\nX-Padding: ".to_vec();
        out.resize(out.len() + 100 * 1024, b'a');
        out.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        (200, out)
    } else {
        return None;
    };
    let _ = s.write_all(&out).await;
    Some(Done::error(status, out.len() as u64))
}

thread_local! {
    /// The last body a worker served, for the wrong-object fault.
    static LAST_BODY: std::cell::RefCell<Bytes> = const { std::cell::RefCell::new(Bytes::new()) };
}

/// Writes a hit's head and body, damaged if a body fault strikes.
async fn damaged(
    s: &mut TcpStream,
    sh: &Shared,
    mut out: Vec<u8>,
    body: &[u8],
) -> std::io::Result<()> {
    let faults = &sh.cfg.faults;
    let half = body.len() / 2;
    let previous = LAST_BODY.with(|b| b.replace(Bytes::copy_from_slice(body)));
    if faults.strikes(Fault::FlipByte) {
        out.extend_from_slice(body);
        let mid = out.len() - body.len() + half;
        out[mid] ^= 0x01;
        return s.write_all(&out).await;
    }
    if faults.strikes(Fault::WrongObject) && !previous.is_empty() {
        out.extend(previous.iter().cycle().take(body.len()));
        return s.write_all(&out).await;
    }
    if faults.strikes(Fault::Truncate) {
        // A consistent message that is too short: its length says so.
        let head = String::from_utf8_lossy(&out).replace(
            &format!("Content-Length: {}\r\n", body.len()),
            &format!("Content-Length: {half}\r\n"),
        );
        let mut short = head.into_bytes();
        short.extend_from_slice(&body[..half]);
        return s.write_all(&short).await;
    }
    let reset = faults.strikes(Fault::Reset);
    if reset || faults.strikes(Fault::Close) {
        out.extend_from_slice(&body[..half]);
        s.write_all(&out).await?;
        if reset {
            // SO_LINGER 0: closing sends a reset, not a FIN.
            let _ = socket2::SockRef::from(&*s).set_linger(Some(std::time::Duration::ZERO));
        }
        return Err(std::io::ErrorKind::ConnectionAborted.into());
    }
    if faults.strikes(Fault::Stall) {
        out.extend_from_slice(&body[..half]);
        s.write_all(&out).await?;
        // Hold the connection until the client gives up.
        let mut one = [0u8; 1];
        let _ = tokio::time::timeout(sh.cfg.client_idle_timeout, s.read(&mut one)).await;
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    if faults.strikes(Fault::EmptyBody) {
        let head = String::from_utf8_lossy(&out).replace(
            &format!("Content-Length: {}\r\n", body.len()),
            "Content-Length: 0\r\n",
        );
        return s.write_all(head.as_bytes()).await;
    }
    if faults.strikes(Fault::BadMd5) {
        // Before the blank line that ends the head; the last one counts.
        out.truncate(out.len() - 2);
        out.extend_from_slice(b"Content-MD5: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n");
        out.extend_from_slice(body);
        return s.write_all(&out).await;
    }
    if faults.strikes(Fault::Drip) {
        out.extend_from_slice(body);
        for b in out {
            s.write_all(&[b]).await?;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        return Ok(());
    }
    out.extend_from_slice(body);
    s.write_all(&out).await
}
