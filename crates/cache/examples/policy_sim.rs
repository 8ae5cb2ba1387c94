//! Hit ratios of the eviction policies on a PolyMix-like request stream,
//! without a network: 72.37% of requests revisit an object of a sliding
//! working set (90% uniformly, 10% in a hot set of 1% of it), the rest
//! fetch new objects of exponential size (mean 10 KB). Prints hits as a
//! share of revisits (offered hits) over the last 1.5M of 2M requests.
//!
//! `cargo run --release -p cacheoff-cache --example policy_sim -- [working-set objects] [cache size / working set bytes]`

use cacheoff_cache::Policy;
use std::collections::HashMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ws: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(12000);
    let cache_frac: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.5);
    // xorshift64: deterministic, no dependency.
    let mut x = 12345u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let cap = (ws as f64 * 10_100.0 * cache_frac) as u64;
    for policy in [Policy::Lru, Policy::S3Fifo] {
        let mut sizes: HashMap<u64, u64> = HashMap::new();
        let mut p = policy.build(cap);
        let mut present: HashMap<u64, u64> = HashMap::new();
        let mut next = 0u64;
        let mut hot = 0u64;
        let (mut reqs, mut hits) = (0u64, 0u64);
        for i in 0..2_000_000u64 {
            let repeat = next > 0 && rnd() < 0.7237;
            let k = if !repeat {
                next += 1;
                next - 1
            } else {
                let lo = next.saturating_sub(ws);
                if hot < lo {
                    hot = lo + ((next - lo) as f64 * rnd()) as u64;
                }
                if rnd() < 0.10 {
                    (hot + ((ws / 100).max(1) as f64 * rnd()) as u64).min(next - 1)
                } else {
                    lo + ((next - lo) as f64 * rnd()) as u64
                }
            };
            let r = rnd();
            let sz = *sizes
                .entry(k)
                .or_insert(((-r.ln()) * 10_000.0) as u64 + 100);
            let measured = i > 500_000;
            // A key's size never changes, so re-inserting a present one is a no-op.
            if present.insert(k, sz).is_some() {
                p.hit(k);
                if measured {
                    hits += 1;
                }
            } else {
                p.insert(k, sz);
                while p.bytes() > cap {
                    let v = p.evict().unwrap();
                    present.remove(&v);
                }
            }
            if measured && repeat {
                reqs += 1;
            }
        }
        println!(
            "{:7} ws {ws} cache {cache_frac}: hits/offered {:.1}%",
            policy.name(),
            hits as f64 * 100.0 / reqs as f64
        );
    }
}
