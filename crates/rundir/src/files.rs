//! File names, the format version, and the two ways files are written:
//! whole JSON documents replaced atomically, and the interval log appended
//! line by line.

use crate::RunDirError;
use serde::{de::DeserializeOwned, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// Version of the run-directory formats; bumped on incompatible change.
/// Readers refuse files of a newer version and read older ones. 2: the
/// second response time is Web Polygraph's (`rt_polygraph_ms`, from the
/// connection) instead of `rt_uncorrected_ms` (from the send); manifest
/// times have milliseconds; offered hits are Web Polygraph's (every
/// revisit of a cachable object) and an ideal cache's are `ideal`.
pub const FORMAT_VERSION: u32 = 2;

pub const MANIFEST_FILE: &str = "manifest.json";
pub const INTERVALS_FILE: &str = "intervals.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";
pub const REPORT_FILE: &str = "report.html";

/// Writes `value` as pretty JSON to `path` via a temporary file and rename,
/// so readers never see half a file.
pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    // One write, not one per token.
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    write_atomic(path, &text)
}

/// Writes `text` to `path` via a temporary file beside it (`NAME.tmp`)
/// and rename, so readers never see half a file.
pub(crate) fn write_atomic(path: &Path, text: &[u8]) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp: PathBuf = path.with_file_name(name);
    {
        let mut f = File::create(&tmp)?;
        f.write_all(text)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `path` as seen from the directory `dir` (`../runs/a`), or `path`
/// itself when no relative path leads there: how the files that name other
/// run directories (a lineup's) write them. Relative inputs are taken
/// from the working directory; symbolic links are resolved where the
/// paths exist.
pub fn relative_path(path: &Path, dir: &Path) -> PathBuf {
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

/// Reads a JSON document and checks its `version` before decoding the
/// rest, so a newer format is named as such instead of as a parse error.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RunDirError> {
    let read_err = |why: String| RunDirError::Read {
        path: path.into(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| read_err(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| read_err(format!("not valid JSON: {e}")))?;
    check_version(path, &value)?;
    serde_json::from_value(upgrade(value))
        .map_err(|e| read_err(format!("not a valid file of this cacheoff version: {e}")))
}

/// Refuses a document whose `version` is newer than [`FORMAT_VERSION`].
pub(crate) fn check_version(path: &Path, value: &serde_json::Value) -> Result<(), RunDirError> {
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v > u64::from(FORMAT_VERSION) => Err(RunDirError::NewerFormat {
            path: path.into(),
            version: v,
        }),
        _ => Ok(()),
    }
}

/// Reads a format-1 document as format 2: its offered hits were what an
/// ideal cache hits, so they stand for both figures (the closest reading).
fn upgrade(mut value: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                for (old, new) in [
                    ("offered_hits", "ideal_hits"),
                    ("offered_hit_bytes", "ideal_hit_bytes"),
                    ("offered", "ideal"),
                ] {
                    if let Some(x) = o.get(old).filter(|x| x.is_number()).cloned() {
                        o.entry(new).or_insert(x);
                    }
                }
                o.values_mut().for_each(walk);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if value.get("version").and_then(serde_json::Value::as_u64) < Some(2) {
        walk(&mut value);
    }
    value
}

/// Appends whole lines to `intervals.jsonl`, each flushed to the OS, so a
/// killed run keeps every finished interval.
#[derive(Debug)]
pub(crate) struct LineLog {
    file: File,
}

impl LineLog {
    pub(crate) fn open(path: &Path) -> io::Result<LineLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(LineLog { file })
    }

    pub(crate) fn append<T: Serialize>(&mut self, value: &T) -> io::Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// Reads a JSON-lines file. A last line without its newline is a record
/// torn by a killed writer and is skipped; any other bad line is an error.
pub(crate) fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, RunDirError> {
    let text = std::fs::read_to_string(path).map_err(|e| RunDirError::Read {
        path: path.into(),
        why: e.to_string(),
    })?;
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let bad = |why: String| RunDirError::Read {
                path: path.into(),
                why: format!("line {}: {why}", i + 1),
            };
            let value: serde_json::Value =
                serde_json::from_str(l).map_err(|e| bad(e.to_string()))?;
            check_version(path, &value)?;
            serde_json::from_value(upgrade(value)).map_err(|e| bad(e.to_string()))
        })
        .collect()
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
