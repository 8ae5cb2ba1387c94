//! Object life cycles: when an object was last modified and when it will
//! next change, at any moment, from its id alone.
//!
//! An object gets a cycle length drawn from `length` and a birthday uniform
//! in one cycle after the world epoch (the run start). Its k-th
//! modification (any integer k) happens at `birthday + k·cycle`, shifted by
//! up to ±`variance`·cycle/2. `Last-Modified` is the latest modification not
//! in the future; `Expires` is the next one, so nothing served fresh is
//! stale. Times are whole seconds, as in HTTP dates.

use crate::dist::{deserialize_dist, Dist, Quantity};
use cacheoff_base::rng::{mix2, unit_f64};
use cacheoff_base::Dur;
use serde::{Deserialize, Deserializer, Serialize};

/// How an object changes over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LifeCycle {
    /// Time between modifications.
    #[serde(deserialize_with = "time_dist")]
    pub length: Dist,
    /// Share of a cycle by which each modification may move (0..1).
    pub variance: f64,
    /// Probability that responses carry `Last-Modified`.
    pub with_lmt: f64,
    /// Every object was last modified this long before the run start
    /// (instead of a random birthday per object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_ago: Option<Dur>,
}

fn time_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Time)
}

/// An object's dates at one moment, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectTimes {
    /// Latest modification not after now (None if the object hides it).
    pub last_modified: Option<i64>,
    /// The next modification, after now.
    pub expires: i64,
}

impl Default for LifeCycle {
    fn default() -> Self {
        LifeCycle::static_two_years()
    }
}

impl LifeCycle {
    /// Never changes in practice: modified once per two years, no variance.
    pub fn static_two_years() -> LifeCycle {
        LifeCycle {
            length: Dist::constant(Quantity::Time, 2.0 * 365.0 * 86_400.0),
            variance: 0.0,
            with_lmt: 1.0,
            modified_ago: None,
        }
    }

    /// The dates of the object with property hash `h` at `now` (Unix
    /// seconds), for a world that began at `epoch`.
    pub fn times(&self, h: u64, epoch: f64, now: f64) -> ObjectTimes {
        let cycle = self.length.sample_hashed(mix2(h, 1)).max(1.0);
        let birthday = match self.modified_ago {
            Some(ago) => (cycle - ago.as_secs_f64()).rem_euclid(cycle),
            None => unit_f64(mix2(h, 2)) * cycle,
        };
        let variance = self.variance.clamp(0.0, 0.99);
        let modified = |k: i64| -> f64 {
            let shift = (unit_f64(mix2(h, 3 ^ (k as u64).wrapping_mul(0x9E37))) - 0.5) * variance;
            (epoch + birthday + (k as f64 + shift) * cycle).floor()
        };
        // Shifts are under half a cycle, so the modification at or before
        // `now` is one of three around the unshifted index.
        let k0 = ((now - epoch - birthday) / cycle).floor() as i64;
        let mut k = k0 + 1;
        while modified(k) > now {
            k -= 1;
        }
        ObjectTimes {
            last_modified: (unit_f64(mix2(h, 4)) < self.with_lmt).then(|| modified(k) as i64),
            expires: modified(k + 1) as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::rng::mix64;

    fn html() -> LifeCycle {
        LifeCycle {
            length: Dist::logn(Quantity::Time, 7.0 * 86_400.0, 86_400.0),
            variance: 0.33,
            with_lmt: 1.0,
            modified_ago: None,
        }
    }

    #[test]
    fn last_modified_is_past_and_expires_is_future_at_every_moment() {
        let lc = html();
        let epoch = 1.8e9;
        for oid in 0..2000u64 {
            let h = mix64(oid);
            // A manual clock: step through three weeks in uneven strides.
            let mut t = epoch;
            let mut prev: Option<ObjectTimes> = None;
            while t < epoch + 21.0 * 86_400.0 {
                let x = lc.times(h, epoch, t);
                let lm = x.last_modified.unwrap();
                assert!(lm as f64 <= t, "LMT in the future");
                assert!(x.expires as f64 > t.floor(), "expired info served");
                if let Some(p) = prev {
                    // Time only moves dates forward; a change of LMT means
                    // the previous Expires has been reached.
                    assert!(lm >= p.last_modified.unwrap());
                    if lm != p.last_modified.unwrap() {
                        assert!(t >= p.expires as f64);
                        assert_eq!(lm, p.expires, "the new version is the expected one");
                    }
                }
                prev = Some(x);
                t += 3_600.0 * 7.3;
            }
        }
    }

    #[test]
    fn cycles_follow_the_length_distribution() {
        // For a constant cycle and no variance, LMT and Expires are exactly
        // one cycle apart and the same for any moment inside the cycle.
        let lc = LifeCycle {
            length: Dist::constant(Quantity::Time, 1000.0),
            variance: 0.0,
            with_lmt: 1.0,
            modified_ago: None,
        };
        for oid in 0..100 {
            let a = lc.times(mix64(oid), 0.0, 5000.0);
            assert_eq!(a.expires - a.last_modified.unwrap(), 1000);
            let b = lc.times(mix64(oid), 0.0, a.last_modified.unwrap() as f64 + 999.0);
            assert_eq!(a, b);
        }
        // Static: everything was modified within two years and expires
        // within two years.
        let s = LifeCycle::static_two_years();
        let y2 = 2.0 * 365.0 * 86_400.0;
        for oid in 0..100 {
            let x = s.times(mix64(oid), 1e9, 1e9);
            assert!((1e9 - x.last_modified.unwrap() as f64) <= y2);
            assert!((x.expires as f64 - 1e9) <= y2);
        }
    }

    #[test]
    fn a_common_modification_date() {
        // DataComm-1: everything modified a year before the start and
        // expiring a year after it.
        let year = 365.0 * 86_400.0;
        let lc = LifeCycle {
            length: Dist::constant(Quantity::Time, 2.0 * year),
            variance: 0.0,
            with_lmt: 1.0,
            modified_ago: Some(Dur::secs(year)),
        };
        for oid in 0..100 {
            let x = lc.times(mix64(oid), 1e9, 1e9 + 3600.0);
            assert_eq!(x.last_modified, Some((1e9 - year) as i64));
            assert_eq!(x.expires, (1e9 + year) as i64);
        }
    }

    #[test]
    fn with_lmt_hides_dates_for_a_share_of_objects() {
        let mut lc = html();
        lc.with_lmt = 0.3;
        let with = (0..10_000u64)
            .filter(|o| lc.times(mix64(*o), 0.0, 1e6).last_modified.is_some())
            .count();
        assert!((with as f64 / 10_000.0 - 0.3).abs() < 0.02, "{with}");
    }
}
