//! Origin servers against a hostile client: a run's servers (a host's
//! share with servers only, so the test knows the run's URLs) beside raw
//! sockets that send a head a byte at a time, a body that never ends, a
//! handshake that never ends, nothing at all, or never read their reply.
//! Each is closed at its deadline while the run goes on (the deadlines are
//! the workload's, small here), counted as `origin_timeout` (the silent
//! one is an idle close, not counted), the server's sockets and threads
//! return to none, and legitimate requests beside them are answered.
//! What the deadlines leave open, the run's end closes.

use cacheoff_agent::{run, AgentError, BoundServers, RunConfig, Share, Sink, StopHandle, Via};
use cacheoff_stats::{ErrorKind, IntervalStats, RunStats};
use cacheoff_testkit::{closed_now, exchange, threads_named, within, Client};
use cacheoff_workload::{load_text, ObjectSpace, Overrides, Workload};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs here count the server's sockets and threads: one at a time.
static ALONE: Mutex<()> = Mutex::new(());

const NONCE: u32 = 0x5eed;

/// A workload for servers alone, its deadlines from `idle` and `xact`.
fn workload(robots: &str, idle: &str, xact: &str, secs: f64) -> Workload {
    let text = format!(
        r#"
name = "origin-deadlines"
peak_rate = "10/s"
[robots]
count = 1
{robots}
[servers]
count = 1
idle_timeout = "{idle}"
[timeouts]
xact = "{xact}"
[[phases]]
name = "all"
duration = "{secs}s"
measured = true
"#
    );
    load_text("origin-deadlines.toml", &text, &Overrides::default()).unwrap()
}

struct Quiet;

impl Sink for Quiet {
    fn interval(&mut self, _: &IntervalStats) {}
}

struct Running {
    addr: SocketAddr,
    objects: ObjectSpace,
    run: JoinHandle<Result<RunStats, AgentError>>,
}

/// Starts the run's servers (and no robots) on a thread of its own.
fn start(w: Workload, tls: Option<Arc<cacheoff_tls::Pki>>) -> Running {
    let bound = Arc::new(BoundServers::bind(&w).unwrap());
    let addr = bound.addrs()[0];
    let unix_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let share = Share {
        workers: 0..0,
        total_workers: 1,
        servers: vec![addr],
        own_servers: vec![0],
        robot_ip: None,
        nonce: NONCE,
        start_unix: unix_now + 0.2,
        clock_offset_s: 0.0,
        clock_slack_s: 0.0,
        jump: Arc::new(OnceLock::new()),
    };
    let objects = ObjectSpace::new(w.seed, &w.content).for_run(NONCE);
    let cfg = RunConfig {
        workload: w,
        via: Via::Direct,
        bound: Some(bound),
        workers: 1,
        trace: None,
        share: Some(share),
        tls,
    };
    let run = std::thread::spawn(move || run(cfg, &mut Quiet, &StopHandle::new()));
    Running { addr, objects, run }
}

/// The path of a replayed trace's object of `size` bytes on server 0:
/// its URL names its size, so any size will do.
fn path(objects: &ObjectSpace, size: u64) -> String {
    let mut p = String::new();
    objects.write_path(&mut p, &objects.traced(0x1234, size, true, 0));
    p
}

/// Connections the server side holds now: sockets on its address that a
/// process still owns (a closed one's is orphaned: inode 0).
fn held(addr: SocketAddr) -> usize {
    let SocketAddr::V4(a) = addr else {
        panic!("{addr}")
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(a.ip().octets()),
        a.port()
    );
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // 0A: the listening socket.
            f[1] == local && f[3] != "0A" && f[9] != "0"
        })
        .count()
}

/// The run's worker threads alive now.
fn worker_threads() -> usize {
    threads_named("cacheoff-w")
}

fn connect(addr: SocketAddr) -> TcpStream {
    Client::connect(addr).s
}

/// A request the server must answer whole: its status line and the
/// length of its body.
fn ask(addr: SocketAddr, request: &[u8]) -> (String, usize) {
    let r = exchange(addr, request);
    let status_line = r.head_text().lines().next().unwrap_or("").to_string();
    (status_line, r.body.len())
}

