//! The report card, the compare page and the SPE page in a real browser:
//! Debian's Chromium, headless, opens them from disk. Any console message (an
//! error, an uncaught exception) fails the test, the rendered DOM must load
//! nothing from anywhere, and every chart must have drawn its data.
//! Screenshots stay in `target/browser-test/` (CI keeps them).
//!
//! `.ci/run` installs chromium and runs this (a plain `cargo test` skips
//! it).

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_report::compare;
use cacheoff_report::html;
use cacheoff_rundir::lineup::Products;
use cacheoff_rundir::spe;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::proxy;
use support::run::{run_into, simple};

const CHROMIUM: &str = "/usr/bin/chromium";

/// What the browser made of a page: the DOM after scripts ran, and its
/// console messages.
struct Rendered {
    dom: String,
    console: Vec<String>,
}

fn chromium(args: &[&str], page: &Path) -> std::process::Output {
    assert!(
        Path::new(CHROMIUM).exists(),
        "chromium is not installed: run .ci/run (it installs Debian's chromium)"
    );
    Command::new("timeout")
        .arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--allow-file-access-from-files",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium")
}

fn render(page: &Path) -> Rendered {
    let o = chromium(&["--enable-logging=stderr", "--v=0", "--dump-dom"], page);
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    Rendered {
        dom: String::from_utf8_lossy(&o.stdout).into_owned(),
        console,
    }
}

fn screenshot(page: &Path, png: &Path, height: u32) {
    let o = chromium(
        &[
            &format!("--window-size=1200,{height}"),
            &format!("--screenshot={}", png.display()),
        ],
        page,
    );
    assert!(
        o.status.success() && png.exists(),
        "no screenshot {}",
        png.display()
    );
}

/// Checks a rendered page; returns its number of charts.
fn check(name: &str, r: &Rendered) -> usize {
    assert!(r.console.is_empty(), "{name}: console: {:#?}", r.console);
    assert!(r.dom.contains("</main>"), "{name}: page did not render");
    // SVG's namespace is a name, not something loaded; nor are the URLs
    // an SPE page quotes as text (its mismatch examples).
    let dom = without_quoted_urls(&r.dom.replace("xmlns=\"http://www.w3.org/2000/svg\"", ""));
    for needle in ["src=", "<link", "url(", "@import", "http://", "https://"] {
        assert!(!dom.contains(needle), "{name}: the page refers to {needle}");
    }
    let mut charts = 0;
    for (at, _) in r.dom.match_indices("<figure class=\"chart\"") {
        let fig = &r.dom[at..at + r.dom[at..].find("</figure>").unwrap()];
        let caption =
            &fig[fig.find("<figcaption>").unwrap() + 12..fig.find("</figcaption>").unwrap()];
        assert!(fig.contains("<svg"), "{name}: chart {caption} has no SVG");
        let attr = |k: &str| -> usize {
            let key = format!("{k}=\"");
            let at = fig.find(&key).unwrap() + key.len();
            fig[at..at + fig[at..].find('"').unwrap()]
                .parse()
                .unwrap_or(0)
        };
        let tags = |el: &str| -> Vec<&str> {
            fig.match_indices(el)
                .map(|(i, _)| &fig[i..i + fig[i..].find('>').unwrap()])
                .collect()
        };
        if fig.contains("data-kind=\"bars\"") {
            // One rectangle in the data colour per bar.
            let bars = tags("<rect")
                .iter()
                .filter(|t| t.contains("#0072B2"))
                .count();
            assert_eq!(bars, attr("data-points"), "{name}: chart {caption} bars");
        } else {
            // Axes and ticks are black; each series draws a coloured line
            // and a legend mark.
            let series = attr("data-series");
            let coloured = tags("<polyline")
                .iter()
                .filter(|t| !t.contains("stroke=\"#000000\""))
                .count();
            assert!(series >= 1, "{name}: chart {caption} has no series to draw");
            assert!(
                coloured >= 2 * series,
                "{name}: chart {caption} drew {coloured} of {series} lines"
            );
        }
        charts += 1;
    }
    charts
}

