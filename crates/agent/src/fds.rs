//! The process's descriptor limit (`RLIMIT_NOFILE`): raised before a run
//! to what it may open, and its exhaustion noticed during the run.
//!
//! Ownership: the limit is the process's, so the exhaustion counter is a
//! process-wide atomic; any thread bumps it ([`note_io_error`]), each
//! run's coordinator compares it with the value it started with.

use crate::AgentError;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// A process's descriptor limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimits {
    pub soft: u64,
    pub hard: u64,
}

impl FdLimits {
    /// The limits to ask for so `needed` descriptors fit: the soft limit
    /// raised to `needed`, and the hard limit with it when `needed` is
    /// above it (which only a process with `CAP_SYS_RESOURCE` may do, up
    /// to `nr_open`). Limits never go down.
    pub fn wanted(self, needed: u64, nr_open: u64) -> FdLimits {
        if self.soft >= needed {
            return self;
        }
        let soft = needed.min(nr_open.max(self.hard));
        FdLimits {
            soft,
            hard: self.hard.max(soft),
        }
    }

    /// The best an unprivileged process can do: the soft limit up to the
    /// hard one.
    pub fn unprivileged(self, needed: u64) -> FdLimits {
        FdLimits {
            soft: self.soft.max(needed.min(self.hard)),
            hard: self.hard,
        }
    }

    pub fn current() -> io::Result<FdLimits> {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid pointer to an rlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(FdLimits {
            soft: lim.rlim_cur,
            hard: lim.rlim_max,
        })
    }

    fn set(self) -> io::Result<()> {
        let lim = libc::rlimit {
            rlim_cur: self.soft,
            rlim_max: self.hard,
        };
        // SAFETY: valid pointer to an rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The kernel's ceiling on any process's descriptor limit.
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// Raises the descriptor limit so `needed` fit: the soft limit, and the
/// hard limit too where the process may (root, or `CAP_SYS_RESOURCE`).
/// The limits in force afterwards, or [`AgentError::FdLimit`] naming them
/// when they are still below `needed`.
pub fn raise_fd_limits(needed: u64) -> Result<FdLimits, AgentError> {
    let Ok(now) = FdLimits::current() else {
        // No limit to read is no limit to raise.
        return Ok(FdLimits {
            soft: u64::MAX,
            hard: u64::MAX,
        });
    };
    let nr_open = nr_open();
    let want = now.wanted(needed, nr_open);
    if want != now && want.set().is_err() {
        // EPERM: not allowed past the hard limit.
        let _ = now.unprivileged(needed).set();
    }
    let got = FdLimits::current().unwrap_or(now);
    if got.soft < needed {
        return Err(AgentError::FdLimit {
            needed,
            soft: got.soft,
            hard: got.hard,
            nr_open,
        });
    }
    Ok(got)
}

/// [`raise_fd_limits`] for callers that only need to know it fits.
pub fn raise_fd_limit(needed: u64) -> Result<(), AgentError> {
    raise_fd_limits(needed).map(|_| ())
}

static OUT_OF_FDS: AtomicU64 = AtomicU64::new(0);

/// Notes an I/O error from opening a socket (a robot's connect, a
/// server's accept); true when it says the process or the system ran out
/// of descriptors (`EMFILE`, `ENFILE`). A run stops with
/// [`AgentError::OutOfFds`] at the first one instead of counting connect
/// failures.
pub fn note_io_error(e: &io::Error) -> bool {
    let out = is_out_of_fds(e);
    if out {
        OUT_OF_FDS.fetch_add(1, Ordering::Relaxed);
    }
    out
}

pub(crate) fn is_out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// How many times this process ran out of descriptors so far.
pub fn times_out_of_fds() -> u64 {
    OUT_OF_FDS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: FdLimits = FdLimits {
        soft: 1024,
        hard: 20_000,
    };

    #[test]
    fn enough_already_changes_nothing() {
        assert_eq!(L.wanted(1000, 1 << 20), L);
        assert_eq!(L.wanted(1024, 1 << 20), L);
    }

    #[test]
    fn soft_rises_to_the_need_under_the_hard_limit() {
        let w = L.wanted(15_000, 1 << 20);
        assert_eq!(
            w,
            FdLimits {
                soft: 15_000,
                hard: 20_000
            }
        );
    }

    #[test]
    fn hard_rises_with_soft_past_it_up_to_nr_open() {
        assert_eq!(
            L.wanted(50_000, 1 << 20),
            FdLimits {
                soft: 50_000,
                hard: 50_000
            }
        );
        assert_eq!(
            L.wanted(5_000_000, 1 << 20),
            FdLimits {
                soft: 1 << 20,
                hard: 1 << 20
            }
        );
        // A hard limit already above nr_open is not lowered.
        let inf = FdLimits {
            soft: 1024,
            hard: u64::MAX,
        };
        assert_eq!(inf.wanted(5_000_000, 1 << 20).soft, 5_000_000);
    }

    #[test]
    fn unprivileged_stops_at_the_hard_limit() {
        assert_eq!(
            L.unprivileged(50_000),
            FdLimits {
                soft: 20_000,
                hard: 20_000
            }
        );
        assert_eq!(
            L.unprivileged(3_000),
            FdLimits {
                soft: 3_000,
                hard: 20_000
            }
        );
        assert_eq!(L.unprivileged(10), L);
    }

    /// Runs [`child_raises`] in a child process of this test binary
    /// whose descriptor limits are first lowered to `soft`:`hard` and,
    /// unless `privileged`, that is not root: what it printed.
    fn raise_in_child(soft: u64, hard: u64, privileged: bool, needed: u64) -> String {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "fds::tests::child_raises",
                "--ignored",
                "--nocapture",
            ])
            .env(
                "CACHEOFF_FDS_CHILD",
                format!("{soft} {hard} {privileged} {needed}"),
            )
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find(|l| l.starts_with("RESULT "));
        line.unwrap_or_else(|| panic!("child printed no result: {stdout}"))
            .to_string()
    }

