//! Requests: written by robots, parsed by origin servers and proxies.

use crate::echo::{parse_hex, write_hex16, XACT_HEADER};
use crate::{complete_head, has_token, parse_u64, HttpError, MAX_HEADERS, MAX_HEAD_LEN};
use cacheoff_base::XactId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Other(String),
}

impl Method {
    fn parse(m: &str) -> Method {
        match m {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            o => Method::Other(o.to_string()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Other(s) => s,
        }
    }
}

/// What a robot asks for.
#[derive(Debug, Clone, Copy)]
pub struct RequestSpec<'a> {
    pub method: &'a str,
    /// `host:port` of the origin server.
    pub host: &'a str,
    /// Origin-form path, starting with '/'.
    pub path: &'a str,
    /// Send the absolute URI (to a forward proxy) instead of the path.
    pub absolute: bool,
    pub xact: XactId,
    pub keep_alive: bool,
    /// `If-Modified-Since` value (an HTTP date).
    pub ims: Option<&'a str>,
    /// Ask for a reload: `Cache-Control: no-cache` and `Pragma: no-cache`.
    pub reload: bool,
    /// Length of the request body (sent by the caller after the head).
    pub body_len: u64,
    /// Send HTTP/1.0 (persistent only with `Connection: keep-alive`, as
    /// PolyMix robots do) instead of HTTP/1.1.
    pub http10: bool,
}

