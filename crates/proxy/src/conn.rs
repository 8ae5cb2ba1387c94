//! One client connection: read each request (head and body), check where
//! it goes, have it answered (`answer`), log it. Requests that cannot be
//! served are refused here with the proxy's own error reply.

use crate::access_log::{LogCode, LogEntry};
use crate::answer::answer;
use crate::config::Upstream;
use crate::framing::error_reply;
use crate::upstream::Pool;
use crate::Shared;
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request_within;
use cacheoff_http::{HttpError, Method, RequestHead};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The cache key and the logged URL: `http://host:port/path`.
    pub url: String,
    pub authority: String,
    pub path: String,
}

/// Decides where a request goes, or the status that refuses it.
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
pub(crate) struct Done {
    pub code: LogCode,
    pub status: u16,
    pub bytes: u64,
    pub peer: Option<IpAddr>,
    pub content_type: String,
    /// The connection can carry another request.
    pub keep_alive: bool,
}

impl Done {
    /// A reply that is not a relayed or stored one, after which the
    /// connection closes.
    pub(crate) fn error(status: u16, bytes: u64) -> Done {
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

/// One request being answered: what every step needs.
#[derive(Clone, Copy)]
pub(crate) struct Xact<'a> {
    pub req: &'a RequestHead,
    pub t: &'a Target,
    /// The request body (uploads).
    pub body: &'a [u8],
    /// When the request head arrived.
    pub t0: Instant,
    pub sh: &'a Arc<Shared>,
    pub pool: &'a Pool,
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
    fn a_forward_proxy_takes_absolute_http_uris_only() {
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
        assert_eq!(fwd("GET /a HTTP/1.1"), Err(400));
        assert_eq!(fwd("GET https://h/a HTTP/1.1"), Err(501));
        assert_eq!(fwd("GET http://u@h/a HTTP/1.1"), Err(400));
        assert_eq!(fwd("CONNECT h:443 HTTP/1.1"), Err(501));
    }

    #[test]
    fn a_reverse_proxy_sends_everything_to_its_origin() {
        let rev = Upstream::Reverse("127.0.0.1:8080".into());
        let t = target(&req("GET http://elsewhere/x HTTP/1.1"), &rev).unwrap();
        assert_eq!(t.url, "http://127.0.0.1:8080/x");
        assert_eq!(t.authority, "127.0.0.1:8080");
    }
}
