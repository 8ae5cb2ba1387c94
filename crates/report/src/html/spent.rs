//! "What the product spent": the watched product's CPU, memory, disk,
//! descriptors and threads over time (from the intervals' `resources`)
//! and per phase (`Run::resources_by_phase`). Absent when nothing was
//! watched.

use super::over_time::{bands, series_where};
use super::tables::table;
use super::{esc, lines_figure, CHART_SIZE};
use crate::charts::{Series, TimeChart};
use crate::{ReportError, Run};
use cacheoff_resources::{IntervalUsage, Resources};
use cacheoff_rundir::IntervalRecord;
use std::fmt::Write;

const MB: f64 = (1u64 << 20) as f64;

/// What is shown for a per-hit or per-miss cost the run cannot give.
pub(crate) const NOT_ESTIMABLE: &str = "not estimable";

/// How the per-hit and per-miss costs are estimated, in one line.
pub(crate) const PER_HIT_AND_MISS: &str = "CPU per hit and per miss are estimated over the whole run (so every phase shows the same): least squares over the intervals, CPU = c0 \u{b7} duration + h \u{b7} hits + m \u{b7} misses; they are estimable only when the intervals' hit ratios (and rates) differ, from at least 4 intervals with traffic, and when neither cost comes out negative.";

/// A size in binary units, as the workload's sizes are written (`64MB`).
pub(crate) fn size(b: u64) -> String {
    let v = b as f64;
    match b {
        b if b >= 1 << 30 => format!("{:.2} GB", v / (MB * 1024.0)),
        b if b >= 1 << 20 => format!("{:.1} MB", v / MB),
        b if b >= 1 << 10 => format!("{:.1} KB", v / 1024.0),
        b => format!("{b} B"),
    }
}

/// A ratio with three significant digits or so, or `none` when absent.
fn num(v: Option<f64>, none: &str) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.1 || v == 0.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
        None => none.into(),
    }
}

/// A series of the intervals that carry a sample.
fn usage(iv: &[IntervalRecord], name: &str, f: impl Fn(&IntervalUsage, f64) -> f64) -> Series {
    series_where(
        iv,
        name,
        |r| r.resources.is_some(),
        |r| {
            let u = r.resources.as_ref().expect("kept only with a sample");
            f(u, r.stats.duration_s.max(1e-9))
        },
    )
}

/// The charts of the product's spending, in page order.
pub(crate) fn charts(iv: &[IntervalRecord]) -> Vec<TimeChart> {
    let b = bands(iv);
    let chart = |title: &str, y: &str, series: Vec<Series>| TimeChart {
        title: title.into(),
        y_label: y.into(),
        series,
        bands: b.clone(),
    };
    let cores = |ms: f64, s: f64| ms / 1000.0 / s;
    vec![
        chart(
            "Cores used",
            "cores",
            vec![
                usage(iv, "user + system", |u, s| {
                    cores(u.cpu_user_ms + u.cpu_sys_ms, s)
                }),
                usage(iv, "user", |u, s| cores(u.cpu_user_ms, s)),
                usage(iv, "system", |u, s| cores(u.cpu_sys_ms, s)),
            ],
        ),
        chart(
            "Memory",
            "MB",
            vec![
                usage(iv, "current", |u, _| u.mem_bytes as f64 / MB),
                usage(iv, "peak so far", |u, _| {
                    u.mem_peak_bytes.max(u.mem_bytes) as f64 / MB
                })
                .reference()
                .like(0),
            ],
        ),
        chart(
            "Disk",
            "MB/s",
            vec![
                usage(iv, "written", |u, s| u.disk_write_bytes as f64 / MB / s),
                usage(iv, "read", |u, s| u.disk_read_bytes as f64 / MB / s),
            ],
        ),
        // Apart: thousands of descriptors would flatten a few threads.
        chart(
            "Open file descriptors",
            "count",
            vec![usage(iv, "open file descriptors", |u, _| u.fds as f64)],
        ),
        chart(
            "Threads",
            "count",
            vec![usage(iv, "threads", |u, _| u.threads as f64)],
        ),
    ]
}

/// Marks the measured phase's row.
fn row_open(o: &mut String, r: &Resources, measured: Option<&str>) {
    let class = if measured == Some(r.phase.as_str()) {
        r#" class="measured""#
    } else {
        ""
    };
    let _ = write!(o, "<tr{class}><td>{}</td>", esc(&r.phase));
}

/// The per-phase tables: CPU, then memory and disk.
pub(crate) fn tables(o: &mut String, phases: &[Resources], measured: Option<&str>) {
    table(
        o,
        &[
            "phase",
            "cores used",
            "CPU ms per 1k xacts",
            "per 1k hits",
            "per 1k misses",
            "req/s per core",
        ],
    );
    for r in phases {
        row_open(o, r, measured);
        let _ = write!(
            o,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            num(Some(r.cores_used), "-"),
            num(r.cpu_ms_per_1k_xacts, "-"),
            num(r.cpu_ms_per_1k_hits, NOT_ESTIMABLE),
            num(r.cpu_ms_per_1k_misses, NOT_ESTIMABLE),
            num(r.requests_per_core, "-"),
        );
    }
    o.push_str("</tbody></table>");
    let _ = write!(o, "<p class=\"note\">{}</p>", esc(PER_HIT_AND_MISS));
    table(
        o,
        &[
            "phase",
            "memory peak",
            "memory per cached byte",
            "disk written",
            "disk read",
            "write amplification",
            "fds max",
            "threads max",
        ],
    );
    for r in phases {
        row_open(o, r, measured);
        let _ = write!(
            o,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            size(r.mem_peak_bytes),
            num(r.mem_per_cached_byte, "-"),
            size(r.disk_write_bytes),
            size(r.disk_read_bytes),
            num(r.write_amplification, "-"),
            r.fds_max,
            r.threads_max,
        );
    }
    o.push_str("</tbody></table>");
}

