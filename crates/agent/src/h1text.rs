//! HTTP/2 heads written as HTTP/1.1 text, so one parser (`cacheoff_http`)
//! reads what both versions carry: a robot's HTTP/2 reply, an origin
//! server's HTTP/2 request.

/// `name: value` lines, one per field.
fn write_fields(buf: &mut Vec<u8>, fields: &http::HeaderMap) {
    for (name, value) in fields {
        buf.extend_from_slice(name.as_str().as_bytes());
        buf.extend_from_slice(b": ");
        buf.extend_from_slice(value.as_bytes());
        buf.extend_from_slice(b"\r\n");
    }
}

/// `HTTP/1.1 <status> \r\n`, every field, then the blank line.
pub fn response_head(buf: &mut Vec<u8>, parts: &http::response::Parts) {
    buf.extend_from_slice(b"HTTP/1.1 ");
    buf.extend_from_slice(parts.status.as_str().as_bytes());
    buf.extend_from_slice(b" \r\n");
    write_fields(buf, &parts.headers);
    buf.extend_from_slice(b"\r\n");
}

/// The request line, `Host` from the authority, every field, then the
/// blank line.
pub fn request_head(parts: &http::request::Parts) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    b.extend_from_slice(parts.method.as_str().as_bytes());
    b.push(b' ');
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    b.extend_from_slice(path.as_bytes());
    b.extend_from_slice(b" HTTP/1.1\r\n");
    if let Some(a) = parts.uri.authority() {
        b.extend_from_slice(b"Host: ");
        b.extend_from_slice(a.as_str().as_bytes());
        b.extend_from_slice(b"\r\n");
    }
    write_fields(&mut b, &parts.headers);
    b.extend_from_slice(b"\r\n");
    b
}
