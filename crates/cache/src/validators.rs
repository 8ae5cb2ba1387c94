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
