//! The headline figures an A/B comparison judges, named by their path in
//! a phase entry of `summary.json` (or an interval row of
//! `intervals.jsonl`, which has the same fields), and how a figure is read
//! from either: a span without samples for a figure (no hits for a hit
//! response time, no basic GETs for a hit ratio) gives no value, not 0.

use serde_json::Value;

/// One headline figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    /// Its path in a phase entry (`rt_ms.hit.mean`), or `resources.*` in
    /// `summary.json`'s top-level `resources` object.
    pub name: &'static str,
    /// What a reader calls it, with its unit.
    pub label: &'static str,
    /// True when a higher value is the better one (throughput, hit
    /// ratios); false for times, errors and resources used.
    pub higher_is_better: bool,
}

const fn fig(name: &'static str, label: &'static str, higher_is_better: bool) -> Figure {
    Figure {
        name,
        label,
        higher_is_better,
    }
}

/// The figures `cacheoff ab` and `cacheoff compare` judge, in the order
/// their tables list them.
pub const FIGURES: &[Figure] = &[
    fig("rate_xps", "throughput (xact/s)", true),
    fig("dhr.measured", "document hit ratio (%)", true),
    fig("bhr.measured", "byte hit ratio (%)", true),
    fig("rt_ms.all.mean", "response time, mean (ms)", false),
    fig("rt_ms.all.p50", "response time, median (ms)", false),
    fig(
        "rt_ms.all.p99",
        "response time, 99th percentile (ms)",
        false,
    ),
    fig("rt_ms.hit.mean", "hit response time, mean (ms)", false),
    fig("rt_ms.hit.p50", "hit response time, median (ms)", false),
    fig(
        "rt_ms.hit.p99",
        "hit response time, 99th percentile (ms)",
        false,
    ),
    fig("rt_ms.miss.mean", "miss response time, mean (ms)", false),
    fig("rt_ms.miss.p50", "miss response time, median (ms)", false),
    fig(
        "rt_ms.miss.p99",
        "miss response time, 99th percentile (ms)",
        false,
    ),
    fig("errors.percent", "errors (% of requests)", false),
    fig(
        "resources.cpu_ms_per_1k_xacts",
        "CPU per 1000 transactions (ms)",
        false,
    ),
    fig("resources.cores_used", "cores used", false),
    fig("resources.mem_peak_bytes", "peak memory (bytes)", false),
    fig("resources.disk_write_bytes", "disk writes (bytes)", false),
    fig(
        "resources.write_amplification",
        "write amplification",
        false,
    ),
];

/// The figure named `name` in [`FIGURES`].
pub fn figure(name: &str) -> Option<&'static Figure> {
    FIGURES.iter().find(|f| f.name == name)
}

const RESOURCES: &str = "resources.";

/// Figure `name` of a run: `resources.*` from `summary`'s top-level
/// `resources` object, anything else from `phase`, an entry of
/// `summary["phases"]` (see [`measured`]). `None` when the field is
/// absent, not a finite number, or the span had no samples for it.
pub fn value(summary: &Value, phase: &Value, name: &str) -> Option<f64> {
    if name.starts_with(RESOURCES) {
        number(summary, name)
    } else {
        entry_value(phase, name)
    }
}

/// The measured phase's entry of a `summary.json` (the one its
/// `measured_phase` names), if it has one.
pub fn measured(summary: &Value) -> Option<&Value> {
    let name = summary.get("measured_phase")?.as_str()?;
    summary
        .get("phases")?
        .as_array()?
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
}

/// Figure `name` of every interval row of phase `phase` that has samples
/// for it, in order. Each interval counts once, whatever its number of
/// transactions: a series of per-interval means, not a mean per
/// transaction. Intervals without samples (no hits for a hit response
/// time) are left out.
pub fn series(intervals: &[Value], phase: &str, name: &str) -> Vec<f64> {
    intervals
        .iter()
        .filter(|row| row.get("phase").and_then(Value::as_str) == Some(phase))
        .filter_map(|row| entry_value(row, name))
        .collect()
}

/// Figure `name` of one entry (a phase or an interval row), if the span
/// had samples for it.
fn entry_value(entry: &Value, name: &str) -> Option<f64> {
    let v = number(entry, name)?;
    has_samples(entry, name).then_some(v)
}

/// The finite number at dotted `path` in `v`.
fn number(v: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(v, |v, key| v.get(key))?
        .as_f64()
        .filter(|x| x.is_finite())
}

fn count(v: &Value, path: &str) -> Option<u64> {
    path.split('.').try_fold(v, |v, key| v.get(key))?.as_u64()
}

