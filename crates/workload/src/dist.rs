//! Random distributions with Web Polygraph's definitions.
//!
//! A [`Dist`] knows which [`Quantity`] it measures so it prints and parses
//! with the right units (`exp(13KB)`, `norm(2.5s,1s)`, `zipf(64)`).

use crate::files::Files;
use cacheoff_base::rng::{unit_f64, Rng};
use cacheoff_base::{Bytes, Dur};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// What a distribution's values measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Bytes.
    Size,
    /// Seconds.
    Time,
    /// A plain count.
    Count,
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Const(f64),
    Unif(f64, f64),
    Exp(f64),
    /// Polygraph's normal: mean + sd·(ΣU₁..U₁₂ − 6), bounded to ±6 sd, and
    /// never negative.
    Norm(f64, f64),
    /// Lognormal with the given real mean and standard deviation.
    Logn(f64, f64),
    /// floor((N+1)^U), an integer in [1, N].
    Zipf(u64),
    /// Weighted bins, each a value or a range drawn uniformly.
    Table(Arc<Table>),
}

/// A tabulated distribution (`table(...)`): bins with relative weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    bins: Vec<Bin>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Bin {
    lo: f64,
    hi: f64,
    weight: f64,
    /// Sum of the weights up to and including this bin.
    cumulative: f64,
}

impl Table {
    fn total(&self) -> f64 {
        self.bins.last().map_or(0.0, |b| b.cumulative)
    }

    fn sample_with(&self, mut next_u: impl FnMut() -> f64) -> f64 {
        let at = next_u() * self.total();
        let i = self
            .bins
            .partition_point(|b| b.cumulative <= at)
            .min(self.bins.len() - 1);
        let b = self.bins[i];
        b.lo + next_u() * (b.hi - b.lo)
    }

    fn mean(&self) -> f64 {
        let sum: f64 = self
            .bins
            .iter()
            .map(|b| b.weight * (b.lo + b.hi) / 2.0)
            .sum();
        sum / self.total()
    }
}

/// The most entries one table may have (1 Mi: 32 MiB of bins; a run's
/// manifest keeps every entry).
pub const MAX_TABLE_ENTRIES: usize = 1 << 20;

thread_local! {
    /// What `table(FILE)` may read while a workload file is being read,
    /// and the directory a relative FILE starts from (the workload
    /// file's). Without it, no table file is read.
    static TABLE_FILES: RefCell<Option<(Files, Option<PathBuf>)>> = const { RefCell::new(None) };
}

/// Runs `f` with table files found from `dir` and read through `files`.
pub(crate) fn with_files<T>(files: Files, dir: Option<PathBuf>, f: impl FnOnce() -> T) -> T {
    let old = TABLE_FILES.with(|d| d.replace(Some((files, dir))));
    let out = f();
    TABLE_FILES.with(|d| *d.borrow_mut() = old);
    out
}

/// A distribution of sizes, times or counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Dist {
    quantity: Quantity,
    shape: Shape,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid distribution {input:?}: {why} (examples: const(13KB), exp(13KB), unif(1s,5s), norm(2.5s,1s), logn(25KB,10KB), zipf(64), table(1KB 60, 4KB..64KB 40), table(sizes.txt))")]
pub struct DistError {
    input: String,
    why: String,
}

impl Dist {
    pub fn constant(quantity: Quantity, v: f64) -> Dist {
        Dist {
            quantity,
            shape: Shape::Const(v),
        }
    }
    pub fn exp(quantity: Quantity, mean: f64) -> Dist {
        Dist {
            quantity,
            shape: Shape::Exp(mean),
        }
    }
    pub fn unif(quantity: Quantity, lo: f64, hi: f64) -> Dist {
        Dist {
            quantity,
            shape: Shape::Unif(lo, hi),
        }
    }
    pub fn norm(quantity: Quantity, mean: f64, sd: f64) -> Dist {
        Dist {
            quantity,
            shape: Shape::Norm(mean, sd),
        }
    }
    pub fn logn(quantity: Quantity, mean: f64, sd: f64) -> Dist {
        Dist {
            quantity,
            shape: Shape::Logn(mean, sd),
        }
    }
    pub fn zipf(n: u64) -> Dist {
        Dist {
            quantity: Quantity::Count,
            shape: Shape::Zipf(n.max(1)),
        }
    }

