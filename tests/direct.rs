//! Direct runs, robots -> origin servers with no proxy (or a relay that
//! caches nothing), in-process on port 0: what a workload offers (hit
//! ratios, request and content mixes, rates) and how the robots measure it
//! (latency from the intended start and from the connection, WAN
//! emulation).

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_base::Dur;
use cacheoff_rundir::RunDir;
use cacheoff_workload::{Arrivals, Dist, Quantity};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::run::{
    assert_every_planned_request_ended, changing, phase_names, planned, planned_on,
    polymix_content, polymix_requests, run, run_into, simple,
};

#[test]
fn direct_run_has_no_hits_and_offers_the_configured_hit_ratio() {
    let w = simple(2000.0, 200, 40, 1.0, 5.0);
    let plan = planned(&w);
    assert!(plan.total > 10_000, "{plan:?}");
    let (dir, r) = run(w, None);
    let t = &r.summary.total;
    // Every planned request was answered, however long it took.
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.dhr.measured, 0.0);
    assert_eq!(t.rt_ms.hit.count, 0);
    assert!(
        (t.dhr.offered - 55.0).abs() <= 2.0,
        "offered DHR {}",
        t.dhr.offered
    );
    assert!(
        t.bhr.offered > 40.0 && t.bhr.offered < 70.0,
        "offered BHR {}",
        t.bhr.offered
    );
    assert!(!r.summary.interrupted);
    assert_eq!(r.summary.measured_phase.as_deref(), Some("meas"));
    assert_eq!(phase_names(&r.summary), ["warm", "meas"]);

    // The run directory describes the run.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["workload"]["name"], "simple");
    assert_eq!(manifest["seed"], 1);
    assert_eq!(manifest["servers"].as_array().unwrap().len(), 40);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    for entry in summary["phases"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&summary["total"]])
    {
        for path in [
            "/name",
            "/duration_s",
            "/xacts",
            "/rate_xps",
            "/bytes",
            "/dhr/offered",
            "/dhr/measured",
            "/bhr/offered",
            "/bhr/measured",
            "/rt_ms/all/mean",
            "/rt_ms/all/p50",
            "/rt_ms/all/p99",
            "/rt_ms/hit/mean",
            "/rt_ms/miss/mean",
            "/rt_polygraph_ms/all/mean",
            "/rt_polygraph_ms/all/p99",
            "/rt_polygraph_ms/hit/mean",
            "/rt_polygraph_ms/miss/mean",
            "/errors/total",
            "/errors/by_kind",
        ] {
            assert!(entry.pointer(path).is_some(), "summary lacks {path}");
        }
    }
    let intervals = RunDir::open(dir.path()).unwrap().intervals;
    // 1 s warm-up + 5 s measured, in 5 s intervals cut at the phase edge.
    assert_eq!(intervals.len(), 2);
    let sum: u64 = intervals.iter().map(|i| i.stats.xacts).sum();
    assert_eq!(sum, t.xacts, "intervals add up to the total");
}

/// The mean from the intended start exceeds the mean on Polygraph's clock
/// by more than `ms`: the waits for a connection it leaves out.
fn assert_waits_left_out(t: &cacheoff_stats::Entry, ms: f64) {
    let (intended, pg) = (t.rt_ms.all.mean, t.rt_polygraph_ms.all.mean);
    assert!(
        intended > pg + ms,
        "intended start {intended} vs connection {pg}"
    );
}

#[test]
fn latency_is_measured_from_the_intended_start_and_from_the_connection() {
    // Two robots with one connection each, 100 ms think time: capacity is
    // 20 req/s but the plan asks for 30, so requests wait for a connection.
    let mut w = simple(30.0, 2, 2, 1.0, 3.0);
    w.robots.max_conns = 1;
    w.servers.think_time = Dist::constant(Quantity::Time, 0.1);
    let plan = planned(&w);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // Polygraph's clock starts once the connection is had: the think time
    // at least, never the wait for the connection, which grows to seconds
    // here (the faster the machine, the less; never less than the plan's
    // shortfall makes it). The intended start adds it.
    let pg = &t.rt_polygraph_ms.all;
    assert!(
        pg.mean >= 100.0 && pg.p50 >= 100.0,
        "Polygraph clock {pg:?}"
    );
    assert_waits_left_out(t, 100.0);
    assert!(t.send_lag_ms.max > 300.0, "lag max {}", t.send_lag_ms.max);
}

