//! The load generator's families ([`RunMetrics`]), updated once per
//! merged interval from the [`IntervalStats`] the coordinator hands its
//! sink: counters add the interval's counts, gauges take its end state,
//! histograms its response times. Figures therefore advance at interval
//! boundaries; the final interval is in before the run returns.
//!
//! Ownership: the run's sink (the coordinator thread) writes; scrapes
//! read. Counters and gauges are atomics; the phase names and the info
//! labels sit behind a mutex held only to copy them.

use crate::hist::SecondsHistogram;
use cacheoff_stats::{ErrorKind, IntervalStats, Outcome};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

type Label = [(&'static str, &'static str); 1];
type FloatGauge = Gauge<f64, AtomicU64>;

/// What a run is, for its info metric and its phase names.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub workload: String,
    /// `forward`, `reverse` or `direct`.
    pub mode: &'static str,
    /// The schedule's phase names, in order.
    pub phases: Vec<String>,
    /// The workload's peak request rate (open loop), per second.
    pub peak_rate: Option<f64>,
}

/// An info metric whose labels change (the current phase, the current
/// run); absent until set.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveInfo(Arc<Mutex<Vec<(&'static str, String)>>>);

impl LiveInfo {
    pub(crate) fn set(&self, labels: Vec<(&'static str, String)>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = labels;
    }
}

impl TypedMetric for LiveInfo {
    const TYPE: MetricType = MetricType::Info;
}

impl EncodeMetric for LiveInfo {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let labels = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        encoder.encode_info(&labels)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Info
    }
    fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }
}

/// The run's families; see docs/metrics.md.
#[derive(Debug, Default)]
pub struct RunMetrics {
    transactions: Family<Label, Counter>,
    bytes: Family<Label, Counter>,
    errors: Family<Label, Counter>,
    response: Family<Label, SecondsHistogram>,
    basic_gets: Counter,
    basic_get_bytes: Counter,
    offered_hits: Counter,
    offered_hit_bytes: Counter,
    ideal_hits: Counter,
    ideal_hit_bytes: Counter,
    measured_hits: Counter,
    measured_hit_bytes: Counter,
    issued: Counter,
    sent: Counter,
    sent_late: Counter,
    aborts: Family<Label, Counter>,
    conns_opened: Counter,
    conns_open: Gauge,
    robots: Gauge,
    load: FloatGauge,
    offered_rate: FloatGauge,
    phase_index: Gauge,
    phase_info: LiveInfo,
    run_info: LiveInfo,
    intervals: Counter,
    run_seconds: FloatGauge,
    finished: Gauge,
    info: Mutex<RunInfo>,
}

impl RunMetrics {
    /// Registers the run's families in `reg` (every label value present
    /// from the start, at zero, so a rate over the whole run sees its
    /// beginning).
    pub fn register(reg: &mut Registry) -> Arc<RunMetrics> {
        let m = RunMetrics::default();
        for r in ["hit", "miss", "error"] {
            let _ = m.transactions.get_or_create(&[("result", r)]);
        }
        for r in ["hit", "miss"] {
            let _ = m.bytes.get_or_create(&[("result", r)]);
        }
        // `all` is hit and miss together (as the summary's rt_ms.all):
        // select one `result`, never sum over them.
        for r in ["all", "hit", "miss"] {
            let _ = m.response.get_or_create(&[("result", r)]);
        }
        for k in ErrorKind::ALL {
            let _ = m.errors.get_or_create(&[("kind", k.name())]);
        }
        for by in ["robot", "server"] {
            let _ = m.aborts.get_or_create(&[("by", by)]);
        }
        reg.register(
            "cacheoff_transactions",
            "Transactions by result: successful hits and misses, and errors",
            m.transactions.clone(),
        );
        reg.register(
            "cacheoff_bytes",
            "Body bytes of successful transactions by result",
            m.bytes.clone(),
        );
        reg.register(
            "cacheoff_errors",
            "Failed transactions by error kind",
            m.errors.clone(),
        );
        reg.register(
            "cacheoff_response_seconds",
            "Response time of successful transactions from their intended start, by result",
            m.response.clone(),
        );
        reg.register(
            "cacheoff_basic_gets",
            "Successful basic GETs (the population of hit ratios)",
            m.basic_gets.clone(),
        );
        reg.register(
            "cacheoff_basic_get_bytes",
            "Body bytes of successful basic GETs",
            m.basic_get_bytes.clone(),
        );
        reg.register(
            "cacheoff_offered_hits",
            "Basic GETs the workload offered as hits (Web Polygraph's offered hits)",
            m.offered_hits.clone(),
        );
        reg.register(
            "cacheoff_offered_hit_bytes",
            "Body bytes of the offered hits",
            m.offered_hit_bytes.clone(),
        );
        reg.register(
            "cacheoff_ideal_hits",
            "Basic GETs an ideal cache hits",
            m.ideal_hits.clone(),
        );
        reg.register(
            "cacheoff_ideal_hit_bytes",
            "Body bytes of the hits an ideal cache makes",
            m.ideal_hit_bytes.clone(),
        );
        reg.register(
            "cacheoff_measured_hits",
            "Basic GETs a cache answered (measured hits)",
            m.measured_hits.clone(),
        );
        reg.register(
            "cacheoff_measured_hit_bytes",
            "Body bytes of the measured hits",
            m.measured_hit_bytes.clone(),
        );
        reg.register(
            "cacheoff_requests_issued",
            "Planned requests the pacer issued",
            m.issued.clone(),
        );
        reg.register(
            "cacheoff_requests_sent",
            "Requests sent, successful or not",
            m.sent.clone(),
        );
        reg.register(
            "cacheoff_requests_sent_late",
            "Requests sent more than 10 ms after their intended start",
            m.sent_late.clone(),
        );
        reg.register(
            "cacheoff_aborts",
            "Transactions aborted on purpose, by robot or origin server",
            m.aborts.clone(),
        );
        reg.register(
            "cacheoff_connections_opened",
            "Connections robots opened",
            m.conns_opened.clone(),
        );
        reg.register(
            "cacheoff_connections_open",
            "Robot connections open at the end of the last interval",
            m.conns_open.clone(),
        );
        reg.register(
            "cacheoff_robots",
            "Robots alive during the last interval",
            m.robots.clone(),
        );
        reg.register(
            "cacheoff_load_factor",
            "The schedule's load factor at the last interval's middle",
            m.load.clone(),
        );
        reg.register("cacheoff_offered_request_rate", "Request rate the plan offered in the last interval, per second (peak rate times load factor; 0 in closed-loop runs)", m.offered_rate.clone());
        reg.register(
            "cacheoff_phase_index",
            "Index of the current phase in the schedule, from 0",
            m.phase_index.clone(),
        );
        reg.register(
            "cacheoff_phase",
            "The current phase, by name",
            m.phase_info.clone(),
        );
        reg.register(
            "cacheoff_run",
            "The run in progress: its workload and mode",
            m.run_info.clone(),
        );
        reg.register(
            "cacheoff_intervals",
            "Merged intervals so far (figures advance at each)",
            m.intervals.clone(),
        );
        reg.register(
            "cacheoff_run_elapsed_seconds",
            "Run time at the end of the last merged interval",
            m.run_seconds.clone(),
        );
        reg.register(
            "cacheoff_run_finished",
            "1 once the run ended and its summary was written, else 0",
            m.finished.clone(),
        );
        Arc::new(m)
    }