    #[test]
    #[ignore = "run in a child process by the limit tests"]
    fn child_raises() {
        let Ok(setup) = std::env::var("CACHEOFF_FDS_CHILD") else {
            return;
        };
        let v: Vec<&str> = setup.split(' ').collect();
        let n = |i: usize| v[i].parse::<u64>().unwrap();
        FdLimits {
            soft: n(0),
            hard: n(1),
        }
        .set()
        .unwrap();
        // SAFETY: plain syscalls; root giving up its ids drops its
        // capabilities, CAP_SYS_RESOURCE among them.
        if v[2] == "false" && unsafe { libc::geteuid() } == 0 {
            assert_eq!(unsafe { libc::setgid(65534) }, 0);
            assert_eq!(unsafe { libc::setuid(65534) }, 0);
        }
        match raise_fd_limits(n(3)) {
            Ok(l) => println!("RESULT ok {} {}", l.soft, l.hard),
            Err(e) => println!("RESULT err {e}"),
        }
    }

    #[test]
    fn an_unprivileged_process_fails_naming_its_limits() {
        let r = raise_in_child(100, 100, false, 500);
        assert!(
            r.starts_with("RESULT err 500 file descriptors needed"),
            "{r}"
        );
        assert!(r.contains("the limit is 100 (hard limit 100"), "{r}");
        assert!(r.contains("ulimit -n") && r.contains("LimitNOFILE"), "{r}");
        assert!(r.contains("nr_open"), "{r}");
    }

    #[test]
    fn the_soft_limit_rises_to_the_need_within_the_hard_one() {
        assert_eq!(raise_in_child(64, 300, false, 200), "RESULT ok 200 300");
        assert_eq!(raise_in_child(250, 300, false, 200), "RESULT ok 250 300");
    }

    #[test]
    fn a_privileged_process_raises_its_hard_limit() {
        // CAP_SYS_RESOURCE is bit 24 of the effective set; root in a
        // container may lack it.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .unwrap();
        if u64::from_str_radix(eff.trim(), 16).unwrap() & (1 << 24) == 0 {
            eprintln!("no CAP_SYS_RESOURCE: no privileged case to test");
            return;
        }
        assert_eq!(raise_in_child(100, 100, true, 500), "RESULT ok 500 500");
    }

    // Not through note_io_error: the counter is the process's, and a run
    // in another test would stop.
    #[test]
    fn only_descriptor_exhaustion_counts() {
        let e = io::Error::from_raw_os_error;
        assert!(is_out_of_fds(&e(libc::EMFILE)));
        assert!(is_out_of_fds(&e(libc::ENFILE)));
        assert!(!is_out_of_fds(&e(libc::ECONNREFUSED)));
        assert!(!is_out_of_fds(&e(libc::EADDRNOTAVAIL)));
        assert!(!is_out_of_fds(&io::Error::other("no errno")));
    }
}
