//! Processes of a product: spawning each start in one process group,
//! finding every live process of it (its group, plus any that left the
//! group but kept the environment tag every process is started with),
//! signals, and reaping. Linux only (`/proc`).

use cacheoff_resources::Cgroup;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The environment variable every process of a product is started with;
/// its value is the run's tag, so processes that leave the group (a
/// daemon's `setsid`) are still found.
pub const TAG_VAR: &str = "CACHEOFF_PRODUCT_TAG";

/// A process's state letter and process group, from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let mut w = rest.split_whitespace();
    let state = w.next()?.chars().next()?;
    let _ppid = w.next()?;
    let pgrp = w.next()?.parse().ok()?;
    Some((state, pgrp))
}

fn has_tag(pid: i32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle))
        .unwrap_or(false)
}

/// Live (not zombie) processes in group `pgid` or carrying `tag`.
pub fn members(pgid: Option<i32>, tag: &str) -> Vec<i32> {
    let needle = format!("{TAG_VAR}={tag}").into_bytes();
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Some((state, pgrp)) = stat(pid) else {
            continue;
        };
        if matches!(state, 'Z' | 'X' | 'x') {
            continue;
        }
        if Some(pgrp) == pgid || has_tag(pid, &needle) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Sends `sig` to process group `pgid`.
pub fn signal_group(pgid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: killpg has no memory effects.
    if unsafe { libc::killpg(pgid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects; a vanished pid is fine.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// How `child` ended, if it has, without reaping it: an unreaped child
/// keeps its pid (and so its process group's id) from being reused.
pub fn exit_status(child: &Child) -> Option<String> {
    // SAFETY: waitid writes only into `info`.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid and si_status are valid for a WEXITED report.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if r != 0 || pid == 0 {
        return None;
    }
    Some(match info.si_code {
        libc::CLD_EXITED => format!("exit status {status}"),
        _ => format!("killed by signal {status}"),
    })
}

/// Opens (appending) the file a process's output goes to.
pub fn output_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Spawns `argv` in `dir` with its output appended to `out`, tagged, in
/// process group `group` (a new one, led by it, when `None`), with its
/// open-files limit raised to the hard limit, inside `cgroup` when given.
pub fn spawn(
    argv: &[String],
    dir: &Path,
    out: &Path,
    tag: &str,
    group: Option<i32>,
    cgroup: Option<&Cgroup>,
) -> io::Result<Child> {
    // Joined by the child itself before it runs, so that nothing it forks
    // starts outside; paths made here, as the child may not allocate.
    let procs: Vec<CString> = cgroup
        .map(|c| c.procs_files())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| CString::new(p.into_os_string().into_vec()).ok())
        .collect();
    let file = output_file(out)?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .env(TAG_VAR, tag)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(group.unwrap_or(0));
    // SAFETY: getrlimit/setrlimit are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut l: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
                l.rlim_cur = l.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &l);
            }
            for p in &procs {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    if let Some(c) = cgroup {
        // Checks the child's own move (a no-op when it worked) and notes a
        // v1 memory cgroup it could not join.
        let _ = c.add(child.id() as i32);
    }
    Ok(child)
}

/// The hard open-files limit products get.
pub fn hard_nofile() -> u64 {
    // SAFETY: getrlimit writes only into `l`.
    let mut l: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0 {
        l.rlim_max as u64
    } else {
        1024
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no effects.
    unsafe { libc::geteuid() == 0 }
}

/// The uid and gid of user `name`.
pub fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; we
    // copy the two numbers out at once.
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        if pw.is_null() {
            None
        } else {
            Some(((*pw).pw_uid, (*pw).pw_gid))
        }
    }
}

/// The name of the effective user (its uid when it has none).
pub fn current_user() -> String {
    // SAFETY: as in lookup_user.
    unsafe {
        let uid = libc::geteuid();
        let pw = libc::getpwuid(uid);
        if pw.is_null() {
            return uid.to_string();
        }
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

/// Gives `path` and everything under it to `uid:gid`.
pub fn chown_tree(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    if path.symlink_metadata()?.is_dir() {
        for e in std::fs::read_dir(path)? {
            chown_tree(&e?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// The first directory above `path` (itself included) that others cannot
/// enter: a product that runs as another user cannot reach `path`.
pub fn closed_ancestor(path: &Path) -> Option<(std::path::PathBuf, u32)> {
    for a in path.ancestors().skip(1) {
        if let Ok(m) = a.metadata() {
            let mode = m.permissions().mode();
            if mode & 0o001 == 0 {
                return Some((a.to_path_buf(), mode & 0o7777));
            }
        }
    }
    None
}

/// Removes the files `pattern` names: a path whose last component may
/// hold one `*` (any run of characters).
pub fn remove_matching(pattern: &str) -> io::Result<()> {
    let p = Path::new(pattern);
    let (Some(dir), Some(last)) = (p.parent(), p.file_name().and_then(|n| n.to_str())) else {
        return Ok(());
    };
    let Some((pre, post)) = last.split_once('*') else {
        return match std::fs::remove_file(p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        if n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post) {
            match std::fs::remove_file(e.path()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The last `lines` lines of a file, or nothing.
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(bytes) = std::fs::read(path) else {
        return String::new();
    };
    let start = bytes.len().saturating_sub(64 * 1024);
    let text = String::from_utf8_lossy(&bytes[start..]);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn patterns_remove_only_what_they_match() {
        let d = tempfile::tempdir().unwrap();
        for n in ["co1-a.shm", "co1-b.shm", "co2-a.shm", "co1-keep"] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        remove_matching(&format!("{}/co1-*.shm", d.path().display())).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["co1-keep", "co2-a.shm"]);
        remove_matching(&format!("{}/co1-keep", d.path().display())).unwrap();
        remove_matching(&format!("{}/nothing-*", d.path().display())).unwrap();
        remove_matching("/nonexistent-dir/x*").unwrap();
    }

    #[test]
    fn a_group_and_its_escapees_are_found_and_killed() {
        let d = tempfile::tempdir().unwrap();
        let tag = format!("unit-{}", std::process::id());
        // The leader, and a child that leaves the group with setsid.
        let argv: Vec<String> = ["/bin/sh", "-c", "setsid sleep 30 & sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut child = spawn(&argv, d.path(), &d.path().join("out"), &tag, None, None).unwrap();
        let pgid = child.id() as i32;
        // Generous: shells start slowly on a busy machine.
        let deadline = Instant::now() + Duration::from_secs(60);
        while members(Some(pgid), &tag).len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let found = members(Some(pgid), &tag);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(members(Some(pgid), "other").len() < 3);
        assert_eq!(exit_status(&child), None);
        signal_group(pgid, libc::SIGKILL).unwrap();
        for p in members(None, &tag) {
            signal(p, libc::SIGKILL);
        }
        while !members(Some(pgid), &tag).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(members(Some(pgid), &tag).is_empty());
        assert_eq!(exit_status(&child).as_deref(), Some("killed by signal 9"));
        child.wait().unwrap();
    }

    #[test]
    fn tails_are_the_last_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&p, 2), "b\nc");
        assert_eq!(tail(&d.path().join("none"), 2), "");
    }
}
