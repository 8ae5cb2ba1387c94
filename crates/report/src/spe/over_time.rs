//! The SPE page's charts over time, from `intervals.jsonl`: one point per
//! interval at its middle; an interval without the figure (no replies, no
//! copies, not a number) leaves a gap in its line rather than a zero.

use super::esc;
use crate::charts::{drawable, Series, TimeChart};
use crate::html::{lines_figure, CHART_SIZE};
use crate::ReportError;
use cacheoff_rundir::spe::{Interval, ProxySpan, SpeRun};
use std::fmt::Write;

/// Palette colours of the proxies in turn, and the Collector's (apart from
/// the blues and oranges of the first proxies). The palette's last colour
/// is black, the axes' (and the browser test tells lines from axes by it).
const PROXY_COLOURS: [usize; 5] = [0, 1, 2, 4, 5];
const COLLECTOR_COLOUR: usize = 3;

fn mid(i: &Interval) -> f64 {
    (i.start_s + i.end_s) / 2.0
}

/// A line through the intervals where `f` has a finite figure.
fn line(iv: &[&Interval], name: &str, f: impl Fn(&Interval) -> Option<f64>) -> Series {
    Series::new(
        name,
        iv.iter()
            .filter_map(|i| Some((mid(i), f(i)?)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect(),
    )
}

fn span<'a>(i: &'a Interval, name: &str) -> Option<&'a ProxySpan> {
    i.proxies.iter().find(|p| p.name == name)
}

/// The intervals whose rates mean something: not the stub a run ends with
/// (under half an interval: its rates would plot as spikes).
fn whole(run: &SpeRun) -> Vec<&Interval> {
    let longest = run
        .intervals
        .iter()
        .map(|i| i.end_s - i.start_s)
        .filter(|d| d.is_finite())
        .fold(0.0, f64::max);
    let nominal = Some(run.manifest.settings.interval_s)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(longest);
    run.intervals
        .iter()
        .filter(|i| i.end_s - i.start_s >= nominal / 2.0 && i.end_s > i.start_s)
        .collect()
}

/// The names of the proxies under test, in the summary's order.
fn proxy_names(run: &SpeRun) -> Vec<&str> {
    if run.summary.proxies.is_empty() {
        run.manifest
            .proxies
            .iter()
            .map(|p| p.name.as_str())
            .collect()
    } else {
        run.summary
            .proxies
            .iter()
            .map(|p| p.span.name.as_str())
            .collect()
    }
}

/// The charts over time, in page order.
pub fn time_charts(run: &SpeRun) -> Vec<TimeChart> {
    let all: Vec<&Interval> = run.intervals.iter().collect();
    let whole = whole(run);
    let names = proxy_names(run);
    // One line per proxy of `f` over every interval.
    let per_proxy = |label: &dyn Fn(&str) -> String, f: &dyn Fn(&ProxySpan) -> Option<f64>| {
        names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                line(&all, &label(n), |i| span(i, n).and_then(f))
                    .like(PROXY_COLOURS[k % PROXY_COLOURS.len()])
            })
            .collect::<Vec<Series>>()
    };
    let name = |n: &str| n.to_string();
    let per_s = |i: &Interval, n: u64| n as f64 / (i.end_s - i.start_s);
    let chart = |title: &str, y: &str, series: Vec<Series>| TimeChart {
        title: title.into(),
        y_label: y.into(),
        series,
        bands: Vec::new(),
    };

    let requests = vec![
        line(&whole, "requests/s", |i| Some(per_s(i, i.requests))),
        line(&whole, "Collector replies/s", |i| {
            Some(per_s(i, i.collector.completed))
        })
        .reference()
        .like(COLLECTOR_COLOUR),
        line(&whole, "refused/s", |i| Some(per_s(i, i.refused))).like(1),
    ];
    let mut rt = per_proxy(&name, &|s| {
        (s.rt_ms.all.count > 0).then_some(s.rt_ms.all.mean)
    });
    rt.push(
        line(&all, "Collector", |i| {
            let c = &i.collector.rt_ms.all;
            (c.count > 0).then_some(c.mean)
        })
        .reference()
        .like(COLLECTOR_COLOUR),
    );
    let ratio = |n: u64, s: &ProxySpan| {
        (s.counts.completed > 0).then(|| 100.0 * n as f64 / s.counts.completed as f64)
    };
    let mut hits = per_proxy(&|n| format!("{n}, validated"), &|s| {
        ratio(s.counts.validated_hits, s)
    });
    hits.extend(
        per_proxy(&|n| format!("{n}, claimed"), &|s| {
            ratio(s.counts.claimed_hits, s)
        })
        .into_iter()
        .map(Series::reference),
    );
    vec![
        chart("Requests from clients", "per second", requests),
        chart("Mean response time per interval", "ms", rt),
        chart("Validated hit ratio", "% of completed copies", hits),
        chart(
            "Dropped copies",
            "copies per interval",
            per_proxy(&name, &|s| Some(s.counts.dropped as f64)),
        ),
        chart(
            "Mismatches",
            "copies per interval",
            per_proxy(&name, &|s| Some(s.counts.mismatches as f64)),
        ),
    ]
}

