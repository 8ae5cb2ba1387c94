//! Combining interval entries into one, for runs without a summary.
//! Counts add up and means are weighted by their counts; percentiles of
//! the parts cannot be combined, so the largest part's value stands in
//! (an upper bound).

use cacheoff_stats::{Accum, Entry, IntervalRecord, Latency, LatencySet, Ratio};

fn latency(parts: &[&Latency]) -> Latency {
    let count: u64 = parts.iter().map(|l| l.count).sum();
    let mean = if count == 0 {
        0.0
    } else {
        parts.iter().map(|l| l.mean * l.count as f64).sum::<f64>() / count as f64
    };
    let max_of = |f: fn(&Latency) -> f64| parts.iter().map(|l| f(l)).fold(0.0, f64::max);
    Latency {
        count,
        mean,
        p50: max_of(|l| l.p50),
        p99: max_of(|l| l.p99),
        max: max_of(|l| l.max),
    }
}

fn latency_set(parts: &[&LatencySet]) -> LatencySet {
    LatencySet {
        all: latency(&parts.iter().map(|s| &s.all).collect::<Vec<_>>()),
        hit: latency(&parts.iter().map(|s| &s.hit).collect::<Vec<_>>()),
        miss: latency(&parts.iter().map(|s| &s.miss).collect::<Vec<_>>()),
    }
}

/// A ratio of parts weighted by `weight` (the parts' denominators).
fn ratio(parts: &[(&Ratio, f64)]) -> Ratio {
    let w: f64 = parts.iter().map(|(_, w)| w).sum();
    if w == 0.0 {
        return Ratio {
            offered: 0.0,
            measured: 0.0,
        };
    }
    Ratio {
        offered: parts.iter().map(|(r, w)| r.offered * w).sum::<f64>() / w,
        measured: parts.iter().map(|(r, w)| r.measured * w).sum::<f64>() / w,
    }
}

pub fn fold(name: &str, recs: &[&IntervalRecord]) -> Entry {
    let e: Vec<&Entry> = recs.iter().map(|r| &r.stats).collect();
    let sum = |f: fn(&Entry) -> u64| e.iter().map(|x| f(x)).sum::<u64>();
    let duration_s: f64 = e.iter().map(|x| x.duration_s).sum();
    let xacts = sum(|x| x.xacts);
    let sent = sum(|x| x.sent);
    let issued = sum(|x| x.issued);
    let basic = |x: &Entry| x.request_types.get("basic").copied().unwrap_or(0) as f64;
    let mut out = e.first().map_or_else(
        || Accum::default().entry(name, &[]),
        |first| Entry {
            name: name.to_string(),
            ..(*first).clone()
        },
    );
    out.duration_s = duration_s;
    out.xacts = xacts;
    out.rate_xps = if duration_s > 0.0 {
        xacts as f64 / duration_s
    } else {
        0.0
    };
    out.bytes = sum(|x| x.bytes);
    out.fill_bytes = sum(|x| x.fill_bytes);
    out.issued = issued;
    out.sent = sent;
    out.dhr = ratio(&e.iter().map(|x| (&x.dhr, basic(x))).collect::<Vec<_>>());
    // Byte ratios weighted by bytes: close enough for a killed run.
    out.bhr = ratio(
        &e.iter()
            .map(|x| (&x.bhr, x.bytes as f64))
            .collect::<Vec<_>>(),
    );
    out.rt_ms = latency_set(&e.iter().map(|x| &x.rt_ms).collect::<Vec<_>>());
    out.rt_uncorrected_ms =
        latency_set(&e.iter().map(|x| &x.rt_uncorrected_ms).collect::<Vec<_>>());
    out.send_lag_ms = latency(&e.iter().map(|x| &x.send_lag_ms).collect::<Vec<_>>());
    let weighted = |f: fn(&Entry) -> f64, w: fn(&Entry) -> u64| {
        let total: u64 = e.iter().map(|x| w(x)).sum();
        if total == 0 {
            0.0
        } else {
            e.iter().map(|x| f(x) * w(x) as f64).sum::<f64>() / total as f64
        }
    };
    out.sent_late_percent = weighted(|x| x.sent_late_percent, |x| x.sent);
    out.issued_late_percent = weighted(|x| x.issued_late_percent, |x| x.issued);
    out.errors.total = sum(|x| x.errors.total);
    out.errors.percent = if sent == 0 {
        0.0
    } else {
        out.errors.total as f64 * 100.0 / sent as f64
    };
    out.errors.by_kind.clear();
    out.request_types.clear();
    out.content_types.clear();
    for x in &e {
        for (k, v) in &x.errors.by_kind {
            *out.errors.by_kind.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &x.request_types {
            *out.request_types.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &x.content_types {
            let t = out.content_types.entry(k.clone()).or_default();
            t.xacts += v.xacts;
            t.bytes += v.bytes;
            t.bodies += v.bodies;
            t.hits += v.hits;
        }
    }
    out.aborts.robot = sum(|x| x.aborts.robot);
    out.aborts.server = sum(|x| x.aborts.server);
    out.conns.opened = sum(|x| x.conns.opened);
    out.conns.open_max = e.iter().map(|x| x.conns.open_max).max().unwrap_or(0);
    out.conns.open = e.last().map_or(0, |x| x.conns.open);
    out
}
