//! Freshening stored responses with a `304` or a `HEAD` reply (RFC 9111
//! §3.2, §4.3.4, §4.3.5): which stored responses it updates, and how
//! their header fields change.

use crate::object::Object;
use crate::validators::{etag_of, last_modified_of};
use cacheoff_http::fields::{hop_only, is_hop_by_hop, is_one_of, nominated};
use std::sync::Arc;

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

/// Whether a `HEAD` reply may freshen a stored response (§4.3.5): its
/// `ETag`, `Last-Modified` and `Content-Length`, where both sides have
/// them, agree; else the stored response describes another
/// representation and the proxy should drop it rather than update it.
pub fn head_updates<'a, H>(stored: &Object, head: H) -> bool
where
    H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    let tags = (etag_of(stored.headers()), etag_of(head.clone()));
    let same_tag = match tags {
        (Some(a), Some(b)) => a.strong_eq(&b) || (a.weak && b.weak && a.weak_eq(&b)),
        _ => true,
    };
    let same_lm = match (stored.fresh.last_modified, last_modified_of(head.clone())) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let length = head
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
    same_tag && same_lm && length.is_none_or(|l| l == stored.body.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::Freshness;
    use crate::targeted::Targeted;
    use bytes::Bytes;
    use cacheoff_http::date;

    const T0: u64 = 1_800_000_000;

    fn h<'a>(v: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        v.iter().map(|(n, v)| (*n, v.as_bytes()))
    }

    fn object(head: &str, at: u64) -> Arc<Object> {
        let head = Bytes::from(head.to_string());
        let fresh = Freshness::of_reply(crate::header_pairs(&head), at, at);
        Arc::new(Object {
            url: "http://o/x".into(),
            status: 200,
            head,
            body: Bytes::from_static(b"body"),
            fresh,
            timing: None,
            vary: None,
        })
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

    #[test]
    fn rfc9111_4_3_4_freshened_object_recomputes_from_merged_fields() {
        let stored = object(
            &format!(
                "Date: {}\r\nCache-Control: max-age=10\r\nETag: \"v\"\r\nX-Keep: k\r\n",
                date::format(T0 as i64)
            ),
            T0,
        );
        assert!(!stored.fresh.is_fresh(T0 + 50));
        // The 304 repeats no Cache-Control: the stored max-age holds, from
        // the 304's own Date and Age.
        let d = date::format((T0 + 50) as i64);
        let up = [
            ("Date", d.as_str()),
            ("Age", "3"),
            ("ETag", "\"v\""),
            ("Content-Length", "0"),
        ];
        let o = stored.freshened(h(&up), T0 + 50, T0 + 50, &Targeted::none());
        assert_eq!((o.fresh.date, o.fresh.age), (T0 + 50, 3));
        assert!(o.fresh.is_fresh(T0 + 56));
        assert!(!o.fresh.is_fresh(T0 + 57));
        assert_eq!((o.body.clone(), o.status), (stored.body.clone(), 200));
        let head = String::from_utf8(o.head.to_vec()).unwrap();
        assert!(
            head.contains("X-Keep: k") && !head.contains("Content-Length") && !head.contains("Age")
        );
        // A 304 with a new lifetime and private fields.
        let up = [("Cache-Control", "max-age=100, private=\"X-Keep\"")];
        let o = stored.freshened(h(&up), T0 + 50, T0 + 50, &Targeted::none());
        assert!(o.fresh.is_fresh(T0 + 149));
        let head = String::from_utf8(o.head.to_vec()).unwrap();
        assert!(!head.contains("X-Keep: k"), "{head}");
    }

    #[test]
    fn rfc9111_4_3_4_strong_etag_selects_every_strong_match() {
        let a = object("ETag: \"a\"\r\n", T0);
        let b = object("ETag: \"b\"\r\n", T0);
        let a2 = object("ETag: \"a\"\r\n", T0 + 1);
        let wa = object("ETag: W/\"a\"\r\n", T0 + 2);
        let stored = [a, b, a2, wa];
        assert_eq!(select_for_update(h(&[("ETag", "\"a\"")]), &stored), [0, 2]);
        assert_eq!(
            select_for_update(h(&[("ETag", "\"z\"")]), &stored),
            [] as [usize; 0]
        );
    }

    #[test]
    fn rfc9111_4_3_4_weak_validators_select_the_most_recent_match() {
        let a = object("ETag: \"a\"\r\n", T0);
        let wa = object("ETag: W/\"a\"\r\n", T0 + 2);
        let b = object("ETag: \"b\"\r\n", T0 + 5);
        assert_eq!(
            select_for_update(h(&[("ETag", "W/\"a\"")]), &[a.clone(), wa, b.clone()]),
            [1]
        );
        let lm = date::format((T0 - 100) as i64);
        let with_lm = object(&format!("Last-Modified: {lm}\r\n"), T0);
        let other = object(
            &format!("Last-Modified: {}\r\n", date::format(T0 as i64)),
            T0 + 9,
        );
        let stored = [with_lm, other];
        assert_eq!(
            select_for_update(h(&[("Last-Modified", lm.as_str())]), &stored),
            [0]
        );
    }

    #[test]
    fn rfc9111_4_3_4_no_validator_selects_a_lone_response_without_one() {
        let bare = object("X: 1\r\n", T0);
        assert_eq!(
            select_for_update(h(&[("Date", "x")]), std::slice::from_ref(&bare)),
            [0]
        );
        assert!(select_for_update(h(&[]), &[bare.clone(), bare]).is_empty());
        let tagged = object("ETag: \"a\"\r\n", T0);
        assert!(select_for_update(h(&[]), &[tagged]).is_empty());
    }

    #[test]
    fn rfc9111_4_3_5_head_freshens_only_the_same_representation() {
        let lm = date::format((T0 - 100) as i64);
        let stored = object(&format!("ETag: \"a\"\r\nLast-Modified: {lm}\r\n"), T0);
        assert!(head_updates(
            &stored,
            h(&[("ETag", "\"a\""), ("Content-Length", "4")])
        ));
        assert!(head_updates(&stored, h(&[("Last-Modified", lm.as_str())])));
        assert!(head_updates(&stored, h(&[])));
        assert!(!head_updates(&stored, h(&[("ETag", "\"b\"")])));
        assert!(!head_updates(&stored, h(&[("ETag", "W/\"a\"")])));
        assert!(!head_updates(&stored, h(&[("Content-Length", "5")])));
        let later = date::format(T0 as i64);
        assert!(!head_updates(
            &stored,
            h(&[("Last-Modified", later.as_str())])
        ));
    }
}
