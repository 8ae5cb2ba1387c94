//! `cacheoff report`: the report card and the exports of a run directory.

use crate::cli::{CompareArgs, ReportArgs, ReportFormat};
use crate::Failure;
use anyhow::Context;
use cacheoff_report::compare;
use cacheoff_report::{export, html};
use cacheoff_rundir::lineup::Products;
use cacheoff_rundir::{peak, spe, Run, RunDir, RunDirError};
use std::path::{Path, PathBuf};

fn load(dir: &Path) -> Result<Run, Failure> {
    RunDir::open(dir).map_err(|e| match e {
        RunDirError::NotARun(_) => Failure::usage(e),
        e => Failure::run(e),
    })
}

/// `cacheoff report` of a Multiplier's run directory: its page, or its
/// summary (folded from the intervals of a killed run) as JSON.
fn spe_report(a: &ReportArgs) -> Result<(), Failure> {
    let run = spe::open(&a.run).map_err(Failure::run)?;
    let text = match a.format {
        ReportFormat::Html => cacheoff_report::spe::render(&run).map_err(Failure::run)?,
        ReportFormat::Json => serde_json::to_string_pretty(&run.summary)
            .context("cannot write the summary as JSON")
            .map_err(Failure::run)?,
        ReportFormat::Csv => {
            return Err(Failure::usage(anyhow::anyhow!(
                "{}: a Multiplier's run has no CSV export (use --format json)",
                a.run.display()
            )))
        }
    };
    match (&a.out, a.format) {
        (Some(p), _) => {
            write(p, &text)?;
            println!("{}", p.display());
        }
        (None, ReportFormat::Html) => {
            let path = cacheoff_report::spe::write(&run).map_err(Failure::run)?;
            println!("{}", path.display());
        }
        (None, _) => println!("{text}"),
    }
    Ok(())
}

/// `cacheoff report` of a peak directory: its page (the knee chart), or
/// its `peak.json`.
fn peak_report(a: &ReportArgs) -> Result<(), Failure> {
    let p = peak::Peak::read(&a.run).map_err(Failure::run)?;
    let text = match a.format {
        ReportFormat::Html => cacheoff_report::peak::render(&p, &a.run).map_err(Failure::run)?,
        ReportFormat::Json => serde_json::to_string_pretty(&p)
            .context("cannot write peak.json")
            .map_err(Failure::run)?,
        ReportFormat::Csv => {
            return Err(Failure::usage(anyhow::anyhow!(
                "{}: a peak search has no CSV export (use --format json, or report a step's run)",
                a.run.display()
            )))
        }
    };
    match (&a.out, a.format) {
        (Some(p), _) => {
            write(p, &text)?;
            println!("{}", p.display());
        }
        (None, ReportFormat::Html) => {
            let path = cacheoff_report::peak::write(&a.run).map_err(Failure::run)?;
            println!("{}", path.display());
        }
        (None, _) => println!("{text}"),
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::run)
}

pub fn run(a: &ReportArgs) -> Result<(), Failure> {
    if spe::is_spe(&a.run) {
        return spe_report(a);
    }
    if peak::is_peak(&a.run) {
        return peak_report(a);
    }
    let run = load(&a.run)?;
    match a.format {
        ReportFormat::Html => {
            let path = match &a.out {
                Some(p) => {
                    let html = html::render(&run).map_err(Failure::run)?;
                    write(p, &html)?;
                    p.clone()
                }
                None => html::write(&run).map_err(Failure::run)?,
            };
            println!("{}", path.display());
        }
        ReportFormat::Json => {
            let json = export::json(&run);
            match &a.out {
                Some(p) => {
                    write(p, &json)?;
                    println!("{}", p.display());
                }
                None => println!("{json}"),
            }
        }
        ReportFormat::Csv => {
            let dir = a.out.clone().unwrap_or_else(|| a.run.clone());
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))
                .map_err(Failure::run)?;
            for (name, text) in [
                ("intervals.csv", export::intervals_csv(&run)),
                ("phases.csv", export::phases_csv(&run)),
            ] {
                let p = dir.join(name);
                write(&p, &text)?;
                println!("{}", p.display());
            }
        }
    }
    Ok(())
}

pub fn compare(a: &CompareArgs) -> Result<(), Failure> {
    let products = match &a.products {
        Some(p) => Products::load(p).map_err(Failure::usage)?,
        None => Products::default(),
    };
    let dirs: Vec<PathBuf> = if a.runs.is_empty() {
        products.product.iter().map(|p| p.run.clone()).collect()
    } else {
        a.runs.clone()
    };
    if dirs.is_empty() {
        return Err(Failure::usage(anyhow::anyhow!(
            "nothing to compare: name run directories, or a products file with [[product]] entries"
        )));
    }
    let runs = dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    let baseline = a.baseline.as_deref().map(load).transpose()?;
    let rows = compare::rows(&runs, &products, baseline.as_ref()).map_err(Failure::run)?;
    // Links to the report cards lead from where the page is.
    let linked = compare::relative_to(&rows, dir_of(&a.out));
    let text = if a.out.extension().is_some_and(|e| e == "md") {
        compare::markdown(&linked)
    } else {
        compare::html(&linked).map_err(Failure::run)?
    };
    write(&a.out, &text)?;
    println!("{}", a.out.display());
    if let Some(json) = &a.json {
        cacheoff_report::lineup::summary(&rows, baseline.as_ref())
            .write(json)
            .map_err(Failure::run)?;
        println!("{}", json.display());
    }
    Ok(())
}

/// The directory a file is in (`.` for a bare name).
fn dir_of(file: &Path) -> &Path {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}
