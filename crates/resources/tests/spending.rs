//! A child process spends known amounts (CPU by its own clock, memory it
//! touches, bytes it writes and syncs to disk) and the samplers must find
//! them. The child is this test binary run again with `CHILD` set: it
//! waits for "go" on stdin, spends, writes what it spent (by getrusage)
//! to a report file, then holds its memory until stdin closes.

use cacheoff_resources::{Cgroup, Sample, Sampler, Target};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "CACHEOFF_RESOURCES_TEST_CHILD";
const MIB: u64 = 1 << 20;
const ALLOC: u64 = 200 * MIB;
const WRITE: u64 = 64 * MIB;
/// The child's own CPU clock decides the burn: 50 rounds of 30 ms spinning
/// then 30 ms asleep, 1.5 s of CPU at half a core.
const BURN_ROUNDS: u32 = 50;
const SPIN: Duration = Duration::from_millis(30);
/// Bounds every wait on the child.
const PATIENCE: Duration = Duration::from_secs(120);

fn cpu_clock() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// User + system µs by getrusage.
fn rusage_us(who: libc::c_int) -> u64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

fn vm_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

fn burn(rounds: u32) {
    for _ in 0..rounds {
        let until = cpu_clock() + SPIN;
        while cpu_clock() < until {
            std::hint::black_box(0u64);
        }
        std::thread::sleep(SPIN);
    }
}

