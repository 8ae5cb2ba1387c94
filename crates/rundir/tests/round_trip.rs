//! A run directory written by `RunDir` reads back whole; killed and newer
//! ones are handled as the docs say, and the docs name every field.

use cacheoff_rundir::{
    write_downtime, Build, Ceiling, Manifest, Outage, Replayed, RunDir, RunDirError, RunState,
    DOWNTIME_FILE, FORMAT_VERSION, INTERVALS_FILE, MANIFEST_FILE, REPORT_FILE, SUMMARY_FILE,
    TRACE_FILE, TRACE_FORMAT,
};
use cacheoff_stats::{Accum, IntervalStats, Outcome, RunStats, Snapshot, XactRecord};
use cacheoff_workload::RequestType;
use cacheoff_workload::{load, Overrides, Workload};
use std::path::Path;

fn workload() -> Workload {
    load("simple", &Overrides::default()).unwrap()
}

fn manifest() -> Manifest {
    let build = Build {
        version: "0.0.0".into(),
        git_revision: "test".into(),
    };
    Manifest::new(
        workload(),
        cacheoff_rundir::Mode::Direct,
        None,
        None,
        2,
        &["test".into()],
        &build,
    )
}

/// `xacts` misses of 2 ms from their intended start, 1 ms from their
/// connection; every other one offered as a hit, that an ideal cache hits.
fn snap(xacts: u64) -> Snapshot {
    let mut s = Snapshot::default();
    for n in 0..xacts {
        s.record_send(100);
        s.record_xact(&XactRecord {
            outcome: Outcome::Miss,
            fills_cache: true,
            bytes: 1000,
            full_body: true,
            rtype: RequestType::Basic,
            ctype: 0,
            offered_hit: n % 2 == 0,
            ideal_hit: n % 2 == 0,
            rt_corrected_us: 2000,
            rt_polygraph_us: 1000,
        });
    }
    s
}

/// Writes a run: two intervals of the warm-up and one of the measured
/// phase; returns what was accumulated.
fn write_run(dir: &Path) -> RunStats {
    let mut run_dir = RunDir::create(dir, manifest()).unwrap();
    run_dir
        .servers_bound(&["127.0.0.1:8080".parse().unwrap()])
        .unwrap();
    let mut run = RunStats {
        phases: vec![None, None],
        ..RunStats::default()
    };
    for (index, phase, xacts) in [(0u32, 0usize, 10u64), (1, 0, 20), (2, 1, 30)] {
        let iv = IntervalStats {
            index,
            phase,
            start_s: f64::from(index) * 5.0,
            end_s: f64::from(index + 1) * 5.0,
            robots: 10,
            load: 1.0,
            snap: snap(xacts),
        };
        let record = run_dir.interval(&iv, None).unwrap();
        assert_eq!(record.stats.xacts, xacts);
        run.phases[phase]
            .get_or_insert_with(Accum::default)
            .add_interval(&iv.snap, 5.0);
        run.total.add_interval(&iv.snap, 5.0);
    }
    run.plan_digest = 0xabc;
    run_dir.finish(&run).unwrap();
    run
}

#[test]
fn a_written_run_reads_back_with_its_measured_phase() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let run = RunDir::open(dir.path()).unwrap();
    assert_eq!(run.state(), RunState::Complete);
    assert_eq!(run.intervals.len(), 3);
    assert_eq!(run.manifest.servers.len(), 1);
    assert!(run.manifest.finished_at.is_some());
    let s = run.summary.as_ref().unwrap();
    assert_eq!(s.measured_phase.as_deref(), Some("meas"));
    assert_eq!(s.plan_digest.as_deref(), Some("0000000000000abc"));
    assert_eq!(run.headline().xacts, 30);
    assert_eq!(run.total().xacts, 60);
    assert_eq!(
        run.phases().iter().map(|p| p.xacts).collect::<Vec<_>>(),
        [30, 30]
    );
    // A second run into the same directory is refused.
    assert!(matches!(
        RunDir::create(dir.path(), manifest()),
        Err(RunDirError::HoldsARun(_))
    ));
}

