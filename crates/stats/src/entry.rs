//! [`Entry`]: the JSON view of a span (an interval, a phase, the total).
//!
//! Every derived figure (rates, hit ratios, late and error percentages) is
//! computed in one place, [`Parts::entry`], from the span's [`Counts`]:
//! both [`Entry::new`] (from an accumulated snapshot) and [`Entry::fold`]
//! (from the entries of its parts) go through it, so the two agree.

use crate::counters::{Counts, TypeCount, MAX_CONTENT_TYPES};
use crate::firsts::Firsts;
use crate::kinds::{ErrorKind, RtClock};
use crate::snapshot::{Accum, RtHists};
use cacheoff_base::RequestType;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Offered and measured ratio, in percent (0..100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Offered as Web Polygraph counts it: revisits of cachable objects.
    pub offered: f64,
    pub measured: f64,
    /// What an ideal cache hits: the offered hits an earlier GET made
    /// possible (runs before format 2 offered only these).
    pub ideal: f64,
}

/// Rounded to 3 decimals: figures are written at this precision.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        round3(part as f64 * 100.0 / whole as f64)
    }
}

/// Summary of one latency histogram, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    /// No samples (a span without any, or a run from before the figure).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
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

    /// Combines the summaries of parts: counts add, means are weighted by
    /// count; percentiles cannot be combined, so the largest part's stands
    /// in (an upper bound).
    pub fn fold<'a>(parts: impl Iterator<Item = &'a Latency> + Clone) -> Latency {
        let count: u64 = parts.clone().map(|l| l.count).sum();
        let weighted: f64 = parts.clone().map(|l| l.mean * l.count as f64).sum();
        let max_of = |f: fn(&Latency) -> f64| parts.clone().map(f).fold(0.0, f64::max);
        Latency {
            count,
            mean: if count == 0 {
                0.0
            } else {
                round3(weighted / count as f64)
            },
            p50: max_of(|l| l.p50),
            p99: max_of(|l| l.p99),
            max: max_of(|l| l.max),
        }
    }
}

/// Response times of all, hit and miss replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySet {
    pub all: Latency,
    pub hit: Latency,
    pub miss: Latency,
}

impl LatencySet {
    pub(crate) fn of(h: &RtHists) -> LatencySet {
        LatencySet {
            all: Latency::of(&h.all),
            hit: Latency::of(&h.hit),
            miss: Latency::of(&h.miss),
        }
    }

