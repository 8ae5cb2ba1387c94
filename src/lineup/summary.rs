//! What a lineup writes after each contender: `products.toml` (the
//! `compare` products file, so the summary re-renders from the run
//! directories), `summary.json` (docs/lineup.md), `summary.html` and
//! `summary.md` (the executive summary); and the verdict read back. The
//! files' formats are `cacheoff_rundir::lineup`'s, the rows and pages
//! `cacheoff_report`'s: here, which contenders finished and how.

use super::file::Lineup;
use super::{Contender, Finished};
use anyhow::Context;
use cacheoff_products::Mode;
use cacheoff_report::compare::{self, Row};
use cacheoff_rundir::lineup::{
    LineupSummary, Msl, Product, ProductSummary, Products, PRODUCTS_FILE, SUMMARY_FILE,
};
use cacheoff_rundir::{Run, RunDir};
use std::path::{Path, PathBuf};

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
    products.write(&products_file)?;
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
    let mut summary = cacheoff_report::lineup::summary(&rows, first_base);
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
        conformance: f.conformance,
        ..ProductSummary::not_run(
            c.spec.name.clone(),
            rundir_mode(c.mode),
            c.spec.title.clone(),
            f.failures.clone(),
        )
    }
}

/// The lineup's verdict: a line per contender, and whether any failed.
pub struct Verdict {
    pub lines: Vec<String>,
    pub failed: bool,
}

pub fn verdict(out: &Path) -> anyhow::Result<Verdict> {
    let s = LineupSummary::read(&out.join(SUMMARY_FILE))?;
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
