//! Targeted cache-control fields (RFC 9213): `CDN-Cache-Control` and
//! the like, whose directives replace `Cache-Control` and `Expires` for
//! the caches they target. Their values are Structured Field dictionaries
//! (RFC 8941); a field that does not parse is ignored as if absent
//! (RFC 9213 §2.1), so the cache falls back to `Cache-Control`.

use crate::control::Directives;

/// Which targeted fields this cache obeys, in order of precedence. The
/// default targets nothing: the cache reads `Cache-Control` only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targeted {
    /// Field names; the first one present and valid in a response wins.
    pub fields: Vec<String>,
}

impl Targeted {
    /// A surrogate answering to `CDN-Cache-Control` (RFC 9213 §2).
    pub fn cdn() -> Targeted {
        Targeted {
            fields: vec!["CDN-Cache-Control".into()],
        }
    }

    pub fn none() -> Targeted {
        Targeted::default()
    }

    /// The directives of the first targeted field present and valid in
    /// `headers`; None to fall back to `Cache-Control` and `Expires`.
    /// Several lines of one field are one dictionary.
    pub fn directives<'a, H>(&self, headers: H) -> Option<Directives>
    where
        H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        self.fields.iter().find_map(|field| {
            let mut lines = headers
                .clone()
                .into_iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(field))
                .map(|(_, v)| v)
                .peekable();
            lines.peek()?;
            let joined = lines.collect::<Vec<_>>().join(&b","[..]);
            let members = dictionary(&joined)?;
            let mut d = Directives::default();
            for (name, arg) in members {
                d.apply(&name, arg.as_deref());
            }
            Some(d)
        })
    }

    /// The configured targeted fields present in `headers`, to remove
    /// before the reply goes downstream: RFC 9213 lets the cache that used
    /// them forward or drop them, and this cache drops them so clients and
    /// caches behind it do not obey directives meant for it.
    pub fn strip_downstream<'a>(
        &self,
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (name, _) in headers {
            let ours = self.fields.iter().any(|f| f.eq_ignore_ascii_case(name));
            if ours && !out.iter().any(|o| o.eq_ignore_ascii_case(name)) {
                out.push(name.to_ascii_lowercase());
            }
        }
        out
    }
}

/// The members of an sf-dictionary as directives: `None` on any parse
/// error or an empty dictionary. A later duplicate replaces an earlier
/// one (RFC 8941 §3.2); `?0` drops a flag; parameters are ignored.
fn dictionary(v: &[u8]) -> Option<Vec<(String, Option<Vec<u8>>)>> {
    let mut out: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    let mut p = Parser { v, i: 0 };
    p.ows();
    while p.i < v.len() {
        let key = p.key()?;
        let (value, truthy) = if p.eat(b'=') {
            p.bare_item()?
        } else {
            (None, true)
        };
        while p.eat(b';') {
            p.sp();
            p.key()?;
            if p.eat(b'=') {
                p.bare_item()?;
            }
        }
        out.retain(|(k, _)| *k != key);
        if truthy {
            out.push((key, value));
        }
        p.ows();
        if p.i == v.len() {
            break;
        }
        if !p.eat(b',') {
            return None;
        }
        p.ows();
        if p.i == v.len() {
            return None; // a trailing comma
        }
    }
    (!out.is_empty()).then_some(out)
}