    pub fn quantity(&self) -> Quantity {
        self.quantity
    }

    /// The distribution's mean.
    pub fn mean(&self) -> f64 {
        match self.shape {
            Shape::Const(v) | Shape::Exp(v) | Shape::Norm(v, _) | Shape::Logn(v, _) => v,
            Shape::Table(ref t) => t.mean(),
            Shape::Unif(a, b) => (a + b) / 2.0,
            Shape::Zipf(n) => {
                let ln = ((n + 1) as f64).ln();
                (1..=n)
                    .map(|k| k as f64 * ((k as f64 + 1.0) / k as f64).ln() / ln)
                    .sum()
            }
        }
    }

    /// Every value the distribution is written with (its parameters, a
    /// table's bounds), for range checks.
    pub fn values(&self) -> Vec<f64> {
        match self.shape {
            Shape::Const(v) | Shape::Exp(v) => vec![v],
            Shape::Unif(a, b) | Shape::Norm(a, b) | Shape::Logn(a, b) => vec![a, b],
            Shape::Zipf(n) => vec![n as f64],
            Shape::Table(ref t) => t.bins.iter().flat_map(|b| [b.lo, b.hi]).collect(),
        }
    }

    /// True when every sample is zero.
    pub fn is_zero(&self) -> bool {
        matches!(self.shape, Shape::Const(v) if v == 0.0)
    }

