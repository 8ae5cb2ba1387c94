//! The page of a peak search (`cacheoff peak`, its `peak.json` read as a
//! `cacheoff_rundir::peak::Peak`): the peak found, the load–response-time
//! curve with the limit drawn (the knee chart) and a table of the steps
//! linking to their run directories. Offline, in the report card's style.

use crate::charts::KneeChart;
use crate::html::{esc, ms, CHART_SIZE, STYLE};
use crate::ReportError;
use cacheoff_rundir::peak::Peak;
use cacheoff_rundir::{RunDirError, REPORT_FILE};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The knee chart of a search: each step's rate against the response
/// time the limit holds.
pub fn knee(p: &Peak) -> KneeChart {
    let p99 = p.limit.rt_stat == "p99";
    KneeChart {
        title: "Load and response time".into(),
        x_label: if p.closed_loop {
            "throughput (xact/s)".into()
        } else {
            "request rate (xact/s)".into()
        },
        y_label: format!(
            "{} response time (ms)",
            if p99 { "99th percentile" } else { "mean" }
        ),
        steps: p
            .steps
            .iter()
            .map(|s| {
                (
                    s.rate_xps,
                    if p99 { s.rt_ms_p99 } else { s.rt_ms_mean },
                    s.pass,
                )
            })
            .collect(),
        limit: p.limit.rt_ms,
        peak: p.peak_rate_xps,
    }
}

/// Renders the page.
pub fn render(p: &Peak, dir: &Path) -> Result<String, ReportError> {
    let mut o = String::with_capacity(1 << 16);
    let title = format!("cacheoff peak: {}", p.workload);
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{t}</title><style>{STYLE}</style></head><body><main><h1>{t}</h1><p class=\"sub\">{} steps, limit {}</p>",
        p.steps.len(),
        esc(&p.limit.text),
        t = esc(&title),
    );
    let (value, class) = match p.peak_rate_xps {
        Some(r) => (format!("{r:.1}/s"), "pass"),
        None => ("none".into(), "fail"),
    };
    let _ = write!(
        o,
        "<div class=\"cards\"><div class=\"card\" id=\"peak\"><div class=\"k\">peak rate</div><div class=\"v {class}\">{value}</div><div class=\"d\">{}{}</div></div></div>",
        esc(&p.outcome),
        p.peak_robots.map_or(String::new(), |n| format!(", {n} robots"))
    );
    if p.outcome == "searching" {
        o.push_str("<div class=\"banner\">The search had not ended when this page was made.</div>");
    }
    let svg = knee(p).svg(CHART_SIZE)?;
    let _ = write!(
        o,
        "<h2>The knee</h2><figure class=\"chart\" id=\"knee\"><figcaption>Load and response time, with the limit</figcaption>{svg}</figure>"
    );
    o.push_str("<h2>Steps</h2><table id=\"steps\"><thead><tr><th>step</th><th>rate (xact/s)</th><th>robots</th><th>throughput</th><th>rt mean (ms)</th><th>rt p99 (ms)</th><th>errors</th><th>verdict</th></tr></thead><tbody>");
    for s in &p.steps {
        let _ = write!(
            o,
            "<tr><td><a href=\"{d}/report.html\">{d}</a>{}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.2}%</td><td class=\"{}\">{}</td></tr>",
            match (s.confirm, s.recheck) {
                (true, _) => " (repeat)",
                (_, true) => " (recheck)",
                _ => "",
            },
            s.rate_xps,
            s.robots.map_or("-".to_string(), |n| n.to_string()),
            s.throughput_xps,
            ms(s.rt_ms_mean),
            ms(s.rt_ms_p99),
            s.error_pct,
            if s.pass { "pass" } else { "fail" },
            if s.pass { "pass" } else { "FAIL" },
            d = esc(&s.dir),
        );
    }
    o.push_str("</tbody></table>");
    let _ = write!(
        o,
        "<p class=\"note\">Each step is a run of the workload's plateau at one rate{}; it passes when its response time (from the intended start) and errors keep the limit. The bracket grows until a step fails (a failed step is run again and the rate fails only if that fails too), is bisected to within {:.0}%, and the best passing rate is run again to confirm it. Rendered by cacheoff {} from {}.</p></main></body></html>",
        if p.warmup_dir.is_some() { ", after one warm-up run" } else { "" },
        p.precision * 100.0,
        esc(env!("CARGO_PKG_VERSION")),
        esc(&dir.display().to_string())
    );
    Ok(o)
}

/// Writes `report.html` into the peak directory; returns its path.
pub fn write(dir: &Path) -> Result<PathBuf, ReportError> {
    let p = Peak::read(dir)?;
    let html = render(&p, dir)?;
    let path = dir.join(REPORT_FILE);
    let tmp = dir.join(format!(".{REPORT_FILE}.tmp"));
    std::fs::write(&tmp, html)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| RunDirError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_rundir::peak::{Limit, PeakStep};

    fn step(rate: f64, p99: f64, pass: bool, confirm: bool) -> PeakStep {
        PeakStep {
            rate_xps: rate,
            robots: None,
            throughput_xps: rate,
            rt_ms_mean: p99 / 4.0,
            rt_ms_p99: p99,
            error_pct: 0.0,
            pass,
            confirm,
            recheck: false,
            dir: format!("step-{rate}xps"),
        }
    }

    #[test]
    fn the_page_shows_the_peak_the_knee_and_every_step() {
        let p = Peak {
            format: "cacheoff-peak".into(),
            version: 1,
            workload: "simple".into(),
            closed_loop: false,
            peak_rate_xps: Some(262.5),
            peak_robots: None,
            outcome: "found".into(),
            precision: 0.05,
            limit: Limit {
                text: "p99<=50ms, errors<=0.1%".into(),
                rt_stat: "p99".into(),
                rt_ms: 50.0,
                error_pct: 0.1,
            },
            warmup_dir: Some("warmup".into()),
            steps: vec![
                step(400.0, 2500.0, false, false),
                step(200.0, 12.0, true, false),
                step(300.0, 900.0, false, false),
                step(262.5, 40.0, true, false),
                step(262.5, 42.0, true, true),
            ],
        };
        let html = render(&p, Path::new("peaks/x")).unwrap();
        assert!(html.contains("262.5/s"));
        assert!(html.contains("id=\"knee\"") && html.contains("<svg"));
        assert!(html.contains("limit 50"), "the limit's legend");
        assert_eq!(html.matches("<tr><td><a href=").count(), 5);
        assert!(html.contains("step-262.5xps</a> (repeat)"));
        assert_eq!(html.matches("FAIL").count(), 2);
        let k = knee(&p);
        assert_eq!(k.steps[0], (400.0, 2500.0, false));
        assert_eq!(k.peak, Some(262.5));
    }
}
