//! The report card: one self-contained HTML file (inline CSS and SVG, no
//! script needed to read it, nothing fetched from the network).

use crate::charts::{Band, BarChart, CdfChart, Series, TimeChart};
use crate::{ReportError, Run, RunState};
use cacheoff_stats::{Entry, ErrorKind, IntervalRecord, Latency};
use std::fmt::Write;

/// The cache-off's disqualification rules.
pub const MAX_ERROR_PERCENT: f64 = 3.0;
pub const MIN_DHR_PERCENT: f64 = 25.0;

const CHART_SIZE: (u32, u32) = (960, 300);

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

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

/// Pass/fail of one rule, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass(String),
    Fail(String),
    NotApplicable(String),
}

/// The cache-off's rules applied to the headline figures.
pub fn verdicts(run: &Run, e: &Entry) -> Vec<(&'static str, Verdict)> {
    let errors = if e.errors.percent > MAX_ERROR_PERCENT {
        Verdict::Fail(format!(
            "{} errors: more than {MAX_ERROR_PERCENT}% disqualifies",
            pct(e.errors.percent)
        ))
    } else {
        Verdict::Pass(format!(
            "{} errors (at most {MAX_ERROR_PERCENT}% allowed)",
            pct(e.errors.percent)
        ))
    };
    let dhr = if run.manifest.proxy.is_none() {
        Verdict::NotApplicable("no proxy under test".into())
    } else if e.dhr.measured < MIN_DHR_PERCENT {
        Verdict::Fail(format!(
            "document hit ratio {}: below {MIN_DHR_PERCENT}% disqualifies",
            pct(e.dhr.measured)
        ))
    } else {
        Verdict::Pass(format!(
            "document hit ratio {} (at least {MIN_DHR_PERCENT}% needed)",
            pct(e.dhr.measured)
        ))
    };
    vec![("errors", errors), ("hit ratio", dhr)]
}

