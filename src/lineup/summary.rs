//! What a lineup writes after each contender: `products.toml` (the
//! `compare` products file, so the summary re-renders from the run
//! directories), `summary.json` (docs/lineup.md), `summary.html` and
//! `summary.md` (the executive summary); and the verdict read back.

use super::file::Lineup;
use super::{Contender, Finished};
use anyhow::Context;
use cacheoff_products::Mode;
use cacheoff_report::compare::{self, Msl, Product, Products, Row};
use cacheoff_report::lineup::{DowntimeSummary, LineupSummary, MslSummary, ProductSummary};
use cacheoff_rundir::{Run, RunDir};
use std::path::{Path, PathBuf};

pub const SUMMARY_FILE: &str = "summary.json";
pub const PRODUCTS_FILE: &str = "products.toml";

fn rundir_mode(m: Mode) -> cacheoff_rundir::Mode {
    match m {
        Mode::Forward => cacheoff_rundir::Mode::Forward,
        Mode::Reverse => cacheoff_rundir::Mode::Reverse,
    }
}

/// Paths relative to the lineup's directory, where they lead there.
fn rel(p: &Path, out: &Path) -> PathBuf {
    p.strip_prefix(out)
        .map_or_else(|_| p.to_path_buf(), Path::to_path_buf)
}

/// Writes the lineup's files for what has finished so far.
pub fn write(
    _l: &Lineup,
    all: &[Contender],
    finished: &[Finished],
    baselines: &[(Mode, PathBuf)],
    out: &Path,
) -> anyhow::Result<()> {
    let mut products = Products::default();
    for f in finished {
        let Some(c) = all.iter().find(|c| c.key() == f.key) else {
            continue;
        };
        let Some(run) = &f.run_dir else { continue };
        products.product.push(Product {
            run: rel(run, out),
            label: c.spec.title.clone(),
            name: Some(c.spec.name.clone()),
            version: f.version.clone(),
            mode: Some(rundir_mode(c.mode)),
            price: c.price_usd.or(Some(c.spec.price_usd)),
            downtime: f.downtime_dir.as_deref().map(|d| rel(d, out)),
            msl: f.msl.map(|m| Msl {
                time_wait_s: Some(m.time_wait_s),
                pass: Some(m.pass),
            }),
            conformance: f.conformance,
        });
    }
    let products_file = out.join(PRODUCTS_FILE);
    std::fs::write(&products_file, products.to_toml())
        .with_context(|| format!("cannot write {}", products_file.display()))?;
    // Read back as `compare` reads it: one source of the rows.
    let products = Products::load(&products_file)?;
    let open = |p: &Path| RunDir::open(p).with_context(|| format!("cannot read {}", p.display()));
    let baseline_runs: Vec<(Mode, Run)> = baselines
        .iter()
        .map(|(m, d)| Ok((*m, open(d)?)))
        .collect::<anyhow::Result<_>>()?;
    let mut rows: Vec<Row> = Vec::new();
    for p in &products.product {
        let run = open(&p.run)?;
        let mode = match run.manifest.mode() {
            cacheoff_rundir::Mode::Reverse => Mode::Reverse,
            _ => Mode::Forward,
        };
        // Time savings against the baseline of the same workload.
        let base = baseline_runs
            .iter()
            .find(|(m, _)| *m == mode)
            .map(|(_, r)| r);
        rows.extend(compare::rows(&[run], &products, base)?);
    }
    // A step that failed disqualifies its product.
    for (row, p) in rows.iter_mut().zip(&products.product) {
        let key = format!(
            "{}-{}",
            p.name.as_deref().unwrap_or_default(),
            row.mode.name()
        );
        if let Some(f) = finished.iter().find(|f| f.key == key) {
            row.disqualified.extend(f.failures.iter().cloned());
        }
    }
    let first_base = baseline_runs.first().map(|(_, r)| r);
    let mut summary = LineupSummary::new(&rows, first_base);
    // Contenders that never ran are listed with why.
    for f in finished.iter().filter(|f| f.run_dir.is_none()) {
        let Some(c) = all.iter().find(|c| c.key() == f.key) else {
            continue;
        };
        summary.products.push(never_ran(c, f));
    }
    summary.write(&out.join(SUMMARY_FILE))?;
    let page_rows = compare::relative_to(&rows, out);
    std::fs::write(out.join("summary.md"), compare::markdown(&page_rows))?;
    std::fs::write(out.join("summary.html"), compare::html(&page_rows)?)?;
    Ok(())
}

fn never_ran(c: &Contender, f: &Finished) -> ProductSummary {
    ProductSummary {
        name: c.spec.name.clone(),
        mode: rundir_mode(c.mode),
        run_dir: String::new(),
        xacts: 0,
        rate_xps: 0.0,
        dhr_measured: 0.0,
        dhr_offered: 0.0,
        rt_ms_hit: None,
        rt_ms_miss: None,
        rt_ms_all: 0.0,
        errors: 0,
        downtime: DowntimeSummary::default(),
        msl: MslSummary::default(),
        conformance: f.conformance,
        disqualified: if f.failures.is_empty() {
            vec!["did not run".into()]
        } else {
            f.failures.clone()
        },
        label: c.spec.title.clone(),
        version: None,
        workload: String::new(),
        phase: String::new(),
        state: "not_run".into(),
        started_at: String::new(),
        finished_at: None,
        report: None,
        downtime_dir: None,
        dhr_ideal: 0.0,
        rt_polygraph_ms_hit: None,
        rt_polygraph_ms_miss: None,
        rt_polygraph_ms_all: 0.0,
        savings_percent: None,
        savings_polygraph_percent: None,
        errors_percent: 0.0,
        price_usd: None,
        req_per_kusd: None,
        hits_per_kusd: None,
        cache_age_h: None,
        resources: None,
    }
}

/// The lineup's verdict: a line per contender, and whether any failed.
pub struct Verdict {
    pub lines: Vec<String>,
    pub failed: bool,
}

pub fn verdict(out: &Path) -> anyhow::Result<Verdict> {
    let s = LineupSummary::load(&out.join(SUMMARY_FILE))?;
    let mut v = Verdict {
        lines: Vec::new(),
        failed: false,
    };
    for p in &s.products {
        let name = format!("{} ({})", p.name, p.mode.name());
        if p.disqualified.is_empty() {
            v.lines.push(format!("  {name}: passed"));
        } else {
            v.failed = true;
            v.lines.push(format!(
                "  {name}: DISQUALIFIED: {}",
                p.disqualified.join("; ")
            ));
        }
    }
    Ok(v)
}
