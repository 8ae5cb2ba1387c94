//! Validators (RFC 9110 §8.8): entity tags with their strong and weak
//! comparisons, and the conditions a cache answers from a stored response
//! (`If-None-Match`, `If-Modified-Since`, RFC 9110 §13 and RFC 9111
//! §4.3.2).

use cacheoff_http::date;

/// An entity tag (§8.8.3); `opaque` excludes the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityTag<'a> {
    pub weak: bool,
    pub opaque: &'a [u8],
}

impl<'a> EntityTag<'a> {
    /// Parses one entity-tag, surrounding whitespace allowed; None unless
    /// it is `[W/]"etagc*"` exactly.
    pub fn parse(v: &'a [u8]) -> Option<EntityTag<'a>> {
        let (tag, rest) = split_tag(v.trim_ascii())?;
        rest.is_empty().then_some(tag)
    }

    /// Strong comparison (§8.8.3.2): neither weak, same opaque tag.
    pub fn strong_eq(&self, other: &EntityTag<'_>) -> bool {
        !self.weak && !other.weak && self.opaque == other.opaque
    }

    /// Weak comparison: same opaque tag, weakness ignored.
    pub fn weak_eq(&self, other: &EntityTag<'_>) -> bool {
        self.opaque == other.opaque
    }
}

/// A tag at the start of `v` and what follows it.
fn split_tag(v: &[u8]) -> Option<(EntityTag<'_>, &[u8])> {
    let (weak, v) = match v.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    let v = v.strip_prefix(b"\"")?;
    let end = v.iter().position(|&b| b == b'"')?;
    let opaque = &v[..end];
    // etagc: %x21 / %x23-7E / obs-text
    if opaque.iter().any(|&b| b < 0x21 || b == 0x7f) {
        return None;
    }
    Some((EntityTag { weak, opaque }, &v[end + 1..]))
}

/// An `If-None-Match` / `If-Match` value: `*` or a list of tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagList<'a> {
    Any,
    Tags(Vec<EntityTag<'a>>),
}

impl<'a> TagList<'a> {
    /// Parses every line of the field named `name` in `headers` as one
    /// list; None when absent or invalid (an invalid field is ignored).
    pub fn of(
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        name: &str,
    ) -> Option<TagList<'a>> {
        let mut tags = Vec::new();
        let mut any = false;
        let mut seen = false;
        for (_, v) in headers
            .into_iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            seen = true;
            match TagList::parse(v)? {
                TagList::Any => any = true,
                TagList::Tags(t) => tags.extend(t),
            }
        }
        match (seen, any) {
            (false, _) => None,
            // `*` mixed with tags is invalid.
            (true, true) => tags.is_empty().then_some(TagList::Any),
            (true, false) => Some(TagList::Tags(tags)),
        }
    }

    /// Parses one field line: `*` or `#entity-tag` (empty members skipped).
    pub fn parse(v: &'a [u8]) -> Option<TagList<'a>> {
        let v = v.trim_ascii();
        if v == b"*" {
            return Some(TagList::Any);
        }
        let mut tags = Vec::new();
        let mut rest = v;
        loop {
            rest = rest.trim_ascii_start();
            while let Some(r) = rest.strip_prefix(b",") {
                rest = r.trim_ascii_start();
            }
            if rest.is_empty() {
                break;
            }
            let (tag, r) = split_tag(rest)?;
            tags.push(tag);
            rest = r.trim_ascii_start();
            if !rest.is_empty() && !rest.starts_with(b",") {
                return None;
            }
        }
        Some(TagList::Tags(tags))
    }

    /// Whether `current` is matched by weak comparison (If-None-Match).
    pub fn matches_weak(&self, current: Option<&EntityTag<'_>>) -> bool {
        match (self, current) {
            (TagList::Any, Some(_)) => true,
            (TagList::Tags(t), Some(c)) => t.iter().any(|t| t.weak_eq(c)),
            (_, None) => false,
        }
    }
}

/// The first `ETag` of a header list, if valid.
pub fn etag_of<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Option<EntityTag<'a>> {
    let (_, v) = headers
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("etag"))?;
    EntityTag::parse(v)
}