fn bands(intervals: &[IntervalRecord]) -> Vec<Band> {
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

/// Intervals shorter than this (the stub at a run's end) would plot as
/// spikes: their rates rest on a fraction of a second.
const MIN_PLOT_INTERVAL_S: f64 = 1.0;

fn series(intervals: &[IntervalRecord], name: &str, f: impl Fn(&IntervalRecord) -> f64) -> Series {
    series_where(intervals, name, |_| true, f)
}

/// A series over the intervals that `keep` accepts (e.g. only those with
/// hits, for the hits' response time).
fn series_where(
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

/// The charts over time, in page order.
pub fn time_charts(run: &Run) -> Vec<TimeChart> {
    let iv = &run.intervals;
    let b = bands(iv);
    let chart = |title: &str, y: &str, series: Vec<Series>| TimeChart {
        title: title.into(),
        y_label: y.into(),
        series,
        bands: b.clone(),
    };
    let mut error_series: Vec<Series> = Vec::new();
    let mut kinds: Vec<&str> = ErrorKind::ALL
        .iter()
        .map(|k| k.name())
        .filter(|k| iv.iter().any(|r| r.stats.errors.by_kind.contains_key(*k)))
        .collect();
    kinds.truncate(6);
    for k in kinds {
        error_series.push(series(iv, k, |r| {
            r.stats.errors.by_kind.get(k).copied().unwrap_or(0) as f64
                / r.stats.duration_s.max(1e-9)
        }));
    }
    if error_series.is_empty() {
        error_series.push(series(iv, "all errors", |r| {
            r.stats.errors.total as f64 / r.stats.duration_s.max(1e-9)
        }));
    }
    vec![
        chart(
            "Throughput",
            "replies/s",
            vec![
                series(iv, "replies/s", |r| r.stats.rate_xps),
                series(iv, "requests sent/s", |r| {
                    r.stats.sent as f64 / r.stats.duration_s.max(1e-9)
                })
                .reference(),
            ],
        ),
        chart(
            "Response time",
            "ms",
            vec![
                series_where(
                    iv,
                    "all, mean",
                    |r| r.stats.rt_ms.all.count > 0,
                    |r| r.stats.rt_ms.all.mean,
                ),
                series_where(
                    iv,
                    "hits, mean",
                    |r| r.stats.rt_ms.hit.count > 0,
                    |r| r.stats.rt_ms.hit.mean,
                ),
                series_where(
                    iv,
                    "misses, mean",
                    |r| r.stats.rt_ms.miss.count > 0,
                    |r| r.stats.rt_ms.miss.mean,
                ),
                series_where(
                    iv,
                    "all, p99",
                    |r| r.stats.rt_ms.all.count > 0,
                    |r| r.stats.rt_ms.all.p99,
                )
                .reference()
                .like(0),
                series_where(
                    iv,
                    "hits, p99",
                    |r| r.stats.rt_ms.hit.count > 0,
                    |r| r.stats.rt_ms.hit.p99,
                )
                .reference()
                .like(1),
                series_where(
                    iv,
                    "misses, p99",
                    |r| r.stats.rt_ms.miss.count > 0,
                    |r| r.stats.rt_ms.miss.p99,
                )
                .reference()
                .like(2),
            ],
        ),
        chart(
            "Document hit ratio",
            "% of basic requests",
            vec![
                series(iv, "measured", |r| r.stats.dhr.measured),
                series(iv, "offered", |r| r.stats.dhr.offered)
                    .reference()
                    .like(0),
            ],
        ),
        chart(
            "Byte hit ratio",
            "% of basic bytes",
            vec![
                series(iv, "measured", |r| r.stats.bhr.measured),
                series(iv, "offered", |r| r.stats.bhr.offered)
                    .reference()
                    .like(0),
            ],
        ),
        chart("Errors by kind", "errors/s", error_series),
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

fn latency_cells(l: &Latency) -> String {
    if l.count == 0 {
        return "<td>-</td><td>-</td><td>-</td>".into();
    }
    format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        ms(l.mean),
        ms(l.p50),
        ms(l.p99)
    )
}

fn card(out: &mut String, k: &str, v: &str, d: &str) {
    let _ = write!(
        out,
        r#"<div class="card"><div class="k">{}</div><div class="v">{}</div><div class="d">{}</div></div>"#,
        esc(k),
        esc(v),
        esc(d)
    );
}

fn phase_table(out: &mut String, run: &Run) {
    let measured = run.measured_phase();
    out.push_str("<table><thead><tr><th>phase</th><th>duration s</th><th>xacts</th><th>replies/s</th><th>all ms</th><th>hit ms</th><th>miss ms</th><th>DHR meas / off</th><th>BHR meas / off</th><th>errors</th></tr></thead><tbody>");
    for e in run.phases().iter().chain(std::iter::once(&run.total())) {
        let class = if measured.as_deref() == Some(e.name.as_str()) {
            r#" class="measured""#
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class}><td>{}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} / {:.1}</td><td>{:.1} / {:.1}</td><td>{} ({})</td></tr>",
            esc(&e.name),
            e.duration_s,
            e.xacts,
            e.rate_xps,
            ms(e.rt_ms.all.mean),
            ms(e.rt_ms.hit.mean),
            ms(e.rt_ms.miss.mean),
            e.dhr.measured,
            e.dhr.offered,
            e.bhr.measured,
            e.bhr.offered,
            e.errors.total,
            pct(e.errors.percent)
        );
    }
    out.push_str("</tbody></table>");
}

fn content_table(out: &mut String, e: &Entry) {
    out.push_str("<table><thead><tr><th>content type</th><th>xacts</th><th>share</th><th>mean size</th><th>hits</th><th>hit share</th><th>bytes</th></tr></thead><tbody>");
    for (name, t) in &e.content_types {
        let mean = if t.bodies == 0 {
            "-".to_string()
        } else {
            format!("{:.1} KB", t.bytes as f64 / t.bodies as f64 / 1024.0)
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            t.xacts,
            pct(t.xacts as f64 * 100.0 / e.xacts.max(1) as f64),
            mean,
            t.hits,
            pct(t.hits as f64 * 100.0 / t.xacts.max(1) as f64),
            crate::charts::short_number(t.bytes as f64)
        );
    }
    out.push_str("</tbody></table>");
}

fn request_table(out: &mut String, e: &Entry) {
    out.push_str(
        "<table><thead><tr><th>request type</th><th>xacts</th><th>share</th></tr></thead><tbody>",
    );
    for t in cacheoff_workload::RequestType::ALL {
        let n = e.request_types.get(t.name()).copied().unwrap_or(0);
        let _ = write!(
            out,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(t.description()),
            esc(t.name()),
            n,
            pct(n as f64 * 100.0 / e.xacts.max(1) as f64)
        );
    }
    out.push_str("</tbody></table>");
}

fn error_table(out: &mut String, e: &Entry) {
    if e.errors.by_kind.is_empty() {
        out.push_str("<p>No errors.</p>");
        return;
    }
    out.push_str("<table><thead><tr><th>error</th><th>count</th><th>share of requests</th><th>meaning</th></tr></thead><tbody>");
    for k in ErrorKind::ALL {
        if let Some(n) = e.errors.by_kind.get(k.name()) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left;white-space:normal\">{}</td></tr>",
                esc(k.name()),
                n,
                pct(*n as f64 * 100.0 / e.sent.max(1) as f64),
                esc(k.description())
            );
        }
    }
    out.push_str("</tbody></table>");
}

