//! `cacheoff compare`: the cache-off executive summary across runs, one
//! row per product (run), as HTML (sortable table, a bar chart per
//! measure) or Markdown, and as the lineup's `summary.json`
//! ([`crate::lineup`]).
//!
//! `products.toml` (`cacheoff_rundir::lineup::Products`) names each run's
//! product and its other tests; [`rows`] reads every run into a [`Row`],
//! applying the cache-off's rules ([`Row::check_rules`]) and the downtime
//! test ([`Downtime`]); [`markdown`] and [`html`] lay the rows out. Given
//! exactly two runs, the second row also carries B − A for the headline
//! figures against the first, with intervals and verdicts
//! (`cacheoff_rundir::lineup::AbSummary`, judged here).

mod ab;
mod downtime;
mod page;

pub use downtime::{time_till_first, Downtime};
pub use page::{html, markdown};

use crate::{ReportError, Run, RunState};
use cacheoff_resources::Resources;
use cacheoff_rundir::lineup::{AbSummary, Conformance, Msl, Product, Products};
use cacheoff_rundir::relative_path;
use cacheoff_rundir::rules::Facts;
use cacheoff_rundir::Mode;
use cacheoff_stats::{Entry, RtClock};
use std::path::{Path, PathBuf};

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

/// One row of the executive summary: a product's run, its figures over
/// the headline span ([`Run::headline`]) and its other tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The name shown (products file, else the run's `--label`).
    pub label: String,
    /// The product's short name (`squid`), from the products file.
    pub name: Option<String>,
    pub version: Option<String>,
    pub mode: Mode,
    pub run_dir: PathBuf,
    /// The run's report card, when it has one.
    pub report: Option<PathBuf>,
    pub workload: String,
    /// The span the figures come from: the measured phase, or `total`.
    pub phase: String,
    pub state: RunState,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub price: Option<f64>,
    /// Successful transactions over `phase`.
    pub xacts: u64,
    pub throughput: f64,
    /// From the intended start (corrected for coordinated omission).
    pub rt: Times,
    /// From the connection, as Web Polygraph.
    pub rt_polygraph: Times,
    /// Document hit ratio measured, offered and an ideal cache's, percent.
    pub dhr: f64,
    pub dhr_offered: f64,
    pub dhr_ideal: f64,
    pub req_per_kusd: Option<f64>,
    pub hits_per_kusd: Option<f64>,
    /// The downtime-test run, and its figures.
    pub downtime_dir: Option<PathBuf>,
    pub downtime: Option<Downtime>,
    /// Cache size ÷ cachable-miss bytes per hour at peak.
    pub cache_age_h: Option<f64>,
    pub errors: u64,
    pub errors_percent: f64,
    /// Robots spoke HTTPS (through a forward proxy no hit can be seen).
    pub tls: bool,
    /// What the best known policy reaches at the cache's size (a
    /// replay's ceilings), when known.
    pub dhr_reachable: Option<f64>,
    pub msl: Option<Msl>,
    /// The conformance suite's score.
    pub conformance: Option<Conformance>,
    /// What the product spent over the measured phase, when the run
    /// watched it.
    pub resources: Option<Resources>,
    /// On the second of exactly two rows: this run (B) against the first
    /// (A).
    pub ab: Option<AbSummary>,
    /// Why the run is disqualified ([`Row::check_rules`] when built).
    pub disqualified: Vec<String>,
}

impl Row {
    /// The response times on `clock`.
    pub fn times(&self, clock: RtClock) -> &Times {
        match clock {
            RtClock::Intended => &self.rt,
            RtClock::Polygraph => &self.rt_polygraph,
        }
    }

    /// Disqualified for one reason or more.
    pub fn disqualified(&self) -> bool {
        !self.disqualified.is_empty()
    }

    /// What the cache-off's rules look at, from the row.
    pub fn facts(&self) -> Facts {
        Facts {
            mode: self.mode,
            tls: self.tls,
            phase: self.phase.clone(),
            errors_percent: self.errors_percent,
            dhr: self.dhr,
            dhr_offered: self.dhr_offered,
            dhr_reachable: self.dhr_reachable,
            msl: self.msl,
        }
    }

    /// The cache-off's rules (`cacheoff_rundir::rules`, as the report
    /// card and the exit status judge them), applied to the row's
    /// figures: why it is disqualified (empty when it is not).
    pub fn check_rules(&self) -> Vec<String> {
        cacheoff_rundir::rules::disqualified(&self.facts())
    }

    /// The product as shown: label, version and mode
    /// (`Squid 5.7 (forward)`).
    pub fn display_name(&self) -> String {
        let mut s = self.label.clone();
        if let Some(v) = self.version.as_ref().filter(|v| !s.contains(v.as_str())) {
            s = format!("{s} {v}");
        }
        if self.mode != Mode::Direct {
            s = format!("{s} ({})", self.mode.name());
        }
        s
    }

    /// Why the run is disqualified, as shown after its name.
    fn disqualified_note(&self) -> Option<String> {
        self.disqualified()
            .then(|| format!("(disqualified: {})", self.disqualified.join("; ")))
    }
}

