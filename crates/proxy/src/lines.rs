//! Header lines as bytes: numbers, status lines and fields appended
//! without the formatting machinery (reply heads are written on every
//! hit), and fields looked up or left out of a block of lines.

use cacheoff_http::status::reason;

/// Appends `n` in decimal: reply heads are written on every hit, and
/// `format!` would allocate and go through the formatting machinery.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends an HTTP/1.1 status line (as `write_status_line`, which
/// allocates the status's digits).
pub(crate) fn push_status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_u64(out, status.into());
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends one `name: value` line.
pub(crate) fn push_header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Header lines (`name: value\r\n` each) without those named `name`.
pub(crate) fn without_header(lines: &[u8], name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split_inclusive(|&b| b == b'\n') {
        let named = line.len() > name.len()
            && line[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            && line[name.len()] == b':';
        if !named {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The `Content-Type` among `headers`, empty if none.
pub(crate) fn content_type_of<'a>(
    mut headers: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> String {
    headers
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}
