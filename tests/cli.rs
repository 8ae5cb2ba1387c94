//! The `cacheoff` binary as a user runs it: exit codes, messages, signals.

use crate::support;

use std::process::{Output, Stdio};
use std::time::Duration;
use support::process::{cacheoff, command, signal, stderr, stdout};
use support::run::wait_for_intervals;

/// Runs `cacheoff args...`, which must fail as a usage error (exit code
/// 2) that names `needle`; returns its message.
fn assert_usage_error(args: &[&str], needle: &str) -> String {
    let o = cacheoff(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(e.contains(needle), "{args:?}: no {needle:?} in {e}");
    e
}

#[test]
fn bad_input_is_a_usage_error_that_names_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "nope"], "unknown workload \"nope\""),
        (&["run", "simple", "--rate", "4/fortnight"], "4/fortnight"),
        (&["run", "simple", "--size", "gauss(1KB)"], "gauss"),
        (
            &["run", "simple", "--robots", "20000000"],
            "robots.count = 20000000 (--robots): must be 1 ≤ x ≤ 100000",
        ),
        (&["run", "simple", "--duration", "soon"], "soon"),
        (
            &["run", "simple", "--proxy", "not-an-address"],
            "not-an-address",
        ),
    ];
    for (args, needle) in cases {
        assert_usage_error(args, needle);
    }

    // Broken workload files: the place is named and nothing is started
    // (no run directory appears).
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &str)] = &[
        ("[[phases]]\nname = \"a\"\nduration = \n", "w.toml:3:"),
        (
            "[timeouts]\nidle = \"0s\"\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n",
            "w.toml:2:8: timeouts.idle = 0s: must be 0s < x ≤ 1day",
        ),
        (
            "[robots]\nbacklog = \"many\"\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n",
            "w.toml:2:11",
        ),
    ];
    for (text, needle) in files {
        let file = dir.path().join("w.toml");
        std::fs::write(&file, text).unwrap();
        let out = dir.path().join("never");
        let args = [
            "run",
            file.to_str().unwrap(),
            "--direct",
            "-o",
            out.to_str().unwrap(),
        ];
        assert_usage_error(&args, needle);
        assert!(!out.exists(), "{text}: a run directory was made");
    }
    assert_usage_error(
        &["proxy", "--fault", "explode"],
        "unknown fault \"explode\"",
    );
}