fn cdf_series(name: &str, cdf: &cacheoff_stats::Cdf) -> Series {
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

/// Response-time CDFs and the reply-size histogram of the measured phase.
fn distributions(o: &mut String, run: &Run) -> Result<(), ReportError> {
    o.push_str("<h2 id=\"distributions\">Distributions</h2>");
    let Some(d) = run.summary.as_ref().and_then(|s| s.distributions.as_ref()) else {
        o.push_str("<p class=\"note\">Not available: distributions are written with the summary, which this run does not have.</p>");
        return Ok(());
    };
    let _ = write!(
        o,
        "<p class=\"note\">Over {}. Response times on a logarithmic scale: the further left a curve, the faster; a long flat tail means a few very slow replies.</p>",
        esc(&if d.span == "total" { "the whole run".to_string() } else { format!("phase {}", d.span) })
    );
    let mut hit_miss = vec![cdf_series("all", &d.rt_ms.all)];
    if !d.rt_ms.hit.is_empty() {
        hit_miss.push(cdf_series("hits", &d.rt_ms.hit));
    }
    if !d.rt_ms.miss.is_empty() {
        hit_miss.push(cdf_series("misses", &d.rt_ms.miss));
    }
    let charts = [
        CdfChart {
            title: "Response time: hits and misses".into(),
            x_label: "ms from the intended start".into(),
            series: hit_miss,
        },
        CdfChart {
            title: "Response time: from the intended start vs from the send".into(),
            x_label: "ms".into(),
            series: vec![
                cdf_series("from the intended start", &d.rt_ms.all),
                cdf_series("from the actual send", &d.rt_uncorrected_ms.all).reference(),
            ],
        },
    ];
    for c in &charts {
        let svg = c.svg(CHART_SIZE)?;
        figure(
            o,
            &c.title,
            c.points(),
            Marks::Lines {
                series: c.drawable_series(),
            },
            &svg,
        );
    }
    let sizes = BarChart {
        title: "Reply sizes (whole objects)".into(),
        y_label: "replies".into(),
        bars: d
            .sizes
            .iter()
            .skip_while(|b| b[1] == 0)
            .map(|b| (format!("≤{}", size_label(b[0])), b[1] as f64))
            .collect(),
    };
    let svg = sizes.svg(CHART_SIZE)?;
    figure(o, &sizes.title, sizes.points(), Marks::Bars, &svg);
    Ok(())
}

/// Renders the report card.
pub fn render(run: &Run) -> Result<String, ReportError> {
    let m = &run.manifest;
    let head = run.headline();
    let measured = run.measured_phase();
    let mut o = String::with_capacity(1 << 20);
    let title = format!(
        "cacheoff report: {} via {}",
        m.workload.name,
        m.label
            .clone()
            .or(m.proxy.map(|p| p.to_string()))
            .unwrap_or_else(|| "no proxy".into())
    );
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body><main>",
        esc(&title)
    );
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"sub\">{}</p>",
        esc(&format!("{} report card", m.workload.name)),
        esc(&m.workload.description)
    );
    let state = run.state();
    if state != RunState::Complete {
        let _ = write!(
            o,
            "<div class=\"banner\" id=\"state\" data-state=\"{}\"><strong>This run is {}.</strong></div>",
            match state {
                RunState::Interrupted => "interrupted",
                _ => "no-summary",
            },
            esc(state.describe())
        );
    }
    let duration = run.intervals.last().map_or(0.0, |r| r.end_s);
    o.push_str("<dl class=\"meta\">");
    for (k, v) in [
        ("workload", m.workload.name.clone()),
        ("proxy under test", run.proxy_label()),
        ("started", m.started_at.clone()),
        (
            "finished",
            m.finished_at
                .clone()
                .unwrap_or_else(|| "not recorded".into()),
        ),
        ("duration", format!("{duration:.0} s")),
        ("command line", m.command_line.join(" ")),
        (
            "cacheoff",
            format!("{} ({})", m.cacheoff_version, m.git_revision),
        ),
        ("seed", m.seed.to_string()),
        (
            "host",
            format!(
                "{}, {} {}, {} CPUs, {:.1} GiB",
                m.host.hostname,
                m.host.os,
                m.host.kernel,
                m.host.cpus,
                m.host.memory_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        (
            "robots / servers",
            format!(
                "{} robots, {} origin servers, {} workers",
                m.workload.robots.count, m.workload.servers.count, m.workers
            ),
        ),
    ] {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    o.push_str("</dl>");

    // Executive figures.
    let _ = write!(
        o,
        "<h2 id=\"summary\">Headline figures ({})</h2><div class=\"cards\">",
        esc(&measured
            .clone()
            .map_or("whole run".into(), |p| format!("phase {p}")))
    );
    card(
        &mut o,
        "throughput",
        &format!("{:.1}/s", head.rate_xps),
        &format!("{} replies", head.xacts),
    );
    card(
        &mut o,
        "response time, all",
        &format!("{} ms", ms(head.rt_ms.all.mean)),
        &format!(
            "p50 {} · p99 {} ms",
            ms(head.rt_ms.all.p50),
            ms(head.rt_ms.all.p99)
        ),
    );
    card(
        &mut o,
        "hits / misses",
        &format!(
            "{} / {} ms",
            ms(head.rt_ms.hit.mean),
            ms(head.rt_ms.miss.mean)
        ),
        "mean response time",
    );
    card(
        &mut o,
        "document hit ratio",
        &pct(head.dhr.measured),
        &format!("offered {}", pct(head.dhr.offered)),
    );
    card(
        &mut o,
        "byte hit ratio",
        &pct(head.bhr.measured),
        &format!("offered {}", pct(head.bhr.offered)),
    );
    card(
        &mut o,
        "errors",
        &pct(head.errors.percent),
        &format!("{} of {} requests", head.errors.total, head.sent),
    );
    o.push_str("</div>");
    o.push_str("<table id=\"verdict\"><thead><tr><th>cache-off rule</th><th>result</th><th>why</th></tr></thead><tbody>");
    for (rule, v) in verdicts(run, &head) {
        let (class, word, why) = match v {
            Verdict::Pass(w) => ("pass", "pass", w),
            Verdict::Fail(w) => ("fail", "fail", w),
            Verdict::NotApplicable(w) => ("na", "n/a", w),
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"{class}\">{word}</td><td style=\"text-align:left\">{}</td></tr>",
            esc(rule),
            esc(&why)
        );
    }
    o.push_str("</tbody></table>");
    o.push_str("<table><thead><tr><th>response time, ms</th><th>mean</th><th>p50</th><th>p99</th><th>replies</th></tr></thead><tbody>");
    for (k, l) in [
        ("hits", &head.rt_ms.hit),
        ("all", &head.rt_ms.all),
        ("misses", &head.rt_ms.miss),
    ] {
        let _ = write!(
            o,
            "<tr><td>{k}</td>{}<td>{}</td></tr>",
            latency_cells(l),
            l.count
        );
    }
    o.push_str("</tbody></table>");

    // Charts.
    o.push_str("<h2 id=\"charts\">Over time</h2><p class=\"note\">One point per 5-second interval, at its middle; phases are shaded and named. Faint lines are references: requests sent beside replies, offered beside measured hit ratios, p99 beside means.</p>");
    for c in time_charts(run) {
        let svg = c.svg(CHART_SIZE)?;
        figure(
            &mut o,
            &c.title,
            c.points(),
            Marks::Lines {
                series: c.drawable_series(),
            },
            &svg,
        );
    }

    distributions(&mut o, run)?;

    // Corrected vs uncorrected.
    o.push_str("<h2 id=\"latency\">Response time from the intended start vs from the send</h2>");
    o.push_str(
        "<table><thead><tr><th></th><th>mean</th><th>p50</th><th>p99</th></tr></thead><tbody>",
    );
    for (k, l) in [
        ("all, from intended start", &head.rt_ms.all),
        ("all, from actual send", &head.rt_uncorrected_ms.all),
        ("hits, from intended start", &head.rt_ms.hit),
        ("hits, from actual send", &head.rt_uncorrected_ms.hit),
        ("misses, from intended start", &head.rt_ms.miss),
        ("misses, from actual send", &head.rt_uncorrected_ms.miss),
    ] {
        let _ = write!(o, "<tr><td>{k}</td>{}</tr>", latency_cells(l));
    }
    o.push_str("</tbody></table>");
    let gap = head.rt_ms.all.mean - head.rt_uncorrected_ms.all.mean;
    let _ = write!(
        o,
        "<p class=\"note\">Robots plan each request's start time in advance (open loop). Timing from that intended start counts the time a request waited for a free connection; timing from the actual send hides it (coordinated omission). Here the difference of means is {} ms, and {} of requests left more than 10 ms late: {}.</p>",
        ms(gap),
        pct(head.sent_late_percent),
        if head.sent_late_percent < 1.0 {
            "the robots kept their schedule"
        } else {
            "requests queued behind busy connections, and the intended-start figures include that wait"
        }
    );

    o.push_str("<h2 id=\"phases\">Phases</h2>");
    phase_table(&mut o, run);
    let _ = write!(
        o,
        "<h2 id=\"content\">Content types ({})</h2>",
        esc(&measured.clone().unwrap_or_else(|| "whole run".into()))
    );
    content_table(&mut o, &head);
    o.push_str("<h2 id=\"requests\">Request types</h2>");
    request_table(&mut o, &head);
    o.push_str("<h2 id=\"errors\">Errors</h2>");
    error_table(&mut o, &run.total());
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
    let html = render(run)?;
    let path = run.dir.join("report.html");
    let tmp = run.dir.join(".report.html.tmp");
    std::fs::write(&tmp, html)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}
