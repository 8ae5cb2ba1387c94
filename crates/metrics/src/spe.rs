//! The Multiplier's families ([`SpeMetrics`]), updated from each interval
//! record it writes (its `on_interval` hook): per proxy under test, label
//! `proxy` = the names given on its command line, a small closed set.
//!
//! Ownership: the Multiplier's interval thread writes; scrapes read
//! atomics and, for the percentile gauges, nothing but atomics either.

use cacheoff_rundir::spe::{Interval, Mismatch};
use cacheoff_stats::Latency;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

type ByProxy = [(&'static str, String); 1];
type ByProxyAnd = [(&'static str, String); 2];
type FloatGauge = Gauge<f64, AtomicU64>;

/// See the module docs and docs/metrics.md.
#[derive(Debug, Default)]
pub struct SpeMetrics {
    requests: Counter,
    refused: Counter,
    collector: Family<[(&'static str, &'static str); 1], Counter>,
    copies: Family<ByProxy, Counter>,
    dropped: Family<ByProxy, Counter>,
    not_copied: Family<ByProxy, Counter>,
    completed: Family<ByProxy, Counter>,
    claimed_hits: Family<ByProxy, Counter>,
    validated: Family<ByProxyAnd, Counter>,
    mismatches: Family<ByProxyAnd, Counter>,
    responses: Family<ByProxyAnd, Counter>,
    response_time: Family<ByProxyAnd, Counter<f64, AtomicU64>>,
    p50: Family<ByProxyAnd, FloatGauge>,
    p99: Family<ByProxyAnd, FloatGauge>,
    intervals: Counter,
}

/// `[("proxy", name), (key, value)]`.
fn two(proxy: &str, key: &'static str, value: &str) -> ByProxyAnd {
    [("proxy", proxy.to_string()), (key, value.to_string())]
}

impl SpeMetrics {
    /// Registers the Multiplier's families for proxies named `proxies`,
    /// every label value present from the start at zero.
    pub fn register(reg: &mut Registry, proxies: &[String]) -> Arc<SpeMetrics> {
        let m = SpeMetrics::default();
        for r in ["hit", "miss", "error"] {
            let _ = m.collector.get_or_create(&[("result", r)]);
        }
        for p in proxies {
            let one = [("proxy", p.clone())];
            for f in [
                &m.copies,
                &m.dropped,
                &m.not_copied,
                &m.completed,
                &m.claimed_hits,
            ] {
                let _ = f.get_or_create(&one);
            }
            for r in ["hit", "miss", "unverified"] {
                let _ = m.validated.get_or_create(&two(p, "result", r));
            }
            for k in Mismatch::ALL {
                let _ = m.mismatches.get_or_create(&two(p, "kind", k.name()));
            }
            for r in ["hit", "miss"] {
                let _ = m.responses.get_or_create(&two(p, "result", r));
                let _ = m.response_time.get_or_create(&two(p, "result", r));
            }
        }
        reg.register(
            "cacheoff_multiplier_requests",
            "Requests from clients",
            m.requests.clone(),
        );
        reg.register(
            "cacheoff_multiplier_refused",
            "Requests the Multiplier itself refused",
            m.refused.clone(),
        );
        reg.register(
            "cacheoff_multiplier_collector_replies",
            "The Collector's replies to clients by result (hit and miss by its X-Cache)",
            m.collector.clone(),
        );
        reg.register(
            "cacheoff_multiplier_copies",
            "Copies queued for the proxy under test",
            m.copies.clone(),
        );
        reg.register(
            "cacheoff_multiplier_copies_dropped",
            "Copies dropped: the proxy's queue was full",
            m.dropped.clone(),
        );
        reg.register(
            "cacheoff_multiplier_not_copied_unsafe",
            "Unsafe requests sent to the Collector only",
            m.not_copied.clone(),
        );
        reg.register(
            "cacheoff_multiplier_copies_completed",
            "Copies answered with a usable reply",
            m.completed.clone(),
        );
        reg.register(
            "cacheoff_multiplier_claimed_hits",
            "Replies the proxy says were hits",
            m.claimed_hits.clone(),
        );
        reg.register(
            "cacheoff_multiplier_validated",
            "Completed copies by the Collector's stamp: hit, miss, or unverified",
            m.validated.clone(),
        );
        reg.register(
            "cacheoff_multiplier_mismatches",
            "Copies whose reply differs from the Collector's, by first mismatch kind",
            m.mismatches.clone(),
        );
        reg.register(
            "cacheoff_multiplier_responses",
            "Completed copies timed, by result (validated, or claimed when unverified)",
            m.responses.clone(),
        );
        reg.register(
            "cacheoff_multiplier_response_time_seconds",
            "Sum of the copies' response times, by result; divided by responses it gives the mean",
            m.response_time.clone(),
        );
        reg.register(
            "cacheoff_multiplier_response_p50_seconds",
            "Median response time of the copies in the last interval, by result",
            m.p50.clone(),
        );
        reg.register(
            "cacheoff_multiplier_response_p99_seconds",
            "99th percentile response time of the copies in the last interval, by result",
            m.p99.clone(),
        );
        reg.register(
            "cacheoff_multiplier_intervals",
            "Intervals the Multiplier folded so far",
            m.intervals.clone(),
        );
        Arc::new(m)
    }

    /// One interval record.
    pub fn interval(&self, iv: &Interval) {
        self.requests.inc_by(iv.requests);
        self.refused.inc_by(iv.refused);
        let c = &iv.collector;
        let col =
            |r: &'static str, v: u64| self.collector.get_or_create(&[("result", r)]).inc_by(v);
        col("hit", c.hits);
        col("miss", c.completed.saturating_sub(c.hits));
        col("error", c.errors);
        for p in &iv.proxies {
            let n = &p.counts;
            let one = [("proxy", p.name.clone())];
            self.copies.get_or_create(&one).inc_by(n.copied);
            self.dropped.get_or_create(&one).inc_by(n.dropped);
            self.not_copied
                .get_or_create(&one)
                .inc_by(n.not_copied_unsafe);
            self.completed.get_or_create(&one).inc_by(n.completed);
            self.claimed_hits.get_or_create(&one).inc_by(n.claimed_hits);
            for (r, v) in [
                ("hit", n.validated_hits),
                ("miss", n.validated_misses),
                ("unverified", n.unverified),
            ] {
                self.validated
                    .get_or_create(&two(&p.name, "result", r))
                    .inc_by(v);
            }
            for (kind, v) in &p.mismatches_by_kind {
                // Only the closed set's names become label values.
                if let Some(k) = Mismatch::from_name(kind) {
                    self.mismatches
                        .get_or_create(&two(&p.name, "kind", k.name()))
                        .inc_by(*v);
                }
            }
            for (r, l) in [("hit", &p.rt_ms.hit), ("miss", &p.rt_ms.miss)] {
                self.latency(&p.name, r, l);
            }
        }
        self.intervals.inc();
    }

    fn latency(&self, proxy: &str, result: &'static str, l: &Latency) {
        let key = two(proxy, "result", result);
        self.responses.get_or_create(&key).inc_by(l.count);
        self.response_time
            .get_or_create(&key)
            .inc_by(l.mean * l.count as f64 / 1000.0);
        if l.count > 0 {
            self.p50.get_or_create(&key).set(l.p50 / 1000.0);
            self.p99.get_or_create(&key).set(l.p99 / 1000.0);
        }
    }
}
