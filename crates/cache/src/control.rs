//! `Cache-Control` (and `Pragma`) directives, for requests and responses.

/// Directives that matter to a shared cache. Unknown directives are
/// ignored, as RFC 9111 §5.2 asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    pub no_store: bool,
    /// `no-cache` (or `Pragma: no-cache`): use a stored reply only after
    /// the origin has validated it.
    pub no_cache: bool,
    pub private: bool,
    pub public: bool,
    pub must_revalidate: bool,
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
}

impl Directives {
    /// Folds every `Cache-Control` and `Pragma` header of a message.
    pub fn parse<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Directives {
        let mut d = Directives::default();
        let mut pragma_no_cache = false;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("cache-control") {
                for item in value.split(|&b| b == b',') {
                    d.apply(item.trim_ascii());
                }
            } else if name.eq_ignore_ascii_case("pragma") {
                pragma_no_cache |= value
                    .split(|&b| b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"no-cache"));
            }
        }
        // RFC 9111 §5.4 lets Pragma count only without Cache-Control;
        // HTTP/1.0 clients send both, and honouring either is safe.
        d.no_cache |= pragma_no_cache;
        d
    }

    fn apply(&mut self, item: &[u8]) {
        let (name, arg) = match item.iter().position(|&b| b == b'=') {
            Some(i) => (item[..i].trim_ascii(), Some(item[i + 1..].trim_ascii())),
            None => (item, None),
        };
        let seconds = || {
            let a = arg?;
            let a = a.strip_prefix(b"\"").unwrap_or(a);
            let a = a.strip_suffix(b"\"").unwrap_or(a);
            // Larger than any real value: clamp (RFC 9111 §1.2.2).
            std::str::from_utf8(a)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .map(|s| s.parse::<u64>().unwrap_or(u64::from(u32::MAX)))
        };
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if is("no-store") {
            self.no_store = true;
        } else if is("no-cache") {
            // `no-cache="field"` only restricts those fields; we store no
            // partial headers, so treat it as plain no-cache.
            self.no_cache = true;
        } else if is("private") {
            self.private = true;
        } else if is("public") {
            self.public = true;
        } else if is("must-revalidate") || is("proxy-revalidate") {
            self.must_revalidate = true;
        } else if is("max-age") {
            // An invalid max-age makes the reply stale (RFC 9111 §4.2.1).
            self.max_age = Some(seconds().unwrap_or(0));
        } else if is("s-maxage") {
            self.s_maxage = Some(seconds().unwrap_or(0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(h: &[(&str, &str)]) -> Directives {
        Directives::parse(h.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn directives_fold_across_headers_and_ignore_unknown_ones() {
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
        assert_eq!(parse(&[("Cache-Control", "max-age=abc")]).max_age, Some(0));
        assert_eq!(
            parse(&[("Cache-Control", "max-age=99999999999999999999")]).max_age,
            Some(u64::from(u32::MAX))
        );
    }
}