/// Waits (at most a minute) until the server holds no connection, calling
/// `tick` every 100 ms meanwhile; the most it held.
fn until_none_held(addr: SocketAddr, run: &Running, mut tick: impl FnMut()) -> usize {
    let start = Instant::now();
    let mut most = 0;
    loop {
        let n = held(addr);
        most = most.max(n);
        if n == 0 || start.elapsed() > Duration::from_secs(60) || run.run.is_finished() {
            return most;
        }
        tick();
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn errors(stats: &RunStats, kind: ErrorKind) -> u64 {
    stats.total.snap.counters.errors[kind as usize]
}

#[test]
fn http1_clients_that_stall_are_cut_at_their_deadlines() {
    let _one = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let r = start(workload("", "1s", "2s", 8.0), None);
    let addr = r.addr;
    let small = path(&r.objects, 1000);
    let get = format!("GET {small} HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n");
    assert_eq!(ask(addr, get.as_bytes()), ("HTTP/1.1 200 OK".into(), 1000));
    assert_eq!(worker_threads(), 1);

    // A head a byte at a time: 200 bytes at 5 a second.
    let mut slow_head = connect(addr);
    let dribble = format!(
        "GET {small} HTTP/1.1\r\nX-Slow: {}\r\n\r\n",
        "a".repeat(150)
    );
    slow_head.write_all(&dribble.as_bytes()[..1]).unwrap();
    let mut dribbled = 1;
    // A body of a million bytes announced, then trickled or stopped.
    let post = format!("POST {small} HTTP/1.1\r\nHost: s\r\nContent-Length: 1000000\r\n\r\n");
    let mut trickle = connect(addr);
    trickle.write_all(post.as_bytes()).unwrap();
    let mut stopped = connect(addr);
    stopped.write_all(post.as_bytes()).unwrap();
    stopped.write_all(&[b'x'; 10]).unwrap();
    // Nothing at all.
    let mut silent = connect(addr);
    // A 32 MB reply, more than both ends' socket buffers, never read.
    let mut unread = connect(addr);
    let big = path(&r.objects, 32 << 20);
    unread
        .write_all(format!("GET {big} HTTP/1.1\r\nHost: s\r\n\r\n").as_bytes())
        .unwrap();

    // Beside them, requests are answered, a POST's body read.
    assert_eq!(ask(addr, get.as_bytes()), ("HTTP/1.1 200 OK".into(), 1000));
    let legit_post =
        format!("POST {small} HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    assert_eq!(
        ask(addr, legit_post.as_bytes()),
        ("HTTP/1.1 200 OK".into(), 1000)
    );

    let most = until_none_held(addr, &r, || {
        if let Some(b) = dribble.as_bytes().get(dribbled) {
            dribbled += slow_head.write(&[*b]).unwrap_or(1);
        }
        let _ = trickle.write(b"x");
    });
    // Closed by their deadlines while the run went on.
    eprintln!("the server held {most} connections at most");
    assert_eq!(held(addr), 0);
    assert!(
        !r.run.is_finished(),
        "closed by the run's end, not a deadline"
    );
    assert!(dribbled < dribble.len());
    for s in [&mut slow_head, &mut trickle, &mut stopped, &mut silent] {
        assert!(closed_now(s));
    }
    assert_eq!(worker_threads(), 1);
    let stats = r.run.join().unwrap().unwrap();
    // The slow head, both bodies and the unread reply; the silent
    // connection was idle, which is no error.
    assert_eq!(errors(&stats, ErrorKind::OriginTimeout), 4);
    assert_eq!(stats.total.snap.errors_total(), 4);
    assert_eq!(worker_threads(), 0);
    // What the unread reply's client got is its beginning, then the close.
    let mut got = Vec::new();
    let _ = unread.read_to_end(&mut got);
    assert!(got.len() < 32 << 20, "{}", got.len());
}

#[test]
fn handshakes_and_http2_streams_that_stall_are_cut_at_their_deadlines() {
    let _one = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("cacheoff-origin-tls-{}", std::process::id()));
    let pki = cacheoff_tls::Pki::create(&dir, &["*.bench.tst".to_string()]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let r = start(
        workload("http = \"2\"", "1s", "2s", 8.0),
        Some(Arc::new(pki)),
    );
    let addr = r.addr;
    // A TLS record's first bytes, and HTTP/2's preface's, then nothing.
    let mut tls = connect(addr);
    tls.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).unwrap();
    let mut preface = connect(addr);
    preface.write_all(b"PRI * HTTP/2.0\r\n").unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let small = path(&r.objects, 1000);
    let big = path(&r.objects, 1 << 20);
    let url = |p: &str| format!("http://s0.bench.tst{p}");
    let (never_ended, unread, legit) = rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        // The connection's window is wide: only the unread stream's own
        // window stays shut.
        let (mut client, conn) = h2::client::Builder::new()
            .initial_connection_window_size(16 << 20)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(conn);
        // A POST whose body never ends.
        let post = http::Request::post(url(&small)).body(()).unwrap();
        let (never_ended, _body) = client.send_request(post, false).unwrap();
        // A 1 MB reply whose window is never opened past the first 64 KB.
        let get = http::Request::get(url(&big)).body(()).unwrap();
        let (unread, _) = client.send_request(get, true).unwrap();
        let unread = unread.await.unwrap();
        // Beside them, a request answered whole.
        let get = http::Request::get(url(&small)).body(()).unwrap();
        let (legit, _) = client.send_request(get, true).unwrap();
        let mut body = legit.await.unwrap().into_body();
        let mut legit = 0;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            legit += chunk.len();
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        // The server resets the stalled streams at their deadlines.
        let never_ended = never_ended.await.unwrap_err();
        let mut body = unread.into_body();
        let unread = loop {
            match body.data().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break Some(e),
                None => break None,
            }
        };
        (never_ended, unread, legit)
    });
    assert_eq!(legit, 1000);
    assert_eq!(
        never_ended.reason(),
        Some(h2::Reason::CANCEL),
        "{never_ended}"
    );
    let unread = unread.expect("the unread reply is reset, not ended");
    assert_eq!(unread.reason(), Some(h2::Reason::CANCEL), "{unread}");
    drop(rt);

    until_none_held(addr, &r, || {});
    assert!(
        !r.run.is_finished(),
        "closed by the run's end, not a deadline"
    );
    assert!(closed_now(&tls) && closed_now(&preface));
    let stats = r.run.join().unwrap().unwrap();
    // Two handshakes and two streams.
    assert_eq!(errors(&stats, ErrorKind::OriginTimeout), 4);
    assert_eq!(stats.total.snap.errors_total(), 4);
    assert_eq!(worker_threads(), 0);
}

