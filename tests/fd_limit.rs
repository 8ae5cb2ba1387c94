//! The descriptor limit: a run raises it as far as it may, runs without a
//! word when what it opens fits, and stops with an error naming the
//! limit when it does not. Each case runs the binary under `prlimit` with
//! a low hard limit, which only a process with `CAP_SYS_RESOURCE` could
//! raise again.

use crate::support;

use std::process::{Command, Output};

/// Whether this process may raise its hard limit (bit 24 of CapEff).
fn privileged() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .unwrap();
    u64::from_str_radix(eff.trim(), 16).unwrap() & (1 << 24) != 0
}

/// `cacheoff run simple --direct ARGS` with the descriptor limits (soft
/// and hard) at `limit`; `None` where the test cannot lower them for good.
fn run_limited(limit: u32, args: &[&str]) -> Option<Output> {
    if privileged() {
        eprintln!("CAP_SYS_RESOURCE: the run could raise any limit; nothing to test");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = Command::new("prlimit")
        .arg(format!("--nofile={limit}:{limit}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_cacheoff"))
        .args(["run", "simple", "--direct", "-q", "-o"])
        .arg(&out)
        .args(args)
        .output()
        .expect("prlimit (util-linux) runs");
    Some(o)
}

#[test]
fn too_many_listeners_for_the_limit_is_a_clear_error() {
    let args = [
        "--robots",
        "4",
        "--servers",
        "300",
        "--rate",
        "4/s",
        "--warmup",
        "1s",
        "--duration",
        "1s",
    ];
    let Some(o) = run_limited(128, &args) else {
        return;
    };
    let err = support::process::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ran out of file descriptors at the limit of 128 (hard limit 128)"),
        "{err}"
    );
    assert!(
        err.contains("ulimit -n") && err.contains("LimitNOFILE="),
        "{err}"
    );
}

/// The most the run could hold (2 x 40 robots x 4 connections, servers
/// and slack: 578) is above the limit, but what it keeps open fits: it
/// runs, and says nothing about descriptors.
#[test]
fn a_run_that_fits_under_a_lower_limit_runs_without_a_warning() {
    let args = [
        "--robots",
        "40",
        "--servers",
        "2",
        "--max-conns",
        "4",
        "--rate",
        "40/s",
        "--warmup",
        "1s",
        "--duration",
        "2s",
    ];
    let Some(o) = run_limited(400, &args) else {
        return;
    };
    let err = support::process::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("descriptor"), "{err}");
}

/// Robots that need more connections at once than the limit allows: the
/// run stops at the first one it cannot open.
#[test]
fn running_out_mid_run_stops_the_run_naming_the_limit() {
    let args = [
        "--robots",
        "150",
        "--servers",
        "2",
        "--rate",
        "300/s",
        "--think-time",
        "1s",
        "--warmup",
        "1s",
        "--duration",
        "3s",
    ];
    let Some(o) = run_limited(160, &args) else {
        return;
    };
    let err = support::process::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ran out of file descriptors at the limit of 160 (hard limit 160)"),
        "{err}"
    );
}
