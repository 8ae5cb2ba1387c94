//! The families as a scraper sees them: both text formats, content
//! negotiation over a real socket, the server's refusals, the reference
//! proxy's collector.

use cacheoff_metrics::{encode, Format, ProxyCollector, Registry, RunInfo, RunMetrics, Server};
use cacheoff_stats::{ErrorKind, IntervalStats, Outcome, Snapshot, XactRecord};
use cacheoff_testkit::{read_all, within};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One successful basic GET of `bytes` taking `us` microseconds.
fn xact(outcome: Outcome, bytes: u64, us: u64) -> XactRecord {
    XactRecord {
        outcome,
        fills_cache: false,
        bytes,
        full_body: true,
        rtype: cacheoff_base::RequestType::Basic,
        ctype: 0,
        offered_hit: true,
        ideal_hit: true,
        rt_corrected_us: us,
        rt_polygraph_us: us,
    }
}

fn interval(index: u32, phase: usize) -> IntervalStats {
    let mut snap = Snapshot::default();
    for _ in 0..3 {
        snap.record_xact(&xact(Outcome::Hit, 100, 300));
    }
    snap.record_xact(&xact(Outcome::Miss, 1000, 2_000_000));
    snap.record_error(ErrorKind::ConnReset);
    snap.counters.conns_open = 7;
    IntervalStats {
        index,
        phase,
        start_s: index as f64 * 5.0,
        end_s: index as f64 * 5.0 + 5.0,
        robots: 10,
        load: 0.5,
        snap,
    }
}

fn run_registry() -> (Registry, std::sync::Arc<RunMetrics>) {
    let mut reg = Registry::default();
    let m = RunMetrics::register(&mut reg);
    m.begin(RunInfo {
        workload: "simple".into(),
        mode: "forward",
        phases: vec!["warm".into(), "meas".into()],
        peak_rate: Some(100.0),
    });
    (reg, m)
}