/// `ListenDrops` of this network namespace: SYNs the kernel dropped, e.g.
/// at a full accept queue.
fn listen_drops() -> u64 {
    let text = std::fs::read_to_string("/proc/net/netstat").unwrap();
    let lines: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("TcpExt:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let at = lines[0].iter().position(|k| *k == "ListenDrops").unwrap();
    lines[1][at].parse().unwrap()
}

/// A forward "proxy" that relays connections to `origin` one at a time
/// and makes each connect after the first take a second. Its accept queue
/// holds one connection: while it relays a transaction a plug connection
/// fills it, so the robot's next connect (its one connection slot is free
/// again only then) has its SYN dropped; once the kernel has counted the
/// drop the plug is taken out, and the SYN the robot's kernel sends again
/// after TCP's initial retransmission timeout (1 s) gets in. Relays until
/// `stop` fires.
async fn slow_connects(
    listener: tokio::net::TcpListener,
    origin: SocketAddr,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    use tokio::net::TcpStream;
    let here = listener.local_addr().unwrap();
    loop {
        let mut robot = tokio::select! {
            r = listener.accept() => r.unwrap().0,
            _ = &mut stop => return,
        };
        let plug = TcpStream::connect(here).await.unwrap();
        let drops = listen_drops();
        if let Ok(mut server) = TcpStream::connect(origin).await {
            let (mut rr, mut rw) = robot.split();
            let (mut sr, mut sw) = server.split();
            // Until the robot closes (one transaction per connection) or
            // the origin does.
            tokio::select! {
                _ = tokio::io::copy(&mut rr, &mut sw) => {}
                _ = tokio::io::copy(&mut sr, &mut rw) => {}
            }
        }
        drop(robot);
        // The robot's next connect follows at once when it has a request
        // waiting; give one due later 2 s to come.
        let waited = Instant::now();
        while listen_drops() == drops && waited.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // The queue holds only the plug: take it out.
        drop(listener.accept().await.unwrap());
        drop(plug);
    }
}

#[test]
fn the_polygraph_clock_counts_the_connect_but_not_the_wait_for_a_connection() {
    // One robot with one connection slot and a new connection for every
    // request, 2 requests/s at equal gaps, through the slow-connect relay
    // to one origin server that answers at once: each connect after the
    // first takes 1 s, so requests also queue for the robot's slot.
    let mut w = simple(2.0, 1, 1, 0.5, 2.0);
    w.robots.max_conns = 1;
    w.robots.arrivals = Arrivals::Constant;
    w.robots.conn_reuse = Dist::constant(Quantity::Count, 1.0);
    w.servers.port = cacheoff_testkit::free_port();
    let plan = planned(&w);
    // 2.5 s at 2/s.
    assert!((4..=6).contains(&plan.total), "{plan:?}");
    let origin = SocketAddr::new(w.servers.first_ip.into(), w.servers.port);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.listen(0).unwrap()
    });
    let relay_addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let relay = std::thread::spawn(move || rt.block_on(slow_connects(listener, origin, stopped)));
    let (_dir, r) = run(w, Some(relay_addr));
    stop.send(()).unwrap();
    relay.join().unwrap();

    let t = &r.summary.total;
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // One connection each.
    assert_eq!(t.conns.opened, t.xacts);
    let pg = &t.rt_polygraph_ms.all;
    // Polygraph's clock includes the 1 s connects of all but the first.
    assert!(pg.max >= 1000.0 && pg.p50 >= 1000.0, "{pg:?}");
    assert!(pg.mean >= 700.0, "{pg:?}");
    // The clock from the send does not (mean send time = mean intended
    // start + mean send lag): Polygraph's is longer by the connects, at
    // least 1 s for all but the first of 4 to 6.
    let from_send = t.rt_ms.all.mean - t.send_lag_ms.mean;
    assert!(
        pg.mean - from_send >= 700.0,
        "Polygraph clock {} ms, from the send {from_send} ms",
        pg.mean
    );
    // The intended start adds the waits for the one slot (0.5 s, 1 s and
    // 1.5 s for the third to the fifth).
    assert_waits_left_out(t, 250.0);
}