struct Parser<'a> {
    v: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.v.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    fn take(&mut self, ok: impl Fn(u8) -> bool) -> &[u8] {
        let start = self.i;
        while self.peek().is_some_and(&ok) {
            self.i += 1;
        }
        &self.v[start..self.i]
    }

    fn key(&mut self) -> Option<String> {
        if !matches!(self.peek(), Some(b'a'..=b'z' | b'*')) {
            return None;
        }
        let k = self.take(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*'));
        Some(String::from_utf8_lossy(k).into_owned())
    }

    /// (argument, whether a boolean item was true).
    fn bare_item(&mut self) -> Option<(Option<Vec<u8>>, bool)> {
        match self.peek()? {
            b'?' => {
                self.i += 1;
                let t = match self.peek()? {
                    b'1' => true,
                    b'0' => false,
                    _ => return None,
                };
                self.i += 1;
                Some((None, t))
            }
            b'"' => {
                self.i += 1;
                let mut s = Vec::new();
                loop {
                    match self.peek()? {
                        b'\\' => {
                            self.i += 1;
                            let c = self.peek().filter(|c| matches!(c, b'"' | b'\\'))?;
                            s.push(c);
                        }
                        b'"' => {
                            self.i += 1;
                            return Some((Some(s), true));
                        }
                        c if (0x20..0x7f).contains(&c) => s.push(c),
                        _ => return None,
                    }
                    self.i += 1;
                }
            }
            b'-' | b'0'..=b'9' => {
                let neg = self.eat(b'-');
                let digits = self.take(|b| b.is_ascii_digit()).to_vec();
                if digits.is_empty() || digits.len() > 15 || self.peek() == Some(b'.') {
                    // Decimals are valid SF but no delta-seconds: keep the
                    // field, drop the argument (the directive is ignored).
                    if self.eat(b'.') && !digits.is_empty() {
                        self.take(|b| b.is_ascii_digit());
                        return Some((Some(b"x".to_vec()), true));
                    }
                    return None;
                }
                Some((Some(if neg { b"-".to_vec() } else { digits }), true))
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'*' => {
                let t =
                    self.take(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&b));
                Some((Some(t.to_vec()), true))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(t: &Targeted, h: &[(&str, &str)]) -> Option<Directives> {
        t.directives(h.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn rfc9213_2_targeted_field_parses_as_a_dictionary() {
        let t = Targeted::cdn();
        let d = of(&t, &[("CDN-Cache-Control", "max-age=60, must-revalidate")]).unwrap();
        assert_eq!(d.max_age, Some(60));
        assert!(d.must_revalidate);
        let d = of(&t, &[("cdn-cache-control", "no-store=?1, private=?0")]).unwrap();
        assert!(d.no_store && !d.private);
        let d = of(&t, &[("CDN-Cache-Control", "no-cache=\"set-cookie\";x=1")]).unwrap();
        assert_eq!(d.no_cache_fields, ["set-cookie"]);
        // Two lines are one dictionary; a later duplicate wins (RFC 8941).
        let d = of(
            &t,
            &[
                ("CDN-Cache-Control", "max-age=5"),
                ("CDN-Cache-Control", "max-age=9"),
            ],
        )
        .unwrap();
        assert_eq!(d.max_age, Some(9));
    }

    #[test]
    fn rfc9213_2_1_invalid_or_empty_targeted_field_is_ignored() {
        let t = Targeted::cdn();
        for bad in [
            "",
            "Max-Age=5",
            "max-age=5,",
            "max-age=\"5",
            "max-age=5 x",
            "a=1234567890123456",
        ] {
            assert_eq!(of(&t, &[("CDN-Cache-Control", bad)]), None, "{bad:?}");
        }
        assert_eq!(of(&t, &[("Cache-Control", "max-age=5")]), None);
        assert_eq!(
            of(&Targeted::none(), &[("CDN-Cache-Control", "max-age=5")]),
            None
        );
        // A negative or decimal number parses, but is no delta-seconds.
        let d = of(&t, &[("CDN-Cache-Control", "max-age=-1, s-maxage=1.5")]).unwrap();
        assert_eq!((d.max_age, d.s_maxage), (None, None));
        assert!(d.invalid_lifetime);
    }

    #[test]
    fn rfc9213_2_first_configured_field_present_and_valid_wins() {
        let t = Targeted {
            fields: vec!["Cacheoff-Cache-Control".into(), "CDN-Cache-Control".into()],
        };
        let h = [
            ("CDN-Cache-Control", "max-age=5"),
            ("Cacheoff-Cache-Control", "max-age=7"),
        ];
        assert_eq!(of(&t, &h).unwrap().max_age, Some(7));
        let h = [
            ("CDN-Cache-Control", "max-age=5"),
            ("Cacheoff-Cache-Control", "bad value"),
        ];
        assert_eq!(of(&t, &h).unwrap().max_age, Some(5));
    }

    #[test]
    fn rfc9213_downstream_strip_names_the_targeted_fields_present() {
        let t = Targeted::cdn();
        let h = [
            ("Cache-Control", b"max-age=1".as_slice()),
            ("CDN-Cache-Control", b"max-age=60"),
            ("cdn-cache-control", b"public"),
        ];
        assert_eq!(t.strip_downstream(h), ["cdn-cache-control"]);
        assert!(Targeted::none().strip_downstream(h).is_empty());
    }
}
