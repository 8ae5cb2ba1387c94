//! The files a workload reads: the workload file itself (named on the
//! command line), and the files it names — a PGL file's `#include`s, the
//! `table()` files of either kind of workload file.
//!
//! A named file is read only from under the workload file's directory or
//! an `--include` place (a directory or a file named on the command line),
//! checked on the path as written and again once symlinks are resolved.
//! Only regular files are read, and at most [`MAX_FILE_BYTES`] of each and
//! [`MAX_TOTAL_BYTES`] for one workload, whatever their metadata says.
//! Errors name paths, never what a file holds; [`Named::quotable`] says
//! whether a reader may quote a file's text in its own messages (only
//! files under the workload's directory).
//!
//! A [`Files`] belongs to one load on one thread: it counts what it read.

use std::cell::Cell;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The most one workload file, include or table file may hold: 16 MiB,
/// far above any real one (Polygraph's largest standard workloads are a few
/// KB; a table of a million entries is about 12 MiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The most the files of one workload may hold together (the workload,
/// every include and table file, counted each time it is read).
pub const MAX_TOTAL_BYTES: u64 = 64 << 20;

/// A file a workload may not read, or could not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{name:?} is {path}, outside the workload's directory{home} and every --include place: refused (`--include {allow}` on the command line allows it)")]
    Outside {
        name: String,
        path: String,
        home: String,
        allow: String,
    },
    #[error("cannot find {name:?} (looked for {tried}; --include DIR adds a place)")]
    NotFound { name: String, tried: String },
    #[error("{path} is {what}, not a regular file: refused")]
    NotRegular { path: String, what: &'static str },
    #[error("{path} is larger than {limit} bytes: refused (the limit of a workload's file)", limit = MAX_FILE_BYTES)]
    TooLarge { path: String },
    #[error("{path} reads as more than its size says (a file of /proc or /sys?): refused")]
    Streams { path: String },
    #[error("{path} would take the files of this workload past {limit} bytes: refused", limit = MAX_TOTAL_BYTES)]
    TotalTooLarge { path: String },
    #[error("{path} is not UTF-8 text")]
    NotText { path: String },
    #[error("cannot read {path}: {why}")]
    Io { path: String, why: String },
    #[error("--include {path}: {why}")]
    Include { path: String, why: String },
}

/// A file a workload named, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Where it was found, as the workload's name joined to a place.
    pub path: PathBuf,
    pub text: String,
    /// Under the workload file's directory: its text may be quoted in
    /// messages. Files from `--include` places may not.
    pub quotable: bool,
}

/// What one workload may read, and how much it has.
#[derive(Debug, Default)]
pub struct Files {
    /// The workload file's directory, as written (absolute) and resolved;
    /// `None` for text that is no file, or a file at the root.
    home: Option<(PathBuf, PathBuf)>,
    /// `--include` places: as written (absolute) and resolved, and
    /// whether a directory (searched for names) or a file (allowed alone).
    include: Vec<(PathBuf, PathBuf, bool)>,
    read: Cell<u64>,
}

