//! The executive summary laid out: one column per measure, as a Markdown
//! table or an HTML page (sortable table, best values marked, a bar chart
//! per ranked measure).

use super::{ab, Row};
use crate::charts::BarChart;
use crate::html::{esc, MAX_ERROR_PERCENT, MIN_DHR_PERCENT, MIN_TIME_WAIT_S};
use crate::ReportError;
use cacheoff_resources::Resources;
use cacheoff_stats::RtClock;
use std::fmt::Write;

/// What a column's cells show beside the value.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    /// A downtime figure: marked `≤` when only known to the interval.
    Downtime,
    /// The MSL test: the TIME-WAIT and the verdict.
    Msl,
}

/// A column: heading (with its unit), the clock a response time reads,
/// value, decimals shown, whether more is better, and whether products
/// are ranked by it (best value marked, a bar chart).
struct Column {
    head: &'static str,
    clock: Option<RtClock>,
    get: fn(&Row) -> Option<f64>,
    digits: usize,
    higher_is_better: bool,
    ranked: bool,
    kind: Kind,
}

impl Column {
    /// The heading, naming the clock of a response time.
    fn head(&self) -> String {
        match self.clock {
            Some(c) => format!("{}, {}", self.head, c.short_label()),
            None => self.head.into(),
        }
    }

    /// The cell's text and, for a verdict, pass or fail.
    fn cell(&self, r: &Row) -> (String, Option<bool>) {
        let v = (self.get)(r);
        match self.kind {
            Kind::Plain => (cell(v, self.digits), None),
            Kind::Downtime => {
                let upper_bound = v.is_some() && r.downtime.is_some_and(|d| !d.precise);
                let mark = if upper_bound { "\u{2264}" } else { "" };
                (format!("{mark}{}", cell(v, self.digits)), None)
            }
            Kind::Msl => {
                let verdict = r.msl.and_then(|m| m.verdict());
                let text = match (v, verdict) {
                    (None, None) => "-".into(),
                    (Some(v), None) => cell(Some(v), self.digits),
                    (v, Some(pass)) => {
                        let word = if pass { "pass" } else { "fail" };
                        match v {
                            Some(v) => format!("{} {word}", cell(Some(v), self.digits)),
                            None => word.into(),
                        }
                    }
                };
                (text, verdict)
            }
        }
    }
}

/// A column where more is better.
const fn more(head: &'static str, digits: usize, get: fn(&Row) -> Option<f64>) -> Column {
    Column {
        head,
        clock: None,
        get,
        digits,
        higher_is_better: true,
        ranked: true,
        kind: Kind::Plain,
    }
}

/// A column where less is better.
const fn less(head: &'static str, digits: usize, get: fn(&Row) -> Option<f64>) -> Column {
    Column {
        higher_is_better: false,
        ..more(head, digits, get)
    }
}

/// `c` reading `clock`.
const fn on(clock: RtClock, c: Column) -> Column {
    Column {
        clock: Some(clock),
        ..c
    }
}

/// `c`, shown for reference: no best value, no chart.
const fn unranked(c: Column) -> Column {
    Column { ranked: false, ..c }
}

const fn of_kind(kind: Kind, c: Column) -> Column {
    Column { kind, ..c }
}

use RtClock::{Intended, Polygraph};

