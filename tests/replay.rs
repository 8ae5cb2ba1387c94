//! `cacheoff replay`: traces of every format, made by `cacheoff trace`
//! from a workload's plan, replayed as the binary runs them, with the
//! trace's ceilings beside the measured figures.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::process::{cacheoff, stderr, stdout};

/// Writes a `format` trace of `requests` requests of the `simple`
/// workload's plan to `path`.
fn make_trace(path: &Path, format: &str, requests: usize) {
    let o = cacheoff(&[
        "trace",
        "simple",
        "--format",
        format,
        "--requests",
        &requests.to_string(),
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn summary(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

fn replay(trace: &Path, run: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "-q",
        "-o",
        run.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    cacheoff(&args)
}

#[test]
fn a_trace_through_the_reference_proxy_reaches_its_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("access.log.gz");
    make_trace(&trace, "squid", 3000);
    let run = dir.path().join("run");
    let o = replay(&trace, &run, &["--speed", "4", "--cache-size", "64MB"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let s = summary(&run);
    let total = &s["total"];
    assert_eq!(total["xacts"], 3000, "{total}");
    assert_eq!(total["errors"]["total"], 0);
    let ceiling = &s["ceiling"];
    let infinite = ceiling["infinite"].as_f64().unwrap();
    // The cache holds the whole trace: LRU and Belady reach the infinite
    // cache, and so does the reference proxy, within what the requests in
    // flight at once (a second request of an object before its first
    // reply is stored) take off.
    assert_eq!(ceiling["lru"].as_f64().unwrap(), infinite);
    assert_eq!(ceiling["belady"].as_f64().unwrap(), infinite);
    let measured = total["dhr"]["measured"].as_f64().unwrap();
    let offered = total["dhr"]["offered"].as_f64().unwrap();
    assert!((offered - infinite).abs() < 0.5, "{offered} vs {infinite}");
    assert!(
        measured > infinite - 3.0 && measured <= infinite + 0.01,
        "{measured} vs {infinite}"
    );
    let trace_json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("trace.json")).unwrap()).unwrap();
    assert_eq!(trace_json["trace_format"], "squid");
    assert_eq!(trace_json["requests"], 3000);
    assert!(stdout(&o).contains("the trace allows"), "{}", stdout(&o));
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(report.contains("The trace and its ceilings"));
}

#[test]
fn every_format_replays_whole_and_a_small_cache_falls_below_the_infinite_one() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["clf", "oracle-general", "wikimedia", "csv"] {
        let trace = dir.path().join(format!("t.{format}"));
        make_trace(&trace, format, 1500);
        let run = dir.path().join(format!("run-{format}"));
        // CSV is never guessed; the rest are detected.
        let fmt: &[&str] = if format == "csv" {
            &["--format", "csv"]
        } else {
            &[]
        };
        let o = replay(
            &trace,
            &run,
            &[fmt, &["--speed", "4", "--cache-size", "2MB"]].concat(),
        );
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let s = summary(&run);
        assert_eq!(s["total"]["xacts"], 1500, "{format}");
        assert_eq!(s["total"]["errors"]["total"], 0, "{format}");
        let c = &s["ceiling"];
        let (inf, lru, belady) = (
            c["infinite"].as_f64().unwrap(),
            c["lru"].as_f64().unwrap(),
            c["belady"].as_f64().unwrap(),
        );
        assert!(lru < inf && lru <= belady && belady <= inf, "{format}: {c}");
        let measured = s["total"]["dhr"]["measured"].as_f64().unwrap();
        assert!(measured <= inf + 0.01, "{format}: {measured} > {inf}");
    }
}

#[test]
fn a_malformed_line_is_named_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("access.log");
    make_trace(&trace, "squid", 50);
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[6] = "1700000000.500 3 10.0.0.1 TCP_MISS/200 12a GET http://h/x - HIER_NONE/- -";
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let run = dir.path().join("run");
    let o = replay(&trace, &run, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("access.log:7:"), "{}", stderr(&o));
    assert!(!run.exists());
}

/// The traced time to first byte is the origin's: misses pay it, hits
/// do not.
#[test]
fn the_traced_time_to_first_byte_delays_misses_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let mut csv = String::from("time,url,size,ttfb\n");
    for i in 0..40 {
        let obj = i % 10;
        csv.push_str(&format!(
            "{:.3},http://site.example/o{obj},2000,0.150\n",
            f64::from(i) * 0.05
        ));
    }
    std::fs::write(&trace, csv).unwrap();
    let run = dir.path().join("run");
    let o = replay(&trace, &run, &["--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = summary(&run);
    let t = &s["total"];
    assert_eq!(t["xacts"], 40);
    assert_eq!(t["counts"]["basic_hits"], 30, "{t}");
    let miss = t["rt_ms"]["miss"]["mean"].as_f64().unwrap();
    let hit = t["rt_ms"]["hit"]["p50"].as_f64().unwrap();
    assert!(miss >= 150.0, "misses wait the traced 150 ms: {miss}");
    // Were hits delayed too, every one would take 150 ms or more; a busy
    // machine delays a few, not the median.
    assert!(hit < 150.0, "hits do not: median {hit}");
}

/// Reverse mode (the reference proxy as the surrogate, routing the
/// trace's sites by name), and `--rate` in place of `--speed`.
#[test]
fn a_trace_replays_to_a_surrogate_at_the_rate_asked() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.tsv");
    make_trace(&trace, "wikimedia", 1200);
    let run = dir.path().join("run");
    let o = replay(&trace, &run, &["--reverse", "--rate", "1200/s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["mode"], "reverse");
    assert!(run.join("addrmap.txt").exists());
    let s = summary(&run);
    assert_eq!(s["total"]["xacts"], 1200);
    assert_eq!(s["total"]["errors"]["total"], 0);
    assert!(
        s["total"]["dhr"]["measured"].as_f64().unwrap() > 10.0,
        "{}",
        s["total"]
    );
    // 1200 requests at 1200/s: about a second of replay.
    let trace_json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("trace.json")).unwrap()).unwrap();
    let speed = trace_json["speed"].as_f64().unwrap();
    let traced = trace_json["trace_duration_s"].as_f64().unwrap();
    assert!((traced / speed - 1.0).abs() < 0.01, "{trace_json}");
}

/// Runs `cacheoff ARGS`, failing the test if it has not ended within
/// `limit` (it would hang for ever otherwise).
fn ended_within(args: &[&str], limit: std::time::Duration) -> std::process::Output {
    let mut child = support::process::command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ended = cacheoff_testkit::within(limit, || child.try_wait().unwrap().is_some());
    if !ended {
        let _ = child.kill();
        panic!("cacheoff {args:?} still running after {limit:?}");
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_trace_longer_than_the_plan_lengthens_its_measured_phase() {
    // `simple`'s plan holds about 28,000 requests: four times more used to
    // loop for ever past the plan's end.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.log");
    let o = ended_within(
        &[
            "trace",
            "simple",
            "--format",
            "squid",
            "--requests",
            "120000",
            "-o",
            out.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(300),
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 120_000);
    // In time order, past the plan's 70 s: the measured phase went on.
    let times: Vec<f64> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|t| t[0] <= t[1]));
    assert!(
        times[times.len() - 1] - times[0] > 70.0,
        "{:?}",
        times.last()
    );

    // A plan whose measured phase issues nothing cannot be lengthened: it
    // is refused at once, with what it holds.
    let idle = dir.path().join("idle.toml");
    std::fs::write(
        &idle,
        "name = \"idle\"\npeak_rate = \"100/s\"\n[[content]]\nname = \"o\"\nshare = 1.0\nsize = \"const(1KB)\"\ncachable = 1.0\n\
         [[phases]]\nname = \"warm\"\nduration = \"2s\"\n\
         [[phases]]\nname = \"meas\"\nduration = \"2s\"\nload_begin = 0.0\nload_end = 0.0\nmeasured = true\n",
    )
    .unwrap();
    let o = ended_within(
        &[
            "trace",
            idle.to_str().unwrap(),
            "--format",
            "csv",
            "--requests",
            "100000",
            "-o",
            dir.path().join("idle.log").to_str().unwrap(),
        ],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("its plan gives"), "{}", stderr(&o));
}

#[test]
fn curve_gives_lru_at_every_size_and_meets_the_infinite_cache_at_the_footprint() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.log");
    make_trace(&trace, "squid", 20_000);
    let json = |args: &[&str]| -> Value {
        let o = cacheoff(args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let t = trace.to_str().unwrap();
    let c = json(&["curve", t, "--json"]);
    let sizes: Vec<u64> = serde_json::from_value(c["sizes"].clone()).unwrap();
    let fp = c["footprint_bytes"].as_u64().unwrap();
    assert_eq!(c["requests"], 20_000);
    // The default: 12 sizes from 0.1% of the footprint to all of it.
    assert_eq!(sizes.len(), 12);
    assert_eq!((sizes[0], sizes[11]), (fp / 1000, fp), "{c}");
    let inf = &c["curves"]["infinite"];
    for policy in ["lru", "fifo", "s3fifo"] {
        for k in ["rhr", "bhr"] {
            let v: Vec<f64> = serde_json::from_value(c["curves"][policy][k].clone()).unwrap();
            assert_eq!(v.len(), 12);
            assert!(v.iter().all(|&x| (0.0..=100.0).contains(&x)), "{v:?}");
            // As large as every object: nothing is evicted, the infinite
            // cache.
            assert!(
                (v[11] - inf[k].as_f64().unwrap()).abs() < 1e-9,
                "{policy} {k}: {c}"
            );
            assert!(v[0] < v[11], "{policy} {k}: {v:?}");
        }
    }
    // Sizes as a list or a range; a workload's plan as the input.
    let listed = json(&["curve", t, "--sizes", "1MB,64MB", "--json"]);
    assert_eq!(listed["sizes"], serde_json::json!([1 << 20, 64 << 20]));
    let plan = json(&["curve", "simple", "--sizes", "1MB..1GB", "--json"]);
    assert_eq!(plan["sizes"].as_array().unwrap().len(), 12);
    assert!(plan["requests"].as_u64().unwrap() > 20_000, "{plan}");
    // A malformed line is named, and nothing is printed as a curve.
    std::fs::write(dir.path().join("bad.log"), "not a trace line\n").unwrap();
    let o = cacheoff(&[
        "curve",
        dir.path().join("bad.log").to_str().unwrap(),
        "--format",
        "squid",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("bad.log"), "{}", stderr(&o));
}

#[test]
fn the_curve_commands_in_docs_traces_md_run_as_shown() {
    let docs = support::repo_file("docs/traces.md");
    let at = docs.find("## Hit ratio against cache size").unwrap();
    let block = &docs[at..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for line in block.lines() {
        let line = line.split("  #").next().unwrap().trim();
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let o = support::process::command()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{line}: {}", stderr(&o));
        if args[0] == "curve" {
            assert!(
                stdout(&o).contains("LRU") || stdout(&o).contains("\"lru\""),
                "{line}"
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 3);
}
