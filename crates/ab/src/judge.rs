//! Every headline figure of an experiment judged at once, from the run
//! directories' JSON as read: what `cacheoff ab` and `cacheoff compare`
//! call.

use crate::figures::{measured, series, value, FIGURES};
use crate::interval::{batches, rounds, FigureResult};
use serde_json::Value;

/// Figure `name` of a run's `summary.json`, from its measured phase
/// (NaN, a missing round, when it has none or lacks the figure).
fn summary_value(summary: &Value, name: &str) -> f64 {
    measured(summary)
        .and_then(|phase| value(summary, phase, name))
        .unwrap_or(f64::NAN)
}

/// The rounds of an experiment, each as A's and B's `summary.json`:
/// every figure of [`FIGURES`] judged by [`rounds`], in that order,
/// leaving out figures that no round has on both sides.
pub fn judge_rounds(runs: &[[&Value; 2]], level: f64) -> Vec<FigureResult> {
    FIGURES
        .iter()
        .map(|f| {
            let side = |s: usize| -> Vec<f64> {
                runs.iter().map(|r| summary_value(r[s], f.name)).collect()
            };
            rounds(f.name, &side(0), &side(1), level)
        })
        .filter(|r| r.n > 0)
        .collect()
}

/// One run as `cacheoff compare` reads it: its `summary.json` (for the
/// measured phase's name) and the rows of its `intervals.jsonl`.
pub struct RunSeries<'a> {
    pub summary: &'a Value,
    pub intervals: &'a [Value],
}

impl RunSeries<'_> {
    fn series(&self, name: &str) -> Vec<f64> {
        match self.summary.get("measured_phase").and_then(Value::as_str) {
            Some(phase) => series(self.intervals, phase, name),
            None => Vec::new(),
        }
    }
}

/// Two single runs: every figure of [`FIGURES`] both runs' measured
/// phases have in their intervals, judged by [`batches`], in that order
/// (the `resources.*` figures have no interval series and are left out).
pub fn judge_runs(a: &RunSeries, b: &RunSeries, level: f64) -> Vec<FigureResult> {
    FIGURES
        .iter()
        // An interval's `resources` are that interval's spending, not the
        // phase figures of the same names.
        .filter(|f| !f.name.starts_with("resources."))
        .filter_map(|f| {
            let (sa, sb) = (a.series(f.name), b.series(f.name));
            (!sa.is_empty() && !sb.is_empty()).then(|| batches(f.name, &sa, &sb, level))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::Verdict;
    use serde_json::json;

    /// An entry with the fields the figures read: `rate` transactions a
    /// second over 5 s, half of them hits when `hits`.
    fn entry(name: &str, rate: f64, hits: bool) -> Value {
        let xacts = (rate * 5.0) as u64;
        let lat = |count: u64, mean: f64| json!({"count": count, "mean": mean, "p50": mean, "p99": 2.0 * mean, "max": 3.0 * mean});
        let h = if hits { xacts / 2 } else { 0 };
        json!({
            "name": name, "phase": name, "duration_s": 5.0, "xacts": xacts, "rate_xps": rate, "sent": xacts,
            "dhr": {"measured": if hits { 50.0 } else { 0.0 }}, "bhr": {"measured": 40.0},
            "rt_ms": {"all": lat(xacts, 10.0 + rate / 100.0), "hit": lat(h, 1.0), "miss": lat(xacts - h, 19.0)},
            "errors": {"total": 0, "percent": 0.0}, "counts": {"basic": xacts},
        })
    }

    fn summary(rate: f64, cores: Option<f64>) -> Value {
        let mut s = json!({"measured_phase": "top", "phases": [entry("fill", 1.0, false), entry("top", rate, false)]});
        if let Some(c) = cores {
            s["resources"] = json!({"cores_used": c});
        }
        s
    }

    #[test]
    fn rounds_judge_every_figure_both_sides_have() {
        let a: Vec<Value> = [100.0, 110.0, 90.0, 105.0]
            .iter()
            .map(|r| summary(*r, Some(1.0)))
            .collect();
        let b: Vec<Value> = [104.0, 113.0, 95.0, 108.0]
            .iter()
            .enumerate()
            .map(|(i, r)| summary(*r, (i < 3).then_some(1.2 + i as f64 / 100.0)))
            .collect();
        let runs: Vec<[&Value; 2]> = a.iter().zip(&b).map(|(a, b)| [a, b]).collect();
        let got = judge_rounds(&runs, 0.95);
        let names: Vec<&str> = got.iter().map(|r| r.name.as_str()).collect();
        // No hits: no hit response time; resources only where measured.
        assert!(!names.contains(&"rt_ms.hit.mean"), "{names:?}");
        assert!(names.contains(&"rt_ms.miss.p99") && names.contains(&"errors.percent"));
        let by = |n: &str| got.iter().find(|r| r.name == n).unwrap();
        assert_eq!(
            (by("rate_xps").verdict, by("rate_xps").n),
            (Verdict::Higher, 4)
        );
        assert_eq!(
            by("resources.cores_used").n,
            3,
            "the round without B's is left out"
        );
        assert_eq!(by("errors.percent").verdict, Verdict::None);
        assert_eq!(
            names.iter().position(|n| *n == "rate_xps"),
            Some(0),
            "in FIGURES order"
        );
    }

    #[test]
    fn two_runs_judge_their_measured_phases_interval_series() {
        let rows = |rates: &[f64], hits: bool| -> Vec<Value> {
            let mut v = vec![entry("fill", 1000.0, hits)];
            v.extend(rates.iter().map(|r| entry("top", *r, hits)));
            v
        };
        let ra = rows(
            &[
                100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8, 100.1, 99.9,
            ],
            true,
        );
        let rb = rows(
            &[
                110.0, 111.0, 109.0, 110.5, 109.5, 110.0, 110.2, 109.8, 110.1, 109.9,
            ],
            false,
        );
        let (sa, sb) = (summary(100.0, Some(1.0)), summary(110.0, Some(1.0)));
        let a = RunSeries {
            summary: &sa,
            intervals: &ra,
        };
        let b = RunSeries {
            summary: &sb,
            intervals: &rb,
        };
        let got = judge_runs(&a, &b, 0.95);
        let rate = got.iter().find(|r| r.name == "rate_xps").unwrap();
        assert_eq!(
            (rate.a, rate.b, rate.verdict),
            (100.0, 110.0, Verdict::Higher),
            "the fill interval is not in it"
        );
        assert!(got
            .iter()
            .all(|r| !r.name.starts_with("resources.") && r.name != "rt_ms.hit.mean"));
        let none = json!({"measured_phase": null});
        let c = RunSeries {
            summary: &none,
            intervals: &ra,
        };
        assert!(judge_runs(&a, &c, 0.95).is_empty());
    }
}
