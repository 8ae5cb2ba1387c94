//! The sampler: one `Target`, read on demand into cumulative `Sample`s.
//! It owns its target (and so a cgroup it was given) and keeps the
//! baselines and per-process state between samples; it is used from one
//! thread at a time.

use crate::cgroup::{read_procs, Cgroup};
use crate::tracker::{self, Tracker};
use crate::{procfs, Sample, Target};
use std::fs;
use std::path::Path;

/// The sum over devices of a cgroup2 io.stat: rbytes, wbytes, rios, wios.
pub(crate) fn parse_io_stat(text: &str) -> [u64; 4] {
    let mut sum = [0u64; 4];
    for kv in text.split_ascii_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let i = match k {
            "rbytes" => 0,
            "wbytes" => 1,
            "rios" => 2,
            "wios" => 3,
            _ => continue,
        };
        sum[i] = sum[i].saturating_add(v.parse().unwrap_or(0));
    }
    sum
}

/// user_usec and system_usec of a cgroup2 cpu.stat.
pub(crate) fn parse_cpu_stat(text: &str) -> Option<[u64; 2]> {
    let mut out = [None, None];
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let i = match f.next() {
            Some("user_usec") => 0,
            Some("system_usec") => 1,
            _ => continue,
        };
        out[i] = f.next().and_then(|v| v.parse().ok());
    }
    Some([out[0]?, out[1]?])
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Reads a target's spending; every figure is since `Sampler::new` for
/// counters, or current for levels. Never panics: what cannot be read
/// (a process that vanished, a file a kernel lacks) is skipped.
#[derive(Debug)]
pub struct Sampler {
    target: Target,
    tracker: Tracker,
    ticks_per_s: u64,
    /// cgroup cpu.stat at the start (µs), when readable.
    cpu_base: Option<[u64; 2]>,
    /// cgroup io.stat at the start, when the cgroup has one.
    io_base: Option<[u64; 4]>,
    peak_seen: u64,
}

