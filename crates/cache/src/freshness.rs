//! When a stored reply may be used without asking the origin (RFC 9111
//! §4.2); whether it may be stored at all is [`crate::storage`]'s (§3).
//! Time is an input: every function takes `now` in Unix seconds, so tests
//! use a manual clock.

use crate::control::{delta_seconds, Directives, MAX_DELTA};
use crate::targeted::Targeted;
use cacheoff_http::date;
use serde::{Deserialize, Serialize};

/// Heuristic freshness is this share of the time since the last
/// modification (RFC 9111 §4.2.2 suggests 10%) ...
const HEURISTIC_SHARE: f64 = 0.10;
/// ... but never more than a day, as Squid's default refresh pattern caps it.
const HEURISTIC_CAP_S: u64 = 24 * 3600;

/// Statuses RFC 9110 §15.1 calls heuristically cacheable. 206 is among
/// them, but this cache never stores partial content ([`crate::storage`]).
pub fn heuristically_cacheable(status: u16) -> bool {
    matches!(
        status,
        200 | 203 | 204 | 206 | 300 | 301 | 308 | 404 | 405 | 410 | 414 | 501
    )
}

fn yes() -> bool {
    true
}

/// The caching facts of a stored reply, in Unix seconds. Fields added
/// after the first disk format default when read from older files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    /// When the request that fetched (or last validated) the reply was sent.
    pub request_time: u64,
    /// When its reply arrived.
    pub response_time: u64,
    /// The reply's `Date` (else `response_time`).
    pub date: u64,
    /// The reply's `Age` header (0 when absent or invalid).
    pub age: u64,
    pub last_modified: Option<u64>,
    /// `Expires`; an invalid one is `Some(0)`, already expired (§5.3).
    pub expires: Option<u64>,
    /// Explicit lifetime from `s-maxage` or `max-age` (0 when invalid).
    pub max_age: Option<u64>,
    /// `no-cache`: validate before every use.
    pub no_cache: bool,
    /// Never serve stale: `must-revalidate`, `proxy-revalidate` or
    /// `s-maxage` (a shared cache honours all three).
    pub must_revalidate: bool,
    /// Heuristic freshness is allowed: the status is heuristically
    /// cacheable or the reply is `public` (§4.2.2).
    #[serde(default = "yes")]
    pub heuristic: bool,
    #[serde(default)]
    pub stale_while_revalidate: Option<u64>,
    #[serde(default)]
    pub stale_if_error: Option<u64>,
}