    /// Draws one value using `next_u` as a source of uniforms in [0, 1).
    pub fn sample_with(&self, mut next_u: impl FnMut() -> f64) -> f64 {
        match self.shape {
            Shape::Const(v) => v,
            Shape::Unif(a, b) => a + next_u() * (b - a),
            Shape::Exp(m) => -m * (1.0 - next_u()).ln(),
            Shape::Norm(m, s) => {
                let sum: f64 = (0..12).map(|_| next_u()).sum();
                (m + s * (sum - 6.0)).max(0.0)
            }
            Shape::Logn(m, s) => {
                // Underlying normal's parameters from the real mean and sd.
                let v = (s * s + m * m).ln();
                let mu = 2.0 * m.ln() - v / 2.0;
                let sigma = (v - 2.0 * m.ln()).max(0.0).sqrt();
                // Box-Muller; 1 - u keeps the logarithm finite.
                let (u1, u2) = (1.0 - next_u(), next_u());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mu + sigma * z).exp()
            }
            Shape::Zipf(n) => ((n + 1) as f64).powf(next_u()).floor().clamp(1.0, n as f64),
            Shape::Table(ref t) => t.sample_with(next_u),
        }
    }

    /// Draws one value from a random stream.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.sample_with(|| rng.gen::<f64>())
    }

    /// Draws the value belonging to a hash (e.g. of an object id): the same
    /// hash always gives the same value.
    pub fn sample_hashed(&self, hash: u64) -> f64 {
        let mut h = hash;
        self.sample_with(|| {
            let u = unit_f64(h);
            h = cacheoff_base::rng::mix64(h);
            u
        })
    }

    /// Parses `const(x)`, `unif(a,b)`, `exp(m)`, `norm(m,s)`, `logn(m,s)`,
    /// `zipf(n)`, `table(...)` or a bare value (a constant), with values in
    /// the quantity's units.
    ///
    /// A table is inline, `table(1KB 60, 4KB..64KB 40)` (a value or a range
    /// `lo..hi` drawn uniformly, then a relative weight), or a file,
    /// `table(sizes.txt)`, with one such entry per line (`#` starts a
    /// comment), relative to the workload file's directory.
    pub fn parse(quantity: Quantity, s: &str) -> Result<Dist, DistError> {
        let err = |why: String| DistError {
            input: s.into(),
            why,
        };
        let t = s.trim();
        let (name, args) = match t.find('(') {
            Some(open) => {
                if !t.ends_with(')') {
                    return Err(err("missing closing ')'".into()));
                }
                (&t[..open], &t[open + 1..t.len() - 1])
            }
            None => ("const", t),
        };
        let value = |a: &str| parse_value(quantity, a).map_err(err);
        if name.trim() == "table" {
            let table = parse_table(quantity, args).map_err(err)?;
            return Ok(Dist {
                quantity,
                shape: Shape::Table(Arc::new(table)),
            });
        }
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let want = |n: usize| -> Result<(), DistError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(err(format!(
                    "{name} takes {n} argument(s), got {}",
                    args.len()
                )))
            }
        };
        let shape = match name.trim() {
            "const" => {
                want(1)?;
                Shape::Const(value(args[0])?)
            }
            "exp" => {
                want(1)?;
                Shape::Exp(value(args[0])?)
            }
            "unif" => {
                want(2)?;
                let (a, b) = (value(args[0])?, value(args[1])?);
                if b < a {
                    return Err(err("unif(a,b) needs a <= b".into()));
                }
                Shape::Unif(a, b)
            }
            "norm" => {
                want(2)?;
                Shape::Norm(value(args[0])?, value(args[1])?)
            }
            "logn" => {
                want(2)?;
                let (m, sd) = (value(args[0])?, value(args[1])?);
                if m <= 0.0 {
                    return Err(err("logn(mean,sd) needs a mean above zero".into()));
                }
                Shape::Logn(m, sd)
            }
            "zipf" => {
                want(1)?;
                let n: u64 = args[0]
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| err("zipf(N) needs a whole number N >= 1".into()))?;
                return Ok(Dist::zipf(n));
            }
            other => {
                return Err(err(format!(
                "unknown distribution {other:?} (known: const, unif, exp, norm, logn, zipf, table)"
            )))
            }
        };
        Ok(Dist { quantity, shape })
    }

    fn fmt_value(&self, v: f64) -> String {
        match self.quantity {
            Quantity::Size => Bytes(v.round() as u64).to_string(),
            Quantity::Time => Dur::secs(v).to_string(),
            Quantity::Count => {
                let s = format!("{v:.6}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |x| self.fmt_value(x);
        match self.shape {
            Shape::Const(a) => write!(f, "const({})", v(a)),
            Shape::Unif(a, b) => write!(f, "unif({},{})", v(a), v(b)),
            Shape::Exp(a) => write!(f, "exp({})", v(a)),
            Shape::Norm(a, b) => write!(f, "norm({},{})", v(a), v(b)),
            Shape::Logn(a, b) => write!(f, "logn({},{})", v(a), v(b)),
            Shape::Zipf(n) => write!(f, "zipf({n})"),
            Shape::Table(ref t) => {
                // Always inline, so a saved workload stands on its own.
                f.write_str("table(")?;
                for (i, b) in t.bins.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let w = Dist::constant(Quantity::Count, 0.0).fmt_value(b.weight);
                    if b.lo == b.hi {
                        write!(f, "{sep}{} {w}", v(b.lo))?;
                    } else {
                        write!(f, "{sep}{}..{} {w}", v(b.lo), v(b.hi))?;
                    }
                }
                f.write_str(")")
            }
        }
    }
}

fn parse_value(quantity: Quantity, a: &str) -> Result<f64, String> {
    match quantity {
        Quantity::Size => a
            .parse::<Bytes>()
            .map(|b| b.0 as f64)
            .map_err(|e| e.to_string()),
        Quantity::Time => a
            .parse::<Dur>()
            .map(|d| d.as_secs_f64())
            .map_err(|e| e.to_string()),
        Quantity::Count => a
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{a:?} is not a non-negative number")),
    }
}

/// The inside of `table(...)`: inline entries, or the name of a file of them.
fn parse_table(quantity: Quantity, args: &str) -> Result<Table, String> {
    let args = args.trim();
    let is_file = !args.is_empty() && !args.contains(char::is_whitespace);
    let (origin, text, quote) = if is_file {
        let named = TABLE_FILES.with(|d| match &*d.borrow() {
            Some((files, dir)) => files.find(dir.as_deref(), args).map_err(|e| e.to_string()),
            None => Err(format!("table file {args:?}: no file may be read here")),
        })?;
        (Some(named.path), named.text, named.quotable)
    } else {
        (None, args.replace(',', "\n"), true)
    };
    let mut bins = Vec::new();
    let mut cumulative = 0.0;
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        // What is wrong, then the detail that quotes the line: left out
        // for a file whose text may not be quoted.
        let at = |what: &str, detail: String| {
            let why = if quote { detail } else { what.to_string() };
            match &origin {
                Some(p) => format!("{}:{}: {why}", p.display(), n + 1),
                None => format!("entry {}: {why}", n + 1),
            }
        };
        if bins.len() == MAX_TABLE_ENTRIES {
            return Err(at(
                "too many entries",
                format!("more than {MAX_TABLE_ENTRIES} entries"),
            ));
        }
        let bad_value = "a value that is not one";
        let mut words = line.split_whitespace();
        let (Some(what), Some(weight), None) = (words.next(), words.next(), words.next()) else {
            return Err(at(
                "not a value or range and a weight",
                format!("expected a value or range and a weight, like \"4KB 10\" or \"1KB..8KB 10\", not {line:?}"),
            ));
        };
        let (lo, hi) = match what.split_once("..") {
            Some((a, b)) => (
                parse_value(quantity, a).map_err(|e| at(bad_value, e))?,
                parse_value(quantity, b).map_err(|e| at(bad_value, e))?,
            ),
            None => {
                let v = parse_value(quantity, what).map_err(|e| at(bad_value, e))?;
                (v, v)
            }
        };
        if hi < lo {
            return Err(at(
                "a range that ends below its start",
                format!("range {what} ends below its start"),
            ));
        }
        let weight: f64 = weight
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| {
                at(
                    "a weight that is not a non-negative number",
                    format!("weight {weight:?} is not a non-negative number"),
                )
            })?;
        cumulative += weight;
        if !cumulative.is_finite() {
            return Err(at(
                "weights that add up past any number",
                "weights that add up past any number".into(),
            ));
        }
        bins.push(Bin {
            lo,
            hi,
            weight,
            cumulative,
        });
    }
    if cumulative <= 0.0 {
        return Err(match origin {
            Some(p) => format!("table file {} has no entry with a weight", p.display()),
            None => "a table needs at least one entry with a weight".into(),
        });
    }
    Ok(Table { bins })
}

