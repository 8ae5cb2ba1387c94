//! The request the Multiplier sends on: one set of bytes for the Collector
//! and every copy (absolute-form, `Host` from the target, the copy id and
//! this Multiplier's `Via` added, hop-by-hop fields dropped, the buffered
//! body with its length), and the Multiplier's own refusals.

use crate::claim::COPY_HEADER;
use cacheoff_http::echo::write_hex16;
use cacheoff_http::fields;
use cacheoff_http::{Method, RequestHead};

/// Safe methods (RFC 9110 §9.2.1), which change nothing at the origin:
/// only these are copied unless `copy_unsafe` is set (POST, PUT, DELETE,
/// PATCH and the rest reach the origin once, through the Collector).
pub fn is_safe(m: &Method) -> bool {
    matches!(m.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE")
}

/// The absolute URI a request names: as sent, or `http://` + Host +
/// path for an origin-form request; `None` without either.
pub fn absolute_target(head: &RequestHead) -> Option<String> {
    if head.target.len() > 7 && head.target[..7].eq_ignore_ascii_case("http://") {
        return Some(head.target.clone());
    }
    let host = head.host.as_deref().filter(|h| !h.is_empty())?;
    head.target
        .starts_with('/')
        .then(|| format!("http://{host}{}", head.target))
}

/// Client fields not sent on: hop-by-hop ones and those its `Connection`
/// names (`cacheoff_http::fields`), and what the Multiplier writes itself:
/// `Host`, the copy id, and the body's framing, since it buffered the body
/// (and answered any `Expect: 100-continue` itself).
fn not_sent_on(name: &str, nominated: &[String]) -> bool {
    fields::hop_only(name, nominated)
        || fields::is_one_of(name, &["host", "content-length", "expect"])
        || name.eq_ignore_ascii_case(COPY_HEADER)
}

/// The request to send on for copy `id`: `target` (absolute), `Host` its
/// authority (RFC 9112 §3.2.2: the client's is replaced, so the Collector
/// cannot be sent anywhere the target does not say), the client's
/// end-to-end fields, `X-Cacheoff-Copy`, `Via` with this Multiplier's
/// token `via` after the client's, the body with its length.
pub fn forward(head: &RequestHead, target: &str, body: &[u8], id: u64, via: &str) -> Vec<u8> {
    let nominated = fields::nominated(head.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
    let mut out = Vec::with_capacity(256 + head.head_len + body.len());
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if let Some(authority) = target
        .get(7..)
        .and_then(|r| r.split(['/', '?', '#']).next())
    {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(authority.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &head.headers {
        if not_sent_on(name, &nominated) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(COPY_HEADER.as_bytes());
    out.extend_from_slice(b": ");
    write_hex16(&mut out, id);
    out.extend_from_slice(b"\r\nVia: 1.1 ");
    out.extend_from_slice(via.as_bytes());
    out.extend_from_slice(b"\r\n");
    if !body.is_empty() || head.content_length.is_some() || head.chunked {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// The Multiplier's own answer to a request it does not pass on: a
/// one-line text body, then the connection closes.
pub fn refusal(status: u16, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + text.len());
    cacheoff_http::status::write_status_line(&mut out, status);
    out.extend_from_slice(
        format!(
            "Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}\n",
            text.len() + 1
        )
        .as_bytes(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_http::request::parse_request;

    fn head(raw: &str) -> RequestHead {
        parse_request(raw.as_bytes(), true).unwrap().unwrap()
    }

    #[test]
    fn only_safe_methods_are_copied() {
        assert!(is_safe(&Method::Get));
        assert!(is_safe(&Method::Head));
        assert!(!is_safe(&Method::Post));
        assert!(!is_safe(&Method::Other("PUT".into())));
        assert!(!is_safe(&Method::Other("PATCH".into())));
        assert!(is_safe(&Method::Other("OPTIONS".into())));
    }

    #[test]
    fn targets_are_absolute() {
        let h = head("GET http://o:1/a?b HTTP/1.1\r\nHost: o:1\r\n\r\n");
        assert_eq!(absolute_target(&h).unwrap(), "http://o:1/a?b");
        let h = head("GET /a HTTP/1.1\r\nHost: o:1\r\n\r\n");
        assert_eq!(absolute_target(&h).unwrap(), "http://o:1/a");
        assert_eq!(absolute_target(&head("GET /a HTTP/1.0\r\n\r\n")), None);
    }

    #[test]
    fn the_copy_id_replaces_the_client_s_and_hop_fields_go() {
        let h = head(
            "POST http://o:1/a HTTP/1.1\r\nHost: o:1\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\
             X-Cacheoff-Copy: 0000000000000009\r\nTransfer-Encoding: chunked\r\nAccept: */*\r\n\
             PROXY-Authorization: Basic dTpw\r\nTrailer: X-T\r\nKeep-Alive: 5\r\n\r\n",
        );
        let out = String::from_utf8(forward(&h, "http://o:1/a", b"hello", 0xab, "m-1")).unwrap();
        assert_eq!(
            out,
            "POST http://o:1/a HTTP/1.1\r\nHost: o:1\r\nAccept: */*\r\n\
             X-Cacheoff-Copy: 00000000000000ab\r\nVia: 1.1 m-1\r\nContent-Length: 5\r\n\r\nhello"
        );
        let h = head("GET http://o:1/ HTTP/1.0\r\n\r\n");
        let out = String::from_utf8(forward(&h, "http://o:1/", b"", 1, "m-1")).unwrap();
        assert!(
            out.starts_with("GET http://o:1/ HTTP/1.1\r\nHost: o:1\r\n"),
            "{out}"
        );
        assert!(!out.contains("Content-Length"));
        // The target says where; the client's Host and Via are kept apart.
        let h = head("GET http://o:1/a?q HTTP/1.1\r\nHost: 127.0.0.1:22\r\nVia: 1.1 other\r\n\r\n");
        let out = String::from_utf8(forward(&h, "http://o:1/a?q", b"", 2, "m-1")).unwrap();
        assert_eq!(
            out,
            "GET http://o:1/a?q HTTP/1.1\r\nHost: o:1\r\nVia: 1.1 other\r\n\
             X-Cacheoff-Copy: 0000000000000002\r\nVia: 1.1 m-1\r\n\r\n"
        );
    }

    #[test]
    fn refusals_close() {
        let r = String::from_utf8(refusal(501, "no tunnels")).unwrap();
        assert!(r.starts_with("HTTP/1.1 501 "), "{r}");
        assert!(r.ends_with("Content-Length: 11\r\nConnection: close\r\n\r\nno tunnels\n"));
    }
}
