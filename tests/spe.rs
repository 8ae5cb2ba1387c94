//! SPE on real traffic: a trace replayed by the binary through the
//! Multiplier, which serves the Collector's replies and copies every
//! request to the reference proxy and Squid (both fetching through the
//! Collector), a reference proxy that corrupts bodies, and a proxy that
//! never answers. Squid comes from Debian (`.ci/run` installs it; a
//! plain `cargo test` skips this).

use crate::support;

use cacheoff_multiplier::{Config, ProxyUnderTest};
use cacheoff_proxy::{Fault, Faults, Proxy, Role};
use cacheoff_testkit::{accepting, free_port, hold, origin, until};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use support::process::{cacheoff, stderr, stdout};

fn child(parent: SocketAddr, fault: Option<Fault>) -> Proxy {
    support::proxy::start(|c| {
        c.parent = Some(parent.to_string());
        c.memory = 64 << 20;
        if let Some(f) = fault {
            c.faults = Faults::new(vec![(f, 0.5)]);
        }
    })
}

/// Origin fetches per URL, from the Collector's access log (it alone
/// talks to the origin servers).
fn origin_fetches(log: &Path) -> HashMap<String, u32> {
    let mut n = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 8 && f[8].starts_with("HIER_DIRECT") {
            *n.entry(f[6].to_string()).or_default() += 1;
        }
    }
    n
}

/// The access log's lines for `url`.
fn log_of(log: &Path, url: &str) -> String {
    let all = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = all.lines().filter(|l| l.contains(url)).collect();
    lines.join("\n")
}

