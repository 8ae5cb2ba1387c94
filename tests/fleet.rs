//! Runs over many hosts, with agents on this machine's loopback: the
//! split issues exactly the plan one host would, the merged run is the sum
//! of the agents' own logs, a lost agent leaves a partial run naming its
//! share, a lost coordinator stops its agents, and a fleet that disagrees
//! is refused before anything starts. An agent obeys only its fleet:
//! strangers, rogue coordinators and greedy peers are refused, bounded
//! or timed out while the real coordinator's run goes on (docs/security.md).
//! (tests/netns.rs runs agents in network namespaces, as separate hosts.)

mod support;

use cacheoff::run_cmd::{build, run_setup, RunResult, Setup};
use cacheoff_agent::{StopHandle, Via};
use cacheoff_fleet::wire::{self, FromAgent, Prepare, ToAgent, ViaSpec};
use cacheoff_fleet::{
    AgentAddr, AgentConfig, AgentTrust, CoordinatorTrust, Fleet, Limits, Role, Source, Targets,
};
use cacheoff_rundir::{AgentState, RunDir};
use cacheoff_workload::{ObjectSpace, Workload};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::run::{assert_every_planned_request_ended, planned_on, simple};

struct LocalAgent {
    addr: SocketAddr,
    data: tempfile::TempDir,
    serving: JoinHandle<Result<(), cacheoff_fleet::FleetError>>,
}

/// The fleet's shared secret, one per test binary.
fn secret() -> Source {
    Source::Secret(secret_file())
}

fn secret_file() -> PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("secret"), "the fleet's secret, for tests\n").unwrap();
        d
    });
    dir.path().join("secret")
}

/// An agent in this process serving one run (`version`: another build's).
fn agent(workers: usize, version: Option<&str>) -> LocalAgent {
    agent_with(workers, version, Limits::default(), Targets::Announced)
}

fn agent_with(
    workers: usize,
    version: Option<&str>,
    limits: Limits,
    targets: Targets,
) -> LocalAgent {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut b = build();
    if let Some(v) = version {
        b.version = v.into();
    }
    let cfg = AgentConfig {
        build: b,
        host_ip: None,
        data: data.path().into(),
        workers,
        runs: Some(1),
        trust: AgentTrust::load(&secret()).unwrap(),
        limits,
        targets,
    };
    let serving = std::thread::spawn(move || {
        cacheoff_fleet::serve(listener, cfg, Arc::new(|l: &str| eprintln!("agent: {l}")))
    });
    LocalAgent {
        addr,
        data,
        serving,
    }
}

fn fleet(agents: &[(SocketAddr, Role)]) -> Fleet {
    Fleet {
        agents: agents
            .iter()
            .map(|(a, role)| AgentAddr {
                addr: a.to_string(),
                role: *role,
            })
            .collect(),
        wait: Duration::from_secs(10),
        max_skew: Duration::from_millis(50),
        version: cacheoff_fleet::version_of(&build()),
        lost_after: Duration::from_secs(10),
        trust: CoordinatorTrust::load(&secret()).unwrap(),
    }
}

fn run_fleet(
    dir: &Path,
    w: Workload,
    via: Via,
    fleet: Fleet,
) -> Result<RunResult, cacheoff::Failure> {
    let setup = Setup {
        workload: w,
        via,
        bound: None,
        label: None,
        workers: 1,
        quiet: true,
        on_start: None,
        trace: None,
        metrics: None,
        fleet: Some(fleet),
        tls_dir: None,
        watch: None,
    };
    run_setup(dir, setup, &["fleet-test".into()], &StopHandle::new())
}

/// Runs `w` straight to the origin servers on two agents here, of 1 and 2
/// threads (both roles); returns the run directory, the result and each
/// agent's data directory.
fn on_two_agents(w: Workload) -> (tempfile::TempDir, RunResult, [tempfile::TempDir; 2]) {
    let (a, b) = (agent(1, None), agent(2, None));
    let dir = tempfile::tempdir().unwrap();
    let r = run_fleet(
        dir.path(),
        w,
        Via::Direct,
        fleet(&[(a.addr, Role::Both), (b.addr, Role::Both)]),
    )
    .map_err(|f| f.error)
    .unwrap();
    a.serving.join().unwrap().unwrap();
    b.serving.join().unwrap().unwrap();
    (dir, r, [a.data, b.data])
}

