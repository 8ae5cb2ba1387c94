//! Responses: written by origin servers, parsed by robots and proxies.

use crate::echo::{parse_hex, write_hex16, ECHO_HEADER};
use crate::length::LengthFields;
use crate::status::write_status_line_as;
use crate::{complete_head, fields, has_token, HttpError, MAX_HEADERS, MAX_HEAD_LEN};

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, 1xx, 204, 304).
    Empty,
    Length(u64),
    Chunked,
    /// Body ends when the server closes the connection.
    UntilClose,
}

/// What an origin server sends in a response head.
#[derive(Debug, Clone, Copy)]
pub struct ResponseSpec<'a> {
    pub status: u16,
    pub content_length: u64,
    pub cachable: bool,
    /// Preformatted HTTP dates.
    pub date: &'a str,
    pub last_modified: Option<&'a str>,
    pub expires: Option<&'a str>,
    pub echo: Option<u64>,
    pub keep_alive: bool,
    pub content_type: &'a str,
    /// `Content-MD5` value.
    pub content_md5: Option<&'a str>,
    /// Answer as HTTP/1.0 (persistent only with `Connection: keep-alive`).
    pub http10: bool,
}

/// Appends a response head.
pub fn write_response_head(out: &mut Vec<u8>, r: &ResponseSpec<'_>) {
    write_status_line_as(out, r.http10, r.status);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(r.date.as_bytes());
    if r.status != 304 {
        out.extend_from_slice(b"\r\nContent-Length: ");
        out.extend_from_slice(itoa::Buffer::new().format(r.content_length).as_bytes());
    }
    if r.cachable {
        out.extend_from_slice(b"\r\nCache-Control: public");
    } else {
        out.extend_from_slice(b"\r\nCache-Control: private,no-cache\r\nPragma: no-cache");
    }
    if let Some(lm) = r.last_modified {
        out.extend_from_slice(b"\r\nLast-Modified: ");
        out.extend_from_slice(lm.as_bytes());
    }
    if let Some(e) = r.expires {
        out.extend_from_slice(b"\r\nExpires: ");
        out.extend_from_slice(e.as_bytes());
    }
    if let Some(echo) = r.echo {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(ECHO_HEADER.as_bytes());
        out.extend_from_slice(b": ");
        write_hex16(out, echo);
    }
    if let Some(m) = r.content_md5 {
        out.extend_from_slice(b"\r\nContent-MD5: ");
        out.extend_from_slice(m.as_bytes());
    }
    out.extend_from_slice(b"\r\nContent-Type: ");
    out.extend_from_slice(r.content_type.as_bytes());
    out.extend_from_slice(b"\r\nConnection: ");
    out.extend_from_slice(if r.keep_alive {
        b"keep-alive"
    } else {
        b"close"
    });
    out.extend_from_slice(b"\r\n\r\n");
}

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub minor: u8,
    pub head_len: usize,
    pub framing: Framing,
    /// Whether the server allows another request on this connection (and
    /// the framing is trustworthy enough to try).
    pub keep_alive: bool,
    /// Transfer-Encoding and Content-Length both came: the former framed
    /// the body (RFC 9112 §6.3) and `keep_alive` is false, since the
    /// sender or something on the way is confused about lengths.
    pub conflicting_length: bool,
    /// The transaction echo, if the reply carries a well-formed one.
    pub echo: Option<u64>,
    /// `Cache-Control` contains `public`.
    pub cc_public: bool,
    /// `Cache-Control` or `Pragma` forbid caching.
    pub cc_no_cache: bool,
    /// `Last-Modified`, in Unix seconds.
    pub last_modified: Option<i64>,
    /// `Expires`, in Unix seconds (None if absent or not a date).
    pub expires: Option<i64>,
    /// The digest a `Content-MD5` header names (empty if it is not base64
    /// of 16 bytes).
    pub content_md5: Option<Vec<u8>>,
    /// Every header in order, only when asked for.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Parses a response head from the start of `buf`; `Ok(None)` means more
/// bytes are needed. `head_request` says the request was HEAD (no body).
pub fn parse_response(
    buf: &[u8],
    head_request: bool,
    keep_headers: bool,
) -> Result<Option<ResponseHead>, HttpError> {
    parse_response_within(buf, head_request, keep_headers, MAX_HEAD_LEN)
}