/// The first valid `Last-Modified` of a header list.
pub fn last_modified_of<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Option<u64> {
    let (_, v) = headers
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("last-modified"))?;
    date::parse(v)
}

/// Whether a GET or HEAD with `request` headers gets a `304` from a stored
/// `status` response with these validators (RFC 9110 §13.2.2, RFC 9111
/// §4.3.2). `If-None-Match`, when present and valid, decides alone (weak
/// comparison) and `If-Modified-Since` is ignored; otherwise a valid
/// `If-Modified-Since` not earlier than `last_modified` gives 304.
/// Callers without a `Last-Modified` may pass the stored `Date` (§4.3.2).
/// Only 2xx responses are answered conditionally (§13.2.1).
pub fn not_modified<'a, R>(
    request: R,
    status: u16,
    etag: Option<&EntityTag<'_>>,
    last_modified: Option<u64>,
) -> bool
where
    R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    if !(200..300).contains(&status) {
        return false;
    }
    if let Some(inm) = TagList::of(request.clone(), "if-none-match") {
        return inm.matches_weak(etag);
    }
    let ims = request
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("if-modified-since"))
        .and_then(|(_, v)| date::parse(v));
    matches!((ims, last_modified), (Some(ims), Some(lm)) if lm <= ims)
}

/// The validators to send when revalidating a stored response (RFC 9111
/// §4.3.1): its `ETag` for `If-None-Match`, its `Last-Modified` for
/// `If-Modified-Since`, as header values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conditional {
    pub if_none_match: Option<Vec<u8>>,
    pub if_modified_since: Option<String>,
}

