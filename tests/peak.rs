//! `cacheoff peak` against a proxy whose capacity is known: the reference
//! proxy serving at most 100 requests a second from one queue. The peak
//! it reports keeps the limit when run again, and 1.3 times it does not;
//! a closed-loop search (`--rate max`) steps robots.
//!
//! One robot with equal gaps makes the load a steady stream, so the
//! proxy's queue stays empty below its capacity and grows at once above
//! it: the knee is the capacity, not this machine's speed. The response
//! time limit leaves a busy machine's jitter room (a steady stream at the
//! capacity itself queues a little on it) and is still passed well short
//! of 1.1 times the capacity: above it the queue grows by the excess every
//! second of a 4 s plateau (at 106/s, 24 requests: 240 ms).

use crate::support;

use cacheoff::cli::{Cli, Command, PeakArgs};
use cacheoff::peak_cmd;
use cacheoff_agent::StopHandle;
use cacheoff_base::Rate;
use cacheoff_peak::Limits;
use cacheoff_rundir::peak::Peak;
use cacheoff_workload::{load_text, Overrides};
use clap::Parser;
use std::path::Path;
use std::sync::Mutex;
use support::run::run_into;

const CAPACITY: f64 = 100.0;
const LIMIT: &str = "p99<=250ms";

/// `simple`'s objects from one robot with equal gaps: 1 s of warm-up,
/// 4 s plateaus.
const STEADY: &str = r#"
name = "steady"
peak_rate = "50/s"
[robots]
count = 1
max_conns = 16
arrivals = "constant"
[servers]
count = 4
[[content]]
name = "object"
share = 1.0
size = "exp(13KB)"
cachable = 0.8
life_cycle = { length = "const(730day)", variance = 0.0, with_lmt = 1.0 }
[popularity]
recurrence = 0.6875
[[phases]]
name = "warm"
duration = "1s"
[[phases]]
name = "meas"
duration = "4s"
measured = true
"#;

/// The searches take the machine's two cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn capped() -> cacheoff_proxy::Proxy {
    support::proxy::start(|c| {
        c.capacity = Some(CAPACITY);
        c.workers = 2;
    })
}

fn peak_args(args: &[&str]) -> PeakArgs {
    let argv = ["cacheoff", "peak"].iter().chain(args);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Peak(a) => *a,
        other => panic!("{other:?}"),
    }
}

/// One run of the steady workload at `rate` through `proxy`: does it keep
/// the limit?
fn keeps_limit(dir: &Path, proxy: std::net::SocketAddr, rate: f64) -> bool {
    let o = Overrides {
        rate: Some(Rate(rate).into()),
        ..Default::default()
    };
    let mut w = load_text("steady.toml", STEADY, &o).unwrap();
    w.phases.remove(0);
    let r = run_into(dir, w, Some(proxy), 2, &StopHandle::new());
    let f = cacheoff_peak::figures(&r.summary);
    let pass = Limits::parse(LIMIT, None).unwrap().judge(&f);
    eprintln!("again at {rate}/s: {f:?} -> {pass}");
    pass
}

#[test]
fn the_peak_of_a_capped_proxy_holds_again_and_fails_at_1_3_times() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let proxy = capped();
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("steady.toml");
    std::fs::write(&workload, STEADY).unwrap();
    let out = tmp.path().join("peak");
    let addr = proxy.addr().to_string();
    let a = peak_args(&[
        workload.to_str().unwrap(),
        "--proxy",
        &addr,
        "--rt-limit",
        LIMIT,
        "--rest",
        "0.5s",
        "--workers",
        "2",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = peak_cmd::run(&a, &["peak".into()])
        .map_err(|f| f.error)
        .unwrap();
    // The file as outside tools read it.
    let p = Peak::read(&out).unwrap();
    assert_eq!(p, r.peak);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("peak.json")).unwrap()).unwrap();
    let peak = v["peak_rate_xps"].as_f64().unwrap();
    for s in v["steps"].as_array().unwrap() {
        for k in ["rate_xps", "rt_ms_mean", "rt_ms_p99", "error_pct"] {
            assert!(s[k].is_number(), "{k}: {s}");
        }
        assert!(s["pass"].is_boolean());
        let dir = out.join(s["dir"].as_str().unwrap());
        assert!(dir.join("summary.json").is_file(), "{}", dir.display());
    }
    assert_eq!(v["limit"]["rt_ms"], 250.0);
    assert!(out.join("warmup/summary.json").is_file());
    assert!(out.join("report.html").is_file());
    // Within the band of the capacity: never above it (its queue grows
    // without bound), and this machine is no bottleneck at 100/s.
    assert!(
        (0.7 * CAPACITY..=1.1 * CAPACITY).contains(&peak),
        "peak {peak}/s for a capacity of {CAPACITY}/s: {:#?}",
        p.steps
    );
    let last = p.steps.last().unwrap();
    assert!(last.confirm && last.pass && last.rate_xps == peak);
    assert!(p.steps.iter().any(|s| !s.pass), "the bracket closed");

    let again = tempfile::tempdir().unwrap();
    assert!(keeps_limit(
        &again.path().join("at-peak"),
        proxy.addr(),
        peak
    ));
    assert!(!keeps_limit(
        &again.path().join("above"),
        proxy.addr(),
        1.3 * peak
    ));
}

#[test]
fn a_closed_loop_search_steps_robots() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let proxy = capped();
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("steady.toml");
    std::fs::write(&workload, STEADY).unwrap();
    let out = tmp.path().join("peak");
    let addr = proxy.addr().to_string();
    // Each robot keeps 4 requests in the queue: 40 ms of waiting each, so
    // one robot and two keep the limit with room for a busy machine's
    // jitter, and four (160 ms) do not.
    let a = peak_args(&[
        workload.to_str().unwrap(),
        "--proxy",
        &addr,
        "--rate",
        "max",
        "--max-conns",
        "4",
        "--plateau",
        "2s",
        "--rt-limit",
        "p99<=150ms",
        "--max-load",
        "8",
        "--max-steps",
        "4",
        "--rest",
        "0.5s",
        "--no-warmup",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = peak_cmd::run(&a, &["peak".into()]);
    let p = Peak::read(&out).unwrap();
    assert!(p.closed_loop);
    assert_eq!(p.warmup_dir, None);
    let robots: Vec<u32> = p
        .steps
        .iter()
        .filter(|s| !s.recheck && !s.confirm)
        .map(|s| s.robots.unwrap())
        .collect();
    assert_eq!(&robots[..2], [1, 2], "{robots:?}");
    assert!(robots.len() <= 4, "{robots:?}");
    for s in &p.steps {
        // Throughput, never above what the proxy serves.
        assert_eq!(s.rate_xps, s.throughput_xps);
        assert!(s.rate_xps <= 1.1 * CAPACITY, "{s:?}");
    }
    if r.is_ok() {
        assert!(p.peak_robots.is_some() && p.peak_rate_xps.is_some());
    }
}
