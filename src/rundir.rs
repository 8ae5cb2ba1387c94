//! The self-describing run directory: `manifest.json` (what was run, where,
//! by which build), `intervals.jsonl` and `summary.json` (see
//! `docs/run-directory.md`).

use cacheoff_stats::log::{write_json_atomic, MANIFEST_FILE, SUMMARY_FILE};
use cacheoff_stats::{Summary, FORMAT_VERSION};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use cacheoff_report::{Host, Manifest, MANIFEST_FORMAT};

/// What this machine is, for the manifest.
pub fn probe_host() -> Host {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    };
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    Host {
        hostname: read("/proc/sys/kernel/hostname"),
        os: std::env::consts::OS.into(),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// `runs/<UTC timestamp>-<workload>`, e.g. `runs/20261122T001530Z-simple`.
pub fn default_dir(workload: &str) -> PathBuf {
    let stamp: String = now_rfc3339()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name: String = workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("runs").join(format!("{stamp}-{name}"))
}

/// Creates the run directory; refuses one that already holds a run.
pub fn create(dir: &Path) -> std::io::Result<()> {
    if dir.join(MANIFEST_FILE).exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already holds a run (manifest.json exists)",
                dir.display()
            ),
        ));
    }
    std::fs::create_dir_all(dir)
}

pub fn write_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    write_json_atomic(&dir.join(MANIFEST_FILE), m)
}

pub fn write_summary(dir: &Path, s: &Summary) -> std::io::Result<()> {
    debug_assert_eq!(s.version, FORMAT_VERSION);
    write_json_atomic(&dir.join(SUMMARY_FILE), s)
}
