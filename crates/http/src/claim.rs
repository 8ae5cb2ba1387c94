//! What a reply's headers claim about how it was served (`Cache-Status`,
//! `X-Varnish`, `X-Cache`, `Via`, `Age`), read from raw field lines
//! without allocating. The robots hold these claims against the echo's
//! verdict; the Multiplier against the Collector's stamp. Either way the
//! claim is only what the proxy says, never the truth.

/// The Collector's name in `Cache-Status` and the end of its `X-Cache`
/// (`cacheoff proxy --collector`): a proxy under test passing those on
/// does not claim them.
pub const COLLECTOR: &str = "cacheoff-collector";

/// One header's claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Said {
    #[default]
    Nothing,
    Hit,
    Miss,
}

/// What each header of a reply claims; for each header the last field
/// line that says something decides (the cache nearest the client adds
/// the last one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claims {
    pub cache_status: Said,
    pub x_varnish: Said,
    pub x_cache: Said,
    pub via: Said,
    pub age: Said,
    /// An `X-Cache` of the Collector's came through: its hits have an
    /// `Age` too, so `Age` alone says nothing about this proxy.
    pub relayed: bool,
}

impl Claims {
    /// Reads the claims of a response head (status line included).
    pub fn read(head: &[u8]) -> Claims {
        Claims::of_fields(head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            Some((&line[..colon], &line[colon + 1..]))
        }))
    }

    /// Reads the claims of field lines given as (name, value).
    pub fn of_fields<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Claims {
        let mut c = Claims::default();
        for (name, value) in fields {
            let value = value.trim_ascii();
            // Lengths first: most lines are none of these.
            match name.len() {
                12 if name.eq_ignore_ascii_case(b"cache-status") => {
                    if let Some(s) = cache_status(value) {
                        c.cache_status = s;
                    }
                }
                9 if name.eq_ignore_ascii_case(b"x-varnish") => c.x_varnish = x_varnish(value),
                7 if name.eq_ignore_ascii_case(b"x-cache") => {
                    if is_collector_x_cache(value) {
                        c.relayed = true;
                    } else {
                        c.x_cache = x_cache(value);
                    }
                }
                3 if name.eq_ignore_ascii_case(b"via") => c.via = via(value),
                3 if name.eq_ignore_ascii_case(b"age") => c.age = age(value),
                _ => {}
            }
        }
        c
    }

    /// The proxy's claim: its strongest header that says something, in
    /// order of trust (RFC 9211's field first, `Age` alone last).
    pub fn strongest(&self) -> Said {
        let age = if self.relayed {
            Said::Nothing
        } else {
            self.age
        };
        [
            self.cache_status,
            self.x_varnish,
            self.x_cache,
            self.via,
            age,
        ]
        .into_iter()
        .find(|s| *s != Said::Nothing)
        .unwrap_or_default()
    }
}

/// Pieces of `v` between `sep`s outside double quotes (RFC 8941 strings,
/// `\` escapes) and, for `Via`, parentheses (comments).
struct Split<'a> {
    rest: Option<&'a [u8]>,
    sep: u8,
}

fn split(v: &[u8], sep: u8) -> Split<'_> {
    Split { rest: Some(v), sep }
}

impl<'a> Iterator for Split<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let (mut quoted, mut escaped, mut depth) = (false, false, 0u32);
        for (i, &b) in rest.iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted || depth > 0 => escaped = true,
                b'"' if depth == 0 => quoted = !quoted,
                b'(' if !quoted => depth += 1,
                b')' if !quoted => depth = depth.saturating_sub(1),
                _ if b == self.sep && !quoted && depth == 0 => {
                    self.rest = Some(&rest[i + 1..]);
                    return Some(rest[..i].trim_ascii());
                }
                _ => {}
            }
        }
        self.rest = None;
        Some(rest.trim_ascii())
    }
}

/// The claim of one `Cache-Status` field line: its last member that is
/// not the Collector's; `None` when it has no such member.
pub fn cache_status(v: &[u8]) -> Option<Said> {
    split(v, b',').filter_map(cache_status_member).last()
}

