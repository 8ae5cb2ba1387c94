//! The charts over time: one point per interval, phases shaded.

use super::{lines_figure, CHART_SIZE};
use crate::charts::{Band, Series, TimeChart};
use crate::{ReportError, Run};
use cacheoff_rundir::IntervalRecord;
use cacheoff_stats::{Entry, ErrorKind, Latency, LatencySet, Ratio};

/// Intervals shorter than this (the stub at a run's end) would plot as
/// spikes: their rates rest on a fraction of a second.
const MIN_PLOT_INTERVAL_S: f64 = 1.0;

/// Most error kinds drawn, in the order of their table.
const MAX_ERROR_SERIES: usize = 6;

pub(super) fn bands(intervals: &[IntervalRecord]) -> Vec<Band> {
    let mut out: Vec<Band> = Vec::new();
    for r in intervals {
        match out.last_mut() {
            Some(b) if b.name == r.phase => b.end = r.end_s,
            _ => out.push(Band {
                name: r.phase.clone(),
                start: r.start_s,
                end: r.end_s,
            }),
        }
    }
    out
}

/// A series over the intervals that `keep` accepts (e.g. only those with
/// hits, for the hits' response time).
pub(super) fn series_where(
    intervals: &[IntervalRecord],
    name: &str,
    keep: impl Fn(&IntervalRecord) -> bool,
    f: impl Fn(&IntervalRecord) -> f64,
) -> Series {
    Series::new(
        name,
        intervals
            .iter()
            .filter(|r| r.stats.duration_s >= MIN_PLOT_INTERVAL_S && keep(r))
            .map(|r| ((r.start_s + r.end_s) / 2.0, f(r)))
            .collect(),
    )
}

fn series(intervals: &[IntervalRecord], name: &str, f: impl Fn(&IntervalRecord) -> f64) -> Series {
    series_where(intervals, name, |_| true, f)
}

/// `n` events of interval `r`, per second.
fn per_s(r: &IntervalRecord, n: u64) -> f64 {
    n as f64 / r.stats.duration_s.max(1e-9)
}

/// Mean response times of all, hit and miss replies, then their p99s as
/// references in the same colours; intervals without such replies are
/// left out.
fn response_times(iv: &[IntervalRecord]) -> Vec<Series> {
    type Pick = fn(&LatencySet) -> &Latency;
    let kinds: [(&str, Pick); 3] = [
        ("all", |s| &s.all),
        ("hits", |s| &s.hit),
        ("misses", |s| &s.miss),
    ];
    let line = |(name, pick): &(&str, Pick), stat: &str, f: fn(&Latency) -> f64| {
        series_where(
            iv,
            &format!("{name}, {stat}"),
            |r| pick(&r.stats.rt_ms).count > 0,
            |r| f(pick(&r.stats.rt_ms)),
        )
    };
    let means = kinds.iter().map(|k| line(k, "mean", |l| l.mean));
    let p99s = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| line(k, "p99", |l| l.p99).reference().like(i));
    means.chain(p99s).collect()
}

/// A hit ratio, measured beside offered.
fn ratio(iv: &[IntervalRecord], pick: fn(&Entry) -> &Ratio) -> Vec<Series> {
    vec![
        series(iv, "measured", |r| pick(&r.stats).measured),
        series(iv, "offered", |r| pick(&r.stats).offered)
            .reference()
            .like(0),
    ]
}

/// Errors per second of the first kinds that occurred, or of all errors
/// (a flat line) when none did.
fn errors(iv: &[IntervalRecord]) -> Vec<Series> {
    let mut out: Vec<Series> = ErrorKind::ALL
        .iter()
        .map(|k| k.name())
        .filter(|k| iv.iter().any(|r| r.stats.errors.by_kind.contains_key(*k)))
        .take(MAX_ERROR_SERIES)
        .map(|k| {
            series(iv, k, |r| {
                per_s(r, r.stats.errors.by_kind.get(k).copied().unwrap_or(0))
            })
        })
        .collect();
    if out.is_empty() {
        out.push(series(iv, "all errors", |r| per_s(r, r.stats.errors.total)));
    }
    out
}

