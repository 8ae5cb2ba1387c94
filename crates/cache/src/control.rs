//! `Cache-Control` (and `Pragma`) directives, for requests and responses
//! (RFC 9111 §5.2, RFC 5861).
//!
//! Duplicates: a numeric directive keeps its first valid occurrence
//! (§4.2.1 "the first occurrence should be used"); flags and field lists
//! accumulate, so the most restrictive reading wins (`no-cache` beside
//! `no-cache="f"` is the unqualified `no-cache`). Names are compared
//! case-insensitively; arguments may be tokens or quoted strings.

/// The greatest delta-seconds this cache represents; larger values and
/// overflowing sums clamp to it (RFC 9111 §1.2.2).
pub const MAX_DELTA: u64 = 1 << 31;

/// Directives that matter to a shared cache. Unknown directives are
/// ignored, as RFC 9111 §5.2 asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directives {
    pub no_store: bool,
    /// Unqualified `no-cache` (or `Pragma: no-cache`): use a stored reply
    /// only after the origin has validated it.
    pub no_cache: bool,
    /// `no-cache="a, b"` (lowercase): the reply may be reused, without
    /// these fields.
    pub no_cache_fields: Vec<String>,
    /// Unqualified `private`: a shared cache must not store the reply.
    pub private: bool,
    /// `private="a"` (lowercase): storable without these fields.
    pub private_fields: Vec<String>,
    pub public: bool,
    /// `must-revalidate` itself (§3.5 lets it alone unlock `Authorization`).
    pub must_revalidate: bool,
    pub proxy_revalidate: bool,
    /// `max-age`, first valid occurrence.
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
    /// Request `max-stale`: `Some(MAX_DELTA)` when it has no argument
    /// (any staleness).
    pub max_stale: Option<u64>,
    pub min_fresh: Option<u64>,
    pub only_if_cached: bool,
    /// RFC 5861 windows past expiry.
    pub stale_while_revalidate: Option<u64>,
    pub stale_if_error: Option<u64>,
    /// A `max-age` or `s-maxage` whose argument is not delta-seconds. A
    /// response carrying one is treated as stale (§4.2.1 encourages it);
    /// in a request it is ignored.
    pub invalid_lifetime: bool,
}

impl Directives {
    /// Folds every `Cache-Control` and `Pragma` header of a message.
    pub fn parse<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Directives {
        let mut d = Directives::default();
        let mut pragma_no_cache = false;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("cache-control") {
                for (n, arg) in items(value) {
                    d.apply(&n, arg.as_deref());
                }
            } else if name.eq_ignore_ascii_case("pragma") {
                pragma_no_cache |= items(value).any(|(n, _)| n.eq_ignore_ascii_case("no-cache"));
            }
        }
        // RFC 9111 §5.4 lets Pragma count only without Cache-Control;
        // HTTP/1.0 clients send both, and honouring either is safe.
        d.no_cache |= pragma_no_cache;
        d
    }

    /// Applies one directive; `arg` is unquoted already.
    pub(crate) fn apply(&mut self, name: &str, arg: Option<&[u8]>) {
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        let seconds = arg.and_then(delta_seconds);
        let first = |slot: &mut Option<u64>| {
            if slot.is_none() {
                *slot = seconds;
            }
        };
        if is("no-store") {
            self.no_store = true;
        } else if is("no-cache") {
            match arg.map(field_names) {
                Some(f) if !f.is_empty() => push_unique(&mut self.no_cache_fields, f),
                _ => self.no_cache = true,
            }
        } else if is("private") {
            match arg.map(field_names) {
                Some(f) if !f.is_empty() => push_unique(&mut self.private_fields, f),
                _ => self.private = true,
            }
        } else if is("public") {
            self.public = true;
        } else if is("must-revalidate") {
            self.must_revalidate = true;
        } else if is("proxy-revalidate") {
            self.proxy_revalidate = true;
        } else if is("max-age") || is("s-maxage") {
            if seconds.is_none() {
                self.invalid_lifetime = true;
            }
            first(if is("max-age") {
                &mut self.max_age
            } else {
                &mut self.s_maxage
            });
        } else if is("max-stale") {
            if self.max_stale.is_none() {
                // Without an argument any staleness will do; an invalid
                // argument is ignored with the directive.
                self.max_stale = match arg {
                    None => Some(MAX_DELTA),
                    Some(_) => seconds,
                };
            }
        } else if is("min-fresh") {
            first(&mut self.min_fresh);
        } else if is("only-if-cached") {
            self.only_if_cached = true;
        } else if is("stale-while-revalidate") {
            first(&mut self.stale_while_revalidate);
        } else if is("stale-if-error") {
            first(&mut self.stale_if_error);
        }
    }

    /// Stale copies are never served: `must-revalidate`, or for a shared
    /// cache `proxy-revalidate` or `s-maxage` (§5.2.2.2, §5.2.2.8, §5.2.2.10).
    pub fn never_stale(&self) -> bool {
        self.must_revalidate || self.proxy_revalidate || self.s_maxage.is_some()
    }
}