#[test]
fn the_run_s_end_closes_every_connection_its_servers_held() {
    let _one = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // Deadlines far beyond the run: only its end closes these.
    let r = start(workload("", "10min", "10min", 2.0), None);
    let addr = r.addr;
    let small = path(&r.objects, 1000);
    let get = format!("GET {small} HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n");
    assert_eq!(ask(addr, get.as_bytes()), ("HTTP/1.1 200 OK".into(), 1000));
    let mut silent = connect(addr);
    let mut half_head = connect(addr);
    half_head.write_all(b"GET / HTTP/1.1\r\nX-Slow:").unwrap();
    let mut half_body = connect(addr);
    half_body
        .write_all(format!("POST {small} HTTP/1.1\r\nContent-Length: 100\r\n\r\nxx").as_bytes())
        .unwrap();
    let mut idle = connect(addr);
    idle.write_all(format!("GET {small} HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = [0u8; 1];
    idle.read_exact(&mut reply).unwrap();
    within(Duration::from_secs(30), || held(addr) >= 4);
    assert_eq!(held(addr), 4);
    let stats = r.run.join().unwrap().unwrap();
    // Once the run returned, its servers hold nothing, and every client
    // reads the close (its read would wait ten minutes for a deadline).
    assert_eq!(held(addr), 0);
    assert_eq!(worker_threads(), 0);
    for s in [&mut silent, &mut half_head, &mut half_body, &mut idle] {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut rest = Vec::new();
        let end = s.read_to_end(&mut rest);
        assert!(end.is_ok() || end.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset));
    }
    assert_eq!(stats.total.snap.errors_total(), 0);
}
