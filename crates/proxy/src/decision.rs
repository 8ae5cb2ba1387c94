//! What the proxy did with one request, decided once: a [`Decision`],
//! made where the request's path through `answer` (or `conn`'s refusals)
//! ends, and everything said about the request derived from it here: the
//! access log's code ([`Decision::log_code`]), the reply's `Cache-Status`
//! and so `X-Cache` ([`Decision::cache_status`], which the Multiplier and
//! robots read as the proxy's claim), the counters ([`ProxyStats::count`],
//! which the console and the metrics read) and the status of the proxy's
//! own replies ([`Decision::own_status`]). docs/proxy.md tabulates them.

use crate::access_log::LogCode;
use crate::cache_status::{CacheStatus, Fwd};
use crate::ProxyStats;
use cacheoff_cache::Freshness;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the proxy did with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Served from the store without asking the origin (fresh, or stale as
    /// the request, `stale-while-revalidate` or the `stale` fault allow).
    Hit,
    /// Sent to the origin for this reason, and its reply relayed.
    Miss(Miss),
    /// A stale copy the origin confirmed (304), served.
    Revalidated,
    /// Answered by another request's fetch, which it waited for.
    Collapsed,
    /// A stale copy served because the origin failed (`stale-if-error`),
    /// with the origin's status if it answered.
    StaleServed(Option<u16>),
    /// Refused on the client's side: the request is not served.
    Refused(Refusal),
    /// Not answered: what failed on the far side.
    Error(Failure),
}

/// Why a request went to the origin (RFC 9211's `fwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Nothing stored answers it, nor may: a HEAD or a range of an object
    /// not stored, a stale copy another request is revalidating, a
    /// collapsed fetch that stored nothing for it.
    Uri,
    /// Its collapsed wait found the fetch late or cut off, and it led a
    /// fetch of its own in its place.
    TookOver,
    /// The client asked for a reload.
    Reload,
    /// A stale copy the origin replaced (or answered with an error the
    /// copy may not hide).
    Stale,
    /// The method is not served from the store: never counted a miss.
    Method,
    /// The proxy stores nothing (`--mem 0` without a disk).
    Bypass,
}

/// Why a request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The client's address is not allowed (`--allow`): 403, and the log
    /// says `TCP_DENIED`.
    Client,
    /// Where it goes is not allowed (`--allow-dest`): 403.
    Destination,
    /// Its body does not fit the upload budget: 503.
    Uploads,
    /// Its head or body came too slowly: 408.
    Timeout,
    /// Over `max_client_connections`: 503 before any request is read (so
    /// nothing is logged).
    Overloaded,
    /// Anything else wrong with it, by its status (400, 413, 417, 421,
    /// 431, 501, 508, ...).
    Bad(u16),
}

impl From<u16> for Refusal {
    fn from(status: u16) -> Refusal {
        Refusal::Bad(status)
    }
}

/// What failed when a request could not be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The origin, asked for this reason, sent no reply; the status the
    /// client gets instead (502, 503, 504, or 403 for an address
    /// `--allow-dest` refuses).
    Origin(Miss, u16),
    /// The origin answered a revalidation with this 5xx, and the copy may
    /// not be served stale: 504.
    MustRevalidate(u16),
    /// The origin, through the fetch this request waited for: the status
    /// that fetch's client got.
    Collapsed(u16),
    /// The store: nothing in it answers `only-if-cached` (504).
    OnlyIfCached,
    /// The proxy itself, on purpose (`--fault drop`, `garbage`,
    /// `huge-header`): no real reply.
    Fault,
}

impl Miss {
    fn fwd(self) -> Fwd {
        match self {
            Miss::Uri | Miss::TookOver => Fwd::UriMiss,
            Miss::Reload => Fwd::Request,
            Miss::Stale => Fwd::Stale,
            Miss::Method => Fwd::Method,
            Miss::Bypass => Fwd::Bypass,
        }
    }
}

impl Refusal {
    fn status(self) -> u16 {
        match self {
            Refusal::Client | Refusal::Destination => 403,
            Refusal::Uploads | Refusal::Overloaded => 503,
            Refusal::Timeout => 408,
            Refusal::Bad(status) => status,
        }
    }
}