/// delta-seconds (RFC 9111 §1.2.2): digits only, clamped to [`MAX_DELTA`].
pub(crate) fn delta_seconds(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        v.iter()
            .try_fold(0u64, |n, &b| {
                let n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                (n <= MAX_DELTA).then_some(n)
            })
            .unwrap_or(MAX_DELTA),
    )
}

/// Field names of a `no-cache`/`private` argument, lowercase.
fn field_names(arg: &[u8]) -> Vec<String> {
    arg.split(|&b| b == b',')
        .map(|f| String::from_utf8_lossy(f.trim_ascii()).to_ascii_lowercase())
        .filter(|f| !f.is_empty())
        .collect()
}

fn push_unique(to: &mut Vec<String>, from: Vec<String>) {
    for f in from {
        if !to.contains(&f) {
            to.push(f);
        }
    }
}

/// The items of a directive list: `name[=token|"quoted string"]`, split on
/// commas outside quotes; the argument comes unquoted and unescaped.
pub(crate) fn items(value: &[u8]) -> impl Iterator<Item = (String, Option<Vec<u8>>)> + '_ {
    let mut rest = value;
    std::iter::from_fn(move || loop {
        rest = rest.trim_ascii_start();
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .iter()
            .position(|&b| b == b',' || b == b'=')
            .unwrap_or(rest.len());
        let name = rest[..end].trim_ascii();
        let name = name.split(u8::is_ascii_whitespace).next().unwrap_or(b"");
        let name = String::from_utf8_lossy(name).into_owned();
        rest = &rest[end..];
        let mut arg = None;
        if rest.first() == Some(&b'=') {
            rest = rest[1..].trim_ascii_start();
            let (a, used) = argument(rest);
            arg = Some(a);
            rest = &rest[used..];
        }
        // Skip whatever follows up to the next comma (malformed tails).
        let next = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        rest = &rest[(next + 1).min(rest.len())..];
        if !name.is_empty() {
            return Some((name, arg));
        }
    })
}

