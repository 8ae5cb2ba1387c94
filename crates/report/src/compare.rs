//! `cacheoff compare`: the cache-off executive summary across runs, one
//! row per product (run), as HTML (sortable table, a bar chart per
//! measure) or Markdown.

use crate::charts::BarChart;
use crate::html::esc;
use crate::{ReportError, Run};
use cacheoff_stats::{Entry, RtClock};
use serde::Deserialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `products.toml`: what the runs measured and what it cost.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Products {
    #[serde(default)]
    pub product: Vec<Product>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    /// The product's run directory (relative to the products file).
    pub run: PathBuf,
    pub label: String,
    /// Total price (devices and network gear), in dollars.
    pub price: Option<f64>,
    /// The product's downtime-test run, for TTFM and TTFH.
    pub downtime: Option<PathBuf>,
}

impl Products {
    pub fn load(path: &Path) -> Result<Products, ReportError> {
        let text = std::fs::read_to_string(path).map_err(|e| ReportError::Products {
            path: path.into(),
            why: e.to_string(),
        })?;
        let mut p: Products = toml::from_str(&text).map_err(|e| ReportError::Products {
            path: path.into(),
            why: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for prod in &mut p.product {
            prod.run = base.join(&prod.run);
            prod.downtime = prod.downtime.as_ref().map(|d| base.join(d));
        }
        Ok(p)
    }

    fn find(&self, dir: &Path) -> Option<&Product> {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        let want = canon(dir)?;
        self.product
            .iter()
            .find(|p| canon(&p.run) == Some(want.clone()))
    }
}

/// Mean response times of a run on one clock, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Times {
    pub hit: Option<f64>,
    pub all: f64,
    pub miss: Option<f64>,
    /// (baseline mean − this mean) ÷ baseline mean, in percent.
    pub savings: Option<f64>,
}

impl Times {
    /// `h`'s times on `clock`, with savings against `baseline`'s.
    fn of(h: &Entry, clock: RtClock, baseline: Option<&Entry>) -> Times {
        let rt = h.rt(clock);
        let some_if = |count: u64, v: f64| (count > 0).then_some(v);
        Times {
            hit: some_if(rt.hit.count, rt.hit.mean),
            all: rt.all.mean,
            miss: some_if(rt.miss.count, rt.miss.mean),
            savings: baseline.map(|b| {
                let base = b.rt(clock).all.mean;
                if base > 0.0 {
                    (base - rt.all.mean) / base * 100.0
                } else {
                    0.0
                }
            }),
        }
    }
}

/// One row of the executive summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub price: Option<f64>,
    pub throughput: f64,
    /// From the intended start (corrected for coordinated omission).
    pub rt: Times,
    /// From the connection, as Web Polygraph.
    pub rt_polygraph: Times,
    pub dhr: f64,
    pub req_per_kusd: Option<f64>,
    pub hits_per_kusd: Option<f64>,
    /// Time till first miss and first hit after power returns (downtime).
    pub ttfm_s: Option<f64>,
    pub ttfh_s: Option<f64>,
    /// Cache size ÷ cachable-miss bytes per hour at peak.
    pub cache_age_h: Option<f64>,
    pub errors_percent: f64,
}

impl Row {
    /// The response times on `clock`.
    pub fn times(&self, clock: RtClock) -> &Times {
        match clock {
            RtClock::Intended => &self.rt,
            RtClock::Polygraph => &self.rt_polygraph,
        }
    }

    /// The cache-off's rule: more than 3% errors disqualifies a run.
    pub fn disqualified(&self) -> bool {
        self.errors_percent > crate::html::MAX_ERROR_PERCENT
    }

    /// The product's name, marked when its run is disqualified.
    fn shown_label(&self) -> String {
        if self.disqualified() {
            format!(
                "{} (disqualified: {:.1}% errors, more than {}%)",
                self.label,
                self.errors_percent,
                crate::html::MAX_ERROR_PERCENT
            )
        } else {
            self.label.clone()
        }
    }
}