pub(super) fn section(o: &mut String, run: &SpeRun) -> Result<(), ReportError> {
    o.push_str("<h2 id=\"charts\">Over time</h2>");
    if run.intervals.is_empty() {
        o.push_str("<p class=\"note\">No intervals were recorded: nothing to chart over time.</p>");
        return Ok(());
    }
    o.push_str("<p class=\"note\">One point per interval, at its middle; each proxy keeps its colour in every chart. Faint lines are references: the Collector beside the proxies, and each proxy's claimed hit ratio beside the validated one. An interval without replies leaves a gap.</p>");
    for c in time_charts(run) {
        if drawable(&c.series) == 0 {
            let _ = write!(
                o,
                "<p class=\"note\" data-empty-chart=\"{t}\">{t}: too few intervals with data to draw a line.</p>",
                t = esc(&c.title)
            );
            continue;
        }
        let svg = c.svg(CHART_SIZE)?;
        lines_figure(o, &c.title, &c.series, &svg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    fn find<'a>(charts: &'a [TimeChart], title: &str) -> &'a TimeChart {
        charts.iter().find(|c| c.title == title).unwrap()
    }

    fn names(c: &TimeChart) -> Vec<&str> {
        c.series.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn every_chart_has_a_line_per_proxy_through_every_interval() {
        let run = sample::run();
        let c = time_charts(&run);
        assert_eq!(c.len(), 5);
        let req = find(&c, "Requests from clients");
        assert_eq!(
            req.series[0].points,
            [(2.5, 2.0), (7.5, 2.2), (12.5, 2.4), (17.5, 2.6)]
        );
        assert_eq!(req.series[2].points[2], (12.5, 0.2), "one refused in 5 s");
        let rt = find(&c, "Mean response time per interval");
        assert_eq!(names(rt), ["honest", "sloppy", "Collector"]);
        assert_eq!(rt.series[0].points[0], (2.5, 6.0));
        assert_eq!(rt.series[2].points[3], (17.5, 4.0));
        assert!(rt.series[2].reference);
        let hits = find(&c, "Validated hit ratio");
        assert_eq!(
            names(hits),
            [
                "honest, validated",
                "sloppy, validated",
                "honest, claimed",
                "sloppy, claimed"
            ]
        );
        assert_eq!(hits.series[1].points[1], (7.5, 50.0), "4 of 8");
        assert_eq!(hits.series[3].points[1], (7.5, 62.5), "5 claimed of 8");
        assert_eq!(
            hits.series[3].colour,
            Some(1),
            "claims in their proxy's colour"
        );
        let drops = find(&c, "Dropped copies");
        let at = |s: &Series| s.points.iter().map(|p| p.1).collect::<Vec<_>>();
        assert_eq!(at(&drops.series[0]), [0.0; 4]);
        assert_eq!(at(&drops.series[1]), [0.0, 2.0, 0.0, 0.0]);
        let mism = find(&c, "Mismatches");
        assert_eq!(at(&mism.series[1]), [0.0, 2.0, 2.0, 0.0]);
    }

    #[test]
    fn the_page_draws_every_chart_with_its_data() {
        let run = sample::run();
        let mut o = String::new();
        section(&mut o, &run).unwrap();
        let figures: Vec<&str> = o.split("<figure class=\"chart\"").skip(1).collect();
        assert_eq!(figures.len(), 5);
        let expect = [
            ("Requests from clients", 12, 3),
            ("Mean response time per interval", 12, 3),
            ("Validated hit ratio", 16, 4),
            ("Dropped copies", 8, 2),
            ("Mismatches", 8, 2),
        ];
        for (f, (title, points, series)) in figures.iter().zip(expect) {
            assert!(
                f.starts_with(&format!(
                    " data-kind=\"lines\" data-points=\"{points}\" data-series=\"{series}\"><figcaption>{title}</figcaption><svg"
                )),
                "{f}"
            );
            // Each series: a coloured line and its legend mark.
            let coloured = f
                .match_indices("<polyline")
                .filter(|(i, _)| !f[*i..*i + f[*i..].find('>').unwrap()].contains("#000000"))
                .count();
            assert!(coloured >= 2 * series, "{title}: {coloured} lines");
        }
    }

    #[test]
    fn stubs_gaps_and_missing_data_are_left_out() {
        let mut run = sample::run();
        // A stub at the end, an interval without the honest proxy, one
        // with a mean that is not a number.
        let mut stub = run.intervals[3].clone();
        stub.interval = 4;
        stub.start_s = 20.0;
        stub.end_s = 20.5;
        run.intervals.push(stub);
        run.intervals[0].proxies.remove(0);
        run.intervals[1].proxies[0].rt_ms.all.mean = f64::NAN;
        let c = time_charts(&run);
        assert_eq!(find(&c, "Requests from clients").series[0].points.len(), 4);
        let rt = find(&c, "Mean response time per interval");
        let xs: Vec<f64> = rt.series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [12.5, 17.5, 20.25]);

        // A proxy that completed nothing has no line; a chart with no
        // line at all says so instead of drawing an empty frame.
        let mut run = sample::run();
        run.intervals.truncate(1);
        let mut o = String::new();
        section(&mut o, &run).unwrap();
        assert_eq!(o.matches("<figure").count(), 0);
        assert_eq!(o.matches("data-empty-chart=").count(), 5);
    }
}
