//! `trace.json`: what a replay (`cacheoff replay`) replayed — the trace,
//! how it was read and scaled, and the hit ratios an infinite, an LRU and
//! an optimal cache of the run's size would reach on it (its ceilings),
//! computed before the run. The summary repeats the ceilings next to the
//! measured figures.

use crate::files::{read_json, write_json_atomic, FORMAT_VERSION};
use crate::RunDirError;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const TRACE_FILE: &str = "trace.json";
pub const TRACE_FORMAT: &str = "cacheoff-trace";

/// Document hit ratios (percent of all requests) a cache could reach on
/// the trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Every repeat request of a cachable object hits.
    pub infinite: f64,
    /// An LRU cache of `cache_bytes`.
    pub lru: f64,
    /// Belady's farthest-next-use cache of `cache_bytes`.
    pub belady: f64,
}

/// The replayed trace, as `trace.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replayed {
    #[serde(default = "format_name")]
    pub format: String,
    #[serde(default = "format_version")]
    pub version: u32,
    /// The trace file as given.
    pub file: String,
    /// Its format (`squid`, `clf`, `oracle-general`, `wikimedia`, `csv`).
    pub trace_format: String,
    pub requests: u64,
    /// Distinct objects.
    pub objects: u64,
    /// Requests the replay's cachability rule made cachable.
    pub cachable_requests: u64,
    /// Body bytes of all requests as traced.
    pub bytes: u64,
    /// From the first request to the last, as traced.
    pub trace_duration_s: f64,
    /// Replay time per trace time (2 = twice as fast).
    pub speed: f64,
    /// The cache size the ceilings assume.
    pub cache_bytes: u64,
    /// How cachability was decided (`trace`, `all`, `none`).
    pub cachable_rule: String,
    pub ceiling: Ceiling,
}

fn format_name() -> String {
    TRACE_FORMAT.into()
}

fn format_version() -> u32 {
    FORMAT_VERSION
}

/// Writes `trace.json` into the run directory `dir`.
pub fn write_trace(dir: &Path, r: &Replayed) -> Result<(), RunDirError> {
    let path = dir.join(TRACE_FILE);
    write_json_atomic(&path, r).map_err(|source| RunDirError::Write { path, source })
}

impl Replayed {
    /// `trace.json` of the run directory `dir`, if there is one.
    pub(crate) fn read(dir: &Path) -> Result<Option<Replayed>, RunDirError> {
        let path = dir.join(TRACE_FILE);
        if !path.exists() {
            return Ok(None);
        }
        read_json(&path).map(Some)
    }
}
