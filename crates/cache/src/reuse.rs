//! Whether a stored response answers a request as is (RFC 9111 §4,
//! §4.2.4, §5.2.1; RFC 5861), from the request's directives, the stored
//! [`Freshness`] and `now`.
//!
//! Choices where the RFCs leave room:
//! - Request `max-age=N` accepts an age up to N inclusive ("less than or
//!   equal"), so `max-age=0` still takes a copy stored this very second.
//! - `min-fresh=N` needs `lifetime >= age + N`.
//! - A stale copy is served only when explicitly allowed (the request's
//!   `max-stale`, the response's `stale-while-revalidate`, or on an origin
//!   error `stale-if-error` of either side), never when the response says
//!   `no-cache`, `must-revalidate`, `proxy-revalidate` or `s-maxage`
//!   (§4.2.4 makes these win over RFC 5861).
//! - Without `stale-if-error`, an unreachable origin is an error, even
//!   though §4.2.4 would let a disconnected cache serve stale.

use crate::control::Directives;
use crate::freshness::Freshness;

/// What the proxy does with a stored response it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Serve it: fresh and acceptable to the request.
    Fresh,
    /// Serve it although stale: the request's `max-stale` allows it.
    Stale,
    /// Serve it stale and revalidate in the background (RFC 5861 §3).
    /// A proxy that cannot revalidate in the background treats this as
    /// [`Reuse::Validate`].
    StaleWhileRevalidate,
    /// Ask the origin first, with the stored validators.
    Validate,
    /// `only-if-cached` and the copy cannot be served without the origin:
    /// answer 504 (§5.2.1.7).
    GatewayTimeout,
}

/// The decision for a request with directives `request` and a stored
/// response with `fresh`, at `now`. Without a stored response, a request
/// with `only-if-cached` gets 504: see [`Directives::only_if_cached`].
pub fn reuse(request: &Directives, fresh: &Freshness, now: u64) -> Reuse {
    let r = decide(request, fresh, now);
    if request.only_if_cached && r == Reuse::Validate {
        Reuse::GatewayTimeout
    } else {
        r
    }
}

fn decide(request: &Directives, fresh: &Freshness, now: u64) -> Reuse {
    if request.no_cache || fresh.no_cache {
        return Reuse::Validate;
    }
    let age = fresh.current_age(now);
    let lifetime = fresh.lifetime();
    if request.max_age.is_some_and(|m| age > m) {
        return Reuse::Validate;
    }
    if lifetime > age {
        let enough = request
            .min_fresh
            .is_none_or(|m| lifetime >= age.saturating_add(m));
        return if enough {
            Reuse::Fresh
        } else {
            Reuse::Validate
        };
    }
    if fresh.never_stale() {
        return Reuse::Validate;
    }
    if request.max_stale.is_some_and(|m| age - lifetime <= m) {
        return Reuse::Stale;
    }
    if fresh.may_serve_stale_while_revalidate(now) {
        return Reuse::StaleWhileRevalidate;
    }
    Reuse::Validate
}

/// What the proxy answers when the origin fails (unreachable, or a 500,
/// 502, 503 or 504 reply) while it holds a stale copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Serve the stale copy (RFC 5861 §4 `stale-if-error`).
    ServeStale,
    /// The copy must not be served stale: answer 504 (§5.2.2.2).
    GatewayTimeout,
    /// Nothing allows the copy: the proxy's usual error (relay the
    /// origin's 5xx, or its own 502/504).
    Error,
}

