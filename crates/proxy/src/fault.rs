//! Deliberate misbehaviour, so users (and our tests) can check that a run
//! catches a broken proxy: `cacheoff proxy --fault KIND[:PROB]`.
//!
//! Faults that damage a reply act on replies served from the store (hits),
//! where a real cache's bugs live; `drop`, `garbage`, `huge-header` and
//! `strip-echo` act on any request, `keep-after-post` on unsafe ones.
//! Each fault's effect is written where the proxy makes the decision it
//! corrupts (`answer`, `hit`, `relay`); `damage` holds the ones that
//! only mangle bytes.

use cacheoff_base::rng::mix64;
use std::sync::atomic::{AtomicU64, Ordering};

cacheoff_base::closed_set! {
    /// One kind of misbehaviour.
    Fault {
        Reset = "reset": "reset the connection halfway through a hit's body",
        Close = "close": "close the connection halfway through a hit's body",
        Truncate = "truncate": "answer a hit with half of its body, announced as the whole (Content-Length of the half)",
        Garbage = "garbage": "answer with bytes that are not HTTP",
        Drip = "drip": "send a hit one byte every 50 ms",
        HugeHeader = "huge-header": "answer with a 100 KB header block",
        Stale = "stale": "serve stored copies past their expiry without asking the origin",
        WrongObject = "wrong-object": "serve a hit with the bytes of the previous object this worker served",
        FlipByte = "flip-byte": "flip one byte in the middle of a hit's body",
        ImsByExpires = "ims-by-expires": "answer If-Modified-Since with 304 whenever the stored copy is fresh (judging by Expires, not Last-Modified)",
        CacheUncachable = "cache-uncachable": "store and serve replies the origin marks uncachable",
        ReloadHit = "reload-hit": "serve reloads (Cache-Control: no-cache) from the store",
        Drop = "drop": "read the request and never answer it",
        Stall = "stall": "send half of a hit's body, then nothing, with the connection left open",
        EmptyBody = "empty-body": "answer a hit with 200 and no body (Content-Length: 0)",
        BodilessBody = "bodiless-body": "send the stored body after a 304 or after the head of a reply to HEAD",
        BadMd5 = "bad-md5": "add a Content-MD5 header that does not match a hit's body",
        IgnoreIms = "ignore-ims": "answer If-Modified-Since on a hit with the stored 200, never 304",
        KeepAfterPost = "keep-after-post": "keep a URL's stored copy after a POST (or another unsafe method) to it",
        StripEcho = "strip-echo": "drop the origin's transaction-echo header from the reply",
        ClaimHit = "claim-hit": "say hit (Cache-Status: hit, X-Cache: HIT) on replies not served from the store",
        SlowHit = "slow-hit": "answer each hit 1 ms late (a timerfd sleep): a known slowdown, for A/B tests",
    }
}

/// The faults in force, each with the share of requests it strikes.
#[derive(Debug, Default)]
pub struct Faults {
    list: Vec<(Fault, f64)>,
    draws: AtomicU64,
}

impl Clone for Faults {
    fn clone(&self) -> Faults {
        Faults {
            list: self.list.clone(),
            draws: AtomicU64::new(0),
        }
    }
}

impl Faults {
    /// Parses `KIND` or `KIND:PROB` (PROB in 0..=1, default 1).
    pub fn parse_one(s: &str) -> Result<(Fault, f64), String> {
        let (name, prob) = match s.split_once(':') {
            Some((n, p)) => (
                n,
                p.parse::<f64>()
                    .ok()
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| {
                        format!("fault {s:?}: the probability must be a number from 0 to 1")
                    })?,
            ),
            None => (s, 1.0),
        };
        let fault = Fault::from_name(name).ok_or_else(|| {
            let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
            format!(
                "unknown fault {name:?} (expected one of {})",
                names.join(", ")
            )
        })?;
        Ok((fault, prob))
    }

    pub fn new(list: Vec<(Fault, f64)>) -> Faults {
        Faults {
            list,
            draws: AtomicU64::new(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn list(&self) -> &[(Fault, f64)] {
        &self.list
    }

    /// Whether `fault` strikes this time (a fresh draw on every call).
    pub fn strikes(&self, fault: Fault) -> bool {
        let Some(&(_, p)) = self.list.iter().find(|(f, _)| *f == fault) else {
            return false;
        };
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        (mix64(n ^ 0x5eed_fa17) >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_with_their_probability_and_strike_that_often() {
        assert_eq!(
            Faults::parse_one("flip-byte").unwrap(),
            (Fault::FlipByte, 1.0)
        );
        assert_eq!(Faults::parse_one("drop:0.25").unwrap(), (Fault::Drop, 0.25));
        assert!(Faults::parse_one("drop:2")
            .unwrap_err()
            .contains("from 0 to 1"));
        assert!(Faults::parse_one("explode")
            .unwrap_err()
            .contains("reset, close"));
        let f = Faults::new(vec![(Fault::Drop, 0.25)]);
        let hits = (0..100_000).filter(|_| f.strikes(Fault::Drop)).count();
        assert!((hits as f64 / 1000.0 - 25.0).abs() < 1.0, "{hits}");
        assert!(!f.strikes(Fault::Reset));
    }
}
