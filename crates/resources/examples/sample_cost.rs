//! What one `Sampler::sample()` costs: a target process holding 50 threads
//! and 1,000 open files (this example run again with `--hold`) is sampled
//! N times (default 1,000) as a pid target and as a cgroup target; the
//! peer is the least any sampler pays, one read of /proc/PID/stat.
//!
//! `cargo run --release -p cacheoff-resources --example sample_cost [N]`

use cacheoff_resources::{Cgroup, Sample, Sampler, Target};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const THREADS: usize = 50;
const FILES: usize = 1_000;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The target: holds its threads and files until stdin closes.
fn hold() {
    let files: Vec<std::fs::File> = (0..FILES)
        .map(|_| std::fs::File::open("/dev/null").expect("open /dev/null"))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let _ = rx.lock().map(|r| r.recv());
            })
        })
        .collect();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(tx);
    for t in threads {
        let _ = t.join();
    }
    drop(files);
}

/// CPU µs and wall µs per call of `f`, over `n` calls.
fn per_call(n: u32, mut f: impl FnMut()) -> (f64, f64) {
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    for _ in 0..n {
        f();
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    (per(thread_cpu() - cpu0), per(wall0.elapsed()))
}

fn main() {
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--hold") {
        return hold();
    }
    let n: u32 = arg.map_or(1_000, |a| a.parse().expect("N: a number of samples"));
    let mut target = Command::new(std::env::current_exe().unwrap())
        .arg("--hold")
        .stdin(Stdio::piped())
        .spawn()
        .expect("start the target");
    let pid = target.id() as i32;

    let ready = |s: &Sample| s.threads > THREADS as u64 && s.fds >= FILES as u64;
    let mut by_pid = Sampler::new(Target::Pid(pid));
    let until = Instant::now() + Duration::from_secs(10);
    while !ready(&by_pid.sample()) {
        assert!(Instant::now() < until, "the target did not set up");
        std::thread::sleep(Duration::from_millis(10));
    }
    let processes = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        })
        .count();
    let s = by_pid.sample();
    println!(
        "target: pid {pid}, {} threads, {} fds; {processes} processes on the machine; {n} samples each",
        s.threads, s.fds
    );
    println!(
        "{:<34} {:>12} {:>12} {:>14} {:>14} {:>9}",
        "what", "cpu_us/call", "wall_us/call", "core%_at_1/s", "core%_at_1/5s", "vs_peer"
    );
    let stat = format!("/proc/{pid}/stat");
    let peer = per_call(n, || {
        std::hint::black_box(std::fs::read_to_string(&stat).unwrap());
    });
    let row = |what: &str, (cpu, wall): (f64, f64)| {
        println!(
            "{what:<34} {cpu:>12.1} {wall:>12.1} {:>14.4} {:>14.4} {:>8.1}x",
            cpu / 1e6 * 100.0,
            cpu / 5e6 * 100.0,
            cpu / peer.0
        );
    };
    row("peer: one read of /proc/PID/stat", peer);
    row(
        "sample(), pid target",
        per_call(n, || {
            assert!(ready(&by_pid.sample()));
        }),
    );
    match Cgroup::create("sample-cost") {
        Ok(cg) => {
            cg.add(pid).expect("move the target into the cgroup");
            let mut by_cg = Sampler::new(Target::Cgroup(cg));
            println!("# cgroup target sources: {}", by_cg.sources());
            row(
                "sample(), cgroup target",
                per_call(n, || {
                    assert!(ready(&by_cg.sample()));
                }),
            );
            drop(target.stdin.take());
            let _ = target.wait();
        }
        Err(e) => {
            println!("# no cgroup target: {e}");
            drop(target.stdin.take());
            let _ = target.wait();
        }
    }
}