#[test]
fn intervals_add_up_in_both_formats() {
    let (reg, m) = run_registry();
    let before = encode(&reg, Format::Text);
    assert!(
        before.contains("cacheoff_transactions_total{result=\"hit\"} 0\n"),
        "{before}"
    );
    assert!(before.contains("cacheoff_errors_total{kind=\"false_hit\"} 0\n"));
    m.interval(&interval(0, 0));
    m.interval(&interval(1, 1));
    m.finish();
    let text = encode(&reg, Format::Text);
    for line in [
        "# TYPE cacheoff_transactions_total counter",
        "cacheoff_transactions_total{result=\"hit\"} 6",
        "cacheoff_transactions_total{result=\"miss\"} 2",
        "cacheoff_transactions_total{result=\"error\"} 2",
        "cacheoff_bytes_total{result=\"hit\"} 600",
        "cacheoff_bytes_total{result=\"miss\"} 2000",
        "cacheoff_errors_total{kind=\"conn_reset\"} 2",
        "# TYPE cacheoff_response_seconds histogram",
        "cacheoff_response_seconds_bucket{result=\"hit\",le=\"0.0003\"} 6",
        "cacheoff_response_seconds_bucket{result=\"miss\",le=\"1.5\"} 0",
        "cacheoff_response_seconds_bucket{result=\"miss\",le=\"2\"} 2",
        "cacheoff_response_seconds_bucket{result=\"miss\",le=\"+Inf\"} 2",
        "cacheoff_response_seconds_count{result=\"miss\"} 2",
        "cacheoff_measured_hits_total 6",
        "cacheoff_basic_gets_total 8",
        "cacheoff_offered_hits_total 8",
        "cacheoff_connections_open 7",
        "cacheoff_robots 10",
        "cacheoff_offered_request_rate 50.0",
        "cacheoff_phase_index 1",
        "cacheoff_phase_info{phase=\"meas\"} 1",
        "# TYPE cacheoff_phase_info gauge",
        "cacheoff_run_info{workload=\"simple\",mode=\"forward\"} 1",
        "cacheoff_run_finished 1",
        "cacheoff_intervals_total 2",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
    let om = encode(&reg, Format::OpenMetrics);
    for line in [
        "# TYPE cacheoff_transactions counter",
        "cacheoff_transactions_total{result=\"hit\"} 6",
        "# TYPE cacheoff_phase info",
        "cacheoff_phase_info{phase=\"meas\"} 1",
        "# EOF",
    ] {
        assert!(om.lines().any(|l| l == line), "missing {line:?} in\n{om}");
    }
}

/// One request on a new connection; every byte of the reply.
fn ask(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let out = read_all(addr, request).unwrap_or_default();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn the_server_negotiates_and_refuses_what_it_does_not_serve() {
    let (reg, m) = run_registry();
    m.interval(&interval(0, 0));
    let server = Server::start("127.0.0.1:0".parse().unwrap(), reg).unwrap();
    let addr = server.addr();
    let plain = ask(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(plain.starts_with("HTTP/1.1 200 OK\r\n"), "{plain}");
    assert!(plain.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    assert!(plain.contains("cacheoff_transactions_total{result=\"hit\"} 3\n"));
    let om = ask(
        addr,
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n",
    );
    assert!(
        om.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"),
        "{om}"
    );
    assert!(om.ends_with("# EOF\n"));
    assert_eq!(server.scrapes(), 2);
    assert!(ask(addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
    assert!(ask(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405 "));
    let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 20_000));
    assert!(ask(addr, &huge).starts_with("HTTP/1.1 431 "));
    let head = ask(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    // A scrape after the third ends the wait at once; none comes after
    // the fourth within the limit.
    assert!(server.wait_for_scrape(2, Duration::from_secs(5)));
    assert!(!server.wait_for_scrape(server.scrapes(), Duration::from_millis(50)));
    drop(server);
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}

#[test]
fn the_reference_proxy_s_figures_are_read_at_scrape_time() {
    let disk = tempfile::tempdir().unwrap();
    let mut cfg = cacheoff_proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.disk = Some((disk.path().to_path_buf(), 1 << 20));
    cfg.workers = 1;
    let proxy = cacheoff_proxy::Proxy::start(cfg).unwrap();
    let mut reg = Registry::default();
    reg.register_collector(Box::new(ProxyCollector::new(proxy.probe())));
    proxy
        .stats()
        .hits
        .fetch_add(5, std::sync::atomic::Ordering::Relaxed);
    let text = encode(&reg, Format::Text);
    for line in [
        "cacheoff_proxy_hits_total 5",
        "cacheoff_proxy_misses_total 0",
        "cacheoff_proxy_revalidations_total 0",
        "cacheoff_proxy_stored_objects{store=\"memory\"} 0",
        "cacheoff_proxy_stored_bytes{store=\"disk\"} 0",
        "cacheoff_proxy_capacity_bytes{store=\"disk\"} 1048576",
        "cacheoff_proxy_evictions_total{store=\"memory\"} 0",
        "cacheoff_proxy_disk_enabled 1",
        "cacheoff_proxy_disk_recovered_objects 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    proxy.stop();
}

#[test]
fn a_reply_nobody_reads_is_cut_at_the_reply_deadline() {
    // A reply larger than both ends' socket buffers: its writes block
    // until the client reads, which this one never does.
    let mut reg = Registry::default();
    let big = prometheus_client::metrics::counter::Counter::<u64>::default();
    reg.register("cacheoff_big", "x".repeat(32 << 20), big);
    let limits = cacheoff_metrics::Limits {
        reply: Duration::from_millis(300),
        ..Default::default()
    };
    let server = Server::start_with("127.0.0.1:0".parse().unwrap(), reg, limits).unwrap();
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    within(Duration::from_secs(60), || server.cut().deadline > 0);
    assert_eq!(server.cut().deadline, 1);
    within(Duration::from_secs(60), || server.open() == 0);
    assert_eq!(server.open(), 0);
    // What the client gets is the reply's beginning, then the close.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(got.len() < 32 << 20, "{}", got.len());
}
