//! The `cacheoff` binary as a user runs it: exit codes, messages, signals.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn cacheoff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cacheoff"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_input_is_a_usage_error_that_names_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "nope"], "unknown workload \"nope\""),
        (&["run", "simple", "--rate", "4/fortnight"], "4/fortnight"),
        (&["run", "simple", "--size", "gauss(1KB)"], "gauss"),
        (&["run", "simple", "--robots", "20000000"], "127.0.0.0/8"),
        (&["run", "simple", "--duration", "soon"], "soon"),
        (
            &["run", "simple", "--proxy", "not-an-address"],
            "not-an-address",
        ),
    ];
    for (args, needle) in cases {
        let o = cacheoff(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
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
    let stdout = String::from_utf8_lossy(&o.stdout);
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

    // The same directory is not overwritten.
    let again = cacheoff(&[
        "run",
        "simple",
        "--duration",
        "1s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already holds a run"),
        "{}",
        stderr(&again)
    );
}

fn signal(pid: u32, sig: &str) {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn sigint_stops_gracefully_and_sigkill_loses_no_finished_interval() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = |name: &str| {
        Command::new(env!("CARGO_BIN_EXE_cacheoff"))
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
    std::thread::sleep(Duration::from_millis(6500));
    signal(child.id(), "-INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("int/summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["interrupted"], true);
    assert!(s["total"]["xacts"].as_u64().unwrap() > 400);

    let mut child = spawn("kill");
    std::thread::sleep(Duration::from_millis(6500));
    signal(child.id(), "-KILL");
    child.wait().unwrap();
    let run = dir.path().join("kill");
    assert!(!run.join("summary.json").exists());
    let intervals = cacheoff_stats::log::read_intervals(&run).unwrap();
    assert_eq!(intervals.len(), 1, "the 5 s warm-up interval was kept");
    assert!(intervals[0].stats.xacts > 400);
}
