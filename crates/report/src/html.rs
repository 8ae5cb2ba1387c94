//! The report card: one self-contained HTML file (inline CSS and SVG, no
//! script needed to read it, nothing fetched from the network).
//!
//! [`render`] lays out the page; each section renders from the figures it
//! is given, in its own module: the header and headline figures with the
//! cache-off's verdicts (`headline`), the charts over time (`over_time`),
//! the distributions (`distributions`), the tables (`tables`), what the
//! watched product spent (`spent`) and what the proxy claims against the
//! echo (`claims`).

mod claims;
mod connections;
mod distributions;
mod headline;
mod over_time;
mod replayed;
mod spent;
mod tables;

pub use headline::{verdicts, Verdict, MAX_ERROR_PERCENT, MIN_DHR_PERCENT, MIN_TIME_WAIT_S};
pub use over_time::time_charts;

use crate::charts::Series;
use crate::{ReportError, Run};
use std::fmt::Write;

pub(crate) const CHART_SIZE: (u32, u32) = (960, 300);

pub(crate) const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
main{max-width:1000px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #d8dde5;padding-bottom:4px}
.sub{color:#5a6372;margin:0 0 16px}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0;background:#fff4d6;border:1px solid #e8c66a}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dl.meta dt{color:#5a6372}dl.meta dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;background:#fff;width:100%;margin:8px 0}
th,td{padding:5px 9px;border-bottom:1px solid #e6e9ee;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{background:#eef1f5;font-weight:600}
tr.measured td{background:#eef6ff;font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:10px}
.card{background:#fff;border:1px solid #e0e4ea;border-radius:8px;padding:10px 12px}
.card .k{color:#5a6372;font-size:12px}.card .v{font-size:22px;font-weight:600}.card .d{color:#5a6372;font-size:12px}
.pass{color:#0b7a3b}.fail{color:#b42318}.na{color:#5a6372}
figure.chart{background:#fff;border:1px solid #e0e4ea;border-radius:8px;margin:12px 0;padding:8px}
figure.chart figcaption{font-weight:600;margin:0 0 4px 6px}
figure.chart svg{width:100%;height:auto;display:block}
pre{background:#fff;border:1px solid #e0e4ea;border-radius:8px;padding:12px;overflow-x:auto;font-size:12.5px}
.note{color:#5a6372;max-width:80ch}
"#;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Milliseconds with about three significant digits.
pub(crate) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub(crate) fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

/// What a chart draws, for readers and for the browser test: `lines`
/// (each series a coloured polyline plus its legend mark) or `bars`.
pub(crate) enum Marks {
    Lines { series: usize },
    Bars,
}

pub(crate) fn figure(o: &mut String, title: &str, points: usize, marks: Marks, svg: &str) {
    let (kind, series) = match marks {
        Marks::Lines { series } => ("lines", series),
        Marks::Bars => ("bars", 1),
    };
    let _ = write!(
        o,
        "<figure class=\"chart\" data-kind=\"{kind}\" data-points=\"{points}\" data-series=\"{series}\"><figcaption>{}</figcaption>{svg}</figure>",
        esc(title)
    );
}

/// A figure of line `series`, drawn as `svg`.
pub(crate) fn lines_figure(o: &mut String, title: &str, series: &[Series], svg: &str) {
    let marks = Marks::Lines {
        series: crate::charts::drawable(series),
    };
    figure(o, title, crate::charts::points(series), marks, svg);
}

/// Renders the report card.
pub fn render(run: &Run) -> Result<String, ReportError> {
    let m = &run.manifest;
    let head = run.headline();
    let measured = run.measured_phase();
    let mut o = String::with_capacity(1 << 20);
    headline::header(&mut o, run);
    let facts = cacheoff_rundir::rules::Facts::of(run);
    headline::figures(&mut o, &head, measured.as_deref(), &facts);
    if let Some(r) = &run.replayed {
        replayed::section(&mut o, r, &run.total());
    }
    over_time::section(&mut o, run)?;
    distributions::section(
        &mut o,
        run.summary.as_ref().and_then(|s| s.distributions.as_ref()),
    )?;
    tables::latency(&mut o, &head);
    o.push_str("<h2 id=\"phases\">Phases</h2>");
    tables::phases(&mut o, &run.phases(), &run.total(), measured.as_deref());
    spent::section(&mut o, run)?;
    let _ = write!(
        o,
        "<h2 id=\"content\">Content types ({})</h2>",
        esc(measured.as_deref().unwrap_or("whole run"))
    );
    tables::content(&mut o, &head);
    o.push_str("<h2 id=\"requests\">Request types</h2>");
    tables::requests(&mut o, &head);
    o.push_str("<h2 id=\"errors\">Errors</h2>");
    tables::errors(&mut o, &run.total());
    claims::section(&mut o, &run.total());
    connections::section(&mut o, &m.workload, &run.total());
    let _ = write!(
        o,
        "<h2 id=\"workload\">Workload</h2><pre>{}</pre>",
        esc(&cacheoff_workload::describe(&m.workload))
    );
    let _ = write!(
        o,
        "<p class=\"note\">Rendered by cacheoff {} from {}.</p></main></body></html>",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&run.dir.display().to_string())
    );
    Ok(o)
}

/// Writes `report.html` into the run directory; returns its path.
pub fn write(run: &Run) -> Result<std::path::PathBuf, ReportError> {
    Ok(run.write_report(&render(run)?)?)
}

/// Figures for the sections' tests: real entries built from snapshots.
#[cfg(test)]
pub(crate) mod sample {
    use cacheoff_stats::{Accum, Entry, ErrorKind, Outcome, Snapshot, XactRecord};
    use cacheoff_workload::RequestType;

    /// A span with `hits` hits of 2 ms and `misses` misses of 10 ms from
    /// their intended start (1 and 5 ms from their connection; 1 KB
    /// objects, content type `image`), `errors` body mismatches, and every
    /// request sent.
    pub fn entry(name: &str, hits: u64, misses: u64, errors: u64) -> Entry {
        let mut s = Snapshot::default();
        for i in 0..hits + misses {
            let hit = i < hits;
            s.record_send(100);
            s.record_xact(&XactRecord {
                outcome: if hit { Outcome::Hit } else { Outcome::Miss },
                fills_cache: !hit,
                bytes: 1024,
                full_body: true,
                rtype: RequestType::Basic,
                ctype: 0,
                offered_hit: hit,
                ideal_hit: hit,
                rt_corrected_us: if hit { 2000 } else { 10_000 },
                rt_polygraph_us: if hit { 1000 } else { 5000 },
            });
        }
        for _ in 0..errors {
            s.record_send(100);
            s.record_error(ErrorKind::BodyMismatch);
        }
        let mut a = Accum::default();
        a.add_interval(&s, 10.0);
        a.entry(name, &["image".to_string()])
    }

    /// A run of `simple` without a summary (as if killed): 3 warm-up and 7
    /// measured 10-second intervals whose hit ratios differ. Watched, each
    /// interval spends 10 CPU ms a second plus 2 ms per hit and 8 ms per
    /// miss (3/4 user), 50 MB + 1 MB per interval of memory (peak 64 MB)
    /// and 1 MB of disk writes; `same_hit_ratio` gives every interval
    /// 10 hits and 10 misses.
    pub fn run(watched: bool, same_hit_ratio: bool) -> crate::Run {
        use cacheoff_resources::IntervalUsage;
        use cacheoff_rundir::{Build, IntervalRecord, Manifest, Mode};
        const MB: u64 = 1 << 20;
        let w = cacheoff_workload::load("simple", &Default::default()).unwrap();
        let build = Build {
            version: "test".into(),
            git_revision: "abc".into(),
        };
        let proxy = Some("127.0.0.1:3128".parse().unwrap());
        let mut m = Manifest::new(w, Mode::Forward, proxy, None, 1, &[], &build);
        m.watched = watched.then(|| "pid 42 and its descendants".to_string());
        let hits = [0, 5, 10, 20, 3, 30, 15, 8, 25, 12];
        let misses = [20, 15, 12, 10, 18, 5, 9, 14, 6, 11];
        let intervals = (0..10u32)
            .map(|i| {
                let phase = if i < 3 { "warm" } else { "meas" };
                let (h, mi) = if same_hit_ratio {
                    (10, 10)
                } else {
                    (hits[i as usize], misses[i as usize])
                };
                let cpu = 100.0 + 2.0 * h as f64 + 8.0 * mi as f64;
                let u = IntervalUsage {
                    cpu_user_ms: cpu * 0.75,
                    cpu_sys_ms: cpu * 0.25,
                    mem_bytes: 50 * MB + u64::from(i) * MB,
                    mem_peak_bytes: 64 * MB,
                    disk_write_bytes: MB,
                    fds: 30 + u64::from(i),
                    threads: 4,
                    ..Default::default()
                };
                IntervalRecord {
                    version: 2,
                    interval: i,
                    phase: phase.into(),
                    start_s: f64::from(i) * 10.0,
                    end_s: f64::from(i + 1) * 10.0,
                    robots: 4,
                    load: 1.0,
                    stats: entry(phase, h, mi, 0),
                    resources: watched.then_some(u),
                }
            })
            .collect();
        crate::Run {
            dir: "runs/sample".into(),
            manifest: m,
            intervals,
            summary: None,
            outage: None,
            replayed: None,
        }
    }
}
