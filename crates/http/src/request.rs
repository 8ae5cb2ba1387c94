//! Requests: written by robots, parsed by origin servers and proxies.

use crate::echo::{parse_hex, write_hex16, TTFB_HEADER, XACT_HEADER};
use crate::length::{LengthFields, RequestBody};
use crate::{complete_head, fields, has_token, HttpError, MAX_HEADERS, MAX_HEAD_LEN};
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
    /// A replayed trace's time to first byte at the origin (microseconds).
    pub ttfb_us: Option<u32>,
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
    if let Some(us) = r.ttfb_us {
        out.extend_from_slice(TTFB_HEADER.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(us.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
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
    /// As sent (origin-form path or absolute URI), except that an absolute
    /// URI without a path gets the `/` it stands for (RFC 9110 §4.2.3):
    /// `http://h?q` is kept as `http://h/?q`.
    pub target: String,
    /// HTTP/1.x minor version.
    pub minor: u8,
    /// Bytes of the head including the blank line.
    pub head_len: usize,
    /// The last Host line's value (the strict parser admits only one).
    pub host: Option<String>,
    pub xact: Option<XactId>,
    /// Never set together with `chunked`: such requests are refused.
    pub content_length: Option<u64>,
    /// The body is chunked (the only transfer coding accepted).
    pub chunked: bool,
    /// Whether the client wants the connection kept open afterwards.
    pub keep_alive: bool,
    /// `If-Modified-Since`, in Unix seconds (None if absent or invalid).
    pub ims: Option<u64>,
    /// `Cache-Control: no-cache` or `Pragma: no-cache`.
    pub no_cache: bool,
    /// A replayed trace's time to first byte ([`TTFB_HEADER`]).
    pub ttfb_us: Option<u32>,
    /// Every header in order, only when asked for (proxies forward them).
    pub headers: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    /// The origin-form path of the target (drops `http://host` if present).
    pub fn path(&self) -> &str {
        match split_absolute(&self.target) {
            Some((_, "")) => "/",
            Some((_, rest)) => rest,
            None => &self.target,
        }
    }

    /// `host[:port]` from an absolute target, else from the Host header.
    pub fn authority(&self) -> Option<&str> {
        match split_absolute(&self.target) {
            Some((authority, _)) => Some(authority),
            None => self.host.as_deref(),
        }
    }
}

/// An `http://` target (scheme in any case) as authority and the rest
/// (path, query; empty if neither).
fn split_absolute(target: &str) -> Option<(&str, &str)> {
    let scheme = target.get(..7)?;
    if !scheme.eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &target[7..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(rest.split_at(end))
}

/// The target as [`RequestHead::target`] keeps it.
fn normalize_target(raw: &str) -> String {
    match split_absolute(raw) {
        Some((authority, rest)) if !rest.starts_with('/') => {
            format!("{}{authority}/{rest}", &raw[..7])
        }
        _ => raw.to_string(),
    }
}

/// Parses a request head from the start of `buf`; `Ok(None)` means more
/// bytes are needed. With `keep_headers` every header is copied out.
pub fn parse_request(buf: &[u8], keep_headers: bool) -> Result<Option<RequestHead>, HttpError> {
    parse_request_within(buf, keep_headers, MAX_HEAD_LEN)
}

/// [`parse_request`] with a header block limit of `max_head` bytes.
/// Framing is always checked strictly (RFC 9112 §6); Host is not, for
/// origin servers that answer whatever they are sent.
pub fn parse_request_within(
    buf: &[u8],
    keep_headers: bool,
    max_head: usize,
) -> Result<Option<RequestHead>, HttpError> {
    parse(buf, keep_headers, max_head, false)
}

/// [`parse_request_within`] plus the Host rule a server must enforce
/// (RFC 9112 §3.2): an HTTP/1.1 request needs a Host line, no request may
/// have two, and its value must be `host[:port]`. The proxy's parser.
pub fn parse_request_strict(
    buf: &[u8],
    keep_headers: bool,
    max_head: usize,
) -> Result<Option<RequestHead>, HttpError> {
    parse(buf, keep_headers, max_head, true)
}

fn parse(
    buf: &[u8],
    keep_headers: bool,
    max_head: usize,
    strict_host: bool,
) -> Result<Option<RequestHead>, HttpError> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let Some(head_len) = complete_head(req.parse(buf)?, buf.len(), max_head)? else {
        return Ok(None);
    };
    let minor = req.version.unwrap_or(1);
    let mut head = RequestHead {
        method: Method::parse(req.method.unwrap_or("")),
        target: normalize_target(req.path.unwrap_or("/")),
        minor,
        head_len,
        host: None,
        xact: None,
        content_length: None,
        chunked: false,
        keep_alive: minor >= 1,
        ims: None,
        no_cache: false,
        ttfb_us: None,
        headers: Vec::new(),
    };
    let mut lengths = LengthFields::default();
    let mut hosts = 0usize;
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if strict_host && !is_host(h.value) {
                return Err(HttpError::BadHost);
            }
            head.host = Some(String::from_utf8_lossy(h.value).into_owned());
        } else if name.eq_ignore_ascii_case(XACT_HEADER) {
            head.xact = parse_hex(h.value).map(XactId::from_wire);
        } else if name.eq_ignore_ascii_case(TTFB_HEADER) {
            head.ttfb_us = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok());
        } else if name.eq_ignore_ascii_case("content-length") {
            lengths.content_length(h.value)?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            lengths.transfer_encoding(h.value);
        } else if name.eq_ignore_ascii_case("if-modified-since") {
            head.ims = crate::date::parse(h.value);
        } else if name.eq_ignore_ascii_case("cache-control") || name.eq_ignore_ascii_case("pragma")
        {
            head.no_cache |= has_token(h.value, "no-cache");
        } else if let Some(persist) = fields::persistence(name, h.value) {
            head.keep_alive = persist;
        }
        if keep_headers {
            head.headers.push((name.to_string(), h.value.to_vec()));
        }
    }
    if strict_host && hosts > 1 {
        return Err(HttpError::MultipleHosts);
    }
    if strict_host && hosts == 0 && minor >= 1 {
        return Err(HttpError::MissingHost);
    }
    match lengths.request(minor)? {
        RequestBody::Chunked => head.chunked = true,
        RequestBody::Length(n) => head.content_length = n,
    }
    Ok(Some(head))
}

