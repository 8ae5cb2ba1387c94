//! The origin side: connections (pooled per worker, or one per request for
//! the Collector), the forwarded request, and the reply read piece by
//! piece so misses stream to the client while they are stored.
//!
//! Ownership: a [`Pool`] belongs to one worker thread (`Rc`, no locks).

use crate::config::{ProxyConfig, Upstream};
use cacheoff_access::{admitted_resolved, Dest};
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::response::parse_response_within;
use cacheoff_http::{Framing, HttpError, RequestHead, ResponseHead};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why an origin exchange failed; each maps to the status the client gets.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot resolve or connect to origin {0}: {1}")]
    Connect(String, io::Error),
    #[error("origin {0} resolves to an address --allow-dest does not admit")]
    Denied(String),
    #[error("origin {0} timed out")]
    Timeout(String),
    #[error("origin closed the connection early")]
    Closed,
    #[error("origin sent a bad reply: {0}")]
    BadReply(#[from] HttpError),
    #[error("origin connection failed: {0}")]
    Io(#[from] io::Error),
}

impl FetchError {
    /// The status a client gets instead of the reply (as Squid answers).
    pub fn status(&self) -> u16 {
        match self {
            FetchError::Connect(..) => 503,
            FetchError::Denied(_) => 403,
            FetchError::Timeout(_) => 504,
            _ => 502,
        }
    }
}

/// Idle origin connections of one worker, by `host:port`.
#[derive(Default)]
pub struct Pool {
    idle: RefCell<HashMap<String, Vec<(TcpStream, Instant)>>>,
}

impl Pool {
    fn take(&self, authority: &str, max_idle: Duration) -> Option<TcpStream> {
        let mut idle = self.idle.borrow_mut();
        let list = idle.get_mut(authority)?;
        while let Some((conn, since)) = list.pop() {
            if since.elapsed() >= max_idle {
                continue;
            }
            // A closed (or chatty) idle connection is of no use.
            let mut probe = [0u8; 1];
            match conn.try_read(&mut probe) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(conn),
                _ => continue,
            }
        }
        None
    }

    fn give(&self, authority: &str, conn: TcpStream, cap: usize) {
        let mut idle = self.idle.borrow_mut();
        let list = idle.entry(authority.to_string()).or_default();
        if list.len() < cap {
            list.push((conn, Instant::now()));
        }
    }
}

/// Which conditional headers the forwarded request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conditional<'a> {
    /// The client's own.
    Keep,
    /// None, so the origin sends the whole object for the store.
    Strip,
    /// Revalidate a stored copy by its validators (RFC 9111 §4.3.1): its
    /// entity tag (`If-None-Match`) and last modification date
    /// (`If-Modified-Since`), whichever it has.
    Validate {
        etag: Option<&'a [u8]>,
        since: Option<&'a str>,
    },
}

// Hop-by-hop rules (RFC 9110 §7.6.1, §11.7) are `cacheoff_http::fields`'s.
pub(crate) use cacheoff_http::fields::{hop_only, is_one_of};

/// The field names a message's `Connection` lines nominate.
pub(crate) fn nominated(headers: &[(String, Vec<u8>)]) -> Vec<String> {
    cacheoff_http::fields::nominated(headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())))
}

/// Request headers not forwarded: hop by hop ones, and the ones the proxy
/// writes itself.
fn skip_request_header(name: &str, nominated: &[String]) -> bool {
    hop_only(name, nominated) || is_one_of(name, &["host", "content-length"])
}