/// [`parse_response`] with a header block limit of `max_head` bytes.
pub fn parse_response_within(
    buf: &[u8],
    head_request: bool,
    keep_headers: bool,
    max_head: usize,
) -> Result<Option<ResponseHead>, HttpError> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut hs);
    let Some(head_len) = complete_head(resp.parse(buf)?, buf.len(), max_head)? else {
        return Ok(None);
    };
    let status = resp.code.unwrap_or(0);
    let minor = resp.version.unwrap_or(1);
    let mut lengths = LengthFields::default();
    let mut keep_alive = minor >= 1;
    let mut echo = None;
    let mut cc_public = false;
    let mut cc_no_cache = false;
    let mut last_modified = None;
    let mut expires = None;
    let mut content_md5 = None;
    let mut headers = Vec::new();
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            lengths.content_length(h.value)?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            lengths.transfer_encoding(h.value);
        } else if let Some(persist) = fields::persistence(name, h.value) {
            keep_alive = persist;
        } else if name.eq_ignore_ascii_case(ECHO_HEADER) {
            echo = parse_hex(h.value);
        } else if name.eq_ignore_ascii_case("cache-control") {
            cc_public |= has_token(h.value, "public");
            cc_no_cache |= has_token(h.value, "no-cache")
                || has_token(h.value, "no-store")
                || has_token(h.value, "private");
        } else if name.eq_ignore_ascii_case("pragma") {
            cc_no_cache |= has_token(h.value, "no-cache");
        } else if name.eq_ignore_ascii_case("last-modified") {
            last_modified = unix_date(h.value);
        } else if name.eq_ignore_ascii_case("expires") {
            expires = unix_date(h.value);
        } else if name.eq_ignore_ascii_case("content-md5") {
            use base64::Engine;
            let digest = base64::engine::general_purpose::STANDARD
                .decode(h.value.trim_ascii())
                .ok()
                .filter(|d| d.len() == 16);
            content_md5 = Some(digest.unwrap_or_default());
        }
        if keep_headers {
            headers.push((name.to_string(), h.value.to_vec()));
        }
    }
    let body = lengths.response(minor)?;
    if body.no_reuse {
        keep_alive = false;
    }
    let framing = if head_request || status < 200 || status == 204 || status == 304 {
        Framing::Empty
    } else if body.chunked {
        Framing::Chunked
    } else if let Some(n) = body.length {
        Framing::Length(n)
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    Ok(Some(ResponseHead {
        status,
        minor,
        head_len,
        framing,
        keep_alive,
        conflicting_length: body.conflicting,
        echo,
        cc_public,
        cc_no_cache,
        last_modified,
        expires,
        content_md5,
        headers,
    }))
}

/// An HTTP date in Unix seconds.
fn unix_date(v: &[u8]) -> Option<i64> {
    crate::date::parse(v).map(|s| s as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_head_parses_back() {
        let mut b = Vec::new();
        write_response_head(
            &mut b,
            &ResponseSpec {
                status: 200,
                content_length: 1234,
                cachable: true,
                date: "Sun, 22 Nov 2026 00:00:00 GMT",
                last_modified: Some("Sat, 22 Nov 2025 00:00:00 GMT"),
                expires: None,
                echo: Some(77),
                keep_alive: true,
                content_type: "image/gif",
                content_md5: Some("1B2M2Y8AsgTpgAmY7PhCfg=="),
                http10: false,
            },
        );
        let h = parse_response(&b, false, true).unwrap().unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(h.framing, Framing::Length(1234));
        assert_eq!(h.echo, Some(77));
        assert!(h.keep_alive && h.cc_public && !h.cc_no_cache);
        assert_eq!(h.last_modified, Some(1_763_769_600));
        assert_eq!(h.head_len, b.len());
        assert!(h.headers.iter().any(|(n, _)| n == "Last-Modified"));
        assert!(h
            .headers
            .iter()
            .any(|(n, v)| n == "Content-Type" && v == b"image/gif"));
        assert!(h.headers.iter().any(|(n, _)| n == "Content-MD5"));
    }

    #[test]
    fn a_head_over_the_limit_is_refused_even_when_complete() {
        let mut b = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        b.resize(b.len() + MAX_HEAD_LEN, b'a');
        b.extend_from_slice(b"\r\n\r\n");
        assert_eq!(
            parse_response(&b, false, false),
            Err(HttpError::HeadTooLarge(MAX_HEAD_LEN))
        );
    }

    #[test]
    fn framing_rules() {
        let p = |s: &[u8]| parse_response(s, false, false).unwrap().unwrap();
        assert_eq!(
            p(b"HTTP/1.1 304 NM\r\nContent-Length: 9\r\n\r\n").framing,
            Framing::Empty
        );
        let h = p(b"HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(h.framing, Framing::UntilClose);
        assert!(!h.keep_alive);
        assert_eq!(
            p(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").framing,
            Framing::Chunked
        );
        let h =
            p(b"HTTP/1.1 200 OK\r\nCache-Control: private,no-cache\r\nContent-Length: 0\r\n\r\n");
        assert!(h.cc_no_cache && !h.cc_public);
        assert_eq!(
            parse_response(
                b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                false,
                false
            ),
            Err(HttpError::BadContentLength)
        );
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", false, false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn transfer_encoding_lines_are_combined() {
        let p = |s: &[u8]| parse_response(s, false, false).map(|h| h.unwrap());
        let h =
            p(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, true));
        // chunked not last: only the close ends the body (RFC 9112 §6.3).
        let h = p(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n")
            .unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        assert!(h.conflicting_length);
        let h = p(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        assert!(h.conflicting_length);
        let h = p(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: \"chunked\"\r\n\r\n").unwrap();
        assert_eq!(h.framing, Framing::UntilClose);
        let h =
            p(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        assert_eq!(
            p(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(HttpError::BadTransferEncoding)
        );
        let h = p(b"HTTP/1.1 304 NM\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Empty, true));
        let h = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            true,
            false,
        );
        assert_eq!(h.unwrap().unwrap().framing, Framing::Empty);
    }

    #[test]
    fn content_length_lines_must_agree() {
        let p = |s: &[u8]| parse_response(s, false, false).map(|h| h.unwrap().framing);
        assert_eq!(
            p(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 7, 7\r\n\r\n"),
            Ok(Framing::Length(7))
        );
        assert_eq!(
            p(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n"),
            Err(HttpError::AmbiguousFraming)
        );
        assert_eq!(
            p(b"HTTP/1.1 204 No Content\r\nContent-Length: 0, 1\r\n\r\n"),
            Err(HttpError::AmbiguousFraming)
        );
        assert_eq!(
            p(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
            Err(HttpError::BadContentLength)
        );
    }
}
