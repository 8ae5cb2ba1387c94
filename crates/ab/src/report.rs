//! An A/B experiment's record: the order its runs go in ([`order`]),
//! which run directories each round wrote ([`RoundRuns`]), the verdicts
//! ([`AbReport`], written by `cacheoff ab` as JSON) and their table.

use crate::figures::figure;
use crate::interval::FigureResult;
use serde::{Deserialize, Serialize};

/// One of the two contenders. Persisted as `"a"`, `"b"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

/// The runs of `rounds` rounds, each round's two in the order they run:
/// round i is A then B when i % 4 is 0 or 3, else B then A (AB BA BA AB,
/// again and again). B's run is as often second as first over every two
/// rounds, so a drift linear in time adds as much to A as to B over an
/// even number of rounds; over a multiple of 4 a quadratic drift cancels
/// too (the ±1 signs of the rounds, + − − +, are balanced and so is their
/// sum weighted by the round number).
pub fn order(rounds: usize) -> Vec<[Side; 2]> {
    (0..rounds)
        .map(|i| match i % 4 {
            0 | 3 => [Side::A, Side::B],
            _ => [Side::B, Side::A],
        })
        .collect()
}

/// What one round ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRuns {
    /// From 0.
    pub round: usize,
    /// Which side ran first.
    pub first: Side,
    /// The run directories of A's and B's runs.
    pub a_dir: String,
    pub b_dir: String,
}

/// [`AbReport::method`] of rounds judged by [`crate::rounds`].
pub const METHOD_PAIRED: &str = "paired-t";
/// [`AbReport::method`] of two runs judged by [`crate::batches`].
pub const METHOD_BATCHES: &str = "batch-means-welch";

/// An A/B experiment's result (`cacheoff ab`'s `ab.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbReport {
    pub workload: String,
    /// What A and B are (an address or a product name).
    pub a: String,
    pub b: String,
    pub rounds: usize,
    /// Length of each run's plateau, in seconds.
    pub plateau_s: f64,
    /// [`METHOD_PAIRED`] or [`METHOD_BATCHES`].
    pub method: String,
    /// Confidence level of the intervals (0.95).
    pub level: f64,
    pub runs: Vec<RoundRuns>,
    pub figures: Vec<FigureResult>,
}

/// Decimals for a row whose largest magnitude is `m`: about four
/// significant digits, none below 1 for large figures.
fn decimals(m: f64) -> usize {
    if !(m.is_finite() && m > 0.0) {
        return 3;
    }
    (3 - m.log10().floor() as i64).clamp(0, 6) as usize
}

/// Decimals that show two significant digits of `f`'s interval
/// half-width, so that a narrow interval is not printed as a point.
fn half_decimals(f: &FigureResult) -> usize {
    let half = (f.ci_high - f.ci_low) / 2.0;
    if !(half.is_finite() && half > 0.0) {
        return 0;
    }
    (1 - half.log10().floor() as i64).clamp(0, 6) as usize
}

fn num(v: f64, dec: usize, sign: bool) -> String {
    match v {
        v if v.is_nan() => "-".to_string(),
        v if v.is_infinite() => (if v > 0.0 { "inf" } else { "-inf" }).to_string(),
        v if sign => format!("{v:+.dec$}"),
        v => format!("{v:.dec$}"),
    }
}

/// The verdict as the table says it, with whether B's side of it is the
/// better one when the figure has a better side.
fn verdict_text(r: &FigureResult) -> String {
    use crate::interval::Verdict;
    let better = figure(&r.name).map(|f| f.higher_is_better);
    match (r.verdict, better) {
        (Verdict::None, _) | (_, None) => r.verdict.describe().to_string(),
        (v, Some(hib)) => {
            let good = (v == Verdict::Higher) == hib;
            format!(
                "{} ({})",
                v.describe(),
                if good { "better" } else { "worse" }
            )
        }
    }
}