impl Freshness {
    /// The facts of a reply received at `response_time` to a request sent
    /// at `request_time`, read as a 200 by a cache that obeys no targeted
    /// field.
    pub fn of_reply<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
        request_time: u64,
        response_time: u64,
    ) -> Freshness {
        Freshness::of_response(200, headers, request_time, response_time, &Targeted::none())
    }

    /// The facts of a `status` reply for a cache obeying `targeted`
    /// fields: a valid targeted field replaces `Cache-Control` and
    /// `Expires` (RFC 9213 §2.1).
    pub fn of_response<'a, H>(
        status: u16,
        headers: H,
        request_time: u64,
        response_time: u64,
        targeted: &Targeted,
    ) -> Freshness
    where
        H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let (cc, use_expires) = match targeted.directives(headers.clone()) {
            Some(d) => (d, false),
            None => (Directives::parse(headers.clone()), true),
        };
        let mut f = Freshness {
            request_time,
            response_time,
            date: response_time,
            age: 0,
            last_modified: None,
            expires: None,
            max_age: cc
                .s_maxage
                .or(cc.max_age)
                .or(cc.invalid_lifetime.then_some(0)),
            no_cache: cc.no_cache,
            must_revalidate: cc.never_stale(),
            heuristic: heuristically_cacheable(status) || cc.public,
            stale_while_revalidate: cc.stale_while_revalidate,
            stale_if_error: cc.stale_if_error,
        };
        let (mut date, mut age, mut lm, mut expires) = (false, false, false, false);
        // Repeated fields: the first line counts (§4.2.1, §5.1).
        for (name, value) in headers {
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("date") && !date {
                date = true;
                f.date = date::parse(value).unwrap_or(response_time);
            } else if is("age") && !age {
                age = true;
                f.age = age_value(value).unwrap_or(0);
            } else if is("last-modified") && !lm {
                lm = true;
                f.last_modified = date::parse(value);
            } else if is("expires") && !expires && use_expires {
                expires = true;
                // An invalid Expires means "already expired" (§5.3).
                f.expires = Some(date::parse(value).unwrap_or(0));
            }
        }
        f
    }

    /// How long the reply stays fresh after its `Date` (§4.2.1): the
    /// explicit lifetime, else `Expires - Date`, else the heuristic when
    /// allowed and `Last-Modified` is known (§4.2.2).
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
            Some(lm) if self.heuristic && lm <= self.date => {
                let h = ((self.date - lm) as f64 * HEURISTIC_SHARE) as u64;
                h.min(HEURISTIC_CAP_S)
            }
            _ => 0,
        }
    }

    /// The reply's age at `now` (§4.2.3): the corrected initial age plus
    /// the time it has been stored. Sums saturate.
    pub fn current_age(&self, now: u64) -> u64 {
        let apparent = self.response_time.saturating_sub(self.date);
        let delay = self.response_time.saturating_sub(self.request_time);
        let corrected = self.age.saturating_add(delay);
        let initial = apparent.max(corrected);
        initial.saturating_add(now.saturating_sub(self.response_time))
    }

    /// The `Age` value to send with the stored reply at `now` (§5.1):
    /// its current age, clamped to 2^31.
    pub fn age_header(&self, now: u64) -> u64 {
        self.current_age(now).min(MAX_DELTA)
    }

    /// Whether the reply may be served at `now` without validation.
    pub fn is_fresh(&self, now: u64) -> bool {
        self.lifetime() > self.current_age(now)
    }

    /// Seconds past its lifetime at `now` (0 while fresh).
    pub fn staleness(&self, now: u64) -> u64 {
        self.current_age(now).saturating_sub(self.lifetime())
    }

    /// A stale copy may never be served, not even when the origin is down
    /// (§4.2.4): the proxy answers 504 instead.
    pub fn never_stale(&self) -> bool {
        self.no_cache || self.must_revalidate
    }

    /// RFC 5861 §3: stale at `now`, but within `stale-while-revalidate`:
    /// serve it and revalidate in the background.
    pub fn may_serve_stale_while_revalidate(&self, now: u64) -> bool {
        self.within(self.stale_while_revalidate, now)
    }

    /// RFC 5861 §4: stale at `now`, the origin failed (unreachable, or a
    /// 500, 502, 503 or 504), and within `stale-if-error`.
    pub fn may_serve_stale_if_error(&self, now: u64) -> bool {
        self.within(self.stale_if_error, now)
    }

    /// Stale, allowed to be served stale, and at most `window` past expiry.
    pub(crate) fn within(&self, window: Option<u64>, now: u64) -> bool {
        !self.is_fresh(now)
            && !self.never_stale()
            && window.is_some_and(|w| self.staleness(now) <= w)
    }

    /// After a `304` from the origin: the stored reply is fresh again,
    /// with the validating reply's dates (§4.3.4). Prefer
    /// [`crate::Object::freshened`], which recomputes from merged headers.
    pub fn revalidated(&self, by: &Freshness) -> Freshness {
        Freshness {
            last_modified: by.last_modified.or(self.last_modified),
            expires: by.expires.or(self.expires),
            max_age: by.max_age.or(self.max_age),
            ..*by
        }
    }
}