impl Files {
    /// For the workload file at `main` (which need not exist: text loaded
    /// under a name) and the `--include` places, which must.
    pub fn new(main: &Path, include: &[PathBuf]) -> Result<Files, FileError> {
        let dir = main.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        let home = std::fs::canonicalize(dir)
            .ok()
            // A workload at the root would open up every file.
            .filter(|c| c.parent().is_some())
            .map(|c| (absolute(dir), c));
        let include = include
            .iter()
            .map(|p| {
                let bad = |why: String| FileError::Include {
                    path: p.display().to_string(),
                    why,
                };
                let c = std::fs::canonicalize(p).map_err(|e| bad(e.to_string()))?;
                if c.parent().is_none() {
                    return Err(bad("the root directory would allow every file".into()));
                }
                let meta = std::fs::metadata(&c).map_err(|e| bad(e.to_string()))?;
                if !meta.is_dir() && !meta.is_file() {
                    return Err(bad("neither a directory nor a regular file".into()));
                }
                Ok((absolute(p), c, meta.is_dir()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Files {
            home,
            include,
            read: Cell::new(0),
        })
    }

    /// Reads the workload file itself: named on the command line, so from
    /// anywhere, but only a regular file within the limits.
    pub fn read_main(&self, path: &Path) -> Result<String, FileError> {
        self.read_bounded(path, path)
    }

    /// Counts text read elsewhere (the workload file given as text).
    pub fn charge(&self, bytes: usize) {
        self.read.set(self.read.get().saturating_add(bytes as u64));
    }

    /// Finds `name`, a file the workload names, beside `from` (the
    /// directory of the file that names it), then in the `--include`
    /// directories in order, and reads it. The first place where it
    /// exists decides; a place outside what may be read is refused
    /// without looking whether the file is there.
    pub fn find(&self, from: Option<&Path>, name: &str) -> Result<Named, FileError> {
        let from = from.map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        });
        let dirs = self
            .include
            .iter()
            .filter(|(_, _, dir)| *dir)
            .map(|(p, _, _)| p.as_path());
        let mut refused = None;
        let mut tried = Vec::new();
        for dir in from.into_iter().chain(dirs) {
            let candidate = dir.join(name);
            let written = absolute(&candidate);
            if !self.allows(&written, false) {
                refused.get_or_insert_with(|| self.outside(name, &written));
                continue;
            }
            let Ok(resolved) = std::fs::canonicalize(&candidate) else {
                tried.push(candidate.display().to_string());
                continue;
            };
            if !self.allows(&resolved, true) {
                refused.get_or_insert_with(|| self.outside(name, &resolved));
                continue;
            }
            let text = self.read_bounded(&candidate, &resolved)?;
            let quotable = self
                .home
                .as_ref()
                .is_some_and(|h| resolved.starts_with(&h.1));
            return Ok(Named {
                path: candidate,
                text,
                quotable,
            });
        }
        Err(refused.unwrap_or_else(|| FileError::NotFound {
            name: name.into(),
            tried: if tried.is_empty() {
                "nowhere it may be read".into()
            } else {
                tried.join(", ")
            },
        }))
    }

    /// Whether `path` (absolute; as written, or `resolved`) is under the
    /// workload's directory or an `--include` place.
    fn allows(&self, path: &Path, resolved: bool) -> bool {
        let pick = |w: &PathBuf, r: &PathBuf| if resolved { r.clone() } else { w.clone() };
        let home = self.home.iter().map(|(w, r)| (pick(w, r), true));
        let places = self.include.iter().map(|(w, r, dir)| (pick(w, r), *dir));
        home.chain(places).any(|(place, dir)| {
            if dir {
                path.starts_with(&place)
            } else {
                path == place
            }
        })
    }

    fn outside(&self, name: &str, path: &Path) -> FileError {
        let allow = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => path,
            _ => path.parent().unwrap_or(path),
        };
        FileError::Outside {
            name: name.into(),
            path: path.display().to_string(),
            home: self
                .home
                .as_ref()
                .map_or(String::new(), |(w, _)| format!(" ({})", w.display())),
            allow: allow.display().to_string(),
        }
    }

    /// Reads a regular file of at most [`MAX_FILE_BYTES`], opened without
    /// blocking (a FIFO would wait for a writer) and read with a hard cap
    /// (a file of /proc says 0 bytes and streams more).
    fn read_bounded(&self, shown: &Path, path: &Path) -> Result<String, FileError> {
        let p = || shown.display().to_string();
        let io = |e: std::io::Error| FileError::Io {
            path: p(),
            why: e.to_string(),
        };
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut open,
            libc::O_NONBLOCK | libc::O_NOCTTY,
        );
        let file = open.open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(FileError::NotRegular {
                path: p(),
                what: kind(&meta.file_type()),
            });
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(FileError::TooLarge { path: p() });
        }
        if self.read.get() + meta.len() > MAX_TOTAL_BYTES {
            return Err(FileError::TotalTooLarge { path: p() });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let n = bytes.len() as u64;
        if n > MAX_FILE_BYTES {
            return Err(FileError::TooLarge { path: p() });
        }
        if n > meta.len() {
            return Err(FileError::Streams { path: p() });
        }
        if self.read.get() + n > MAX_TOTAL_BYTES {
            return Err(FileError::TotalTooLarge { path: p() });
        }
        self.charge(bytes.len());
        String::from_utf8(bytes).map_err(|_| FileError::NotText { path: p() })
    }
}

