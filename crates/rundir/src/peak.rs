//! `peak.json`: what `cacheoff peak` found. A peak directory holds one
//! run directory per step (`step-NN-<load>/`), the warm-up run
//! (`warmup/`) and this file, rewritten after every step so a stopped
//! search keeps what it measured; the report renders it offline (the
//! load–response-time "knee" chart).

use crate::files::{read_json, write_json_atomic};
use crate::RunDirError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const PEAK_FILE: &str = "peak.json";
pub const PEAK_FORMAT: &str = "cacheoff-peak";
/// The format version `peak.json` is written in; readers refuse newer.
pub const PEAK_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub format: String,
    pub version: u32,
    /// The workload's name.
    pub workload: String,
    /// Steps ran closed-loop (`--rate max`): the search varied robots.
    pub closed_loop: bool,
    /// The highest rate that kept the limit, confirmed by a repeat step:
    /// the step's rate (open loop) or its measured throughput (closed
    /// loop). `null` while searching, or when no rate was confirmed.
    pub peak_rate_xps: Option<f64>,
    /// Closed loop: the robots of the peak step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_robots: Option<u32>,
    /// `searching`, `found`, `at_max`, `unbracketed`, `none_passed` or
    /// `unconfirmed`.
    pub outcome: String,
    /// Relative width of the bracket the bisection stops at.
    pub precision: f64,
    pub limit: Limit,
    /// The warm-up run's directory (relative), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_dir: Option<String>,
    pub steps: Vec<PeakStep>,
}

/// What every step had to keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// As given: `p99<=50ms, errors<=0.1%`.
    pub text: String,
    /// `mean` or `p99`.
    pub rt_stat: String,
    pub rt_ms: f64,
    pub error_pct: f64,
}

/// One step, in the order run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakStep {
    /// The step's request rate (open loop), or its measured throughput
    /// (closed loop).
    pub rate_xps: f64,
    /// Closed loop: the robots the step ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robots: Option<u32>,
    /// Successful transactions per second, measured.
    pub throughput_xps: f64,
    /// Response times of the measured phase, from the intended start.
    pub rt_ms_mean: f64,
    pub rt_ms_p99: f64,
    /// Errors in percent of requests.
    pub error_pct: f64,
    /// Whether the step kept the limit.
    pub pass: bool,
    /// A repeat of the best passing rate, confirming it.
    pub confirm: bool,
    /// A repeat of a step that failed: the rate fails only if this does.
    #[serde(default)]
    pub recheck: bool,
    /// The step's run directory, relative to the peak directory.
    pub dir: String,
}

impl Peak {
    /// Writes `peak.json` into `dir` (atomically).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, RunDirError> {
        let path = dir.join(PEAK_FILE);
        write_json_atomic(&path, self).map_err(|source| RunDirError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Reads `peak.json` of the peak directory `dir`.
    pub fn read(dir: &Path) -> Result<Peak, RunDirError> {
        let path = dir.join(PEAK_FILE);
        let p: Peak = read_json(&path)?;
        if p.version > PEAK_VERSION {
            return Err(RunDirError::NewerFormat {
                path,
                version: p.version.into(),
            });
        }
        Ok(p)
    }
}

/// Whether `dir` is a peak directory (holds `peak.json`).
pub fn is_peak(dir: &Path) -> bool {
    dir.join(PEAK_FILE).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn example() -> Peak {
        Peak {
            format: PEAK_FORMAT.into(),
            version: PEAK_VERSION,
            workload: "simple".into(),
            closed_loop: true,
            peak_rate_xps: Some(250.0),
            peak_robots: Some(4),
            outcome: "found".into(),
            precision: 0.05,
            limit: Limit {
                text: "p99<=50ms, errors<=0.1%".into(),
                rt_stat: "p99".into(),
                rt_ms: 50.0,
                error_pct: 0.1,
            },
            warmup_dir: Some("warmup".into()),
            steps: vec![PeakStep {
                rate_xps: 250.0,
                robots: Some(4),
                throughput_xps: 249.0,
                rt_ms_mean: 3.0,
                rt_ms_p99: 20.0,
                error_pct: 0.0,
                pass: true,
                confirm: false,
                recheck: false,
                dir: "step-01-4robots".into(),
            }],
        }
    }

    #[test]
    fn peak_files_read_back_and_newer_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_peak(dir.path()));
        let p = example();
        p.write(dir.path()).unwrap();
        assert!(is_peak(dir.path()));
        assert_eq!(Peak::read(dir.path()).unwrap(), p);
        Peak {
            version: PEAK_VERSION + 1,
            ..p
        }
        .write(dir.path())
        .unwrap();
        let e = Peak::read(dir.path()).unwrap_err();
        assert!(matches!(e, RunDirError::NewerFormat { .. }), "{e}");
    }
}