/// A Host value: `uri-host [":" port]` characters (RFC 3986 §3.2), or
/// empty; anything else (spaces, `/`, `@`) could mislead a router. A comma
/// is refused too: it is how two Host lines look once combined.
fn is_host(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+;=:[]".contains(&b))
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
                ttfb_us: Some(2500),
            },
        );
        let h = parse_request(&b, false).unwrap().unwrap();
        assert_eq!(h.ttfb_us, Some(2500));
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
                ttfb_us: None,
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

    fn lenient(wire: &[u8]) -> Result<Option<RequestHead>, HttpError> {
        parse_request(wire, false)
    }

    fn strict(wire: &[u8]) -> Result<Option<RequestHead>, HttpError> {
        parse_request_strict(wire, false, MAX_HEAD_LEN)
    }

    #[test]
    fn the_issue_reproducer_is_refused() {
        let wire = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n";
        for parse in [lenient, strict] {
            let e = parse(wire).unwrap_err();
            assert_eq!((e.clone(), e.status()), (HttpError::AmbiguousFraming, 400));
        }
        // Without the Content-Length, chunked is still not the final coding.
        let wire = b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n";
        assert_eq!(strict(wire), Err(HttpError::BadTransferEncoding));
    }

    #[test]
    fn transfer_encoding_lines_are_combined() {
        let te = |lines: &str| {
            let wire = format!("POST / HTTP/1.1\r\nHost: h\r\n{lines}\r\n");
            strict(wire.as_bytes()).map(|h| h.unwrap())
        };
        let h = te("Transfer-Encoding: chunked\r\n").unwrap();
        assert!(h.chunked && h.content_length.is_none());
        assert!(te("Transfer-Encoding:\tCHUNKED \r\n").unwrap().chunked);
        assert!(
            te("Transfer-Encoding: \r\nTransfer-Encoding: chunked\r\n")
                .unwrap()
                .chunked
        );
        let bad = Err(HttpError::BadTransferEncoding);
        assert_eq!(te("Transfer-Encoding: chunked, chunked\r\n"), bad);
        assert_eq!(
            te("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
            bad
        );
        assert_eq!(te("Transfer-Encoding: chunked, identity\r\n"), bad);
        assert_eq!(te("Transfer-Encoding: \r\n"), bad);
        assert_eq!(te("Transfer-Encoding: \"chunked\"\r\n"), bad);
        let unsupported = |c: &str| Err(HttpError::UnsupportedTransferCoding(c.into()));
        assert_eq!(
            te("Transfer-Encoding: xchunked\r\n"),
            unsupported("xchunked")
        );
        assert_eq!(
            te("Transfer-Encoding: gzip, chunked\r\n"),
            unsupported("gzip")
        );
        assert_eq!(
            te("Transfer-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n"),
            unsupported("deflate")
        );
        assert_eq!(unsupported("x").unwrap_err().status(), 501);
        for coding in ["chunked", "xchunked", "identity", ""] {
            let lines = format!("Transfer-Encoding: {coding}\r\nContent-Length: 0\r\n");
            assert_eq!(te(&lines), Err(HttpError::AmbiguousFraming), "{coding}");
        }
        // A space before the colon is a different field name to some.
        assert!(te("Transfer-Encoding : chunked\r\n").is_err());
        // HTTP/1.0 knows no transfer codings (RFC 9112 §6.1).
        assert_eq!(
            strict(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(HttpError::BadTransferEncoding)
        );
    }

    #[test]
    fn content_length_lines_must_agree() {
        let cl = |lines: &str| {
            let wire = format!("POST / HTTP/1.1\r\nHost: h\r\n{lines}\r\n");
            strict(wire.as_bytes()).map(|h| h.unwrap().content_length)
        };
        assert_eq!(
            cl("Content-Length: 5\r\nContent-Length: 5\r\n"),
            Ok(Some(5))
        );
        assert_eq!(cl("Content-Length: 5, 5\r\n"), Ok(Some(5)));
        let ambiguous = Err(HttpError::AmbiguousFraming);
        assert_eq!(cl("Content-Length: 5, 6\r\n"), ambiguous);
        assert_eq!(cl("Content-Length: 5\r\nContent-Length: 6\r\n"), ambiguous);
        for bad in ["+5", "-5", "5x", "", "99999999999999999999"] {
            let line = format!("Content-Length: {bad}\r\n");
            assert_eq!(cl(&line), Err(HttpError::BadContentLength), "{bad}");
        }
    }

    #[test]
    fn host_is_checked_only_when_strict() {
        let missing = b"GET / HTTP/1.1\r\n\r\n";
        let twice = b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
        let odd = b"GET / HTTP/1.1\r\nHost: a b@c\r\n\r\n";
        assert_eq!(strict(missing), Err(HttpError::MissingHost));
        assert_eq!(strict(twice), Err(HttpError::MultipleHosts));
        assert_eq!(strict(odd), Err(HttpError::BadHost));
        for wire in [&missing[..], twice, odd] {
            assert!(lenient(wire).unwrap().is_some());
            assert_eq!(strict(wire).unwrap_err().status(), 400);
        }
        assert_eq!(lenient(twice).unwrap().unwrap().host.as_deref(), Some("b"));
        assert!(strict(b"GET / HTTP/1.0\r\n\r\n").unwrap().is_some());
        assert_eq!(
            strict(b"GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n"),
            Err(HttpError::MultipleHosts)
        );
        let h = strict(b"GET http://o:8/x HTTP/1.1\r\nHost: [::1]:80\r\n\r\n");
        assert_eq!(h.unwrap().unwrap().authority(), Some("o:8"));
    }

    #[test]
    fn too_many_headers_is_its_own_error() {
        let mut wire = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            wire.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        wire.extend_from_slice(b"\r\n");
        let e = lenient(&wire).unwrap_err();
        assert_eq!(
            (e.clone(), e.status()),
            (HttpError::TooManyHeaders(MAX_HEADERS), 431)
        );
    }

    #[test]
    fn absolute_targets_without_a_path() {
        let target = |t: &str| {
            let wire = format!("GET {t} HTTP/1.1\r\nHost: h\r\n\r\n");
            lenient(wire.as_bytes()).unwrap().unwrap()
        };
        let h = target("http://host:8080?q=1");
        assert_eq!(h.target, "http://host:8080/?q=1");
        assert_eq!((h.authority(), h.path()), (Some("host:8080"), "/?q=1"));
        let h = target("http://host:8080");
        assert_eq!((h.authority(), h.path()), (Some("host:8080"), "/"));
        let h = target("HTTP://Host/a?b=/c");
        assert_eq!((h.authority(), h.path()), (Some("Host"), "/a?b=/c"));
        let h = target("/p?http://x/");
        assert_eq!((h.authority(), h.path()), (Some("h"), "/p?http://x/"));
    }
}
