//! Replayed traces: one traced request as robots send it, and the book
//! that turns a time-ordered stream of them into planned transactions
//! (what each object is, whether an ideal cache would hit it).
//!
//! An object is its trace key; its size and cachability are fixed at its
//! first request with a body (a `304` or `0` in a log says nothing of the
//! object), so every request of a key names the same URL. The book holds a
//! few bytes per distinct object of its worker's share, nothing per
//! request.

use crate::objects::ObjectSpace;
use crate::plan::Planned;
use cacheoff_base::RequestType;
use std::collections::HashMap;

/// One request of a replayed trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedRequest {
    /// When it is due, from the replay's start (already scaled by the
    /// replay's speed).
    pub at_us: u64,
    /// The object's identity.
    pub key: u64,
    /// The origin server that owns the object.
    pub server: u32,
    /// Who asked (robots are chosen by it).
    pub client: u64,
    /// The traced body size (0 when the trace gave none).
    pub size: u64,
    pub cachable: bool,
    /// The traced origin's time to first byte.
    pub ttfb_us: Option<u32>,
    /// `Basic`, `Head` or `Post`.
    pub rtype: RequestType,
}

#[derive(Debug, Clone, Copy)]
struct Known {
    size: u64,
    cachable: bool,
    /// The size came from a request that stated one.
    sized: bool,
    /// An earlier GET could have put it in a cache.
    held: bool,
}

/// What a worker knows of the objects it has replayed so far.
#[derive(Debug, Default)]
pub struct TraceBook {
    known: HashMap<u64, Known>,
}

impl TraceBook {
    /// The transaction for `r`: the object as first seen, a repeat if its
    /// key was asked for before, an ideal hit if an earlier GET of a
    /// cachable object could have filled a cache (a POST empties it, as
    /// for robots).
    pub fn plan(&mut self, r: &TracedRequest, objects: &ObjectSpace) -> Planned {
        let first = Known {
            size: r.size,
            cachable: r.cachable,
            sized: r.size > 0,
            held: false,
        };
        let mut repeat = true;
        let k = self.known.entry(r.key).or_insert_with(|| {
            repeat = false;
            first
        });
        if !k.sized && r.size > 0 {
            k.size = r.size;
            k.sized = true;
        }
        let ideal_hit = k.held && k.cachable && r.rtype != RequestType::Post;
        k.held = match r.rtype {
            RequestType::Post => false,
            RequestType::Basic => k.cachable,
            _ => k.held,
        };
        Planned {
            info: objects.traced(r.key, k.size, k.cachable, r.server),
            repeat,
            ideal_hit,
            rtype: r.rtype,
            post_len: 0,
            embeds_held: 0,
            ttfb_us: r.ttfb_us,
        }
    }

    /// Distinct objects seen.
    pub fn objects(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ContentType, Dist, LifeCycle, Quantity};

    fn space() -> ObjectSpace {
        let t = ContentType::single(
            "traced",
            Dist::exp(Quantity::Size, 1.0),
            1.0,
            LifeCycle::static_two_years(),
        );
        ObjectSpace::new(1, &[t])
    }

    fn req(key: u64, size: u64, rtype: RequestType) -> TracedRequest {
        TracedRequest {
            at_us: 0,
            key,
            server: 0,
            client: 0,
            size,
            cachable: true,
            ttfb_us: None,
            rtype,
        }
    }

    #[test]
    fn repeats_and_ideal_hits_follow_the_keys_history() {
        let (s, mut b) = (space(), TraceBook::default());
        let first = b.plan(&req(1, 0, RequestType::Head), &s);
        assert!(!first.repeat && !first.ideal_hit);
        // A HEAD fills nothing and states no size: the GET does both.
        let get = b.plan(&req(1, 500, RequestType::Basic), &s);
        assert!(get.repeat && !get.ideal_hit);
        assert_eq!(get.info.size, 500);
        let again = b.plan(&req(1, 0, RequestType::Basic), &s);
        assert!(again.ideal_hit && again.offered_hit());
        assert_eq!(again.info, get.info, "a later size of 0 changes nothing");
        b.plan(&req(1, 0, RequestType::Post), &s);
        assert!(!b.plan(&req(1, 500, RequestType::Basic), &s).ideal_hit);
        let mut unc = req(2, 10, RequestType::Basic);
        unc.cachable = false;
        b.plan(&unc, &s);
        let p = b.plan(&unc, &s);
        assert!(p.repeat && !p.ideal_hit && !p.offered_hit());
        assert_eq!(b.objects(), 2);
    }
}