/// The request as the origin gets it.
pub fn origin_request(
    req: &RequestHead,
    authority: &str,
    path: &str,
    cond: Conditional<'_>,
    body: &[u8],
    close: bool,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(512 + body.len());
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    let nominated = nominated(&req.headers);
    for (name, value) in &req.headers {
        let conditional = name.eq_ignore_ascii_case("if-modified-since")
            || name.eq_ignore_ascii_case("if-none-match");
        if skip_request_header(name, &nominated) || (conditional && cond != Conditional::Keep) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if let Conditional::Validate { etag, since } = cond {
        if let Some(tag) = etag {
            out.extend_from_slice(b"If-None-Match: ");
            out.extend_from_slice(tag);
            out.extend_from_slice(b"\r\n");
        }
        if let Some(date) = since {
            out.extend_from_slice(b"If-Modified-Since: ");
            out.extend_from_slice(date.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    if !body.is_empty() || req.content_length.is_some() || req.chunked {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"Via: 1.1 cacheoff\r\n");
    out.extend_from_slice(if close {
        b"Connection: close\r\n\r\n".as_slice()
    } else {
        b"Connection: keep-alive\r\n\r\n".as_slice()
    });
    out.extend_from_slice(body);
    out
}

async fn connect(authority: &str, cfg: &ProxyConfig) -> Result<TcpStream, FetchError> {
    let fail = |e| FetchError::Connect(authority.to_string(), e);
    // Name resolution is part of every fresh connection (the Collector
    // counts it in each miss, as the SPE paper asks).
    let target = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let attempt = async {
        let mut addrs: Vec<_> = tokio::net::lookup_host(&target)
            .await
            .map_err(fail)?
            .collect();
        // The name was admitted; where it points must be too.
        let forward = cfg.upstream == Upstream::Forward && cfg.parent.is_none();
        if let Some(rules) = cfg.dest_rules().filter(|_| forward) {
            if let Ok(asked) = Dest::parse(authority) {
                addrs.retain(|a| admitted_resolved(&rules, &asked, a.ip()));
                if addrs.is_empty() {
                    return Err(FetchError::Denied(authority.to_string()));
                }
            }
        }
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect(a).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(fail(last))
    };
    tokio::time::timeout(cfg.connect_timeout, attempt)
        .await
        .map_err(|_| FetchError::Timeout(authority.to_string()))?
}

/// Interim replies kept for the client; an origin sending more has the
/// rest read and dropped.
const MAX_INTERIM: usize = 8;

/// A reply being read from the origin.
pub struct OriginReply {
    pub head: ResponseHead,
    /// Interim (1xx) replies that came before it.
    pub interim: Vec<ResponseHead>,
    pub peer: Option<IpAddr>,
    /// When its first byte arrived.
    pub first_byte: Instant,
    /// When its last byte arrived (set once complete).
    pub last_byte: Instant,
    conn: TcpStream,
    authority: String,
    /// Read but not yet consumed bytes.
    buf: Vec<u8>,
    left: u64,
    chunked: Option<ChunkedDecoder>,
    done: bool,
    read_timeout: Duration,
    /// When the origin must have sent more: set when a read starts
    /// waiting, kept if that wait is dropped and taken up again, cleared
    /// by bytes (or [`OriginReply::pause`]).
    read_by: Option<Instant>,
}

/// Sends `request` to the origin at `authority` and reads the reply head.
/// A pooled connection that turns out dead is replaced by a fresh one
/// once, for requests that may be repeated.
pub async fn exchange(
    pool: &Pool,
    cfg: &ProxyConfig,
    authority: &str,
    request: &[u8],
    head_request: bool,
    idempotent: bool,
) -> Result<OriginReply, FetchError> {
    // With a parent every fetch goes there (the request names the origin).
    let authority = cfg.parent.as_deref().unwrap_or(authority);
    if cfg.role.reuses_origin_connections() {
        if let Some(conn) = pool.take(authority, cfg.pool_idle_timeout) {
            match send_and_read(conn, cfg, authority, request, head_request).await {
                Ok(r) => return Ok(r),
                Err((e, sent_nothing)) if !(idempotent && sent_nothing) => return Err(e),
                Err(_) => {}
            }
        }
    }
    let conn = connect(authority, cfg).await?;
    send_and_read(conn, cfg, authority, request, head_request)
        .await
        .map_err(|(e, _)| e)
}

/// The bool says the origin sent nothing back (a dead pooled connection).
async fn send_and_read(
    mut conn: TcpStream,
    cfg: &ProxyConfig,
    authority: &str,
    request: &[u8],
    head_request: bool,
) -> Result<OriginReply, (FetchError, bool)> {
    let timeout = |_| (FetchError::Timeout(authority.to_string()), false);
    conn.write_all(request)
        .await
        .map_err(|e| (FetchError::Io(e), true))?;
    let peer = conn.peer_addr().ok().map(|a| a.ip());
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut first_byte = None;
    let mut interim = Vec::new();
    let head = 'head: loop {
        // Everything already buffered is parsed before reading again: a
        // 1xx and the final reply may arrive in one read.
        while !buf.is_empty() {
            match parse_response_within(&buf, head_request, true, cfg.max_header) {
                // 101 would switch protocols on a request that never asked
                // (Upgrade is not forwarded): a bad reply.
                Ok(Some(h)) if h.status == 101 => {
                    let e = HttpError::Malformed("101 Switching Protocols unasked".into());
                    return Err((FetchError::BadReply(e), false));
                }
                Ok(Some(h)) if h.status >= 200 => break 'head h,
                Ok(Some(h)) => {
                    buf.drain(..h.head_len);
                    if interim.len() < MAX_INTERIM {
                        interim.push(h);
                    }
                }
                Ok(None) => break,
                Err(e) => return Err((FetchError::BadReply(e), false)),
            }
        }
        buf.reserve(16 * 1024);
        let n = tokio::time::timeout(cfg.read_timeout, conn.read_buf(&mut buf))
            .await
            .map_err(timeout)?
            .map_err(|e| (FetchError::Io(e), first_byte.is_none()))?;
        if n == 0 {
            return Err((FetchError::Closed, first_byte.is_none()));
        }
        first_byte.get_or_insert_with(Instant::now);
    };
    let first_byte = first_byte.expect("a byte arrived");
    let rest = buf.split_off(head.head_len);
    let (left, chunked, done) = match head.framing {
        Framing::Empty => (0, None, true),
        Framing::Length(n) => (n, None, n == 0),
        Framing::Chunked => (0, Some(ChunkedDecoder::default()), false),
        Framing::UntilClose => (u64::MAX, None, false),
    };
    Ok(OriginReply {
        head,
        interim,
        peer,
        first_byte,
        last_byte: first_byte,
        conn,
        authority: authority.to_string(),
        buf: rest,
        left,
        chunked,
        done,
        read_timeout: cfg.read_timeout,
        read_by: None,
    })
}

/// A reply body's length if the origin said it up front.
pub fn length_of(head: &ResponseHead) -> Option<u64> {
    match head.framing {
        Framing::Length(n) => Some(n),
        Framing::Empty => Some(0),
        _ => None,
    }
}

impl OriginReply {
    /// Whether the whole body has been read.
    pub fn is_complete(&self) -> bool {
        self.done
    }

    /// The proxy stops reading for a while (its client is behind): the
    /// origin's silence meanwhile is not held against it.
    pub fn pause(&mut self) {
        self.read_by = None;
    }

    /// Appends the next piece of the body to `out`; false once complete.
    /// Cancel-safe: a dropped call loses no bytes, and the next one keeps
    /// its read deadline.
    pub async fn next(&mut self, out: &mut Vec<u8>) -> Result<bool, FetchError> {
        loop {
            if self.done {
                return Ok(false);
            }
            if !self.buf.is_empty() {
                let got = self.consume(out)?;
                if got || self.done {
                    if self.done {
                        self.last_byte = Instant::now();
                    }
                    return Ok(true);
                }
            }
            self.buf.reserve(64 * 1024);
            let by = *self
                .read_by
                .get_or_insert_with(|| Instant::now() + self.read_timeout);
            let n = tokio::time::timeout_at(by.into(), self.conn.read_buf(&mut self.buf))
                .await
                .map_err(|_| FetchError::Timeout(self.authority.clone()))??;
            self.read_by = None;
            if n == 0 {
                if self.head.framing == Framing::UntilClose {
                    self.done = true;
                    self.last_byte = Instant::now();
                    return Ok(false);
                }
                return Err(FetchError::Closed);
            }
        }
    }

    /// Moves buffered body bytes to `out`; true if any were moved.
    fn consume(&mut self, out: &mut Vec<u8>) -> Result<bool, FetchError> {
        let before = out.len();
        if let Some(dec) = &mut self.chunked {
            let used = dec.decode(&self.buf, |d| out.extend_from_slice(d))?;
            self.buf.drain(..used);
            self.done = dec.is_done();
        } else {
            let n = (self.buf.len() as u64).min(self.left) as usize;
            out.extend_from_slice(&self.buf[..n]);
            self.buf.drain(..n);
            if self.head.framing != Framing::UntilClose {
                self.left -= n as u64;
                self.done = self.left == 0;
            }
        }
        Ok(out.len() > before)
    }

    /// Returns the connection to the pool if it can carry another request.
    pub fn release(self, pool: &Pool, cfg: &ProxyConfig) {
        let clean = self.done && self.buf.is_empty() && self.head.keep_alive;
        let reused = cfg.role.reuses_origin_connections();
        if clean && reused && self.head.framing != Framing::UntilClose {
            pool.give(&self.authority, self.conn, cfg.pool_per_origin);
        }
    }
}