    fn fold<'a>(parts: impl Iterator<Item = &'a LatencySet> + Clone) -> LatencySet {
        LatencySet {
            all: Latency::fold(parts.clone().map(|s| &s.all)),
            hit: Latency::fold(parts.clone().map(|s| &s.hit)),
            miss: Latency::fold(parts.map(|s| &s.miss)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    pub total: u64,
    /// Errors as a share of requests ([`Entry::requests`]), in percent.
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
/// The counts-like fields before `counts` repeat its values under the
/// names outside tools read.
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
    /// From the moment the transaction got its connection, as Web
    /// Polygraph. Runs before format 2 wrote `rt_uncorrected_ms`, timed
    /// from the send, which is read in its place.
    #[serde(alias = "rt_uncorrected_ms")]
    pub rt_polygraph_ms: LatencySet,
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
    /// Robots' TLS handshakes, apart from response times (which include
    /// them when a transaction opened its connection).
    #[serde(default, skip_serializing_if = "Latency::is_empty")]
    pub tls_handshake_ms: Latency,
    /// Robots' `CONNECT` tunnels through a forward proxy.
    #[serde(default, skip_serializing_if = "Latency::is_empty")]
    pub tunnel_ms: Latency,
    /// Successful transactions per request type name.
    pub request_types: BTreeMap<String, u64>,
    /// Successful transactions and body bytes per content type name.
    pub content_types: BTreeMap<String, TypeCount>,
    /// When the span first saw a hit, a miss and a new connection
    /// (seconds from the run's start); absent when it saw none.
    #[serde(default, skip_serializing_if = "Firsts::is_empty")]
    pub firsts: Firsts,
    /// The sums every figure above derives from. Absent in older runs
    /// (see [`Entry::raw_counts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
}

/// What an entry is made of before anything is derived.
#[derive(Default)]
struct Parts {
    counts: Counts,
    /// Some counts were recovered from an older run's figures.
    estimated: bool,
    /// Unrounded, so rates do not inherit the rounding of durations.
    duration_s: f64,
    errors: BTreeMap<String, u64>,
    rt_ms: LatencySet,
    rt_polygraph_ms: LatencySet,
    send_lag_ms: Latency,
    tls_handshake_ms: Latency,
    tunnel_ms: Latency,
    conns_open: u64,
    conns_open_max: u64,
    request_types: BTreeMap<String, u64>,
    content_types: BTreeMap<String, TypeCount>,
    firsts: Firsts,
}

impl Parts {
    /// The one place derived figures are computed.
    fn entry(self, name: &str) -> Entry {
        let c = &self.counts;
        let d = self.duration_s;
        let mut e = Entry {
            name: name.to_string(),
            duration_s: round3(d),
            xacts: c.xacts,
            rate_xps: if d > 0.0 {
                round3(c.xacts as f64 / d)
            } else {
                0.0
            },
            bytes: c.bytes,
            fill_bytes: c.fill_bytes,
            issued: c.issued,
            sent: c.sent,
            dhr: Ratio {
                offered: percent(c.offered_hits, c.basic),
                measured: percent(c.basic_hits, c.basic),
                ideal: percent(c.ideal_hits, c.basic),
            },
            bhr: Ratio {
                offered: percent(c.offered_hit_bytes, c.basic_bytes),
                measured: percent(c.basic_hit_bytes, c.basic_bytes),
                ideal: percent(c.ideal_hit_bytes, c.basic_bytes),
            },
            rt_ms: self.rt_ms,
            rt_polygraph_ms: self.rt_polygraph_ms,
            send_lag_ms: self.send_lag_ms,
            sent_late_percent: percent(c.sent_late, c.sent),
            issued_late_percent: percent(c.issued_late, c.issued),
            errors: Errors {
                total: self.errors.values().sum(),
                percent: 0.0,
                by_kind: self.errors,
            },
            aborts: Aborted {
                robot: c.aborts_robot,
                server: c.aborts_server,
            },
            conns: Conns {
                open: self.conns_open,
                open_max: self.conns_open_max,
                opened: c.conns_opened,
            },
            tls_handshake_ms: self.tls_handshake_ms,
            tunnel_ms: self.tunnel_ms,
            request_types: self.request_types,
            content_types: self.content_types,
            firsts: self.firsts,
            counts: (!self.estimated).then_some(self.counts),
        };
        e.errors.percent = e.share_of_requests(e.errors.total);
        e
    }
}

impl Accum {
    /// The JSON view, naming content types by `content_types`.
    pub fn entry(&self, name: &str, content_types: &[String]) -> Entry {
        Entry::new(name, self, content_types)
    }
}

impl Entry {
    /// The entry of an accumulated span, naming content types by
    /// `content_types`.
    pub fn new(name: &str, a: &Accum, content_types: &[String]) -> Entry {
        let c = &a.snap.counters;
        Parts {
            counts: c.counts(),
            estimated: false,
            duration_s: a.duration_s,
            errors: ErrorKind::ALL
                .iter()
                .filter(|k| c.errors[**k as usize] > 0)
                .map(|k| (k.name().to_string(), c.errors[*k as usize]))
                .collect(),
            rt_ms: LatencySet::of(&a.snap.rt),
            rt_polygraph_ms: LatencySet::of(&a.snap.rt_polygraph),
            send_lag_ms: Latency::of(&a.snap.send_lag),
            tls_handshake_ms: Latency::of(&a.snap.tls_handshake),
            tunnel_ms: Latency::of(&a.snap.tunnel),
            conns_open: c.conns_open,
            conns_open_max: a.conns_open_max,
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
            firsts: a.snap.firsts,
        }
        .entry(name)
    }

    /// One entry for consecutive spans (a killed run's intervals, which
    /// have no summary): counts add and every figure is derived from the
    /// sums as [`Entry::new`] derives it; latency percentiles are upper
    /// bounds ([`Latency::fold`]).
    pub fn fold(name: &str, parts: &[&Entry]) -> Entry {
        let mut p = Parts {
            request_types: RequestType::ALL
                .iter()
                .map(|t| (t.name().to_string(), 0))
                .collect(),
            ..Parts::default()
        };
        for e in parts {
            p.counts.add(&e.raw_counts());
            p.estimated |= e.counts.is_none();
            p.duration_s += e.duration_s;
            p.conns_open = e.conns.open;
            p.conns_open_max = p.conns_open_max.max(e.conns.open_max);
            p.firsts.add(&e.firsts);
            for (k, v) in &e.errors.by_kind {
                *p.errors.entry(k.clone()).or_default() += v;
            }
            for (k, v) in &e.request_types {
                *p.request_types.entry(k.clone()).or_default() += v;
            }
            for (k, v) in &e.content_types {
                p.content_types.entry(k.clone()).or_default().add(v);
            }
        }
        let each = || parts.iter().copied();
        p.rt_ms = LatencySet::fold(each().map(|e| &e.rt_ms));
        p.rt_polygraph_ms = LatencySet::fold(each().map(|e| &e.rt_polygraph_ms));
        p.send_lag_ms = Latency::fold(each().map(|e| &e.send_lag_ms));
        p.tls_handshake_ms = Latency::fold(each().map(|e| &e.tls_handshake_ms));
        p.tunnel_ms = Latency::fold(each().map(|e| &e.tunnel_ms));
        p.entry(name)
    }

    /// The response times read on `clock`.
    pub fn rt(&self, clock: RtClock) -> &LatencySet {
        match clock {
            RtClock::Intended => &self.rt_ms,
            RtClock::Polygraph => &self.rt_polygraph_ms,
        }
    }

    /// Requests that errors are a share of: those sent, or more when
    /// requests failed without being sent (dropped from a full backlog).
    pub fn requests(&self) -> u64 {
        self.sent.max(self.xacts + self.errors.total)
    }

    /// `n` (of the span's errors) as a percentage of its requests.
    pub fn share_of_requests(&self, n: u64) -> f64 {
        percent(n, self.requests())
    }

    /// The span's counts. Entries of older runs lack them: they are then
    /// recovered from the figures (hit and late counts up to the rounding
    /// of their percentages, all bytes taken as basic bytes).
    pub fn raw_counts(&self) -> Counts {
        if let Some(c) = self.counts {
            return c;
        }
        let basic = self.request_types.get("basic").copied().unwrap_or(0);
        let of = |percent: f64, whole: u64| (percent * whole as f64 / 100.0).round() as u64;
        Counts {
            xacts: self.xacts,
            bytes: self.bytes,
            fill_bytes: self.fill_bytes,
            issued: self.issued,
            issued_late: of(self.issued_late_percent, self.issued),
            sent: self.sent,
            sent_late: of(self.sent_late_percent, self.sent),
            basic,
            basic_bytes: self.bytes,
            offered_hits: of(self.dhr.offered, basic),
            offered_hit_bytes: of(self.bhr.offered, self.bytes),
            ideal_hits: of(self.dhr.ideal, basic),
            ideal_hit_bytes: of(self.bhr.ideal, self.bytes),
            basic_hits: of(self.dhr.measured, basic),
            basic_hit_bytes: of(self.bhr.measured, self.bytes),
            aborts_robot: self.aborts.robot,
            aborts_server: self.aborts.server,
            conns_opened: self.conns.opened,
            hit_bytes: of(self.bhr.measured, self.bytes),
            // Older runs did not read what proxies claim.
            ..Counts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Outcome;
    use crate::snapshot::{Snapshot, XactRecord};

    /// An interval with a mix of everything counted, varied by `i`.
    fn interval(i: u64) -> Snapshot {
        let mut s = Snapshot::default();
        for n in 0..40 + 13 * i {
            let hit = (n + i).is_multiple_of(3);
            s.record_issue(if n % 7 == 0 { 20_000 } else { 5 });
            s.record_send(if n % 5 == 0 { 15_000 } else { 100 });
            s.record_xact(&XactRecord {
                outcome: if hit { Outcome::Hit } else { Outcome::Miss },
                fills_cache: !hit && n % 2 == 0,
                bytes: 1000 + 97 * n,
                full_body: n % 4 != 0,
                rtype: RequestType::ALL[(n % 8).min(5) as usize],
                ctype: (n % 3) as u16,
                offered_hit: hit || n % 11 == 0,
                ideal_hit: hit || n % 22 == 0,
                rt_corrected_us: 300 + 41 * n * (i + 1),
                rt_polygraph_us: 200 + 29 * n,
            });
        }
        for _ in 0..i + 1 {
            s.record_error(ErrorKind::BodyMismatch);
        }
        // Dropped, never sent: errors exceed what was sent beyond xacts.
        for _ in 0..3 * i {
            s.record_error(ErrorKind::BacklogOverflow);
        }
        s.record_abort(i.is_multiple_of(2));
        s.counters.conns_opened += 2 + i;
        s.counters.conns_open = 5 - i;
        s
    }

    fn names() -> Vec<String> {
        ["html", "image", "other"].map(String::from).to_vec()
    }

    #[test]
    fn folding_intervals_gives_the_figures_of_the_accumulated_span() {
        let mut total = Accum::default();
        let mut parts = Vec::new();
        for (i, d) in [(0, 5.0), (1, 5.0), (2, 2.5), (3, 0.25)] {
            let s = interval(i);
            let mut one = Accum::default();
            one.add_interval(&s, d);
            parts.push(one.entry("meas", &names()));
            total.add_interval(&s, d);
        }
        let want = total.entry("meas", &names());
        let got = Entry::fold("meas", &parts.iter().collect::<Vec<_>>());
        assert!(want.errors.by_kind["backlog_overflow"] > 0);
        assert!(want.requests() > want.sent, "the error share's denominator");
        // Latencies apart, the folded entry is the accumulated one.
        let same = |e: &Entry| Entry {
            rt_ms: LatencySet::default(),
            rt_polygraph_ms: LatencySet::default(),
            send_lag_ms: Latency::default(),
            ..e.clone()
        };
        assert_eq!(same(&got), same(&want));
        assert_eq!(got.counts, Some(total.snap.counters.counts()));
        assert_eq!(got.conns.open, 2, "the last interval's");
        // Counts and maxima agree; means up to their µs rounding; folded
        // percentiles are upper bounds.
        let pairs = [
            (got.rt_ms.all, want.rt_ms.all),
            (got.rt_ms.hit, want.rt_ms.hit),
            (got.rt_ms.miss, want.rt_ms.miss),
            (got.rt_polygraph_ms.all, want.rt_polygraph_ms.all),
            (got.send_lag_ms, want.send_lag_ms),
        ];
        for (g, w) in pairs {
            assert_eq!((g.count, g.max), (w.count, w.max));
            assert!((g.mean - w.mean).abs() <= w.mean * 0.002, "{g:?} {w:?}");
            assert!(g.p50 >= w.p50 && g.p99 >= w.p99, "{g:?} {w:?}");
        }
        let none = Entry::fold("none", &[]);
        assert_eq!(none, Accum::default().entry("none", &[]));
    }

    #[test]
    fn the_polygraph_clock_is_written_once_and_read_from_older_runs_too() {
        let mut a = Accum::default();
        a.add_interval(&interval(2), 5.0);
        let new = a.entry("i", &names());
        assert_ne!(new.rt_polygraph_ms, new.rt_ms, "two clocks, two figures");
        assert_eq!(new.rt(RtClock::Polygraph), &new.rt_polygraph_ms);
        assert_eq!(new.rt(RtClock::Intended), &new.rt_ms);
        let mut v = serde_json::to_value(&new).unwrap();
        let o = v.as_object_mut().unwrap();
        assert!(!o.contains_key("rt_uncorrected_ms"), "one name per figure");
        // Before format 2 the second clock was written under another name.
        let old = o.remove("rt_polygraph_ms").unwrap();
        o.insert("rt_uncorrected_ms".into(), old);
        let read: Entry = serde_json::from_value(v).unwrap();
        assert_eq!(read, new);
    }

    #[test]
    fn entries_of_older_runs_fold_from_counts_recovered_from_their_figures() {
        let mut a = Accum::default();
        a.add_interval(&interval(1), 5.0);
        let new = a.entry("i", &names());
        let mut old = serde_json::to_value(&new).unwrap();
        old.as_object_mut().unwrap().remove("counts");
        let old: Entry = serde_json::from_value(old).unwrap();
        assert_eq!(old.counts, None);
        let c = old.raw_counts();
        let exact = new.counts.unwrap();
        assert_eq!(
            (c.xacts, c.sent, c.sent_late, c.basic, c.basic_hits),
            (
                exact.xacts,
                exact.sent,
                exact.sent_late,
                exact.basic,
                exact.basic_hits
            )
        );
        let folded = Entry::fold("i", &[&old, &old]);
        assert_eq!(folded.counts, None, "estimates are not written as counts");
        assert_eq!(folded.xacts, 2 * new.xacts);
        assert_eq!(folded.dhr, new.dhr);
        assert_eq!(folded.errors.percent, new.errors.percent);
    }
}
