//! Two runs compared: B − A for the headline figures (`cacheoff_ab::FIGURES`)
//! with its 95% interval and verdict, from batch means of each run's
//! measured-phase interval series and Welch's t (`cacheoff_ab::judge_runs`;
//! docs/ab.md) into `summary.json`'s `ab` (`cacheoff_rundir::lineup::AbSummary`),
//! laid out as a table for the HTML and Markdown pages.

use super::Row;
use crate::html::esc;
use crate::Run;
use cacheoff_ab::{judge_runs, FigureResult, RunSeries, Verdict, LEVEL, METHOD_BATCHES};
use cacheoff_rundir::lineup::AbSummary;
use serde_json::Value;
use std::fmt::Write;

/// What `judge_runs` reads of a run: the measured phase's name (also for a
/// run killed before its summary) and the interval rows as written.
fn json_of(run: &Run) -> (Value, Vec<Value>) {
    let summary = serde_json::json!({ "measured_phase": run.measured_phase() });
    let rows = run
        .intervals
        .iter()
        .map(|r| serde_json::to_value(r).expect("an interval record serializes"))
        .collect();
    (summary, rows)
}

/// Run `b` (shown as `b_name`) judged against run `a`.
pub(super) fn judge(a: &Run, b: &Run, a_name: &str, b_name: &str) -> AbSummary {
    let (sa, ia) = json_of(a);
    let (sb, ib) = json_of(b);
    let side = |summary, intervals| RunSeries { summary, intervals };
    AbSummary {
        a: a_name.into(),
        b: b_name.into(),
        method: METHOD_BATCHES.into(),
        level: LEVEL,
        figures: judge_runs(&side(&sa, &ia), &side(&sb, &ib), LEVEL),
    }
}

/// A figure's value with three or four significant digits (large ones,
/// such as bytes, as `307.82M`); `-` when not finite (unknown, or an
/// unbounded interval).
fn val(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1e5 {
        return crate::charts::short_number(v);
    }
    let d = if a >= 1000.0 || a == 0.0 {
        0
    } else if a >= 1.0 {
        3 - a.log10().floor() as usize
    } else {
        (2.0 - a.log10().floor()) as usize
    };
    format!("{v:.d$}")
}

/// The figure's label with its unit, and the verdict with whether B's
/// value is the better one.
fn label_and_verdict(f: &FigureResult) -> (String, String) {
    let fig = cacheoff_ab::figure(&f.name);
    let label = fig.map_or(f.name.clone(), |x| x.label.to_string());
    let verdict = match (f.verdict, fig.map(|x| x.higher_is_better)) {
        (Verdict::None, _) | (_, None) => f.verdict.describe().to_string(),
        (v, Some(higher_better)) => {
            let better = (v == Verdict::Higher) == higher_better;
            format!(
                "{} ({})",
                v.describe(),
                if better { "better" } else { "worse" }
            )
        }
    };
    (label, verdict)
}

/// The table's cells of one figure: label, A, B, B − A, interval, verdict.
fn cells(f: &FigureResult) -> [String; 6] {
    let (label, verdict) = label_and_verdict(f);
    [
        label,
        val(f.a),
        val(f.b),
        val(f.diff),
        format!("{} to {}", val(f.ci_low), val(f.ci_high)),
        verdict,
    ]
}

const HEADS: [&str; 6] = ["Figure", "A", "B", "B − A", "95% interval", "Verdict"];

/// The method in one line.
fn method(s: &AbSummary) -> String {
    format!(
        "Each figure's value in every interval of a run's measured phase makes a series; each series is cut into batches of at least 5 intervals (2 to 10 batches) and B − A gets a {:.0}% interval from Welch's t on the batch means. A verdict needs the interval to leave out 0; \u{201c}no difference detected\u{201d} is not \u{201c}equal\u{201d}. It cannot tell a difference between the products from one between the two occasions: for that, run rounds with cacheoff ab. Method: docs/ab.md.",
        s.level * 100.0
    )
}

/// Which run is A and which B, with their directories (two runs of one
/// product have the same name).
fn names(a: &Row, b: &Row) -> String {
    format!(
        "A is {} ({}), B is {} ({}).",
        a.display_name(),
        a.run_dir.display(),
        b.display_name(),
        b.run_dir.display()
    )
}

const NOTHING: &str = "Neither run has a measured phase with intervals to judge.";

/// The Markdown section.
pub(super) fn markdown(o: &mut String, s: &AbSummary, a: &Row, b: &Row) {
    let md = |t: &str| t.replace('|', "\\|");
    let _ = write!(o, "\n## B against A\n\n{}\n\n", md(&names(a, b)));
    if s.figures.is_empty() {
        let _ = writeln!(o, "{NOTHING}");
        return;
    }
    let _ = writeln!(
        o,
        "| {} |\n|---|---:|---:|---:|---:|---|",
        HEADS.join(" | ")
    );
    for f in &s.figures {
        let c = cells(f).map(|c| md(&c));
        let _ = writeln!(o, "| {} |", c.join(" | "));
    }
    let _ = writeln!(o, "\n{}", method(s));
}

