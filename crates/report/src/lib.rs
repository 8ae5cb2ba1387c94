//! Presenting run directories (read by `cacheoff_rundir` as a [`Run`]):
//! the HTML report card ([`html::render`]), machine-readable exports
//! ([`export`]) and the cache-off executive summary ([`compare`]).

pub mod charts;
pub mod compare;
pub mod export;
pub mod html;

pub use cacheoff_rundir::{Manifest, Run, RunState};

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    RunDir(#[from] cacheoff_rundir::RunDirError),
    #[error("{path}: {why}")]
    Products { path: PathBuf, why: String },
    #[error("cannot draw chart {chart:?}: {why}")]
    Chart { chart: String, why: String },
}
