//! `downtime.json`: when the product under test lost power and got it
//! back during a downtime run, written by whoever cut the power (the
//! lineup) and read with the run, so the time till first miss, hit and
//! connection count from the real power-on rather than from the end of the
//! dark phase.

use crate::files::{read_json, write_json_atomic, FORMAT_VERSION};
use crate::RunDirError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const DOWNTIME_FILE: &str = "downtime.json";
pub const DOWNTIME_FORMAT: &str = "cacheoff-downtime";

/// When the product was powered off (killed) and on (restarted), in
/// seconds from the run's start: the clock of the intervals' `start_s`,
/// `end_s` and `firsts`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    pub power_cut_s: f64,
    pub power_on_s: f64,
}

/// The file's shape; `format` and `version` may be left out by other
/// writers.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    #[serde(default = "format_name")]
    format: String,
    #[serde(default = "format_version")]
    version: u32,
    power_cut_s: f64,
    power_on_s: f64,
}

fn format_name() -> String {
    DOWNTIME_FORMAT.into()
}

fn format_version() -> u32 {
    FORMAT_VERSION
}

impl Outage {
    /// Both times are finite and not negative, and power returns no
    /// earlier than it went.
    fn check(&self) -> Result<(), String> {
        let ok = |t: f64| t.is_finite() && t >= 0.0;
        if !ok(self.power_cut_s) || !ok(self.power_on_s) {
            return Err(format!(
                "power_cut_s ({}) and power_on_s ({}) must be seconds from the run's start",
                self.power_cut_s, self.power_on_s
            ));
        }
        if self.power_on_s < self.power_cut_s {
            return Err(format!(
                "power_on_s ({}) is before power_cut_s ({})",
                self.power_on_s, self.power_cut_s
            ));
        }
        Ok(())
    }

    /// `downtime.json` of the run directory `dir`, if there is one.
    pub(crate) fn read(dir: &Path) -> Result<Option<Outage>, RunDirError> {
        let path = dir.join(DOWNTIME_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let r: Record = read_json(&path)?;
        let o = Outage {
            power_cut_s: r.power_cut_s,
            power_on_s: r.power_on_s,
        };
        o.check()
            .map_err(|why| RunDirError::Read { path, why })
            .map(|()| Some(o))
    }
}

/// Writes `downtime.json` into the run directory `dir` (atomically,
/// replacing an earlier one): the product was powered off at
/// `power_cut_s` and on at `power_on_s`, seconds from the run's start.
/// Returns its path.
pub fn write_downtime(
    dir: &Path,
    power_cut_s: f64,
    power_on_s: f64,
) -> Result<PathBuf, RunDirError> {
    let path = dir.join(DOWNTIME_FILE);
    let o = Outage {
        power_cut_s,
        power_on_s,
    };
    let invalid = |why: String| RunDirError::Write {
        path: path.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
    };
    o.check().map_err(invalid)?;
    let r = Record {
        format: format_name(),
        version: FORMAT_VERSION,
        power_cut_s,
        power_on_s,
    };
    write_json_atomic(&path, &r).map_err(|source| RunDirError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_then_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Outage::read(dir.path()).unwrap(), None);
        let path = write_downtime(dir.path(), 600.25, 605.5).unwrap();
        assert_eq!(path, dir.path().join(DOWNTIME_FILE));
        let o = Outage::read(dir.path()).unwrap().unwrap();
        assert_eq!((o.power_cut_s, o.power_on_s), (600.25, 605.5));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"format\": \"cacheoff-downtime\""), "{text}");

        // Another writer's minimal file reads too.
        std::fs::write(&path, r#"{"power_cut_s": 1.5, "power_on_s": 7}"#).unwrap();
        let o = Outage::read(dir.path()).unwrap().unwrap();
        assert_eq!((o.power_cut_s, o.power_on_s), (1.5, 7.0));

        for bad in [
            r#"{"power_cut_s": 9, "power_on_s": 7}"#,
            r#"{"power_cut_s": -1, "power_on_s": 7}"#,
            r#"{"power_cut_s": 1, "power_on": 7}"#,
            r#"{"version": 99, "power_cut_s": 1, "power_on_s": 7}"#,
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = Outage::read(dir.path()).unwrap_err().to_string();
            assert!(e.contains("downtime.json"), "{bad}: {e}");
        }
        let e = write_downtime(dir.path(), 5.0, 4.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("before power_cut_s"), "{e}");
        assert!(write_downtime(dir.path(), f64::NAN, 4.0).is_err());
    }
}