/// A token or quoted-string at the start of `v`: (value, bytes used).
fn argument(v: &[u8]) -> (Vec<u8>, usize) {
    if v.first() != Some(&b'"') {
        let end = v.iter().position(|&b| b == b',').unwrap_or(v.len());
        return (v[..end].trim_ascii().to_vec(), end);
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < v.len() {
        match v[i] {
            b'\\' if i + 1 < v.len() => {
                out.push(v[i + 1]);
                i += 2;
            }
            b'"' => return (out, i + 1),
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    // An unterminated string runs to the end of the line.
    (out, v.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(h: &[(&str, &str)]) -> Directives {
        Directives::parse(h.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn rfc9111_5_2_directives_fold_across_headers_and_ignore_unknown_ones() {
        let d = parse(&[
            ("Cache-Control", "public, max-age=\"60\""),
            ("cache-control", "S-MaxAge=10, x-ext=1, must-revalidate"),
        ]);
        assert!(d.public && d.must_revalidate && !d.no_store);
        assert_eq!((d.max_age, d.s_maxage), (Some(60), Some(10)));
        let d = parse(&[
            ("Cache-Control", "private,no-cache"),
            ("Pragma", "no-cache"),
        ]);
        assert!(d.private && d.no_cache);
        assert!(parse(&[("Pragma", "no-cache")]).no_cache);
        assert!(parse(&[("Cache-Control", "NO-STORE")]).no_store);
    }

    #[test]
    fn rfc9111_1_2_2_delta_seconds_invalid_ignored_overflow_clamped() {
        let d = parse(&[("Cache-Control", "max-age=abc, min-fresh=-1, max-stale=1.5")]);
        assert_eq!((d.max_age, d.min_fresh, d.max_stale), (None, None, None));
        assert!(d.invalid_lifetime);
        let d = parse(&[("Cache-Control", "max-age=99999999999999999999999")]);
        assert_eq!(d.max_age, Some(MAX_DELTA));
        assert_eq!(
            parse(&[("Cache-Control", "max-age=2147483649")]).max_age,
            Some(MAX_DELTA)
        );
        assert_eq!(
            parse(&[("Cache-Control", "max-age=2147483647")]).max_age,
            Some(MAX_DELTA - 1)
        );
        assert_eq!(parse(&[("Cache-Control", "max-age=")]).max_age, None);
        assert!(!parse(&[("Cache-Control", "max-age=0")]).invalid_lifetime);
    }

    #[test]
    fn rfc9111_4_2_1_duplicate_numbers_first_wins_flags_accumulate() {
        let d = parse(&[
            ("Cache-Control", "max-age=5, max-age=100"),
            ("Cache-Control", "max-age=1, s-maxage=7, s-maxage=1"),
        ]);
        assert_eq!((d.max_age, d.s_maxage), (Some(5), Some(7)));
        // An invalid first one does not hide a valid later one.
        let d = parse(&[("Cache-Control", "max-age=x, max-age=9")]);
        assert_eq!(d.max_age, Some(9));
        let d = parse(&[("Cache-Control", "no-cache=\"a\", no-cache")]);
        assert!(d.no_cache);
    }

    #[test]
    fn rfc9111_5_2_2_4_no_cache_and_private_with_quoted_field_names() {
        let d = parse(&[(
            "Cache-Control",
            "no-cache=\"Set-Cookie, X-Foo\", private=\"a\", max-age=3",
        )]);
        assert!(!d.no_cache && !d.private);
        assert_eq!(d.no_cache_fields, ["set-cookie", "x-foo"]);
        assert_eq!(d.private_fields, ["a"]);
        assert_eq!(d.max_age, Some(3));
        // Token form, an escaped quote, repeats merged, empty list = bare.
        let d = parse(&[
            ("Cache-Control", "private=b, no-cache=\"x\\\"y\""),
            ("Cache-Control", "private=\"B, c\", no-cache=\"\""),
        ]);
        assert_eq!(d.private_fields, ["b", "c"]);
        assert_eq!(d.no_cache_fields, ["x\"y"]);
        assert!(d.no_cache);
        // A comma inside quotes does not split directives.
        let d = parse(&[("Cache-Control", "private=\"a,b\",public")]);
        assert_eq!((d.private_fields.len(), d.public), (2, true));
    }

    #[test]
    fn rfc9111_5_2_1_request_directives() {
        let d = parse(&[(
            "Cache-Control",
            "max-stale, min-fresh=20, only-if-cached, no-store, max-age=0",
        )]);
        assert_eq!(
            (d.max_stale, d.min_fresh, d.max_age),
            (Some(MAX_DELTA), Some(20), Some(0))
        );
        assert!(d.only_if_cached && d.no_store);
        assert_eq!(
            parse(&[("Cache-Control", "max-stale=30")]).max_stale,
            Some(30)
        );
    }

    #[test]
    fn rfc5861_and_rfc9111_5_2_2_revalidation_directives() {
        let d = parse(&[(
            "Cache-Control",
            "stale-while-revalidate=30, stale-if-error=600, proxy-revalidate",
        )]);
        assert_eq!(
            (d.stale_while_revalidate, d.stale_if_error),
            (Some(30), Some(600))
        );
        assert!(d.proxy_revalidate && !d.must_revalidate && d.never_stale());
        assert!(parse(&[("Cache-Control", "s-maxage=1")]).never_stale());
        assert!(!parse(&[("Cache-Control", "max-age=1")]).never_stale());
    }

    #[test]
    fn malformed_lists_do_not_derail_the_parser() {
        let d = parse(&[("Cache-Control", ",, =5, no-store x, private=\"unterminated")]);
        assert!(d.no_store && !d.private);
        assert_eq!(d.private_fields, ["unterminated"]);
    }
}
