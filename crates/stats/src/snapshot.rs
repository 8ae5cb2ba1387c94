//! Per-interval counters and histograms ([`Snapshot`]), their sum over a
//! span ([`Accum`], whose [`crate::Entry`] is the JSON view), and the span's
//! distributions.
//!
//! Ownership: a worker owns its `Snapshot` exclusively and hands a copy over
//! at each interval boundary; nothing here is shared or locked.

use crate::counters::{Counters, MAX_CONTENT_TYPES};
use crate::firsts::Firsts;
use crate::kinds::{ErrorKind, Outcome, RtClock};
use cacheoff_base::RequestType;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A request sent later than this after its intended time counts as late.
pub const LATE_SEND_US: u64 = 10_000;

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
    /// The workload offered a hit, as Web Polygraph counts it: a revisit
    /// of a cachable object, fetched before or not.
    pub offered_hit: bool,
    /// An ideal cache hits it: an offered hit an earlier GET fetched.
    pub ideal_hit: bool,
    /// From the intended start time (open-loop, corrected).
    pub rt_corrected_us: u64,
    /// From the moment the transaction got its connection (an idle one
    /// taken, or the start of the connect), as Web Polygraph times it.
    pub rt_polygraph_us: u64,
}

/// Counters and histograms of one interval (of one worker, or merged).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub counters: Counters,
    pub rt: RtHists,
    pub rt_polygraph: RtHists,
    /// How late requests were sent: actual send − intended start.
    pub send_lag: Histogram<u64>,
    /// Body sizes of replies that carried the whole object, in bytes.
    pub sizes: Histogram<u64>,
    /// TLS handshakes of robots' connections, from the end of the TCP
    /// connect (or the tunnel) to the handshake's end.
    pub tls_handshake: Histogram<u64>,
    /// `CONNECT` tunnels: from the end of the TCP connect to the proxy's
    /// `2xx`.
    pub tunnel: Histogram<u64>,
    /// The first hit, miss and connection.
    pub firsts: Firsts,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            counters: Counters::default(),
            rt: RtHists::new(),
            rt_polygraph: RtHists::new(),
            send_lag: new_hist(),
            sizes: new_size_hist(),
            tls_handshake: new_hist(),
            tunnel: new_hist(),
            firsts: Firsts::default(),
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
        if x.outcome == Outcome::Hit {
            c.hit_bytes += x.bytes;
        }
        if x.rtype == RequestType::Basic {
            c.basic += 1;
            c.basic_bytes += x.bytes;
            if x.offered_hit {
                c.offered_hits += 1;
                c.offered_hit_bytes += x.bytes;
            }
            if x.ideal_hit {
                c.ideal_hits += 1;
                c.ideal_hit_bytes += x.bytes;
            }
            if x.outcome == Outcome::Hit {
                c.basic_hits += 1;
                c.basic_hit_bytes += x.bytes;
            }
        }
        self.rt.record(x.outcome, x.rt_corrected_us);
        self.rt_polygraph.record(x.outcome, x.rt_polygraph_us);
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

    /// Counts a robot's TLS handshake of `us` microseconds.
    pub fn record_tls_handshake(&mut self, us: u64, resumed: bool) {
        self.counters.tls_handshakes += 1;
        self.counters.tls_resumed += u64::from(resumed);
        self.tls_handshake.saturating_record(us.max(1));
    }

    /// Counts a `CONNECT` tunnel set up in `us` microseconds.
    pub fn record_tunnel(&mut self, us: u64) {
        self.counters.tunnels += 1;
        self.tunnel.saturating_record(us.max(1));
    }

    /// Counts a deliberate abort (`by_server`: the origin's).
    pub fn record_abort(&mut self, by_server: bool) {
        if by_server {
            self.counters.aborts_server += 1;
        } else {
            self.counters.aborts_robot += 1;
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.counters.errors.iter().sum()
    }

    /// Adds another snapshot (of another worker or another interval).
    pub fn add(&mut self, o: &Snapshot) {
        self.counters.add(&o.counters);
        self.rt.add(&o.rt);
        self.rt_polygraph.add(&o.rt_polygraph);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.sizes.add(&o.sizes);
        let _ = self.tls_handshake.add(&o.tls_handshake);
        let _ = self.tunnel.add(&o.tunnel);
        self.firsts.add(&o.firsts);
    }

    /// Clears everything, keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.counters = Counters::default();
        self.rt.reset();
        self.rt_polygraph.reset();
        self.send_lag.reset();
        self.sizes.reset();
        self.tls_handshake.reset();
        self.tunnel.reset();
        self.firsts = Firsts::default();
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
    /// From the connection, as Web Polygraph. Runs before format 2 wrote
    /// `rt_uncorrected_ms`, timed from the send, which is read in its place.
    #[serde(alias = "rt_uncorrected_ms")]
    pub rt_polygraph_ms: CdfSet,
    /// Whole-object reply sizes: `[upper bound in bytes, replies]` per
    /// power-of-two bucket (the bucket holds sizes above half its bound).
    pub sizes: Vec<[u64; 2]>,
}