/// TTFM and TTFH of a downtime run: from the end of its dark phase to the
/// end of the first interval with a miss (a hit). Interval precision (5 s).
pub fn time_till_first(run: &Run) -> (Option<f64>, Option<f64>) {
    let dark: Vec<&str> = run
        .manifest
        .workload
        .phases
        .iter()
        .filter(|p| p.dark)
        .map(|p| p.name.as_str())
        .collect();
    let Some(dark_end) = run
        .intervals
        .iter()
        .filter(|r| dark.contains(&r.phase.as_str()))
        .map(|r| r.end_s)
        .reduce(f64::max)
    else {
        return (None, None);
    };
    let after = || {
        run.intervals
            .iter()
            .filter(move |r| r.start_s >= dark_end - 1e-6)
    };
    let first = |hits: bool| {
        after()
            .find(|r| {
                let l = &r.stats.rt_ms;
                if hits {
                    l.hit.count > 0
                } else {
                    l.miss.count > 0
                }
            })
            .map(|r| r.end_s - dark_end)
    };
    (first(false), first(true))
}

fn row(run: &Run, product: Option<&Product>, baseline: Option<&Run>) -> Result<Row, ReportError> {
    let h = run.headline();
    let label = match (product, &run.manifest.label) {
        (Some(p), _) => p.label.clone(),
        (None, Some(l)) => l.clone(),
        (None, None) => format!(
            "{} via {}",
            run.manifest.workload.name,
            run.manifest
                .proxy
                .map_or("no proxy".into(), |p| p.to_string())
        ),
    };
    let price = product.and_then(|p| p.price).filter(|p| *p > 0.0);
    let hits_per_s = h.rt_ms.hit.count as f64 / h.duration_s.max(1e-9);
    let base = baseline.map(Run::headline);
    let (ttfm_s, ttfh_s) = match product.and_then(|p| p.downtime.as_ref()) {
        Some(d) => time_till_first(&cacheoff_rundir::RunDir::open(d)?),
        None => (None, None),
    };
    let fill_per_h = h.fill_bytes as f64 / h.duration_s.max(1e-9) * 3600.0;
    let cache_age_h = run
        .manifest
        .workload
        .cache_size
        .filter(|_| fill_per_h > 0.0)
        .map(|c| c.0 as f64 / fill_per_h);
    Ok(Row {
        label,
        price,
        throughput: h.rate_xps,
        rt: Times::of(&h, RtClock::Intended, base.as_ref()),
        rt_polygraph: Times::of(&h, RtClock::Polygraph, base.as_ref()),
        dhr: h.dhr.measured,
        req_per_kusd: price.map(|p| h.rate_xps / (p / 1000.0)),
        hits_per_kusd: price.map(|p| hits_per_s / (p / 1000.0)),
        ttfm_s,
        ttfh_s,
        cache_age_h,
        errors_percent: h.errors.percent,
    })
}

/// The rows of the executive summary, in the order of `runs`.
pub fn rows(
    runs: &[Run],
    products: &Products,
    baseline: Option<&Run>,
) -> Result<Vec<Row>, ReportError> {
    runs.iter()
        .map(|r| row(r, products.find(&r.dir), baseline))
        .collect()
}

/// A column: heading (with its unit), the clock a response time reads,
/// value, decimals shown, and whether more is better.
struct Column {
    head: &'static str,
    clock: Option<RtClock>,
    get: fn(&Row) -> Option<f64>,
    digits: usize,
    higher_is_better: bool,
}

