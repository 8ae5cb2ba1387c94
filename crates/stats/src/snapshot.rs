//! Per-interval counters and histograms, and their JSON view.
//!
//! Ownership: a worker owns its `Snapshot` exclusively and hands a copy over
//! at each interval boundary; nothing here is shared or locked.

use crate::kinds::{ErrorKind, Outcome};
use cacheoff_base::RequestType;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A request sent later than this after its intended time counts as late.
pub const LATE_SEND_US: u64 = 10_000;

/// Most content types counted separately (the rest share the last slot).
pub const MAX_CONTENT_TYPES: usize = 16;

/// Latency histograms cover 1 µs .. 1 h with 3 significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("static histogram bounds")
}

/// Reply sizes: 1 byte .. 1 TB with 2 significant digits.
fn new_size_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 40, 2).expect("static histogram bounds")
}

/// Response-time histograms for all, hit and miss replies.
#[derive(Debug, Clone)]
pub struct RtHists {
    pub all: Histogram<u64>,
    pub hit: Histogram<u64>,
    pub miss: Histogram<u64>,
}

impl RtHists {
    fn new() -> RtHists {
        RtHists {
            all: new_hist(),
            hit: new_hist(),
            miss: new_hist(),
        }
    }
    fn record(&mut self, outcome: Outcome, us: u64) {
        let us = us.max(1);
        self.all.saturating_record(us);
        match outcome {
            Outcome::Hit => self.hit.saturating_record(us),
            Outcome::Miss => self.miss.saturating_record(us),
        }
    }
    fn add(&mut self, o: &RtHists) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.all.add(&o.all);
        let _ = self.hit.add(&o.hit);
        let _ = self.miss.add(&o.miss);
    }
    fn reset(&mut self) {
        self.all.reset();
        self.hit.reset();
        self.miss.reset();
    }
}

/// One finished transaction, as the robot saw it.
#[derive(Debug, Clone, Copy)]
pub struct XactRecord {
    pub outcome: Outcome,
    /// A miss of a cachable object with a body: it fills a cache.
    pub fills_cache: bool,
    /// Body bytes received.
    pub bytes: u64,
    /// The reply carried the whole object (a 200 with its body, not HEAD).
    pub full_body: bool,
    /// Only basic requests count in hit ratios.
    pub rtype: RequestType,
    /// Index of the object's content type.
    pub ctype: u16,
    /// The workload offered a hit (repeat of a cachable, fetched object).
    pub offered_hit: bool,
    /// From the intended start time (open-loop, corrected).
    pub rt_corrected_us: u64,
    /// From the actual send.
    pub rt_uncorrected_us: u64,
}

/// Plain counters of a snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// Successful transactions.
    pub xacts: u64,
    pub bytes: u64,
    pub basic: u64,
    pub basic_bytes: u64,
    pub offered_hits: u64,
    pub offered_hit_bytes: u64,
    pub hits: u64,
    pub hit_bytes: u64,
    pub errors: [u64; ErrorKind::COUNT],
    pub conns_opened: u64,
    /// Robot-side connections open at the end of the interval.
    pub conns_open: u64,
    /// Requests sent, successful or not.
    pub sent: u64,
    /// Requests sent more than [`LATE_SEND_US`] after their intended time.
    pub sent_late: u64,
    /// Planned requests the pacer issued (handed to a connection or queued
    /// behind the robot's busy connections) more than [`LATE_SEND_US`]
    /// after their intended time: the engine itself fell behind.
    pub issued_late: u64,
    /// Planned requests issued.
    pub issued: u64,
    /// Body bytes of cachable misses (what a cache stores).
    pub fill_bytes: u64,
    /// Workers whose working set reached its cap (a gauge).
    pub ws_full: u64,
    /// Transactions aborted on purpose by the robot and by the server.
    pub aborted_robot: u64,
    pub aborted_server: u64,
    /// Successful transactions by request type.
    pub by_type: [u64; RequestType::COUNT],
    /// Successful transactions, body bytes, whole bodies and hits by
    /// content type.
    pub by_ctype: [TypeCount; MAX_CONTENT_TYPES],
}