/// Appends a request head.
pub fn write_request(out: &mut Vec<u8>, r: &RequestSpec<'_>) {
    out.extend_from_slice(r.method.as_bytes());
    out.push(b' ');
    if r.absolute {
        out.extend_from_slice(b"http://");
        out.extend_from_slice(r.host.as_bytes());
    }
    out.extend_from_slice(r.path.as_bytes());
    out.extend_from_slice(if r.http10 {
        b" HTTP/1.0\r\nHost: "
    } else {
        b" HTTP/1.1\r\nHost: "
    });
    out.extend_from_slice(r.host.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(XACT_HEADER.as_bytes());
    out.extend_from_slice(b": ");
    write_hex16(out, r.xact.get());
    out.extend_from_slice(b"\r\n");
    if let Some(d) = r.ims {
        out.extend_from_slice(b"If-Modified-Since: ");
        out.extend_from_slice(d.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if r.reload {
        out.extend_from_slice(b"Cache-Control: no-cache\r\nPragma: no-cache\r\n");
    }
    if r.body_len > 0 || r.method == "POST" {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(r.body_len.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match (r.keep_alive, r.http10) {
        (false, false) => out.extend_from_slice(b"Connection: close\r\n"),
        (true, true) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        _ => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: Method,
    /// As sent: origin-form path or absolute URI.
    pub target: String,
    /// HTTP/1.x minor version.
    pub minor: u8,
    /// Bytes of the head including the blank line.
    pub head_len: usize,
    pub host: Option<String>,
    pub xact: Option<XactId>,
    pub content_length: Option<u64>,
    pub chunked: bool,
    /// Whether the client wants the connection kept open afterwards.
    pub keep_alive: bool,
    /// `If-Modified-Since`, in Unix seconds (None if absent or invalid).
    pub ims: Option<u64>,
    /// `Cache-Control: no-cache` or `Pragma: no-cache`.
    pub no_cache: bool,
    /// Every header in order, only when asked for (proxies forward them).
    pub headers: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    /// The origin-form path of the target (drops `http://host` if present).
    pub fn path(&self) -> &str {
        match self.target.strip_prefix("http://") {
            Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
            None => &self.target,
        }
    }

    /// `host[:port]` from an absolute target, else from the Host header.
    pub fn authority(&self) -> Option<&str> {
        match self.target.strip_prefix("http://") {
            Some(rest) => Some(rest.find('/').map_or(rest, |i| &rest[..i])),
            None => self.host.as_deref(),
        }
    }
}

/// Parses a request head from the start of `buf`; `Ok(None)` means more
/// bytes are needed. With `keep_headers` every header is copied out.
pub fn parse_request(buf: &[u8], keep_headers: bool) -> Result<Option<RequestHead>, HttpError> {
    parse_request_within(buf, keep_headers, MAX_HEAD_LEN)
}

/// [`parse_request`] with a header block limit of `max_head` bytes.
pub fn parse_request_within(
    buf: &[u8],
    keep_headers: bool,
    max_head: usize,
) -> Result<Option<RequestHead>, HttpError> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let Some(head_len) = complete_head(req.parse(buf)?, buf.len(), max_head)? else {
        return Ok(None);
    };
    let minor = req.version.unwrap_or(1);
    let mut head = RequestHead {
        method: Method::parse(req.method.unwrap_or("")),
        target: req.path.unwrap_or("/").to_string(),
        minor,
        head_len,
        host: None,
        xact: None,
        content_length: None,
        chunked: false,
        keep_alive: minor >= 1,
        ims: None,
        no_cache: false,
        headers: Vec::new(),
    };
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("host") {
            head.host = Some(String::from_utf8_lossy(h.value).into_owned());
        } else if name.eq_ignore_ascii_case(XACT_HEADER) {
            head.xact = parse_hex(h.value).map(XactId::from_wire);
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = parse_u64(h.value).ok_or(HttpError::BadContentLength)?;
            if head.content_length.is_some_and(|m| m != n) {
                return Err(HttpError::AmbiguousFraming);
            }
            head.content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = has_token(h.value, "chunked");
        } else if name.eq_ignore_ascii_case("if-modified-since") {
            head.ims = crate::date::parse(h.value);
        } else if name.eq_ignore_ascii_case("cache-control") || name.eq_ignore_ascii_case("pragma")
        {
            head.no_cache |= has_token(h.value, "no-cache");
        } else if name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("proxy-connection")
        {
            if has_token(h.value, "close") {
                head.keep_alive = false;
            } else if has_token(h.value, "keep-alive") {
                head.keep_alive = true;
            }
        }
        if keep_headers {
            head.headers.push((name.to_string(), h.value.to_vec()));
        }
    }
    if head.chunked && head.content_length.is_some() {
        return Err(HttpError::AmbiguousFraming);
    }
    Ok(Some(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robot_request_parses_back() {
        let mut b = Vec::new();
        write_request(
            &mut b,
            &RequestSpec {
                method: "GET",
                host: "127.2.0.1:8080",
                path: "/cacheoff/00ff",
                absolute: true,
                xact: XactId::from_wire(0xabc),
                keep_alive: true,
                ims: Some("Sun, 22 Nov 2026 00:00:00 GMT"),
                reload: true,
                body_len: 0,
                http10: false,
            },
        );
        let h = parse_request(&b, false).unwrap().unwrap();
        assert_eq!(h.ims, Some(1_795_305_600));
        assert!(h.no_cache);
        assert_eq!(h.method, Method::Get);
        assert_eq!(h.target, "http://127.2.0.1:8080/cacheoff/00ff");
        assert_eq!(h.path(), "/cacheoff/00ff");
        assert_eq!(h.authority(), Some("127.2.0.1:8080"));
        assert_eq!(h.xact, Some(XactId::from_wire(0xabc)));
        assert!(h.keep_alive);
        assert_eq!(h.head_len, b.len());
        assert!(parse_request(&b[..b.len() - 1], false).unwrap().is_none());
    }

    #[test]
    fn http10_robots_ask_for_keep_alive() {
        let mut b = Vec::new();
        write_request(
            &mut b,
            &RequestSpec {
                method: "GET",
                host: "h:1",
                path: "/",
                absolute: false,
                xact: XactId::from_wire(1),
                keep_alive: true,
                ims: None,
                reload: false,
                body_len: 0,
                http10: true,
            },
        );
        let h = parse_request(&b, false).unwrap().unwrap();
        assert_eq!(h.minor, 0);
        assert!(h.keep_alive);
    }

    #[test]
    fn framing_conflicts_and_http10_rules() {
        let r = parse_request(b"GET / HTTP/1.0\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert!(!r.keep_alive);
        let r = parse_request(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert!(r.keep_alive);
        assert_eq!(
            parse_request(
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                false
            ),
            Err(HttpError::AmbiguousFraming)
        );
        assert_eq!(
            parse_request(
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                false
            ),
            Err(HttpError::AmbiguousFraming)
        );
        assert!(parse_request(b"GARBAGE\r\n\r\n", false).is_err());
    }
}
