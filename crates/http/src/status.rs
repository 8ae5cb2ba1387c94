//! Status codes: the one reason-phrase table every writer of a status line
//! (origin servers, the reference proxy) uses.

/// The reason phrase of `status` (RFC 9110 §15), `"Unknown"` for codes
/// outside the table. Clients ignore the phrase; it is for people reading
/// the wire.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        508 => "Loop Detected",
        _ => "Unknown",
    }
}

/// Appends `HTTP/1.1 <status> <reason>\r\n`.
pub fn write_status_line(out: &mut Vec<u8>, status: u16) {
    write_status_line_as(out, false, status);
}

/// Appends a status line of HTTP/1.0 (`http10`) or HTTP/1.1.
pub fn write_status_line_as(out: &mut Vec<u8>, http10: bool, status: u16) {
    out.extend_from_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A reply without a body that ends the connection: what a server sends
/// for a request it will not serve.
pub fn empty_reply(status: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(80);
    write_status_line(&mut out, status);
    out.extend_from_slice(b"Content-Length: 0\r\nConnection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_we_write_has_its_phrase() {
        // Origin servers, the proxy's refusals and gateway errors.
        for s in [200, 304, 400, 403, 404, 413, 431, 501, 502, 503, 504] {
            assert_ne!(reason(s), "Unknown", "{s}");
        }
        assert_eq!(reason(299), "Unknown");
    }

    #[test]
    fn lines_and_empty_replies_read_as_written() {
        let mut l = Vec::new();
        write_status_line(&mut l, 304);
        assert_eq!(l, b"HTTP/1.1 304 Not Modified\r\n");
        assert_eq!(
            empty_reply(400),
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let h = crate::response::parse_response(&empty_reply(404), false, false)
            .unwrap()
            .unwrap();
        assert_eq!(h.status, 404);
        assert!(!h.keep_alive);
        assert_eq!(h.framing, crate::Framing::Length(0));
    }
}
