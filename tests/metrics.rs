//! Live metrics (docs/metrics.md): the table documents exactly what the
//! commands export, the Grafana dashboard uses only exported metrics, a
//! run's `/metrics` ends equal to its summary, and a real Prometheus
//! scraping a run computes the summary's figures.
//!
//! The Prometheus test needs Debian's `prometheus` (ops/install-prometheus.sh,
//! which `.ci/run` calls, installs it); a plain `cargo test` skips it.

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_metrics::{encode, Format, ProxyCollector, Registry, RunMetrics, Server, SpeMetrics};
use cacheoff_rundir::spe::{CollectorSpan, Interval, ProxySpan};
use cacheoff_testkit::{free_port, until, within, Client};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use support::repo_file;

/// Every family the commands export, each with its first labelled
/// sample, in the classic text format: a run's, the reference proxy's
/// with a disk store, and the Multiplier's after an interval.
fn everything() -> String {
    let disk = tempfile::tempdir().unwrap();
    let proxy = support::proxy::start(|c| c.disk = Some((disk.path().to_path_buf(), 1 << 20)));
    let mut reg = Registry::default();
    let run = RunMetrics::register(&mut reg);
    run.begin(cacheoff_metrics::RunInfo {
        workload: "simple".into(),
        mode: "forward",
        phases: vec!["meas".into()],
        peak_rate: None,
    });
    reg.register_collector(Box::new(ProxyCollector::new(proxy.probe())));
    let spe = SpeMetrics::register(&mut reg, &["squid".to_string()]);
    let mut span = ProxySpan {
        name: "squid".into(),
        ..Default::default()
    };
    span.rt_ms.hit.count = 1;
    span.rt_ms.miss.count = 1;
    spe.interval(&Interval {
        format_version: 1,
        interval: 0,
        start_s: 0.0,
        end_s: 5.0,
        requests: 1,
        refused: 0,
        collector: CollectorSpan::default(),
        proxies: vec![span],
        resources: Default::default(),
    });
    let text = encode(&reg, Format::Text);
    proxy.stop();
    text
}