const COLUMNS: &[Column] = &[
    less("Price, $", 0, |r| r.price),
    more("Peak throughput, req/s", 1, |r| Some(r.throughput)),
    on(Intended, less("Hit time, ms", 1, |r| r.rt.hit)),
    on(Polygraph, less("Hit time, ms", 1, |r| r.rt_polygraph.hit)),
    on(Intended, less("All, ms", 1, |r| Some(r.rt.all))),
    on(Polygraph, less("All, ms", 1, |r| Some(r.rt_polygraph.all))),
    on(Intended, less("Miss time, ms", 1, |r| r.rt.miss)),
    on(Polygraph, less("Miss time, ms", 1, |r| r.rt_polygraph.miss)),
    more("DHR, %", 1, |r| Some(r.dhr)),
    unranked(more("DHR offered, %", 1, |r| Some(r.dhr_offered))),
    on(Intended, more("Time savings, %", 1, |r| r.rt.savings)),
    on(
        Polygraph,
        more("Time savings, %", 1, |r| r.rt_polygraph.savings),
    ),
    more("Req/s per $1,000", 1, |r| r.req_per_kusd),
    more("Hits/s per $1,000", 1, |r| r.hits_per_kusd),
    more("Req/s per core", 1, |r| spent(r, |x| x.requests_per_core)),
    less("Cores used", 2, |r| spent(r, |x| Some(x.cores_used))),
    less("CPU ms per 1k req", 1, |r| {
        spent(r, |x| x.cpu_ms_per_1k_xacts)
    }),
    less("CPU ms per 1k hits", 1, |r| {
        spent(r, |x| x.cpu_ms_per_1k_hits)
    }),
    less("CPU ms per 1k misses", 1, |r| {
        spent(r, |x| x.cpu_ms_per_1k_misses)
    }),
    less("Memory per cached byte", 2, |r| {
        spent(r, |x| x.mem_per_cached_byte)
    }),
    less("Write amplification", 2, |r| {
        spent(r, |x| x.write_amplification)
    }),
    of_kind(
        Kind::Downtime,
        less("TTFM, s", 1, |r| r.downtime.and_then(|d| d.ttfm_s)),
    ),
    of_kind(
        Kind::Downtime,
        less("TTFH, s", 1, |r| r.downtime.and_then(|d| d.ttfh_s)),
    ),
    of_kind(
        Kind::Downtime,
        less("First conn, s", 1, |r| {
            r.downtime.and_then(|d| d.first_conn_s)
        }),
    ),
    more("Cache age, h", 2, |r| r.cache_age_h),
    less("Errors, %", 2, |r| Some(r.errors_percent)),
    of_kind(
        Kind::Msl,
        unranked(more("MSL (TIME-WAIT, s)", 1, |r| {
            r.msl.and_then(|m| m.time_wait_s)
        })),
    ),
    more("Conformance, % passed", 1, |r| {
        r.conformance.map(|c| c.percent())
    }),
];

/// A figure of what the product spent, when the run watched it.
fn spent(r: &Row, f: fn(&Resources) -> Option<f64>) -> Option<f64> {
    r.resources.as_ref().and_then(f)
}

/// A value with `digits` decimals, or at least two significant digits
/// when that would round a small value away.
fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| {
        let needed = if v == 0.0 {
            0
        } else {
            (1.0 - v.abs().log10()).ceil().max(0.0) as usize
        };
        let d = digits.max(needed.min(6));
        format!("{v:.d$}")
    })
}

/// How to read the summary, saying what each clock measures.
fn how_to_read() -> String {
    let clock = |c: RtClock| {
        format!(
            "\u{201c}{}\u{201d} times each reply {}",
            c.short_label(),
            c.description()
        )
    };
    format!(
        "Each row is one product's run, in forward (proxy) or reverse (surrogate) mode, measured over its last plateau (top2 in PolyMix). Response times are shown on two clocks: {}; {}, which leaves out waits for one of the robot's connections and compares with results published with Web Polygraph. Time savings compare the mean response time, on each clock, with a run without a proxy. A cache-off compares products under the same workload, rate and duration; rows from different workloads or peak rates do not compare. Throughput is what the product was offered and kept up with, not its limit. Hit ratio depends on cache size, so read it with the cache age; the offered hit ratio is what the workload made possible. TTFM, TTFH and the first connection are the downtime test's: seconds from power-on to the first miss, hit and accepted connection; a value marked \u{2264} is only known to the 5-second interval (a run without a timed power cut). Prices make price/performance, not quality: a cheap box with errors is not a bargain. What the product spent (requests per core, cores used, CPU per 1,000 requests, hits and misses, memory per cached byte, write amplification) is measured over the measured phase when the run watched the product (cacheoff run --watch, or a product the lineup started), and \u{201c}-\u{201d} otherwise; CPU per hit and per miss are estimated by least squares over the run's intervals and need intervals whose hit ratios differ. Memory per cached byte is the memory peak over what the cache could hold; write amplification is disk bytes written per byte fetched from origin servers. A run is disqualified with more than {MAX_ERROR_PERCENT}% errors, a run through a cache with a document hit ratio under {MIN_DHR_PERCENT}% where its workload offered at least that much and hits can be seen (not HTTPS through a forward proxy), and a product whose TCP stack keeps TIME-WAIT under {MIN_TIME_WAIT_S} s (the MSL test); a disqualified run is best at nothing.",
        clock(RtClock::Intended),
        clock(RtClock::Polygraph),
    )
}

