//! How a stored response's header fields change when a `304` or a `HEAD`
//! reply updates it (RFC 9111 §3.2): the header lines alone, so both the
//! stored [`crate::Object`] and [`crate::update`]'s selection use it.

use cacheoff_http::fields::{hop_only, is_hop_by_hop, is_one_of, nominated};

/// Whether a field of an updating response is left out of the stored
/// one: hop-by-hop or named in its `Connection` (§3.1), framing (§3.2
/// never takes `Content-Length` from it), `Age` (the cache writes its own)
/// and `Set-Cookie` (stored copies never carry one, see
/// [`crate::storage`]).
fn kept_out(name: &str, connection: &[String]) -> bool {
    hop_only(name, connection) || is_one_of(name, &["content-length", "age", "set-cookie"])
}

/// The stored header lines (`Name: value\r\n` each) updated by a `304`'s
/// (or `HEAD` reply's) fields (§3.2): each field it carries replaces every
/// stored line of that name; the rest are kept in order, then its fields
/// are appended. Fields in `strip` (lowercase; e.g. its `private=` list)
/// are dropped from the result.
pub fn merge_headers<'a, H>(stored: &[u8], update: H, strip: &[String]) -> Vec<u8>
where
    H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    let connection = nominated(update.clone());
    let taken = |name: &str| {
        !kept_out(name, &connection) && !strip.iter().any(|s| s.eq_ignore_ascii_case(name))
    };
    let replaced = |name: &str| {
        update
            .clone()
            .into_iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name) && taken(n))
    };
    let mut out = Vec::with_capacity(stored.len() + 256);
    for line in stored.split_inclusive(|&b| b == b'\n') {
        let name = line
            .iter()
            .position(|&b| b == b':')
            .and_then(|i| std::str::from_utf8(line[..i].trim_ascii()).ok());
        let Some(name) = name else { continue };
        let dropped = is_hop_by_hop(name) || strip.iter().any(|s| s.eq_ignore_ascii_case(name));
        if !dropped && !replaced(name) {
            out.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                out.extend_from_slice(b"\r\n");
            }
        }
    }
    for (name, value) in update {
        if taken(name) {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(v: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        v.iter().map(|(n, v)| (*n, v.as_bytes()))
    }

    #[test]
    fn rfc9111_3_2_update_replaces_same_named_fields_and_keeps_the_rest() {
        let stored = b"Content-Type: text/plain\r\nX-A: 1\r\nx-a: 2\r\nETag: \"e\"\r\n";
        let out = merge_headers(stored, h(&[("X-A", "3"), ("X-New", "n")]), &[]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Content-Type: text/plain\r\nETag: \"e\"\r\nX-A: 3\r\nX-New: n\r\n"
        );
    }

    #[test]
    fn rfc9111_3_2_hop_by_hop_connection_options_and_content_length_are_not_taken() {
        let stored = b"Content-Type: text/plain\r\nX-Secret: s\r\n";
        let update = [
            ("Connection", "keep-alive, X-Secret"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "close"),
            ("TE", "trailers"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("Proxy-Authenticate", "Basic"),
            ("Proxy-Authorization", "x"),
            ("Proxy-Authentication-Info", "nextnonce=1"),
            ("Trailer", "X-T"),
            ("X-Secret", "t"),
            ("Content-Length", "99"),
            ("Age", "5"),
            ("Set-Cookie", "c=1"),
            ("Cache-Control", "max-age=60"),
        ];
        let out = String::from_utf8(merge_headers(stored, h(&update), &[])).unwrap();
        // The stored X-Secret stays: the 304's copy is hop-by-hop.
        assert_eq!(
            out,
            "Content-Type: text/plain\r\nX-Secret: s\r\nCache-Control: max-age=60\r\n"
        );
    }

    #[test]
    fn rfc9111_3_2_stripped_fields_leave_both_copies() {
        let stored = b"X-A: 1\r\nX-B: 1\r\n";
        let out = merge_headers(stored, h(&[("X-A", "2"), ("X-C", "3")]), &["x-a".into()]);
        assert_eq!(out, b"X-B: 1\r\nX-C: 3\r\n");
    }
}