    /// A run begins: its info, phase names and peak rate. A process that
    /// runs several (a lineup) calls it for each; counters go on adding.
    pub fn begin(&self, info: RunInfo) {
        self.run_info.set(vec![
            ("workload", info.workload.clone()),
            ("mode", info.mode.to_string()),
        ]);
        if let Some(first) = info.phases.first() {
            self.phase_info.set(vec![("phase", first.clone())]);
        }
        self.phase_index.set(0);
        self.finished.set(0);
        self.run_seconds.set(0.0);
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = info;
    }

    /// One merged interval.
    pub fn interval(&self, iv: &IntervalStats) {
        let s = &iv.snap;
        let c = &s.counters;
        let add = |f: &Family<Label, Counter>, label: Label, v: u64| {
            let _ = f.get_or_create(&label).inc_by(v);
        };
        let hits = s.rt.hit.len();
        let misses = s.rt.miss.len();
        add(&self.transactions, [("result", Outcome::Hit.name())], hits);
        add(
            &self.transactions,
            [("result", Outcome::Miss.name())],
            misses,
        );
        add(&self.transactions, [("result", "error")], s.errors_total());
        add(&self.bytes, [("result", "hit")], c.hit_bytes);
        add(
            &self.bytes,
            [("result", "miss")],
            c.bytes.saturating_sub(c.hit_bytes),
        );
        for k in ErrorKind::ALL {
            let n = c.errors[*k as usize];
            if n > 0 {
                add(&self.errors, [("kind", k.name())], n);
            }
        }
        add(&self.aborts, [("by", "robot")], c.aborts_robot);
        add(&self.aborts, [("by", "server")], c.aborts_server);
        self.response
            .get_or_create(&[("result", "all")])
            .add_us(&s.rt.all);
        self.response
            .get_or_create(&[("result", "hit")])
            .add_us(&s.rt.hit);
        self.response
            .get_or_create(&[("result", "miss")])
            .add_us(&s.rt.miss);
        for (counter, v) in [
            (&self.basic_gets, c.basic),
            (&self.basic_get_bytes, c.basic_bytes),
            (&self.offered_hits, c.offered_hits),
            (&self.offered_hit_bytes, c.offered_hit_bytes),
            (&self.ideal_hits, c.ideal_hits),
            (&self.ideal_hit_bytes, c.ideal_hit_bytes),
            (&self.measured_hits, c.basic_hits),
            (&self.measured_hit_bytes, c.basic_hit_bytes),
            (&self.issued, c.issued),
            (&self.sent, c.sent),
            (&self.sent_late, c.sent_late),
            (&self.conns_opened, c.conns_opened),
        ] {
            counter.inc_by(v);
        }
        self.conns_open.set(c.conns_open as i64);
        self.robots.set(i64::from(iv.robots));
        self.load.set(iv.load);
        self.phase_index.set(iv.phase as i64);
        let info = self.info.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rate) = info.peak_rate {
            self.offered_rate.set(rate * iv.load);
        }
        if let Some(name) = info.phases.get(iv.phase) {
            self.phase_info.set(vec![("phase", name.clone())]);
        }
        drop(info);
        self.run_seconds.set(iv.end_s);
        self.intervals.inc();
    }

    /// The run ended and its summary is written.
    pub fn finish(&self) {
        self.finished.set(1);
    }
}
