//! Reading one process's figures from /proc. Every reader returns `None`
//! when the process vanished (or was never there): callers skip it.

use std::fs;
use std::path::Path;

/// Fields of /proc/PID/stat that the sampler uses (ticks are clock ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stat {
    pub ppid: i32,
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    /// Start time since boot: with the pid, it names one process (pids are reused).
    pub start: u64,
}

/// Parses the text of /proc/PID/stat. The command name is in parentheses
/// and may itself hold spaces and parentheses, so fields are counted from
/// the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
    // cstime(17) ... starttime(22); `rest` starts at field 3.
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let at = |n: usize| -> Option<&str> { f.get(n - 3).copied() };
    let num = |n: usize| -> Option<u64> {
        // cutime and cstime are signed in the kernel's format.
        at(n)?.parse::<i64>().ok().map(|v| v.max(0) as u64)
    };
    Some(Stat {
        ppid: at(4)?.parse().ok()?,
        utime: num(14)?,
        stime: num(15)?,
        cutime: num(16)?,
        cstime: num(17)?,
        start: num(22)?,
    })
}

pub(crate) fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name of a stat line: a thread's name (at most 15 bytes).
pub(crate) fn stat_name(text: &str) -> Option<&str> {
    Some(&text[text.find('(')? + 1..text.rfind(')')?])
}

/// The threads of `pid` whose names start with `prefix`, each with its
/// /proc/PID/task/TID/stat text.
pub(crate) fn named_threads(pid: i32, prefix: &str) -> Vec<(i32, String)> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let tid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
        stat_name(&text)?.starts_with(prefix).then_some((tid, text))
    })
    .collect()
}

/// One thread's storage bytes (/proc/PID/task/TID/io counts that thread only).
pub(crate) fn thread_io(pid: i32, tid: i32) -> Option<Io> {
    Some(parse_io(
        &fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")).ok()?,
    ))
}

/// Fields of /proc/PID/status, in bytes and counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Status {
    pub rss: u64,
    pub hwm: u64,
    pub threads: u64,
}

pub(crate) fn parse_status(text: &str) -> Status {
    let mut s = Status::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let n = || -> u64 {
            let v = value.split_ascii_whitespace().next().unwrap_or("0");
            v.parse().unwrap_or(0)
        };
        match key {
            "VmRSS" => s.rss = n() * 1024,
            "VmHWM" => s.hwm = n() * 1024,
            "Threads" => s.threads = n(),
            _ => {}
        }
    }
    s
}

pub(crate) fn status(pid: i32) -> Option<Status> {
    Some(parse_status(
        &fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
    ))
}

/// Bytes the process (and the children it reaped) caused to be read from
/// and written to storage; truncated dirty pages are taken off the writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Io {
    pub read: u64,
    pub write: u64,
}

pub(crate) fn parse_io(text: &str) -> Io {
    let (mut read, mut write, mut cancelled) = (0u64, 0u64, 0u64);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let v = value.trim().parse().unwrap_or(0);
        match key {
            "read_bytes" => read = v,
            "write_bytes" => write = v,
            "cancelled_write_bytes" => cancelled = v,
            _ => {}
        }
    }
    Io {
        read,
        write: write.saturating_sub(cancelled),
    }
}

pub(crate) fn io(pid: i32) -> Option<Io> {
    Some(parse_io(
        &fs::read_to_string(format!("/proc/{pid}/io")).ok()?,
    ))
}

/// Open file descriptors: the entries of /proc/PID/fd. Since Linux 6.2
/// the directory's size is their number, which spares listing thousands
/// of them; a size of 0 (an older kernel, or no fds) is checked by listing.
pub(crate) fn fds(pid: i32) -> Option<u64> {
    let dir = format!("/proc/{pid}/fd");
    match fs::metadata(&dir).ok()?.len() {
        0 => Some(fs::read_dir(&dir).ok()?.count() as u64),
        n => Some(n),
    }
}

pub(crate) fn exists(pid: i32) -> bool {
    pid > 0 && Path::new(&format!("/proc/{pid}/stat")).exists()
}

/// Every process's pid and parent, from one pass over /proc.
pub(crate) fn all_parents() -> Vec<(i32, i32)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        Some((pid, stat(pid)?.ppid))
    })
    .collect()
}

/// `root` and its descendants (root first), or nothing when root is gone.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    if !exists(root) {
        return Vec::new();
    }
    let parents = all_parents();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// Clock ticks per second of the times in /proc/PID/stat.
pub(crate) fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects; it returns -1 on error.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 75 12 3 20 0 4 0 98765 1000000 300 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            s,
            Stat {
                ppid: 17,
                utime: 250,
                stime: 75,
                cutime: 12,
                cstime: 3,
                start: 98765
            }
        );
        assert_eq!(parse_stat("12 (x) S 1"), None);
        assert_eq!(stat_name(line), Some("a (b) c"));
    }

    #[test]
    fn status_and_io_are_read_in_bytes() {
        let st = parse_status("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t7\n");
        assert_eq!(
            st,
            Status {
                rss: 1 << 20,
                hwm: 2 << 20,
                threads: 7
            }
        );
        let io = parse_io(
            "rchar: 5\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n",
        );
        assert_eq!(
            io,
            Io {
                read: 4096,
                write: 4096
            }
        );
    }

    #[test]
    fn this_process_is_its_own_first_descendant() {
        let me = std::process::id() as i32;
        let d = descendants(me);
        assert_eq!(d.first(), Some(&me));
        assert!(stat(me).unwrap().start > 0);
        assert!(status(me).unwrap().threads >= 1);
        let listed = fs::read_dir("/proc/self/fd").unwrap().count() as u64;
        // The listing's own fd comes and goes.
        assert!(fds(me).unwrap().abs_diff(listed) <= 1);
        assert!(descendants(-5).is_empty());
    }

    #[test]
    fn threads_are_found_by_name() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (named_tx, named_rx) = std::sync::mpsc::channel();
        let t = std::thread::Builder::new()
            .name("probe-me-7".into())
            .spawn(move || {
                // The new thread sets its own name as it starts.
                named_tx.send(()).unwrap();
                rx.recv()
            })
            .unwrap();
        named_rx.recv().unwrap();
        let me = std::process::id() as i32;
        let found = named_threads(me, "probe-me");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(parse_stat(&found[0].1).is_some());
        assert!(thread_io(me, found[0].0).is_some());
        assert!(named_threads(me, "no-such-thread-").is_empty());
        tx.send(()).unwrap();
        t.join().unwrap().unwrap();
    }
}