/// The agent's own log of its one run.
fn local_log(data: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(runs.len(), 1, "one run in {data:?}");
    runs[0].clone()
}

#[test]
fn agents_run_the_plan_one_host_would_and_the_run_is_the_sum_of_their_logs() {
    let w = simple(150.0, 60, 6, 2.0, 4.0);
    let (dir, r, [a, b]) = on_two_agents(w.clone());

    let agents = r.summary.agents.as_ref().expect("summary lists the agents");
    let shares: Vec<&str> = agents.iter().map(|a| a.share.as_str()).collect();
    assert_eq!(shares, ["1/3", "2/3"]);
    assert!(agents.iter().all(|a| a.state == AgentState::Complete));
    assert_eq!(r.summary.partial, Some(false));
    let servers: Vec<[u32; 2]> = agents.iter().map(|a| a.servers).collect();
    assert_eq!(servers, [[0, 3], [3, 6]]);

    // Three workers on two hosts issue what three on one host would.
    let t = &r.summary.total;
    assert_every_planned_request_ended(&planned_on(&w, 3), t);
    let digest = cacheoff_workload::digest(&w, &ObjectSpace::new(w.seed, &w.content), 3);
    assert_eq!(
        r.summary.plan_digest,
        Some(format!("{:016x}", digest.get()))
    );
    assert!(t.xacts > 0);

    // The merged run is the sum of what each agent logged itself.
    let logs = [
        RunDir::open(&local_log(a.path())).unwrap(),
        RunDir::open(&local_log(b.path())).unwrap(),
    ];
    let sum = |f: &dyn Fn(&cacheoff_stats::Entry) -> u64| -> u64 {
        logs.iter()
            .map(|l| f(&l.summary.as_ref().unwrap().total))
            .sum()
    };
    assert_eq!(t.xacts, sum(&|e| e.xacts));
    assert_eq!(t.bytes, sum(&|e| e.bytes));
    assert_eq!(t.issued, sum(&|e| e.issued));
    assert_eq!(t.errors.total, sum(&|e| e.errors.total));
    let manifest = RunDir::open(dir.path()).unwrap().manifest;
    assert_eq!(manifest.agents.as_ref().map(Vec::len), Some(2));
}

#[test]
fn client_and_server_roles_run_on_separate_agents_through_a_proxy() {
    let proxy = support::proxy::caching();
    let w = simple(150.0, 40, 4, 2.0, 4.0);
    let (c1, c2, s) = (agent(1, None), agent(1, None), agent(2, None));
    let dir = tempfile::tempdir().unwrap();
    let r = run_fleet(
        dir.path(),
        w.clone(),
        Via::Proxy(proxy.addr()),
        fleet(&[
            (c1.addr, Role::Clients),
            (c2.addr, Role::Clients),
            (s.addr, Role::Servers),
        ]),
    )
    .map_err(|f| f.error)
    .unwrap();
    for a in [c1, c2, s] {
        a.serving.join().unwrap().unwrap();
    }
    let agents = r.summary.agents.as_ref().unwrap();
    let got: Vec<(&str, [u32; 2], [u32; 2])> = agents
        .iter()
        .map(|a| (a.share.as_str(), a.workers, a.servers))
        .collect();
    assert_eq!(
        got,
        [
            ("1/2", [0, 1], [0, 0]),
            ("1/2", [1, 2], [0, 0]),
            ("0", [2, 2], [0, 4])
        ]
    );
    let t = &r.summary.total;
    assert_every_planned_request_ended(&planned_on(&w, 2), t);
    assert_eq!(t.errors.total, 0, "{:?}", t.errors.by_kind);
    assert!(support::proxy::hits(&proxy) > 0, "the proxy served hits");
}