/// `dom` without the text of its `<code class="url">` elements.
fn without_quoted_urls(dom: &str) -> String {
    const OPEN: &str = "<code class=\"url\">";
    let mut out = String::with_capacity(dom.len());
    let mut rest = dom;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at + OPEN.len()]);
        rest = &rest[at + OPEN.len()..];
        rest = &rest[rest.find("</code>").expect("a closed <code>")..];
    }
    out.push_str(rest);
    out
}

fn artifacts() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("browser-test");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "needs Debian's chromium; .ci/run installs it and runs this"]
fn report_and_compare_pages_render_cleanly_in_chromium() {
    // The checks catch what they are meant to: a page with a script error
    // and a console message.
    let out = artifacts();
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        "<!doctype html><html><body><main></main><script>console.error('boom'); nope();</script></body></html>",
    )
    .unwrap();
    let r = render(&bad);
    assert!(
        r.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        r.console
    );
    assert!(r
        .console
        .iter()
        .any(|l| l.contains("Uncaught ReferenceError")));

    let w = simple(300.0, 30, 6, 5.0, 10.0);
    let proxied = out.join("proxied-run");
    let direct = out.join("direct-run");
    let proxy = proxy::caching();
    for (dir, via) in [(&proxied, Some(proxy.addr())), (&direct, None)] {
        std::fs::create_dir(dir).unwrap();
        run_into(dir, w.clone(), via, 1, &StopHandle::new());
    }
    let report = html::write(&cacheoff_rundir::RunDir::open(&proxied).unwrap()).unwrap();
    let r = render(&report);
    assert_eq!(check("report.html", &r), 10);
    screenshot(&report, &proxied.join("report.png"), 7000);

    let runs = [
        cacheoff_rundir::RunDir::open(&proxied).unwrap(),
        cacheoff_rundir::RunDir::open(&direct).unwrap(),
    ];
    let rows = compare::rows(&runs, &Products::default(), Some(&runs[1])).unwrap();
    let page = out.join("cacheoff.html");
    std::fs::write(&page, compare::html(&rows).unwrap()).unwrap();
    let r = render(&page);
    // Eleven measures have values without prices, downtime runs or a
    // cache size (response times and time savings on both clocks).
    assert_eq!(check("cacheoff.html", &r), 11);
    // The sorting script ran to its end.
    assert!(
        r.dom.contains("data-ready=\"1\""),
        "compare script did not run"
    );
    screenshot(&page, &out.join("cacheoff.png"), 3000);

    // The SPE Multiplier's page, from a run directory written by its
    // writer: an honest proxy, a faster one with mismatches and drops, and
    // one that never answered.
    let spe_dir = out.join("spe-run");
    write_spe_run(&spe_dir);
    let page = cacheoff_report::spe::write(&spe::open(&spe_dir).unwrap()).unwrap();
    let r = render(&page);
    assert_eq!(check("spe report.html", &r), 5);
    let ranked = |name: &str| r.dom.find(&format!("data-proxy=\"{name}\" data-rank="));
    assert!(ranked("honest") < ranked("sloppy") && ranked("honest") < ranked("down"));
    for (name, rank) in [("honest", "1"), ("sloppy", ""), ("down", "")] {
        let row = format!("data-proxy=\"{name}\" data-rank=\"{rank}\"");
        assert!(r.dom.contains(&row), "no {row}");
    }
    assert!(r.dom.contains("class=\"badge overloaded\""));
    assert!(r
        .dom
        .contains("<code class=\"url\">http://origin.test/stale/3</code>"));
    screenshot(&page, &spe_dir.join("spe.png"), 5000);
}

