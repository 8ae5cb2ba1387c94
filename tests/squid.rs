//! Squid from Debian as the proxy under test. `.ci/run` installs Squid and
//! runs this test (it is ignored by a plain `cargo test`).

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_run::RunResult;
use cacheoff_testkit::{accepting, free_port, within};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;
use support::run::{
    assert_every_planned_request_ended, compressed, from_text, phase, planned, run_into, simple,
    WORKERS,
};
use support::{process, repo_file};

struct Squid {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Squid {
    fn drop(&mut self) {
        // SIGTERM, then wait (its shutdown_lifetime is 1 s).
        process::terminate(&mut self.child, Duration::from_secs(15));
    }
}

fn squid_binary() -> &'static str {
    for p in ["/usr/sbin/squid", "/usr/bin/squid"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    panic!(
        "squid is not installed: run .ci/run (it installs Debian's squid) or apt-get install squid"
    );
}

fn start_squid(dir: &Path) -> Squid {
    start_squid_with(dir, "")
}

/// Squid with ops/squid/squid.conf and `extra` lines after it; a
/// `cache_dir` in them is made first (`squid -z`).
fn start_squid_with(dir: &Path, extra: &str) -> Squid {
    let port = free_port();
    let conf = repo_file("ops/squid/squid.conf")
        .replace("@PORT@", &port.to_string())
        .replace("@DIR@", dir.to_str().unwrap())
        + &extra.replace("@DIR@", dir.to_str().unwrap());
    // Squid drops root privileges to its own user, which must write here.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let conf_path = dir.join("squid.conf");
    std::fs::write(&conf_path, conf).unwrap();
    if extra.contains("cache_dir") {
        let made = Command::new(squid_binary())
            .args(["-N", "-z", "-f"])
            .arg(&conf_path)
            .status()
            .expect("squid -z");
        assert!(made.success(), "squid -z: {made}");
    }
    let child = Command::new(squid_binary())
        .arg("-N")
        .arg("-f")
        .arg(&conf_path)
        .spawn()
        .expect("start squid");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(
        within(Duration::from_secs(30), || accepting(addr)),
        "squid did not listen on {addr}; cache.log:\n{}",
        std::fs::read_to_string(dir.join("cache.log")).unwrap_or_default()
    );
    Squid { child, addr }
}

/// Runs `w` through a fresh Squid; returns the result and Squid's access
/// log.
fn run_through_squid(w: cacheoff_workload::Workload) -> (RunResult, String) {
    let dir = tempfile::tempdir().unwrap();
    let squid = start_squid(dir.path());
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let r = run_into(&run_dir, w, Some(squid.addr), WORKERS, &StopHandle::new());
    drop(squid); // stops Squid, which flushes its access log
    let log = std::fs::read_to_string(dir.path().join("access.log")).unwrap();
    (r, log)
}

#[test]
#[ignore = "needs Debian's squid; .ci/run installs it and runs this"]
fn squid_hits_match_its_access_log() {
    let w = simple(300.0, 300, 50, 5.0, 60.0);
    let plan = planned(&w);
    let (r, log) = run_through_squid(w);
    let t = &r.summary.total;
    let squid_hits = log
        .lines()
        .filter(|l| l.contains("TCP_HIT/") || l.contains("TCP_MEM_HIT/"))
        .count() as f64;
    let squid_lines = log.lines().count();
    let robot_hits = t.rt_ms.hit.count as f64;
    eprintln!(
        "robots: {} xacts, {} hits, DHR {} (offered {}), errors {:?}; squid: {} lines, {} hits",
        t.xacts,
        robot_hits,
        t.dhr.measured,
        t.dhr.offered,
        t.errors.by_kind,
        squid_lines,
        squid_hits
    );
    // Every planned request was sent and ended, nearly all of them well.
    assert_every_planned_request_ended(&plan, t);
    assert!(plan.total > 15_000, "{plan:?}");
    assert!(t.errors.percent < 1.0, "errors {:?}", t.errors.by_kind);
    assert!(robot_hits > 5000.0);
    assert!(
        (robot_hits - squid_hits).abs() <= 0.01 * squid_hits,
        "robots saw {robot_hits} hits, squid logged {squid_hits}"
    );
    assert!(
        (t.dhr.measured - t.dhr.ideal).abs() <= 5.0,
        "measured DHR {} vs ideal {}",
        t.dhr.measured,
        t.dhr.ideal
    );
}

/// PolyMix content and PolyMix-4's request mix: IMS, reloads, POST, HEAD.
const SPECIAL_MIX: &str = r#"
name = "squid-mix"
peak_rate = "300/s"
content = "polymix"
[robots]
count = 300
[servers]
count = 50
think_time = "norm(50ms,20ms)"
[popularity]
recurrence = 0.7237
[requests]
basic = 0.784
ims200 = 0.05
ims304 = 0.10
reload = 0.05
post = 0.015
head = 0.001
[[phases]]
name = "warm"
duration = "5s"
[[phases]]
name = "meas"
duration = "30s"
measured = true
"#;

#[test]
#[ignore = "needs Debian's squid; .ci/run installs it and runs this"]
fn squid_answers_every_request_type_correctly() {
    let w = from_text("squid-mix.toml", SPECIAL_MIX);
    let plan = planned(&w);
    let (r, _log) = run_through_squid(w);
    let t = &r.summary.total;
    eprintln!(
        "xacts {}, types {:?}, DHR {} (offered {}), errors {:?}",
        t.xacts, t.request_types, t.dhr.measured, t.dhr.offered, t.errors.by_kind
    );
    // Every planned page was sent (and with no error, answered with its
    // images).
    assert_eq!(t.issued, plan.total);
    // 35 s at 300/s, images included: some 3,900 pages.
    assert!(plan.total > 3_000, "{plan:?}");
    // Squid answers IMS by Last-Modified, sends reloads and POSTs to the
    // origin and never serves an uncachable object: no errors at all.
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    for k in ["ims200", "ims304", "reload", "post"] {
        assert!(t.request_types[k] > 30, "{k}: {:?}", t.request_types);
    }
    assert!(t.dhr.measured > 45.0 && (t.dhr.ideal - t.dhr.measured) < 6.0);
}

#[test]
#[ignore = "needs Debian's squid; .ci/run installs it and runs this"]
fn squid_runs_a_compressed_polymix_3() {
    let w = compressed("polymix-3", 200.0, 15.0, Some(16 << 20));
    let (r, log) = run_through_squid(w);
    let t = &r.summary.total;
    let top2 = phase(&r.summary, "top2");
    eprintln!(
        "total {} xacts, errors {:?}; top2 {} xacts, DHR {} of {}, rt hit {} miss {}",
        t.xacts,
        t.errors.by_kind,
        top2.xacts,
        top2.dhr.measured,
        top2.dhr.offered,
        top2.rt_ms.hit.mean,
        top2.rt_ms.miss.mean
    );
    assert!(!r.summary.interrupted);
    assert_eq!(r.summary.phases.len(), 12);
    assert!(t.errors.percent < 1.0, "{:?}", t.errors.by_kind);
    assert!(top2.dhr.measured > 25.0, "DHR {}", top2.dhr.measured);
    // Hits skip the think time and the WAN: each hit the robots counted
    // (by the echo, a reply fetched for another transaction) Squid logged
    // as served from its store, with no origin fetch; its other hit lines
    // are transactions that failed or were aborted, at most. (How long
    // hits take against misses is `bench/planned-latency.sh`'s.)
    let stored = log.lines().filter(|l| from_store(l)).count() as u64;
    let hits = t.rt_ms.hit.count;
    assert!(
        hits > 1000 && hits <= stored && stored <= hits + t.errors.total + t.aborts.robot,
        "robots counted {hits} hits, Squid logged {stored}"
    );
}

/// Whether an access log line (`squid` format) is a reply Squid served
/// from its store without asking the origin: a `*_HIT` code (`TCP_HIT`,
/// `TCP_MEM_HIT`, `TCP_IMS_HIT`, ...); a refresh is `TCP_REFRESH_*`.
fn from_store(line: &str) -> bool {
    line.split_whitespace()
        .nth(3)
        .and_then(|code| code.split('/').next())
        .is_some_and(|c| c.ends_with("_HIT"))
}

/// What Squid spent through a run of `w` with `extra` configuration:
/// watched by its pid, access log off so that only the cache writes.
fn squid_spending(w: cacheoff_workload::Workload, extra: &str) -> cacheoff_resources::Resources {
    let dir = tempfile::tempdir().unwrap();
    let squid = start_squid_with(
        dir.path(),
        &format!("access_log none\ncache_log /dev/null\n{extra}"),
    );
    let run_dir = dir.path().join("run");
    let setup = cacheoff_run::Setup {
        watch: Some(cacheoff_run::watch::Watch::parse(&squid.child.id().to_string()).unwrap()),
        ..support::run::setup(w, cacheoff_agent::Via::Proxy(squid.addr))
    };
    let r = cacheoff_run::run_setup(&run_dir, setup, &["squid".into()], &StopHandle::new())
        .map_err(anyhow::Error::from)
        .unwrap();
    drop(squid);
    r.summary.resources.expect("a watched run has resources")
}

#[test]
#[ignore = "needs Debian's squid; .ci/run installs it and runs this"]
fn squid_with_a_disk_cache_writes_to_disk_and_with_cache_mem_only_does_not() {
    let w = || simple(300.0, 30, 4, 2.0, 6.0);
    let disk = squid_spending(w(), "cache_dir aufs @DIR@/cache 256 16 64\n");
    let mem = squid_spending(w(), "");
    eprintln!("disk cache: {disk:?}\ncache_mem only: {mem:?}");
    // Every object it keeps goes to the disk cache too.
    let wa = disk.write_amplification.expect("objects were fetched");
    assert!(wa > 0.5, "write amplification with a disk cache: {wa}");
    // In memory alone, nothing of the objects is written: what is left
    // (276 KiB in every run, whatever the load) is not the cache's.
    let wa_mem = mem.write_amplification.expect("objects were fetched");
    assert!(
        wa_mem < 0.05 && wa_mem < wa / 10.0,
        "write amplification with cache_mem only: {wa_mem} (with a disk cache {wa})"
    );
    for r in [&disk, &mem] {
        assert!(r.cores_used > 0.0 && r.mem_peak_bytes > 1 << 20, "{r:?}");
        assert!(r.cpu_ms_per_1k_xacts.is_some_and(|c| c > 0.0), "{r:?}");
        assert!(r.threads_max >= 1 && r.fds_max >= 3, "{r:?}");
    }
}