/// The copy a reply carries, as its `Cache-Status` describes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Carried<'a> {
    /// Its status (the origin's).
    pub status: u16,
    pub fresh: &'a Freshness,
    /// It is (or now goes) in the store.
    pub stored: bool,
    pub now: u64,
}

impl Decision {
    /// Served from a stored copy the origin did not just send or confirm:
    /// where a real cache's bugs (and this proxy's faults) live.
    pub(crate) fn stored_copy(self) -> bool {
        matches!(
            self,
            Decision::Hit | Decision::Collapsed | Decision::StaleServed(_)
        )
    }

    /// The access log's code; `not_modified`: the reply is a 304 the proxy
    /// made from a copy for the client's condition. A miss whose fetch
    /// answered the condition logs `TCP_MISS` whatever its reason.
    pub(crate) fn log_code(self, not_modified: bool) -> LogCode {
        match self {
            d if d.stored_copy() && not_modified => LogCode::ImsHit,
            Decision::Hit | Decision::Collapsed | Decision::StaleServed(_) => LogCode::MemHit,
            Decision::Revalidated => LogCode::RefreshUnmodified,
            Decision::Miss(_) if not_modified => LogCode::Miss,
            Decision::Miss(Miss::Reload) => LogCode::ClientRefreshMiss,
            Decision::Miss(Miss::Stale) => LogCode::RefreshModified,
            Decision::Miss(_) => LogCode::Miss,
            Decision::Refused(Refusal::Client) => LogCode::Denied,
            Decision::Refused(_) | Decision::Error(_) => LogCode::None,
        }
    }

    /// The reply's `Cache-Status` member, for the copy it `carried` (none
    /// for the proxy's own replies).
    pub(crate) fn cache_status(self, carried: Option<Carried<'_>>) -> CacheStatus {
        let ttl = |cs: CacheStatus| match carried {
            Some(c) => cs.ttl_of(c.fresh, c.now),
            None => cs,
        };
        let fwd_status = carried.map(|c| c.status);
        match self {
            Decision::Hit => ttl(CacheStatus {
                hit: true,
                ..CacheStatus::default()
            }),
            Decision::Miss(why) => {
                let cs = CacheStatus {
                    fwd_status,
                    stored: carried.is_some_and(|c| c.stored),
                    ..CacheStatus::forwarded(why.fwd())
                };
                // Freshness left is said of a stored copy only.
                if cs.stored {
                    ttl(cs)
                } else {
                    cs
                }
            }
            Decision::Revalidated => ttl(CacheStatus {
                fwd_status: Some(304),
                stored: true,
                ..CacheStatus::forwarded(Fwd::Stale)
            }),
            Decision::Collapsed => ttl(CacheStatus {
                fwd_status,
                collapsed: true,
                ..CacheStatus::forwarded(Fwd::UriMiss)
            }),
            Decision::StaleServed(origin) => ttl(CacheStatus {
                fwd_status: origin,
                detail: Some("stale-if-error"),
                ..CacheStatus::forwarded(Fwd::Stale)
            }),
            Decision::Refused(Refusal::Overloaded) => CacheStatus::detail("overloaded"),
            Decision::Refused(_) => CacheStatus::detail("refused"),
            Decision::Error(Failure::Origin(why, _)) => CacheStatus {
                detail: Some("origin-error"),
                ..CacheStatus::forwarded(why.fwd())
            },
            Decision::Error(Failure::MustRevalidate(origin)) => CacheStatus {
                fwd_status: Some(origin),
                detail: Some("must-revalidate"),
                ..CacheStatus::forwarded(Fwd::Stale)
            },
            Decision::Error(Failure::Collapsed(_)) => CacheStatus {
                collapsed: true,
                detail: Some("origin-error"),
                ..CacheStatus::forwarded(Fwd::UriMiss)
            },
            Decision::Error(Failure::OnlyIfCached) => CacheStatus::detail("only-if-cached"),
            // Never written: the fault sends no real reply.
            Decision::Error(Failure::Fault) => CacheStatus::default(),
        }
    }