#[test]
#[ignore = "needs Squid: run .ci/run (it installs it), or cargo test -- --ignored"]
fn a_replayed_trace_compares_every_proxy_on_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("access.log");
    let o = cacheoff(&[
        "trace",
        "simple",
        "--format",
        "squid",
        "--requests",
        "2500",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let log = dir.path().join("collector.log");
    let collector = support::proxy::start(|c| {
        c.role = Role::Collector;
        c.memory = 512 << 20;
        c.access_log = Some(log.clone());
    });
    let reference = child(collector.addr(), None);
    let corrupt = child(collector.addr(), Some(Fault::FlipByte));
    let mut squid = support::proxy::squid_under(collector.addr(), dir.path());
    // Accepts connections and never answers, longer than the replay
    // lasts: its copies pile up.
    let stalled = origin(|_| hold(Duration::from_secs(600)));
    let proxies = vec![
        ProxyUnderTest {
            name: "reference".into(),
            addr: reference.addr(),
        },
        ProxyUnderTest {
            name: "squid".into(),
            addr: squid.listen(),
        },
        ProxyUnderTest {
            name: "corrupt".into(),
            addr: corrupt.addr(),
        },
        ProxyUnderTest {
            name: "stalled".into(),
            addr: stalled.addr(),
        },
    ];
    let spe = dir.path().join("spe");
    let mut cfg = Config::new(
        "127.0.0.1:0".parse().unwrap(),
        collector.addr(),
        proxies,
        spe.clone(),
    );
    // Room for an honest proxy to fall seconds behind on a busy machine
    // (a debug build), not for the stalled one to hold every copy.
    cfg.queue = 2048;
    cfg.conns_per_proxy = 256;
    cfg.stop_grace = Duration::from_secs(3);
    // The stalled proxy holds what it took for the whole (slow) replay:
    // no copy of it times out (nor a connect its full backlog keeps
    // waiting) and frees its place for another.
    cfg.connect_timeout = Duration::from_secs(300);
    cfg.first_byte_timeout = Duration::from_secs(300);
    cfg.idle_timeout = Duration::from_secs(300);
    // Squid, started as a product, spends in a cgroup of its own.
    let watch = cacheoff_run::watch::Watch::new(
        squid
            .watch_target()
            .expect("a started product can be watched"),
    );
    cfg.watched = [("squid".to_string(), watch.describe())].into();
    let watch = std::sync::Mutex::new(watch);
    cfg.sample = Some(std::sync::Arc::new(move || {
        let mut w = watch.lock().unwrap();
        [("squid".to_string(), w.interval())].into()
    }));
    let m = cacheoff_multiplier::start(cfg).unwrap();

    // Half speed: the Collector keeps only the latest reply of an
    // uncachable URL, so a copy that falls behind the next request for it
    // is fetched again, and once the replay (and its origin servers) has
    // ended that fails (503). Squid on a busy machine fell 4 s behind at
    // full speed.
    let clients = dir.path().join("clients");
    let o = cacheoff(&[
        "replay",
        trace.to_str().unwrap(),
        "--proxy",
        &m.addr().to_string(),
        "--speed",
        "0.5",
        "-q",
        "-o",
        clients.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let summary = m.stop().unwrap();
    squid.stop().unwrap();

    // The clients got every reply, from the Collector, unharmed.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(clients.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(run["total"]["xacts"], 2500);
    assert_eq!(run["total"]["errors"]["total"], 0, "{}", run["total"]);
    // And the preflight check's probe.
    assert_eq!(summary.requests, 2501);

    let spent = &summary.resources["squid"];
    eprintln!("squid spent: {spent:?}");
    assert!(spent.source.starts_with("cgroup "), "{spent:?}");
    assert!(
        spent.cores_used > 0.0 && spent.mem_peak_bytes > 1 << 20,
        "{spent:?}"
    );
    assert!(
        spent.cpu_ms_per_1k_xacts.is_some_and(|c| c > 0.0),
        "{spent:?}"
    );
    let p = |name: &str| summary.proxy(name).unwrap();
    for honest in ["reference", "squid"] {
        let s = &p(honest).span;
        assert_eq!(s.counts.copied, summary.requests, "{honest}");
        assert_eq!(s.counts.dropped, 0, "{honest}");
        assert_eq!(s.counts.mismatches, 0, "{honest}: {:?}", s.examples);
        assert!(s.counts.validated_hits > 500, "{honest}: {:?}", s.counts);
        assert!(
            p(honest).claimed_hit_ratio > 0.0 && s.counts.unverified < 50,
            "{honest}: {:?}",
            s.counts
        );
    }
    let bad = &p("corrupt").span;
    assert!(
        bad.mismatches_by_kind
            .get("corrupt_body")
            .copied()
            .unwrap_or(0)
            > 20,
        "{:?}",
        bad.mismatches_by_kind
    );
    assert_eq!(
        bad.counts.mismatches,
        bad.mismatches_by_kind.values().sum::<u64>()
    );
    assert!(bad.examples.iter().any(|e| e.kind == "corrupt_body"));
    let stalled = p("stalled");
    // It holds its 256 connections and 2048 queued copies; the rest drop.
    assert!(
        stalled.overloaded && stalled.span.counts.dropped > 150,
        "{:?}",
        stalled.span.counts
    );
    let ranked: Vec<&str> = summary
        .ranking
        .iter()
        .filter(|r| r.rank.is_some())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(ranked.len(), 2, "{:?}", summary.ranking);
    assert!(ranked.contains(&"reference") && ranked.contains(&"squid"));

    // The origin saw each cachable object at most once: every proxy's
    // misses went to the Collector, which kept the objects.
    let fetches = origin_fetches(&log);
    assert!(!fetches.is_empty());
    for (url, n) in &fetches {
        let uncachable = url.ends_with('u');
        assert!(
            uncachable || *n == 1,
            "{url} fetched {n} times; the Collector's log of it:\n{}",
            log_of(&log, url)
        );
    }
    let out = cacheoff(&["report", spe.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(spe.join("report.html")).unwrap();
    assert!(page.contains("Which proxy would have served these users best"));
}

/// The command as outside checks use it: `cacheoff multiplier` until
/// SIGTERM, then `summary.json` with the fields they read, and the page.
#[test]
fn the_multiplier_command_writes_its_summary_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let collector = support::proxy::start(|c| c.role = Role::Collector);
    let reference = child(collector.addr(), None);
    let listen = format!("127.0.0.1:{}", free_port());
    let out = dir.path().join("spe");
    let mut m = support::process::command()
        .args([
            "multiplier",
            "--listen",
            &listen,
            "--collector",
            &collector.addr().to_string(),
            "--proxy",
            &format!("ref={}", reference.addr()),
            // The in-process proxy's spending is this test process's.
            "--watch",
            &format!("ref={}", std::process::id()),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    until("the Multiplier listens", Duration::from_secs(60), || {
        accepting(listen.parse().unwrap())
    });
    let trace = dir.path().join("t.clf");
    let o = cacheoff(&[
        "trace",
        "simple",
        "--format",
        "clf",
        "--requests",
        "2000",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Half speed, as above: copies that fall behind on a busy machine.
    let clients = dir.path().join("clients");
    let o = cacheoff(&[
        "replay",
        trace.to_str().unwrap(),
        "--proxy",
        &listen,
        "--speed",
        "0.5",
        "-q",
        "-o",
        clients.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    support::process::signal(m.id(), "-TERM");
    let status = m.wait().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut m.stdout.take().unwrap(), &mut text).unwrap();
    assert!(status.success(), "{text}");
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(text.contains("#1 ref"), "{text}{summary}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let requests = s["requests"].as_u64().unwrap();
    assert_eq!(requests, 2001, "the trace and the preflight probe: {s}");
    let spent = &s["resources"]["ref"];
    assert!(spent["cores_used"].as_f64().unwrap() > 0.0, "{spent}");
    assert!(
        spent["cpu_ms_per_1k_xacts"].as_f64().unwrap() > 0.0,
        "{spent}"
    );
    assert!(
        spent["source"].as_str().unwrap().starts_with("pid "),
        "{spent}"
    );
    let p = &s["proxies"][0];
    assert_eq!(p["name"], "ref");
    assert_eq!(p["copied"].as_u64(), Some(requests));
    assert_eq!(p["dropped"], 0);
    assert_eq!(p["mismatches"], 0, "{p}");
    assert!(p["mismatches_by_kind"].is_object());
    assert!(p["claimed_hits"].as_u64().unwrap() > 0, "{p}");
    for v in ["hit", "miss", "all"] {
        for f in ["mean", "p50", "p99"] {
            assert!(p["rt_ms"][v][f].is_number(), "rt_ms.{v}.{f}: {p}");
        }
    }
    assert!(out.join("report.html").exists());
    assert!(
        std::fs::read_to_string(out.join("intervals.jsonl"))
            .unwrap()
            .lines()
            .count()
            >= 1
    );
}
