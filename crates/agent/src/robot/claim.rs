//! The claims a reply makes about how it was served
//! ([`cacheoff_http::claim`]: `Cache-Status`, `X-Cache`, `Via`, `Age`),
//! [`count`]ed against the echo's verdict, the truth.
//! docs/run-directory.md ("What proxies claim") lists the values each
//! header is read for.

pub use cacheoff_http::claim::{Claims, Said};
use cacheoff_stats::{Counters, Outcome};

/// Counts the claims of a successful reply served as `outcome`.
pub fn count(c: &mut Counters, claims: &Claims, outcome: Outcome) {
    let hit = outcome == Outcome::Hit;
    let tally =
        |said: Said, hit_was_miss: &mut u64, miss_was_hit: &mut u64, none: &mut u64| match said {
            Said::Nothing => *none += 1,
            Said::Hit if !hit => *hit_was_miss += 1,
            Said::Miss if hit => *miss_was_hit += 1,
            Said::Hit | Said::Miss => {}
        };
    tally(
        claims.strongest(),
        &mut c.claim_hit_was_miss,
        &mut c.claim_miss_was_hit,
        &mut c.claim_none,
    );
    tally(
        claims.cache_status,
        &mut c.cache_status_hit_was_miss,
        &mut c.cache_status_miss_was_hit,
        &mut c.cache_status_none,
    );
    tally(
        claims.x_cache,
        &mut c.x_cache_hit_was_miss,
        &mut c.x_cache_miss_was_hit,
        &mut c.x_cache_none,
    );
    tally(
        claims.via,
        &mut c.via_hit_was_miss,
        &mut c.via_miss_was_hit,
        &mut c.via_none,
    );
    // Age never claims a miss.
    let mut never = 0;
    tally(
        claims.age,
        &mut c.age_hit_was_miss,
        &mut never,
        &mut c.age_none,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[(&str, &str)]) -> Claims {
        let mut h = String::from("HTTP/1.1 200 OK\r\n");
        for (n, v) in lines {
            h.push_str(&format!("{n}: {v}\r\n"));
        }
        h.push_str("\r\n");
        Claims::read(h.as_bytes())
    }

    #[test]
    fn counts_set_each_claim_against_the_echo() {
        let mut c = Counters::default();
        let lie = head(&[("Cache-Status", "p; hit"), ("X-Cache", "HIT"), ("Age", "2")]);
        count(&mut c, &lie, Outcome::Miss);
        count(&mut c, &lie, Outcome::Hit);
        let modest = head(&[("X-Cache", "MISS"), ("Via", "1.1 p ([cMs f ])")]);
        count(&mut c, &modest, Outcome::Hit);
        count(&mut c, &Claims::default(), Outcome::Miss);
        assert_eq!(
            (c.claim_hit_was_miss, c.claim_miss_was_hit, c.claim_none),
            (1, 1, 1)
        );
        assert_eq!(
            (
                c.cache_status_hit_was_miss,
                c.cache_status_miss_was_hit,
                c.cache_status_none
            ),
            (1, 0, 2)
        );
        assert_eq!(
            (
                c.x_cache_hit_was_miss,
                c.x_cache_miss_was_hit,
                c.x_cache_none
            ),
            (1, 1, 1)
        );
        assert_eq!(
            (c.via_hit_was_miss, c.via_miss_was_hit, c.via_none),
            (0, 1, 3)
        );
        assert_eq!((c.age_hit_was_miss, c.age_none), (1, 2));
    }
}