impl Sampler {
    /// Takes the baseline now.
    pub fn new(target: Target) -> Sampler {
        let mut s = Sampler {
            cpu_base: None,
            io_base: None,
            tracker: Tracker::default(),
            ticks_per_s: procfs::clock_ticks(),
            peak_seen: 0,
            target,
        };
        if let Target::Cgroup(cg) = &s.target {
            s.cpu_base = s.cpu_stat(cg);
            s.io_base = s.io_stat(cg);
        }
        s.sample();
        s
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Where each figure comes from, for the record (e.g. "cpu: cgroup2
    /// cpu.stat; memory: v1 memory cgroup; disk: /proc/PID/io").
    pub fn sources(&self) -> String {
        let (cpu, mem, disk) = match &self.target {
            Target::Pid(_) => (
                "/proc/PID/stat",
                "/proc/PID/status VmRSS, VmHWM",
                "/proc/PID/io",
            ),
            Target::Threads { .. } => (
                "/proc/PID/task/TID/stat",
                crate::SHARED_MEMORY,
                "/proc/PID/task/TID/io",
            ),
            Target::Cgroup(cg) => (
                if self.cpu_base.is_some() {
                    "cgroup2 cpu.stat"
                } else {
                    "/proc/PID/stat"
                },
                if cg.path().join("memory.current").exists() {
                    "cgroup2 memory.current, memory.peak"
                } else if cg.v1_memory().is_some() {
                    "v1 memory cgroup"
                } else {
                    "/proc/PID/status VmRSS"
                },
                if self.io_base.is_some() {
                    "cgroup2 io.stat"
                } else {
                    "/proc/PID/io"
                },
            ),
        };
        format!("cpu: {cpu}; memory: {mem}; disk: {disk}")
    }

    fn cpu_stat(&self, cg: &Cgroup) -> Option<[u64; 2]> {
        parse_cpu_stat(&fs::read_to_string(cg.path().join("cpu.stat")).ok()?)
    }

    fn io_stat(&self, cg: &Cgroup) -> Option<[u64; 4]> {
        Some(parse_io_stat(
            &fs::read_to_string(cg.path().join("io.stat")).ok()?,
        ))
    }

    pub fn sample(&mut self) -> Sample {
        let members = match &self.target {
            Target::Pid(root) => procfs::descendants(*root),
            Target::Cgroup(cg) => read_procs(cg.path()),
            Target::Threads { pid, prefix } => {
                let (pid, prefix) = (*pid, prefix.clone());
                return self.sample_threads(pid, &prefix);
            }
        };
        let readings: Vec<tracker::Reading> =
            members.iter().filter_map(|p| tracker::read(*p)).collect();
        let total = self.tracker.update(&readings);
        let rss: u64 = readings.iter().map(|r| r.rss).sum();
        let us = |ticks: u64| ticks.saturating_mul(1_000_000) / self.ticks_per_s;
        let mut s = Sample {
            cpu_user_us: us(total[0]),
            cpu_sys_us: us(total[1]),
            mem_bytes: rss,
            mem_peak_bytes: rss,
            disk_read_bytes: total[2],
            disk_write_bytes: total[3],
            disk_read_ios: None,
            disk_write_ios: None,
            fds: readings.iter().map(|r| r.fds).sum(),
            threads: readings.iter().map(|r| r.threads).sum(),
            procs: readings.len() as u64,
        };
        match &self.target {
            Target::Pid(root) => {
                // The root's high-water mark catches a peak between samples.
                if let Some(r) = readings.iter().find(|r| r.pid == *root) {
                    s.mem_peak_bytes = s.mem_peak_bytes.max(r.hwm);
                }
            }
            Target::Cgroup(cg) => self.read_cgroup(cg, &mut s),
            Target::Threads { .. } => {}
        }
        // A peak is the highest level seen, whatever a kernel reports.
        self.peak_seen = self.peak_seen.max(s.mem_peak_bytes).max(s.mem_bytes);
        s.mem_peak_bytes = self.peak_seen;
        s
    }

    fn sample_threads(&mut self, pid: i32, prefix: &str) -> Sample {
        let readings: Vec<tracker::Reading> = procfs::named_threads(pid, prefix)
            .iter()
            .filter_map(|(tid, text)| tracker::read_thread(pid, *tid, text))
            .collect();
        let total = self.tracker.update(&readings);
        let us = |ticks: u64| ticks.saturating_mul(1_000_000) / self.ticks_per_s;
        let process = procfs::status(pid).unwrap_or_default();
        self.peak_seen = self.peak_seen.max(process.hwm).max(process.rss);
        Sample {
            cpu_user_us: us(total[0]),
            cpu_sys_us: us(total[1]),
            mem_bytes: process.rss,
            mem_peak_bytes: self.peak_seen,
            disk_read_bytes: total[2],
            disk_write_bytes: total[3],
            disk_read_ios: None,
            disk_write_ios: None,
            fds: procfs::fds(pid).unwrap_or(0),
            threads: readings.len() as u64,
            procs: u64::from(!readings.is_empty()),
        }
    }

    /// Replaces the process sums with the cgroup's own figures where it
    /// has them: they also cover processes that have exited.
    fn read_cgroup(&self, cg: &Cgroup, s: &mut Sample) {
        if let (Some(base), Some(now)) = (self.cpu_base, self.cpu_stat(cg)) {
            s.cpu_user_us = now[0].saturating_sub(base[0]);
            s.cpu_sys_us = now[1].saturating_sub(base[1]);
        }
        if let Some(cur) = read_u64(&cg.path().join("memory.current")) {
            s.mem_bytes = cur;
            // memory.peak is there from Linux 5.19.
            s.mem_peak_bytes = read_u64(&cg.path().join("memory.peak")).unwrap_or(0);
        } else if let Some(v1) = cg.v1_memory() {
            if let Some(cur) = read_u64(&v1.join("memory.usage_in_bytes")) {
                s.mem_bytes = cur;
                s.mem_peak_bytes = read_u64(&v1.join("memory.max_usage_in_bytes")).unwrap_or(0);
            }
        }
        if let (Some(base), Some(now)) = (self.io_base, self.io_stat(cg)) {
            s.disk_read_bytes = now[0].saturating_sub(base[0]);
            s.disk_write_bytes = now[1].saturating_sub(base[1]);
            s.disk_read_ios = Some(now[2].saturating_sub(base[2]));
            s.disk_write_ios = Some(now[3].saturating_sub(base[3]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_can_move_to_another_thread() {
        fn send<T: Send>(_: &T) {}
        send(&Sampler::new(Target::Pid(std::process::id() as i32)));
    }

    #[test]
    fn io_stat_is_summed_over_devices() {
        let text = "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
                    253:1 rbytes=100 wbytes=0 rios=3 wios=0 dbytes=0 dios=0\n";
        assert_eq!(parse_io_stat(text), [4196, 8192, 4, 2]);
        assert_eq!(parse_io_stat(""), [0; 4]);
    }

    #[test]
    fn cpu_stat_needs_user_and_system() {
        let text = "usage_usec 30\nuser_usec 20\nsystem_usec 10\nnice_usec 0\n";
        assert_eq!(parse_cpu_stat(text), Some([20, 10]));
        assert_eq!(parse_cpu_stat("usage_usec 30\n"), None);
    }

    /// Spends `ms` of this thread's own CPU time (not wall time: a busy
    /// machine would give it less).
    fn spin_cpu(ms: u64) {
        let cpu_ms = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: writes the thread's CPU clock into `ts`.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
        };
        let start = cpu_ms();
        while cpu_ms() - start < ms {
            std::hint::black_box(start);
        }
    }

    #[test]
    fn a_threads_sampler_counts_the_named_threads_and_only_them() {
        use std::sync::mpsc::channel;
        let me = std::process::id() as i32;
        let mut s = Sampler::new(Target::Threads {
            pid: me,
            prefix: "watched-".into(),
        });
        // Each thread spins, says so, and stays until let go.
        let named = |name: &str, ms| {
            let (done_tx, done_rx) = channel();
            let (go_tx, go_rx) = channel::<()>();
            let t = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    spin_cpu(ms);
                    done_tx.send(()).unwrap();
                    let _ = go_rx.recv();
                })
                .unwrap();
            done_rx.recv().unwrap();
            (t, go_tx)
        };
        let a = named("watched-a", 150);
        let b = named("watched-b", 150);
        let other = named("other", 400);
        let seen = s.sample();
        assert_eq!(seen.threads, 2, "{seen:?}");
        let cpu_ms = (seen.cpu_user_us + seen.cpu_sys_us) / 1000;
        // 300 ms of the watched threads (to the clock tick), never the
        // other thread's 400 ms.
        assert!((270..=340).contains(&cpu_ms), "{cpu_ms} ms");
        for (t, go) in [a, b, other] {
            go.send(()).unwrap();
            t.join().unwrap();
        }
        // Threads that exit keep what was counted for them.
        let end = s.sample();
        assert_eq!(end.threads, 0);
        assert!(end.cpu_user_us + end.cpu_sys_us >= seen.cpu_user_us + seen.cpu_sys_us);
        assert!(end.mem_peak_bytes > 0 && end.fds >= 3);
        assert!(s.sources().contains("task/TID/stat"));
    }

    #[test]
    fn a_pid_sampler_counts_nothing_at_first_and_sees_this_process() {
        let me = std::process::id() as i32;
        let mut s = Sampler::new(Target::Pid(me));
        let a = s.sample();
        assert!(a.procs >= 1 && a.threads >= 1 && a.fds >= 3);
        assert!(a.mem_bytes > 0 && a.mem_peak_bytes >= a.mem_bytes);
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(spin.elapsed());
        }
        let b = s.sample();
        assert!(b.cpu_user_us + b.cpu_sys_us >= a.cpu_user_us + a.cpu_sys_us);
        // A vanished target reads as nothing, without panicking.
        let mut gone = Sampler::new(Target::Pid(i32::MAX));
        assert_eq!(gone.sample(), Sample::default());
    }
}
