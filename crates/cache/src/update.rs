//! Freshening stored responses with a `304` or a `HEAD` reply (RFC 9111
//! §3.2, §4.3.4, §4.3.5): which stored responses it updates, and how
//! their header fields change.

use crate::object::Object;
use crate::validators::{etag_of, last_modified_of};
use std::sync::Arc;

/// Hop-by-hop fields (RFC 9110 §7.6.1) and the proxy ones, never stored.
pub const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
    "trailer",
];

pub fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// The field names a message's `Connection` header lists (lowercase).
pub fn connection_options<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<String> {
    headers
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(|o| String::from_utf8_lossy(o.trim_ascii()).to_ascii_lowercase())
        .filter(|o| !o.is_empty())
        .collect()
}

/// Whether a field of an updating response is left out of the stored
/// one: hop-by-hop or named in its `Connection`, framing (§3.2 never
/// takes `Content-Length` from it), `Age` (the cache writes its own) and
/// `Set-Cookie` (stored copies never carry one, see [`crate::storage`]).
fn kept_out(name: &str, connection: &[String]) -> bool {
    is_hop_by_hop(name)
        || connection.iter().any(|c| c.eq_ignore_ascii_case(name))
        || ["content-length", "age", "set-cookie"]
            .iter()
            .any(|f| f.eq_ignore_ascii_case(name))
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
    let connection = connection_options(update.clone());
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

/// Which stored responses for a URL a `304` with `update` headers
/// freshens (§4.3.4), as indices into `stored`:
/// - a strong `ETag`: every stored response with the same strong tag;
/// - else a weak `ETag` or a `Last-Modified`: the most recent stored one
///   whose tag matches weakly or whose `Last-Modified` is the same;
/// - else, no validator at all: the only stored response, if it has none
///   either.
///
/// When the proxy validated one response itself (its own conditional
/// request), it may freshen that one directly ([`Object::freshened`]).
pub fn select_for_update<'a, H>(update: H, stored: &[Arc<Object>]) -> Vec<usize>
where
    H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    let tag = etag_of(update.clone());
    let lm = last_modified_of(update);
    if let Some(t) = tag.filter(|t| !t.weak) {
        return (0..stored.len())
            .filter(|&i| etag_of(stored[i].headers()).is_some_and(|s| s.strong_eq(&t)))
            .collect();
    }
    if tag.is_some() || lm.is_some() {
        let weak_match = |o: &Object| match tag {
            Some(t) => etag_of(o.headers()).is_some_and(|s| s.weak_eq(&t)),
            None => o.fresh.last_modified.is_some() && o.fresh.last_modified == lm,
        };
        let newest = (0..stored.len())
            .filter(|&i| weak_match(&stored[i]))
            .max_by_key(|&i| (stored[i].fresh.response_time, i));
        return newest.into_iter().collect();
    }
    let lacks = |o: &Object| etag_of(o.headers()).is_none() && o.fresh.last_modified.is_none();
    if stored.len() == 1 && lacks(&stored[0]) {
        vec![0]
    } else {
        Vec::new()
    }
}