#[test]
fn a_short_run_prints_progress_and_fills_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = cacheoff(&[
        "run",
        "simple",
        "--rate",
        "200/s",
        "--robots",
        "20",
        "--servers",
        "4",
        "--warmup",
        "1s",
        "--duration",
        "5s",
        "-o",
        out.to_str().unwrap(),
    ]);
    let stdout = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout.contains("hit ratio (offered)"), "{stdout}");
    assert!(stdout.contains(" meas "), "{stdout}");
    assert!(stdout.contains("run directory:"), "{stdout}");
    for f in ["manifest.json", "intervals.jsonl", "summary.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["command_line"][1], "run");
    assert_eq!(m["workload"]["robots"]["count"], 20);
    assert!(m["finished_at"].is_string());
    // The embedded reference proxy is watched by its threads: CPU its own,
    // memory the whole process's, so nothing per cached byte.
    let watched = m["watched"].as_str().unwrap();
    assert!(watched.starts_with("threads proxy-* of pid "), "{watched}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let r = &s["resources"];
    assert!(r["cpu_ms_per_1k_xacts"].as_f64() > Some(0.0), "{r}");
    assert!(r["threads_max"].as_u64() >= Some(1), "{r}");
    assert!(r["mem_peak_bytes"].as_u64() > Some(0), "{r}");
    assert!(r["mem_per_cached_byte"].is_null(), "{r}");

    // The same directory is not overwritten.
    assert_usage_error(
        &[
            "run",
            "simple",
            "--duration",
            "1s",
            "-o",
            out.to_str().unwrap(),
        ],
        "already holds a run",
    );
}

#[test]
fn sigint_stops_gracefully_and_sigkill_loses_no_finished_interval() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = |name: &str| {
        command()
            .args([
                "run",
                "simple",
                "--rate",
                "100/s",
                "--robots",
                "10",
                "--servers",
                "2",
                "--warmup",
                "5s",
                "--duration",
                "60s",
                "-q",
                "-o",
            ])
            .arg(dir.path().join(name))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };

    let child = spawn("int");
    // Once the 5 s warm-up interval is on disk.
    wait_for_intervals(&dir.path().join("int"), 1);
    signal(child.id(), "-INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("int/summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["interrupted"], true);
    // The warm-up interval on disk, and the total counting it.
    let kept = cacheoff_rundir::RunDir::open(&dir.path().join("int"))
        .unwrap()
        .intervals;
    assert!(kept[0].stats.xacts > 0, "{:?}", kept[0].stats);
    let sum: u64 = kept.iter().map(|i| i.stats.xacts).sum();
    assert_eq!(s["total"]["xacts"].as_u64(), Some(sum));

    let mut child = spawn("kill");
    wait_for_intervals(&dir.path().join("kill"), 1);
    signal(child.id(), "-KILL");
    child.wait().unwrap();
    let run = dir.path().join("kill");
    assert!(!run.join("summary.json").exists());
    let intervals = cacheoff_rundir::RunDir::open(&run).unwrap().intervals;
    assert_eq!(intervals.len(), 1, "the 5 s warm-up interval was kept");
    assert!(intervals[0].stats.xacts > 0, "{:?}", intervals[0].stats);
    assert!(
        (intervals[0].end_s - 5.0).abs() < 1e-6,
        "{}",
        intervals[0].end_s
    );

    // Servers that take 20 s per reply: the graceful stop waits up to
    // timeouts.drain for them (their first-byte timeout ends them first),
    // a second signal does not.
    let slow = dir.path().join("slow.toml");
    std::fs::write(
        &slow,
        "peak_rate = \"50/s\"\ninterval = \"1s\"\n[robots]\ncount = 10\n[servers]\ncount = 2\n\
         think_time = \"const(20s)\"\n[[phases]]\nname = \"a\"\nduration = \"1min\"\n",
    )
    .unwrap();
    let mut child = command()
        .args(["run", slow.to_str().unwrap(), "--direct", "-q", "-o"])
        .arg(dir.path().join("twice"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A second in, requests wait for their 20 s replies.
    wait_for_intervals(&dir.path().join("twice"), 1);
    signal(child.id(), "-INT");
    // The test itself, not a wait for something: 300 ms after the first
    // signal the run is still draining (its replies take 20 s).
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "still draining");
    signal(child.id(), "-TERM");
    let t = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // At once: a wait for the replies would take most of 20 s.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // Both render their report cards, marked as what they are.
    for (name, mark) in [
        ("int", "data-state=\"interrupted\""),
        ("kill", "data-state=\"no-summary\""),
    ] {
        let run = dir.path().join(name);
        let o = cacheoff(&["report", run.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let html = std::fs::read_to_string(run.join("report.html")).unwrap();
        assert!(html.contains(mark), "{name}");
    }
}

#[test]
fn a_run_against_an_address_where_nothing_listens_exits_2_at_once() {
    let closed = format!("127.0.0.1:{}", cacheoff_testkit::free_port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let started = std::time::Instant::now();
    let args = [
        "run",
        "simple",
        "--proxy",
        &closed,
        "--duration",
        "1min",
        "--out",
        out.to_str().unwrap(),
    ];
    assert_usage_error(&args, &closed);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!out.exists(), "nothing is started");
}

#[test]
fn report_needs_a_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert_usage_error(
        &["report", dir.path().to_str().unwrap()],
        "not a cacheoff run directory",
    );
}

#[test]
fn workload_list_show_and_check() {
    let o = cacheoff(&["workload", "list"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("simple "));

    let o = cacheoff(&["workload", "show", "simple"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text.contains("Phases") && text.contains("offered hit ratio"),
        "{text}"
    );

    // The surrogate workload at a compressed scale: a working set that is
    // revisited, and an offer near its nominal 76%.
    let o = cacheoff(&[
        "workload",
        "show",
        "webaxe-4",
        "--plateau",
        "1min",
        "--peak-rate",
        "200/s",
        "--cache-size",
        "32MB",
    ]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0));
    for needle in [
        "client link            40ms one-way delay",
        "frozen after 397 fill transactions in a phase (4.267MB ÷ 11KB)",
        "offered                DHR 7",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"b\"\n[[content]]\nname = \"o\"\nshare = 1.0\nsize = \"1KB\"\ncachable = 0.5\ncolour = \"red\"\n",
    )
    .unwrap();
    let e = assert_usage_error(
        &["workload", "check", bad.to_str().unwrap()],
        "bad.toml:7:1: unknown field `colour`",
    );
    assert!(
        e.contains("expected one of `name`, `share`, `size`, `cachable`"),
        "{e}"
    );
}

#[test]
fn a_workload_file_runs_like_a_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        r#"
name = "mine"
description = "two short phases with a ramp"
peak_rate = "300/s"
[robots]
count = 30
[servers]
count = 3
[[content]]
name = "blob"
share = 1.0
size = "const(2KB)"
cachable = 1.0
[[phases]]
name = "ramp"
duration = "2s"
load_begin = 0.2
load_end = 1.0
[[phases]]
name = "top"
duration = "3s"
measured = true
"#,
    )
    .unwrap();
    let o = cacheoff(&["workload", "check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.path().join("run");
    let o = cacheoff(&[
        "run",
        file.to_str().unwrap(),
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["workload"], "mine");
    assert_eq!(s["measured_phase"], "top");
    let ramp = &s["phases"][0];
    let top = &s["phases"][1];
    // The ramp averages 60% of the peak rate, the top phase 100%, as the
    // pacer issued them (a busy machine's late replies move between
    // phases).
    let issued_rate =
        |p: &serde_json::Value| p["issued"].as_f64().unwrap() / p["duration_s"].as_f64().unwrap();
    let (ramp_rate, top_rate) = (issued_rate(ramp), issued_rate(top));
    assert!(ramp_rate > 120.0 && ramp_rate < 240.0, "ramp {ramp_rate}");
    assert!(top_rate > 250.0 && top_rate < 350.0, "top {top_rate}");
    // Every object cachable: offered DHR = recurrence.
    assert!((top["dhr"]["offered"].as_f64().unwrap() - 68.75).abs() < 6.0);
}

/// `cacheoff run simple` through `proxy` for `secs` measured seconds,
/// into `out`.
fn run_simple_through(proxy: &cacheoff_proxy::Proxy, out: &std::path::Path, secs: &str) -> Output {
    let addr = proxy.addr().to_string();
    cacheoff(&[
        "run",
        "simple",
        "--proxy",
        &addr,
        "--rate",
        "200/s",
        "--warmup",
        "1s",
        "--duration",
        secs,
        "-q",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_run_that_breaks_a_cache_off_rule_exits_1_and_says_why() {
    // Every hit arrives with a flipped byte: far more than 3% errors.
    let proxy = support::proxy::start(|c| {
        c.faults = cacheoff_proxy::Faults::new(vec![(cacheoff_proxy::Fault::FlipByte, 1.0)])
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_simple_through(&proxy, &out, "2s");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("disqualified"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("errors, more than 3%"),
        "{}",
        stderr(&o)
    );
    // What it measured is kept.
    assert!(out.join("summary.json").exists() && out.join("report.html").exists());
}

#[test]
fn a_cache_that_hits_too_little_is_failed_on_its_card_and_by_its_exit_status() {
    // A proxy that stores nothing: 0% hits where simple offers over 50%.
    let proxy = support::proxy::start(|c| c.memory = 0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_simple_through(&proxy, &out, "3s");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("disqualified") && err.contains("under 25%"),
        "{err}"
    );
    // The card says the same, from the same rules.
    let card = std::fs::read_to_string(out.join("report.html")).unwrap();
    let row = card
        .split("<tr>")
        .find(|r| r.contains("<td>hit ratio</td>"))
        .unwrap_or_else(|| panic!("no hit-ratio verdict on the card"));
    assert!(
        row.contains("class=\"fail\"") && row.contains("under 25%"),
        "{row}"
    );
}

#[test]
fn a_surrogate_gets_its_address_map_before_the_run() {
    let o = cacheoff(&[
        "workload",
        "addrmap",
        "simple",
        "--servers",
        "3",
        "--server-port",
        "18080",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let map = cacheoff_workload::AddrMap::parse(&stdout(&o)).unwrap();
    assert_eq!(
        map.entries()
            .iter()
            .map(|(n, a)| format!("{n} {a}"))
            .collect::<Vec<_>>(),
        [
            "s1.bench.tst 127.2.0.1:18080",
            "s2.bench.tst 127.2.0.2:18080",
            "s3.bench.tst 127.2.0.3:18080"
        ]
    );
    // Without a fixed port the addresses are not known before the run.
    assert_usage_error(&["workload", "addrmap", "simple"], "--server-port");
    assert_usage_error(
        &[
            "run",
            "simple",
            "--reverse",
            "127.0.0.1:9",
            "--duration",
            "1s",
        ],
        "--server-port",
    );
}

#[test]
fn a_reverse_run_of_the_reference_proxy_just_works() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = cacheoff(&[
        "run",
        "simple",
        "--reverse",
        "--rate",
        "200/s",
        "--warmup",
        "1s",
        "--duration",
        "2s",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"mode\": \"reverse\""), "{manifest}");
    let map = std::fs::read_to_string(out.join("addrmap.txt")).unwrap();
    assert!(map.contains("s1.bench.tst"), "{map}");
}

#[test]
fn ab_starts_a_named_product_afresh_for_each_run_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ab");
    let o = cacheoff(&[
        "ab",
        "simple",
        "--a",
        "reference",
        "--b",
        "reference",
        "--rounds",
        "1",
        "--plateau",
        "1s",
        "--cache-size",
        "8MB",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ab.json")).unwrap()).unwrap();
    let runs = ab["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{ab}");
    // Each run with its own product: its files beside the run's, what it
    // spent watched through its own cgroup.
    let cpu = ab["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "resources.cpu_ms_per_1k_xacts")
        .unwrap_or_else(|| panic!("no CPU figure: {ab}"));
    assert!(cpu["a"].as_f64().unwrap() > 0.0 && cpu["b"].as_f64().unwrap() > 0.0);
    for side in [&runs[0]["a_dir"], &runs[0]["b_dir"]] {
        let side = side.as_str().unwrap();
        let d = out.join(side);
        assert!(d.join("product").is_dir(), "{}", d.display());
        assert!(d.join("run/summary.json").is_file(), "{}", d.display());
    }
    // A name that is no product is bad input.
    assert_usage_error(
        &["ab", "simple", "--a", "no-such-product", "--b", "reference"],
        "no-such-product",
    );
}
