//! Whether B's figure differs from A's: a confidence interval for
//! B − A and the verdict it gives, from paired rounds ([`rounds`]) or,
//! for two single runs, from batch means of their interval series
//! ([`batches`]).

use crate::tdist::t_quantile;
use serde::{Deserialize, Serialize};

/// B against A, from the interval for B − A: `none` when it holds 0.
/// Persisted as `"higher"`, `"lower"`, `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Higher,
    Lower,
    None,
}

impl Verdict {
    /// The verdict of the interval from `low` to `high` for B − A.
    pub fn of(low: f64, high: f64) -> Verdict {
        if low > 0.0 {
            Verdict::Higher
        } else if high < 0.0 {
            Verdict::Lower
        } else {
            Verdict::None
        }
    }

    /// As a table says it.
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::Higher => "B higher",
            Verdict::Lower => "B lower",
            Verdict::None => "no difference detected",
        }
    }
}

/// One figure of an A/B comparison. In JSON a value that is not finite is
/// written `null`: `ci_low`/`ci_high` null are unbounded (too few rounds
/// for an interval), `a`/`b`/`diff`/`df` null are unknown (no values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureResult {
    pub name: String,
    /// A's mean, B's mean.
    #[serde(serialize_with = "json_f64::ser", deserialize_with = "json_f64::nan")]
    pub a: f64,
    #[serde(serialize_with = "json_f64::ser", deserialize_with = "json_f64::nan")]
    pub b: f64,
    /// B − A.
    #[serde(serialize_with = "json_f64::ser", deserialize_with = "json_f64::nan")]
    pub diff: f64,
    #[serde(
        serialize_with = "json_f64::ser",
        deserialize_with = "json_f64::neg_inf"
    )]
    pub ci_low: f64,
    #[serde(
        serialize_with = "json_f64::ser",
        deserialize_with = "json_f64::pos_inf"
    )]
    pub ci_high: f64,
    pub verdict: Verdict,
    /// What the interval rests on: rounds with both values ([`rounds`]),
    /// or batch means of both runs together ([`batches`]).
    pub n: usize,
    /// Degrees of freedom of the t quantile used.
    #[serde(
        default = "nan",
        serialize_with = "json_f64::ser",
        deserialize_with = "json_f64::nan"
    )]
    pub df: f64,
}

fn nan() -> f64 {
    f64::NAN
}

/// Non-finite f64 as JSON `null` (serde_json would write `null` and then
/// refuse to read it back), read back as the field's meaning of `null`.
mod json_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn ser<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    fn or<'de, D: Deserializer<'de>>(d: D, null: f64) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(null))
    }

    pub fn nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        or(d, f64::NAN)
    }

    pub fn neg_inf<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        or(d, f64::NEG_INFINITY)
    }

    pub fn pos_inf<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        or(d, f64::INFINITY)
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample variance (n − 1 in the denominator).
fn variance(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - 1.0)
}

/// A confidence level is a probability strictly between 0 and 1.
fn check_level(level: f64) {
    assert!(
        level > 0.0 && level < 1.0,
        "confidence level {level} is not in (0, 1)"
    );
}

/// A difference and its standard error, before the interval.
struct Estimate {
    a: f64,
    b: f64,
    diff: f64,
    se: f64,
    df: f64,
    n: usize,
}

impl Estimate {
    /// The interval `diff` ± t·`se` with `df` degrees of freedom at
    /// confidence `level`; with no spread at all (`se` 0) it is the point
    /// itself.
    fn result(self, name: &str, level: f64) -> FigureResult {
        // Two-sided: 0.95 takes t at 0.975.
        let t = || t_quantile(1.0 - (1.0 - level) / 2.0, self.df);
        let half = if self.se == 0.0 { 0.0 } else { t() * self.se };
        let (ci_low, ci_high) = (self.diff - half, self.diff + half);
        FigureResult {
            name: name.to_string(),
            a: self.a,
            b: self.b,
            diff: self.diff,
            ci_low,
            ci_high,
            verdict: Verdict::of(ci_low, ci_high),
            n: self.n,
            df: self.df,
        }
    }
}

/// No interval: fewer observations than an interval needs.
fn unbounded(name: &str, a: f64, b: f64, n: usize) -> FigureResult {
    FigureResult {
        name: name.to_string(),
        a,
        b,
        diff: b - a,
        ci_low: f64::NEG_INFINITY,
        ci_high: f64::INFINITY,
        verdict: Verdict::None,
        n,
        df: f64::NAN,
    }
}