    /// The status of the proxy's own reply (a refusal, an error); `None`
    /// where the reply is a stored or relayed one, or none at all.
    pub(crate) fn own_status(self) -> Option<u16> {
        match self {
            Decision::Refused(r) => Some(r.status()),
            Decision::Error(f) => match f {
                Failure::Origin(_, status) | Failure::Collapsed(status) => Some(status),
                Failure::MustRevalidate(_) | Failure::OnlyIfCached => Some(504),
                Failure::Fault => None,
            },
            _ => None,
        }
    }
}

impl ProxyStats {
    /// Counts one request's decision: the one place that says which
    /// counters a decision moves. Called once per request, when its
    /// decision is final and before the client has any of its reply.
    pub(crate) fn count(&self, d: &Decision) {
        let add = |c: &AtomicU64| {
            c.fetch_add(1, Ordering::Relaxed);
        };
        // Asking the origin: a miss, except for methods the store never
        // serves; a stale copy checked is `stale`, and a miss only once
        // the origin replaces it.
        let asked = |why: Miss| match why {
            Miss::Uri | Miss::Reload | Miss::Bypass => add(&self.misses),
            Miss::TookOver => {
                add(&self.misses);
                add(&self.collapse_takeovers);
            }
            Miss::Stale => add(&self.stale),
            Miss::Method => {}
        };
        match *d {
            Decision::Hit => add(&self.hits),
            Decision::Collapsed => {
                add(&self.hits);
                add(&self.collapsed);
            }
            Decision::Miss(why) => {
                asked(why);
                if why == Miss::Stale {
                    add(&self.misses);
                }
            }
            Decision::Revalidated => {
                add(&self.stale);
                add(&self.revalidated);
            }
            Decision::StaleServed(_) => add(&self.stale),
            Decision::Refused(Refusal::Overloaded) => add(&self.connections_refused),
            Decision::Refused(r) => {
                add(&self.client_errors);
                match r {
                    Refusal::Timeout => add(&self.client_timeouts),
                    Refusal::Uploads => add(&self.uploads_refused),
                    Refusal::Destination => add(&self.destinations_denied),
                    _ => {}
                }
            }
            // Every error reply the proxy makes for the far side (the store
            // included) is a gateway error.
            Decision::Error(f) => {
                match f {
                    Failure::Origin(why, _) => asked(why),
                    Failure::MustRevalidate(_) => add(&self.stale),
                    Failure::Collapsed(_) => add(&self.misses),
                    Failure::OnlyIfCached => {}
                    // Not an error of the far side: counted as a request only.
                    Failure::Fault => return,
                }
                add(&self.origin_errors);
            }
        }
    }

    /// Counts a relayed reply the origin cut off midway: the request's
    /// decision (a miss) was counted when the reply began.
    pub(crate) fn count_cut(&self) {
        self.origin_errors.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every decision there is, once.
    fn all() -> Vec<Decision> {
        let misses = [
            Miss::Uri,
            Miss::TookOver,
            Miss::Reload,
            Miss::Stale,
            Miss::Method,
            Miss::Bypass,
        ];
        let mut v = vec![
            Decision::Hit,
            Decision::Revalidated,
            Decision::Collapsed,
            Decision::StaleServed(None),
            Decision::StaleServed(Some(500)),
        ];
        v.extend(misses.map(Decision::Miss));
        v.extend(
            [
                Refusal::Client,
                Refusal::Destination,
                Refusal::Uploads,
                Refusal::Timeout,
                Refusal::Overloaded,
                Refusal::Bad(400),
            ]
            .map(Decision::Refused),
        );
        v.extend(misses.map(|m| Decision::Error(Failure::Origin(m, 502))));
        v.extend(
            [
                Failure::MustRevalidate(500),
                Failure::Collapsed(503),
                Failure::OnlyIfCached,
                Failure::Fault,
            ]
            .map(Decision::Error),
        );
        v
    }

    /// The counters one decision moves, by name.
    fn counted(d: Decision) -> Vec<&'static str> {
        let s = ProxyStats::default();
        s.count(&d);
        let fields: [(&str, &AtomicU64); 12] = [
            ("hits", &s.hits),
            ("misses", &s.misses),
            ("stale", &s.stale),
            ("revalidated", &s.revalidated),
            ("collapsed", &s.collapsed),
            ("collapse_takeovers", &s.collapse_takeovers),
            ("client_errors", &s.client_errors),
            ("origin_errors", &s.origin_errors),
            ("connections_refused", &s.connections_refused),
            ("client_timeouts", &s.client_timeouts),
            ("uploads_refused", &s.uploads_refused),
            ("destinations_denied", &s.destinations_denied),
        ];
        for (name, c) in &fields {
            assert!(ProxyStats::get(c) <= 1, "{d:?} counts {name} twice");
        }
        let others = [&s.connections, &s.requests, &s.disk_errors, &s.slowed_hits];
        assert!(others.iter().all(|c| ProxyStats::get(c) == 0), "{d:?}");
        fields
            .iter()
            .filter(|(_, c)| ProxyStats::get(c) == 1)
            .map(|(n, _)| *n)
            .collect()
    }