/// False when the figure at `path` is a placeholder of a span that had
/// nothing to measure it on (the entry writes 0 there).
fn has_samples(entry: &Value, path: &str) -> bool {
    let head = path.split('.').next().unwrap_or_default();
    match head {
        "rate_xps" => number(entry, "duration_s").is_some_and(|d| d > 0.0),
        // Hit ratios count basic GETs only; older runs lack `counts`.
        "dhr" | "bhr" => count(entry, "counts.basic")
            .or_else(|| count(entry, "request_types.basic"))
            .is_some_and(|n| n > 0),
        // As `Entry::requests`: those sent, or more when some were
        // dropped unsent.
        "errors" => {
            let sent = count(entry, "sent").unwrap_or(0);
            let done =
                count(entry, "xacts").unwrap_or(0) + count(entry, "errors.total").unwrap_or(0);
            sent.max(done) > 0
        }
        // A latency summary (`rt_ms.hit.mean`) carries its `count`.
        _ => match path.rsplit_once('.') {
            Some((parent, _)) => count(entry, &format!("{parent}.count")).is_none_or(|n| n > 0),
            None => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn latency(count: u64, mean: f64) -> Value {
        json!({"count": count, "mean": mean, "p50": mean * 0.8, "p99": mean * 3.0, "max": mean * 9.0})
    }

    /// An entry as `cacheoff_stats::Entry` writes it (the fields read here).
    fn entry(name: &str, xacts: u64, hits: u64, basic: u64) -> Value {
        json!({
            "name": name, "phase": name, "duration_s": 5.0, "xacts": xacts,
            "rate_xps": xacts as f64 / 5.0, "sent": xacts + 1,
            "dhr": {"offered": 60.0, "measured": if basic > 0 { 100.0 * hits as f64 / basic as f64 } else { 0.0 }, "ideal": 55.0},
            "bhr": {"offered": 50.0, "measured": 40.0, "ideal": 45.0},
            "rt_ms": {"all": latency(xacts, 12.0), "hit": latency(hits, if hits > 0 { 2.0 } else { 0.0 }), "miss": latency(xacts - hits, 20.0)},
            "errors": {"total": 1, "percent": 100.0 / (xacts + 1) as f64, "by_kind": {"timeout": 1}},
            "request_types": {"basic": basic},
            "counts": {"basic": basic, "xacts": xacts},
        })
    }

    fn summary() -> Value {
        json!({
            "format": "cacheoff-summary", "version": 2, "measured_phase": "top",
            "phases": [entry("fill", 100, 0, 90), entry("top", 500, 200, 400)],
            "total": entry("total", 600, 200, 490),
            "resources": {"cores_used": 1.5, "mem_peak_bytes": 1_000_000u64},
        })
    }

    #[test]
    fn figures_are_read_from_the_measured_phase_and_resources_from_the_top() {
        let s = summary();
        let p = measured(&s).expect("measured phase");
        assert_eq!(p["name"], "top");
        assert_eq!(value(&s, p, "rate_xps"), Some(100.0));
        assert_eq!(value(&s, p, "dhr.measured"), Some(50.0));
        assert_eq!(value(&s, p, "rt_ms.hit.p99"), Some(6.0));
        assert_eq!(value(&s, p, "errors.percent"), Some(100.0 / 501.0));
        assert_eq!(value(&s, p, "resources.cores_used"), Some(1.5));
        assert_eq!(value(&s, p, "resources.mem_peak_bytes"), Some(1e6));
        assert_eq!(value(&s, p, "resources.disk_write_bytes"), None, "absent");
        assert_eq!(value(&s, p, "no.such.field"), None);
        let mut older = s.clone();
        older.as_object_mut().unwrap().remove("resources");
        assert_eq!(value(&older, p, "resources.cores_used"), None);
        older["measured_phase"] = Value::Null;
        assert!(measured(&older).is_none());
        for f in FIGURES {
            assert!(figure(f.name) == Some(f), "{}", f.name);
            assert!(!f.label.is_empty());
        }
    }

    #[test]
    fn a_span_without_samples_gives_no_value() {
        let s = summary();
        let fill = &s["phases"][0];
        assert_eq!(value(&s, fill, "rt_ms.hit.mean"), None, "no hits");
        assert_eq!(value(&s, fill, "rt_ms.miss.mean"), Some(20.0));
        assert_eq!(value(&s, fill, "dhr.measured"), Some(0.0), "a real 0");
        let none = entry("x", 0, 0, 0);
        assert_eq!(entry_value(&none, "dhr.measured"), None, "no basic GETs");
        assert_eq!(entry_value(&none, "rt_ms.all.mean"), None);
        assert_eq!(entry_value(&none, "rate_xps"), Some(0.0), "a real 0");
        assert!(entry_value(&none, "errors.percent").is_some(), "one sent");
        // Older runs: no `counts`, hit ratios counted on request types.
        let mut old = entry("x", 10, 5, 8);
        old.as_object_mut().unwrap().remove("counts");
        assert_eq!(entry_value(&old, "dhr.measured"), Some(62.5));
        old["request_types"]["basic"] = json!(0);
        assert_eq!(entry_value(&old, "dhr.measured"), None);
    }

    #[test]
    fn a_series_keeps_the_phase_s_intervals_with_samples_in_order() {
        let rows = vec![
            entry("fill", 50, 0, 40),
            entry("top", 100, 10, 80),
            entry("top", 120, 0, 100),
            entry("top", 90, 30, 70),
            entry("cool", 10, 5, 10),
        ];
        assert_eq!(series(&rows, "top", "rate_xps"), vec![20.0, 24.0, 18.0]);
        assert_eq!(
            series(&rows, "top", "rt_ms.hit.mean"),
            vec![2.0, 2.0],
            "the hitless interval is left out"
        );
        assert!(series(&rows, "top", "resources.cores_used").is_empty());
        assert!(series(&rows, "none", "rate_xps").is_empty());
    }
}