/// The charts over time of these intervals, in page order.
fn charts(iv: &[IntervalRecord]) -> Vec<TimeChart> {
    let b = bands(iv);
    let chart = |title: &str, y: &str, series: Vec<Series>| TimeChart {
        title: title.into(),
        y_label: y.into(),
        series,
        bands: b.clone(),
    };
    vec![
        chart(
            "Throughput",
            "replies/s",
            vec![
                series(iv, "replies/s", |r| r.stats.rate_xps),
                series(iv, "requests sent/s", |r| per_s(r, r.stats.sent)).reference(),
            ],
        ),
        chart(
            "Response time from the intended start",
            "ms",
            response_times(iv),
        ),
        chart(
            "Document hit ratio",
            "% of basic requests",
            ratio(iv, |e| &e.dhr),
        ),
        chart("Byte hit ratio", "% of basic bytes", ratio(iv, |e| &e.bhr)),
        chart("Errors by kind", "errors/s", errors(iv)),
        chart(
            "Connections and robots",
            "count",
            vec![
                series(iv, "open connections", |r| r.stats.conns.open as f64),
                series(iv, "live robots", |r| f64::from(r.robots)),
            ],
        ),
        chart(
            "Load factor",
            "share of peak rate",
            vec![series(iv, "load", |r| r.load)],
        ),
    ]
}

/// The charts over time, in page order.
pub fn time_charts(run: &Run) -> Vec<TimeChart> {
    charts(&run.intervals)
}

pub(super) fn section(o: &mut String, run: &Run) -> Result<(), ReportError> {
    o.push_str("<h2 id=\"charts\">Over time</h2><p class=\"note\">One point per 5-second interval, at its middle; phases are shaded and named. Faint lines are references: requests sent beside replies, offered beside measured hit ratios, p99 beside means.</p>");
    for c in time_charts(run) {
        let svg = c.svg(CHART_SIZE)?;
        lines_figure(o, &c.title, &c.series, &svg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    fn record(i: u32, phase: &str, stats: Entry) -> IntervalRecord {
        IntervalRecord {
            version: 1,
            interval: i,
            phase: phase.into(),
            start_s: f64::from(i) * 10.0,
            end_s: f64::from(i + 1) * 10.0,
            robots: 7,
            load: 0.5,
            stats,
            resources: None,
        }
    }

    fn find<'a>(charts: &'a [TimeChart], title: &str) -> &'a TimeChart {
        charts.iter().find(|c| c.title == title).unwrap()
    }

    fn names(c: &TimeChart) -> Vec<&str> {
        c.series.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn charts_plot_each_interval_at_its_middle_with_phases_as_bands() {
        let iv = [
            record(0, "warm", sample::entry("warm", 0, 20, 0)),
            record(1, "meas", sample::entry("meas", 30, 10, 2)),
            record(2, "meas", sample::entry("meas", 10, 10, 0)),
        ];
        let c = charts(&iv);
        assert_eq!(c.len(), 7);
        let tp = find(&c, "Throughput");
        assert_eq!(tp.series[0].points, [(5.0, 2.0), (15.0, 4.0), (25.0, 2.0)]);
        assert_eq!(tp.series[1].points[1], (15.0, 4.2), "42 sent in 10 s");
        let bands: Vec<(&str, f64, f64)> = tp
            .bands
            .iter()
            .map(|b| (b.name.as_str(), b.start, b.end))
            .collect();
        assert_eq!(bands, [("warm", 0.0, 10.0), ("meas", 10.0, 30.0)]);

        // The warm-up had no hits: the hits' lines skip it.
        let rt = find(&c, "Response time from the intended start");
        assert_eq!(
            names(rt),
            [
                "all, mean",
                "hits, mean",
                "misses, mean",
                "all, p99",
                "hits, p99",
                "misses, p99"
            ]
        );
        assert_eq!(rt.series[1].points, [(15.0, 2.0), (25.0, 2.0)]);
        assert_eq!(rt.series[4].colour, Some(1), "p99 in its mean's colour");
        assert!(rt.series[4].reference);

        let dhr = find(&c, "Document hit ratio");
        assert_eq!(dhr.series[0].points[1], (15.0, 75.0));
        let errors = find(&c, "Errors by kind");
        assert_eq!(names(errors), ["body_mismatch"]);
        assert_eq!(errors.series[0].points[1], (15.0, 0.2));
        let load = find(&c, "Load factor");
        assert_eq!(load.series[0].points.len(), 3);
    }

    #[test]
    fn short_intervals_are_not_plotted_and_no_errors_is_one_flat_line() {
        let mut stub = record(1, "meas", sample::entry("meas", 1, 0, 0));
        stub.stats.duration_s = 0.2;
        let iv = [record(0, "meas", sample::entry("meas", 1, 1, 0)), stub];
        let c = charts(&iv);
        assert_eq!(find(&c, "Throughput").series[0].points.len(), 1);
        let errors = find(&c, "Errors by kind");
        assert_eq!(names(errors), ["all errors"]);
        assert_eq!(errors.series[0].points, [(5.0, 0.0)]);
    }
}
