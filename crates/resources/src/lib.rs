//! What a product under test spends: CPU, memory, disk, file descriptors
//! and threads, sampled per interval. Pure std, no runtime.
//!
//! A [`Target`] names what to watch: a [`Cgroup`] (made with
//! [`Cgroup::create`] and filled with [`Cgroup::add`], or an existing one
//! by path) or a pid with its descendants. A [`Sampler`] reads its target
//! into cumulative [`Sample`]s; [`IntervalUsage::between`] turns two
//! samples into one interval's record, and [`derive()`] turns a phase's
//! intervals, with the [`Traffic`] of the same intervals, into
//! [`Resources`]: cores used, CPU per 1,000 transactions (and per hit and
//! per miss, by regression), memory per cached byte, write amplification.
//!
//! # Where each figure comes from
//!
//! Measured, never estimated:
//!
//! - **CPU**, cgroup target: cgroup2 `cpu.stat` `user_usec`/`system_usec`,
//!   present in every cgroup2 directory even without the cpu controller;
//!   it covers processes that have exited. Pid target: `utime`+`stime` of
//!   /proc/PID/stat over the pid and its descendants (found from every
//!   process's parent, at every sample), plus `cutime`+`cstime` for the
//!   children they reaped, in clock ticks (`sysconf(_SC_CLK_TCK)`), so
//!   with the tick's resolution (10 ms at 100 Hz). A reaped member is
//!   counted once (see `tracker`). A daemon that detaches (forks and lets
//!   its parent exit) is no longer a descendant: sample such a product
//!   through a cgroup.
//! - **Memory**, cgroup target: cgroup2 `memory.current`/`memory.peak` when
//!   the memory controller is on; else, on a hybrid hierarchy, the v1
//!   memory cgroup made beside it (`memory.usage_in_bytes`,
//!   `memory.max_usage_in_bytes`); both include the page cache charged to
//!   the group (a product's files it reads or writes). Else, and for a pid
//!   target, the sum of the members' `VmRSS` (/proc/PID/status), with the
//!   peak the highest sum seen (for a pid target, or the root's `VmHWM`
//!   when higher: it catches a peak between samples).
//! - **Disk**: cgroup2 `io.stat` when the io controller is on (`rbytes`,
//!   `wbytes`, `rios`, `wios` summed over devices); else the members'
//!   /proc/PID/io `read_bytes` and `write_bytes` minus
//!   `cancelled_write_bytes`: bytes sent to (or fetched from) the storage
//!   layer, counted when pages are dirtied. Totals never go down when
//!   processes exit (see `tracker`). I/O counts only from `io.stat`:
//!   /proc's syscall counts are not disk I/Os, so they stay `None`.
//! - **fds**: entries of /proc/PID/fd, summed; **threads**: `Threads:` of
//!   /proc/PID/status, summed; **procs**: the members.
//! - **Threads target** (a product inside another process): CPU from each
//!   named thread's /proc/PID/task/TID/stat, disk from its
//!   /proc/PID/task/TID/io (a thread that exits keeps what it spent);
//!   memory and fds are the whole process's (an upper bound: they cannot
//!   be told apart by thread); threads are the named ones.
//!
//! A process that vanishes between listing and reading is skipped.
//! [`Sampler::sources`] names the sources a sampler actually used.

mod cgroup;
mod derive;
mod procfs;
mod sampler;
mod tracker;

pub use cgroup::Cgroup;
pub use derive::{derive, per_hit_and_miss, Resources, Traffic};
pub use sampler::Sampler;

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no cgroup2 file system is mounted (none in /proc/self/mountinfo), \
         so the product's spending is sampled from its processes instead"
    )]
    NoCgroup2,
    #[error(
        "cannot make cgroup {} ({source}), so the product's spending is sampled \
         from its processes instead",
        path.display()
    )]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no process {0}")]
    NoSuchPid(i32),
    #[error("no cgroup {}: not a cgroup2 directory (no cgroup.procs in it)", .0.display())]
    NoSuchCgroup(PathBuf),
}

impl Error {
    fn create(path: &Path, source: std::io::Error) -> Error {
        Error::Create {
            path: path.to_owned(),
            source,
        }
    }
}

/// The memory source of a [`Target::Threads`]: in a source string it says
/// the memory figure is not the product's own, so nothing is derived from
/// it per cached byte.
pub const SHARED_MEMORY: &str = "the whole process's VmRSS (shared with what is not watched)";

/// What a sampler watches.
#[derive(Debug)]
pub enum Target {
    Cgroup(Cgroup),
    Pid(i32),
    /// The threads of a process whose names start with `prefix`: a product
    /// that shares the process with something else (the embedded
    /// reference proxy shares cacheoff's). CPU and disk are the threads'
    /// own; memory and fds cannot be told apart and are the whole process's.
    Threads {
        pid: i32,
        prefix: String,
    },
}