pub(super) fn section(o: &mut String, run: &Run) -> Result<(), ReportError> {
    let phases = run.resources_by_phase();
    if phases.is_empty() && !run.intervals.iter().any(|r| r.resources.is_some()) {
        return Ok(());
    }
    let source = run
        .manifest
        .watched
        .clone()
        .or_else(|| phases.first().map(|r| r.source.clone()))
        .unwrap_or_else(|| "unknown".into());
    let _ = write!(
        o,
        "<h2 id=\"spent\">What the product spent</h2><p>Watched: {}.</p>",
        esc(&source)
    );
    for c in charts(&run.intervals) {
        let svg = c.svg(CHART_SIZE)?;
        lines_figure(o, &c.title, &c.series, &svg);
    }
    o.push_str("<p class=\"note\">Cores used: CPU seconds per second of the interval. Memory includes the page cache charged to a cgroup (the product's files); peak is the highest level recorded so far. Disk: bytes sent to or fetched from the storage layer. Memory per cached byte: the phase's memory peak over the bytes the cache could hold at its end (what it fetched, up to the cache size); write amplification: disk bytes written per byte fetched from origin servers.</p>");
    if !phases.is_empty() {
        tables(o, &phases, run.measured_phase().as_deref());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    /// The cells after the first of the first table row of `html` that
    /// starts with `first`.
    fn row(html: &str, first: &str) -> Vec<String> {
        let at = html.find(&format!(">{first}</td>")).unwrap();
        let end = at + html[at..].find("</tr>").unwrap();
        let start = html[..at].rfind("<tr").unwrap();
        html[start..end]
            .split("<td>")
            .skip(2)
            .map(|c| c.trim_end_matches("</td>").to_string())
            .collect()
    }

    #[test]
    fn a_watched_run_shows_what_its_product_spent() {
        let run = sample::run(true, false);
        let page = crate::html::render(&run).unwrap();
        let at = page
            .find("<h2 id=\"spent\">What the product spent</h2>")
            .unwrap();
        let o = &page[at..page[at + 4..].find("<h2").unwrap() + at + 4];
        assert!(o.contains("Watched: pid 42 and its descendants."), "{o}");
        assert_eq!(o.matches("<figure class=\"chart\"").count(), 5);
        for title in [
            "Cores used",
            "Memory",
            "Disk",
            "Open file descriptors",
            "Threads",
        ] {
            assert!(o.contains(&format!("<figcaption>{title}</figcaption>")));
        }
        // The measured phase: 7 intervals of 70 s with 113 hits and 73
        // misses, 700 + 2·113 + 8·73 = 1510 ms of CPU over 186 xacts.
        let cpu = row(o, "meas");
        let cores = 1.51 / 70.0;
        assert_eq!(
            cpu,
            [
                num(Some(cores), "-"),
                "8118".into(),
                "2000".into(),
                "8000".into(),
                num(Some(186.0 / 70.0 / cores), "-")
            ],
            "cores used, per 1k xacts, hits, misses, req/s per core"
        );
        assert!(o.contains("<tr class=\"measured\"><td>meas</td>"));
        assert_eq!(
            row(o, "warm")[2..4],
            ["2000", "8000"],
            "one estimate for the run"
        );
        // Memory peak 64 MB over the 120 KB of misses fetched by the
        // phase's end (no cache size: all of it); 7 MB written for the
        // phase's 73 KB of misses.
        let mem = row(&o[o.find("<th>memory peak").unwrap()..], "meas");
        assert_eq!(
            mem,
            ["64.0 MB", "546", "7.0 MB", "0 B", "98.2", "39", "4"],
            "peak, per cached byte, written, read, write amplification, fds, threads"
        );
        assert!(o.contains(PER_HIT_AND_MISS.split(':').next().unwrap()));

        let c = charts(&run.intervals);
        assert_eq!(
            c[0].series[0].points[0],
            (5.0, (100.0 + 160.0) / 1000.0 / 10.0)
        );
        assert!((c[0].series[1].points[0].1 - 0.75 * 0.026).abs() < 1e-12);
        assert_eq!(c[1].series[0].points[2], (25.0, 52.0), "MB");
        assert_eq!(c[2].series[0].points[0].1, 0.1, "1 MB in 10 s");
        assert_eq!(c[3].series[0].points[9], (95.0, 39.0));
        assert_eq!(c[4].series[0].points[9], (95.0, 4.0));
    }

    #[test]
    fn costs_that_cannot_be_estimated_say_so() {
        let page = crate::html::render(&sample::run(true, true)).unwrap();
        let at = page.find("id=\"spent\"").unwrap();
        let cpu = row(&page[at..], "meas");
        assert_eq!(cpu[2..4], [NOT_ESTIMABLE, NOT_ESTIMABLE]);
        assert_eq!(cpu[1], "10000", "100 + 20 + 80 ms per 20 xacts");
    }

    #[test]
    fn a_run_that_watched_nothing_has_no_such_section() {
        let page = crate::html::render(&sample::run(false, false)).unwrap();
        assert!(!page.contains("What the product spent"));
        assert!(!page.contains("id=\"spent\""));
        assert!(page.contains("<h2 id=\"phases\">"), "the rest is there");
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KB");
        assert_eq!(size(64 << 20), "64.0 MB");
        assert_eq!(size(3 << 30), "3.00 GB");
    }
}