fn row(run: &Run, product: Option<&Product>, baseline: Option<&Run>) -> Result<Row, ReportError> {
    let m = &run.manifest;
    let h = run.headline();
    let label = match (product, &m.label) {
        (Some(p), _) => p.label.clone(),
        (None, Some(l)) => l.clone(),
        (None, None) => format!(
            "{} via {}",
            m.workload.name,
            m.proxy.map_or("no proxy".into(), |p| p.to_string())
        ),
    };
    let mode = product.and_then(|p| p.mode).unwrap_or(m.mode());
    let price = product.and_then(|p| p.price).filter(|p| *p > 0.0);
    let hits_per_s = h.rt_ms.hit.count as f64 / h.duration_s.max(1e-9);
    let base = baseline.map(Run::headline);
    let downtime_dir = product.and_then(|p| p.downtime.clone());
    let downtime = match &downtime_dir {
        Some(d) => Some(time_till_first(&cacheoff_rundir::RunDir::open(d)?)),
        None => None,
    };
    let fill_per_h = h.fill_bytes as f64 / h.duration_s.max(1e-9) * 3600.0;
    let cache_age_h = m
        .workload
        .cache_size
        .filter(|_| fill_per_h > 0.0)
        .map(|c| c.0 as f64 / fill_per_h);
    let report = run.dir.join(cacheoff_rundir::REPORT_FILE);
    let mut row = Row {
        label,
        name: product.and_then(|p| p.name.clone()),
        version: product.and_then(|p| p.version.clone()),
        mode,
        run_dir: run.dir.clone(),
        report: report.exists().then_some(report),
        workload: m.workload.name.clone(),
        phase: h.name.clone(),
        state: run.state(),
        started_at: m.started_at.clone(),
        finished_at: m.finished_at.clone(),
        price,
        xacts: h.xacts,
        throughput: h.rate_xps,
        rt: Times::of(&h, RtClock::Intended, base.as_ref()),
        rt_polygraph: Times::of(&h, RtClock::Polygraph, base.as_ref()),
        dhr: h.dhr.measured,
        dhr_offered: h.dhr.offered,
        dhr_ideal: h.dhr.ideal,
        req_per_kusd: price.map(|p| h.rate_xps / (p / 1000.0)),
        hits_per_kusd: price.map(|p| hits_per_s / (p / 1000.0)),
        downtime_dir,
        downtime,
        cache_age_h,
        errors: h.errors.total,
        errors_percent: h.errors.percent,
        tls: m.workload.robots.tls,
        dhr_reachable: cacheoff_rundir::rules::Facts::of(run).dhr_reachable,
        msl: product.and_then(|p| p.msl),
        conformance: product.and_then(|p| p.conformance),
        resources: run.resources(),
        ab: None,
        disqualified: Vec::new(),
    };
    row.disqualified = row.check_rules();
    Ok(row)
}

/// The rows of the executive summary, in the order of `runs`; each run's
/// product is the one `products` names for its directory. With exactly
/// two runs, the second row's `ab` judges it against the first.
pub fn rows(
    runs: &[Run],
    products: &Products,
    baseline: Option<&Run>,
) -> Result<Vec<Row>, ReportError> {
    let mut rows = runs
        .iter()
        .map(|r| row(r, products.find(&r.dir), baseline))
        .collect::<Result<Vec<Row>, ReportError>>()?;
    if let ([a, b], [ra, rb]) = (runs, rows.as_mut_slice()) {
        rb.ab = Some(ab::judge(a, b, &ra.display_name(), &rb.display_name()));
    }
    Ok(rows)
}

/// B against A, when the rows are exactly two.
pub fn ab(rows: &[Row]) -> Option<&AbSummary> {
    rows.iter().find_map(|r| r.ab.as_ref())
}

/// `rows` with their paths (run, report card, downtime run) relative to
/// `dir` where they can be: for a page written into `dir` to link them.
/// Relative paths in `rows` are taken from the working directory.
pub fn relative_to(rows: &[Row], dir: &Path) -> Vec<Row> {
    rows.iter()
        .map(|r| Row {
            run_dir: relative_path(&r.run_dir, dir),
            report: r.report.as_deref().map(|p| relative_path(p, dir)),
            downtime_dir: r.downtime_dir.as_deref().map(|p| relative_path(p, dir)),
            ..r.clone()
        })
        .collect()
}

/// Rows for the tests of the summary and its layouts.
#[cfg(test)]
pub(crate) mod sample {
    use super::*;