/// An `Age` field value (§5.1): its first list member as delta-seconds;
/// None (treat as absent) when that member is negative, fractional or not
/// a number. Overflow saturates at 2^31.
pub fn age_value(value: &[u8]) -> Option<u64> {
    let first = value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .find(|m| !m.is_empty())?;
    delta_seconds(first)
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

    fn status(s: u16, h: &[(&str, String)], t: &Targeted) -> Freshness {
        Freshness::of_response(s, h.iter().map(|(n, v)| (*n, v.as_bytes())), T0, T0, t)
    }

    #[test]
    fn rfc9111_4_2_1_expires_gives_the_lifetime_and_a_manual_clock_crosses_it() {
        let f = reply(&[("Date", date(T0)), ("Expires", date(T0 + 100))], T0);
        assert_eq!(f.lifetime(), 100);
        assert!(f.is_fresh(T0 + 99));
        assert!(!f.is_fresh(T0 + 100));
        // Expires before Date: stale at once, no underflow.
        let f = reply(&[("Date", date(T0)), ("Expires", date(T0 - 100))], T0);
        assert_eq!(f.lifetime(), 0);
    }

    #[test]
    fn rfc9111_4_2_1_s_maxage_beats_max_age_beats_expires() {
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
        assert_eq!(h("s-maxage=7, max-age=50"), 7);
        assert_eq!(h("public"), 1000);
        assert_eq!(h("no-cache, max-age=50"), 0);
        // An invalid max-age makes the reply stale, whatever Expires says;
        // a valid s-maxage still rules.
        assert_eq!(h("max-age=soon"), 0);
        assert_eq!(h("max-age=soon, s-maxage=9"), 9);
    }

    #[test]
    fn rfc9111_5_3_invalid_expires_means_already_expired() {
        for bad in ["0", "-1", "yesterday", ""] {
            let f = reply(
                &[
                    ("Date", date(T0)),
                    ("Last-Modified", date(T0 - 100_000)),
                    ("Expires", bad.into()),
                ],
                T0,
            );
            assert_eq!(f.expires, Some(0), "{bad:?}");
            assert!(!f.is_fresh(T0), "{bad:?}");
        }
        // Repeated Expires: the first line counts.
        let f = reply(
            &[
                ("Date", date(T0)),
                ("Expires", date(T0 + 5)),
                ("Expires", date(T0 + 500)),
            ],
            T0,
        );
        assert_eq!(f.lifetime(), 5);
    }

    #[test]
    fn rfc9111_4_2_2_heuristic_freshness_is_a_tenth_of_the_age_capped_at_a_day() {
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
        // A Last-Modified in the future gives nothing.
        let f = reply(&[("Date", date(T0)), ("Last-Modified", date(T0 + 10))], T0);
        assert_eq!(f.lifetime(), 0);
    }

    #[test]
    fn rfc9111_4_2_2_heuristics_only_for_heuristically_cacheable_statuses() {
        let lm = [("Date", date(T0)), ("Last-Modified", date(T0 - 1000))];
        let none = Targeted::none();
        for s in [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501] {
            assert_eq!(status(s, &lm, &none).lifetime(), 100, "{s}");
        }
        for s in [302, 303, 307, 400, 403, 500, 502, 503] {
            assert_eq!(status(s, &lm, &none).lifetime(), 0, "{s}");
        }
        // `public` marks any status explicitly cacheable.
        let public = [
            lm[0].clone(),
            lm[1].clone(),
            ("Cache-Control", "public".into()),
        ];
        assert_eq!(status(302, &public, &none).lifetime(), 100);
        // Explicit expiration turns heuristics off.
        let explicit = [
            lm[0].clone(),
            lm[1].clone(),
            ("Cache-Control", "max-age=3".into()),
        ];
        assert_eq!(status(200, &explicit, &none).lifetime(), 3);
    }

    #[test]
    fn rfc9111_4_2_3_age_counts_the_upstream_age_the_trip_and_the_time_stored() {
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
        assert_eq!(f.age_header(T0 + 12), 42);
        assert!(f.is_fresh(T0 + 69));
        assert!(!f.is_fresh(T0 + 70));
    }

    #[test]
    fn rfc9111_4_2_3_apparent_age_wins_when_larger_and_never_negative() {
        // Date 50s before arrival, no Age: apparent age 50.
        let f = Freshness::of_reply([("Date", date(T0 - 50).as_bytes())], T0 - 1, T0);
        assert_eq!(f.current_age(T0), 50);
        // Date in the future (clock skew): apparent age 0, delay counts.
        let f = Freshness::of_reply([("Date", date(T0 + 500).as_bytes())], T0 - 3, T0);
        assert_eq!(f.current_age(T0 + 7), 10);
        // An invalid Date is the arrival time.
        let f = Freshness::of_reply([("Date", b"soon".as_slice())], T0, T0);
        assert_eq!((f.date, f.current_age(T0)), (T0, 0));
    }

    #[test]
    fn rfc9111_5_1_age_first_value_invalid_ignored_overflow_saturates() {
        assert_eq!(age_value(b"12"), Some(12));
        assert_eq!(age_value(b" 12 , 99"), Some(12));
        assert_eq!(age_value(b", 7"), Some(7));
        for bad in [&b"-5"[..], b"1.5", b"ten", b"", b"+3", b"0x10"] {
            assert_eq!(age_value(bad), None, "{bad:?}");
        }
        assert_eq!(age_value(b"99999999999999999999999"), Some(MAX_DELTA));
        let f = |h: &[(&str, &str)]| {
            Freshness::of_reply(h.iter().map(|(n, v)| (*n, v.as_bytes())), T0, T0).age
        };
        assert_eq!(f(&[("Age", "5"), ("Age", "100")]), 5);
        assert_eq!(f(&[("Age", "-5")]), 0);
        assert_eq!(f(&[("Age", "abc"), ("Age", "9")]), 0);
        // Saturated ages and sums never wrap.
        let old = Freshness::of_reply([("Age", b"99999999999999999999".as_slice())], 0, 5);
        assert_eq!(old.current_age(u64::MAX), u64::MAX);
        assert_eq!(old.age_header(u64::MAX), MAX_DELTA);
    }

    #[test]
    fn rfc9111_4_2_3_an_object_that_arrived_old_expires_on_time() {
        let f = Freshness::of_reply(
            [
                ("Age", b"90".as_slice()),
                ("Cache-Control", b"max-age=100".as_slice()),
            ],
            T0,
            T0,
        );
        assert!(f.is_fresh(T0 + 9));
        assert!(!f.is_fresh(T0 + 10));
        assert_eq!(f.age_header(T0 + 5), 95);
    }

    #[test]
    fn rfc9111_5_2_2_revalidate_flags_forbid_stale() {
        let cc = |v: &str| reply(&[("Cache-Control", v.into())], T0);
        assert!(cc("must-revalidate").never_stale());
        assert!(cc("proxy-revalidate").never_stale());
        assert!(cc("s-maxage=5").never_stale());
        assert!(cc("no-cache").never_stale());
        assert!(!cc("max-age=5").never_stale());
    }

    #[test]
    fn rfc5861_stale_while_revalidate_and_stale_if_error_windows() {
        let f = reply(
            &[
                ("Date", date(T0)),
                (
                    "Cache-Control",
                    "max-age=10, stale-while-revalidate=5, stale-if-error=60".into(),
                ),
            ],
            T0,
        );
        assert!(!f.may_serve_stale_while_revalidate(T0 + 9)); // still fresh
        assert!(f.may_serve_stale_while_revalidate(T0 + 10));
        assert!(f.may_serve_stale_while_revalidate(T0 + 15));
        assert!(!f.may_serve_stale_while_revalidate(T0 + 16));
        assert!(f.may_serve_stale_if_error(T0 + 70));
        assert!(!f.may_serve_stale_if_error(T0 + 71));
        let strict = reply(
            &[(
                "Cache-Control",
                "max-age=10, must-revalidate, stale-if-error=60".into(),
            )],
            T0,
        );
        assert!(!strict.may_serve_stale_if_error(T0 + 11));
        assert!(
            !reply(&[("Cache-Control", "max-age=1".into())], T0).may_serve_stale_if_error(T0 + 2)
        );
    }

    #[test]
    fn rfc9213_targeted_field_replaces_cache_control_and_expires() {
        let cdn = Targeted::cdn();
        let h = [
            ("Date", date(T0)),
            ("Expires", date(T0 + 1000)),
            ("Cache-Control", "no-cache, max-age=5".into()),
            ("CDN-Cache-Control", "max-age=60".into()),
        ];
        let f = status(200, &h, &cdn);
        assert_eq!((f.lifetime(), f.no_cache, f.expires), (60, false, None));
        // Not a surrogate: Cache-Control as usual.
        assert_eq!(status(200, &h, &Targeted::none()).lifetime(), 0);
        // An invalid targeted field falls back to Cache-Control and Expires.
        let h = [
            ("Date", date(T0)),
            ("Expires", date(T0 + 1000)),
            ("CDN-Cache-Control", "max-age=60,".into()),
        ];
        assert_eq!(status(200, &h, &cdn).lifetime(), 1000);
        // A valid targeted field without a lifetime ignores Expires too.
        let h = [
            ("Date", date(T0)),
            ("Expires", date(T0 + 1000)),
            ("Last-Modified", date(T0 - 1000)),
            ("CDN-Cache-Control", "public".into()),
        ];
        assert_eq!(status(200, &h, &cdn).lifetime(), 100);
    }

    #[test]
    fn rfc9111_4_3_4_revalidation_takes_the_new_dates() {
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
}
