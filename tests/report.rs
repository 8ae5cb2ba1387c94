//! Report cards and exports of real runs: complete, interrupted, and killed
//! (no summary, a torn last interval line).

mod support;

use cacheoff::run_cmd::RunResult;
use cacheoff_agent::StopHandle;
use cacheoff_report::{export, html, RunState};
use cacheoff_workload::Workload;
use std::path::Path;
use support::run::{compressed, phase, run_into, simple, stop_after};
use support::{proxy, repo_file};

fn workload(duration_s: f64) -> Workload {
    simple(400.0, 40, 8, 5.0, duration_s)
}

/// Runs `w` into `dir` through a caching proxy, with one worker.
fn run(dir: &Path, w: Workload, stop: &StopHandle) -> RunResult {
    let proxy = proxy::caching();
    run_into(dir, w, Some(proxy.addr()), 1, stop)
}

/// `(data-points, data-series)` of every chart figure.
fn figures(html: &str) -> Vec<(usize, usize)> {
    html.match_indices("<figure class=\"chart\"")
        .map(|(i, _)| {
            let tag = &html[i..i + html[i..].find('>').unwrap()];
            let attr = |name: &str| -> usize {
                let k = format!("{name}=\"");
                let at = tag.find(&k).unwrap() + k.len();
                tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
            };
            (attr("data-points"), attr("data-series"))
        })
        .collect()
}

fn assert_self_contained(html: &str) {
    for needle in ["<script src", "<link", "src=\"http", "url(http", "@import"] {
        assert!(!html.contains(needle), "report loads {needle}");
    }
}

#[test]
fn a_complete_run_gets_every_section_with_data() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), workload(10.0), &StopHandle::new());
    assert!(r.summary.total.rt_ms.hit.count > 0);
    let run = cacheoff_rundir::RunDir::open(dir.path()).unwrap();
    assert_eq!(run.state(), RunState::Complete);
    let path = html::write(&run).unwrap();
    let page = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&page);
    for id in [
        "summary",
        "verdict",
        "charts",
        "distributions",
        "latency",
        "phases",
        "content",
        "requests",
        "errors",
        "workload",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "section {id}");
    }
    assert!(
        !page.contains("data-state="),
        "a complete run has no banner"
    );
    // Seven charts over time and three distributions, each with data in
    // every series it names.
    let figs = figures(&page);
    assert_eq!(figs.len(), 10, "{figs:?}");
    for (points, series) in &figs {
        assert!(*series >= 1 && *points >= *series, "{figs:?}");
    }
    // The headline comes from the measured phase and passes the rules.
    assert!(page.contains("Headline figures (phase meas)"));
    assert_eq!(
        page.matches("class=\"pass\"").count(),
        2,
        "errors and hit ratio pass"
    );
    let meas = phase(&r.summary, "meas");
    assert!(page.contains(&format!("{:.1}%", meas.dhr.measured)));
    // Response times on both clocks, each named for what it measures.
    assert!(page.contains("id=\"response-times\""));
    for c in cacheoff_stats::RtClock::ALL {
        assert!(
            page.contains(&format!("response time, {}", c.description())),
            "{c:?}"
        );
    }
}

#[test]
fn an_interrupted_run_is_marked_and_still_complete_in_form() {
    let dir = tempfile::tempdir().unwrap();
    let stop = StopHandle::new();
    // Stopped once the warm-up interval is on disk.
    let stopper = stop_after(dir.path(), 1, &stop);
    run(dir.path(), workload(60.0), &stop);
    stopper.join().unwrap();
    let run = cacheoff_rundir::RunDir::open(dir.path()).unwrap();
    assert_eq!(run.state(), RunState::Interrupted);
    let page = html::render(&run).unwrap();
    assert!(page.contains("data-state=\"interrupted\""));
    assert_eq!(figures(&page).len(), 10);
}

