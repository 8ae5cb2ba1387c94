//! One client connection: read each request (head and body), check where
//! it goes, have it answered (`answer`), log it. Requests that cannot be
//! served are refused here ([`Refusal`]) with the proxy's own error reply.

use crate::access_log::{LogCode, LogEntry};
use crate::answer::{answer, own_reply};
use crate::config::Upstream;
use crate::decision::{Decision, Refusal};
use crate::framing::error_reply;
use crate::limits::IdleTimer;
use crate::upstream::Pool;
use crate::xact::{Done, Target, Xact};
use crate::Shared;
use cacheoff_access::{admitted, Dest};
use cacheoff_access::{BodyClock, Charge, Slot};
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request_strict;
use cacheoff_http::{HeadScanner, Method, RequestHead};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Decides where a request goes, or the status that refuses it.
fn target(req: &RequestHead, upstream: &Upstream) -> Result<Target, u16> {
    if let Method::Other(m) = &req.method {
        if m == "CONNECT" {
            return Err(501);
        }
    }
    let (authority, path) = match upstream {
        Upstream::Reverse(origin) => (origin.clone(), req.path().to_string()),
        Upstream::ByHost(origins) => {
            let host = host_name(req).ok_or(400u16)?;
            let origin = origins.get(&host).ok_or(421u16)?;
            // The key names the site, not the address it happens to be at.
            return Ok(Target {
                url: url_of(&host, req.path()),
                authority: origin.clone(),
                path: req.path().to_string(),
            });
        }
        Upstream::Forward => {
            let t = &req.target;
            if t.starts_with('/') {
                // Origin-form: a proxy in front of this one (a surrogate
                // whose backend we are, as SPE's proxies under test use
                // the Collector) names the origin in `Host`.
                let authority = host_authority(req).ok_or(400u16)?;
                return Ok(Target {
                    url: url_of(&authority, t),
                    authority,
                    path: t.clone(),
                });
            }
            let scheme_ok = t.len() > 7 && t[..7].eq_ignore_ascii_case("http://");
            if !scheme_ok {
                // A scheme we do not speak.
                return Err(501);
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
        url: url_of(&authority, &path),
        authority,
        path,
    })
}

/// `http://{authority}{path}`, without the formatting machinery (every
/// request has one).
fn url_of(authority: &str, path: &str) -> String {
    let mut url = String::with_capacity(7 + authority.len() + path.len());
    url.push_str("http://");
    url.push_str(authority);
    url.push_str(path);
    url
}

/// The request's `Host` as an authority (`host[:port]`), lower case.
fn host_authority(req: &RequestHead) -> Option<String> {
    let value = req
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v)?;
    let host = std::str::from_utf8(value).ok()?.trim();
    let ok = !host.is_empty() && !host.contains(['/', '@', ' ']);
    ok.then(|| host.to_ascii_lowercase())
}