/// Rounds of an A/B experiment: `a[i]` and `b[i]` are round i's values of
/// one figure (a round whose value is missing on either side, NaN, is
/// left out). `diff` is mean(b) − mean(a); the interval is Student's t on
/// the paired differences `b[i] − a[i]` with n − 1 degrees of freedom at
/// confidence `level` (0.95). Paired because a round's A and B run back
/// to back: whatever moves the machine between rounds (drift, a
/// neighbour's load) is in both and cancels in their difference. Fewer
/// than 2 rounds: the interval is unbounded and the verdict `none`.
pub fn rounds(name: &str, a: &[f64], b: &[f64], level: f64) -> FigureResult {
    check_level(level);
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x, *y))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let n = pairs.len();
    let ma = mean(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let mb = mean(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    if n < 2 {
        return unbounded(name, ma, mb, n);
    }
    // The mean of the differences (= mb − ma) so that equal pairs give
    // exactly 0, not a rounding residue that would pass for a difference.
    let d: Vec<f64> = pairs.iter().map(|(x, y)| y - x).collect();
    let se = (variance(&d) / n as f64).sqrt();
    Estimate {
        a: ma,
        b: mb,
        diff: mean(&d),
        se,
        df: (n - 1) as f64,
        n,
    }
    .result(name, level)
}

/// How many batches a series of `n` intervals is cut into: at least five
/// intervals per batch (so that neighbouring batch means are nearly
/// uncorrelated), at most 10 batches, at least 2.
pub fn batch_count(n: usize) -> usize {
    (n / 5).clamp(2, 10)
}

/// The means of `v` cut into [`batch_count`] consecutive batches whose
/// lengths differ by at most one.
pub fn batch_means(v: &[f64]) -> Vec<f64> {
    let n = v.len();
    let k = batch_count(n);
    (0..k)
        .map(|j| mean(&v[j * n / k..(j + 1) * n / k]))
        .collect()
}

/// Two single runs (`cacheoff compare`): each run's interval series of the
/// figure within its measured phase (see [`crate::series`]; non-finite
/// values are left out). `a` and `b` are the series' means (each interval
/// counts once) and `diff` their difference. Interval values are
/// correlated in time, so each series is cut into [`batch_means`] and the
/// interval is Welch's t on the batch means, with Welch–Satterthwaite
/// degrees of freedom. A run with fewer than 2 intervals: unbounded.
pub fn batches(name: &str, a_series: &[f64], b_series: &[f64], level: f64) -> FigureResult {
    check_level(level);
    let finite = |s: &[f64]| {
        s.iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect::<Vec<_>>()
    };
    let (sa, sb) = (finite(a_series), finite(b_series));
    let (ma, mb) = (mean(&sa), mean(&sb));
    if sa.len() < 2 || sb.len() < 2 {
        return unbounded(name, ma, mb, 0);
    }
    let (ba, bb) = (batch_means(&sa), batch_means(&sb));
    let (ka, kb) = (ba.len() as f64, bb.len() as f64);
    // Variances of each run's mean.
    let (va, vb) = (variance(&ba) / ka, variance(&bb) / kb);
    let se = (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (ka - 1.0) + vb * vb / (kb - 1.0));
    let df = if df.is_finite() { df } else { ka + kb - 2.0 };
    Estimate {
        a: ma,
        b: mb,
        diff: mb - ma,
        se,
        df,
        n: ba.len() + bb.len(),
    }
    .result(name, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_give_the_paired_t_interval() {
        // Differences 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.302653.
        let r = rounds("x", &[10.0, 20.0, 30.0], &[11.0, 22.0, 33.0], 0.95);
        assert_eq!((r.a, r.b, r.diff, r.n, r.df), (20.0, 22.0, 2.0, 3, 2.0));
        let half = 4.302653 / 3f64.sqrt();
        assert!((r.ci_low - (2.0 - half)).abs() < 1e-5, "{r:?}");
        assert!((r.ci_high - (2.0 + half)).abs() < 1e-5, "{r:?}");
        assert_eq!(r.verdict, Verdict::None, "the interval holds 0");
        // Rounds alike in their differences though far apart in level:
        // pairing removes the spread between rounds.
        let r = rounds(
            "x",
            &[10.0, 20.0, 30.0, 40.0],
            &[11.0, 21.2, 30.9, 41.1],
            0.95,
        );
        assert_eq!(r.verdict, Verdict::Higher, "{r:?}");
        let r = rounds(
            "x",
            &[11.0, 21.2, 30.9, 41.1],
            &[10.0, 20.0, 30.0, 40.0],
            0.95,
        );
        assert_eq!(r.verdict, Verdict::Lower, "{r:?}");
        // The same figures unpaired would not tell.
        let w = batches(
            "x",
            &[10.0, 20.0, 30.0, 40.0],
            &[11.0, 21.2, 30.9, 41.1],
            0.95,
        );
        assert_eq!(w.verdict, Verdict::None, "{w:?}");
    }

    #[test]
    fn equal_rounds_differ_by_exactly_nothing() {
        let v = [0.1, 0.7, 0.30000000000000004];
        let r = rounds("errors.percent", &v, &v, 0.95);
        assert_eq!(
            (r.diff, r.ci_low, r.ci_high, r.verdict),
            (0.0, 0.0, 0.0, Verdict::None)
        );
        // A constant difference without spread is a difference.
        let r = rounds("x", &[1.0, 2.0], &[1.5, 2.5], 0.95);
        assert_eq!(
            (r.ci_low, r.ci_high, r.verdict),
            (0.5, 0.5, Verdict::Higher)
        );
    }

    #[test]
    fn missing_values_and_too_few_rounds() {
        let r = rounds("x", &[1.0, f64::NAN, 3.0], &[2.0, 5.0, 4.0, 9.0], 0.95);
        assert_eq!(
            r.n, 2,
            "the round without A and the unpaired B are left out"
        );
        assert_eq!((r.a, r.b), (2.0, 3.0));
        let one = rounds("x", &[1.0], &[100.0], 0.95);
        assert_eq!(one.diff, 99.0);
        assert_eq!(
            (one.ci_low, one.ci_high),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
        assert_eq!(one.verdict, Verdict::None);
        let none = rounds("x", &[], &[], 0.95);
        assert!(none.a.is_nan() && none.diff.is_nan() && none.n == 0);
        assert_eq!(
            batches("x", &[1.0], &[1.0, 2.0, 3.0], 0.95).verdict,
            Verdict::None
        );
    }

    #[test]
    #[should_panic(expected = "confidence level 95 is not in (0, 1)")]
    fn a_level_is_a_probability() {
        rounds("x", &[1.0], &[2.0], 95.0);
    }

    #[test]
    fn a_wider_level_gives_a_wider_interval() {
        let a = [5.0, 6.0, 5.5, 6.2, 5.1];
        let b = [5.9, 6.4, 6.6, 6.5, 5.8];
        let r90 = rounds("x", &a, &b, 0.90);
        let r99 = rounds("x", &a, &b, 0.99);
        assert!(r99.ci_low < r90.ci_low && r99.ci_high > r90.ci_high);
        assert_eq!(r90.diff, r99.diff);
    }

    #[test]
    fn batches_cut_series_evenly_and_use_welch_df() {
        assert_eq!(
            [1, 5, 14, 15, 30, 34, 50, 300].map(batch_count),
            [2, 2, 2, 3, 6, 6, 10, 10]
        );
        assert_eq!(batch_means(&[1.0, 2.0, 3.0, 4.0, 5.0]), vec![1.5, 4.0]);
        let s: Vec<f64> = (0..52).map(f64::from).collect();
        let m = batch_means(&s);
        assert_eq!(m.len(), 10);
        assert_eq!(m[0], 2.0, "the first batch holds 0..5");
        assert_eq!(m[9], 48.5, "the last holds 46..52");
        // Batch means [1, 3] and [2, 6, 10] (two and three batches).
        let a = [0.0, 1.0, 2.0, 3.0, 4.0, 2.0];
        let b: Vec<f64> = (0..15).map(|i| f64::from(i - i / 5)).collect();
        let r = batches("x", &a, &b, 0.95);
        let (va, vb) = (2.0 / 2.0, 16.0 / 3.0);
        let df = (va + vb) * (va + vb) / (va * va / 1.0 + vb * vb / 2.0);
        assert!((r.df - df).abs() < 1e-12, "{} {df}", r.df);
        assert_eq!((r.a, r.b, r.n), (2.0, 6.0, 5));
        let half = t_quantile(0.975, df) * (va + vb).sqrt();
        assert!((r.ci_high - r.diff - half).abs() < 1e-12);
        // Identical flat series: no spread, no difference.
        let flat = [3.0; 12];
        let r = batches("x", &flat, &flat, 0.95);
        assert_eq!((r.ci_low, r.ci_high, r.verdict), (0.0, 0.0, Verdict::None));
    }

    #[test]
    fn results_round_trip_through_json_with_unbounded_intervals() {
        let r = rounds("rt_ms.hit.mean", &[1.0, 2.0, 3.0], &[2.0, 2.5, 4.5], 0.95);
        let back: FigureResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let one = rounds("x", &[1.0], &[2.0], 0.95);
        let v = serde_json::to_value(&one).unwrap();
        assert!(v["ci_low"].is_null() && v["ci_high"].is_null() && v["df"].is_null());
        assert_eq!(v["verdict"], "none");
        let back: FigureResult = serde_json::from_value(v).unwrap();
        assert_eq!(
            (back.ci_low, back.ci_high),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
        assert!(back.df.is_nan());
        let names: Vec<String> = [Verdict::Higher, Verdict::Lower, Verdict::None]
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect();
        assert_eq!(names, ["\"higher\"", "\"lower\"", "\"none\""]);
    }
}