/// Counters and histograms of one interval (of one worker, or merged).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub counters: Counters,
    pub rt: RtHists,
    pub rt_uncorrected: RtHists,
    /// How late requests were sent: actual send − intended start.
    pub send_lag: Histogram<u64>,
    /// Body sizes of replies that carried the whole object, in bytes.
    pub sizes: Histogram<u64>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            counters: Counters::default(),
            rt: RtHists::new(),
            rt_uncorrected: RtHists::new(),
            send_lag: new_hist(),
            sizes: new_size_hist(),
        }
    }
}

impl Snapshot {
    pub fn record_xact(&mut self, x: &XactRecord) {
        let c = &mut self.counters;
        c.xacts += 1;
        c.bytes += x.bytes;
        if x.fills_cache {
            c.fill_bytes += x.bytes;
        }
        c.by_type[x.rtype as usize] += 1;
        let ct = &mut c.by_ctype[usize::from(x.ctype).min(MAX_CONTENT_TYPES - 1)];
        ct.xacts += 1;
        ct.bytes += x.bytes;
        ct.bodies += u64::from(x.full_body);
        if x.full_body {
            self.sizes.saturating_record(x.bytes.max(1));
        }
        ct.hits += u64::from(x.outcome == Outcome::Hit);
        if x.rtype == RequestType::Basic {
            c.basic += 1;
            c.basic_bytes += x.bytes;
            if x.offered_hit {
                c.offered_hits += 1;
                c.offered_hit_bytes += x.bytes;
            }
            if x.outcome == Outcome::Hit {
                c.hits += 1;
                c.hit_bytes += x.bytes;
            }
        }
        self.rt.record(x.outcome, x.rt_corrected_us);
        self.rt_uncorrected.record(x.outcome, x.rt_uncorrected_us);
    }

    pub fn record_error(&mut self, kind: ErrorKind) {
        self.counters.errors[kind as usize] += 1;
    }

    pub fn record_send(&mut self, lag_us: u64) {
        self.counters.sent += 1;
        self.counters.sent_late += u64::from(lag_us > LATE_SEND_US);
        self.send_lag.saturating_record(lag_us.max(1));
    }

    /// Counts a planned request handed out by the pacer `lag_us` late.
    pub fn record_issue(&mut self, lag_us: u64) {
        self.counters.issued += 1;
        self.counters.issued_late += u64::from(lag_us > LATE_SEND_US);
    }

    /// Counts a deliberate abort (`by_server`: the origin's).
    pub fn record_abort(&mut self, by_server: bool) {
        if by_server {
            self.counters.aborted_server += 1;
        } else {
            self.counters.aborted_robot += 1;
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.counters.errors.iter().sum()
    }

    /// Adds another snapshot (of another worker or another interval).
    pub fn add(&mut self, o: &Snapshot) {
        let (a, b) = (&mut self.counters, &o.counters);
        a.xacts += b.xacts;
        a.bytes += b.bytes;
        a.basic += b.basic;
        a.basic_bytes += b.basic_bytes;
        a.offered_hits += b.offered_hits;
        a.offered_hit_bytes += b.offered_hit_bytes;
        a.hits += b.hits;
        a.hit_bytes += b.hit_bytes;
        for (x, y) in a.errors.iter_mut().zip(b.errors.iter()) {
            *x += y;
        }
        for (x, y) in a.by_type.iter_mut().zip(b.by_type.iter()) {
            *x += y;
        }
        for (x, y) in a.by_ctype.iter_mut().zip(b.by_ctype.iter()) {
            x.add(y);
        }
        a.conns_opened += b.conns_opened;
        a.conns_open += b.conns_open;
        a.sent += b.sent;
        a.sent_late += b.sent_late;
        a.issued += b.issued;
        a.aborted_robot += b.aborted_robot;
        a.fill_bytes += b.fill_bytes;
        a.ws_full += b.ws_full;
        a.aborted_server += b.aborted_server;
        a.issued_late += b.issued_late;
        self.rt.add(&o.rt);
        self.rt_uncorrected.add(&o.rt_uncorrected);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.sizes.add(&o.sizes);
    }

    /// Clears everything, keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.counters = Counters::default();
        self.rt.reset();
        self.rt_uncorrected.reset();
        self.send_lag.reset();
        self.sizes.reset();
    }
}

