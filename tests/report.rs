//! Report cards and exports of real runs: complete, interrupted, and killed
//! (no summary, a torn last interval line).

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_report::{export, html, RunState};
use cacheoff_run::RunResult;
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

/// The dark phase's start and end in a downtime run.
fn dark_phase(run: &cacheoff_rundir::Run) -> (f64, f64) {
    let dark: Vec<_> = run.intervals.iter().filter(|r| r.phase == "dark").collect();
    (dark[0].start_s, dark[dark.len() - 1].end_s)
}

#[test]
fn compare_builds_the_executive_summary() {
    use cacheoff_report::compare;
    use cacheoff_rundir::lineup::{LineupSummary, Products};
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

    // A products file from before the lineup's keys still reads.
    let products_path = root.path().join("products.toml");
    let old_file =
        "[[product]]\nrun = \"proxied\"\nlabel = \"Ideal box\"\nprice = 2500\ndowntime = \"downtime\"\n";
    std::fs::write(&products_path, old_file).unwrap();
    let products = Products::load(&products_path).unwrap();
    let runs = [
        cacheoff_rundir::RunDir::open(&proxied).unwrap(),
        cacheoff_rundir::RunDir::open(&direct).unwrap(),
    ];
    let baseline = cacheoff_rundir::RunDir::open(&direct).unwrap();
    // The proxied run has its report card (as `cacheoff run` leaves it),
    // the direct one not.
    html::write(&runs[0]).unwrap();
    let rows = compare::rows(&runs, &products, Some(&baseline)).unwrap();
    assert_eq!(rows.len(), 2);
    let (p, d) = (&rows[0], &rows[1]);
    assert_eq!(p.label, "Ideal box");
    assert_eq!(d.label, "simple via no proxy");
    assert_eq!(
        (p.mode, d.mode),
        (
            cacheoff_rundir::Mode::Forward,
            cacheoff_rundir::Mode::Direct
        )
    );
    let head = runs[0].headline();
    assert_eq!(p.throughput, head.rate_xps);
    assert_eq!(
        (p.xacts, p.errors, p.phase.as_str()),
        (head.xacts, 0, "meas")
    );
    assert_eq!(
        (p.dhr_offered, p.dhr_ideal),
        (head.dhr.offered, head.dhr.ideal)
    );
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
    assert_eq!((d.price, d.req_per_kusd, d.downtime), (None, None, None));
    // Through a cache that hit over 40% of what simple offers: it passes.
    let hit_ratio = &cacheoff_rundir::rules::judge(&p.facts())[1].1;
    assert!(
        matches!(hit_ratio, cacheoff_rundir::rules::Verdict::Pass(_)),
        "{hit_ratio:?}"
    );
    assert!(p.disqualified.is_empty());
    assert_eq!(
        (p.report.clone(), d.report.clone()),
        (Some(proxied.join("report.html")), None)
    );
    // The proxy stayed up through the dark phase: the first interval after
    // it had both misses and hits. Without downtime.json the figures are
    // to the interval.
    let coarse = p.downtime.unwrap();
    assert!(!coarse.precise);
    for v in [coarse.ttfm_s, coarse.ttfh_s] {
        assert!(v.is_some_and(|s| s > 0.0 && s <= 5.01), "{v:?}");
    }
    // With the power cut timed (here: the dark phase), to the millisecond
    // and no later than the interval's end.
    let (cut, on) = dark_phase(&cacheoff_rundir::RunDir::open(&downtime).unwrap());
    cacheoff_rundir::write_downtime(&downtime, cut, on).unwrap();
    let rows = compare::rows(&runs, &products, Some(&baseline)).unwrap();
    let fine = rows[0].downtime.unwrap();
    assert!(fine.precise);
    for (f, c) in [(fine.ttfm_s, coarse.ttfm_s), (fine.ttfh_s, coarse.ttfh_s)] {
        let (f, c) = (f.unwrap(), c.unwrap());
        assert!(f >= 0.0 && f <= c, "{f} vs {c}");
    }
    if let (Some(f), Some(c)) = (fine.first_conn_s, coarse.first_conn_s) {
        assert!(f <= c, "{f} vs {c}");
    }

    let md = compare::markdown(&rows);
    assert!(
        md.contains("Ideal box (forward)](") && md.contains(") | 2500 |"),
        "{md}"
    );
    let (table, ab) = md
        .split_once("\n## B against A\n")
        .expect("two runs: B against A");
    assert_eq!(table.lines().filter(|l| l.starts_with("| ")).count(), 3);
    assert!(ab.contains("| throughput (xact/s) |"), "{ab}");
    let page = compare::html(&rows).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("class=\"sortable\"") && page.contains("Ideal box"));
    // A chart per ranked measure that has a value for some product: all 18
    // but the cache age (these runs name no cache size), and the first
    // connection if robots opened none after power-on.
    let figs = figures(&page);
    let charts = 16 + usize::from(fine.first_conn_s.is_some());
    assert_eq!(figs.len(), charts, "{figs:?}");
    assert!(page.contains("All, ms, Polygraph clock") && page.contains("All, ms, intended start"));
    assert!(figs.iter().all(|&(points, _)| points == 2));

    // More than 3% errors disqualifies: marked, and best at nothing.
    let mut bad = rows.clone();
    bad[0].errors_percent = 3.5;
    bad[0].disqualified = bad[0].check_rules();
    assert!(bad[0].disqualified() && !bad[1].disqualified());
    let md = compare::markdown(&bad);
    assert!(
        md.contains("Ideal box (forward)](")
            && md.contains(") (disqualified: 3.5% errors, more than 3%) |"),
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

    // The lineup's keys, through the command line, with the summary also
    // written as JSON: paths relative to each output file.
    std::fs::write(
        &products_path,
        format!(
            "{old_file}name = \"ideal\"\nversion = \"1.0\"\nmode = \"forward\"\nmsl = {{ time_wait_s = 0.5 }}\n"
        ),
    )
    .unwrap();
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (html_out, json_out) = (out.join("summary.html"), out.join("summary.json"));
    let o = support::process::cacheoff(&[
        "compare",
        &path(&proxied),
        &path(&direct),
        "--products",
        &path(&products_path),
        "--baseline",
        &path(&direct),
        "-o",
        &path(&html_out),
        "--json",
        &path(&json_out),
    ]);
    assert!(o.status.success(), "{}", support::process::stderr(&o));
    let page = std::fs::read_to_string(&html_out).unwrap();
    assert!(
        page.contains("<a href=\"../proxied/report.html\">Ideal box 1.0 (forward)</a> (disqualified: TIME-WAIT 0.5 s, under 60 s)"),
        "{page}"
    );
    let text = std::fs::read_to_string(&json_out).unwrap();
    let s = LineupSummary::from_json(&text).unwrap();
    let ideal = &s.products[0];
    assert_eq!(
        (ideal.name.as_str(), ideal.run_dir.as_str()),
        ("ideal", "../proxied")
    );
    assert_eq!(ideal.downtime_dir.as_deref(), Some("../downtime"));
    assert_eq!(ideal.downtime.precise, Some(true));
    assert_eq!(ideal.downtime.ttfm_s, fine.ttfm_s);
    assert_eq!(
        (ideal.msl.time_wait_s, ideal.msl.pass),
        (Some(0.5), Some(false))
    );
    assert_eq!(ideal.disqualified, ["TIME-WAIT 0.5 s, under 60 s"]);
    assert_eq!(
        (ideal.rt_ms_all, ideal.dhr_offered),
        (head.rt_ms.all.mean, head.dhr.offered)
    );
    let b = s.baseline.as_ref().unwrap();
    assert_eq!(b.run_dir, "../direct");
    assert_eq!(b.rt_ms_all, baseline.headline().rt_ms.all.mean);
    assert_eq!(s.products[1].name, "simple via no proxy");
    // Without run directories, the products file's runs are compared.
    let md_out = out.join("summary.md");
    let o = support::process::cacheoff(&[
        "compare",
        "--products",
        &path(&products_path),
        "-o",
        &path(&md_out),
    ]);
    assert!(o.status.success(), "{}", support::process::stderr(&o));
    let md = std::fs::read_to_string(&md_out).unwrap();
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| ")).count(),
        2,
        "{md}"
    );
    assert!(
        md.contains("| [Ideal box 1.0 (forward)](../proxied/report.html) (disqualified: TIME-WAIT 0.5 s, under 60 s) | 2500 |"),
        "{md}"
    );

    // summary.json holds to its schema, which is strict.
    let schema: serde_json::Value =
        serde_json::from_str(&repo_file("docs/schema/lineup-summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    doc["products"][0]["surprise"] = 1.into();
    assert_eq!(validator.iter_errors(&doc).count(), 1);

    std::fs::write(
        &products_path,
        "[[product]]\nrun = \"x\"\nlabel = \"y\"\ncost = 1\n",
    )
    .unwrap();
    let e = Products::load(&products_path).unwrap_err().to_string();
    assert!(e.contains("products.toml") && e.contains("cost"), "{e}");
}

/// A watched run: what the product spent is in the export (valid by the
/// schema), the intervals and the report card.
#[test]
fn a_watched_run_exports_and_shows_what_the_product_spent() {
    let p = proxy::caching();
    let dir = tempfile::tempdir().unwrap();
    // The in-process proxy spends in this test's process.
    let setup = cacheoff_run::Setup {
        watch: Some(cacheoff_run::watch::Watch::parse(&std::process::id().to_string()).unwrap()),
        ..support::run::setup(
            simple(200.0, 10, 2, 1.0, 3.0),
            cacheoff_agent::Via::Proxy(p.addr()),
        )
    };
    cacheoff_run::run_setup(dir.path(), setup, &["report".into()], &StopHandle::new())
        .map_err(anyhow::Error::from)
        .unwrap();
    let run = cacheoff_rundir::RunDir::open(dir.path()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&export::json(&run)).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&repo_file("docs/schema/export.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(doc["resources"]["phase"], "meas", "{}", doc["resources"]);
    assert!(doc["resources"]["cores_used"].as_f64().unwrap() > 0.0);
    assert!(doc["manifest"]["watched"]
        .as_str()
        .unwrap()
        .starts_with("pid "));
    let usage = doc["intervals"].as_array().unwrap();
    assert!(usage
        .iter()
        .all(|i| i["resources"]["threads"].as_u64() > Some(0)));
    assert!(html::render(&run)
        .unwrap()
        .contains("What the product spent"));
}
