//! Freshening stored responses with a `304` or a `HEAD` reply (RFC 9111
//! §3.2, §4.3.4, §4.3.5): which stored responses it updates, and how
//! their header fields change.

use crate::object::Object;
use crate::validators::{etag_of, last_modified_of};
use std::sync::Arc;

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