/// One `Cache-Status` member (`name; param; key=value…`); `None` for the
/// Collector's.
fn cache_status_member(m: &[u8]) -> Option<Said> {
    let mut parts = split(m, b';');
    let name = parts.next()?;
    let name = name
        .strip_prefix(b"\"")
        .and_then(|n| n.strip_suffix(b"\""))
        .unwrap_or(name);
    if m.is_empty() || name.eq_ignore_ascii_case(COLLECTOR.as_bytes()) {
        return None;
    }
    let (mut hit, mut fwd, mut collapsed) = (false, None, false);
    let mut fwd_status = None;
    for p in parts {
        let (key, value) = match p.iter().position(|&b| b == b'=') {
            Some(i) => (p[..i].trim_ascii(), Some(p[i + 1..].trim_ascii())),
            None => (p, None),
        };
        // A boolean parameter is true bare or as `?1`.
        let truth = value.is_none_or(|v| v == b"?1");
        match key {
            b"hit" => hit = truth,
            b"collapsed" => collapsed = truth,
            b"fwd" => fwd = value,
            b"fwd-status" => fwd_status = value,
            _ => {}
        }
    }
    // A stale copy served as the origin failed (stale-if-error). One the
    // origin confirmed (304) is a miss, as its echo says: the 304's
    // fields, the echo among them, replace the stored ones.
    let served_stale = matches!(fwd_status, Some([b'5', _, _]));
    Some(match fwd {
        _ if hit => Said::Hit,
        // Another request's reply reused.
        Some(_) if collapsed => Said::Hit,
        Some(b"stale") if served_stale => Said::Hit,
        Some(_) => Said::Miss,
        None => Said::Nothing,
    })
}

/// `X-Varnish: 32770 3` (this transaction and the one that stored the
/// object: a hit) or `X-Varnish: 32770` (a miss).
pub fn x_varnish(v: &[u8]) -> Said {
    match v
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .count()
    {
        0 => Said::Nothing,
        1 => Said::Miss,
        _ => Said::Hit,
    }
}

/// Words that open an `X-Cache` value: Squid's `HIT from host`, Varnish
/// and ATS configurations, nginx's `$upstream_cache_status`, CloudFront.
/// A revalidated copy carries the origin's 304 fields, its echo among
/// them: a miss.
const X_CACHE_HITS: &[&[u8]] = &[b"hit", b"stale", b"updating"];
const X_CACHE_MISSES: &[&[u8]] = &[
    b"miss",
    b"expired",
    b"bypass",
    b"pass",
    b"revalidated",
    b"refreshhit",
];

/// Whether an `X-Cache` value is the Collector's (`… from
/// cacheoff-collector`).
pub fn is_collector_x_cache(v: &[u8]) -> bool {
    split(v, b',').last().is_some_and(|last| {
        let c = COLLECTOR.as_bytes();
        last.len() >= c.len() && last[last.len() - c.len()..].eq_ignore_ascii_case(c)
    })
}

/// The claim of one `X-Cache` field line: its last value (Fastly lists
/// one per cache).
pub fn x_cache(v: &[u8]) -> Said {
    let Some(last) = split(v, b',').last() else {
        return Said::Nothing;
    };
    let opens = |words: &[&[u8]]| {
        words
            .iter()
            .any(|w| last.len() >= w.len() && last[..w.len()].eq_ignore_ascii_case(w))
    };
    if opens(X_CACHE_HITS) {
        Said::Hit
    } else if opens(X_CACHE_MISSES) {
        Said::Miss
    } else {
        Said::Nothing
    }
}

/// The last `Via` entry's comment: Traffic Server's cache lookup code
/// (`[cH`/`[cR` a hit; `[cM`, `[cS`, `[cA` a miss), or the word `HIT`.
pub fn via(v: &[u8]) -> Said {
    let Some(entry) = split(v, b',').last() else {
        return Said::Nothing;
    };
    let Some(open) = entry.iter().position(|&b| b == b'(') else {
        return Said::Nothing;
    };
    let comment = &entry[open + 1..];
    if let Some(i) = comment.windows(2).position(|w| w == b"[c") {
        match comment.get(i + 2) {
            Some(b'H' | b'R') => return Said::Hit,
            Some(b'M' | b'S' | b'A') => return Said::Miss,
            _ => {}
        }
    }
    let hit_word = comment
        .split(|b| !b.is_ascii_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case(b"hit"));
    if hit_word {
        Said::Hit
    } else {
        Said::Nothing
    }
}

