//! The Multiplier run directory's one writer ([`SpeDir`]) and one reader
//! ([`open`] → [`SpeRun`]).

use super::{Interval, Manifest, Summary, KIND, SPE_FORMAT_VERSION};
use crate::files::{self, LineLog};
use crate::{RunDirError, INTERVALS_FILE, MANIFEST_FILE, SUMMARY_FILE};
use serde::{de::DeserializeOwned, Serialize};
use std::path::{Path, PathBuf};

/// A Multiplier run's directory while the run writes it.
#[derive(Debug)]
pub struct SpeDir {
    path: PathBuf,
    manifest: Manifest,
    intervals: LineLog,
}

impl SpeDir {
    /// Creates the directory (and parents), refusing one that already holds
    /// a run, and writes the manifest.
    pub fn create(path: &Path, manifest: Manifest) -> Result<SpeDir, RunDirError> {
        if path.join(MANIFEST_FILE).exists() {
            return Err(RunDirError::HoldsARun(path.into()));
        }
        let write_err = |p: PathBuf| move |source| RunDirError::Write { path: p, source };
        std::fs::create_dir_all(path).map_err(write_err(path.into()))?;
        let log_path = path.join(INTERVALS_FILE);
        let intervals = LineLog::open(&log_path).map_err(write_err(log_path))?;
        let dir = SpeDir {
            path: path.into(),
            manifest,
            intervals,
        };
        dir.write(MANIFEST_FILE, &dir.manifest)?;
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Appends one interval line (flushed, so a killed run keeps it).
    pub fn interval(&mut self, record: &Interval) -> Result<(), RunDirError> {
        self.intervals
            .append(record)
            .map_err(|source| RunDirError::Write {
                path: self.path.join(INTERVALS_FILE),
                source,
            })
    }

    /// Writes `summary.json` and the finished manifest.
    pub fn finish(mut self, summary: &Summary) -> Result<(), RunDirError> {
        self.manifest.finished_at = Some(crate::now_rfc3339());
        self.write(MANIFEST_FILE, &self.manifest)?;
        self.write(SUMMARY_FILE, summary)
    }

    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<(), RunDirError> {
        let path = self.path.join(name);
        files::write_json_atomic(&path, value).map_err(|source| RunDirError::Write { path, source })
    }
}

/// A Multiplier run read back.
#[derive(Debug, Clone)]
pub struct SpeRun {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub intervals: Vec<Interval>,
    /// `summary.json`, or one folded from the intervals (`folded: true`).
    pub summary: Summary,
}

/// Whether `dir` holds a Multiplier run (its manifest's `kind`).
pub fn is_spe(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(MANIFEST_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some(KIND))
}

/// Reads a Multiplier run directory, whole or killed before its summary.
pub fn open(dir: &Path) -> Result<SpeRun, RunDirError> {
    let manifest_path = dir.join(MANIFEST_FILE);
    if !manifest_path.exists() {
        return Err(RunDirError::NotARun(dir.into()));
    }
    let manifest: Manifest = read_doc(&manifest_path)?;
    if manifest.kind != KIND {
        let why = format!("kind {:?}, not {KIND:?}", manifest.kind);
        return Err(read_err(&manifest_path, why));
    }
    let intervals_path = dir.join(INTERVALS_FILE);
    let intervals: Vec<Interval> = if intervals_path.exists() {
        read_lines(&intervals_path)?
    } else {
        Vec::new()
    };
    let summary_path = dir.join(SUMMARY_FILE);
    let summary = if summary_path.exists() {
        read_doc(&summary_path)?
    } else {
        Summary::fold(&manifest, &intervals)
    };
    Ok(SpeRun {
        dir: dir.into(),
        manifest,
        intervals,
        summary,
    })
}

/// Decodes one document or line, refusing a newer `format_version` by
/// name rather than as a parse error.
fn decode<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let v = value.get("format_version").and_then(|v| v.as_u64());
    if let Some(v) = v.filter(|&v| v > u64::from(SPE_FORMAT_VERSION)) {
        let most = SPE_FORMAT_VERSION;
        let p = path.display();
        return Err(format!(
            "{p}: written by a newer cacheoff (format version {v}; this one reads up to {most})"
        ));
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

fn read_err(path: &Path, why: String) -> RunDirError {
    RunDirError::Read {
        path: path.into(),
        why,
    }
}

fn read_doc<T: DeserializeOwned>(path: &Path) -> Result<T, RunDirError> {
    let text = std::fs::read_to_string(path).map_err(|e| read_err(path, e.to_string()))?;
    decode(path, &text).map_err(|why| read_err(path, why))
}

/// Reads `intervals.jsonl`; a last line without its newline was torn by a
/// killed writer and is skipped.
fn read_lines(path: &Path) -> Result<Vec<Interval>, RunDirError> {
    let text = std::fs::read_to_string(path).map_err(|e| read_err(path, e.to_string()))?;
    let complete = text.rfind('\n').map_or("", |i| &text[..i]);
    let line = |(i, l): (usize, &str)| {
        decode(path, l).map_err(|why| read_err(path, format!("line {}: {why}", i + 1)))
    };
    let lines = complete.lines().enumerate();
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(line)
        .collect()
}
