//! Presenting run directories (read by `cacheoff_rundir` as a [`Run`]):
//! the HTML report card ([`html::render`]), machine-readable exports
//! ([`export`]), the cache-off executive summary across products
//! ([`compare`]: a [`compare::Row`] per run) and the lineup's
//! `summary.json` built from those rows ([`lineup::summary`]; the file's
//! format is `cacheoff_rundir::lineup`'s), and
//! the page of an SPE Multiplier run ([`spe::render`], from a
//! `cacheoff_rundir::spe::SpeRun`), and the page of a peak search with
//! its knee chart ([`peak::render`], from `peak.json`); [`write_page`]
//! writes whichever of these pages a directory calls for.

pub mod charts;
pub mod compare;
pub mod export;
pub mod html;
pub mod lineup;
pub mod peak;
pub mod spe;

pub use cacheoff_rundir::{Manifest, Run, RunState};

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    RunDir(#[from] cacheoff_rundir::RunDirError),
    #[error("cannot draw chart {chart:?}: {why}")]
    Chart { chart: String, why: String },
}

/// Renders `report.html` into `dir`: a run's report card, a Multiplier
/// run's SPE page or a peak search's page, whichever `dir` holds; returns
/// its path.
pub fn write_page(dir: &Path) -> Result<PathBuf, ReportError> {
    use cacheoff_rundir::{peak as peak_dir, spe as spe_dir, RunDir};
    if spe_dir::is_spe(dir) {
        return spe::write(&spe_dir::open(dir)?);
    }
    if peak_dir::is_peak(dir) {
        return peak::write(dir);
    }
    html::write(&RunDir::open(dir)?)
}