    /// A forward proxy's clean run of PolyMix-4 over top2: 100 req/s,
    /// 40% hits (55% offered), `intended_ms` and `polygraph_ms` mean
    /// response times on the two clocks.
    pub fn row(label: &str, intended_ms: f64, polygraph_ms: f64) -> Row {
        let times = |all: f64| Times {
            hit: Some(all / 4.0),
            all,
            miss: Some(all * 2.0),
            savings: Some(all / 10.0),
        };
        Row {
            label: label.into(),
            name: None,
            version: None,
            mode: Mode::Forward,
            run_dir: format!("runs/{label}").into(),
            report: None,
            workload: "polymix-4".into(),
            phase: "top2".into(),
            state: RunState::Complete,
            started_at: "2026-11-22T00:15:30.123Z".into(),
            finished_at: Some("2026-11-22T04:15:30.123Z".into()),
            price: None,
            xacts: 360_000,
            throughput: 100.0,
            rt: times(intended_ms),
            rt_polygraph: times(polygraph_ms),
            dhr: 40.0,
            dhr_offered: 55.0,
            dhr_ideal: 52.0,
            req_per_kusd: None,
            hits_per_kusd: None,
            downtime_dir: None,
            downtime: None,
            cache_age_h: None,
            errors: 0,
            errors_percent: 0.0,
            tls: false,
            dhr_reachable: None,
            msl: None,
            conformance: None,
            resources: None,
            ab: None,
            disqualified: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r` judged again after a change.
    fn judged(mut r: Row) -> Row {
        r.disqualified = r.check_rules();
        r
    }

    #[test]
    fn each_broken_rule_gives_its_reason() {
        let clean = judged(sample::row("box", 40.0, 24.0));
        assert!(!clean.disqualified(), "{:?}", clean.disqualified);

        let errors = judged(Row {
            errors: 3600,
            errors_percent: 3.5,
            ..clean.clone()
        });
        assert_eq!(errors.disqualified, ["3.5% errors, more than 3%"]);
        // Exactly 3% is allowed.
        assert!(!judged(Row {
            errors_percent: 3.0,
            ..clean.clone()
        })
        .disqualified());

        let low_dhr = judged(Row {
            dhr: 20.0,
            ..clean.clone()
        });
        assert_eq!(low_dhr.disqualified, ["DHR 20% over top2, under 25%"]);
        // Only where the rule applies: not a run without a proxy, nor one
        // whose workload offered under 25%, nor HTTPS through a forward
        // proxy.
        for exempt in [
            Row {
                mode: Mode::Direct,
                ..low_dhr.clone()
            },
            Row {
                dhr_offered: 24.0,
                ..low_dhr.clone()
            },
            Row {
                tls: true,
                ..low_dhr.clone()
            },
        ] {
            assert!(!judged(exempt).disqualified());
        }

        let msl_fail = judged(Row {
            msl: Some(Msl {
                time_wait_s: Some(0.1),
                pass: None,
            }),
            ..clean.clone()
        });
        assert_eq!(msl_fail.disqualified, ["TIME-WAIT 0.1 s, under 60 s"]);
        let told_to_fail = judged(Row {
            msl: Some(Msl {
                time_wait_s: None,
                pass: Some(false),
            }),
            ..clean.clone()
        });
        assert_eq!(told_to_fail.disqualified, ["failed the MSL test"]);
        for msl in [
            Msl {
                time_wait_s: Some(60.1),
                pass: Some(true),
            },
            Msl {
                time_wait_s: Some(60.0),
                pass: None,
            },
            Msl::default(),
        ] {
            let r = judged(Row {
                msl: Some(msl),
                ..clean.clone()
            });
            assert!(!r.disqualified(), "{msl:?}");
        }

        let all = judged(Row {
            msl: msl_fail.msl,
            ..Row {
                dhr: 20.0,
                ..errors.clone()
            }
        });
        assert_eq!(all.disqualified.len(), 3);
        assert_eq!(
            all.disqualified_note().unwrap(),
            "(disqualified: 3.5% errors, more than 3%; DHR 20% over top2, under 25%; TIME-WAIT 0.1 s, under 60 s)"
        );
    }

    #[test]
    fn the_product_shows_its_version_and_mode() {
        let r = Row {
            label: "Squid".into(),
            version: Some("5.7".into()),
            ..sample::row("squid", 1.0, 1.0)
        };
        assert_eq!(r.display_name(), "Squid 5.7 (forward)");
        let r = Row {
            label: "Varnish 7.1".into(),
            version: Some("7.1".into()),
            mode: Mode::Reverse,
            ..r
        };
        assert_eq!(r.display_name(), "Varnish 7.1 (reverse)");
        let r = Row {
            mode: Mode::Direct,
            version: None,
            label: "simple via no proxy".into(),
            ..r
        };
        assert_eq!(r.display_name(), "simple via no proxy");
    }

    #[test]
    fn paths_become_relative_to_the_page() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let r = Row {
            run_dir: out.join("squid-forward"),
            report: Some(out.join("squid-forward/report.html")),
            downtime_dir: Some(d.path().join("elsewhere/down")),
            ..sample::row("squid", 1.0, 1.0)
        };
        let rel = &relative_to(&[r], &out)[0];
        assert_eq!(rel.run_dir, Path::new("squid-forward"));
        assert_eq!(
            rel.report.as_deref(),
            Some(Path::new("squid-forward/report.html"))
        );
        assert_eq!(
            rel.downtime_dir.as_deref(),
            Some(Path::new("../elsewhere/down"))
        );
    }
}
