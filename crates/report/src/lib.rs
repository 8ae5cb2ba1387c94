//! Reading a run directory ([`Run`]) and presenting it: the HTML report
//! card ([`html::render`]) and machine-readable exports ([`export`]).

pub mod charts;
pub mod compare;
pub mod export;
mod fold;
pub mod html;
mod manifest;
mod run;

pub use manifest::{Host, Manifest, MANIFEST_FORMAT};
pub use run::{Run, RunState};

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {why}")]
    Read { path: PathBuf, why: String },
    #[error("{0} is not a cacheoff run directory (no manifest.json)")]
    NotARun(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Products { path: PathBuf, why: String },
    #[error("cannot draw chart {chart:?}: {why}")]
    Chart { chart: String, why: String },
}