impl Column {
    /// The heading, naming the clock of a response time.
    fn head(&self) -> String {
        match self.clock {
            Some(c) => format!("{}, {}", self.head, c.short_label()),
            None => self.head.into(),
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
    on(Intended, more("Time savings, %", 1, |r| r.rt.savings)),
    on(
        Polygraph,
        more("Time savings, %", 1, |r| r.rt_polygraph.savings),
    ),
    more("Req/s per $1,000", 1, |r| r.req_per_kusd),
    more("Hits/s per $1,000", 1, |r| r.hits_per_kusd),
    less("TTFM, s", 0, |r| r.ttfm_s),
    less("TTFH, s", 0, |r| r.ttfh_s),
    more("Cache age, h", 2, |r| r.cache_age_h),
    less("Errors, %", 2, |r| Some(r.errors_percent)),
];

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
        "Each row is one product's run, measured over its last plateau. Response times are shown on two clocks: {}; {}, which leaves out waits for one of the robot's connections and compares with results published with Web Polygraph. Time savings compare the mean response time, on each clock, with a run without a proxy. A cache-off compares products under the same workload, rate and duration; rows from different workloads or peak rates do not compare. Throughput is what the product was offered and kept up with, not its limit. Hit ratio depends on cache size, so read it with the cache age. Prices make price/performance, not quality: a cheap box with errors is not a bargain, and a run with more than 3% errors is disqualified.",
        clock(RtClock::Intended),
        clock(RtClock::Polygraph),
    )
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
    for r in rows {
        let _ = write!(o, "| {} |", r.shown_label().replace('|', "\\|"));
        for c in COLUMNS {
            let _ = write!(o, " {} |", cell((c.get)(r), c.digits));
        }
        o.push('\n');
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

/// The HTML summary page.
pub fn html(rows: &[Row]) -> Result<String, ReportError> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>cacheoff executive summary</title><style>{}
th{{cursor:pointer;user-select:none;white-space:normal;vertical-align:bottom}}th[data-dir=asc]::after{{content:\" \\25B2\"}}th[data-dir=desc]::after{{content:\" \\25BC\"}}td.best{{color:#0b7a3b;font-weight:600}}tr.disqualified td{{color:#888;text-decoration:line-through}}tr.disqualified td:first-child{{text-decoration:none;color:#b00}}</style></head><body><main>",
        crate::html::STYLE
    );
    o.push_str("<h1>cacheoff executive summary</h1><p class=\"sub\">Click a column heading to sort. Best value per column in green.</p>");
    o.push_str("<div style=\"overflow-x:auto\"><table class=\"sortable\" id=\"summary\"><thead><tr><th>Product</th>");
    for c in COLUMNS {
        let _ = write!(o, "<th>{}</th>", esc(&c.head()));
    }
    o.push_str("</tr></thead><tbody>");
    let best: Vec<Option<f64>> = COLUMNS
        .iter()
        .map(|c| {
            // A disqualified run is never the best at anything.
            let vals = rows
                .iter()
                .filter(|r| !r.disqualified())
                .filter_map(|r| (c.get)(r));
            if c.higher_is_better {
                vals.reduce(f64::max)
            } else {
                vals.reduce(f64::min)
            }
        })
        .collect();
    for r in rows {
        let _ = write!(
            o,
            "<tr{}><td data-v=\"{}\">{}</td>",
            if r.disqualified() {
                " class=\"disqualified\""
            } else {
                ""
            },
            esc(&r.label),
            esc(&r.shown_label())
        );
        for (c, b) in COLUMNS.iter().zip(&best) {
            let v = (c.get)(r);
            let class = if rows.len() > 1 && !r.disqualified() && v.is_some() && v == *b {
                " class=\"best\""
            } else {
                ""
            };
            let _ = write!(
                o,
                "<td{class} data-v=\"{}\">{}</td>",
                v.map_or(String::new(), |v| v.to_string()),
                cell(v, c.digits)
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    let _ = write!(
        o,
        "<h2>How (not) to read this</h2><p class=\"note\">{}</p><h2>Per measure</h2>",
        esc(&how_to_read())
    );
    for c in COLUMNS {
        if rows.iter().all(|r| (c.get)(r).is_none()) {
            continue;
        }
        let chart = BarChart {
            title: c.head(),
            y_label: c.head(),
            bars: rows
                .iter()
                .map(|r| (r.label.clone(), (c.get)(r).unwrap_or(0.0).max(0.0)))
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

    fn row(label: &str, intended_ms: f64, polygraph_ms: f64) -> Row {
        let times = |all: f64| Times {
            hit: Some(all / 4.0),
            all,
            miss: Some(all * 2.0),
            savings: Some(all / 10.0),
        };
        Row {
            label: label.into(),
            price: None,
            throughput: 100.0,
            rt: times(intended_ms),
            rt_polygraph: times(polygraph_ms),
            dhr: 40.0,
            req_per_kusd: None,
            hits_per_kusd: None,
            ttfm_s: None,
            ttfh_s: None,
            cache_age_h: None,
            errors_percent: 0.0,
        }
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
        let line = |start: &str| -> Vec<String> {
            let l = md.lines().find(|l| l.starts_with(start)).unwrap();
            l.split('|').map(|c| c.trim().to_string()).collect()
        };
        let (head, cells) = (line("| Product"), line("| box"));
        let cell = |h: &str| &cells[head.iter().position(|c| c == h).unwrap()];
        assert_eq!(cell("All, ms, intended start"), "40.0");
        assert_eq!(cell("All, ms, Polygraph clock"), "24.0");
        assert_eq!(cell("Miss time, ms, Polygraph clock"), "48.0");
        assert_eq!(cell("Time savings, %, intended start"), "4.0");
        for c in RtClock::ALL {
            assert!(md.contains(c.description()), "{md}");
        }
    }
}
