//! Presenting run directories (read by `cacheoff_rundir` as a [`Run`]):
//! the HTML report card ([`html::render`]), machine-readable exports
//! ([`export`]), the cache-off executive summary across products
//! ([`compare`]: a [`compare::Row`] per run) and the lineup's
//! `summary.json` built from those rows ([`lineup::LineupSummary`]), and
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

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    RunDir(#[from] cacheoff_rundir::RunDirError),
    #[error("{path}: {why}")]
    Products { path: PathBuf, why: String },
    #[error("cannot draw chart {chart:?}: {why}")]
    Chart { chart: String, why: String },
    #[error("{path}: {why}")]
    Summary { path: PathBuf, why: String },
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

/// `path` as seen from the directory `dir` (`../runs/a`), or `path`
/// itself when no relative path leads there. Relative inputs are taken
/// from the working directory; symbolic links are resolved where the
/// paths exist.
pub(crate) fn relative_path(path: &Path, dir: &Path) -> PathBuf {
    let (Some(to), Some(from)) = (resolved(path), resolved(dir)) else {
        return path.into();
    };
    let (to, from): (Vec<Component>, Vec<Component>) =
        (to.components().collect(), from.components().collect());
    if to.first() != from.first() {
        return path.into();
    }
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..from.len() {
        rel.push("..");
    }
    for c in &to[common..] {
        rel.push(c);
    }
    if rel.as_os_str().is_empty() {
        rel.push(".");
    }
    rel
}

/// `p` made absolute, with symbolic links resolved in the longest part of
/// it that exists.
fn resolved(p: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(p).ok()?;
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        if let Ok(mut c) = std::fs::canonicalize(at) {
            c.extend(rest.iter().rev());
            return Some(c);
        }
        rest.push(at.file_name()?.to_owned());
        at = at.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::relative_path;
    use std::path::{Path, PathBuf};

    #[test]
    fn paths_are_made_relative_to_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let run = out.join("squid-forward");
        std::fs::create_dir_all(&run).unwrap();
        assert_eq!(relative_path(&run, &out), PathBuf::from("squid-forward"));
        assert_eq!(
            relative_path(&d.path().join("runs/a"), &out),
            PathBuf::from("../runs/a")
        );
        assert_eq!(relative_path(&out, &out), PathBuf::from("."));
        assert_eq!(
            relative_path(Path::new("/a/b/c"), Path::new("/a/x")),
            PathBuf::from("../b/c")
        );
    }
}