#[test]
fn a_killed_run_folds_its_intervals_and_skips_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    std::fs::remove_file(dir.path().join(SUMMARY_FILE)).unwrap();
    let mut text = std::fs::read_to_string(dir.path().join(INTERVALS_FILE)).unwrap();
    text.push_str("{\"version\":1,\"inter");
    std::fs::write(dir.path().join(INTERVALS_FILE), text).unwrap();
    let run = RunDir::open(dir.path()).unwrap();
    assert_eq!(run.state(), RunState::NoSummary);
    assert_eq!(run.intervals.len(), 3);
    // The same rule picks the measured phase from what the intervals reached.
    assert_eq!(run.measured_phase().as_deref(), Some("meas"));
    assert_eq!(run.total().xacts, 60);
    assert_eq!(run.headline().xacts, 30);
}

#[test]
fn newer_formats_and_strangers_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        RunDir::open(dir.path()),
        Err(RunDirError::NotARun(_))
    ));
    write_run(dir.path());
    let path = dir.path().join(SUMMARY_FILE);
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        &format!("\"version\": {FORMAT_VERSION}"),
        &format!("\"version\": {}", FORMAT_VERSION + 1),
        1,
    );
    std::fs::write(&path, text).unwrap();
    let e = RunDir::open(dir.path()).unwrap_err();
    assert!(matches!(e, RunDirError::NewerFormat { .. }), "{e}");
    assert!(e.to_string().contains("newer cacheoff"), "{e}");
}

#[test]
fn manifest_times_have_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let m = RunDir::open(dir.path()).unwrap().manifest;
    let finished = m.finished_at.clone().unwrap();
    for t in [&m.started_at, &finished] {
        // 2026-11-22T00:15:30.123Z
        assert_eq!(t.len(), 24, "{t}");
        assert!(t[20..23].bytes().all(|b| b.is_ascii_digit()), "{t}");
        assert!(humantime::parse_rfc3339(t).is_ok(), "{t}");
    }
    assert_eq!(&m.started_at[19..20], ".");
    assert!(m.started_at <= finished);
}

/// Rewrites `file` in `dir` through `edit`.
fn rewrite(dir: &Path, file: &str, edit: impl Fn(String) -> String) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
}

/// A JSON document, or with `lines` every line of a JSON-lines file,
/// without the figures format 2 added.
fn without_ideal(text: &str, lines: bool) -> String {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                for k in ["ideal", "ideal_hits", "ideal_hit_bytes"] {
                    o.remove(k);
                }
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let one = |doc: &str| {
        let mut v: serde_json::Value = serde_json::from_str(doc).unwrap();
        strip(&mut v);
        serde_json::to_string(&v).unwrap() + "\n"
    };
    if lines {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(one)
            .collect()
    } else {
        one(text)
    }
}

#[test]
fn a_run_of_format_1_reads_its_send_clock_as_the_second_clock_and_its_offered_hits_as_ideal() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let new = RunDir::open(dir.path()).unwrap();
    assert_eq!(new.headline().rt_polygraph_ms.all.mean, 1.0);
    assert_eq!(new.headline().rt_ms.all.mean, 2.0);
    // What a format-1 run wrote: times to the second, and the second
    // clock under its old name.
    let v1 = |text: String| {
        text.replace("\"version\": 2", "\"version\": 1")
            .replace("\"version\":2", "\"version\":1")
            .replace("rt_polygraph_ms", "rt_uncorrected_ms")
    };
    // ... and its offered hits were an ideal cache's, with no `ideal`.
    rewrite(dir.path(), SUMMARY_FILE, |t| v1(without_ideal(&t, false)));
    rewrite(dir.path(), INTERVALS_FILE, |t| v1(without_ideal(&t, true)));
    rewrite(dir.path(), MANIFEST_FILE, |text| {
        let m: serde_json::Value = serde_json::from_str(&text).unwrap();
        let to_seconds = |k: &str| m[k].as_str().unwrap().to_string();
        let (started, finished) = (to_seconds("started_at"), to_seconds("finished_at"));
        v1(text)
            .replace(&started, &format!("{}Z", &started[..19]))
            .replace(&finished, &format!("{}Z", &finished[..19]))
    });
    let text = std::fs::read_to_string(dir.path().join(SUMMARY_FILE)).unwrap();
    assert!(text.contains("rt_uncorrected_ms") && !text.contains("rt_polygraph_ms"));
    assert!(text.contains("offered_hits") && !text.contains("ideal"));
    let old = RunDir::open(dir.path()).unwrap();
    assert_eq!(old.manifest.version, 1);
    assert_eq!(old.manifest.started_at.len(), 20);
    assert_eq!(old.summary.as_ref().unwrap().version, 1);
    assert_eq!(old.intervals[0].version, 1);
    assert_eq!(old.headline(), new.headline());
    assert_eq!(old.total(), new.total());
    assert_eq!(
        old.summary.unwrap().distributions,
        new.summary.unwrap().distributions
    );
    // Killed before its summary: the intervals fold the same way.
    std::fs::remove_file(dir.path().join(SUMMARY_FILE)).unwrap();
    let killed = RunDir::open(dir.path()).unwrap();
    assert_eq!(killed.headline().rt_polygraph_ms.all.mean, 1.0);
}