    #[test]
    fn each_decision_moves_its_counters() {
        use Decision::*;
        let want = |d: Decision| -> &[&str] {
            match d {
                Hit => &["hits"],
                Collapsed => &["hits", "collapsed"],
                Revalidated => &["stale", "revalidated"],
                StaleServed(_) => &["stale"],
                Miss(self::Miss::TookOver) => &["misses", "collapse_takeovers"],
                Miss(self::Miss::Stale) => &["misses", "stale"],
                Miss(self::Miss::Method) => &[],
                Miss(_) => &["misses"],
                Refused(Refusal::Overloaded) => &["connections_refused"],
                Refused(Refusal::Timeout) => &["client_errors", "client_timeouts"],
                Refused(Refusal::Uploads) => &["client_errors", "uploads_refused"],
                Refused(Refusal::Destination) => &["client_errors", "destinations_denied"],
                Refused(_) => &["client_errors"],
                Error(Failure::Origin(self::Miss::TookOver, _)) => {
                    &["misses", "collapse_takeovers", "origin_errors"]
                }
                Error(Failure::Origin(self::Miss::Stale, _)) => &["stale", "origin_errors"],
                Error(Failure::Origin(self::Miss::Method, _)) => &["origin_errors"],
                Error(Failure::Origin(..)) => &["misses", "origin_errors"],
                Error(Failure::MustRevalidate(_)) => &["stale", "origin_errors"],
                Error(Failure::Collapsed(_)) => &["misses", "origin_errors"],
                Error(Failure::OnlyIfCached) => &["origin_errors"],
                Error(Failure::Fault) => &[],
            }
        };
        for d in all() {
            let mut want = want(d).to_vec();
            want.sort();
            let mut got = counted(d);
            got.sort();
            assert_eq!(got, want, "{d:?}");
        }
        let s = ProxyStats::default();
        s.count_cut();
        assert_eq!(ProxyStats::get(&s.origin_errors), 1);
    }

    #[test]
    fn each_decision_has_its_squid_code() {
        use Decision::*;
        for d in all() {
            let want = match d {
                Hit | Collapsed | StaleServed(_) => "TCP_MEM_HIT",
                Revalidated => "TCP_REFRESH_UNMODIFIED",
                Miss(self::Miss::Reload) => "TCP_CLIENT_REFRESH_MISS",
                Miss(self::Miss::Stale) => "TCP_REFRESH_MODIFIED",
                Miss(_) => "TCP_MISS",
                Refused(Refusal::Client) => "TCP_DENIED",
                Refused(_) | Error(_) => "TAG_NONE",
            };
            assert_eq!(d.log_code(false).squid_name(), want, "{d:?}");
            // A 304 made from a copy: an IMS hit when the copy was stored
            // already; a miss's own stays a plain miss.
            let ims = match d {
                Hit | Collapsed | StaleServed(_) => "TCP_IMS_HIT",
                Miss(_) => "TCP_MISS",
                _ => want,
            };
            assert_eq!(d.log_code(true).squid_name(), ims, "{d:?}");
        }
    }