impl Distributions {
    /// The response-time CDFs read on `clock`.
    pub fn rt(&self, clock: RtClock) -> &CdfSet {
        match clock {
            RtClock::Intended => &self.rt_ms,
            RtClock::Polygraph => &self.rt_polygraph_ms,
        }
    }
}

/// Snapshots added over time (a phase, or the whole run). Its gauges
/// (e.g. open connections) are the last interval's.
#[derive(Debug, Clone, Default)]
pub struct Accum {
    pub snap: Snapshot,
    pub duration_s: f64,
    /// Largest end-of-interval count of open connections.
    pub conns_open_max: u64,
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
            rt_polygraph_ms: CdfSet::of(&self.snap.rt_polygraph),
            sizes,
        }
    }

    /// Adds one merged interval of `duration_s` seconds.
    pub fn add_interval(&mut self, s: &Snapshot, duration_s: f64) {
        self.snap.add(s);
        self.snap.counters.take_gauges(&s.counters);
        self.duration_s += duration_s;
        self.conns_open_max = self.conns_open_max.max(s.counters.conns_open);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::TypeCount;
    use crate::entry::Ratio;

    fn xact(outcome: Outcome, bytes: u64, offered: bool, us: u64) -> XactRecord {
        XactRecord {
            outcome,
            bytes,
            rtype: RequestType::Basic,
            full_body: true,
            fills_cache: false,
            ctype: 0,
            offered_hit: offered,
            ideal_hit: offered,
            rt_corrected_us: us,
            rt_polygraph_us: us / 2,
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
                measured: 50.0,
                ideal: 100.0,
            }
        );
        assert_eq!(e.bhr.measured, 25.0);
        // Histograms keep 3 significant digits.
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(close(e.rt_ms.all.mean, 3.0), "{}", e.rt_ms.all.mean);
        assert!(close(e.rt_ms.hit.p50, 2.0), "{}", e.rt_ms.hit.p50);
        assert!(close(e.rt_polygraph_ms.miss.max, 2.0));
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

    #[test]
    fn distributions_keep_both_clocks_and_read_the_older_name() {
        let mut s = Snapshot::default();
        s.record_xact(&xact(Outcome::Miss, 10, false, 8000));
        let mut acc = Accum::default();
        acc.add_interval(&s, 1.0);
        let d = acc.distributions("meas");
        // The largest sample, to the histograms' 3 significant digits.
        let top = |c: RtClock| d.rt(c).all.last().unwrap()[0];
        assert!((top(RtClock::Intended) - 8.0).abs() < 0.01);
        assert!((top(RtClock::Polygraph) - 4.0).abs() < 0.01);
        let text = serde_json::to_string(&d)
            .unwrap()
            .replace("rt_polygraph_ms", "rt_uncorrected_ms");
        let old: Distributions = serde_json::from_str(&text).unwrap();
        assert_eq!(old, d);
    }
}