impl Serialize for Dist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Deserializes a distribution of the quantity `Q` from its text form.
pub(crate) fn deserialize_dist<'de, D: Deserializer<'de>>(
    d: D,
    q: Quantity,
) -> Result<Dist, D::Error> {
    let s = String::deserialize(d)?;
    Dist::parse(q, &s).map_err(de::Error::custom)
}

/// For `#[serde(deserialize_with)]`: a distribution of sizes.
pub(crate) fn size_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Size)
}
/// For `#[serde(deserialize_with)]`: a distribution of times.
pub(crate) fn time_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Time)
}
/// For `#[serde(deserialize_with)]`: a distribution of counts.
pub(crate) fn count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::rng::{stream, Stream};

    #[test]
    fn parse_and_print_round_trip() {
        for (q, s) in [
            (Quantity::Size, "exp(13KB)"),
            (Quantity::Time, "norm(2.5s,1s)"),
            (Quantity::Time, "unif(1s,5s)"),
            (Quantity::Count, "zipf(64)"),
            (Quantity::Size, "logn(300KB,300KB)"),
            (Quantity::Size, "const(1KB)"),
        ] {
            assert_eq!(Dist::parse(q, s).unwrap().to_string(), s);
        }
        assert_eq!(
            Dist::parse(Quantity::Size, "1KB").unwrap(),
            Dist::constant(Quantity::Size, 1024.0)
        );
        assert!(Dist::parse(Quantity::Size, "gauss(1KB)").is_err());
        assert!(Dist::parse(Quantity::Size, "exp(1KB,2KB)").is_err());
        assert!(Dist::parse(Quantity::Count, "zipf(0)").is_err());
    }

    #[test]
    fn zipf_means_match_the_reference() {
        // workloads.md: zipf(16) mean 5.17, zipf(64) 14.85, zipf(13) 4.45.
        for (n, want) in [(16, 5.17), (64, 14.85), (13, 4.45)] {
            assert!((Dist::zipf(n).mean() - want).abs() < 0.01, "zipf({n})");
        }
    }

    /// One-sample Kolmogorov–Smirnov distance against a CDF.
    fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let c = cdf(x);
                (c - i as f64 / n).abs().max(((i + 1) as f64 / n - c).abs())
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn exp_passes_kolmogorov_smirnov() {
        let d = Dist::exp(Quantity::Size, 13.0 * 1024.0);
        let mut rng = stream(1, Stream::Robot(0));
        let xs: Vec<f64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        let m = 13.0 * 1024.0;
        let dn = ks(xs, |x| 1.0 - (-x / m).exp());
        // Critical value at alpha = 0.001 is 1.95/sqrt(n).
        assert!(dn < 1.95 / (100_000f64).sqrt(), "D = {dn}");
    }

    #[test]
    fn hashed_exp_passes_kolmogorov_smirnov() {
        let d = Dist::exp(Quantity::Size, 1000.0);
        let xs: Vec<f64> = (0..100_000u64)
            .map(|i| d.sample_hashed(cacheoff_base::rng::mix2(9, i)))
            .collect();
        let dn = ks(xs, |x| 1.0 - (-x / 1000.0).exp());
        assert!(dn < 1.95 / (100_000f64).sqrt(), "D = {dn}");
    }

    #[test]
    fn zipf_passes_chi_square() {
        let n = 16u64;
        let d = Dist::zipf(n);
        let mut rng = stream(2, Stream::Robot(0));
        let samples = 100_000;
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..samples {
            counts[d.sample(&mut rng) as usize] += 1;
        }
        let ln = ((n + 1) as f64).ln();
        let chi2: f64 = (1..=n)
            .map(|k| {
                let p = ((k as f64 + 1.0) / k as f64).ln() / ln;
                let e = p * samples as f64;
                (counts[k as usize] as f64 - e).powi(2) / e
            })
            .sum();
        // 15 degrees of freedom, alpha = 0.001: 37.7.
        assert!(chi2 < 37.7, "chi2 = {chi2}");
    }

    #[test]
    fn logn_takes_the_real_mean_and_sd_and_passes_kolmogorov_smirnov() {
        let (m, sd) = (25.0 * 1024.0, 10.0 * 1024.0);
        let d = Dist::logn(Quantity::Size, m, sd);
        let mut rng = stream(4, Stream::Robot(0));
        let xs: Vec<f64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((mean / m - 1.0).abs() < 0.01, "mean {mean}");
        assert!((var.sqrt() / sd - 1.0).abs() < 0.03, "sd {}", var.sqrt());
        // CDF of the lognormal through the underlying normal (erf by
        // Abramowitz-Stegun 7.1.26, accurate to 1.5e-7).
        let v = (sd * sd + m * m).ln();
        let mu = 2.0 * m.ln() - v / 2.0;
        let sigma = (v - 2.0 * m.ln()).sqrt();
        let erf = |x: f64| {
            let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
            let y = 1.0
                - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t
                    - 0.284_496_736)
                    * t
                    + 0.254_829_592)
                    * t
                    * (-x * x).exp();
            if x >= 0.0 {
                y
            } else {
                -y
            }
        };
        let cdf = |x: f64| 0.5 * (1.0 + erf((x.ln() - mu) / (sigma * std::f64::consts::SQRT_2)));
        let dn = ks(xs, cdf);
        assert!(dn < 1.95 / (100_000f64).sqrt(), "D = {dn}");
    }

    #[test]
    fn norm_has_polygraph_moments() {
        let d = Dist::norm(Quantity::Time, 2.5, 1.0);
        let mut rng = stream(3, Stream::Robot(0));
        let xs: Vec<f64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((mean - 2.5).abs() < 0.02, "mean {mean}");
        assert!((var.sqrt() - 1.0).abs() < 0.02, "sd {}", var.sqrt());
    }

    #[test]
    fn inline_tables_parse_print_and_reject_bad_entries() {
        let d = Dist::parse(Quantity::Size, "table(1KB 60, 4KB..64KB 40)").unwrap();
        assert_eq!(d.to_string(), "table(1KB 60, 4KB..64KB 40)");
        assert_eq!(Dist::parse(Quantity::Size, &d.to_string()).unwrap(), d);
        let want = 0.6 * 1024.0 + 0.4 * 34.0 * 1024.0;
        assert!((d.mean() - want).abs() < 1e-6, "{}", d.mean());
        for bad in [
            "table()",
            "table(1KB)",
            "table(1KB ten)",
            "table(8KB..1KB 1)",
            "table(1KB 0)",
            "table(1KB 1 2)",
        ] {
            assert!(Dist::parse(Quantity::Size, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn table_files_resolve_against_the_workload_directory_and_errors_name_the_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::write(
            dir.join("think.txt"),
            "# think times\n0s 50   # half answer at once\n\n1s..3s 50\n",
        )
        .unwrap();
        std::fs::write(dir.join("bad.txt"), "1s 1\n2x 1\n").unwrap();
        let parse = |include: &[PathBuf], s: &str| {
            let files = Files::new(&dir.join("w.toml"), include).unwrap();
            with_files(files, Some(dir.clone()), || Dist::parse(Quantity::Time, s))
        };
        let d = parse(&[], "table(think.txt)").unwrap();
        assert_eq!(d.to_string(), "table(0s 50, 1s..3s 50)");
        let e = parse(&[], "table(bad.txt)").unwrap_err().to_string();
        assert!(e.contains("bad.txt:2: invalid duration \"2x\""), "{e}");
        let e = parse(&[], "table(/nonexistent/t.txt)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside the workload's directory"), "{e}");
        // No file at all without a workload file's directory.
        let e = Dist::parse(Quantity::Time, "table(think.txt)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no file may be read here"), "{e}");
    }

    #[test]
    fn table_files_from_include_places_are_not_quoted() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, out) = (tmp.path().join("w"), tmp.path().join("out"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("t.txt"), "1s 1\nSECRET-LINE\n").unwrap();
        std::fs::write(out.join("u.txt"), "1s SECRET\n").unwrap();
        for name in ["t.txt", "u.txt"] {
            let files = Files::new(&home.join("w.toml"), std::slice::from_ref(&out)).unwrap();
            let e = with_files(files, Some(home.clone()), || {
                Dist::parse(Quantity::Time, &format!("table({name})"))
            })
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(&format!("{name}:")) && !e.contains("SECRET"),
                "{e}"
            );
        }
    }

    #[test]
    fn tables_have_a_bounded_number_of_entries() {
        let many = "1 1,".repeat(MAX_TABLE_ENTRIES + 1);
        let e = Dist::parse(Quantity::Count, &format!("table({many})"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 1048576 entries"), "{e}");
    }

    #[test]
    fn table_values_pass_chi_square() {
        let d = Dist::parse(Quantity::Count, "table(1 10, 2 20, 5 30, 9 40)").unwrap();
        let mut rng = stream(5, Stream::Robot(0));
        let n = 100_000;
        let mut counts = [0u64; 10];
        for _ in 0..n {
            counts[d.sample(&mut rng) as usize] += 1;
        }
        let chi2: f64 = [(1, 0.1), (2, 0.2), (5, 0.3), (9, 0.4)]
            .iter()
            .map(|&(k, p)| {
                let e = p * n as f64;
                (counts[k] as f64 - e).powi(2) / e
            })
            .sum();
        // 3 degrees of freedom, alpha = 0.001: 16.27.
        assert!(chi2 < 16.27, "chi2 = {chi2}");
        assert_eq!(counts.iter().sum::<u64>(), n);
    }

    #[test]
    fn table_ranges_pass_kolmogorov_smirnov() {
        // Piecewise uniform: 25% in [0,1), 75% in [1,4).
        let d = Dist::parse(Quantity::Count, "table(0..1 1, 1..4 3)").unwrap();
        let xs: Vec<f64> = (0..100_000u64)
            .map(|i| d.sample_hashed(cacheoff_base::rng::mix2(11, i)))
            .collect();
        let cdf = |x: f64| {
            if x < 1.0 {
                0.25 * x
            } else {
                (0.25 + 0.75 * (x - 1.0) / 3.0).min(1.0)
            }
        };
        let dn = ks(xs, cdf);
        assert!(dn < 1.95 / (100_000f64).sqrt(), "D = {dn}");
    }
}
