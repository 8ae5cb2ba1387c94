//! The proxy's member of `Cache-Status` (RFC 9211) on every reply it
//! sends: how it served it, said the standard way beside the older
//! `X-Cache`. One member, ours, written as its own field line after any
//! an upstream cache added (the list runs from the origin to the client).
//! What each way of serving says is `decision`'s; docs/proxy.md lists
//! them.

use crate::config::Role;
use crate::lines::push_u64;
use cacheoff_cache::Freshness;

/// Why a request went to the origin (RFC 9211 §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fwd {
    /// Nothing stored for the URL (or a request it cannot answer: a
    /// HEAD, a range of an object not stored).
    UriMiss,
    /// The stored copy was stale.
    Stale,
    /// The client asked for a reload.
    Request,
    /// The method is not served from the store.
    Method,
    /// The proxy stores nothing.
    Bypass,
}

impl Fwd {
    fn name(self) -> &'static str {
        match self {
            Fwd::UriMiss => "uri-miss",
            Fwd::Stale => "stale",
            Fwd::Request => "request",
            Fwd::Method => "method",
            Fwd::Bypass => "bypass",
        }
    }
}

/// One reply's member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheStatus {
    /// Served from the store without asking the origin.
    pub(crate) hit: bool,
    pub(crate) fwd: Option<Fwd>,
    /// The origin's status for the forwarded request.
    pub(crate) fwd_status: Option<u16>,
    /// Seconds of freshness left (negative: stale by that much).
    pub(crate) ttl: Option<i64>,
    pub(crate) stored: bool,
    /// Answered by another request's fetch.
    pub(crate) collapsed: bool,
    pub(crate) detail: Option<&'static str>,
}

impl CacheStatus {
    pub(crate) fn forwarded(fwd: Fwd) -> CacheStatus {
        CacheStatus {
            fwd: Some(fwd),
            ..CacheStatus::default()
        }
    }

    pub(crate) fn detail(detail: &'static str) -> CacheStatus {
        CacheStatus {
            detail: Some(detail),
            ..CacheStatus::default()
        }
    }

    /// A copy with `fresh`'s freshness left at `now`.
    pub(crate) fn ttl_of(self, fresh: &Freshness, now: u64) -> CacheStatus {
        let ttl = fresh.lifetime() as i64 - fresh.current_age(now) as i64;
        CacheStatus {
            ttl: Some(ttl),
            ..self
        }
    }

    /// The same, in `X-Cache`'s older words.
    pub(crate) fn x_cache(&self) -> &'static str {
        match (self.fwd, self.fwd_status) {
            _ if self.hit || self.collapsed => "HIT",
            (Some(Fwd::Stale), Some(304)) => "REVALIDATED",
            _ => "MISS",
        }
    }

    /// Appends the field line, named for the proxy's `role`.
    pub(crate) fn push(&self, out: &mut Vec<u8>, role: Role) {
        out.extend_from_slice(b"Cache-Status: ");
        out.extend_from_slice(role.name().as_bytes());
        if self.hit {
            out.extend_from_slice(b"; hit");
        }
        if let Some(f) = self.fwd {
            out.extend_from_slice(b"; fwd=");
            out.extend_from_slice(f.name().as_bytes());
        }
        if let Some(s) = self.fwd_status {
            out.extend_from_slice(b"; fwd-status=");
            push_u64(out, s.into());
        }
        if let Some(t) = self.ttl {
            out.extend_from_slice(b"; ttl=");
            if t < 0 {
                out.push(b'-');
            }
            push_u64(out, t.unsigned_abs());
        }
        if self.stored {
            out.extend_from_slice(b"; stored");
        }
        if self.collapsed {
            out.extend_from_slice(b"; collapsed");
        }
        if let Some(d) = self.detail {
            out.extend_from_slice(b"; detail=");
            out.extend_from_slice(d.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cs: CacheStatus, role: Role) -> String {
        let mut out = Vec::new();
        cs.push(&mut out, role);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn members_say_each_way_of_serving() {
        let hit = CacheStatus {
            hit: true,
            ttl: Some(-4),
            ..Default::default()
        };
        assert_eq!(
            line(hit, Role::Proxy),
            "Cache-Status: cacheoff; hit; ttl=-4\r\n"
        );
        assert_eq!(hit.x_cache(), "HIT");
        let miss = CacheStatus {
            fwd_status: Some(200),
            stored: true,
            ttl: Some(60),
            ..CacheStatus::forwarded(Fwd::UriMiss)
        };
        assert_eq!(
            line(miss, Role::Collector),
            "Cache-Status: cacheoff-collector; fwd=uri-miss; fwd-status=200; ttl=60; stored\r\n"
        );
        assert_eq!(miss.x_cache(), "MISS");
        let revalidated = CacheStatus {
            fwd_status: Some(304),
            ..CacheStatus::forwarded(Fwd::Stale)
        };
        assert_eq!(revalidated.x_cache(), "REVALIDATED");
        let collapsed = CacheStatus {
            collapsed: true,
            ..CacheStatus::forwarded(Fwd::UriMiss)
        };
        assert_eq!(collapsed.x_cache(), "HIT");
        assert_eq!(
            line(CacheStatus::detail("refused"), Role::Proxy),
            "Cache-Status: cacheoff; detail=refused\r\n"
        );
    }
}
