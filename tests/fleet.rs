//! Runs over many hosts, with agents on this machine's loopback: the
//! split issues exactly the plan one host would, the merged run is the sum
//! of the agents' own logs, a lost agent leaves a partial run naming its
//! share, a lost coordinator stops its agents, and a fleet that disagrees
//! is refused before anything starts. An agent obeys only its fleet:
//! strangers, rogue coordinators and greedy peers are refused, bounded
//! or timed out while the real coordinator's run goes on (docs/security.md).
//! (tests/netns.rs runs agents in network namespaces, as separate hosts.)

use crate::support;

use cacheoff_agent::{StopHandle, Via};
use cacheoff_fleet::wire::{self, FromAgent, Prepare, ToAgent, ViaSpec};
use cacheoff_fleet::{
    AgentAddr, AgentConfig, AgentTrust, CoordinatorTrust, Fleet, Limits, Role, Source, Targets,
};
use cacheoff_run::{build, run_setup, RunResult, Setup};
use cacheoff_rundir::{AgentState, RunDir};
use cacheoff_testkit::{
    closed_now, closed_within, origin, read_all, rss, threads_named, Origin, Reply,
};
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
    // The exit status and message the command would give.
    run_setup(dir, setup, &["fleet-test".into()], &StopHandle::new())
        .map_err(cacheoff::Failure::from)
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
    let secret = secret_file();
    let (mut b, line) = agent_process(&[
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--workers".as_ref(),
        "1".as_ref(),
        "--runs".as_ref(),
        "1".as_ref(),
        "--data".as_ref(),
        data.path().as_os_str(),
        "--secret-file".as_ref(),
        secret.as_os_str(),
    ]);
    let b_addr: SocketAddr = line
        .split_whitespace()
        .nth(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("agent's first line: {line:?}"));
    let dir = tempfile::tempdir().unwrap();
    let killer = {
        let (path, pid) = (dir.path().to_path_buf(), b.id());
        std::thread::spawn(move || {
            support::run::wait_for_intervals(&path, 1);
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

/// `cacheoff agent ARGS` as a process, and the line saying where it
/// listens.
fn agent_process(args: &[&std::ffi::OsStr]) -> (std::process::Child, String) {
    let mut child = support::process::command()
        .arg("agent")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, line)
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

/// A server nobody should reach: its `connections` are those it got.
fn victim() -> Origin {
    origin(|_| Reply::Close)
}

fn fleet_with(agents: &[(SocketAddr, Role)], trust: CoordinatorTrust) -> Fleet {
    Fleet {
        trust,
        wait: Duration::from_secs(2),
        ..fleet(agents)
    }
}

fn other_secret() -> CoordinatorTrust {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("guess");
    std::fs::write(&f, "a secret the fleet does not share").unwrap();
    CoordinatorTrust::load(&Source::Secret(f)).unwrap()
}

#[test]
fn a_coordinator_without_the_fleet_s_credentials_cannot_make_an_agent_send_one_request() {
    let victim = victim();
    let a = agent(1, None);
    let w = simple(100.0, 10, 2, 0.5, 1.5);

    // A stranger speaking the protocol in the clear: the agent wants TLS
    // and says nothing back, not even its version.
    let digest = wire::workload_digest(&w);
    let mut lines = Vec::new();
    for msg in [
        ToAgent::Hello {
            version: cacheoff_fleet::version_of(&build()),
            protocol: wire::PROTOCOL,
            wait_s: 86_400.0,
        },
        prepare(&w, digest),
    ] {
        lines.extend(serde_json::to_vec(&msg).unwrap());
        lines.push(b'\n');
    }
    let heard = read_all(a.addr, &lines).unwrap_or_default();
    let heard = String::from_utf8_lossy(&heard);
    assert!(
        !heard.contains("cacheoff") && !heard.contains(env!("CARGO_PKG_VERSION")),
        "the agent told a stranger: {heard:?}"
    );

    // Coordinators with a guessed secret, or none at all.
    for (trust, why) in [
        (other_secret(), "TLS handshake failed"),
        (CoordinatorTrust::Insecure, "before saying hello"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let f = run_fleet(
            dir.path(),
            w.clone(),
            Via::Proxy(victim.addr()),
            fleet_with(&[(a.addr, Role::Both)], trust),
        )
        .expect_err("a stranger is refused");
        assert_eq!(f.code, 2, "{:#}", f.error);
        assert!(format!("{:#}", f.error).contains(why), "{:#}", f.error);
        assert!(!dir.path().join("manifest.json").exists());
    }
    assert_eq!(
        victim.connections(),
        0,
        "not a single connection to the target"
    );

    // The fleet's own coordinator runs beside it all.
    let dir = tempfile::tempdir().unwrap();
    let r = run_fleet(dir.path(), w, Via::Direct, fleet(&[(a.addr, Role::Both)]))
        .map_err(|f| f.error)
        .unwrap();
    a.serving.join().unwrap().unwrap();
    assert!(r.summary.total.xacts > 0);
    assert_eq!(r.summary.total.errors.total, 0);
    assert_eq!(victim.connections(), 0);
}

#[test]
fn a_coordinator_of_the_fleet_cannot_aim_an_agent_outside_its_allow_list() {
    let victim = victim();
    let proxy = support::proxy::caching();
    let allowed = Targets::Only(vec![proxy.addr().to_string().parse().unwrap()]);
    let a = agent_with(1, None, Limits::default(), allowed.clone());
    let w = simple(100.0, 10, 2, 0.5, 1.5);

    // Through a proxy it does not allow: refused before anything starts.
    let dir = tempfile::tempdir().unwrap();
    let f = run_fleet(
        dir.path(),
        w.clone(),
        Via::Proxy(victim.addr()),
        fleet(&[(a.addr, Role::Both)]),
    )
    .expect_err("outside the allow-list");
    assert_eq!(f.code, 2);
    let why = format!("{:#}", f.error);
    assert!(
        why.contains("outside this agent's --allow-target")
            && why.contains(&victim.addr().to_string()),
        "{why}"
    );
    assert!(!dir.path().join("manifest.json").exists());

    // Origin servers announced at a place it does not allow: a rogue
    // coordinator's run straight to them is refused too.
    let version = cacheoff_fleet::version_of(&build());
    let (mut r, tx, _) = hello(a.addr, &version);
    let mut p = prepare(&w, wire::workload_digest(&w));
    if let ToAgent::Prepare(p) = &mut p {
        p.servers = [0, 1];
    }
    tx.send(&p).unwrap();
    let mine = match r.recv(Some(Duration::from_secs(30))).unwrap() {
        FromAgent::Prepared { servers } => servers,
        other => panic!("{other:?}"),
    };
    tx.send(&ToAgent::Servers {
        servers: vec![mine[0], victim.addr()],
    })
    .unwrap();
    let why = refusal(r.recv(Some(Duration::from_secs(30))).unwrap());
    assert!(
        why.contains("origin server 1") && why.contains("--allow-target"),
        "{why}"
    );
    drop((r, tx));

    // The proxy it allows: a clean run.
    let dir = tempfile::tempdir().unwrap();
    let r = run_fleet(
        dir.path(),
        w,
        Via::Proxy(proxy.addr()),
        fleet(&[(a.addr, Role::Both)]),
    )
    .map_err(|f| f.error)
    .unwrap();
    a.serving.join().unwrap().unwrap();
    assert_eq!(r.summary.total.errors.total, 0);
    assert!(support::proxy::hits(&proxy) + support::proxy::misses(&proxy) > 0);
    assert_eq!(
        victim.connections(),
        0,
        "not a single connection to the target"
    );
}

#[test]
fn an_agent_takes_only_a_share_it_can_hold_and_a_plain_name_for_its_log() {
    if !cacheoff_testkit::alone!(
        an_agent_takes_only_a_share_it_can_hold_and_a_plain_name_for_its_log
    ) {
        return;
    }
    let a = agent(1, None);
    let version = cacheoff_fleet::version_of(&build());
    let w = simple(100.0, 10, 2, 0.5, 1.5);
    let before = rss();
    let outside = a.data.path().join("../escaped-by-run-id");
    type Edit<'a> = Box<dyn Fn(&mut Prepare) + 'a>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|p| p.run_id = "../escaped-by-run-id".into()),
            "plain name",
        ),
        (
            Box::new(|p| p.run_id = a.data.path().join("abs").display().to_string()),
            "plain name",
        ),
        (
            Box::new(|p| p.workload.robots.count = 100_000_000),
            "--max-robots",
        ),
        (
            Box::new(|p| {
                p.workers = [0, 100_000];
                p.total_workers = 100_000;
            }),
            "--workers",
        ),
        (Box::new(|p| p.servers = [0, 5_000_000]), "servers"),
    ];
    for (edit, why) in cases {
        let (mut r, tx, _) = hello(a.addr, &version);
        let mut msg = prepare(&w, String::new());
        if let ToAgent::Prepare(p) = &mut msg {
            edit(p);
            p.workload_digest = wire::workload_digest(&p.workload);
        }
        tx.send(&msg).unwrap();
        let got = refusal(r.recv(Some(Duration::from_secs(30))).unwrap());
        assert!(got.contains(why), "{why}: {got}");
    }
    assert!(
        !outside.exists(),
        "a run id wrote outside the data directory"
    );
    let grown = rss().saturating_sub(before);
    assert!(grown < 200 << 20, "refusals cost {} KB", grown >> 10);
    let only: Vec<_> = std::fs::read_dir(a.data.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(
        only.is_empty(),
        "nothing logged for a refused run: {only:?}"
    );
}

#[test]
fn strangers_holding_links_neither_lock_out_the_coordinator_nor_grow_the_agent() {
    if !cacheoff_testkit::alone!(
        strangers_holding_links_neither_lock_out_the_coordinator_nor_grow_the_agent
    ) {
        return;
    }
    let limits = Limits {
        max_connections: 16,
        max_pending_per_peer: 4,
        handshake: Duration::from_millis(1500),
        ..Limits::default()
    };
    let a = agent_with(1, None, limits, Targets::Announced);
    // 60 idle links from 30 addresses (127.0.0.2..): far more than the
    // agent holds; one byte of a TLS record each, then silence.
    let held: Vec<TcpStream> = (0..60u8)
        .filter_map(|k| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
            s.bind(&SocketAddr::from(([127, 0, 0, 2 + k / 2], 0)).into())
                .ok()?;
            s.connect(&a.addr.into()).ok()?;
            let mut t: TcpStream = s.into();
            let _ = std::io::Write::write_all(&mut t, &[0x16]);
            Some(t)
        })
        .collect();
    assert_eq!(held.len(), 60);
    std::thread::sleep(Duration::from_millis(300));
    let during = threads_named("agent-link");
    assert!(during <= 16, "{during} link threads with 60 links held");
    // Every held link is closed by the agent: at once beyond its limits,
    // at the handshake deadline otherwise.
    for mut s in held {
        assert!(closed_within(&mut s, Duration::from_secs(30)).0);
    }
    // The coordinator's run, once they are gone, as beside them.
    let w = simple(100.0, 10, 2, 0.5, 1.5);
    let dir = tempfile::tempdir().unwrap();
    let r = run_fleet(dir.path(), w, Via::Direct, fleet(&[(a.addr, Role::Both)]))
        .map_err(|f| f.error)
        .unwrap();
    a.serving.join().unwrap().unwrap();
    assert_eq!(r.summary.total.errors.total, 0);
}

#[test]
fn the_coordinator_gets_in_while_strangers_hold_every_link() {
    let limits = Limits {
        max_connections: 8,
        max_pending_per_peer: 8,
        handshake: Duration::from_millis(1000),
        ..Limits::default()
    };
    let a = agent_with(1, None, limits, Targets::Announced);
    // Strangers keep every slot full for 4 s, reconnecting as they are cut.
    let until = Instant::now() + Duration::from_secs(4);
    let addr = a.addr;
    let pest = std::thread::spawn(move || {
        let mut held = Vec::new();
        while Instant::now() < until {
            // Those the agent has not cut yet.
            held.retain(|s: &TcpStream| !closed_now(s));
            while held.len() < 8 {
                let Ok(s) = TcpStream::connect(addr) else {
                    break;
                };
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let w = simple(100.0, 10, 2, 0.5, 1.5);
    let dir = tempfile::tempdir().unwrap();
    let mut f = fleet(&[(a.addr, Role::Both)]);
    f.wait = Duration::from_secs(20);
    let r = run_fleet(dir.path(), w, Via::Direct, f)
        .map_err(|f| f.error)
        .unwrap();
    pest.join().unwrap();
    a.serving.join().unwrap().unwrap();
    assert_eq!(r.summary.total.errors.total, 0);
}

#[test]
fn two_agents_given_one_data_directory_refuse_at_start() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let (mut first, line) = agent_process(
        &["--listen", "127.0.0.1:0", "--insecure", "--data", d].map(std::ffi::OsStr::new),
    );
    assert!(line.contains("listening on"), "{line}");
    let second = support::process::cacheoff(&[
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--insecure",
        "--data",
        d,
    ]);
    support::process::terminate(&mut first, Duration::from_secs(5));
    assert_eq!(second.status.code(), Some(2));
    let e = support::process::stderr(&second);
    assert!(e.contains("another cacheoff agent is using it"), "{e}");
}

#[test]
fn an_agent_wants_credentials_or_insecure_by_name() {
    let o = support::process::cacheoff(&["agent", "--listen", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2));
    let e = support::process::stderr(&o);
    assert!(
        e.contains("--fleet-dir") && e.contains("--secret-file") && e.contains("--insecure"),
        "{e}"
    );
}

/// The sh block of docs/distributed.md that holds `needle`.
fn doc_block(needle: &str) -> String {
    let doc = support::repo_file("docs/distributed.md");
    doc.split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("docs/distributed.md has no sh block with {needle}"))
        .to_string()
}

#[test]
fn two_agents_on_one_host_as_the_docs_show_them_run_a_clean_merged_run() {
    let block = doc_block("127.0.0.1:7071");
    let here = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_cacheoff")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    // The block exactly as shown, then a wait for the agents it started
    // (they exit after their one run); a watchdog bounds it all.
    let script = format!("set -e\n{block}\nwait\n");
    let sh = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(here.path())
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = sh.id();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            if !cacheoff_testkit::within(Duration::from_secs(180), || {
                done.load(std::sync::atomic::Ordering::SeqCst)
            }) {
                // The whole group: bash and the agents it started.
                let _ = std::process::Command::new("pkill")
                    .args(["-KILL", "-P", &pid.to_string()])
                    .status();
                support::process::signal(pid, "-KILL");
            }
        })
    };
    let out = sh.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    watchdog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the documented commands failed:\n{stdout}"
    );
    let run = RunDir::open(&here.path().join("runs/two")).unwrap();
    let s = run.summary.expect("the merged run's summary");
    assert!(s.total.xacts > 1000, "{} transactions", s.total.xacts);
    assert_eq!(s.total.errors.total, 0, "a clean run");
    assert_eq!(s.partial, Some(false));
    let agents = s.agents.unwrap();
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().all(|a| a.state == AgentState::Complete));
    // Each agent kept its own log, in a directory of its port.
    for port in ["7071", "7072"] {
        let log = local_log(&here.path().join(format!("cacheoff-agent-{port}")));
        assert!(RunDir::open(&log).unwrap().summary.is_some(), "{port}");
    }
}