impl Target {
    /// `"1234"`: that pid (which must exist) and its descendants; anything
    /// else: an existing cgroup2 directory, absolute or relative to the
    /// cgroup2 mount.
    pub fn parse(s: &str) -> Result<Target, Error> {
        if let Ok(pid) = s.trim().parse::<i32>() {
            return if procfs::exists(pid) {
                Ok(Target::Pid(pid))
            } else {
                Err(Error::NoSuchPid(pid))
            };
        }
        let path = Path::new(s);
        let m = cgroup::mounts();
        let dir = if path.is_absolute() {
            path.to_owned()
        } else {
            m.v2.as_ref().ok_or(Error::NoCgroup2)?.join(path)
        };
        if dir.join("cgroup.procs").is_file() && dir.join("cgroup.controllers").is_file() {
            Ok(Target::Cgroup(Cgroup::existing(dir, &m)))
        } else {
            Err(Error::NoSuchCgroup(dir))
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Target::Cgroup(cg) => format!("cgroup {}", cg.path().display()),
            Target::Pid(pid) => format!("pid {pid} and its descendants"),
            Target::Threads { pid, prefix } => format!("threads {prefix}* of pid {pid}"),
        }
    }
}

/// A target's spending: counters cumulative since the sampler began,
/// levels as they are now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    pub cpu_user_us: u64,
    pub cpu_sys_us: u64,
    pub mem_bytes: u64,
    pub mem_peak_bytes: u64,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    pub disk_read_ios: Option<u64>,
    pub disk_write_ios: Option<u64>,
    pub fds: u64,
    pub threads: u64,
    pub procs: u64,
}

/// One interval's spending: the record a run writes per interval (field
/// names are persisted).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IntervalUsage {
    pub cpu_user_ms: f64,
    pub cpu_sys_ms: f64,
    pub mem_bytes: u64,
    pub mem_peak_bytes: u64,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_read_ios: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_write_ios: Option<u64>,
    pub fds: u64,
    pub threads: u64,
}

impl IntervalUsage {
    /// Counters as the growth from `prev` to `now` (never negative),
    /// levels as `now`'s.
    pub fn between(prev: &Sample, now: &Sample) -> IntervalUsage {
        let ms = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1000.0;
        let ios = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a.unwrap_or(0)));
        IntervalUsage {
            cpu_user_ms: ms(prev.cpu_user_us, now.cpu_user_us),
            cpu_sys_ms: ms(prev.cpu_sys_us, now.cpu_sys_us),
            mem_bytes: now.mem_bytes,
            mem_peak_bytes: now.mem_peak_bytes,
            disk_read_bytes: now.disk_read_bytes.saturating_sub(prev.disk_read_bytes),
            disk_write_bytes: now.disk_write_bytes.saturating_sub(prev.disk_write_bytes),
            disk_read_ios: ios(prev.disk_read_ios, now.disk_read_ios),
            disk_write_ios: ios(prev.disk_write_ios, now.disk_write_ios),
            fds: now.fds,
            threads: now.threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_the_counters_growth_and_the_levels_now() {
        let prev = Sample {
            cpu_user_us: 1_000,
            cpu_sys_us: 500,
            mem_bytes: 10,
            mem_peak_bytes: 50,
            disk_read_bytes: 100,
            disk_write_bytes: 200,
            disk_read_ios: Some(1),
            disk_write_ios: Some(2),
            fds: 9,
            threads: 3,
            procs: 1,
        };
        let now = Sample {
            cpu_user_us: 3_500,
            cpu_sys_us: 400, // a counter that went back counts nothing
            mem_bytes: 20,
            mem_peak_bytes: 60,
            disk_read_bytes: 150,
            disk_write_bytes: 1_200,
            disk_read_ios: Some(4),
            disk_write_ios: Some(12),
            fds: 7,
            threads: 5,
            procs: 2,
        };
        let u = IntervalUsage::between(&prev, &now);
        assert_eq!(
            u,
            IntervalUsage {
                cpu_user_ms: 2.5,
                cpu_sys_ms: 0.0,
                mem_bytes: 20,
                mem_peak_bytes: 60,
                disk_read_bytes: 50,
                disk_write_bytes: 1_000,
                disk_read_ios: Some(3),
                disk_write_ios: Some(10),
                fds: 7,
                threads: 5,
            }
        );
        let none = IntervalUsage::between(&Sample::default(), &Sample::default());
        assert_eq!(none.disk_read_ios, None);
        let json = serde_json::to_string(&none).unwrap();
        assert!(!json.contains("ios"), "{json}");
        assert_eq!(serde_json::from_str::<IntervalUsage>(&json).unwrap(), none);
    }

    #[test]
    fn targets_parse_from_pids_and_paths() {
        let me = std::process::id();
        let t = Target::parse(&me.to_string()).unwrap();
        assert_eq!(t.describe(), format!("pid {me} and its descendants"));
        assert!(matches!(
            Target::parse("999999999"),
            Err(Error::NoSuchPid(_))
        ));
        let e = Target::parse("/nonexistent/cacheoff").unwrap_err();
        assert!(matches!(e, Error::NoSuchCgroup(_)), "{e}");
    }
}