#[test]
fn a_lost_agent_leaves_a_partial_run_naming_its_share() {
    let w = simple(100.0, 40, 4, 1.0, 9.0);
    let a = agent(1, None);
    let data = tempfile::tempdir().unwrap();
    let mut b = support::process::command()
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--runs",
            "1",
            "--data",
        ])
        .arg(data.path())
        .arg("--secret-file")
        .arg(secret_file())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(b.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let b_addr: SocketAddr = line
        .split_whitespace()
        .nth(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("agent's first line: {line:?}"));
    let dir = tempfile::tempdir().unwrap();
    let killer = {
        let (path, pid) = (dir.path().to_path_buf(), b.id());
        std::thread::spawn(move || {
            support::wait::wait_for_intervals(&path, 1);
            support::process::signal(pid, "-KILL");
        })
    };
    // The origin servers are on the agent that stays.
    let r = run_fleet(
        dir.path(),
        w,
        Via::Direct,
        fleet(&[(a.addr, Role::Both), (b_addr, Role::Clients)]),
    )
    .map_err(|f| f.error)
    .unwrap();
    killer.join().unwrap();
    let _ = b.wait();
    a.serving.join().unwrap().unwrap();
    assert_eq!(r.summary.partial, Some(true));
    let agents = r.summary.agents.as_ref().unwrap();
    assert_eq!(agents[0].state, AgentState::Complete);
    let lost = &agents[1];
    assert_eq!(lost.state, AgentState::Lost);
    assert!(lost.partial && lost.lost_at_s.is_some());
    assert_eq!((lost.share.as_str(), lost.workers), ("1/2", [1, 2]));
    // What the lost agent sent before it went is kept.
    let survivor = RunDir::open(&local_log(a.data.path()))
        .unwrap()
        .summary
        .unwrap();
    assert!(r.summary.total.xacts > survivor.total.xacts);
}

/// A coordinator of the fleet speaking the protocol by hand.
fn hello(addr: SocketAddr, version: &str) -> (wire::Reader, wire::Writer, FromAgent) {
    let (mut r, w) = CoordinatorTrust::load(&secret())
        .unwrap()
        .connect(
            TcpStream::connect(addr).unwrap(),
            Instant::now() + Duration::from_secs(30),
        )
        .unwrap();
    w.send(&ToAgent::Hello {
        version: version.into(),
        protocol: wire::PROTOCOL,
        wait_s: 0.0,
    })
    .unwrap();
    let reply = r.recv(Some(Duration::from_secs(30))).unwrap();
    (r, w, reply)
}

fn prepare(w: &Workload, digest: String) -> ToAgent {
    ToAgent::Prepare(Box::new(Prepare {
        run_id: "by-hand".into(),
        workload: w.clone(),
        workload_digest: digest,
        via: ViaSpec::Direct,
        workers: [0, 1],
        total_workers: 1,
        servers: [0, w.servers.count],
        nonce: 7,
    }))
}