/// A plain-text table of the verdicts, one row per figure: figure | A |
/// B | B−A | interval | verdict, under a heading saying what was
/// compared and how.
pub fn report_table(r: &AbReport) -> String {
    let pct = format!("{}% CI", (r.level * 100.0).round());
    let mut rows = vec![[
        "figure".to_string(),
        "A".to_string(),
        "B".to_string(),
        "B−A".to_string(),
        pct.clone(),
        "verdict".to_string(),
    ]];
    for f in &r.figures {
        let dec = decimals(f.a.abs().max(f.b.abs())).max(half_decimals(f));
        let ci = if f.ci_low.is_finite() && f.ci_high.is_finite() {
            format!(
                "[{}, {}]",
                num(f.ci_low, dec, true),
                num(f.ci_high, dec, true)
            )
        } else {
            "n/a".to_string()
        };
        rows.push([
            figure(&f.name).map_or(f.name.clone(), |x| x.label.to_string()),
            num(f.a, dec, false),
            num(f.b, dec, false),
            num(f.diff, dec, true),
            ci,
            verdict_text(f),
        ]);
    }
    let width = |c: usize| {
        rows.iter()
            .map(|row| row[c].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..6).map(width).collect();
    let how = if r.method == METHOD_PAIRED {
        format!(
            "{} rounds in ABBA order, plateau {} s; paired t on per-round differences",
            r.rounds, r.plateau_s
        )
    } else {
        format!(
            "one run each, plateau {} s; Welch t on batch means of intervals",
            r.plateau_s
        )
    };
    let mut out = format!(
        "A/B on workload {}: A = {}, B = {}\n{how}\n\n",
        r.workload, r.a, r.b
    );
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            // Figure names and verdicts to the left, numbers to the right.
            if c == 0 || c == 5 {
                line += &format!("{cell}{}  ", " ".repeat(pad));
            } else {
                line += &format!("{}{cell}  ", " ".repeat(pad));
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out += &format!(
        "\n\"no difference detected\": the {pct} holds 0. It does not show A and B equal: \
         a difference smaller than the interval's half-width can go unseen.\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::{rounds, Verdict};

    #[test]
    fn the_order_is_abba_baab() {
        let s: String = order(8)
            .iter()
            .flatten()
            .map(|s| if *s == Side::A { 'A' } else { 'B' })
            .collect();
        assert_eq!(s, "ABBABAABABBABAAB");
        assert!(order(0).is_empty());
    }

    /// Σ over rounds of (B's time slot − A's), and the same weighted by
    /// the round number: what linear and quadratic drift leave in B − A.
    fn drift_residues(rounds: usize) -> (i64, i64) {
        order(rounds)
            .iter()
            .enumerate()
            .map(|(i, pair)| {
                let slot = |s: Side| (2 * i + pair.iter().position(|x| *x == s).unwrap()) as i64;
                let (ta, tb) = (slot(Side::A), slot(Side::B));
                (tb - ta, tb * tb - ta * ta)
            })
            .fold((0, 0), |(l, q), (dl, dq)| (l + dl, q + dq))
    }

    #[test]
    fn the_order_cancels_linear_drift_over_even_rounds_and_quadratic_over_fours() {
        for n in 0..40 {
            let (linear, quadratic) = drift_residues(n);
            assert_eq!(
                linear == 0,
                n % 2 == 0,
                "linear residue {linear} at {n} rounds"
            );
            if n % 4 == 0 {
                assert_eq!(quadratic, 0, "quadratic residue at {n} rounds");
            }
        }
        // Alternating AB BA alone cancels linear drift but not quadratic.
        assert_ne!(drift_residues(2).1, 0);
    }

    fn report() -> AbReport {
        let a = [100.0, 102.0, 98.0, 101.2];
        AbReport {
            workload: "polymix-4".into(),
            a: "squid".into(),
            b: "127.0.0.1:3128".into(),
            rounds: 4,
            plateau_s: 300.0,
            method: METHOD_PAIRED.into(),
            level: 0.95,
            runs: order(4)
                .iter()
                .enumerate()
                .map(|(i, p)| RoundRuns {
                    round: i,
                    first: p[0],
                    a_dir: format!("ab/r{i}-a"),
                    b_dir: format!("ab/r{i}-b"),
                })
                .collect(),
            figures: vec![
                rounds("rate_xps", &a, &a.map(|x| x + 5.0 + x / 100.0), 0.95),
                rounds(
                    "rt_ms.hit.mean",
                    &[1.5, 1.6, 1.4, 1.5],
                    &[1.4, 1.7, 1.5, 1.5],
                    0.95,
                ),
                rounds("errors.percent", &[0.1], &[0.2], 0.95),
                rounds(
                    "rt_ms.all.p99",
                    &[40.0, 42.0, 41.0],
                    &[30.0, 31.0, 30.5],
                    0.95,
                ),
            ],
        }
    }

    #[test]
    fn the_table_has_a_row_per_figure_with_its_verdict() {
        let r = report();
        assert_eq!(r.figures[0].verdict, Verdict::Higher);
        let t = report_table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("polymix-4") && lines[0].contains("A = squid"));
        assert!(lines[1].starts_with("4 rounds in ABBA order, plateau 300 s"));
        let header = lines[3];
        assert!(
            header.starts_with("figure")
                && header.contains("95% CI")
                && header.ends_with("verdict")
        );
        let row = |label: &str| *lines.iter().find(|l| l.starts_with(label)).unwrap();
        let tp = row("throughput (xact/s)");
        assert!(
            tp.contains("100.300") && tp.ends_with("B higher (better)"),
            "{tp}"
        );
        // A narrow interval keeps two digits of its width.
        assert!(tp.contains("[+5.97") && tp.contains(", +6.03"), "{tp}");
        assert!(row("hit response time, mean (ms)").ends_with("no difference detected"));
        let err = row("errors (% of requests)");
        assert!(err.contains("n/a") && err.contains("+0.1000"), "{err}");
        assert!(row("response time, 99th percentile (ms)").ends_with("B lower (better)"));
        // Columns line up: every row's verdict starts where the header's does.
        let at = header[..header.find("verdict").unwrap()].chars().count();
        for l in &lines[4..8] {
            let c: Vec<char> = l.chars().collect();
            assert!(c[at] != ' ' && c[at - 1] == ' ', "{l}");
        }
        assert!(t.contains("It does not show A and B equal"));
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let r = report();
        let json = serde_json::to_string_pretty(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["runs"][1]["first"], "b");
        assert_eq!(v["figures"][0]["verdict"], "higher");
        assert!(v["figures"][2]["ci_high"].is_null());
        let back: AbReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.figures[2].ci_high, f64::INFINITY);
        assert_eq!(back.runs, r.runs);
        assert_eq!(back.figures[..2], r.figures[..2]);
    }
}