/// A path as a link target.
fn href(p: &std::path::Path) -> String {
    p.display().to_string().replace(' ', "%20")
}

/// The Markdown summary.
pub fn markdown(rows: &[Row]) -> String {
    let mut o = String::from("# cacheoff executive summary\n\n| Product |");
    for c in COLUMNS {
        let _ = write!(o, " {} |", c.head());
    }
    o.push_str("\n|---|");
    for _ in COLUMNS {
        o.push_str("---:|");
    }
    o.push('\n');
    let md = |s: &str| s.replace('|', "\\|");
    for r in rows {
        let name = match &r.report {
            Some(p) => format!(
                "[{}]({})",
                md(&r.display_name()).replace(']', "\\]"),
                href(p)
            ),
            None => md(&r.display_name()),
        };
        let _ = write!(o, "| {name}");
        if let Some(note) = r.disqualified_note() {
            let _ = write!(o, " {}", md(&note));
        }
        o.push_str(" |");
        for c in COLUMNS {
            let _ = write!(o, " {} |", c.cell(r).0);
        }
        o.push('\n');
    }
    if let [a, b @ Row { ab: Some(s), .. }] = rows {
        ab::markdown(&mut o, s, a, b);
    }
    let _ = write!(o, "\n{}\n", how_to_read());
    o
}

const SORT_SCRIPT: &str = r#"
document.querySelectorAll("table.sortable th").forEach(function (th, col) {
  th.addEventListener("click", function () {
    var tbody = th.closest("table").tBodies[0];
    var asc = th.dataset.dir !== "asc";
    th.closest("tr").querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
    th.dataset.dir = asc ? "asc" : "desc";
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return asc ? c : -c;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  });
});
document.body.dataset.ready = "1";
"#;

/// The best value of each column among the runs not disqualified (`None`
/// for an unranked column).
fn best(rows: &[Row]) -> Vec<Option<f64>> {
    COLUMNS
        .iter()
        .map(|c| {
            let vals = rows
                .iter()
                .filter(|r| c.ranked && !r.disqualified())
                .filter_map(|r| (c.get)(r));
            if c.higher_is_better {
                vals.reduce(f64::max)
            } else {
                vals.reduce(f64::min)
            }
        })
        .collect()
}

/// The product cell: its name (linked to its report card) and why it is
/// disqualified.
fn product_cell(o: &mut String, r: &Row) {
    let _ = write!(o, "<td data-v=\"{}\">", esc(&r.label));
    match &r.report {
        Some(p) => {
            let _ = write!(
                o,
                "<a href=\"{}\">{}</a>",
                esc(&href(p)),
                esc(&r.display_name())
            );
        }
        None => o.push_str(&esc(&r.display_name())),
    }
    if let Some(note) = r.disqualified_note() {
        let _ = write!(o, " {}", esc(&note));
    }
    o.push_str("</td>");
}