/// A Multiplier run of 12 five-second intervals, written as the
/// Multiplier writes it.
fn write_spe_run(dir: &Path) {
    use cacheoff_stats::{Latency, LatencySet};
    use spe::{CollectorSpan, DiffMs, Example, Interval, ProxyAddr, ProxyCounts, ProxySpan};
    let lat = |count: u64, mean: f64| Latency {
        count,
        mean,
        p50: mean * 0.9,
        p99: mean * 2.5,
        max: mean * 4.0,
    };
    let build = cacheoff_rundir::Build {
        version: "0.1.0".into(),
        git_revision: "test".into(),
    };
    let proxies = ["honest", "sloppy", "down"]
        .iter()
        .enumerate()
        .map(|(i, n)| ProxyAddr {
            name: n.to_string(),
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 4000 + i as u16)),
        })
        .collect();
    let settings = spe::Settings {
        queue: 64,
        conns_per_proxy: 8,
        interval_s: 5.0,
        workers: 2,
        ..spe::Settings::default()
    };
    let manifest = spe::Manifest::new(
        &build,
        &["cacheoff".into(), "multiplier".into()],
        "127.0.0.1:3128".parse().unwrap(),
        "127.0.0.1:3129".parse().unwrap(),
        proxies,
        settings,
    );
    let mut run = spe::SpeDir::create(dir, manifest.clone()).unwrap();
    let mut intervals = Vec::new();
    for i in 0..12u32 {
        let f = f64::from(i);
        let span = |name: &str, mean: f64, dropped: u64, stale: u64| {
            let completed = if name == "down" { 0 } else { 50 - dropped };
            let hits = completed * (i as u64 + 2) / 16;
            let mut s = ProxySpan {
                name: name.into(),
                counts: ProxyCounts {
                    copied: 50,
                    dropped,
                    completed,
                    errors: 50 - completed - dropped,
                    claimed_hits: hits + stale,
                    validated_hits: hits,
                    validated_misses: completed - hits,
                    mismatches: stale + (50 - completed - dropped),
                    ..ProxyCounts::default()
                },
                ..ProxySpan::default()
            };
            if stale > 0 {
                s.mismatches_by_kind.insert("stale".into(), stale);
                s.examples.push(Example {
                    kind: "stale".into(),
                    url: format!("http://origin.test/stale/{i}"),
                    detail: "expected Last-Modified Tue, 01 Apr 2025; got Mon, 31 Mar 2025".into(),
                });
            }
            if s.counts.errors > 0 {
                s.mismatches_by_kind.insert("error".into(), s.counts.errors);
            }
            s.rt_ms = LatencySet {
                all: lat(completed, mean),
                hit: lat(hits, mean / 3.0),
                miss: lat(completed - hits, mean * 1.2),
            };
            s.connect_ms = lat(completed, 0.2);
            s.first_byte_ms = lat(completed, mean / 2.0);
            s.queue_ms = lat(completed, 0.1);
            s.rt_diff_ms.all = DiffMs {
                count: completed,
                mean: mean - 5.0,
            };
            s
        };
        let iv = Interval {
            format_version: spe::SPE_FORMAT_VERSION,
            interval: i,
            start_s: f * 5.0,
            end_s: f * 5.0 + 5.0,
            requests: 50,
            refused: 0,
            collector: CollectorSpan {
                completed: 50,
                errors: 0,
                hits: 10,
                rt_ms: LatencySet {
                    all: lat(50, 5.0 + f / 4.0),
                    hit: lat(10, 1.0),
                    miss: lat(40, 6.0),
                },
            },
            proxies: vec![
                span("honest", 6.0 - f / 6.0, 0, 0),
                span(
                    "sloppy",
                    3.0,
                    u64::from(i % 4 == 1) * 3,
                    u64::from(i % 3 == 0),
                ),
                span("down", 0.0, 0, 0),
            ],
            resources: Default::default(),
        };
        run.interval(&iv).unwrap();
        intervals.push(iv);
    }
    let mut summary = spe::Summary::fold(&manifest, &intervals);
    summary.folded = false;
    run.finish(&summary).unwrap();
}