    #[test]
    fn each_decision_says_what_it_did_in_cache_status() {
        use Decision::*;
        let fresh = Freshness::of_reply([("Cache-Control", b"max-age=60".as_slice())], 1000, 1000);
        let carried = |stored| Carried {
            status: 200,
            fresh: &fresh,
            stored,
            now: 1010,
        };
        let line = |cs: CacheStatus| {
            let mut out = Vec::new();
            cs.push(&mut out, crate::config::Role::Proxy);
            let s = String::from_utf8(out).unwrap();
            s.trim_end()
                .trim_start_matches("Cache-Status: cacheoff")
                .to_string()
        };
        for d in all() {
            let own = d.own_status().is_some() || d == Error(Failure::Fault);
            let cs = d.cache_status((!own).then(|| carried(true)));
            let want = match d {
                Hit => "; hit; ttl=50",
                Miss(m) => match m {
                    self::Miss::Uri | self::Miss::TookOver => {
                        "; fwd=uri-miss; fwd-status=200; ttl=50; stored"
                    }
                    self::Miss::Reload => "; fwd=request; fwd-status=200; ttl=50; stored",
                    self::Miss::Stale => "; fwd=stale; fwd-status=200; ttl=50; stored",
                    self::Miss::Method => "; fwd=method; fwd-status=200; ttl=50; stored",
                    self::Miss::Bypass => "; fwd=bypass; fwd-status=200; ttl=50; stored",
                },
                Revalidated => "; fwd=stale; fwd-status=304; ttl=50; stored",
                Collapsed => "; fwd=uri-miss; fwd-status=200; ttl=50; collapsed",
                StaleServed(None) => "; fwd=stale; ttl=50; detail=stale-if-error",
                StaleServed(Some(_)) => {
                    "; fwd=stale; fwd-status=500; ttl=50; detail=stale-if-error"
                }
                Refused(Refusal::Overloaded) => "; detail=overloaded",
                Refused(_) => "; detail=refused",
                Error(Failure::Origin(m, _)) => match m {
                    self::Miss::Uri | self::Miss::TookOver => "; fwd=uri-miss; detail=origin-error",
                    self::Miss::Reload => "; fwd=request; detail=origin-error",
                    self::Miss::Stale => "; fwd=stale; detail=origin-error",
                    self::Miss::Method => "; fwd=method; detail=origin-error",
                    self::Miss::Bypass => "; fwd=bypass; detail=origin-error",
                },
                Error(Failure::MustRevalidate(_)) => {
                    "; fwd=stale; fwd-status=500; detail=must-revalidate"
                }
                Error(Failure::Collapsed(_)) => "; fwd=uri-miss; collapsed; detail=origin-error",
                Error(Failure::OnlyIfCached) => "; detail=only-if-cached",
                Error(Failure::Fault) => "",
            };
            assert_eq!(line(cs), want, "{d:?}");
            // The proxy's own replies say `MISS` whatever (`error_reply`);
            // a stale copy served for an origin error was forwarded first.
            let x_cache = match d {
                Hit | Collapsed => "HIT",
                Revalidated => "REVALIDATED",
                _ => "MISS",
            };
            if !own {
                assert_eq!(cs.x_cache(), x_cache, "{d:?}");
            }
        }
        // A miss not stored says neither `stored` nor its freshness.
        let relayed = Miss(self::Miss::Uri).cache_status(Some(carried(false)));
        assert_eq!(line(relayed), "; fwd=uri-miss; fwd-status=200");
    }

    #[test]
    fn own_replies_have_their_status() {
        use Decision::*;
        for d in all() {
            let want = match d {
                Refused(Refusal::Client | Refusal::Destination) => Some(403),
                Refused(Refusal::Uploads | Refusal::Overloaded) => Some(503),
                Refused(Refusal::Timeout) => Some(408),
                Refused(Refusal::Bad(s)) => Some(s),
                Error(Failure::Origin(_, s) | Failure::Collapsed(s)) => Some(s),
                Error(Failure::MustRevalidate(_) | Failure::OnlyIfCached) => Some(504),
                _ => None,
            };
            assert_eq!(d.own_status(), want, "{d:?}");
        }
        assert_eq!(Refusal::from(431), Refusal::Bad(431));
    }
}
