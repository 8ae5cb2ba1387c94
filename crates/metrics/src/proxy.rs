//! The reference proxy's own figures, read at scrape time: its counters
//! are atomics it keeps anyway ([`cacheoff_proxy::ProxyStats`]) and its
//! stores' sizes take their locks briefly, so the proxy does nothing for
//! the metrics between scrapes.

use cacheoff_proxy::{Probe, ProxyStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use std::sync::atomic::AtomicU64;

/// Registers as a collector: `registry.register_collector(Box::new(..))`.
#[derive(Debug)]
pub struct ProxyCollector(Probe);

impl ProxyCollector {
    pub fn new(probe: Probe) -> ProxyCollector {
        ProxyCollector(probe)
    }
}

/// Reads one of the proxy's counters.
type Field = fn(&ProxyStats) -> &AtomicU64;

/// The proxy's counters: metric name, help, field.
const COUNTERS: &[(&str, &str, Field)] = &[
    (
        "cacheoff_proxy_connections",
        "Client connections the reference proxy accepted",
        |s| &s.connections,
    ),
    (
        "cacheoff_proxy_connections_refused",
        "Client connections closed at once: the connection limit was reached",
        |s| &s.connections_refused,
    ),
    (
        "cacheoff_proxy_requests",
        "Requests the reference proxy read",
        |s| &s.requests,
    ),
    (
        "cacheoff_proxy_hits",
        "Requests answered from the store",
        |s| &s.hits,
    ),
    (
        "cacheoff_proxy_misses",
        "Requests forwarded to the origin server",
        |s| &s.misses,
    ),
    (
        "cacheoff_proxy_collapsed",
        "Hits that waited for another request's fetch (collapsed forwarding)",
        |s| &s.collapsed,
    ),
    (
        "cacheoff_proxy_collapse_takeovers",
        "Waiters that left a late collapsed fetch to fetch in its place (--collapse-wait)",
        |s| &s.collapse_takeovers,
    ),
    (
        "cacheoff_proxy_stale",
        "Stale copies checked with the origin server",
        |s| &s.stale,
    ),
    (
        "cacheoff_proxy_revalidations",
        "Stale copies the origin server found unchanged (304)",
        |s| &s.revalidated,
    ),
    (
        "cacheoff_proxy_client_errors",
        "Requests refused: bad syntax, limits, access",
        |s| &s.client_errors,
    ),
    (
        "cacheoff_proxy_client_timeouts",
        "Requests answered 408: a head or body too slow",
        |s| &s.client_timeouts,
    ),
    (
        "cacheoff_proxy_uploads_refused",
        "Uploads answered 503: the buffered-upload budget was spent",
        |s| &s.uploads_refused,
    ),
    (
        "cacheoff_proxy_destinations_denied",
        "Requests answered 403 for where they wanted to go",
        |s| &s.destinations_denied,
    ),
    (
        "cacheoff_proxy_origin_errors",
        "Origin server fetches that failed",
        |s| &s.origin_errors,
    ),
    (
        "cacheoff_proxy_disk_errors",
        "Disk store operations that failed",
        |s| &s.disk_errors,
    ),
];

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let g = ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)
}

/// One family with a value per store (memory, and disk if any).
fn per_store(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    values: &[(&'static str, u64)],
) -> std::fmt::Result {
    let mut m = e.encode_descriptor(name, help, None, kind)?;
    for (store, v) in values {
        let labels = [("store", *store)];
        let enc = m.encode_family(&labels)?;
        match kind {
            MetricType::Counter => ConstCounter::new(*v).encode(enc)?,
            _ => ConstGauge::new(i64::try_from(*v).unwrap_or(i64::MAX)).encode(enc)?,
        }
    }
    Ok(())
}

impl Collector for ProxyCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let p = &self.0;
        for (name, help, field) in COUNTERS {
            counter(&mut e, name, help, ProxyStats::get(field(p.stats())))?;
        }
        let (objects, bytes, capacity) = p.memory();
        let disk = p.disk();
        let both = |mem: u64, disk_v: Option<u64>| {
            let mut v = vec![("memory", mem)];
            v.extend(disk_v.map(|d| ("disk", d)));
            v
        };
        per_store(
            &mut e,
            "cacheoff_proxy_stored_objects",
            "Objects in the reference proxy's store",
            MetricType::Gauge,
            &both(objects, disk.map(|d| d.objects)),
        )?;
        per_store(
            &mut e,
            "cacheoff_proxy_stored_bytes",
            "Bytes in the reference proxy's store",
            MetricType::Gauge,
            &both(bytes, disk.map(|d| d.bytes)),
        )?;
        per_store(
            &mut e,
            "cacheoff_proxy_capacity_bytes",
            "The store's size limit",
            MetricType::Gauge,
            &both(capacity, disk.map(|d| d.capacity)),
        )?;
        per_store(
            &mut e,
            "cacheoff_proxy_evictions",
            "Objects evicted to stay within the store's size limit",
            MetricType::Counter,
            &both(p.memory_evictions(), disk.map(|d| d.evictions)),
        )?;
        gauge(
            &mut e,
            "cacheoff_proxy_disk_enabled",
            "1 if the reference proxy has a disk store, else 0",
            u64::from(disk.is_some()),
        )?;
        if let Some(d) = disk {
            counter(
                &mut e,
                "cacheoff_proxy_disk_corrupt_reads",
                "Damaged disk store files found (and deleted) on read",
                d.corrupt_reads,
            )?;
            gauge(
                &mut e,
                "cacheoff_proxy_disk_recovered_objects",
                "Objects the disk store held when the proxy started",
                d.opened.objects as u64,
            )?;
            gauge(
                &mut e,
                "cacheoff_proxy_disk_discarded_files",
                "Files the disk store found unusable (and deleted) when the proxy started",
                d.opened.discarded as u64,
            )?;
        }
        Ok(())
    }
}