/// The HTML section.
pub(super) fn html(o: &mut String, s: &AbSummary, a: &Row, b: &Row) {
    let _ = write!(
        o,
        "<h2 id=\"ab\">B against A</h2><p>{}</p>",
        esc(&names(a, b))
    );
    if s.figures.is_empty() {
        let _ = write!(o, "<p class=\"note\">{NOTHING}</p>");
        return;
    }
    o.push_str("<table id=\"ab-figures\"><thead><tr>");
    for h in HEADS {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr></thead><tbody>");
    for f in &s.figures {
        let class = match f.verdict {
            Verdict::None => "na",
            _ if label_and_verdict(f).1.ends_with("(better)") => "pass",
            _ => "fail",
        };
        let _ = write!(o, "<tr data-figure=\"{}\">", esc(&f.name));
        let c = cells(f);
        for (i, cell) in c.iter().enumerate() {
            if i == 5 {
                let _ = write!(o, "<td class=\"{class}\">{}</td>", esc(cell));
            } else {
                let _ = write!(o, "<td>{}</td>", esc(cell));
            }
        }
        o.push_str("</tr>");
    }
    let _ = write!(
        o,
        "</tbody></table><p class=\"note\">{}</p>",
        esc(&method(s))
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::markdown;
    use crate::html::sample;
    use cacheoff_rundir::lineup::Products;

    /// A watched run (A), and B, whose intervals all reply 10 a second,
    /// half of them hits.
    fn two() -> [Run; 2] {
        let a = sample::run(true, false);
        let mut b = sample::run(false, false);
        for r in &mut b.intervals {
            r.stats = sample::entry(&r.phase, 50, 50, 0);
        }
        b.dir = "runs/b".into();
        [a, b]
    }

    #[test]
    fn two_runs_get_b_minus_a_with_its_interval_and_verdict() {
        let runs = two();
        let rows = crate::compare::rows(&runs, &Products::default(), None).unwrap();
        assert!(rows[0].ab.is_none());
        let s = rows[1].ab.as_ref().expect("B's row judges it against A");
        assert_eq!(crate::compare::ab(&rows), Some(s));
        assert_eq!((s.method.as_str(), s.level), ("batch-means-welch", 0.95));
        let names: Vec<&str> = s.figures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[0], "rate_xps", "in FIGURES order");
        assert!(names.iter().all(|n| !n.starts_with("resources.")));
        // A's measured intervals replied 30, 21, 35, 24, 22, 31 and 23
        // times in 10 s; the warm-up is not in it.
        let rate = &s.figures[0];
        let a_mean = (3.0 + 2.1 + 3.5 + 2.4 + 2.2 + 3.1 + 2.3) / 7.0;
        assert!((rate.a - a_mean).abs() < 1e-9, "{rate:?}");
        assert_eq!((rate.b, rate.verdict), (10.0, Verdict::Higher));
        let hit = s
            .figures
            .iter()
            .find(|f| f.name == "rt_ms.hit.mean")
            .unwrap();
        assert_eq!((hit.diff, hit.verdict), (0.0, Verdict::None), "2 ms both");

        let md = markdown(&rows);
        assert!(md.contains("## B against A\n\nA is simple via 127.0.0.1:3128 (forward) (runs/sample), B is simple via 127.0.0.1:3128 (forward) (runs/b)."), "{md}");
        let line = md.lines().find(|l| l.starts_with("| throughput")).unwrap();
        let expect = format!(
            "| throughput (xact/s) | {} | 10.00 | {} | {} to {} | B higher (better) |",
            val(rate.a),
            val(rate.diff),
            val(rate.ci_low),
            val(rate.ci_high)
        );
        assert_eq!(line, expect);
        assert!(md.contains("| hit response time, mean (ms) | 2.000 | 2.000 | 0 | 0 to 0 | no difference detected |"), "{md}");
        assert!(md.contains("Method: docs/ab.md."));
        let page = crate::compare::html(&rows).unwrap();
        assert!(page.contains("<h2 id=\"ab\">B against A</h2>"));
        assert!(page.contains("<td class=\"pass\">B higher (better)</td>"));
        assert!(page.contains("<td class=\"na\">no difference detected</td>"));
        assert_eq!(
            page.matches("<tr data-figure=").count(),
            s.figures.len(),
            "one row per figure"
        );

        // Not with one run, nor with three.
        let three = [runs[0].clone(), runs[1].clone(), runs[0].clone()];
        for r in [&runs[..1], &three[..]] {
            let more = crate::compare::rows(r, &Products::default(), None).unwrap();
            assert!(crate::compare::ab(&more).is_none());
            assert!(!markdown(&more).contains("B against A"));
        }
    }

    #[test]
    fn a_lower_time_is_better_and_values_keep_their_digits() {
        let f = |name: &str, verdict| FigureResult {
            name: name.into(),
            a: 1.0,
            b: 2.0,
            diff: 1.0,
            ci_low: f64::NEG_INFINITY,
            ci_high: 2.0,
            verdict,
            n: 4,
            df: 2.0,
        };
        let c = cells(&f("rt_ms.all.mean", Verdict::Lower));
        assert_eq!(c[5], "B lower (better)");
        assert_eq!(c[4], "- to 2.000", "an unbounded end");
        assert_eq!(cells(&f("rate_xps", Verdict::Lower))[5], "B lower (worse)");
        assert_eq!(cells(&f("no.such", Verdict::Higher))[..1], ["no.such"]);
        assert_eq!(
            [
                val(286.62),
                val(1234.5),
                val(0.05),
                val(-3.25159),
                val(f64::NAN),
                val(-307_823_616.0)
            ],
            ["286.6", "1234", "0.0500", "-3.252", "-", "-307.82M"]
        );
    }
}
