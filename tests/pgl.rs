//! Web Polygraph workload files (`.pg`) through the command line: import
//! to a workload file, the plain-English description with the address
//! mapping, a refusal that names what is not modelled and where, and a
//! compressed run of an imported PolyMix-3 through the reference proxy
//! offering the built-in PolyMix-3's hit ratio.

use crate::support;

use cacheoff_base::{Bytes, Dur, Rate};
use cacheoff_workload::Overrides;
use support::process::{cacheoff, stderr, stdout};
use support::run::{compressed, phase, roomy, run};

fn pg(name: &str) -> String {
    format!("{}/crates/pgl/tests/pgl/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn import_writes_a_workload_file_that_loads_and_show_describes_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pm4.toml");
    let o = cacheoff(&[
        "workload",
        "import",
        &pg("polymix-4.pg"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("# Imported by cacheoff from"), "{text}");
    // The mapping of the file's addresses is printed.
    assert!(stdout(&o).contains("PolyMix4As"), "{}", stdout(&o));
    let o = cacheoff(&["workload", "check", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cacheoff(&[
        "workload",
        "show",
        &pg("polymix-4.pg"),
        "--cache-size",
        "64MB",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("127.1.0.1") && s.contains("Expected offered hit ratio"),
        "{s}"
    );
}

#[test]
fn a_run_of_a_pg_file_keeps_it_and_its_import_in_the_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = cacheoff(&[
        "run",
        &pg("downtime.pg"),
        "--direct",
        "--plateau",
        "3s",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let source = std::fs::read_to_string(out.join("workload.pg")).unwrap();
    assert_eq!(source, std::fs::read_to_string(pg("downtime.pg")).unwrap());
    let toml = std::fs::read_to_string(out.join("workload.toml")).unwrap();
    assert!(toml.contains("arrivals = \"constant\""), "{toml}");
}

#[test]
fn a_file_with_what_cacheoff_does_not_model_is_refused_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(pg("datacomm-1.pg"))
        .unwrap()
        .replace(
            "#include \"include/phases.pg\"",
            &format!("#include \"{}\"", pg("include/phases.pg")),
        )
        .replace(
            "\taddresses = robotAddrs",
            "\tcookie_sender = 10%;\n\taddresses = robotAddrs",
        );
    let file = dir.path().join("cookies.pg");
    std::fs::write(&file, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("cookie_sender"))
        .unwrap()
        + 1;
    let f = file.to_str().unwrap();
    // Its include is outside its directory: allowed by naming it.
    let include = pg("include/phases.pg");
    let o = cacheoff(&[
        "run",
        f,
        "--direct",
        "--plateau",
        "2s",
        "-q",
        "--include",
        &include,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("cookies.pg:{line}:")) && e.contains("Robot.cookie_sender"),
        "{e}"
    );
    assert!(e.contains("--lenient"), "{e}");
    // With --lenient it is left out, said so, and the rest is understood.
    let o = cacheoff(&["workload", "show", f, "--lenient", "--include", &include]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("cookie_sender"), "{}", stdout(&o));
}

#[test]
fn an_imported_polymix_3_run_offers_the_builtin_s_hit_ratio() {
    let o = Overrides {
        rate: Some(Rate(200.0).into()),
        cache_size: Some(Bytes(4 << 20)),
        plateau: Some(Dur::secs(6.0)),
        ..Default::default()
    };
    let imported =
        roomy(cacheoff_run::workload::load(&pg("polymix-3.pg"), &o, &Default::default()).unwrap());
    let builtin = compressed("polymix-3", 200.0, 6.0, Some(4 << 20));
    let through = |w| {
        let p = support::proxy::reference(64 << 20);
        let (_dir, r) = run(w, Some(p.addr()));
        let t = &r.summary.total;
        assert!(t.errors.percent < 1.0, "{:?}", t.errors.by_kind);
        phase(&r.summary, "top2").dhr.offered
    };
    // Both at once (the runs are independent; support::run allows two).
    let (ours, theirs) = std::thread::scope(|s| {
        let ours = s.spawn(|| through(imported));
        let theirs = s.spawn(|| through(builtin));
        (ours.join().unwrap(), theirs.join().unwrap())
    });
    eprintln!("offered DHR in top2: imported {ours:.2}%, built-in {theirs:.2}%");
    assert!(
        (ours - theirs).abs() <= 1.0,
        "imported {ours}, built-in {theirs}"
    );
}

#[test]
fn a_pg_file_runs_through_peak_and_lineup_as_through_run() {
    let dir = tempfile::tempdir().unwrap();
    let peak = dir.path().join("peak");
    let o = cacheoff(&[
        "peak",
        &pg("downtime.pg"),
        "--plateau",
        "1s",
        "--rt-limit",
        "p99<=10s",
        "--max-load",
        "4",
        "--max-steps",
        "2",
        "--rest",
        "0.1s",
        "--no-warmup",
        "--cache-size",
        "64MB",
        "-q",
        "-o",
        peak.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let p = cacheoff_rundir::peak::Peak::read(&peak).unwrap();
    assert!(p.steps.len() >= 2 && p.peak_rate_xps.is_some(), "{p:?}");
    // Imported once, however many steps: its mapping said once.
    assert_eq!(stdout(&o).matches("servers: 10 addresses").count(), 1);

    let lineup = dir.path().join("lineup.toml");
    std::fs::write(
        &lineup,
        format!(
            "forward_workload = {:?}\nbaseline = false\n",
            pg("downtime.pg")
        ),
    )
    .unwrap();
    let out = dir.path().join("lineup");
    let o = cacheoff(&[
        "lineup",
        lineup.to_str().unwrap(),
        "--product",
        "reference:forward",
        "--no-downtime",
        "--no-msl",
        "--no-conform",
        "--plateau",
        "2s",
        "--cache-size",
        "64MB",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let runs = summary.to_string();
    assert!(runs.contains("downtime"), "the .pg's workload ran: {runs}");
}