/// The decision when the origin failed, at `now`. The request's own
/// `stale-if-error` widens the response's window (RFC 5861 §4).
pub fn on_origin_error(request: &Directives, fresh: &Freshness, now: u64) -> OnError {
    if fresh.never_stale() {
        return OnError::GatewayTimeout;
    }
    let window = match (fresh.stale_if_error, request.stale_if_error) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    if request.no_cache || !fresh.within(window, now) {
        OnError::Error
    } else {
        OnError::ServeStale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::MAX_DELTA;

    const T0: u64 = 1_800_000_000;

    fn req(cc: &str) -> Directives {
        Directives::parse([("Cache-Control", cc.as_bytes())])
    }

    /// Stored at T0 with these response directives.
    fn stored(cc: &str) -> Freshness {
        Freshness::of_reply([("Cache-Control", cc.as_bytes())], T0, T0)
    }

    #[test]
    fn rfc9111_4_2_fresh_is_served_stale_is_validated() {
        let f = stored("max-age=10");
        assert_eq!(reuse(&req(""), &f, T0 + 9), Reuse::Fresh);
        assert_eq!(reuse(&req(""), &f, T0 + 10), Reuse::Validate);
        assert_eq!(
            reuse(&req(""), &stored("no-cache, max-age=10"), T0),
            Reuse::Validate
        );
    }

    #[test]
    fn rfc9111_5_2_1_4_request_no_cache_validates() {
        assert_eq!(
            reuse(&req("no-cache"), &stored("max-age=10"), T0),
            Reuse::Validate
        );
        let pragma = Directives::parse([("Pragma", b"no-cache".as_slice())]);
        assert_eq!(reuse(&pragma, &stored("max-age=10"), T0), Reuse::Validate);
    }

    #[test]
    fn rfc9111_5_2_1_1_request_max_age() {
        let f = stored("max-age=100");
        assert_eq!(reuse(&req("max-age=5"), &f, T0 + 5), Reuse::Fresh);
        assert_eq!(reuse(&req("max-age=5"), &f, T0 + 6), Reuse::Validate);
        assert_eq!(reuse(&req("max-age=0"), &f, T0), Reuse::Fresh);
        assert_eq!(reuse(&req("max-age=0"), &f, T0 + 1), Reuse::Validate);
        // max-stale does not excuse an age over max-age.
        assert_eq!(
            reuse(&req("max-age=5, max-stale"), &f, T0 + 6),
            Reuse::Validate
        );
        // An invalid request max-age is ignored.
        assert_eq!(reuse(&req("max-age=x"), &f, T0 + 50), Reuse::Fresh);
    }

    #[test]
    fn rfc9111_5_2_1_3_min_fresh() {
        let f = stored("max-age=100");
        assert_eq!(reuse(&req("min-fresh=30"), &f, T0 + 70), Reuse::Fresh);
        assert_eq!(reuse(&req("min-fresh=30"), &f, T0 + 71), Reuse::Validate);
        assert_eq!(
            reuse(&req(&format!("min-fresh={MAX_DELTA}")), &f, T0),
            Reuse::Validate
        );
    }

    #[test]
    fn rfc9111_5_2_1_2_max_stale() {
        let f = stored("max-age=10");
        assert_eq!(reuse(&req("max-stale=5"), &f, T0 + 15), Reuse::Stale);
        assert_eq!(reuse(&req("max-stale=5"), &f, T0 + 16), Reuse::Validate);
        assert_eq!(reuse(&req("max-stale"), &f, T0 + 1_000_000), Reuse::Stale);
        // Never over must-revalidate, proxy-revalidate, s-maxage (§4.2.4).
        for strict in [
            "max-age=10, must-revalidate",
            "max-age=10, proxy-revalidate",
            "s-maxage=10",
        ] {
            assert_eq!(
                reuse(&req("max-stale"), &stored(strict), T0 + 11),
                Reuse::Validate,
                "{strict}"
            );
        }
    }

    #[test]
    fn rfc5861_3_stale_while_revalidate() {
        let f = stored("max-age=10, stale-while-revalidate=5");
        assert_eq!(reuse(&req(""), &f, T0 + 12), Reuse::StaleWhileRevalidate);
        assert_eq!(reuse(&req(""), &f, T0 + 16), Reuse::Validate);
        assert_eq!(reuse(&req("no-cache"), &f, T0 + 12), Reuse::Validate);
        let strict = stored("max-age=10, must-revalidate, stale-while-revalidate=5");
        assert_eq!(reuse(&req(""), &strict, T0 + 12), Reuse::Validate);
    }

    #[test]
    fn rfc9111_5_2_1_7_only_if_cached() {
        let f = stored("max-age=10");
        assert_eq!(reuse(&req("only-if-cached"), &f, T0 + 1), Reuse::Fresh);
        assert_eq!(
            reuse(&req("only-if-cached"), &f, T0 + 11),
            Reuse::GatewayTimeout
        );
        assert_eq!(
            reuse(&req("only-if-cached, max-stale"), &f, T0 + 11),
            Reuse::Stale
        );
        assert_eq!(
            reuse(&req("only-if-cached, no-cache"), &f, T0),
            Reuse::GatewayTimeout
        );
    }

    #[test]
    fn rfc5861_4_and_rfc9111_5_2_2_2_origin_errors() {
        let f = stored("max-age=10, stale-if-error=60");
        assert_eq!(on_origin_error(&req(""), &f, T0 + 70), OnError::ServeStale);
        assert_eq!(on_origin_error(&req(""), &f, T0 + 71), OnError::Error);
        assert_eq!(
            on_origin_error(&req("stale-if-error=100"), &f, T0 + 100),
            OnError::ServeStale
        );
        assert_eq!(
            on_origin_error(&req("no-cache"), &f, T0 + 20),
            OnError::Error
        );
        let plain = stored("max-age=10");
        assert_eq!(on_origin_error(&req(""), &plain, T0 + 20), OnError::Error);
        assert_eq!(
            on_origin_error(&req("stale-if-error=30"), &plain, T0 + 20),
            OnError::ServeStale
        );
        for strict in [
            "max-age=10, must-revalidate, stale-if-error=60",
            "max-age=10, proxy-revalidate",
            "s-maxage=10",
            "no-cache",
        ] {
            assert_eq!(
                on_origin_error(&req(""), &stored(strict), T0 + 20),
                OnError::GatewayTimeout,
                "{strict}"
            );
        }
    }
}
