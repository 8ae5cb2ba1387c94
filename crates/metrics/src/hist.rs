//! A classic Prometheus histogram in seconds, fed a whole HDR histogram
//! of microseconds at a time (an interval's response times), so nothing
//! is observed per transaction.
//!
//! Ownership: the interval's writer adds under the mutex; a scrape copies
//! the buckets under it. Neither holds it for more than a few hundred
//! additions.

use hdrhistogram::Histogram;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};
use std::sync::{Arc, Mutex};

/// Upper bounds in seconds: 100 µs steps for sub-millisecond hits up to
/// a minute for slow misses.
pub const BUCKETS_S: &[f64] = &[
    0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075, 0.01,
    0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5,
    10.0, 15.0, 30.0, 60.0,
];

/// [`BUCKETS_S`] in whole microseconds.
fn bound_us(i: usize) -> u64 {
    (BUCKETS_S[i] * 1e6).round() as u64
}

#[derive(Debug, Clone)]
struct Inner {
    /// Per bucket, not cumulative; the last is +Inf.
    counts: Vec<u64>,
    sum_s: f64,
    count: u64,
}

/// See the module docs. Clones share the same buckets.
#[derive(Debug, Clone)]
pub struct SecondsHistogram(Arc<Mutex<Inner>>);

impl Default for SecondsHistogram {
    fn default() -> Self {
        SecondsHistogram(Arc::new(Mutex::new(Inner {
            counts: vec![0; BUCKETS_S.len() + 1],
            sum_s: 0.0,
            count: 0,
        })))
    }
}

impl SecondsHistogram {
    /// Adds every value recorded in `h` (microseconds): each counts in
    /// the bucket of its bin's lowest value (so a value recorded exactly
    /// on a bound is within it) and adds its bin's median to the sum (as
    /// HDR histograms compute means).
    pub fn add_us(&self, h: &Histogram<u64>) {
        if h.is_empty() {
            return;
        }
        let mut counts = vec![0u64; BUCKETS_S.len() + 1];
        let mut sum_us = 0.0;
        for v in h.iter_recorded() {
            let bin = v.value_iterated_to();
            let n = v.count_at_value();
            let low = h.lowest_equivalent(bin);
            let i = (0..BUCKETS_S.len())
                .find(|&i| low <= bound_us(i))
                .unwrap_or(BUCKETS_S.len());
            counts[i] += n;
            sum_us += h.median_equivalent(bin) as f64 * n as f64;
        }
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (a, b) in g.counts.iter_mut().zip(&counts) {
            *a += b;
        }
        g.sum_s += sum_us / 1e6;
        g.count += h.len();
    }

    /// Observations so far and their sum in seconds.
    pub fn count_and_sum(&self) -> (u64, f64) {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (g.count, g.sum_s)
    }
}

impl TypedMetric for SecondsHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for SecondsHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let buckets: Vec<(f64, u64)> = BUCKETS_S
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(g.counts)
            .collect();
        encoder.encode_histogram::<NoLabelSet>(g.sum_s, g.count, &buckets, None)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_their_buckets_and_add_up() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        h.record_n(80, 3).unwrap(); // 80 µs: first bucket
        h.record(100).unwrap(); // exactly on a bound: le includes it
        h.record(2_500_000).unwrap(); // 2.5 s
        h.record(120_000_000).unwrap(); // 2 min: +Inf
        let s = SecondsHistogram::default();
        s.add_us(&h);
        s.add_us(&h);
        let g = s.0.lock().unwrap().clone();
        assert_eq!(g.counts[0], 8);
        let i = BUCKETS_S.iter().position(|&b| b == 3.0).unwrap();
        assert_eq!(g.counts[i], 2);
        assert_eq!(g.counts[BUCKETS_S.len()], 2);
        assert_eq!(g.count, 12);
        let want = 2.0 * (3.0 * 80e-6 + 100e-6 + 2.5 + 120.0);
        assert!((g.sum_s - want).abs() < want * 1e-3, "{}", g.sum_s);
    }
}