/// `# TYPE` lines: family name → type, as the classic format names them.
fn families(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (n, t) = l.split_once(' ').unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

/// Names of the samples (`..._bucket`, `..._total`, ...).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

#[test]
fn every_exported_family_is_documented_with_its_type() {
    let doc = repo_file("docs/metrics.md");
    let documented: BTreeMap<String, String> = doc
        .lines()
        .filter(|l| l.starts_with("| `cacheoff_"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect();
    let exported: BTreeMap<String, String> = families(&everything())
        .into_iter()
        .map(|(n, t)| {
            // The classic format calls an info metric a gauge.
            let t = if n.ends_with("_info") {
                "info".into()
            } else {
                t
            };
            (n, t)
        })
        .collect();
    assert_eq!(documented, exported, "docs/metrics.md's table vs /metrics");
    for n in exported.keys() {
        assert!(n.starts_with("cacheoff_"), "{n}");
    }
    for (n, t) in &exported {
        assert_eq!(t == "counter", n.ends_with("_total"), "{n} is a {t}");
    }
}

#[test]
fn the_grafana_dashboard_uses_only_exported_metrics() {
    let dash: serde_json::Value =
        serde_json::from_str(&repo_file("ops/grafana-dashboard.json")).unwrap();
    let mut exprs = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 10, "{exprs:?}");
    let exported = sample_names(&everything());
    let mut used = BTreeSet::new();
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(i) = rest.find("cacheoff_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[i + name.len()..];
            assert!(exported.contains(&name), "{name} (in {e}) is not exported");
            used.insert(name);
        }
    }
    // What the issue asks the dashboard to show.
    for must in [
        "cacheoff_transactions_total",
        "cacheoff_measured_hits_total",
        "cacheoff_offered_hits_total",
        "cacheoff_response_seconds_bucket",
        "cacheoff_errors_total",
        "cacheoff_phase_info",
    ] {
        assert!(used.contains(must), "the dashboard does not show {must}");
    }
}

/// `GET path` on a new connection: the body, if the status is 200;
/// `None` while nothing listens there.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut c = Client::try_connect(addr).ok()?;
    write!(
        c.s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let r = c.try_reply(false)?;
    (r.status == 200).then(|| r.text())
}

/// The value of the sample `name{labels}` in a scrape, exactly as written.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn a_run_s_metrics_end_equal_to_its_summary() {
    let proxy = support::proxy::caching();
    let mut reg = Registry::default();
    let run = RunMetrics::register(&mut reg);
    reg.register_collector(Box::new(ProxyCollector::new(proxy.probe())));
    let server = Server::start("127.0.0.1:0".parse().unwrap(), reg).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let setup = cacheoff_run::Setup {
        workload: support::run::simple(300.0, 10, 2, 1.0, 5.0),
        via: cacheoff_agent::Via::Proxy(proxy.addr()),
        bound: None,
        label: None,
        workers: support::run::WORKERS,
        quiet: true,
        on_start: None,
        trace: None,
        metrics: Some(run),
        fleet: None,
        tls_dir: None,
        watch: None,
    };
    let argv = ["metrics".to_string()];
    let r = cacheoff_run::run_setup(dir.path(), setup, &argv, &StopHandle::new())
        .map_err(anyhow::Error::from)
        .unwrap();
    let text = get(server.addr(), "/metrics").expect("a scrape");
    let t = &r.summary.total;
    let c = t.counts.unwrap();
    let s = |series: &str| sample(&text, series) as u64;
    assert_eq!(s("cacheoff_run_finished"), 1);
    assert_eq!(
        s("cacheoff_transactions_total{result=\"hit\"}")
            + s("cacheoff_transactions_total{result=\"miss\"}"),
        t.xacts
    );
    assert_eq!(
        s("cacheoff_transactions_total{result=\"error\"}"),
        t.errors.total
    );
    assert_eq!(
        s("cacheoff_transactions_total{result=\"hit\"}"),
        t.rt_ms.hit.count
    );
    assert_eq!(
        s("cacheoff_response_seconds_count{result=\"hit\"}"),
        t.rt_ms.hit.count
    );
    assert_eq!(
        s("cacheoff_response_seconds_bucket{result=\"miss\",le=\"+Inf\"}"),
        t.rt_ms.miss.count
    );
    assert_eq!(
        s("cacheoff_response_seconds_count{result=\"all\"}"),
        t.rt_ms.all.count
    );
    assert_eq!(s("cacheoff_measured_hits_total"), c.basic_hits);
    assert_eq!(s("cacheoff_basic_gets_total"), c.basic);
    assert_eq!(s("cacheoff_offered_hits_total"), c.offered_hits);
    assert_eq!(
        s("cacheoff_bytes_total{result=\"hit\"}") + s("cacheoff_bytes_total{result=\"miss\"}"),
        t.bytes
    );
    assert_eq!(s("cacheoff_bytes_total{result=\"hit\"}"), c.hit_bytes);
    assert_eq!(s("cacheoff_requests_sent_total"), t.sent);
    assert!(t.rt_ms.hit.count > 0 && t.rt_ms.miss.count > 0, "{t:?}");
    // The mean response time, from the histogram's sum, as the summary's
    // (its HDR histogram's 3 significant digits).
    let mean_ms = sample(&text, "cacheoff_response_seconds_sum{result=\"miss\"}") * 1000.0
        / t.rt_ms.miss.count as f64;
    assert!(
        (mean_ms - t.rt_ms.miss.mean).abs() <= t.rt_ms.miss.mean * 0.01 + 0.002,
        "{mean_ms} vs {}",
        t.rt_ms.miss.mean
    );
    let last = r.summary.phases.last().unwrap().name.clone();
    assert!(text.contains(&format!("cacheoff_phase_info{{phase=\"{last}\"}} 1")));
    // The proxy's own view of the same run.
    assert_eq!(
        s("cacheoff_proxy_hits_total") + s("cacheoff_proxy_misses_total"),
        t.xacts
    );
}