/// Writes `bytes` to a file in `dir`, synced, then drops it from the page
/// cache so that a cgroup's memory does not keep it.
fn write_synced(dir: &Path, name: &str, bytes: u64) {
    use std::os::fd::AsRawFd;
    let mut f = std::fs::File::create(dir.join(name)).unwrap();
    let chunk = vec![0x5a_u8; MIB as usize];
    for _ in 0..bytes / MIB {
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
    // SAFETY: a valid fd; advice only.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

fn report(dir: &Path, fields: &[u64]) {
    let text: Vec<String> = fields.iter().map(u64::to_string).collect();
    std::fs::write(dir.join("report.tmp"), text.join(" ")).unwrap();
    std::fs::rename(dir.join("report.tmp"), dir.join("report")).unwrap();
}

fn wait_line() {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// The child's part; `how` is "MODE:DIR".
fn child(how: &str) {
    let (mode, dir) = how.split_once(':').unwrap();
    let dir = Path::new(dir);
    match mode {
        "spend" => {
            wait_line();
            let cpu0 = rusage_us(libc::RUSAGE_SELF);
            burn(BURN_ROUNDS);
            write_synced(dir, "data", WRITE);
            let baseline = vm_rss();
            let held = std::hint::black_box(vec![1u8; ALLOC as usize]);
            let cpu = rusage_us(libc::RUSAGE_SELF) - cpu0;
            report(dir, &[cpu, baseline]);
            wait_line();
            drop(held);
        }
        "tree" => {
            // A grandchild spends, exits and is reaped by the child.
            wait_line();
            let cpu0 = rusage_us(libc::RUSAGE_SELF) + rusage_us(libc::RUSAGE_CHILDREN);
            let mut g = reexec(
                "leaf",
                dir,
                Stdio::null(),
                "a_reaped_grandchild_is_counted_once",
            );
            assert!(g.wait().unwrap().success());
            let cpu = rusage_us(libc::RUSAGE_SELF) + rusage_us(libc::RUSAGE_CHILDREN) - cpu0;
            report(dir, &[cpu]);
            wait_line();
        }
        "leaf" => {
            burn(BURN_ROUNDS / 3);
            write_synced(dir, "leaf", WRITE / 8);
        }
        _ => panic!("unknown child mode {mode}"),
    }
}

fn reexec(mode: &str, dir: &Path, stdin: Stdio, test: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mode}:{}", dir.display()))
        .stdin(stdin)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// A temporary directory on a disk-backed file system (not tmpfs), where
/// written bytes reach storage.
fn disk_tempdir() -> Option<tempfile::TempDir> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let candidates = [
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        "/var/tmp".into(),
    ];
    for base in candidates {
        let Ok(c) = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: an all-zero statfs is valid; statfs fills it.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 && st.f_type as i64 != TMPFS_MAGIC {
            return tempfile::tempdir_in(&base).ok();
        }
    }
    None
}

/// Samples every sampler until the report appears; returns its numbers.
fn until_report(dir: &Path, samplers: &mut [&mut Sampler], every: Duration) -> Vec<u64> {
    let start = Instant::now();
    loop {
        for s in samplers.iter_mut() {
            s.sample();
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("report")) {
            return text.split(' ').map(|v| v.parse().unwrap()).collect();
        }
        assert!(start.elapsed() < PATIENCE, "the child did not report");
        std::thread::sleep(every);
    }
}

fn assert_near(what: &str, got: u64, want: u64, tolerance: f64) {
    let off = (got as f64 - want as f64).abs() / want as f64;
    assert!(
        off <= tolerance,
        "{what}: measured {got}, expected {want} (off by {:.1}%)",
        off * 100.0
    );
}

fn cpu_us(s: &Sample) -> u64 {
    s.cpu_user_us + s.cpu_sys_us
}

/// The cgroup named relative to the cgroup2 mount is the same one, with
/// the same sources; dropping that target leaves the directory alone.
fn same_cgroup_by_name(cg: &Cgroup) {
    let leaf = cg.path().file_name().unwrap().to_str().unwrap();
    let named = Target::parse(&format!("cacheoff/{leaf}")).unwrap();
    assert_eq!(named.describe(), format!("cgroup {}", cg.path().display()));
    let Target::Cgroup(again) = &named else {
        panic!("{} is not a cgroup target", named.describe())
    };
    assert_eq!(again.v1_memory(), cg.v1_memory());
    let mut s = Sampler::new(named);
    assert_eq!(s.sample().procs, 1);
    drop(s);
    assert!(cg.path().is_dir());
}

/// A disk-backed temporary directory, or a message that the test skips.
fn disk_tempdir_or_skip() -> Option<tempfile::TempDir> {
    let dir = disk_tempdir();
    if dir.is_none() {
        eprintln!(
            "skipped: no disk-backed temporary directory (target dir and /var/tmp are tmpfs)"
        );
    }
    dir
}

#[test]
fn a_child_s_known_spending_is_measured() {
    if let Ok(how) = std::env::var(CHILD) {
        return child(&how);
    }
    let Some(dir) = disk_tempdir_or_skip() else {
        return;
    };
    let mut kid = reexec(
        "spend",
        dir.path(),
        Stdio::piped(),
        "a_child_s_known_spending_is_measured",
    );
    let pid = kid.id() as i32;
    let mut by_pid = Sampler::new(Target::Pid(pid));
    let mut by_cgroup = match Cgroup::create("restest").map(|cg| (cg.add(pid), cg)) {
        Ok((Ok(()), cg)) => {
            assert_eq!(cg.pids(), vec![pid]);
            same_cgroup_by_name(&cg);
            Some(Sampler::new(Target::Cgroup(cg)))
        }
        Ok((Err(e), cg)) => {
            eprintln!(
                "the cgroup target is not tested: cannot move the child into {}: {e}",
                cg.path().display()
            );
            None
        }
        Err(e) => {
            eprintln!("the cgroup target is not tested: {e}");
            None
        }
    };
    let mut stdin = kid.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let mut samplers: Vec<&mut Sampler> = vec![&mut by_pid];
    samplers.extend(by_cgroup.as_mut());
    let r = until_report(dir.path(), &mut samplers, Duration::from_millis(100));
    let (child_cpu, baseline) = (r[0], r[1]);
    assert!(child_cpu >= (SPIN * BURN_ROUNDS).as_micros() as u64);
    let want_mem = ALLOC + baseline;

    let p = by_pid.sample();
    eprintln!("pid target: {p:?}; the child: {child_cpu} µs, baseline {baseline} B");
    eprintln!("pid sources: {}", by_pid.sources());
    assert_near("pid cpu", cpu_us(&p), child_cpu, 0.05);
    assert_near("pid mem peak", p.mem_peak_bytes, want_mem, 0.05);
    assert_near("pid disk writes", p.disk_write_bytes, WRITE, 0.05);
    assert_eq!((p.procs, p.disk_write_ios), (1, None));
    assert!(p.threads >= 1 && p.fds >= 3, "{p:?}");

    let mut cg_path = None;
    if let Some(s) = by_cgroup.as_mut() {
        let c = s.sample();
        eprintln!("cgroup target: {c:?}");
        eprintln!("{}: {}", s.target().describe(), s.sources());
        assert_near("cgroup cpu", cpu_us(&c), child_cpu, 0.05);
        assert_near("cgroup mem peak", c.mem_peak_bytes, want_mem, 0.05);
        assert_near("cgroup disk writes", c.disk_write_bytes, WRITE, 0.05);
        assert_eq!(c.procs, 1);
        let Target::Cgroup(cg) = s.target() else {
            unreachable!()
        };
        cg_path = Some(cg.path().to_owned());
    }

    drop(stdin);
    assert!(kid.wait().unwrap().success());
    // Counters stay where they were once the child is gone.
    let after = by_pid.sample();
    assert_eq!(after.procs, 0);
    assert!(cpu_us(&after) >= cpu_us(&p) && after.disk_write_bytes >= p.disk_write_bytes);
    if let (Some(s), Some(path)) = (by_cgroup, cg_path) {
        drop(s);
        assert!(!path.exists(), "{} was not removed", path.display());
    }
}

#[test]
fn a_reaped_grandchild_is_counted_once() {
    if let Ok(how) = std::env::var(CHILD) {
        return child(&how);
    }
    let Some(dir) = disk_tempdir_or_skip() else {
        return;
    };
    let mut kid = reexec(
        "tree",
        dir.path(),
        Stdio::piped(),
        "a_reaped_grandchild_is_counted_once",
    );
    let mut by_pid = Sampler::new(Target::Pid(kid.id() as i32));
    let mut stdin = kid.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    // Frequent samples: the grandchild is counted while it lives, then
    // its whole spending reaches the child's counters when reaped.
    let mut max_procs = 0;
    let r = {
        let start = Instant::now();
        loop {
            max_procs = max_procs.max(by_pid.sample().procs);
            if let Ok(t) = std::fs::read_to_string(dir.path().join("report")) {
                break t.trim().parse::<u64>().unwrap();
            }
            assert!(start.elapsed() < PATIENCE, "the child did not report");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let s = by_pid.sample();
    eprintln!("tree: {s:?}; the child and its reaped child: {r} µs");
    assert_eq!(max_procs, 2, "the grandchild was never seen");
    assert_eq!(s.procs, 1);
    assert_near("cpu", cpu_us(&s), r, 0.05);
    assert_near("disk writes", s.disk_write_bytes, WRITE / 8, 0.05);
    drop(stdin);
    assert!(kid.wait().unwrap().success());
}