/// The request's `Host` name, lower case and without a port.
fn host_name(req: &RequestHead) -> Option<String> {
    let value = req
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v)?;
    let host = std::str::from_utf8(value).ok()?.trim();
    let name = match host.rsplit_once(':') {
        Some((h, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        Some((h, "")) => h,
        _ => host,
    };
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

/// Whether `authority` is this proxy's own listening address: a request
/// sent on to it would come back forever.
fn names_this_proxy(authority: &str, listen: SocketAddr) -> bool {
    let Ok(addr) = authority.parse::<SocketAddr>() else {
        return authority == format!("localhost:{}", listen.port());
    };
    addr.port() == listen.port()
        && (addr.ip() == listen.ip() || (listen.ip().is_unspecified() && addr.ip().is_loopback()))
}

pub(crate) async fn serve(
    mut s: TcpStream,
    peer: SocketAddr,
    sh: Arc<Shared>,
    pool: Rc<Pool>,
    _slot: Slot,
) {
    sh.stats.connections.fetch_add(1, Ordering::Relaxed);
    let _ = s.set_nodelay(true);
    if !sh.cfg.allows(peer.ip()) {
        let done = refuse(&mut s, &sh, Refusal::Client).await;
        log(&sh, peer.ip(), Instant::now(), "-", "-", &done);
        return;
    }
    let mut buf = Vec::with_capacity(4096);
    let mut idle = IdleTimer::new(sh.cfg.client_idle_timeout);
    loop {
        let mut req = match read_head(&mut s, &mut buf, &sh, &mut idle).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(refusal) => {
                let done = refuse(&mut s, &sh, refusal).await;
                log(&sh, peer.ip(), Instant::now(), "-", "-", &done);
                linger(&mut s).await;
                return;
            }
        };
        let t0 = Instant::now();
        buf.drain(..req.head_len);
        if let Some(gate) = &sh.gate {
            if !gate.admit_client(&s).await {
                return;
            }
        }
        // Held until the request is answered: its body counts until then.
        let mut upload = sh.uploads.charge();
        let ready = match admit(&mut req, &sh) {
            Ok((t, expect)) => read_body(&mut s, &mut buf, &req, &sh, &mut upload, expect)
                .await
                .map(|body| (t, body)),
            Err(refusal) => Err(refusal),
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
            Err(refusal) => (refuse(&mut s, &sh, refusal).await, req.target.clone()),
        };
        log(&sh, peer.ip(), t0, req.method.as_str(), &url, &done);
        if !done.keep_alive {
            if done.code() == LogCode::None {
                linger(&mut s).await;
            }
            return;
        }
    }
}

/// Over `max_client_connections`: a 503 if the socket takes it at once,
/// and the connection closes without a task or a read.
pub(crate) fn turn_away(s: TcpStream, sh: &Shared) {
    let d = Decision::Refused(Refusal::Overloaded);
    sh.stats.count(&d);
    // A plain non-blocking write: the runtime has not yet seen this
    // socket writable, so its `try_write` would not even try.
    if let (Ok(mut s), Some(status)) = (s.into_std(), d.own_status()) {
        let reply = error_reply(status, &d.cache_status(None), sh.cfg.role);
        let _ = std::io::Write::write(&mut s, &reply);
    }
}

/// Answers a request the proxy will not serve, and closes.
async fn refuse(s: &mut TcpStream, sh: &Shared, refusal: Refusal) -> Done {
    let d = Decision::Refused(refusal);
    sh.stats.count(&d);
    own_reply(s, sh, d).await
}

/// After a refusal the client may still be sending (a body the proxy did
/// not read): closing on unread bytes resets the connection, and the
/// reset can destroy the refusal before the client reads it. So send a
/// FIN and read what comes for a moment (bounded in time and bytes).
async fn linger(s: &mut TcpStream) {
    let _ = s.shutdown().await;
    let drain = async {
        let mut sink = [0u8; 16 * 1024];
        let mut left = 1usize << 20;
        while let Ok(n @ 1..) = s.read(&mut sink).await {
            left = left.saturating_sub(n);
            if left == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

const LINGER: std::time::Duration = std::time::Duration::from_millis(500);

fn log(sh: &Shared, client: IpAddr, t0: Instant, method: &str, url: &str, d: &Done) {
    if let Some(l) = &sh.log {
        l.write(&LogEntry {
            finished: SystemTime::now(),
            elapsed: t0.elapsed(),
            client,
            code: d.code(),
            status: d.status,
            bytes: d.bytes,
            method,
            url,
            peer: d.peer,
            via_parent: sh.cfg.parent.is_some(),
            content_type: &d.content_type,
        });
    }
}

/// Reads the next request head; `Ok(None)` when the client is done (or
/// idle too long), `Err` for a request that cannot be served.
/// The wait for its first byte is the idle timeout; from that byte on the
/// whole head has `client_header_timeout` (408 after it).
async fn read_head(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    sh: &Shared,
    idle: &mut IdleTimer,
) -> Result<Option<RequestHead>, Refusal> {
    let cfg = &sh.cfg;
    let parse = |head: &[u8]| parse_request_strict(head, true, cfg.max_header);
    // A head usually arrives whole with its first read (keep-alive ones
    // may already be buffered): parsed straight away. One that does not is
    // scanned as it grows and parsed once complete, never once per read.
    let mut tried_whole = false;
    let mut scan = HeadScanner::new();
    // Set once part of a head is here and more must be read.
    let mut deadline = None;
    if buf.is_empty() {
        idle.start();
    }
    loop {
        if !buf.is_empty() && !tried_whole {
            tried_whole = true;
            match parse(buf) {
                Ok(Some(h)) => return Ok(Some(h)),
                Ok(None) => {}
                Err(e) => return Err(e.status().into()),
            }
        }
        match scan.scan_within(buf, cfg.max_header) {
            Ok(Some(end)) => {
                return match parse(&buf[..end]) {
                    Ok(Some(h)) => Ok(Some(h)),
                    Ok(None) => Err(Refusal::Bad(400)),
                    Err(e) => Err(e.status().into()),
                }
            }
            Ok(None) => {}
            Err(e) => return Err(e.status().into()),
        }
        buf.reserve(4096);
        if buf.is_empty() {
            let read = tokio::select! {
                biased;
                read = s.read_buf(buf) => read,
                () = idle.expired() => return Ok(None),
            };
            match read {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => continue,
            }
        }
        let d = *deadline.get_or_insert_with(|| Instant::now() + cfg.client_header_timeout);
        match tokio::time::timeout_at(d.into(), s.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(None),
            Err(_) => return Err(Refusal::Timeout),
            Ok(Ok(_)) => {}
        }
    }
}

/// Checks a request before its body is read, so a refusal spares the
/// client sending it: where it goes, its `Host` lines, its expectation,
/// its length. Returns the target and whether the client waits for a
/// `100 Continue`.
fn admit(req: &mut RequestHead, sh: &Shared) -> Result<(Target, bool), Refusal> {
    let mut t = target(req, &sh.cfg.upstream)?;
    if sh.cfg.upstream == Upstream::Forward {
        if names_this_proxy(&t.authority, sh.cfg.listen) {
            return Err(Refusal::Bad(508));
        }
        if sh.cfg.parent.is_some() {
            // A parent is asked in absolute form.
            t.path = t.url.clone();
        }
        let dest = Dest::parse(&t.authority)?;
        if sh.dest_rules.as_ref().is_some_and(|r| !admitted(r, &dest)) {
            return Err(Refusal::Destination);
        }
    }
    check_host(req)?;
    let expect = take_expect(req)?;
    if req
        .content_length
        .is_some_and(|n| n > sh.cfg.max_request_body)
    {
        return Err(Refusal::Bad(413));
    }
    let has_body = req.chunked || req.content_length.is_some_and(|n| n > 0);
    // An HTTP/1.0 client cannot have meant it (RFC 9110 §10.1.1).
    Ok((t, expect && has_body && req.minor >= 1))
}

/// RFC 9112 §3.2: one `Host` line, none only for HTTP/1.0. An HTTP/1.1
/// request in absolute form needs one too (the URI's host then wins,
/// §3.2.2).
fn check_host(req: &RequestHead) -> Result<(), u16> {
    let hosts = req
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
        .count();
    match hosts {
        0 if req.minor >= 1 => Err(400),
        0 | 1 => Ok(()),
        _ => Err(400),
    }
}

/// Takes `Expect` out of the request: the proxy meets the expectation
/// itself, having the whole body before it forwards anything, so the
/// origin must not see it. True for `100-continue`; anything else is 417.
fn take_expect(req: &mut RequestHead) -> Result<bool, u16> {
    let (mut cont, mut other) = (false, false);
    req.headers.retain(|(name, value)| {
        if !name.eq_ignore_ascii_case("expect") {
            return true;
        }
        for item in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if item.eq_ignore_ascii_case(b"100-continue") {
                cont = true;
            } else if !item.is_empty() {
                other = true;
            }
        }
        false
    });
    if other {
        return Err(417);
    }
    Ok(cont)
}

/// Reads a request body into one buffer of its size, its bytes held in
/// the proxy's upload budget (503 when the budget cannot hold them), at
/// the pace `client_body_min_rate` asks (408 when it falls behind).
async fn read_body(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    req: &RequestHead,
    sh: &Shared,
    upload: &mut Charge,
    expect_continue: bool,
) -> Result<Vec<u8>, Refusal> {
    let cfg = &sh.cfg;
    let clock = BodyClock {
        start: Instant::now(),
        grace: cfg.client_header_timeout,
        min_rate: cfg.client_body_min_rate,
    };
    let deadline = |received: usize| {
        let stall = Instant::now() + cfg.read_timeout;
        clock
            .deadline(received as u64)
            .map_or(stall, |d| d.min(stall))
    };
    let limit = cfg.max_request_body;
    if req.chunked {
        send_continue(s, buf, expect_continue).await?;
        let mut dec = ChunkedDecoder::default();
        let mut body = Vec::new();
        loop {
            // Decoded bytes are never more than their encoding: room for
            // `buf` is enough, taken from the budget before it is used.
            let need = body.len() + buf.len();
            if need > body.capacity() {
                let cap = need.max(body.capacity() * 2).min(need.max(limit as usize));
                if !upload.grow_to(cap as u64) {
                    return Err(Refusal::Uploads);
                }
                body.reserve_exact(cap - body.len());
            }
            let used = dec
                .decode(buf, |d| body.extend_from_slice(d))
                .map_err(|_| Refusal::Bad(400))?;
            buf.drain(..used);
            if body.len() as u64 > limit {
                return Err(Refusal::Bad(413));
            }
            if dec.is_done() {
                return Ok(body);
            }
            buf.reserve(16 * 1024);
            read_by(s, buf, deadline(body.len())).await?;
        }
    }
    let want = req.content_length.unwrap_or(0) as usize;
    if want == 0 {
        return Ok(Vec::new());
    }
    if !upload.grow_to(want as u64) {
        return Err(Refusal::Uploads);
    }
    send_continue(s, buf, expect_continue).await?;
    let mut body = Vec::with_capacity(want);
    let have = buf.len().min(want);
    body.extend_from_slice(&buf[..have]);
    buf.drain(..have);
    while body.len() < want {
        // Straight into the body, never past it (pipelined requests stay
        // on the socket for the next head).
        let by = deadline(body.len());
        let mut rest = (&mut *s).take((want - body.len()) as u64);
        read_by(&mut rest, &mut body, by).await?;
    }
    Ok(body)
}

/// `100 Continue` for a client waiting for it: one that sent nothing of
/// its body yet.
async fn send_continue(s: &mut TcpStream, buf: &[u8], expect: bool) -> Result<(), Refusal> {
    if expect && buf.is_empty() {
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .map_err(|_| Refusal::Bad(400))?;
    }
    Ok(())
}

/// Reads more bytes by `deadline`: 408 after it, 400 if the client ends
/// the request midway.
async fn read_by<R: AsyncRead + Unpin>(
    r: &mut R,
    into: &mut Vec<u8>,
    deadline: Instant,
) -> Result<(), Refusal> {
    match tokio::time::timeout_at(deadline.into(), r.read_buf(into)).await {
        Ok(Ok(n)) if n > 0 => Ok(()),
        Ok(_) => Err(Refusal::Bad(400)),
        Err(_) => Err(Refusal::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_http::request::parse_request;

    fn req(line: &str) -> RequestHead {
        parse_request(format!("{line}\r\nHost: h\r\n\r\n").as_bytes(), true)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_forward_proxy_takes_absolute_http_uris_or_a_host() {
        let fwd = |line| target(&req(line), &Upstream::Forward);
        assert_eq!(
            fwd("GET http://Example.COM:81/a?b HTTP/1.1"),
            Ok(Target {
                url: "http://example.com:81/a?b".into(),
                authority: "example.com:81".into(),
                path: "/a?b".into(),
            })
        );
        assert_eq!(fwd("GET http://h HTTP/1.1").unwrap().path, "/");
        // A query without a path stays out of the authority.
        let q = fwd("GET http://h:81?q=1 HTTP/1.1").unwrap();
        assert_eq!((q.authority.as_str(), q.path.as_str()), ("h:81", "/?q=1"));
        // Origin-form names the origin in Host (a surrogate in front).
        assert_eq!(fwd("GET /a HTTP/1.1").unwrap().url, "http://h/a");
        let no_host = parsed("GET /a HTTP/1.0\r\n\r\n");
        assert_eq!(target(&no_host, &Upstream::Forward), Err(400));
        let with_host = parsed("GET /a HTTP/1.1\r\nHost: S1.bench.tst:8080\r\n\r\n");
        assert_eq!(
            target(&with_host, &Upstream::Forward),
            Ok(Target {
                url: "http://s1.bench.tst:8080/a".into(),
                authority: "s1.bench.tst:8080".into(),
                path: "/a".into(),
            })
        );
        assert_eq!(fwd("GET https://h/a HTTP/1.1"), Err(501));
        assert_eq!(fwd("GET http://u@h/a HTTP/1.1"), Err(400));
        assert_eq!(fwd("CONNECT h:443 HTTP/1.1"), Err(501));
    }

    #[test]
    fn a_request_for_this_proxy_itself_is_a_loop() {
        let listen: SocketAddr = "127.0.0.1:3128".parse().unwrap();
        assert!(names_this_proxy("127.0.0.1:3128", listen));
        assert!(names_this_proxy("localhost:3128", listen));
        assert!(!names_this_proxy("127.0.0.1:3129", listen));
        assert!(!names_this_proxy("s1.bench.tst:3128", listen));
        let any: SocketAddr = "0.0.0.0:3128".parse().unwrap();
        assert!(names_this_proxy("127.0.0.2:3128", any));
    }

    #[test]
    fn a_reverse_proxy_sends_everything_to_its_origin() {
        let rev = Upstream::Reverse("127.0.0.1:8080".into());
        let t = target(&req("GET http://elsewhere/x HTTP/1.1"), &rev).unwrap();
        assert_eq!(t.url, "http://127.0.0.1:8080/x");
        assert_eq!(t.authority, "127.0.0.1:8080");
    }

    #[test]
    fn a_surrogate_routes_by_host_name() {
        let map = [
            ("s1.bench.tst", "127.2.0.1:80"),
            ("s2.bench.tst", "127.2.0.2:81"),
        ]
        .map(|(n, a)| (n.to_string(), a.to_string()));
        let by_host = Upstream::ByHost(std::sync::Arc::new(map.into_iter().collect()));
        let t = target(
            &parsed("GET /x HTTP/1.1\r\nHost: S2.bench.tst:80\r\n\r\n"),
            &by_host,
        )
        .unwrap();
        assert_eq!(t.url, "http://s2.bench.tst/x");
        assert_eq!(t.authority, "127.2.0.2:81");
        assert_eq!(t.path, "/x");
        let unknown = parsed("GET /x HTTP/1.1\r\nHost: elsewhere\r\n\r\n");
        assert_eq!(target(&unknown, &by_host), Err(421));
        assert_eq!(
            target(&parsed("GET /x HTTP/1.0\r\n\r\n"), &by_host),
            Err(400)
        );
    }

    fn parsed(raw: &str) -> RequestHead {
        parse_request(raw.as_bytes(), true).unwrap().unwrap()
    }

    #[test]
    fn host_lines_are_counted() {
        let ok = |raw: &str| check_host(&parsed(raw));
        assert_eq!(ok("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), Ok(()));
        assert_eq!(ok("GET /a HTTP/1.1\r\n\r\n"), Err(400));
        assert_eq!(ok("GET /a HTTP/1.0\r\n\r\n"), Ok(()));
        assert_eq!(ok("GET http://h/a HTTP/1.1\r\n\r\n"), Err(400));
        assert_eq!(ok("GET http://h/a HTTP/1.1\r\nHost: x\r\n\r\n"), Ok(()));
        assert_eq!(
            ok("GET /a HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"),
            Err(400)
        );
    }

    #[test]
    fn expectations_are_taken_out_of_the_request() {
        let mut r = parsed("PUT /a HTTP/1.1\r\nExpect: 100-Continue\r\nX: y\r\n\r\n");
        assert_eq!(take_expect(&mut r), Ok(true));
        assert_eq!(r.headers, vec![("X".to_string(), b"y".to_vec())]);
        let mut r = parsed("PUT /a HTTP/1.1\r\nExpect: 100-continue, x\r\n\r\n");
        assert_eq!(take_expect(&mut r), Err(417));
        let mut r = parsed("PUT /a HTTP/1.1\r\n\r\n");
        assert_eq!(take_expect(&mut r), Ok(false));
    }
}