fn refusal(m: FromAgent) -> String {
    match m {
        FromAgent::Refused { reason } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_fleet_that_disagrees_is_refused_before_anything_starts() {
    let version = cacheoff_fleet::version_of(&build());
    let w = simple(50.0, 10, 2, 1.0, 2.0);

    // Another build.
    let other = agent(1, Some("0.0.1-other"));
    let dir = tempfile::tempdir().unwrap();
    let f = run_fleet(
        dir.path(),
        w.clone(),
        Via::Direct,
        fleet(&[(other.addr, Role::Both)]),
    )
    .expect_err("a version mismatch");
    assert_eq!(f.code, 2);
    assert!(
        format!("{:#}", f.error).contains("version mismatch"),
        "{:#}",
        f.error
    );
    assert!(
        !dir.path().join("manifest.json").exists(),
        "a refused fleet leaves no run directory behind"
    );

    // A workload that does not digest to what was sent.
    let a = agent(1, None);
    let (mut r, w_, welcome) = hello(a.addr, &version);
    assert!(matches!(welcome, FromAgent::Welcome { .. }), "{welcome:?}");
    w_.send(&prepare(&w, "0000000000000000".into())).unwrap();
    let why = refusal(r.recv(Some(Duration::from_secs(30))).unwrap());
    assert!(why.contains("workload mismatch"), "{why}");
    drop((r, w_));

    // An agent in a session refuses a second coordinator.
    let (_r, _w, welcome) = hello(a.addr, &version);
    assert!(matches!(welcome, FromAgent::Welcome { .. }), "{welcome:?}");
    let dir = tempfile::tempdir().unwrap();
    let f = run_fleet(dir.path(), w, Via::Direct, fleet(&[(a.addr, Role::Both)]))
        .expect_err("a busy agent");
    assert!(
        format!("{:#}", f.error).contains("already in run"),
        "{:#}",
        f.error
    );
}

#[test]
fn an_agent_whose_coordinator_is_lost_stops_within_an_interval() {
    // A minute of schedule: only the lost coordinator ends it early.
    let w = simple(50.0, 10, 2, 1.0, 60.0);
    let interval = w.interval.as_secs_f64();
    let a = agent(1, None);
    let (mut r, tx, _) = hello(a.addr, &cacheoff_fleet::version_of(&build()));
    tx.send(&prepare(&w, wire::workload_digest(&w))).unwrap();
    let servers = match r.recv(Some(Duration::from_secs(30))).unwrap() {
        FromAgent::Prepared { servers } => servers,
        other => panic!("{other:?}"),
    };
    tx.send(&ToAgent::Servers { servers }).unwrap();
    let accepted = r.recv::<FromAgent>(Some(Duration::from_secs(30))).unwrap();
    assert!(matches!(accepted, FromAgent::Accepted), "{accepted:?}");
    tx.send(&ToAgent::Start {
        start_unix: cacheoff_fleet::unix_now() + 0.2,
        clock_offset_s: 0.0,
        clock_slack_s: 0.002,
    })
    .unwrap();
    // One interval arrives; then the coordinator goes silent and away.
    loop {
        match r.recv::<FromAgent>(Some(Duration::from_secs(30))).unwrap() {
            FromAgent::Interval { .. } => break,
            FromAgent::Pong | FromAgent::Warn { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    let lost_at = Instant::now();
    tx.shutdown();
    drop((r, tx));
    a.serving.join().unwrap().unwrap();
    let took = lost_at.elapsed().as_secs_f64();
    let log = RunDir::open(&local_log(a.data.path())).unwrap();
    let summary = log.summary.expect("the agent finished its own log");
    assert!(summary.interrupted, "stopped, not run to its end");
    // It stopped at the loss, long before its schedule's minute was over.
    assert!(
        took < 60.0 - 2.0 * interval,
        "agent ran on for {took:.1} s after its coordinator was lost"
    );
}

#[test]
fn a_fill_phase_ends_at_its_goal_on_every_agent_at_once() {
    let w = support::run::from_text(
        "fill.toml",
        r#"
name = "fleet-fill"
peak_rate = "600/s"
fill_rate = "400/s"
cache_size = "1MB"
interval = "1s"
[robots]
count = 60
[servers]
count = 6
[[content]]
name = "o"
share = 1.0
size = "const(10KB)"
cachable = 1.0
[popularity]
recurrence = 0.0
working_set_cap = 300
[[phases]]
name = "warm"
duration = "1s"
[[phases]]
name = "fill"
duration = "60s"
load_begin = "fill"
load_end = "fill"
goal = { fill = 2.0, freeze = true }
[[phases]]
name = "top"
duration = "2s"
measured = true
"#,
    );
    let (dir, r, [a, b]) = on_two_agents(w);
    assert!(!r.summary.interrupted);
    // The coordinator saw the goal met (2 MB filled, every worker's
    // working set frozen) and every agent jumped to the top phase.
    let fill = support::run::phase(&r.summary, "fill");
    assert!(fill.fill_bytes >= 2 << 20, "{}", fill.fill_bytes);
    assert!(fill.duration_s < 30.0, "fill ran {} s", fill.duration_s);
    let top = support::run::phase(&r.summary, "top");
    assert!((top.duration_s - 2.0).abs() < 0.01, "{}", top.duration_s);
    let merged = RunDir::open(dir.path()).unwrap().intervals;
    for data in [a.path(), b.path()] {
        let local = RunDir::open(&local_log(data)).unwrap();
        let idx: Vec<u32> = local.intervals.iter().map(|i| i.interval).collect();
        let want: Vec<u32> = merged.iter().map(|i| i.interval).collect();
        assert_eq!(idx, want, "the agent followed the same time line");
    }
}
