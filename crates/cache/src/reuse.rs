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
