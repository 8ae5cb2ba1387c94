//! The SPE report page: one self-contained HTML page for a Multiplier run
//! (`cacheoff_rundir::spe`, read back as an [`SpeRun`]), in the report
//! card's style (its `STYLE`, table layout and SVG charts; no script,
//! nothing fetched from the network).
//!
//! [`render`] lays out the page: the header here (who took part, the
//! settings, whether the figures were folded from intervals), the ranking
//! and the per-proxy tables (`tables`), the mismatches by kind with their
//! examples (`mismatches`) and the charts over time (`over_time`).
//! [`write`] puts it into the run directory as `report.html`. Every derived
//! figure comes from the summary (`Summary::derive` computed them once);
//! the page only lays them out, with a dash where a figure is absent or
//! not a number.

mod mismatches;
mod over_time;
mod tables;

pub use cacheoff_rundir::spe::SpeRun;
pub use over_time::time_charts;

use crate::html::{esc, ms, pct, STYLE};
use crate::ReportError;
use cacheoff_rundir::{RunDirError, REPORT_FILE};
use std::fmt::Write;
use std::path::PathBuf;

/// What the SPE page adds to the report card's style: the overloaded badge,
/// wrapping cells for URLs and reasons, the Collector's reference rows.
const SPE_STYLE: &str = r#"
.badge{display:inline-block;margin-left:6px;padding:0 7px;border-radius:9px;font-size:11px;font-weight:600;vertical-align:1px}
.badge.overloaded{background:#fde2e0;color:#b42318;border:1px solid #f3b8b2}
th{white-space:normal}th,td{padding:5px 7px}th.l,td.l{text-align:left}
td.wrap{text-align:left;white-space:normal;overflow-wrap:anywhere;min-width:12em}
code.url{font-size:12.5px;overflow-wrap:anywhere;word-break:break-all}
h3{font-size:15px;margin:20px 0 4px}
tr.reference td{color:#5a6372;background:#fafbfc}
"#;

/// Renders the SPE report page.
pub fn render(run: &SpeRun) -> Result<String, ReportError> {
    let mut o = String::with_capacity(1 << 18);
    header(&mut o, run);
    tables::ranking(&mut o, &run.summary);
    tables::copies(&mut o, &run.summary);
    tables::response_times(&mut o, &run.summary);
    mismatches::section(&mut o, &run.summary);
    over_time::section(&mut o, run)?;
    let _ = write!(
        o,
        "<p class=\"note\">Rendered by cacheoff {} from {}.</p></main></body></html>",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&run.dir.display().to_string())
    );
    Ok(o)
}

/// Writes `report.html` into the run directory (atomically); returns its
/// path.
pub fn write(run: &SpeRun) -> Result<PathBuf, ReportError> {
    let html = render(run)?;
    let path = run.dir.join(REPORT_FILE);
    let tmp = run.dir.join(format!(".{REPORT_FILE}.tmp"));
    std::fs::write(&tmp, html)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| RunDirError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// Opens a table with this id and these column headings (HTML); the
/// columns numbered in `left` (from 0) hold text, aligned left (their
/// cells say so with class `l` or `wrap`).
fn table(o: &mut String, id: &str, heads: &[&str], left: &[usize]) {
    let _ = write!(o, "<table id=\"{id}\"><thead><tr>");
    for (i, h) in heads.iter().enumerate() {
        let class = if left.contains(&i) {
            " class=\"l\""
        } else {
            ""
        };
        let _ = write!(o, "<th{class}>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>");
}

/// Milliseconds, or a dash for a figure that is not a number.
fn ms_or_dash(v: f64) -> String {
    if v.is_finite() {
        ms(v)
    } else {
        "-".into()
    }
}

/// A difference in milliseconds with its sign (`+1.20`, `-0.50`).
fn signed_ms(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v < 0.0 {
        format!("-{}", ms(-v))
    } else {
        format!("+{}", ms(v))
    }
}

/// A percentage of `of` things, or a dash when there were none (or the
/// figure is not a number).
fn pct_of(v: f64, of: u64) -> String {
    if of == 0 || !v.is_finite() {
        "-".into()
    } else {
        pct(v)
    }
}

/// The badge of a proxy that dropped copies.
fn overloaded_badge() -> &'static str {
    "<span class=\"badge overloaded\" title=\"The proxy's queue of copies was full: it could not keep up with the clients' load, and is reported as overloaded rather than compared on less traffic.\">overloaded</span>"
}

/// The document head, the title, a banner for a folded run, and who took
/// part with which settings.
fn header(o: &mut String, run: &SpeRun) {
    let m = &run.manifest;
    let s = &run.summary;
    let names: Vec<&str> = s.proxies.iter().map(|p| p.span.name.as_str()).collect();
    let title = format!(
        "cacheoff SPE report: {}",
        if names.is_empty() {
            "no proxies".to_string()
        } else {
            names.join(" vs ")
        }
    );
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}{SPE_STYLE}</style></head><body><main>",
        esc(&title),
    );
    let _ = write!(
        o,
        "<h1>Simultaneous proxy evaluation</h1><p class=\"sub\">Clients used the Multiplier at {} as their proxy. It sent every request to the Collector at {}, whose reply went back to the client, and a copy to each proxy under test, which fetched its misses through the Collector. Each proxy's reply was checked against the Collector's and timed: the proxies were compared on the same requests at the same moments.</p>",
        esc(&m.listen.to_string()),
        esc(&m.collector.to_string())
    );
    if s.folded {
        let _ = write!(
            o,
            "<div class=\"banner\" id=\"state\" data-state=\"folded\"><strong>This run has no summary.</strong> The Multiplier stopped before writing summary.json (it was killed, or is still running): the figures below are folded from its {} intervals, and percentiles are the largest interval's (upper bounds).</div>",
            run.intervals.len()
        );
    }
    let rate = if s.duration_s > 0.0 {
        format!(" ({:.1}/s)", s.requests as f64 / s.duration_s)
    } else {
        String::new()
    };
    let t = &m.settings;
    let rows = [
        ("Multiplier", m.listen.to_string()),
        ("Collector", m.collector.to_string()),
        ("proxies under test", proxies_line(run)),
        ("started", m.started_at.clone()),
        (
            "finished",
            m.finished_at
                .clone()
                .unwrap_or_else(|| "not recorded".into()),
        ),
        ("duration", format!("{:.1} s", s.duration_s)),
        ("requests from clients", format!("{}{rate}", s.requests)),
        ("refused by the Multiplier", s.refused.to_string()),
        (
            "settings",
            format!(
                "queue of {} copies per proxy, {} connections per proxy, unsafe requests {} (copy_unsafe {}), {} workers",
                t.queue,
                t.conns_per_proxy,
                if t.copy_unsafe { "copied" } else { "sent to the Collector only" },
                t.copy_unsafe,
                t.workers
            ),
        ),
        (
            "timeouts",
            format!(
                "connect {} ms, first byte {} ms, idle {} ms; the Collector's reply waited for up to {} ms",
                t.connect_timeout_ms, t.first_byte_timeout_ms, t.idle_timeout_ms, t.facts_wait_ms
            ),
        ),
        (
            "intervals",
            format!("{} of {} s", run.intervals.len(), t.interval_s),
        ),
        (
            "summary",
            if s.folded {
                "folded from the intervals (the run was killed before its summary)".into()
            } else {
                "written by the Multiplier at the end of the run".into()
            },
        ),
        ("command line", m.command_line.join(" ")),
        (
            "cacheoff",
            format!("{} ({})", m.cacheoff_version, m.git_revision),
        ),
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
    ];
    o.push_str("<dl class=\"meta\" id=\"run\">");
    for (k, v) in rows {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    o.push_str("</dl>");
}

/// `name (address)` of every proxy under test, in the manifest's order,
/// then any the summary names that the manifest does not.
fn proxies_line(run: &SpeRun) -> String {
    let listed = run.manifest.proxies.iter().map(|p| {
        let label = format!("{} ({})", p.name, p.addr);
        if run.summary.proxy(&p.name).is_some_and(|s| s.overloaded) {
            format!("{label}, overloaded")
        } else {
            label
        }
    });
    let others = run
        .summary
        .proxies
        .iter()
        .filter(|s| !run.manifest.proxies.iter().any(|p| p.name == s.span.name))
        .map(|s| format!("{} (address not recorded)", s.span.name));
    let all: Vec<String> = listed.chain(others).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// A Multiplier run for the sections' tests: an honest proxy and a
/// faster one with mismatches and drops, over four 5-second intervals.
#[cfg(test)]
pub(crate) mod sample {
    use cacheoff_rundir::spe::{
        CollectorSpan, DiffMs, Example, Interval, Manifest, Mismatch, ProxyAddr, ProxyCounts,
        ProxySpan, Settings, SpeRun, Summary, SPE_FORMAT_VERSION,
    };
    use cacheoff_rundir::Build;
    use cacheoff_stats::{Latency, LatencySet};
    use std::net::SocketAddr;

    pub fn lat(count: u64, mean: f64) -> Latency {
        Latency {
            count,
            mean,
            p50: mean,
            p99: mean * 2.0,
            max: mean * 3.0,
        }
    }

    pub fn manifest(names: &[&str]) -> Manifest {
        let build = Build {
            version: "0.1.0".into(),
            git_revision: "abc".into(),
        };
        let proxies = names
            .iter()
            .enumerate()
            .map(|(i, n)| ProxyAddr {
                name: n.to_string(),
                addr: SocketAddr::from(([127, 0, 0, 1], 4000 + i as u16)),
            })
            .collect();
        Manifest::new(
            &build,
            &["cacheoff".into(), "multiplier".into()],
            "127.0.0.1:3128".parse().unwrap(),
            "127.0.0.1:3129".parse().unwrap(),
            proxies,
            Settings {
                queue: 64,
                conns_per_proxy: 8,
                copy_unsafe: false,
                interval_s: 5.0,
                workers: 2,
                ..Settings::default()
            },
        )
    }

    /// 10 copies in an interval; `dropped` of them dropped, `stale` and
    /// `truncated` of the rest mismatched; hits of `mean / 2` ms, misses of
    /// `mean * 1.5`.
    pub fn span(
        name: &str,
        i: u32,
        mean: f64,
        dropped: u64,
        stale: u64,
        truncated: u64,
    ) -> ProxySpan {
        let completed = 10 - dropped;
        let hits = completed / 2;
        let mut s = ProxySpan {
            name: name.into(),
            counts: ProxyCounts {
                copied: 10,
                dropped,
                not_copied_unsafe: 1,
                completed,
                claimed_hits: hits + 1,
                validated_hits: hits,
                validated_misses: completed - hits,
                mismatches: stale + truncated,
                ..ProxyCounts::default()
            },
            ..ProxySpan::default()
        };
        for (kind, n) in [(Mismatch::Stale, stale), (Mismatch::Truncated, truncated)] {
            if n > 0 {
                s.mismatches_by_kind.insert(kind.name().into(), n);
                s.examples.push(Example {
                    kind: kind.name().into(),
                    url: format!("http://origin.test/{}/obj{i}", kind.name()),
                    detail: format!("expected <{}>; got {i}", kind.name()),
                });
            }
        }
        s.rt_ms = LatencySet {
            all: lat(completed, mean),
            hit: lat(hits, mean / 2.0),
            miss: lat(completed - hits, mean * 1.5),
        };
        s.connect_ms = lat(completed, 0.1);
        s.first_byte_ms = lat(completed, mean / 3.0);
        s.queue_ms = lat(completed, 0.05);
        s.rt_diff_ms.all = DiffMs {
            count: completed,
            mean: mean - 4.0,
        };
        s
    }

    pub fn interval(i: u32, proxies: Vec<ProxySpan>) -> Interval {
        Interval {
            format_version: SPE_FORMAT_VERSION,
            interval: i,
            start_s: f64::from(i) * 5.0,
            end_s: f64::from(i + 1) * 5.0,
            requests: 10 + u64::from(i),
            refused: u64::from(i == 2),
            collector: CollectorSpan {
                completed: 10,
                errors: 0,
                hits: 3,
                rt_ms: LatencySet {
                    all: lat(10, 4.0),
                    hit: lat(3, 1.0),
                    miss: lat(7, 5.0),
                },
            },
            proxies,
            resources: Default::default(),
        }
    }

    /// `honest` (6 ms, clean) and `sloppy` (2 ms, 2 drops, 3 stale and 1
    /// truncated copies), summarised as the Multiplier would.
    pub fn run() -> SpeRun {
        let manifest = manifest(&["honest", "sloppy"]);
        let intervals: Vec<Interval> = (0..4)
            .map(|i| {
                let sloppy = match i {
                    1 => span("sloppy", i, 2.0, 2, 2, 0),
                    2 => span("sloppy", i, 2.0, 0, 1, 1),
                    _ => span("sloppy", i, 2.0, 0, 0, 0),
                };
                interval(i, vec![span("honest", i, 6.0, 0, 0, 0), sloppy])
            })
            .collect();
        let mut summary = Summary::fold(&manifest, &intervals);
        summary.folded = false;
        SpeRun {
            dir: "/nonexistent/spe-run".into(),
            manifest,
            intervals,
            summary,
        }
    }

    /// The part of `html` from `from` up to the next `<h2` after it.
    pub fn section<'a>(html: &'a str, from: &str) -> &'a str {
        let at = html
            .find(from)
            .unwrap_or_else(|| panic!("no {from} in {html}"));
        let end = html[at + 1..]
            .find("<h2")
            .map_or(html.len(), |e| at + 1 + e);
        &html[at..end]
    }

    /// The cells (inner HTML) of the first table row whose first cell
    /// starts with `first`, within `html`.
    pub fn row(html: &str, first: &str) -> Vec<String> {
        let at = html
            .find(&format!(">{first}"))
            .unwrap_or_else(|| panic!("no row {first} in {html}"));
        let start = html[..at].rfind("<tr").unwrap();
        let end = at + html[at..].find("</tr>").unwrap();
        html[start..end]
            .split("<td")
            .skip(1)
            .map(|c| {
                let c = &c[c.find('>').unwrap() + 1..];
                c[..c.find("</td>").unwrap()].to_string()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::sample::{self, section};
    use super::*;
    use cacheoff_rundir::spe::{self as rundir_spe, SpeDir};

    #[test]
    fn the_page_ranks_the_honest_proxy_first_and_badges_the_overloaded_one() {
        let run = sample::run();
        let html = render(&run).unwrap();
        assert!(html.starts_with("<!doctype html>") && html.ends_with("</html>"));
        assert!(!html.contains("<script"), "no script needed");
        let ranking = section(&html, "<h2 id=\"ranking\"");
        let honest = ranking.find("data-proxy=\"honest\"").unwrap();
        let sloppy = ranking.find("data-proxy=\"sloppy\"").unwrap();
        assert!(honest < sloppy, "{ranking}");
        assert!(ranking.contains("data-proxy=\"honest\" data-rank=\"1\""));
        assert!(ranking.contains("data-proxy=\"sloppy\" data-rank=\"\""));
        assert!(
            ranking.contains("4 mismatches, 2 copies dropped"),
            "{ranking}"
        );
        assert!(ranking.contains("class=\"badge overloaded\""));
        let copies = section(&html, "<h2 id=\"copies\"");
        assert_eq!(copies.matches("class=\"badge overloaded\"").count(), 1);
        // The header says who took part, and how.
        let head = &html[..html.find("<h2").unwrap()];
        for needle in [
            "127.0.0.1:3128",
            "127.0.0.1:3129",
            "honest (127.0.0.1:4000)",
            "sloppy (127.0.0.1:4001), overloaded",
            "queue of 64 copies per proxy, 8 connections per proxy",
            "copy_unsafe false",
            "<dd>46 (2.3/s)</dd>",
            "<dt>refused by the Multiplier</dt><dd>1</dd>",
            "written by the Multiplier",
        ] {
            assert!(head.contains(needle), "{needle} not in {head}");
        }
        assert!(!head.contains("data-state=\"folded\""));
    }

    #[test]
    fn a_killed_run_is_folded_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let base = sample::run();
        let mut dir = SpeDir::create(tmp.path(), base.manifest.clone()).unwrap();
        for i in &base.intervals {
            dir.interval(i).unwrap();
        }
        drop(dir);
        let run = rundir_spe::open(tmp.path()).unwrap();
        assert!(run.summary.folded);
        let path = write(&run).unwrap();
        assert_eq!(path, tmp.path().join("report.html"));
        let html = std::fs::read_to_string(&path).unwrap();
        assert!(html.contains("id=\"state\" data-state=\"folded\""));
        assert!(html.contains("folded from its 4 intervals"));
        assert!(html.contains("data-proxy=\"honest\" data-rank=\"1\""));
    }

    #[test]
    fn a_run_without_intervals_or_completed_copies_still_renders() {
        let mut run = sample::run();
        run.intervals.clear();
        run.summary = rundir_spe::Summary::fold(&run.manifest, &[]);
        let html = render(&run).unwrap();
        assert!(html.contains("No intervals were recorded"), "{html}");
        assert!(!html.contains("<figure"));
        let ranking = section(&html, "<h2 id=\"ranking\"");
        assert_eq!(ranking.matches("no completed copies").count(), 2);
        assert!(!html.contains("NaN") && !html.contains(">inf<"), "{html}");

        // Figures that are not numbers show as dashes, and are not drawn.
        let mut run = sample::run();
        run.summary.proxies[0].span.rt_ms.all.mean = f64::NAN;
        run.summary.proxies[0].validated_hit_ratio = f64::NAN;
        run.summary.ranking[0].mean_rt_ms = f64::NAN;
        run.intervals[1].proxies[0].rt_ms.all.mean = f64::NAN;
        let html = render(&run).unwrap();
        assert!(!html.contains("NaN"), "{html}");
    }

    #[test]
    fn figures_are_formatted_with_dashes_for_what_is_missing() {
        assert_eq!(signed_ms(-0.5), "-0.50");
        assert_eq!(signed_ms(12.25), "+12.2");
        assert_eq!(signed_ms(f64::NAN), "-");
        assert_eq!(pct_of(50.0, 0), "-");
        assert_eq!(pct_of(50.0, 2), "50.0%");
        assert_eq!(ms_or_dash(f64::INFINITY), "-");
    }
}
