//! Response-time CDFs and the reply-size histogram of the measured phase.

use super::{esc, figure, lines_figure, Marks, CHART_SIZE};
use crate::charts::{BarChart, CdfChart, Series};
use crate::ReportError;
use cacheoff_stats::{Cdf, Distributions, RtClock};
use std::fmt::Write;

fn cdf_series(name: &str, cdf: &Cdf) -> Series {
    Series::new(name, cdf.iter().map(|p| (p[0], p[1])).collect())
}

/// Human size of a power-of-two bucket bound.
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}G", b >> 30),
        b if b >= 1 << 20 => format!("{}M", b >> 20),
        b if b >= 1 << 10 => format!("{}K", b >> 10),
        b => format!("{b}"),
    }
}

/// The two response-time CDF charts.
fn cdf_charts(d: &Distributions) -> [CdfChart; 2] {
    let mut hit_miss = vec![cdf_series("all", &d.rt_ms.all)];
    if !d.rt_ms.hit.is_empty() {
        hit_miss.push(cdf_series("hits", &d.rt_ms.hit));
    }
    if !d.rt_ms.miss.is_empty() {
        hit_miss.push(cdf_series("misses", &d.rt_ms.miss));
    }
    [
        CdfChart {
            title: "Response time: hits and misses".into(),
            x_label: "ms from the intended start".into(),
            series: hit_miss,
        },
        CdfChart {
            title: "Response time: from the intended start vs from the connection (Web Polygraph's clock)".into(),
            x_label: "ms".into(),
            series: vec![
                cdf_series(RtClock::Intended.description(), &d.rt(RtClock::Intended).all),
                cdf_series(RtClock::Polygraph.description(), &d.rt(RtClock::Polygraph).all)
                    .reference(),
            ],
        },
    ]
}

/// Reply sizes from the first bucket that holds any.
fn size_chart(d: &Distributions) -> BarChart {
    BarChart {
        title: "Reply sizes (whole objects)".into(),
        y_label: "replies".into(),
        bars: d
            .sizes
            .iter()
            .skip_while(|b| b[1] == 0)
            .map(|b| (format!("≤{}", size_label(b[0])), b[1] as f64))
            .collect(),
    }
}

/// The section, from the summary's distributions (`None` without one).
pub(super) fn section(o: &mut String, d: Option<&Distributions>) -> Result<(), ReportError> {
    o.push_str("<h2 id=\"distributions\">Distributions</h2>");
    let Some(d) = d else {
        o.push_str("<p class=\"note\">Not available: distributions are written with the summary, which this run does not have.</p>");
        return Ok(());
    };
    let _ = write!(
        o,
        "<p class=\"note\">Over {}. Response times on a logarithmic scale: the further left a curve, the faster; a long flat tail means a few very slow replies.</p>",
        esc(&if d.span == "total" { "the whole run".to_string() } else { format!("phase {}", d.span) })
    );
    for c in &cdf_charts(d) {
        let svg = c.svg(CHART_SIZE)?;
        lines_figure(o, &c.title, &c.series, &svg);
    }
    let sizes = size_chart(d);
    let svg = sizes.svg(CHART_SIZE)?;
    figure(o, &sizes.title, sizes.points(), Marks::Bars, &svg);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_stats::{Accum, CdfSet, Snapshot};

    fn distributions() -> Distributions {
        let mut s = Snapshot::default();
        for (i, us) in [(0u64, 900u64), (1, 1500), (2, 40_000)] {
            s.record_send(0);
            s.record_xact(&cacheoff_stats::XactRecord {
                outcome: cacheoff_stats::Outcome::Miss,
                fills_cache: true,
                bytes: 3000 << (4 * i),
                full_body: true,
                rtype: cacheoff_workload::RequestType::Basic,
                ctype: 0,
                offered_hit: false,
                ideal_hit: false,
                rt_corrected_us: us,
                rt_polygraph_us: us / 2,
            });
        }
        let mut a = Accum::default();
        a.add_interval(&s, 5.0);
        a.distributions("meas")
    }

    #[test]
    fn sections_draw_the_cdfs_and_sizes_or_say_why_not() {
        let d = distributions();
        let mut o = String::new();
        section(&mut o, Some(&d)).unwrap();
        assert!(o.contains("Over phase meas."));
        // Two CDF charts (no hits: two lines each) and the sizes.
        assert_eq!(o.matches("data-kind=\"lines\"").count(), 2, "{o}");
        assert_eq!(o.matches("data-series=\"2\"").count(), 2);
        assert_eq!(o.matches("data-kind=\"bars\"").count(), 1);
        let mut o = String::new();
        section(&mut o, None).unwrap();
        assert!(o.contains("Not available"));
        assert!(!o.contains("<figure"));
    }

    #[test]
    fn charts_name_what_occurred_and_sizes_start_at_the_first_reply() {
        let d = distributions();
        let [hm, vs] = cdf_charts(&d);
        let names: Vec<&str> = hm.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["all", "misses"]);
        assert!(vs.series[1].reference);
        let clocks: Vec<&str> = vs.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            clocks,
            [
                "from the intended start (corrected for coordinated omission)",
                "from the connection, as Web Polygraph"
            ]
        );
        // Each line reads its own clock: the slowest reply took 40 ms from
        // its intended start and 20 ms from its connection.
        let top = |i: usize| vs.series[i].points.last().unwrap().0;
        assert!((top(0) - 40.0).abs() < 0.1 && (top(1) - 20.0).abs() < 0.1);
        // 3000 B, 48000 B and 768000 B: buckets up to 4K, 64K and 1M.
        let bars = size_chart(&d).bars;
        assert_eq!(bars.first().unwrap(), &("≤4K".to_string(), 1.0));
        assert_eq!(bars.last().unwrap(), &("≤1M".to_string(), 1.0));
        assert_eq!(bars.iter().map(|b| b.1).sum::<f64>(), 3.0);
        assert_eq!(size_label(3 << 30), "3G");
        let empty = Distributions {
            span: "total".into(),
            rt_ms: CdfSet {
                all: vec![],
                hit: vec![],
                miss: vec![],
            },
            rt_polygraph_ms: CdfSet {
                all: vec![],
                hit: vec![],
                miss: vec![],
            },
            sizes: vec![],
        };
        assert!(size_chart(&empty).bars.is_empty());
    }
}
