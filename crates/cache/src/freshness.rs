//! When a stored reply may be used without asking the origin (RFC 9111
//! §4.2), and whether it may be stored at all (§3). Time is an input:
//! every function takes `now` in Unix seconds, so tests use a manual clock.

use crate::control::Directives;
use cacheoff_http::date;
use serde::{Deserialize, Serialize};

/// Heuristic freshness is this share of the time since the last
/// modification (RFC 9111 §4.2.2 suggests 10%) ...
const HEURISTIC_SHARE: f64 = 0.10;
/// ... but never more than a day, as Squid's default refresh pattern caps it.
const HEURISTIC_CAP_S: u64 = 24 * 3600;

/// Statuses a shared cache may store without explicit freshness
/// (RFC 9110 §15.1 "heuristically cacheable"), minus the ones this cache
/// cannot reproduce (206 partial content, 204/405/414/501 are not worth it).
fn heuristically_cacheable(status: u16) -> bool {
    matches!(status, 200 | 203 | 300 | 301 | 308 | 404 | 410)
}

/// The caching facts of a stored reply, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    /// When the request that fetched (or last validated) the reply was sent.
    pub request_time: u64,
    /// When its reply arrived.
    pub response_time: u64,
    /// The reply's `Date` (else `response_time`).
    pub date: u64,
    /// The reply's `Age` header.
    pub age: u64,
    pub last_modified: Option<u64>,
    pub expires: Option<u64>,
    /// Explicit lifetime from `s-maxage` or `max-age`.
    pub max_age: Option<u64>,
    /// `no-cache`: validate before every use.
    pub no_cache: bool,
    pub must_revalidate: bool,
}

impl Freshness {
    /// The facts of a reply received at `response_time` to a request sent
    /// at `request_time`.
    pub fn of_reply<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
        request_time: u64,
        response_time: u64,
    ) -> Freshness {
        let cc = Directives::parse(headers.clone());
        let mut f = Freshness {
            request_time,
            response_time,
            date: response_time,
            age: 0,
            last_modified: None,
            expires: None,
            max_age: cc.s_maxage.or(cc.max_age),
            no_cache: cc.no_cache,
            must_revalidate: cc.must_revalidate,
        };
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("date") {
                if let Some(d) = date::parse(value) {
                    f.date = d;
                }
            } else if name.eq_ignore_ascii_case("age") {
                f.age = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
            } else if name.eq_ignore_ascii_case("last-modified") {
                f.last_modified = date::parse(value);
            } else if name.eq_ignore_ascii_case("expires") {
                // An invalid Expires means "already expired" (§5.3).
                f.expires = Some(date::parse(value).unwrap_or(0));
            }
        }
        f
    }

    /// How long the reply stays fresh after its `Date` (§4.2.1).
    pub fn lifetime(&self) -> u64 {
        if self.no_cache {
            return 0;
        }
        if let Some(s) = self.max_age {
            return s;
        }
        if let Some(e) = self.expires {
            return e.saturating_sub(self.date);
        }
        match self.last_modified {
            Some(lm) if lm <= self.date => {
                let h = ((self.date - lm) as f64 * HEURISTIC_SHARE) as u64;
                h.min(HEURISTIC_CAP_S)
            }
            _ => 0,
        }
    }

    /// The reply's age at `now` (§4.2.3).
    pub fn current_age(&self, now: u64) -> u64 {
        let apparent = self.response_time.saturating_sub(self.date);
        let delay = self.response_time.saturating_sub(self.request_time);
        let initial = apparent.max(self.age + delay);
        initial + now.saturating_sub(self.response_time)
    }

    /// Whether the reply may be served at `now` without validation.
    pub fn is_fresh(&self, now: u64) -> bool {
        self.lifetime() > self.current_age(now)
    }

    /// After a `304` from the origin: the stored reply is fresh again,
    /// with the validating reply's dates (§4.3.4).
    pub fn revalidated(&self, by: &Freshness) -> Freshness {
        Freshness {
            last_modified: by.last_modified.or(self.last_modified),
            expires: by.expires.or(self.expires),
            max_age: by.max_age.or(self.max_age),
            ..*by
        }
    }
}

