//! The run directory's stats files.
//!
//! `intervals.jsonl` gets one [`IntervalRecord`] per line, appended and
//! flushed as the run goes, so a killed run keeps every finished interval.
//! `summary.json` ([`Summary`]) is written once at the end, atomically.
//! Both carry [`FORMAT_VERSION`].

use crate::snapshot::{Distributions, Entry};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Version of the run-directory formats; bumped on incompatible change.
pub const FORMAT_VERSION: u32 = 1;

pub const INTERVALS_FILE: &str = "intervals.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";
pub const MANIFEST_FILE: &str = "manifest.json";

/// One line of `intervals.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub version: u32,
    pub interval: u32,
    pub phase: String,
    /// Seconds from the run start.
    pub start_s: f64,
    pub end_s: f64,
    /// Live robots during the interval.
    pub robots: u32,
    /// Load factor at the interval's middle.
    pub load: f64,
    #[serde(flatten)]
    pub stats: Entry,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub format: String,
    pub version: u32,
    pub workload: String,
    /// True if the run was stopped before its schedule ended.
    pub interrupted: bool,
    /// The phase headline figures are taken from.
    pub measured_phase: Option<String>,
    pub phases: Vec<Entry>,
    pub total: Entry,
    /// Response-time and size distributions of the measured phase (or the
    /// whole run); absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributions: Option<Distributions>,
}

/// Appends interval records to `intervals.jsonl`.
#[derive(Debug)]
pub struct IntervalLog {
    file: File,
}

impl IntervalLog {
    pub fn create(dir: &Path) -> io::Result<IntervalLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(INTERVALS_FILE))?;
        Ok(IntervalLog { file })
    }

    /// Writes one record as a whole line and flushes it to the OS.
    pub fn append(&mut self, r: &IntervalRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(r)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// Reads `intervals.jsonl`. A last line without its newline is a record
/// torn by a killed writer and is skipped; any other bad line is an error.
pub fn read_intervals(dir: &Path) -> io::Result<Vec<IntervalRecord>> {
    let text = std::fs::read_to_string(dir.join(INTERVALS_FILE))?;
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{INTERVALS_FILE} line {}: {e}", i + 1),
                )
            })
        })
        .collect()
}

/// Writes `value` as pretty JSON to `path` via a temporary file and rename,
/// so readers never see half a file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let tmp: PathBuf = path.with_extension("json.tmp");
    {
        let mut f = File::create(&tmp)?;
        serde_json::to_writer_pretty(&mut f, value)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Accum;

    #[test]
    fn intervals_append_and_read_back_despite_torn_tail() {
        let dir = std::env::temp_dir().join(format!("cacheoff-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::remove_file(dir.join(INTERVALS_FILE));
        let mut log = IntervalLog::create(&dir).unwrap();
        let entry = Accum::default().entry("i", &[]);
        for i in 0..3 {
            log.append(&IntervalRecord {
                version: FORMAT_VERSION,
                interval: i,
                phase: "meas".into(),
                start_s: f64::from(i) * 5.0,
                end_s: f64::from(i + 1) * 5.0,
                robots: 10,
                load: 1.0,
                stats: entry.clone(),
            })
            .unwrap();
        }
        // A writer killed mid-line leaves a partial record (no newline): the
        // reader must not fail on the records before it.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join(INTERVALS_FILE))
            .unwrap();
        f.write_all(b"{\"version\":1,\"inter").unwrap();
        let back = read_intervals(&dir).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[2].interval, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