/// The HTML summary page.
pub fn html(rows: &[Row]) -> Result<String, ReportError> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>cacheoff executive summary</title><style>{}
th{{cursor:pointer;user-select:none;white-space:normal;vertical-align:bottom}}th[data-dir=asc]::after{{content:\" \\25B2\"}}th[data-dir=desc]::after{{content:\" \\25BC\"}}td.best{{color:#0b7a3b;font-weight:600}}tr.disqualified td{{color:#888;text-decoration:line-through}}tr.disqualified td:first-child{{text-decoration:none;color:#b00}}</style></head><body><main>",
        crate::html::STYLE
    );
    o.push_str("<h1>cacheoff executive summary</h1><p class=\"sub\">Click a column heading to sort. Best value per column in green; a product's name links to its report card.</p>");
    o.push_str("<div style=\"overflow-x:auto\"><table class=\"sortable\" id=\"summary\"><thead><tr><th>Product</th>");
    for c in COLUMNS {
        let _ = write!(o, "<th>{}</th>", esc(&c.head()));
    }
    o.push_str("</tr></thead><tbody>");
    let best = best(rows);
    for r in rows {
        let _ = write!(
            o,
            "<tr{}>",
            if r.disqualified() {
                " class=\"disqualified\""
            } else {
                ""
            }
        );
        product_cell(&mut o, r);
        for (c, b) in COLUMNS.iter().zip(&best) {
            let v = (c.get)(r);
            let class = if rows.len() > 1 && !r.disqualified() && v.is_some() && v == *b {
                " class=\"best\""
            } else {
                ""
            };
            let (text, verdict) = c.cell(r);
            let text = match verdict {
                Some(true) => format!("<span class=\"pass\">{}</span>", esc(&text)),
                Some(false) => format!("<span class=\"fail\">{}</span>", esc(&text)),
                None => esc(&text),
            };
            let _ = write!(
                o,
                "<td{class} data-v=\"{}\">{text}</td>",
                v.map_or(String::new(), |v| v.to_string()),
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    if let [a, b @ Row { ab: Some(s), .. }] = rows {
        ab::html(&mut o, s, a, b);
    }
    let _ = write!(
        o,
        "<h2>How (not) to read this</h2><p class=\"note\">{}</p><h2>Per measure</h2>",
        esc(&how_to_read())
    );
    for c in COLUMNS.iter().filter(|c| c.ranked) {
        if rows.iter().all(|r| (c.get)(r).is_none()) {
            continue;
        }
        let chart = BarChart {
            title: c.head(),
            y_label: c.head(),
            bars: rows
                .iter()
                .map(|r| (r.display_name(), (c.get)(r).unwrap_or(0.0).max(0.0)))
                .collect(),
        };
        let svg = chart.svg((960, 260))?;
        let title = format!(
            "{}{}",
            c.head(),
            if c.higher_is_better {
                " (higher is better)"
            } else {
                " (lower is better)"
            }
        );
        crate::html::figure(
            &mut o,
            &title,
            chart.points(),
            crate::html::Marks::Bars,
            &svg,
        );
    }
    let _ = write!(o, "</main><script>{SORT_SCRIPT}</script></body></html>");
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::sample::row;
    use crate::compare::Downtime;
    use cacheoff_rundir::lineup::Msl;
    use std::path::PathBuf;

    /// The Markdown table's cells of the row whose first cell starts with
    /// `start`, by heading.
    fn md_cells(md: &str, start: &str) -> Vec<(String, String)> {
        let line = |start: &str| -> Vec<String> {
            let l = md.lines().find(|l| l.starts_with(start)).unwrap();
            l.split(" | ")
                .map(|c| c.trim_matches(['|', ' ']).to_string())
                .collect()
        };
        line("| Product").into_iter().zip(line(start)).collect()
    }

    fn md_cell<'a>(cells: &'a [(String, String)], head: &str) -> &'a str {
        &cells.iter().find(|(h, _)| h == head).unwrap().1
    }

    #[test]
    fn each_response_time_shows_both_clocks_side_by_side() {
        let heads: Vec<String> = COLUMNS.iter().map(Column::head).collect();
        for what in [
            "Hit time, ms",
            "All, ms",
            "Miss time, ms",
            "Time savings, %",
        ] {
            let at = heads.iter().position(|h| h.starts_with(what)).unwrap();
            assert_eq!(
                heads[at..at + 2],
                [
                    format!("{what}, intended start"),
                    format!("{what}, Polygraph clock")
                ]
            );
        }
        let md = markdown(&[row("box", 40.0, 24.0)]);
        let cells = md_cells(&md, "| box");
        let cell = |h: &str| md_cell(&cells, h);
        assert_eq!(cell("Product"), "box (forward)");
        assert_eq!(cell("All, ms, intended start"), "40.0");
        assert_eq!(cell("All, ms, Polygraph clock"), "24.0");
        assert_eq!(cell("Miss time, ms, Polygraph clock"), "48.0");
        assert_eq!(cell("Time savings, %, intended start"), "4.0");
        assert_eq!(cell("DHR, %"), "40.0");
        assert_eq!(cell("DHR offered, %"), "55.0");
        for c in RtClock::ALL {
            assert!(md.contains(c.description()), "{md}");
        }
    }

    #[test]
    fn what_the_product_spent_shows_for_a_watched_run_only() {
        let spent = crate::html::sample::run(true, false).resources().unwrap();
        let watched = Row {
            label: "Watched".into(),
            resources: Some(spent.clone()),
            ..row("w", 40.0, 24.0)
        };
        let rows = [watched, row("plain", 40.0, 24.0)];
        let md = markdown(&rows);
        let (w, p) = (md_cells(&md, "| Watched"), md_cells(&md, "| plain"));
        let opt = |v: Option<f64>, d| cell(Some(v.unwrap()), d);
        for (head, text) in [
            ("Req/s per core", opt(spent.requests_per_core, 1)),
            ("Cores used", cell(Some(spent.cores_used), 2)),
            ("CPU ms per 1k req", opt(spent.cpu_ms_per_1k_xacts, 1)),
            ("CPU ms per 1k hits", "2000.0".into()),
            ("CPU ms per 1k misses", "8000.0".into()),
            ("Memory per cached byte", opt(spent.mem_per_cached_byte, 2)),
            ("Write amplification", opt(spent.write_amplification, 2)),
        ] {
            assert_eq!(md_cell(&w, head), text, "{head}");
            assert_eq!(md_cell(&p, head), "-", "{head}");
        }
        // Ranked: the watched run is best, and gets a chart.
        let page = html(&rows).unwrap();
        assert!(page.contains(&format!(
            "class=\"best\" data-v=\"{}\"",
            spent.write_amplification.unwrap()
        )));
        assert!(page.contains("Write amplification (lower is better)"));
    }

    #[test]
    fn downtime_msl_and_the_report_card_link_show() {
        let precise = Row {
            label: "Squid".into(),
            version: Some("5.7".into()),
            report: Some(PathBuf::from("squid-forward/report.html")),
            downtime: Some(Downtime {
                ttfm_s: Some(3.12),
                ttfh_s: Some(6.25),
                first_conn_s: Some(1.85),
                precise: true,
            }),
            msl: Some(Msl {
                time_wait_s: Some(60.1),
                pass: Some(true),
            }),
            ..row("squid", 40.0, 24.0)
        };
        let mut failed = Row {
            label: "Fast".into(),
            downtime: Some(Downtime {
                ttfm_s: Some(5.0),
                ttfh_s: None,
                first_conn_s: Some(5.0),
                precise: false,
            }),
            msl: Some(Msl {
                time_wait_s: Some(0.1),
                pass: None,
            }),
            ..row("fast", 30.0, 20.0)
        };
        failed.disqualified = failed.check_rules();
        let rows = [precise, failed];
        let md = markdown(&rows);
        let squid = md_cells(&md, "| [Squid");
        let cell = |h: &str| md_cell(&squid, h);
        assert_eq!(
            cell("Product"),
            "[Squid 5.7 (forward)](squid-forward/report.html)"
        );
        assert_eq!(
            (cell("TTFM, s"), cell("TTFH, s"), cell("First conn, s")),
            ("3.1", "6.2", "1.9")
        );
        assert_eq!(cell("MSL (TIME-WAIT, s)"), "60.1 pass");
        let fast = md_cells(&md, "| Fast");
        let cell = |h: &str| md_cell(&fast, h);
        assert_eq!(
            cell("Product"),
            "Fast (forward) (disqualified: TIME-WAIT 0.1 s, under 60 s)"
        );
        assert_eq!(
            (cell("TTFM, s"), cell("TTFH, s"), cell("First conn, s")),
            ("\u{2264}5.0", "-", "\u{2264}5.0")
        );
        assert_eq!(cell("MSL (TIME-WAIT, s)"), "0.10 fail");

        let page = html(&rows).unwrap();
        assert!(
            page.contains("<a href=\"squid-forward/report.html\">Squid 5.7 (forward)</a></td>"),
            "{page}"
        );
        assert!(page.contains("<span class=\"pass\">60.1 pass</span>"));
        assert!(page.contains("<span class=\"fail\">0.10 fail</span>"));
        assert!(page.contains("<tr class=\"disqualified\"><td data-v=\"Fast\">Fast (forward) (disqualified: TIME-WAIT 0.1 s, under 60 s)</td>"));
        // The disqualified run is best at nothing; the unranked columns
        // mark no best and draw no chart.
        let squid_row = &page[page.find("data-v=\"Squid\"").unwrap()..];
        let squid_row = &squid_row[..squid_row.find("</tr>").unwrap()];
        assert!(!squid_row.contains("class=\"best\">55"), "{squid_row}");
        assert!(
            squid_row.contains("class=\"best\" data-v=\"3.12\""),
            "{squid_row}"
        );
        assert!(!page.contains("MSL (TIME-WAIT, s) (higher"));
        assert!(!page.contains("DHR offered, % (higher"));
        assert!(page.contains("TTFM, s (lower is better)"));
    }
}