impl Conditional {
    pub fn of<'a>(stored: impl IntoIterator<Item = (&'a str, &'a [u8])> + Clone) -> Conditional {
        Conditional {
            if_none_match: etag_of(stored.clone()).map(|t| {
                let mut v = if t.weak {
                    b"W/\"".to_vec()
                } else {
                    b"\"".to_vec()
                };
                v.extend_from_slice(t.opaque);
                v.push(b'"');
                v
            }),
            if_modified_since: last_modified_of(stored).map(|lm| date::format(lm as i64)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.if_none_match.is_none() && self.if_modified_since.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(v: &str) -> EntityTag<'_> {
        EntityTag::parse(v.as_bytes()).unwrap()
    }

    #[test]
    fn rfc9110_8_8_3_entity_tags_parse() {
        assert_eq!(
            tag("\"xyzzy\""),
            EntityTag {
                weak: false,
                opaque: b"xyzzy"
            }
        );
        assert_eq!(
            tag(" W/\"xyzzy\" "),
            EntityTag {
                weak: true,
                opaque: b"xyzzy"
            }
        );
        assert_eq!(tag("\"\"").opaque, b"");
        for bad in ["xyzzy", "\"a", "w/\"a\"", "\"a\"b", "\"a b\"", "W/ \"a\""] {
            assert_eq!(EntityTag::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn rfc9110_8_8_3_2_weak_and_strong_comparison() {
        // The table of §8.8.3.2.
        let cases = [
            ("W/\"1\"", "W/\"1\"", false, true),
            ("W/\"1\"", "W/\"2\"", false, false),
            ("W/\"1\"", "\"1\"", false, true),
            ("\"1\"", "\"1\"", true, true),
        ];
        for (a, b, strong, weak) in cases {
            assert_eq!(tag(a).strong_eq(&tag(b)), strong, "{a} {b}");
            assert_eq!(tag(a).weak_eq(&tag(b)), weak, "{a} {b}");
        }
    }

    #[test]
    fn rfc9110_13_1_2_tag_lists() {
        let l = TagList::parse(b"W/\"a\", \"b\",,\"c\"").unwrap();
        assert_eq!(
            l,
            TagList::Tags(vec![tag("W/\"a\""), tag("\"b\""), tag("\"c\"")])
        );
        assert_eq!(TagList::parse(b" * "), Some(TagList::Any));
        assert_eq!(TagList::parse(b"\"a\" \"b\""), None);
        assert_eq!(TagList::parse(b"\"a\", *"), None);
        let h = [
            ("If-None-Match", b"\"a\"".as_slice()),
            ("if-none-match", b"W/\"b\""),
        ];
        assert_eq!(
            TagList::of(h, "If-None-Match"),
            Some(TagList::Tags(vec![tag("\"a\""), tag("W/\"b\"")]))
        );
        let h = [
            ("If-None-Match", b"*".as_slice()),
            ("If-None-Match", b"\"b\""),
        ];
        assert_eq!(TagList::of(h, "If-None-Match"), None);
        assert_eq!(TagList::of([("X", b"*".as_slice())], "If-None-Match"), None);
    }

    fn nm(req: &[(&str, &str)], status: u16, etag: Option<&str>, lm: Option<u64>) -> bool {
        let etag = etag.map(tag);
        not_modified(
            req.iter().map(|(n, v)| (*n, v.as_bytes())),
            status,
            etag.as_ref(),
            lm,
        )
    }

    #[test]
    fn rfc9110_13_1_2_if_none_match_uses_weak_comparison() {
        assert!(nm(
            &[("If-None-Match", "W/\"a\"")],
            200,
            Some("\"a\""),
            None
        ));
        assert!(nm(
            &[("If-None-Match", "\"x\", \"a\"")],
            200,
            Some("W/\"a\""),
            None
        ));
        assert!(!nm(&[("If-None-Match", "\"x\"")], 200, Some("\"a\""), None));
        assert!(nm(&[("If-None-Match", "*")], 200, Some("\"a\""), None));
        assert!(!nm(&[("If-None-Match", "*")], 200, None, None));
        assert!(!nm(&[("If-None-Match", "\"a\"")], 404, Some("\"a\""), None));
    }

    #[test]
    fn rfc9110_13_1_3_if_modified_since() {
        let lm = 1_800_000_000;
        let at = |t: u64| date::format(t as i64);
        assert!(nm(&[("If-Modified-Since", &at(lm))], 200, None, Some(lm)));
        assert!(nm(
            &[("If-Modified-Since", &at(lm + 1))],
            200,
            None,
            Some(lm)
        ));
        assert!(!nm(
            &[("If-Modified-Since", &at(lm - 1))],
            200,
            None,
            Some(lm)
        ));
        assert!(!nm(
            &[("If-Modified-Since", "garbage")],
            200,
            None,
            Some(lm)
        ));
        assert!(!nm(&[("If-Modified-Since", &at(lm))], 200, None, None));
    }

    #[test]
    fn rfc9110_13_2_2_if_none_match_takes_precedence_over_if_modified_since() {
        let lm = 1_800_000_000;
        let ims = date::format(lm as i64);
        let req = [
            ("If-None-Match", "\"new\""),
            ("If-Modified-Since", ims.as_str()),
        ];
        assert!(!nm(&req, 200, Some("\"old\""), Some(lm)));
        let req = [
            ("If-None-Match", "\"old\""),
            ("If-Modified-Since", "garbage"),
        ];
        assert!(nm(&req, 200, Some("\"old\""), Some(lm)));
        // An invalid If-None-Match is ignored: If-Modified-Since decides.
        let req = [
            ("If-None-Match", "old"),
            ("If-Modified-Since", ims.as_str()),
        ];
        assert!(nm(&req, 200, Some("\"old\""), Some(lm)));
    }

    #[test]
    fn rfc9111_4_3_1_validators_to_send() {
        let h = [
            ("ETag", b"W/\"v1\"".as_slice()),
            ("Last-Modified", b"Fri, 15 Jan 2027 08:00:00 GMT"),
        ];
        let c = Conditional::of(h);
        assert_eq!(c.if_none_match.as_deref(), Some(&b"W/\"v1\""[..]));
        assert_eq!(
            c.if_modified_since.as_deref(),
            Some("Fri, 15 Jan 2027 08:00:00 GMT")
        );
        assert!(Conditional::of([("ETag", b"bad".as_slice())]).is_empty());
    }
}