/// A copy of a finished run as a `kill -9` leaves it: no summary, and half
/// a line at the end of the intervals.
fn killed_copy(from: &Path, to: &Path) {
    for f in ["manifest.json", "intervals.jsonl"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    let mut text = std::fs::read_to_string(to.join("intervals.jsonl")).unwrap();
    text.push_str("{\"version\":1,\"interval\":99,\"pha");
    std::fs::write(to.join("intervals.jsonl"), text).unwrap();
}

#[test]
fn a_killed_run_renders_from_its_intervals_and_exports_match_the_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), workload(10.0), &StopHandle::new());
    let killed = tempfile::tempdir().unwrap();
    killed_copy(dir.path(), killed.path());

    let k = cacheoff_rundir::RunDir::open(killed.path()).unwrap();
    assert_eq!(k.state(), RunState::NoSummary);
    assert_eq!(
        k.intervals.len(),
        cacheoff_rundir::RunDir::open(dir.path())
            .unwrap()
            .intervals
            .len()
    );
    // Counts folded from the intervals equal the summary's, and so does
    // every figure derived from them (percentiles are upper bounds).
    let phases = k.phases();
    assert_eq!(phases.len(), r.summary.phases.len());
    let total = k.total();
    for (a, b) in phases
        .iter()
        .chain([&total])
        .zip(r.summary.phases.iter().chain([&r.summary.total]))
    {
        assert_eq!((a.name.as_str(), a.xacts), (b.name.as_str(), b.xacts));
        assert_eq!(a.rt_ms.hit.count, b.rt_ms.hit.count);
        assert!(a.counts.is_some(), "{}", a.name);
        assert_eq!(a.counts, b.counts, "{}", a.name);
        assert_eq!(
            (a.rate_xps, a.dhr, a.bhr, a.errors.percent),
            (b.rate_xps, b.dhr, b.bhr, b.errors.percent),
            "{}",
            a.name
        );
        assert_eq!(
            (a.sent_late_percent, a.issued_late_percent),
            (b.sent_late_percent, b.issued_late_percent),
            "{}",
            a.name
        );
        assert!(a.rt_ms.all.p99 >= b.rt_ms.all.p99, "{}", a.name);
    }
    assert_eq!(k.measured_phase().as_deref(), Some("meas"));
    let page = html::render(&k).unwrap();
    assert!(page.contains("data-state=\"no-summary\""));
    assert!(page.contains("Not available"));
    // The distributions need the summary; the seven time charts do not.
    assert_eq!(figures(&page).len(), 7);

    let schema: serde_json::Value =
        serde_json::from_str(&repo_file("docs/schema/export.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (name, run) in [
        (
            "complete",
            cacheoff_rundir::RunDir::open(dir.path()).unwrap(),
        ),
        ("killed", k),
    ] {
        let doc: serde_json::Value = serde_json::from_str(&export::json(&run)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        // The schema is strict: an undocumented field fails it.
        let mut extra = doc.clone();
        extra["total"]["surprise"] = 1.into();
        extra["intervals"][0]["surprise"] = 1.into();
        assert_eq!(validator.iter_errors(&extra).count(), 2, "{name}");
        assert_eq!(
            doc["intervals"].as_array().unwrap().len(),
            run.intervals.len()
        );

        let cols: serde_json::Value =
            serde_json::from_str(&repo_file("docs/schema/export-csv.json")).unwrap();
        let text_columns: Vec<&str> = cols["text_columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for (file, csv, rows) in [
            (
                "intervals.csv",
                export::intervals_csv(&run),
                run.intervals.len(),
            ),
            (
                "phases.csv",
                export::phases_csv(&run),
                run.phases().len() + 1,
            ),
        ] {
            let want: Vec<&str> = cols[file]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let mut lines = csv.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            assert_eq!(header, want, "{name} {file}");
            let body: Vec<&str> = lines.collect();
            assert_eq!(body.len(), rows, "{name} {file}");
            for line in body {
                let fields: Vec<&str> = line.split(',').collect();
                assert_eq!(fields.len(), want.len(), "{name} {file}: {line}");
                for (col, v) in want.iter().zip(fields) {
                    if !text_columns.contains(col) {
                        assert!(v.parse::<f64>().is_ok(), "{name} {file} {col} = {v:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn compare_builds_the_executive_summary() {
    use cacheoff_report::compare::{self, Products};
    let root = tempfile::tempdir().unwrap();
    let (proxied, direct, downtime) = (
        root.path().join("proxied"),
        root.path().join("direct"),
        root.path().join("downtime"),
    );
    for d in [&proxied, &direct, &downtime] {
        std::fs::create_dir(d).unwrap();
    }
    run(&proxied, workload(8.0), &StopHandle::new());
    run_into(&direct, workload(8.0), None, 1, &StopHandle::new());
    let dt = compressed("downtime", 60.0, 12.0, None);
    run(&downtime, dt, &StopHandle::new());

    let products_path = root.path().join("products.toml");
    std::fs::write(
        &products_path,
        "[[product]]\nrun = \"proxied\"\nlabel = \"Ideal box\"\nprice = 2500\ndowntime = \"downtime\"\n",
    )
    .unwrap();
    let products = Products::load(&products_path).unwrap();
    let runs = [
        cacheoff_rundir::RunDir::open(&proxied).unwrap(),
        cacheoff_rundir::RunDir::open(&direct).unwrap(),
    ];
    let baseline = cacheoff_rundir::RunDir::open(&direct).unwrap();
    let rows = compare::rows(&runs, &products, Some(&baseline)).unwrap();
    assert_eq!(rows.len(), 2);
    let (p, d) = (&rows[0], &rows[1]);
    assert_eq!(p.label, "Ideal box");
    assert_eq!(d.label, "simple via no proxy");
    let head = runs[0].headline();
    assert_eq!(p.throughput, head.rate_xps);
    assert!((p.req_per_kusd.unwrap() - head.rate_xps / 2.5).abs() < 1e-9);
    let hits_per_s = head.rt_ms.hit.count as f64 / head.duration_s;
    assert!((p.hits_per_kusd.unwrap() - hits_per_s / 2.5).abs() < 1e-9);
    // Time savings on each clock, against the baseline's on the same one.
    for (t, clock) in [
        (&p.rt, cacheoff_stats::RtClock::Intended),
        (&p.rt_polygraph, cacheoff_stats::RtClock::Polygraph),
    ] {
        let base = baseline.headline().rt(clock).all.mean;
        let mean = head.rt(clock).all.mean;
        assert_eq!(t.all, mean);
        assert!((t.savings.unwrap() - (base - mean) / base * 100.0).abs() < 1e-9);
    }
    assert_ne!(p.rt.all, p.rt_polygraph.all, "two clocks");
    assert_eq!(
        (d.rt.savings, d.rt_polygraph.savings),
        (Some(0.0), Some(0.0))
    );
    assert!(p.dhr > 40.0 && d.dhr == 0.0);
    assert_eq!((d.price, d.req_per_kusd, d.ttfm_s), (None, None, None));
    // The proxy stayed up through the dark phase: the first interval after
    // it had both misses and hits.
    for v in [p.ttfm_s, p.ttfh_s] {
        assert!(v.is_some_and(|s| s > 0.0 && s <= 5.01), "{v:?}");
    }

    let md = compare::markdown(&rows);
    assert!(md.contains("| Ideal box | 2500 |"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with("| ")).count(), 3);
    let page = compare::html(&rows).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("class=\"sortable\"") && page.contains("Ideal box"));
    // A chart per measure that has a value for some product: all 17 but
    // the cache age (these runs name no cache size).
    let figs = figures(&page);
    assert_eq!(figs.len(), 16, "{figs:?}");
    assert!(page.contains("All, ms, Polygraph clock") && page.contains("All, ms, intended start"));
    assert!(figs.iter().all(|&(points, _)| points == 2));

    // More than 3% errors disqualifies: marked, and best at nothing.
    let mut bad = rows.clone();
    bad[0].errors_percent = 3.5;
    assert!(bad[0].disqualified() && !bad[1].disqualified());
    let md = compare::markdown(&bad);
    assert!(
        md.contains("| Ideal box (disqualified: 3.5% errors, more than 3%) |"),
        "{md}"
    );
    let page = compare::html(&bad).unwrap();
    let row = |name: &str| {
        let start = page.find(&format!("data-v=\"{name}\"")).unwrap();
        let end = start + page[start..].find("</tr>").unwrap();
        page[page[..start].rfind("<tr").unwrap()..end].to_string()
    };
    assert!(row("Ideal box").starts_with("<tr class=\"disqualified\">"));
    assert!(!row("Ideal box").contains("class=\"best\""));
    assert!(row("simple via no proxy").contains("class=\"best\""));

    std::fs::write(
        &products_path,
        "[[product]]\nrun = \"x\"\nlabel = \"y\"\ncost = 1\n",
    )
    .unwrap();
    let e = Products::load(&products_path).unwrap_err().to_string();
    assert!(e.contains("products.toml") && e.contains("cost"), "{e}");
}
