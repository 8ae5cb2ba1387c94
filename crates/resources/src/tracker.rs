//! Counters summed over a changing set of processes, that never go down.
//!
//! Each process's counters (CPU ticks and storage bytes, its own plus those
//! of the children it reaped) grow while it lives. The tracker adds each
//! member's growth since the previous sample to a running total. When a
//! member vanishes, what was counted for it stays in the total; if its
//! parent is a member, the parent's counters will soon grow by the whole of
//! the child's (the kernel adds a reaped child's times and I/O to its
//! parent's), so the part already counted is held as a credit against the
//! parent's next growth instead of being counted twice. A credit still
//! open when the parent vanishes passes to the grandparent.

use crate::procfs;
use std::collections::{HashMap, HashSet};

/// user ticks, system ticks, bytes read, bytes written.
pub(crate) type Counters = [u64; 4];

#[derive(Clone, Copy, Debug)]
struct Seen {
    start: u64,
    ppid: i32,
    last: Counters,
}

/// One member as read in one sample.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reading {
    pub pid: i32,
    pub start: u64,
    pub ppid: i32,
    pub counters: Counters,
    pub rss: u64,
    pub hwm: u64,
    pub threads: u64,
    pub fds: u64,
}

/// Reads a member; `None` when it vanished meanwhile.
pub(crate) fn read(pid: i32) -> Option<Reading> {
    let st = procfs::stat(pid)?;
    let status = procfs::status(pid)?;
    // /proc/PID/io needs ptrace rights: without them the bytes stay 0
    // rather than losing the process's CPU and memory.
    let io = procfs::io(pid).unwrap_or_default();
    Some(Reading {
        pid,
        start: st.start,
        ppid: st.ppid,
        counters: [
            st.utime + st.cutime,
            st.stime + st.cstime,
            io.read,
            io.write,
        ],
        rss: status.rss,
        hwm: status.hwm,
        threads: status.threads,
        fds: procfs::fds(pid).unwrap_or(0),
    })
}

/// Reads one thread of `pid` from its stat text: its own CPU ticks and
/// storage bytes (a thread reaps nothing and has no parent member: what it
/// spent stays counted when it exits). Levels are the process's, not here.
pub(crate) fn read_thread(pid: i32, tid: i32, stat_text: &str) -> Option<Reading> {
    let st = procfs::parse_stat(stat_text)?;
    let io = procfs::thread_io(pid, tid).unwrap_or_default();
    Some(Reading {
        pid: tid,
        start: st.start,
        ppid: 0,
        counters: [st.utime, st.stime, io.read, io.write],
        threads: 1,
        ..Reading::default()
    })
}

#[derive(Debug, Default)]
pub(crate) struct Tracker {
    seen: HashMap<i32, Seen>,
    credit: HashMap<i32, Counters>,
    total: Counters,
    started: bool,
}

fn add(a: &mut Counters, b: &Counters) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.saturating_add(*y);
    }
}

impl Tracker {
    /// Folds one sample's readings in and returns the total since the
    /// first call (whose readings are the baseline: they count nothing).
    pub(crate) fn update(&mut self, now: &[Reading]) -> Counters {
        let live: HashSet<(i32, u64)> = now.iter().map(|r| (r.pid, r.start)).collect();
        let gone: Vec<i32> = self
            .seen
            .iter()
            .filter(|(pid, s)| !live.contains(&(**pid, s.start)))
            .map(|(pid, _)| *pid)
            .collect();
        for pid in gone {
            let s = self.seen.remove(&pid).expect("listed above");
            let mut owed = s.last;
            if let Some(c) = self.credit.remove(&pid) {
                add(&mut owed, &c);
            }
            add(self.credit.entry(s.ppid).or_default(), &owed);
        }
        for r in now {
            let grown = match self.seen.get(&r.pid) {
                Some(s) => {
                    let mut d = [0; 4];
                    for (i, v) in d.iter_mut().enumerate() {
                        *v = r.counters[i].saturating_sub(s.last[i]);
                    }
                    d
                }
                // A process that joins after the baseline counts whole.
                None if self.started => r.counters,
                None => [0; 4],
            };
            let grown = self.take_credit(r.pid, grown);
            add(&mut self.total, &grown);
            self.seen.insert(
                r.pid,
                Seen {
                    start: r.start,
                    ppid: r.ppid,
                    last: r.counters,
                },
            );
        }
        // Credits owed by processes that are not members are never paid.
        let seen = &self.seen;
        self.credit.retain(|pid, _| seen.contains_key(pid));
        self.started = true;
        self.total
    }

    fn take_credit(&mut self, pid: i32, mut grown: Counters) -> Counters {
        if let Some(c) = self.credit.get_mut(&pid) {
            for (g, owed) in grown.iter_mut().zip(c.iter_mut()) {
                let paid = (*g).min(*owed);
                *g -= paid;
                *owed -= paid;
            }
            if c.iter().all(|v| *v == 0) {
                self.credit.remove(&pid);
            }
        }
        grown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pid: i32, ppid: i32, c: Counters) -> Reading {
        Reading {
            pid,
            start: pid as u64 * 10,
            ppid,
            counters: c,
            ..Reading::default()
        }
    }

    #[test]
    fn a_reaped_child_is_counted_once() {
        let mut t = Tracker::default();
        assert_eq!(
            t.update(&[r(1, 0, [5, 5, 0, 0]), r(2, 1, [1, 0, 0, 0])]),
            [0; 4]
        );
        assert_eq!(
            t.update(&[r(1, 0, [6, 5, 0, 0]), r(2, 1, [4, 1, 0, 100])]),
            [4, 1, 0, 100]
        );
        // The child ran 1 more tick and wrote 50 more bytes, then was
        // reaped: the parent's counters grow by the child's whole life.
        assert_eq!(t.update(&[r(1, 0, [6 + 5, 5 + 1, 0, 150])]), [5, 1, 0, 150]);
        // A new child counts from zero; the total never goes down.
        assert_eq!(
            t.update(&[r(1, 0, [12, 6, 0, 150]), r(3, 1, [2, 0, 7, 0])]),
            [8, 1, 7, 150]
        );
    }

    #[test]
    fn a_member_that_vanishes_unreaped_keeps_what_it_spent() {
        let mut t = Tracker::default();
        t.update(&[r(1, 0, [0; 4])]);
        assert_eq!(t.update(&[r(1, 0, [10, 2, 3, 4])]), [10, 2, 3, 4]);
        assert_eq!(t.update(&[]), [10, 2, 3, 4]);
        // A reused pid is another process: it counts from its own start.
        let mut again = r(1, 0, [1, 1, 1, 1]);
        again.start = 999;
        assert_eq!(t.update(&[again]), [11, 3, 4, 5]);
    }

    #[test]
    fn this_process_can_be_read() {
        let me = read(std::process::id() as i32).unwrap();
        assert!(me.rss > 0 && me.threads >= 1);
        assert!(read(-1).is_none());
    }
}
