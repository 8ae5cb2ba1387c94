//! An A/B experiment's directory (`cacheoff ab --out DIR`, docs/ab.md):
//! a run directory per run (`round-01-a/`, ...) and the experiment's
//! record, `ab.json` (`cacheoff_ab::AbReport`), written here and read
//! back here.

use crate::files::write_json_atomic;
use crate::RunDirError;
use cacheoff_ab::AbReport;
use std::path::{Path, PathBuf};

/// The experiment's record in its directory.
pub const AB_FILE: &str = "ab.json";

/// Writes `ab.json` into `dir` (atomically).
pub fn write(dir: &Path, report: &AbReport) -> Result<PathBuf, RunDirError> {
    let path = dir.join(AB_FILE);
    write_json_atomic(&path, report).map_err(|source| RunDirError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Reads `ab.json` of the experiment's directory `dir`.
pub fn read(dir: &Path) -> Result<AbReport, RunDirError> {
    let path = dir.join(AB_FILE);
    let bad = |why: String| RunDirError::Read {
        path: path.clone(),
        why,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| bad(format!("not a valid {AB_FILE}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let r = AbReport {
            workload: "simple".into(),
            a: "127.0.0.1:3128".into(),
            b: "squid".into(),
            rounds: 2,
            plateau_s: 5.0,
            method: cacheoff_ab::METHOD_PAIRED.into(),
            level: cacheoff_ab::LEVEL,
            runs: Vec::new(),
            figures: Vec::new(),
        };
        let path = write(dir.path(), &r).unwrap();
        assert_eq!(path, dir.path().join(AB_FILE));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"), "pretty, one line feed at the end");
        assert_eq!(read(dir.path()).unwrap(), r);
        assert!(read(&dir.path().join("none")).is_err());
    }
}
