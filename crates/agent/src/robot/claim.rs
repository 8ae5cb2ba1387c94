//! What a reply says about how it was served, header by header
//! (`Cache-Status`, `X-Cache`, `Via`, `Age`), read from the raw head
//! without allocating, and [`count`]ed against the echo's verdict, the
//! truth. docs/run-directory.md ("What proxies claim") lists the values
//! each header is read for.

use cacheoff_stats::{Counters, Outcome};

/// The Collector's name in `Cache-Status` and the end of its `X-Cache`
/// (`cacheoff proxy --collector`): a proxy under test passing those on
/// does not claim them.
const COLLECTOR: &[u8] = b"cacheoff-collector";

/// One header's claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Said {
    #[default]
    Nothing,
    Hit,
    Miss,
}

/// What each header of a reply claims.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claims {
    pub cache_status: Said,
    pub x_cache: Said,
    pub via: Said,
    pub age: Said,
}

impl Claims {
    /// Reads the claims of a response head (status line included); for
    /// each header the last field line decides (the cache nearest the
    /// client adds the last one).
    pub fn read(head: &[u8]) -> Claims {
        let mut c = Claims::default();
        for line in head.split(|&b| b == b'\n').skip(1) {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
            // Lengths first: most lines are none of these.
            match name.len() {
                12 if name.eq_ignore_ascii_case(b"cache-status") => {
                    if let Some(s) = cache_status(value) {
                        c.cache_status = s;
                    }
                }
                7 if name.eq_ignore_ascii_case(b"x-cache") => {
                    if let Some(s) = x_cache(value) {
                        c.x_cache = s;
                    }
                }
                3 if name.eq_ignore_ascii_case(b"via") => c.via = via(value),
                3 if name.eq_ignore_ascii_case(b"age") => c.age = age(value),
                _ => {}
            }
        }
        c
    }

    /// The proxy's claim: its strongest header that says something.
    pub fn strongest(&self) -> Said {
        [self.cache_status, self.x_cache, self.via, self.age]
            .into_iter()
            .find(|s| *s != Said::Nothing)
            .unwrap_or_default()
    }
}

/// Counts the claims of a successful reply served as `outcome`.
pub fn count(c: &mut Counters, claims: &Claims, outcome: Outcome) {
    let hit = outcome == Outcome::Hit;
    let tally =
        |said: Said, hit_was_miss: &mut u64, miss_was_hit: &mut u64, none: &mut u64| match said {
            Said::Nothing => *none += 1,
            Said::Hit if !hit => *hit_was_miss += 1,
            Said::Miss if hit => *miss_was_hit += 1,
            Said::Hit | Said::Miss => {}
        };
    tally(
        claims.strongest(),
        &mut c.claim_hit_was_miss,
        &mut c.claim_miss_was_hit,
        &mut c.claim_none,
    );
    tally(
        claims.cache_status,
        &mut c.cache_status_hit_was_miss,
        &mut c.cache_status_miss_was_hit,
        &mut c.cache_status_none,
    );
    tally(
        claims.x_cache,
        &mut c.x_cache_hit_was_miss,
        &mut c.x_cache_miss_was_hit,
        &mut c.x_cache_none,
    );
    tally(
        claims.via,
        &mut c.via_hit_was_miss,
        &mut c.via_miss_was_hit,
        &mut c.via_none,
    );
    // Age never claims a miss.
    let mut never = 0;
    tally(
        claims.age,
        &mut c.age_hit_was_miss,
        &mut never,
        &mut c.age_none,
    );
}

fn trim(v: &[u8]) -> &[u8] {
    v.trim_ascii()
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
                    return Some(trim(&rest[..i]));
                }
                _ => {}
            }
        }
        self.rest = None;
        Some(trim(rest))
    }
}

/// The claim of one `Cache-Status` field line: its last member that is
/// not the Collector's; `None` when it has no such member.
fn cache_status(v: &[u8]) -> Option<Said> {
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
    if m.is_empty() || name.eq_ignore_ascii_case(COLLECTOR) {
        return None;
    }
    let (mut hit, mut fwd, mut collapsed) = (false, None, false);
    let mut fwd_status = None;
    for p in parts {
        let (key, value) = match p.iter().position(|&b| b == b'=') {
            Some(i) => (trim(&p[..i]), Some(trim(&p[i + 1..]))),
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

/// The claim of one `X-Cache` field line: its last value (Fastly lists
/// one per cache), unless it is the Collector's.
fn x_cache(v: &[u8]) -> Option<Said> {
    let last = split(v, b',').last()?;
    if last.len() >= COLLECTOR.len()
        && last[last.len() - COLLECTOR.len()..].eq_ignore_ascii_case(COLLECTOR)
    {
        return None;
    }
    let opens = |words: &[&[u8]]| {
        words
            .iter()
            .any(|w| last.len() >= w.len() && last[..w.len()].eq_ignore_ascii_case(w))
    };
    Some(if opens(X_CACHE_HITS) {
        Said::Hit
    } else if opens(X_CACHE_MISSES) {
        Said::Miss
    } else {
        Said::Nothing
    })
}

/// The last `Via` entry's comment: Traffic Server's cache lookup code
/// (`[cH`/`[cR` a hit; `[cM`, `[cS`, `[cA` a miss), or the word `HIT`.
fn via(v: &[u8]) -> Said {
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
fn age(v: &[u8]) -> Said {
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
    fn the_collector_s_member_is_no_claim_of_the_proxy() {
        assert_eq!(cs("cacheoff-collector; hit"), Nothing);
        assert_eq!(cs("cacheoff-collector; hit, squid; fwd=uri-miss"), Miss);
        // A proxy adding nothing after it leaves the claim to other headers.
        let c = head(&[
            ("Cache-Status", "cacheoff-collector; hit"),
            ("X-Cache", "MISS"),
        ]);
        assert_eq!(c.strongest(), Miss);
        let c = head(&[("X-Cache", "HIT from cacheoff-collector")]);
        assert_eq!(c.x_cache, Nothing);
        let c = head(&[
            ("X-Cache", "MISS from cacheoff-collector"),
            ("X-Cache", "HIT from squid"),
        ]);
        assert_eq!(c.x_cache, Hit);
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

    #[test]
    fn counts_set_each_claim_against_the_echo() {
        let mut c = Counters::default();
        let lie = head(&[("Cache-Status", "p; hit"), ("X-Cache", "HIT"), ("Age", "2")]);
        count(&mut c, &lie, Outcome::Miss);
        count(&mut c, &lie, Outcome::Hit);
        let modest = head(&[("X-Cache", "MISS"), ("Via", "1.1 p ([cMs f ])")]);
        count(&mut c, &modest, Outcome::Hit);
        count(&mut c, &Claims::default(), Outcome::Miss);
        assert_eq!(
            (c.claim_hit_was_miss, c.claim_miss_was_hit, c.claim_none),
            (1, 1, 1)
        );
        assert_eq!(
            (
                c.cache_status_hit_was_miss,
                c.cache_status_miss_was_hit,
                c.cache_status_none
            ),
            (1, 0, 2)
        );
        assert_eq!(
            (
                c.x_cache_hit_was_miss,
                c.x_cache_miss_was_hit,
                c.x_cache_none
            ),
            (1, 1, 1)
        );
        assert_eq!(
            (c.via_hit_was_miss, c.via_miss_was_hit, c.via_none),
            (0, 1, 3)
        );
        assert_eq!((c.age_hit_was_miss, c.age_none), (1, 2));
    }
}