#[test]
fn origin_answers_if_modified_since_and_the_request_mix_is_kept() {
    let mut w = simple(3000.0, 100, 20, 1.0, 3.0);
    polymix_requests(&mut w);
    // Objects that change every few minutes, so dates really move.
    changing(&mut w, 300.0, 1.0);
    let plan = planned(&w);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_every_planned_request_ended(&plan, t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert_eq!(t.dhr.measured, 0.0);
    let share = |k: &str| t.request_types[k] as f64 * 100.0 / t.xacts as f64;
    for (k, want) in [
        ("basic", 80.0),
        ("ims200", 5.0),
        ("ims304", 10.0),
        ("reload", 5.0),
    ] {
        assert!(
            (share(k) - want).abs() < 1.0,
            "{k}: {:.2}% of {}",
            share(k),
            t.xacts
        );
    }
    // Hit ratios count basic requests only.
    assert!(
        (t.dhr.offered - 55.0).abs() < 2.5,
        "offered {}",
        t.dhr.offered
    );
}

#[test]
fn content_types_pages_and_embedded_images_follow_the_mix() {
    let w = polymix_content();
    let plan = planned(&w);
    let (_dir, r) = run(w, None);
    let t = &r.summary.total;
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    // Every planned request was sent, and with no error every one and its
    // images were answered: the total counts them all over the schedule's
    // 9 s (however late the last came), so its rate is the plan's.
    assert_eq!(t.issued, plan.total);
    // The total rate includes the embedded images. Pages are revisited at
    // random, so in a run this short the images per planned request vary
    // by a few percent.
    assert!(
        (t.rate_xps / 2000.0 - 1.0).abs() < 0.08,
        "rate {}",
        t.rate_xps
    );
    let ct = &t.content_types;
    // Planned requests pick types by their share of the directly requested
    // types (images come only inside pages). Revisits pick pages at random,
    // so a few thousand planned requests land within ~2 points.
    let planned = (ct["html"].xacts + ct["other"].xacts + ct["download"].xacts) as f64;
    for (k, want) in [("html", 0.15 / 0.35), ("other", 0.195 / 0.35)] {
        let share = ct[k].xacts as f64 / planned;
        assert!(
            (share - want).abs() < 0.03,
            "{k}: {share:.4} of planned vs {want:.4}"
        );
    }
    // Every page brings its zipf(13) images (mean 4.45), fetched after it.
    let per_page = ct["image"].xacts as f64 / ct["html"].xacts as f64;
    assert!((per_page - 4.45).abs() < 0.4, "images per page {per_page}");
    // Mean reply sizes per type. Repeats make the samples few (about 800
    // distinct pages), so allow 10%; the size distributions themselves are
    // tested on 100k samples in the workload crate.
    for (k, want) in [
        ("image", 4.5 * 1024.0),
        ("html", 8.5 * 1024.0),
        ("other", 25.0 * 1024.0),
    ] {
        let mean = ct[k].bytes as f64 / ct[k].xacts as f64;
        assert!((mean / want - 1.0).abs() < 0.10, "{k}: mean size {mean}");
    }
}

#[test]
fn constant_arrivals_keep_the_rate() {
    let mut w = simple(500.0, 50, 5, 1.0, 4.0);
    w.robots.arrivals = cacheoff_workload::Arrivals::Constant;
    let plan = planned(&w);
    // Equal gaps: 4 s at 500/s is 2,000 requests give or take one per
    // robot (where in its first gap each starts), where Poisson arrivals
    // would vary by about 45.
    let meas = plan.by_phase[1] as f64;
    assert!((meas / 2000.0 - 1.0).abs() <= 0.01, "{plan:?}");
    let (_dir, r) = run(w, None);
    // The run sent that plan, whole, and the measured phase had its
    // share (up to what a late pacer moves across the phase's start).
    assert_every_planned_request_ended(&plan, &r.summary.total);
    assert_eq!(r.summary.total.errors.total, 0);
    let m = &r.summary.phases[1];
    assert!(
        (m.issued as f64 / meas - 1.0).abs() < 0.05,
        "issued {} of {meas}",
        m.issued
    );
}

/// One-way delay of the emulated links, in milliseconds.
const DELAY_MS: u64 = 100;

/// One-way delays a new connection's handshake costs on a link before its
/// first request travels.
const HANDSHAKE: u64 = 2;

/// Asserts what `links` emulated links did to run `t`, where each
/// transaction needs `delays` one-way delays on each link beyond a new
/// connection's handshake: they charged exactly those (`link_wait_us`: no
/// round trip more or fewer), and the median transaction, planned to take
/// `median` delays, took at least as long (a delay is never shorter than
/// planned; how much longer is the machine's, which `bench/planned-latency.sh`
/// measures).
fn assert_delays(t: &cacheoff_stats::Entry, links: u64, delays: u64, median: u64, what: &str) {
    let c = t.raw_counts();
    let charged = links * (c.conns_opened * HANDSHAKE + c.xacts * delays);
    assert_eq!(
        c.link_wait_us,
        charged * DELAY_MS * 1000,
        "{what}: {} xacts on {} connections",
        c.xacts,
        c.conns_opened
    );
    let p50 = t.rt_polygraph_ms.all.p50;
    let want = (median * DELAY_MS) as f64;
    assert!(
        p50 >= want - 1.0,
        "{what}: {p50} ms for {median} delays of {DELAY_MS} ms"
    );
}

fn link() -> cacheoff_workload::LinkConfig {
    cacheoff_workload::LinkConfig {
        delay: Dur::secs(DELAY_MS as f64 / 1000.0),
        loss: 0.0,
    }
}

/// One robot with one connection slot and one origin server at 1.5
/// requests a second, each connection carrying `reuse` transactions of
/// `size` bytes, with `tune` setting the links: the run's total, every
/// planned request ended without error. On one worker: a worker's last
/// snapshot follows the drain of its own robots' transactions, so it holds
/// every wait its server charged them (a worker with none in flight sends
/// its own at the schedule's end, and what its servers count for another
/// worker's last transactions after that is not in the run's figures).
fn wan_run(
    reuse: f64,
    size: f64,
    tune: impl FnOnce(&mut cacheoff_workload::Workload),
) -> cacheoff_stats::Entry {
    let mut w = simple(1.5, 1, 1, 0.5, 4.0);
    w.robots.max_conns = 1;
    w.robots.conn_reuse = Dist::constant(Quantity::Count, reuse);
    w.content[0].size = Dist::constant(Quantity::Size, size);
    tune(&mut w);
    let plan = planned_on(&w, 1);
    let dir = tempfile::tempdir().unwrap();
    let r = run_into(dir.path(), w, None, 1, &StopHandle::new());
    let t = r.summary.total;
    assert_every_planned_request_ended(&plan, &t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert!(t.xacts >= 3, "{plan:?}");
    t
}

#[test]
fn wan_emulation_adds_the_expected_round_trips() {
    let case = |reuse: f64, size: f64| wan_run(reuse, size, |w| w.servers.link = Some(link()));
    // From the connection, as Polygraph (the emulated handshake is in it).
    // New connection each time: SYN, SYN-ACK, request, response.
    let t = case(1.0, 1024.0);
    assert_eq!(t.conns.opened, t.xacts);
    assert_delays(&t, 1, 2, 4, "new connection");
    // Persistent connection: request and response; one connection for the
    // whole run (its idle gaps are far below the keep-alive timeouts), so
    // only the first transaction pays the handshake.
    let t = case(1000.0, 1024.0);
    assert_eq!(t.conns.opened, 1);
    assert_delays(&t, 1, 2, 2, "reused connection");
    // 100 KB needs four slow-start rounds: 3 more round trips.
    let t = case(1000.0, 100.0 * 1024.0);
    assert_eq!(t.conns.opened, 1);
    assert_delays(&t, 1, 8, 8, "100 KB");
}

#[test]
fn client_side_wan_emulation_adds_the_same_round_trips() {
    let case = |reuse: f64, size: f64, servers_too: bool| {
        wan_run(reuse, size, |w| {
            w.robots.link = Some(link());
            w.servers.link = servers_too.then(link);
        })
    };
    // The robot's end: the handshake and the request before it writes,
    // the response held as it arrives: 4 delays on a new connection.
    let t = case(1.0, 1024.0, false);
    assert_eq!(t.conns.opened, t.xacts);
    assert_delays(&t, 1, 2, 4, "new connection");
    // 100 KB read in four slow-start rounds: 2 + 3 x 2 delays.
    let t = case(1000.0, 100.0 * 1024.0, false);
    assert_eq!(t.conns.opened, 1);
    assert_delays(&t, 1, 8, 8, "100 KB");
    // Both sides emulated: both links crossed, 2 x 2 delays.
    let t = case(1000.0, 1024.0, true);
    assert_eq!(t.conns.opened, 1);
    assert_delays(&t, 2, 2, 4, "both sides");
}