/// Cumulative shares at which response-time CDFs are sampled, in percent.
const CDF_PERCENTS: &[f64] = &[
    0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5, 20.0, 25.0, 30.0, 35.0,
    40.0, 45.0, 50.0, 55.0, 60.0, 65.0, 70.0, 75.0, 80.0, 82.5, 85.0, 87.5, 90.0, 92.5, 95.0, 96.0,
    97.0, 98.0, 99.0, 99.5, 99.9, 99.99, 100.0,
];

/// A cumulative distribution: `[value, percent of samples at or below]`.
pub type Cdf = Vec<[f64; 2]>;

fn cdf_ms(h: &Histogram<u64>) -> Cdf {
    if h.is_empty() {
        return Vec::new();
    }
    CDF_PERCENTS
        .iter()
        .map(|&p| [h.value_at_quantile(p / 100.0) as f64 / 1000.0, p])
        .collect()
}

/// Response-time CDFs of all, hit and miss replies, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CdfSet {
    pub all: Cdf,
    pub hit: Cdf,
    pub miss: Cdf,
}

impl CdfSet {
    fn of(h: &RtHists) -> CdfSet {
        CdfSet {
            all: cdf_ms(&h.all),
            hit: cdf_ms(&h.hit),
            miss: cdf_ms(&h.miss),
        }
    }
}

/// Distributions over one span (the measured phase), for the report's
/// histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distributions {
    /// The span: a phase name or `total`.
    pub span: String,
    /// From the intended start.
    pub rt_ms: CdfSet,
    /// From the actual send.
    pub rt_uncorrected_ms: CdfSet,
    /// Whole-object reply sizes: `[upper bound in bytes, replies]` per
    /// power-of-two bucket (the bucket holds sizes above half its bound).
    pub sizes: Vec<[u64; 2]>,
}

/// Snapshots added over time (a phase, or the whole run).
#[derive(Debug, Clone, Default)]
pub struct Accum {
    pub snap: Snapshot,
    pub duration_s: f64,
    /// Largest end-of-interval count of open connections.
    pub conns_open_max: u64,
    /// Open connections at the end of the last interval added.
    pub conns_open_last: u64,
}

impl Accum {
    /// The span's distributions (`span` names it).
    pub fn distributions(&self, span: &str) -> Distributions {
        let h = &self.snap.sizes;
        let mut sizes = Vec::new();
        if !h.is_empty() {
            let top = 64 - h.max().max(1).leading_zeros();
            for b in 0..=top {
                let hi = 1u64 << b;
                let lo = if b == 0 { 0 } else { hi >> 1 };
                let n = h.count_between(lo + 1, hi);
                sizes.push([hi, n]);
            }
        }
        Distributions {
            span: span.into(),
            rt_ms: CdfSet::of(&self.snap.rt),
            rt_uncorrected_ms: CdfSet::of(&self.snap.rt_uncorrected),
            sizes,
        }
    }

    /// Adds one merged interval of `duration_s` seconds.
    pub fn add_interval(&mut self, s: &Snapshot, duration_s: f64) {
        let open = s.counters.conns_open;
        self.snap.add(s);
        self.snap.counters.conns_open = 0;
        // A gauge: the latest interval's value.
        self.snap.counters.ws_full = s.counters.ws_full;
        self.duration_s += duration_s;
        self.conns_open_max = self.conns_open_max.max(open);
        self.conns_open_last = open;
    }

    /// The JSON view, naming content types by `content_types`.
    pub fn entry(&self, name: &str, content_types: &[String]) -> Entry {
        Entry::new(name, self, content_types)
    }
}

