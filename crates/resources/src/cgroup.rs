//! Finding the cgroup file systems and making a cgroup for a product.
//!
//! A `Cgroup` we created owns its directories: dropping it removes them
//! once the processes have left (it never kills them). One given by path
//! (`Target::parse`) is only read.

use crate::Error;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where the cgroup file systems are mounted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mounts {
    pub v2: Option<PathBuf>,
    pub v1_memory: Option<PathBuf>,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, …).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads the text of /proc/self/mountinfo.
pub(crate) fn parse_mountinfo(text: &str) -> Mounts {
    let mut m = Mounts::default();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let mut r = right.split(' ');
        let (fstype, opts) = (r.next(), r.nth(1).unwrap_or(""));
        match fstype {
            Some("cgroup2") if m.v2.is_none() => m.v2 = Some(PathBuf::from(unescape(point))),
            Some("cgroup") if m.v1_memory.is_none() && opts.split(',').any(|o| o == "memory") => {
                m.v1_memory = Some(PathBuf::from(unescape(point)))
            }
            _ => {}
        }
    }
    m
}

pub(crate) fn mounts() -> Mounts {
    fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// Where our own process sits in the v1 memory hierarchy (from
/// /proc/self/cgroup, e.g. `/system.slice/x`): products' memory cgroups go
/// below it, so they stay inside whatever limits and accounts for us.
fn own_v1_memory(v1: &Path) -> PathBuf {
    let own = fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
                controllers
                    .split(',')
                    .any(|c| c == "memory")
                    .then(|| path.trim_start_matches('/').to_string())
            })
        })
        .unwrap_or_default();
    v1.join(own)
}

/// Pids listed in a cgroup.procs file (empty when unreadable).
pub(crate) fn read_procs(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A cgroup2 directory, with, on a hybrid hierarchy, a v1 memory cgroup
/// beside it holding the same processes (cgroup2 there has no memory
/// controller).
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    v1_memory: Option<PathBuf>,
    /// False once a process could not join the v1 cgroup: its figures
    /// would then miss that process, so memory comes from the processes.
    v1_complete: AtomicBool,
    owned: bool,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// How long `Drop` waits for the processes to leave before removing.
const LEAVE_WAIT: Duration = Duration::from_millis(500);

impl Cgroup {
    /// Makes `<cgroup2>/cacheoff/<name>-<our pid>-<n>` and, when cgroup2
    /// has no memory controller and a v1 memory hierarchy is mounted,
    /// `<v1 memory>/cacheoff/<same>`. Nothing else is changed but the
    /// controllers offered to cacheoff's children (best effort).
    pub fn create(name: &str) -> Result<Cgroup, Error> {
        let m = mounts();
        let v2 = m.v2.ok_or(Error::NoCgroup2)?;
        let parent = v2.join("cacheoff");
        let mkdir = |p: &Path| fs::create_dir_all(p).map_err(|e| Error::create(p, e));
        mkdir(&parent)?;
        enable_controllers(&parent);
        let dir = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let d = parent.join(format!("{name}-{}-{n}", std::process::id()));
            match fs::create_dir(&d) {
                Ok(()) => break d,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::create(&d, e)),
            }
        };
        let leaf = dir.file_name().expect("made above").to_owned();
        let v1_memory = match m.v1_memory {
            Some(v1) if !dir.join("memory.current").exists() => {
                let d = own_v1_memory(&v1).join("cacheoff").join(leaf);
                // Without it, memory comes from the processes' RSS.
                fs::create_dir_all(&d).ok().map(|()| d)
            }
            _ => None,
        };
        Ok(Cgroup {
            dir,
            v1_memory,
            v1_complete: AtomicBool::new(true),
            owned: true,
        })
    }

    /// An existing cgroup2 directory, only read. On a hybrid hierarchy, a
    /// v1 memory cgroup at the same place (as `create` makes) is used when
    /// it holds the same processes.
    pub(crate) fn existing(dir: PathBuf, m: &Mounts) -> Cgroup {
        let v1_memory = match (&m.v2, &m.v1_memory) {
            (Some(v2), Some(v1)) if !dir.join("memory.current").exists() => dir
                .strip_prefix(v2)
                .ok()
                .into_iter()
                .flat_map(|rel| [own_v1_memory(v1).join(rel), v1.join(rel)])
                .find(|d| {
                    let sorted = |mut v: Vec<i32>| {
                        v.sort_unstable();
                        v
                    };
                    d.join("cgroup.procs").is_file()
                        && sorted(read_procs(d)) == sorted(read_procs(&dir))
                }),
            _ => None,
        };
        Cgroup {
            dir,
            v1_memory,
            v1_complete: AtomicBool::new(true),
            owned: false,
        }
    }

    /// Moves a process (all its threads) into the cgroup.
    pub fn add(&self, pid: i32) -> io::Result<()> {
        fs::write(self.dir.join("cgroup.procs"), pid.to_string())?;
        if let Some(v1) = &self.v1_memory {
            if fs::write(v1.join("cgroup.procs"), pid.to_string()).is_err() {
                self.v1_complete.store(false, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// The `cgroup.procs` files a process joins (cgroup2's, and the v1
    /// memory cgroup's beside it), for a process to write `0` to itself
    /// before it runs, so that nothing it forks starts outside.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        std::iter::once(&self.dir)
            .chain(&self.v1_memory)
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// The cgroup2 directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The v1 memory cgroup beside it, on a hybrid hierarchy, while it
    /// holds every process added.
    pub fn v1_memory(&self) -> Option<&Path> {
        self.v1_memory
            .as_deref()
            .filter(|_| self.v1_complete.load(Ordering::Relaxed))
    }

    /// The processes in it now.
    pub fn pids(&self) -> Vec<i32> {
        read_procs(&self.dir)
    }
}

/// Offers cacheoff's children the controllers its parent gave it, so that
/// they get memory.current, io.stat and pids.current. `parent` holds no
/// processes, so the kernel allows it.
fn enable_controllers(parent: &Path) {
    let Ok(have) = fs::read_to_string(parent.join("cgroup.controllers")) else {
        return;
    };
    for c in have.split_ascii_whitespace() {
        if ["cpu", "memory", "io", "pids"].contains(&c) {
            let _ = fs::write(parent.join("cgroup.subtree_control"), format!("+{c}"));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let dirs: Vec<&PathBuf> = std::iter::once(&self.dir).chain(&self.v1_memory).collect();
        let until = Instant::now() + LEAVE_WAIT;
        while dirs.iter().any(|d| !read_procs(d).is_empty()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        for d in dirs {
            let _ = fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/memory\\040x rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn mounts_are_found_in_either_layout() {
        assert_eq!(
            parse_mountinfo(HYBRID),
            Mounts {
                v2: Some("/sys/fs/cgroup/unified".into()),
                v1_memory: Some("/sys/fs/cgroup/memory".into()),
            }
        );
        let pure = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            parse_mountinfo(pure),
            Mounts {
                v2: Some("/sys/fs/cgroup".into()),
                v1_memory: None
            }
        );
        assert_eq!(parse_mountinfo("garbage\n"), Mounts::default());
        assert_eq!(unescape("a\\040b\\"), "a b\\");
    }
}