/// Top-level keys of a JSON object.
fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn the_docs_name_every_file_and_every_top_level_field() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/run-directory.md"
    ))
    .unwrap();
    for f in [
        MANIFEST_FILE,
        INTERVALS_FILE,
        SUMMARY_FILE,
        REPORT_FILE,
        DOWNTIME_FILE,
    ] {
        assert!(doc.contains(&format!("`{f}`")), "{f}");
    }
    assert!(doc.contains(&format!("currently {FORMAT_VERSION}")));
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(f)).unwrap()).unwrap()
    };
    assert_eq!(RunDir::open(dir.path()).unwrap().outage, None);
    write_downtime(dir.path(), 600.0, 605.0).unwrap();
    assert_eq!(
        RunDir::open(dir.path()).unwrap().outage,
        Some(Outage {
            power_cut_s: 600.0,
            power_on_s: 605.0
        })
    );
    let summary = read(SUMMARY_FILE);
    let manifest = read(MANIFEST_FILE);
    let downtime = read(DOWNTIME_FILE);
    for key in keys(&summary)
        .into_iter()
        .filter(|k| !matches!(k.as_str(), "phases" | "total" | "distributions"))
        .chain(keys(&manifest).into_iter().filter(|k| k != "workload"))
        .chain(keys(&downtime))
    {
        let row = doc
            .lines()
            .any(|l| l.starts_with("| ") && l.contains(&format!("`{key}`")));
        assert!(row, "{key} undocumented");
    }
}

#[test]
fn a_replay_keeps_its_trace_and_the_summary_repeats_its_ceilings() {
    let dir = tempfile::tempdir().unwrap();
    let replayed = Replayed {
        format: TRACE_FORMAT.into(),
        version: FORMAT_VERSION,
        file: "access.log.gz".into(),
        trace_format: "squid".into(),
        requests: 1000,
        objects: 400,
        cachable_requests: 900,
        bytes: 13 << 20,
        trace_duration_s: 3600.0,
        speed: 60.0,
        cache_bytes: 64 << 20,
        cachable_rule: "trace".into(),
        ceiling: Ceiling {
            infinite: 60.0,
            lru: 41.5,
            belady: 52.25,
        },
    };
    let mut run_dir = RunDir::create(dir.path(), manifest()).unwrap();
    run_dir.replaying(replayed.clone()).unwrap();
    let summary = run_dir.finish(&RunStats::default()).unwrap();
    assert_eq!(summary.ceiling, Some(replayed.ceiling));
    let run = RunDir::open(dir.path()).unwrap();
    assert_eq!(run.replayed, Some(replayed));
    assert_eq!(run.summary.unwrap().ceiling.unwrap().lru, 41.5);
    // An ordinary run has neither.
    let plain = tempfile::tempdir().unwrap();
    write_run(plain.path());
    let run = RunDir::open(plain.path()).unwrap();
    assert!(run.replayed.is_none() && run.summary.unwrap().ceiling.is_none());

    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/run-directory.md"
    ))
    .unwrap();
    assert!(doc.contains(&format!("`{TRACE_FILE}`")));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(TRACE_FILE)).unwrap())
            .unwrap();
    for key in keys(&trace).into_iter().chain(["ceiling".to_string()]) {
        let row = doc
            .lines()
            .any(|l| l.starts_with("| ") && l.contains(&format!("`{key}`")));
        assert!(row, "{key} undocumented");
    }
}