/// Offered and measured ratio, in percent (0..100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub offered: f64,
    pub measured: f64,
}

/// Summary of one latency histogram, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency {
                count: 0,
                mean: 0.0,
                p50: 0.0,
                p99: 0.0,
                max: 0.0,
            };
        }
        // Microsecond resolution, shown in milliseconds.
        let ms = |us: f64| us.round() / 1000.0;
        Latency {
            count: h.len(),
            mean: ms(h.mean()),
            p50: ms(h.value_at_quantile(0.5) as f64),
            p99: ms(h.value_at_quantile(0.99) as f64),
            max: ms(h.max() as f64),
        }
    }
}

/// Response times of all, hit and miss replies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySet {
    pub all: Latency,
    pub hit: Latency,
    pub miss: Latency,
}

impl LatencySet {
    fn of(h: &RtHists) -> LatencySet {
        LatencySet {
            all: Latency::of(&h.all),
            hit: Latency::of(&h.hit),
            miss: Latency::of(&h.miss),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    pub total: u64,
    /// Errors as a share of requests sent, in percent.
    pub percent: f64,
    /// Count per error kind name; kinds that did not occur are omitted.
    pub by_kind: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Aborted {
    pub robot: u64,
    pub server: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Conns {
    /// Open at the end of the span.
    pub open: u64,
    /// Largest count seen at an interval end.
    pub open_max: u64,
    /// Connections opened by robots during the span.
    pub opened: u64,
}

/// The JSON view of a span of the run: an interval, a phase or the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    pub duration_s: f64,
    /// Successful transactions.
    pub xacts: u64,
    pub rate_xps: f64,
    /// Body bytes of successful transactions.
    pub bytes: u64,
    /// Body bytes of cachable misses: what a cache had to store.
    pub fill_bytes: u64,
    /// Planned requests the pacer issued (embedded objects not included).
    pub issued: u64,
    pub sent: u64,
    /// Over successful basic GETs.
    pub dhr: Ratio,
    pub bhr: Ratio,
    /// From the intended start time.
    pub rt_ms: LatencySet,
    /// From the actual send.
    pub rt_uncorrected_ms: LatencySet,
    pub send_lag_ms: Latency,
    /// Share of requests sent more than 10 ms after their intended time,
    /// in percent.
    pub sent_late_percent: f64,
    /// Share of planned requests the pacer issued more than 10 ms after
    /// their intended time, in percent: the engine fell behind its plan.
    pub issued_late_percent: f64,
    pub errors: Errors,
    /// Transactions aborted on purpose, as the workload asks.
    pub aborts: Aborted,
    pub conns: Conns,
    /// Successful transactions per request type name.
    pub request_types: BTreeMap<String, u64>,
    /// Successful transactions and body bytes per content type name.
    pub content_types: BTreeMap<String, TypeCount>,
}

/// Transactions and bytes of one content type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TypeCount {
    pub xacts: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Replies that carried the whole object (so bytes ÷ bodies is the mean
    /// object size; 304s and HEADs carry none). Absent in older runs.
    #[serde(default)]
    pub bodies: u64,
    /// Transactions served as hits. Absent in older runs.
    #[serde(default)]
    pub hits: u64,
}

impl TypeCount {
    fn add(&mut self, o: &TypeCount) {
        self.xacts += o.xacts;
        self.bytes += o.bytes;
        self.bodies += o.bodies;
        self.hits += o.hits;
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 * 100.0 / b as f64 * 1000.0).round() / 1000.0
    }
}

impl Entry {
    pub fn new(name: &str, a: &Accum, content_types: &[String]) -> Entry {
        let c = &a.snap.counters;
        let errors_total: u64 = c.errors.iter().sum();
        let by_kind = ErrorKind::ALL
            .iter()
            .filter(|k| c.errors[**k as usize] > 0)
            .map(|k| (k.name().to_string(), c.errors[*k as usize]))
            .collect();
        Entry {
            name: name.to_string(),
            duration_s: (a.duration_s * 1000.0).round() / 1000.0,
            xacts: c.xacts,
            rate_xps: if a.duration_s > 0.0 {
                (c.xacts as f64 / a.duration_s * 1000.0).round() / 1000.0
            } else {
                0.0
            },
            bytes: c.bytes,
            fill_bytes: c.fill_bytes,
            issued: c.issued,
            sent: c.sent,
            dhr: Ratio {
                offered: pct(c.offered_hits, c.basic),
                measured: pct(c.hits, c.basic),
            },
            bhr: Ratio {
                offered: pct(c.offered_hit_bytes, c.basic_bytes),
                measured: pct(c.hit_bytes, c.basic_bytes),
            },
            rt_ms: LatencySet::of(&a.snap.rt),
            rt_uncorrected_ms: LatencySet::of(&a.snap.rt_uncorrected),
            send_lag_ms: Latency::of(&a.snap.send_lag),
            sent_late_percent: pct(c.sent_late, c.sent),
            issued_late_percent: pct(c.issued_late, c.issued),
            errors: Errors {
                total: errors_total,
                percent: pct(errors_total, c.sent.max(c.xacts + errors_total)),
                by_kind,
            },
            aborts: Aborted {
                robot: c.aborted_robot,
                server: c.aborted_server,
            },
            conns: Conns {
                open: a.conns_open_last,
                open_max: a.conns_open_max,
                opened: c.conns_opened,
            },
            request_types: RequestType::ALL
                .iter()
                .map(|t| (t.name().to_string(), c.by_type[*t as usize]))
                .collect(),
            content_types: content_types
                .iter()
                .take(MAX_CONTENT_TYPES)
                .zip(c.by_ctype.iter())
                .map(|(n, t)| (n.clone(), *t))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xact(outcome: Outcome, bytes: u64, offered: bool, us: u64) -> XactRecord {
        XactRecord {
            outcome,
            bytes,
            rtype: RequestType::Basic,
            full_body: true,
            fills_cache: false,
            ctype: 0,
            offered_hit: offered,
            rt_corrected_us: us,
            rt_uncorrected_us: us / 2,
        }
    }

    #[test]
    fn snapshots_add_and_entry_computes_ratios() {
        let mut a = Snapshot::default();
        a.record_send(10);
        a.record_xact(&xact(Outcome::Hit, 1000, true, 2000));
        let mut b = Snapshot::default();
        b.record_send(10);
        b.record_send(10);
        b.record_xact(&xact(Outcome::Miss, 3000, true, 4000));
        b.record_error(ErrorKind::BodyMismatch);
        b.counters.conns_open = 3;
        a.add(&b);
        let mut acc = Accum::default();
        acc.add_interval(&a, 2.0);
        let e = acc.entry("top", &["object".to_string()]);
        assert_eq!(e.xacts, 2);
        assert_eq!(e.rate_xps, 1.0);
        assert_eq!(
            e.dhr,
            Ratio {
                offered: 100.0,
                measured: 50.0
            }
        );
        assert_eq!(e.bhr.measured, 25.0);
        // Histograms keep 3 significant digits.
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(close(e.rt_ms.all.mean, 3.0), "{}", e.rt_ms.all.mean);
        assert!(close(e.rt_ms.hit.p50, 2.0), "{}", e.rt_ms.hit.p50);
        assert!(close(e.rt_uncorrected_ms.miss.max, 2.0));
        assert_eq!(e.errors.total, 1);
        assert_eq!(e.errors.by_kind.get("body_mismatch"), Some(&1));
        assert!((e.errors.percent - 33.333).abs() < 0.01);
        assert_eq!(e.conns.open_max, 3);
        assert_eq!(
            e.content_types["object"],
            TypeCount {
                xacts: 2,
                bytes: 4000,
                bodies: 2,
                hits: 1,
            }
        );

        a.reset();
        assert_eq!(a.counters.xacts, 0);
        assert!(a.rt.all.is_empty());
    }
}