/// `Age` above 0: the reply spent time in a cache.
pub fn age(v: &[u8]) -> Said {
    let digits = !v.is_empty() && v.iter().all(u8::is_ascii_digit);
    if digits && v.iter().any(|&b| b != b'0') {
        Said::Hit
    } else {
        Said::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Said::{Hit, Miss, Nothing};

    fn head(lines: &[(&str, &str)]) -> Claims {
        let mut h = String::from("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n");
        for (n, v) in lines {
            h.push_str(&format!("{n}: {v}\r\n"));
        }
        h.push_str("\r\n");
        Claims::read(h.as_bytes())
    }

    fn cs(v: &str) -> Said {
        head(&[("Cache-Status", v)]).cache_status
    }

    fn xc(v: &str) -> Said {
        head(&[("X-Cache", v)]).x_cache
    }

    #[test]
    fn cache_status_reads_the_last_member_of_several() {
        assert_eq!(cs("origin-cache; fwd=uri-miss, edge; hit"), Hit);
        assert_eq!(cs("origin-cache; hit, edge; fwd=uri-miss; stored"), Miss);
        assert_eq!(cs("edge; hit=?1; ttl=30"), Hit);
        assert_eq!(cs("edge; hit=?0; fwd=stale; fwd-status=200"), Miss);
        assert_eq!(cs("edge; fwd=vary-miss; fwd-status=200"), Miss);
        assert_eq!(cs("edge; ttl=30"), Nothing);
        // Quoted names and details may hold separators.
        assert_eq!(cs("\"a, b\"; hit, \"edge; x\"; fwd=request"), Miss);
        assert_eq!(cs("edge; fwd=uri-miss; detail=\"a, hit\""), Miss);
        // Several field lines make one list: the last line's last member.
        let two = head(&[
            ("Cache-Status", "edge; fwd=miss"),
            ("cache-status", "top; hit"),
        ]);
        assert_eq!(two.cache_status, Hit);
    }

    #[test]
    fn cache_status_collapsed_and_stale_on_error_replies_are_hits() {
        assert_eq!(cs("cacheoff; fwd=uri-miss; collapsed"), Hit);
        assert_eq!(cs("cacheoff; fwd=uri-miss; collapsed=?0"), Miss);
        // Revalidated: the origin was asked, and its echo came back.
        assert_eq!(cs("cacheoff; fwd=stale; fwd-status=304; stored"), Miss);
        assert_eq!(cs("cacheoff; fwd=stale; fwd-status=200; stored"), Miss);
        // stale-if-error: the origin failed, the stored copy went out.
        assert_eq!(cs("cacheoff; fwd=stale; fwd-status=503; ttl=-9"), Hit);
        assert_eq!(cs("cacheoff; fwd=uri-miss; fwd-status=503"), Miss);
    }

    #[test]
    fn the_collector_s_member_and_x_cache_are_no_claim_of_the_proxy() {
        assert_eq!(cs("cacheoff-collector; hit"), Nothing);
        assert_eq!(cs("cacheoff-collector; hit, squid; fwd=uri-miss"), Miss);
        // A proxy adding nothing after it leaves the claim to other headers.
        let c = head(&[
            ("Cache-Status", "cacheoff-collector; hit"),
            ("X-Cache", "MISS"),
        ]);
        assert_eq!(c.strongest(), Miss);
        let c = head(&[("X-Cache", "HIT from cacheoff-collector")]);
        assert_eq!((c.x_cache, c.relayed), (Nothing, true));
        let c = head(&[
            ("X-Cache", "MISS from cacheoff-collector"),
            ("X-Cache", "HIT from squid"),
        ]);
        assert_eq!(c.x_cache, Hit);
        // The Collector's hits have an age: no claim of the proxy's.
        let c = head(&[("X-Cache", "HIT from cacheoff-collector"), ("Age", "4")]);
        assert_eq!((c.age, c.strongest()), (Hit, Nothing));
        assert!(is_collector_x_cache(b"HIT from cacheoff-collector"));
        assert_eq!(x_cache(b"HIT from cacheoff-collector"), Hit);
    }

    #[test]
    fn x_cache_variants_of_each_product() {
        // Squid.
        assert_eq!(xc("HIT from proxy.example"), Hit);
        assert_eq!(xc("MISS from proxy.example"), Miss);
        // Varnish VCL and nginx's $upstream_cache_status.
        assert_eq!(xc("HIT"), Hit);
        assert_eq!(xc("MISS"), Miss);
        assert_eq!(xc("STALE"), Hit);
        assert_eq!(xc("UPDATING"), Hit);
        assert_eq!(xc("REVALIDATED"), Miss);
        assert_eq!(xc("EXPIRED"), Miss);
        assert_eq!(xc("BYPASS"), Miss);
        // Traffic Server's xdebug and CloudFront.
        assert_eq!(xc("hit-fresh"), Hit);
        assert_eq!(xc("miss"), Miss);
        assert_eq!(xc("skipped"), Nothing);
        assert_eq!(xc("RefreshHit from cloudfront"), Miss);
        // Fastly: one per cache, the one nearest the client last.
        assert_eq!(xc("HIT, MISS"), Miss);
        assert_eq!(xc("MISS, HIT"), Hit);
        assert_eq!(xc(""), Nothing);
    }

    #[test]
    fn x_varnish_counts_transaction_ids() {
        let v = |s| head(&[("X-Varnish", s)]);
        assert_eq!(v("32770 3").x_varnish, Hit);
        assert_eq!(v("32770").x_varnish, Miss);
        assert_eq!(v("").x_varnish, Nothing);
        // It outranks X-Cache, and Cache-Status outranks it.
        let c = head(&[("X-Cache", "MISS"), ("X-Varnish", "5 3")]);
        assert_eq!(c.strongest(), Hit);
        let c = head(&[("Cache-Status", "v; fwd=miss"), ("X-Varnish", "5 3")]);
        assert_eq!(c.strongest(), Miss);
    }

    #[test]
    fn via_comments_and_traffic_server_codes() {
        let v = |s| head(&[("Via", s)]).via;
        assert_eq!(v("http/1.1 ats (ApacheTrafficServer/9.2 [cHs f ])"), Hit);
        assert_eq!(v("http/1.1 ats (ApacheTrafficServer/9.2 [cRs f ])"), Hit);
        assert_eq!(v("http/1.1 ats (ApacheTrafficServer/9.2 [cMsSf ])"), Miss);
        assert_eq!(v("1.1 a (x, HIT), 1.1 edge (Product/1 HIT)"), Hit);
        assert_eq!(v("1.1 edge (HIT), 1.1 cacheoff"), Nothing);
        assert_eq!(v("1.1 cacheoff"), Nothing);
    }

    #[test]
    fn age_above_zero_suggests_a_stored_copy() {
        assert_eq!(head(&[("Age", "3")]).age, Hit);
        assert_eq!(head(&[("Age", "0")]).age, Nothing);
        assert_eq!(head(&[("Age", "00")]).age, Nothing);
        assert_eq!(head(&[("Age", "-1")]).age, Nothing);
        assert_eq!(head(&[("Age", "3"), ("Age", "0")]).age, Nothing);
    }

    #[test]
    fn the_strongest_header_is_the_proxy_s_claim() {
        let c = head(&[("Age", "3"), ("X-Cache", "MISS")]);
        assert_eq!((c.age, c.x_cache, c.strongest()), (Hit, Miss, Miss));
        let c = head(&[("X-Cache", "MISS"), ("Cache-Status", "p; hit")]);
        assert_eq!(c.strongest(), Hit);
        assert_eq!(head(&[("Age", "3")]).strongest(), Hit);
        assert_eq!(head(&[("Server", "x")]).strongest(), Nothing);
        // The status line is no header, whatever it says.
        assert_eq!(
            Claims::read(b"HTTP/1.1 200 Age: 3\r\n\r\n"),
            Claims::default()
        );
    }
}