/// Percent-encodes a PromQL query for a URL.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The single value of an instant `query` to Prometheus at `api`.
fn query(api: SocketAddr, q: &str) -> Option<f64> {
    let body = get(api, &format!("/api/v1/query?query={}", url_encode(q)))?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let result = v["data"]["result"].as_array()?;
    let value = result.first()?["value"][1].as_str()?;
    value.parse().ok()
}

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// Ends the child when dropped, whatever the test did.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        support::process::terminate(&mut self.0, Duration::from_secs(10));
    }
}

#[test]
#[ignore = "needs Debian's prometheus; .ci/run installs it (ops/install-prometheus.sh) and runs this"]
fn prometheus_scraping_a_run_computes_its_summary() {
    assert!(
        Path::new(PROMETHEUS).exists(),
        "prometheus is not installed: run ops/install-prometheus.sh (.ci/run does)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (api_port, metrics_port) = (free_port(), free_port());
    let metrics: SocketAddr = format!("127.0.0.1:{metrics_port}").parse().unwrap();
    let api: SocketAddr = format!("127.0.0.1:{api_port}").parse().unwrap();
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: cacheoff\n    static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(tmp.path().join("prometheus.log")).unwrap();
    let _prometheus = Reaped(
        std::process::Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    until("prometheus ready", Duration::from_secs(60), || {
        get(api, "/-/ready").is_some()
    });
    // Prometheus hands targets to its scrapers some seconds after it is
    // ready; the run starts once they scrape (its `up` series exists, 0
    // while nothing listens), so the first scrape sees every counter at 0.
    until("prometheus to scrape", Duration::from_secs(60), || {
        query(api, "count(up{job=\"cacheoff\"})").is_some()
    });
    let out = tmp.path().join("run");
    let mut run = support::process::command()
        .args([
            "run",
            "simple",
            "--rate",
            "200",
            "--robots",
            "10",
            "--servers",
            "2",
        ])
        .args(["--warmup", "2s", "--duration", "8s", "--workers", "2", "-q"])
        .arg("--metrics")
        .arg(metrics.to_string())
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The run, then its wait for a scrape of the final figures.
    let ended = within(Duration::from_secs(120), || {
        matches!(run.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = run.kill();
    }
    assert!(ended, "the run did not end");
    assert!(run.wait().unwrap().success());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let total = &summary["total"];
    let xacts = total["xacts"].as_f64().unwrap();
    let duration = total["duration_s"].as_f64().unwrap();
    let dhr = total["dhr"]["measured"].as_f64().unwrap();
    assert!(xacts > 0.0 && dhr > 0.0, "{total}");
    // Prometheus has the final scrape once it shows the run finished.
    until(
        "prometheus to see the run's end",
        Duration::from_secs(30),
        || query(api, "max_over_time(cacheoff_run_finished[10m])") == Some(1.0),
    );
    let window = started.elapsed().as_secs() + 10;
    let last = query(
        api,
        "sum(last_over_time(cacheoff_transactions_total{result=~\"hit|miss\"}[10m]))",
    )
    .unwrap();
    assert_eq!(last, xacts, "the last scraped count is the summary's");
    let increase = query(
        api,
        &format!("sum(increase(cacheoff_transactions_total{{result=~\"hit|miss\"}}[{window}s]))"),
    )
    .unwrap();
    // increase() extrapolates to the window's end by up to 1.1 scrape
    // intervals: one scrape interval's worth of the run's rate.
    let slack = 1.1 * xacts / duration + 1.0;
    let samples = get(
        api,
        &format!(
            "/api/v1/query?query={}",
            url_encode("cacheoff_transactions_total[10m]")
        ),
    );
    assert!(
        (increase - xacts).abs() <= slack,
        "increase {increase} vs summary {xacts} (slack {slack}); samples: {samples:?}"
    );
    let ratio = query(
        api,
        &format!("100 * sum(increase(cacheoff_measured_hits_total[{window}s])) / sum(increase(cacheoff_basic_gets_total[{window}s]))"),
    )
    .unwrap();
    assert!(
        (ratio - dhr).abs() < 0.5,
        "hit ratio {ratio} vs summary {dhr}"
    );
}