/// What a file that is not a regular one is, for the refusal.
fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// `path` made absolute and `.`/`..` folded as written (symlinks are
/// resolved separately, by the file system).
fn absolute(path: &Path) -> PathBuf {
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for c in full.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    /// `root/w/main.toml`, `root/w/sub/in.txt`, `root/out/secret.txt`.
    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("w/sub")).unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("w/main.toml"), "x").unwrap();
        std::fs::write(root.join("w/sub/in.txt"), "inside").unwrap();
        std::fs::write(root.join("out/secret.txt"), "SECRET").unwrap();
        Tree { _tmp: tmp, root }
    }

    #[test]
    fn names_resolve_under_the_workload_directory_only() {
        let t = tree();
        let f = Files::new(&t.root.join("w/main.toml"), &[]).unwrap();
        let w = t.root.join("w");
        let n = f.find(Some(&w), "sub/in.txt").unwrap();
        assert_eq!((n.text.as_str(), n.quotable), ("inside", true));
        // `..` that stays inside is fine.
        let n = f.find(Some(&w.join("sub")), "../sub/in.txt").unwrap();
        assert_eq!(n.text, "inside");
        for name in ["../out/secret.txt", "/etc/passwd", "../out/nothing-here"] {
            let e = f.find(Some(&w), name).unwrap_err();
            assert!(matches!(e, FileError::Outside { .. }), "{name}: {e}");
            let e = e.to_string();
            assert!(e.contains("--include") && !e.contains("SECRET"), "{e}");
        }
        let e = f.find(Some(&w), "missing.txt").unwrap_err();
        assert!(matches!(e, FileError::NotFound { .. }), "{e}");
    }

    #[test]
    fn symlinks_out_of_the_directory_are_refused() {
        let t = tree();
        let w = t.root.join("w");
        std::os::unix::fs::symlink(t.root.join("out/secret.txt"), w.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(t.root.join("out"), w.join("outdir")).unwrap();
        let f = Files::new(&w.join("main.toml"), &[]).unwrap();
        for name in ["link.txt", "outdir/secret.txt"] {
            let e = f.find(Some(&w), name).unwrap_err().to_string();
            assert!(e.contains("outside the workload's directory"), "{e}");
            assert!(e.contains(&t.root.join("out").display().to_string()), "{e}");
        }
    }

    #[test]
    fn include_places_admit_what_they_name_and_are_not_quoted() {
        let t = tree();
        let w = t.root.join("w");
        let out = t.root.join("out");
        let f = Files::new(&w.join("main.toml"), std::slice::from_ref(&out)).unwrap();
        let n = f.find(Some(&w), "../out/secret.txt").unwrap();
        assert_eq!((n.text.as_str(), n.quotable), ("SECRET", false));
        // A directory is searched for names; a file is allowed alone.
        let n = f.find(Some(&w), "secret.txt").unwrap();
        assert_eq!(n.path, out.join("secret.txt"));
        std::fs::write(out.join("other.txt"), "o").unwrap();
        let file = out.join("secret.txt");
        let f = Files::new(&w.join("main.toml"), std::slice::from_ref(&file)).unwrap();
        assert!(f.find(Some(&w), file.to_str().unwrap()).is_ok());
        assert!(f.find(Some(&w), "../out/other.txt").is_err());
        let e = Files::new(&w.join("main.toml"), &[t.root.join("nope")]).unwrap_err();
        assert!(e.to_string().starts_with("--include "), "{e}");
        let e = Files::new(&w.join("main.toml"), &["/".into()]).unwrap_err();
        assert!(e.to_string().contains("root"), "{e}");
    }

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let t = tree();
        let w = t.root.join("w");
        let f = Files::new(&w.join("main.toml"), &["/dev".into(), "/proc/self".into()]).unwrap();
        let e = f.find(None, "/dev/zero").unwrap_err();
        assert!(matches!(e, FileError::NotRegular { .. }), "{e}");
        let e = f.find(None, "/proc/self/environ").unwrap_err();
        assert!(matches!(e, FileError::Streams { .. }), "{e}");
        let fifo = w.join("fifo");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let e = f.find(Some(&w), "fifo").unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let e = f.find(Some(&w), "sub").unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let big = std::fs::File::create(w.join("big")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = f.find(Some(&w), "big").unwrap_err();
        assert!(matches!(e, FileError::TooLarge { .. }), "{e}");
        // The main file is held to the same.
        assert!(f.read_main(Path::new("/dev/zero")).is_err());
        assert_eq!(f.read_main(&w.join("main.toml")).unwrap(), "x");
    }

    #[test]
    fn one_workload_reads_a_bounded_total() {
        let t = tree();
        let w = t.root.join("w");
        let f = Files::new(&w.join("main.toml"), &[]).unwrap();
        f.charge((MAX_TOTAL_BYTES - 3) as usize);
        let e = f.find(Some(&w), "sub/in.txt").unwrap_err();
        assert!(matches!(e, FileError::TotalTooLarge { .. }), "{e}");
    }
}