/// Whether a shared cache may store a reply (RFC 9111 §3): a GET, a status
/// it understands, neither side saying `no-store`, not `private`, and
/// either explicit freshness or a heuristically cacheable status.
/// `authorized`: the request carried `Authorization` (§3.5).
pub fn storable(
    status: u16,
    request: &Directives,
    reply: &Directives,
    has_expires: bool,
    authorized: bool,
) -> bool {
    if request.no_store || reply.no_store || reply.private {
        return false;
    }
    if authorized && !(reply.public || reply.s_maxage.is_some() || reply.must_revalidate) {
        return false;
    }
    let explicit = has_expires || reply.max_age.is_some() || reply.s_maxage.is_some();
    // Partial content needs range support this cache lacks.
    status >= 200 && status != 206 && (heuristically_cacheable(status) || explicit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_800_000_000;

    fn date(t: u64) -> String {
        date::format(t as i64)
    }

    fn reply(h: &[(&str, String)], at: u64) -> Freshness {
        Freshness::of_reply(h.iter().map(|(n, v)| (*n, v.as_bytes())), at, at)
    }

    #[test]
    fn expires_gives_the_lifetime_and_a_manual_clock_crosses_it() {
        let f = reply(&[("Date", date(T0)), ("Expires", date(T0 + 100))], T0);
        assert_eq!(f.lifetime(), 100);
        assert!(f.is_fresh(T0 + 99));
        assert!(!f.is_fresh(T0 + 100));
    }

    #[test]
    fn s_maxage_beats_max_age_beats_expires() {
        let h = |cc: &str| {
            reply(
                &[
                    ("Date", date(T0)),
                    ("Expires", date(T0 + 1000)),
                    ("Cache-Control", cc.to_string()),
                ],
                T0,
            )
            .lifetime()
        };
        assert_eq!(h("max-age=50"), 50);
        assert_eq!(h("max-age=50, s-maxage=7"), 7);
        assert_eq!(h("public"), 1000);
        assert_eq!(h("no-cache, max-age=50"), 0);
    }

    #[test]
    fn heuristic_freshness_is_a_tenth_of_the_age_capped_at_a_day() {
        let f = reply(
            &[("Date", date(T0)), ("Last-Modified", date(T0 - 1000))],
            T0,
        );
        assert_eq!(f.lifetime(), 100);
        let f = reply(
            &[
                ("Date", date(T0)),
                ("Last-Modified", date(T0 - 365 * 86400)),
            ],
            T0,
        );
        assert_eq!(f.lifetime(), 86400);
        // Nothing to go on: stale at once.
        assert_eq!(reply(&[("Date", date(T0))], T0).lifetime(), 0);
        // An invalid Expires means already expired, whatever LM says.
        let f = reply(
            &[
                ("Date", date(T0)),
                ("Last-Modified", date(T0 - 1000)),
                ("Expires", "0".into()),
            ],
            T0,
        );
        assert!(!f.is_fresh(T0));
    }

    #[test]
    fn age_counts_the_upstream_age_the_trip_and_the_time_stored() {
        let f = Freshness::of_reply(
            [
                ("Date", date(T0).as_bytes()),
                ("Age", b"30".as_slice()),
                ("Cache-Control", b"max-age=100".as_slice()),
            ],
            T0,
            T0 + 2,
        );
        // 30 upstream + 2 in flight + 10 resident.
        assert_eq!(f.current_age(T0 + 12), 42);
        assert!(f.is_fresh(T0 + 69));
        assert!(!f.is_fresh(T0 + 70));
    }

    #[test]
    fn revalidation_takes_the_new_dates() {
        let old = reply(&[("Date", date(T0)), ("Expires", date(T0 + 10))], T0);
        assert!(!old.is_fresh(T0 + 50));
        let by = reply(
            &[("Date", date(T0 + 50)), ("Expires", date(T0 + 60))],
            T0 + 50,
        );
        let now = old.revalidated(&by);
        assert!(now.is_fresh(T0 + 55));
        assert!(!now.is_fresh(T0 + 60));
    }

    #[test]
    fn what_a_shared_cache_may_store() {
        let d = |s: &str| Directives::parse([("Cache-Control", s.as_bytes())]);
        let none = Directives::default();
        assert!(storable(200, &none, &d("public"), false, false));
        assert!(!storable(200, &none, &d("private, no-cache"), true, false));
        assert!(!storable(200, &d("no-store"), &none, false, false));
        assert!(!storable(200, &none, &d("no-store"), false, false));
        assert!(!storable(200, &none, &none, false, true));
        assert!(storable(200, &none, &d("s-maxage=5"), false, true));
        assert!(!storable(302, &none, &none, false, false));
        assert!(storable(302, &none, &d("max-age=5"), false, false));
        assert!(!storable(500, &none, &none, false, false));
        assert!(!storable(206, &none, &d("max-age=5"), false, false));
    }
}
