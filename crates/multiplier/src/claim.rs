//! Hit or miss, two ways: what the proxy under test claims in its reply
//! headers ([`claim`]), and what the Collector's stamp shows ([`verdict`]):
//! the Collector stamps every reply with the copy id of the request it
//! answered, so a proxy's reply carrying this copy's id was fetched
//! through the Collector (a miss), another id was served from the proxy's
//! own store (a hit), and none did not come through the Collector.

use cacheoff_http::claim::{self, Claims, Said};
use cacheoff_http::echo::parse_hex;
pub use cacheoff_http::echo::{COLLECTED_HEADER, COPY_HEADER};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Hit,
    Miss,
    Unverified,
}

/// The verdict of a reply to copy `id` with `stamp` (the last
/// `X-Cacheoff-Collected` value, if any).
pub fn verdict(stamp: Option<u64>, id: u64) -> Verdict {
    match stamp {
        Some(s) if s == id => Verdict::Miss,
        Some(_) => Verdict::Hit,
        None => Verdict::Unverified,
    }
}

/// The Collector's stamp in `headers` (the last well-formed one).
pub fn stamp(headers: &[(String, Vec<u8>)]) -> Option<u64> {
    headers
        .iter()
        .rev()
        .filter(|(n, _)| n.eq_ignore_ascii_case(COLLECTED_HEADER))
        .find_map(|(_, v)| parse_hex(v))
}

/// What a proxy under test's reply says about itself: `Some(true)` a hit,
/// `Some(false)` a miss, `None` nothing ([`Claims::strongest`]: the
/// Collector's `Cache-Status` member and `X-Cache`, passed on, are no
/// claim of the proxy's).
pub fn claim(headers: &[(String, Vec<u8>)]) -> Option<bool> {
    said(fields(headers).strongest())
}

/// The Collector's own verdict on its reply (its `X-Cache`).
pub fn collector_claim(headers: &[(String, Vec<u8>)]) -> Option<bool> {
    headers
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("x-cache"))
        .and_then(|(_, v)| said(claim::x_cache(v.trim_ascii())))
}

fn fields(headers: &[(String, Vec<u8>)]) -> Claims {
    Claims::of_fields(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())))
}

fn said(s: Said) -> Option<bool> {
    match s {
        Said::Hit => Some(true),
        Said::Miss => Some(false),
        Said::Nothing => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn the_stamp_decides_the_verdict() {
        assert_eq!(verdict(Some(7), 7), Verdict::Miss);
        assert_eq!(verdict(Some(6), 7), Verdict::Hit);
        assert_eq!(verdict(None, 7), Verdict::Unverified);
        let hs = h(&[
            ("X-Cacheoff-Collected", "0000000000000001"),
            ("x-cacheoff-collected", "00000000000000ff"),
        ]);
        assert_eq!(stamp(&hs), Some(0xff));
        assert_eq!(stamp(&h(&[("X-Cacheoff-Collected", "nothex")])), None);
    }

    #[test]
    fn x_cache_hit_prefix_any_case() {
        assert_eq!(claim(&h(&[("X-Cache", "HIT from squid")])), Some(true));
        assert_eq!(claim(&h(&[("x-cache", "hit")])), Some(true));
        assert_eq!(claim(&h(&[("X-Cache", "MISS from squid")])), Some(false));
        // The proxy's own line is the last one (the Collector's came first).
        let two = h(&[("X-Cache", "HIT"), ("X-Cache", "MISS from p")]);
        assert_eq!(claim(&two), Some(false));
    }

    #[test]
    fn cache_status_reads_the_proxy_s_own_last_member() {
        let c = |v| claim(&h(&[("Cache-Status", v)]));
        assert_eq!(c("Collector; fwd=miss, Proxy; hit"), Some(true));
        assert_eq!(
            c("Collector; hit, Proxy; fwd=uri-miss; stored"),
            Some(false)
        );
        assert_eq!(c("Proxy; ttl=30"), None);
        assert_eq!(
            c("Proxy; fwd=uri-miss; fwd-status=200; collapsed"),
            Some(true)
        );
        // The Collector's member, passed on, is no claim of the proxy's.
        assert_eq!(c("cacheoff-collector; fwd=uri-miss; stored"), None);
        assert_eq!(
            c("cacheoff-collector; hit, Proxy; fwd=uri-miss"),
            Some(false)
        );
        // Cache-Status outranks X-Cache.
        let both = h(&[("X-Cache", "MISS"), ("Cache-Status", "p; hit")]);
        assert_eq!(claim(&both), Some(true));
    }

    #[test]
    fn via_comments_and_traffic_server_codes() {
        let v = |s| claim(&h(&[("Via", s)]));
        assert_eq!(v("1.1 ats (ApacheTrafficServer/9.2 [cHs f ])"), Some(true));
        assert_eq!(v("1.1 ats (ApacheTrafficServer/9.2 [cRs f ])"), Some(true));
        assert_eq!(v("1.1 ats (ApacheTrafficServer/9.2 [cMsSf ])"), Some(false));
        assert_eq!(v("1.1 cacheoff, 1.1 edge (Product/1 HIT)"), Some(true));
        assert_eq!(v("1.1 cacheoff"), None);
    }

    #[test]
    fn the_collector_s_verdict_passed_on_is_no_claim() {
        let relayed = h(&[("X-Cache", "HIT from cacheoff-collector"), ("Age", "4")]);
        assert_eq!(claim(&relayed), None);
        assert_eq!(collector_claim(&relayed), Some(true));
        let own = h(&[
            ("X-Cache", "MISS from cacheoff-collector"),
            ("X-Cache", "HIT from squid"),
        ]);
        assert_eq!(claim(&own), Some(true));
        let varnish = |v| {
            claim(&h(&[
                ("X-Cache", "HIT from cacheoff-collector"),
                ("X-Varnish", v),
            ]))
        };
        assert_eq!(varnish("32770 3"), Some(true));
        assert_eq!(varnish("32770"), Some(false));
    }

    #[test]
    fn age_alone_is_a_hit_and_nothing_says_nothing() {
        assert_eq!(claim(&h(&[("Age", "3")])), Some(true));
        assert_eq!(claim(&h(&[("Age", "0")])), None);
        assert_eq!(claim(&h(&[("Age", "3"), ("X-Cache", "MISS")])), Some(false));
        assert_eq!(claim(&h(&[("Server", "x")])), None);
    }
}
