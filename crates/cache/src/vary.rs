//! Secondary cache keys (RFC 9111 §4.1): a stored response remembers the
//! request's values of the fields its `Vary` nominates, and is reused only
//! for requests with the same values.
//!
//! Normalisation (§4.1 allows it): the lines of a field are combined in
//! order, split on commas, each member trimmed of whitespace, empty
//! members dropped, and joined with ", "; so `a,b`, `a, b` and two lines
//! `a` and `b` match. Values are otherwise compared byte for byte (case
//! matters). A request lacking a nominated field matches only a stored
//! request that lacked it too.

use serde::{Deserialize, Serialize};

/// The secondary key of a stored response.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Variant {
    /// `Vary: *`: stored, but matches no request.
    pub any: bool,
    /// Nominated fields (lowercase, sorted, unique) with the request's
    /// normalised value, or None when the request lacked the field.
    pub fields: Vec<(String, Option<Vec<u8>>)>,
}

impl Variant {
    /// The key of a response with `response` headers to a request with
    /// `request` headers; None when the response has no (or an empty)
    /// `Vary`, so it matches every request.
    pub fn of<'a, 'b, R>(
        response: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        request: R,
    ) -> Option<Variant>
    where
        R: IntoIterator<Item = (&'b str, &'b [u8])> + Clone,
    {
        let names = nominated(response)?;
        let any = names.iter().any(|n| n == "*");
        let fields = if any {
            Vec::new()
        } else {
            names
                .into_iter()
                .map(|n| {
                    let v = value(request.clone(), &n);
                    (n, v)
                })
                .collect()
        };
        Some(Variant { any, fields })
    }

    /// Whether a request with these headers selects the stored response.
    pub fn matches<'a, R>(&self, request: R) -> bool
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        !self.any
            && self
                .fields
                .iter()
                .all(|(n, v)| value(request.clone(), n).as_deref() == v.as_deref())
    }
}

/// The field names `Vary` nominates across all its lines (lowercase,
/// sorted, unique); None when there are none.
pub fn nominated<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Option<Vec<String>> {
    let mut names: Vec<String> = headers
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("vary"))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(|f| String::from_utf8_lossy(f.trim_ascii()).to_ascii_lowercase())
        .filter(|f| !f.is_empty())
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then_some(names)
}

/// Whether the header lines carry a `Vary` naming any field.
pub fn has_vary<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> bool {
    nominated(headers).is_some()
}

/// The normalised value of field `name` in `headers`; None if absent.
pub fn value<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    name: &str,
) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for (_, v) in headers
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        let out = out.get_or_insert_with(Vec::new);
        for member in v.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if member.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(member);
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
    fn rfc9111_4_1_no_vary_means_no_secondary_key() {
        assert_eq!(Variant::of(h(&[("Content-Type", "x")]), h(&[])), None);
        assert_eq!(Variant::of(h(&[("Vary", " , ")]), h(&[])), None);
    }

    #[test]
    fn rfc9111_4_1_vary_lines_and_lists_combine_case_insensitively() {
        let v = Variant::of(
            h(&[
                ("Vary", "Accept-Encoding, accept-language"),
                ("vary", "ACCEPT-ENCODING"),
            ]),
            h(&[("accept-encoding", "gzip"), ("Accept-Language", "en")]),
        )
        .unwrap();
        assert_eq!(
            v.fields,
            [
                ("accept-encoding".to_string(), Some(b"gzip".to_vec())),
                ("accept-language".to_string(), Some(b"en".to_vec())),
            ]
        );
        assert!(v.matches(h(&[("Accept-Language", "en"), ("ACCEPT-ENCODING", "gzip")])));
        assert!(!v.matches(h(&[("Accept-Language", "fr"), ("Accept-Encoding", "gzip")])));
        assert!(!v.matches(h(&[("Accept-Encoding", "GZIP"), ("Accept-Language", "en")])));
    }

    #[test]
    fn rfc9111_4_1_values_normalised_whitespace_and_line_folding() {
        let v = Variant::of(h(&[("Vary", "Accept")]), h(&[("Accept", "a,b")])).unwrap();
        assert!(v.matches(h(&[("Accept", "a, b")])));
        assert!(v.matches(h(&[("Accept", "  a ,b  ")])));
        assert!(v.matches(h(&[("Accept", "a"), ("accept", "b")])));
        assert!(v.matches(h(&[("Accept", "a,,b")])));
        assert!(!v.matches(h(&[("Accept", "b, a")])));
        assert!(!v.matches(h(&[("Accept", "a")])));
    }

    #[test]
    fn rfc9111_4_1_absent_field_matches_only_absent() {
        let v = Variant::of(h(&[("Vary", "Cookie")]), h(&[])).unwrap();
        assert_eq!(v.fields, [("cookie".to_string(), None)]);
        assert!(v.matches(h(&[("Accept", "x")])));
        assert!(!v.matches(h(&[("Cookie", "")])));
        assert!(!v.matches(h(&[("Cookie", "a=1")])));
        // Present but empty is not absent.
        let v = Variant::of(h(&[("Vary", "Cookie")]), h(&[("Cookie", "")])).unwrap();
        assert!(v.matches(h(&[("Cookie", " ")])) && !v.matches(h(&[])));
    }

    #[test]
    fn rfc9111_4_1_vary_star_never_matches() {
        let v = Variant::of(h(&[("Vary", "Accept, *")]), h(&[("Accept", "a")])).unwrap();
        assert!(v.any);
        assert!(!v.matches(h(&[("Accept", "a")])));
        assert!(!v.matches(h(&[])));
    }
}
