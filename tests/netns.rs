//! Issue 16: a run over real separate hosts on one machine. Each host is a
//! network namespace of its own (two client agents, one server agent, the
//! reference proxy, the coordinator), joined by veth pairs to a bridge in
//! a sixth namespace, so robots, proxy and origin servers talk over real
//! interfaces with their own addresses, as hosts on a LAN do.
//!
//! Needs root and `ip netns` (iproute2); without them each test prints why
//! and passes. Every namespace is named `cacheoff-<pid>-<test>-<host>` and
//! deleted by [`Lab`]'s `Drop`, after the processes in it are killed, also
//! when an assertion fails; namespaces a killed test process left behind
//! (its pid gone) are deleted by the next run.

use crate::support;

use cacheoff_rundir::{AgentState, IntervalRecord, Run, RunDir};
use cacheoff_stats::{Counts, Entry, Latency};
use cacheoff_testkit::{until, within};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The hosts, each a namespace with one address on the bridge.
const HOSTS: [(&str, u8); 5] = [("px", 2), ("c1", 3), ("c2", 4), ("srv", 5), ("co", 6)];

/// The run both tests ask for: 15 s of schedule at 200 requests/s.
const RUN_ARGS: [&str; 7] = [
    "simple",
    "--rate",
    "200/s",
    "--warmup",
    "5s",
    "--duration",
    "10s",
];

/// Limit on any one run, its drain included (15 s of schedule).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Worker threads of each client agent: the run has twice as many.
const CLIENT_WORKERS: u32 = 1;

#[test]
fn a_run_over_namespaces_adds_up_to_its_agents_logs_and_to_one_hosts_plan() {
    let Some(mut lab) = Lab::new("sum") else {
        return;
    };
    let fleet = lab.fleet();
    // The same run on one host meanwhile (the plan does not depend on
    // timing).
    let direct = lab.direct_run("direct");
    let status = lab.run_fleet(&fleet, "run", None);
    assert_eq!(status.code(), Some(0), "the fleet run failed");
    lab.wait_agents(&fleet, None);
    let status = lab.wait(direct, RUN_LIMIT);
    assert_eq!(status.code(), Some(0), "the direct run failed");
    lab.stop_proxy(&fleet);

    let merged = RunDir::open(&lab.dir.join("run")).unwrap();
    let summary = merged.summary.as_ref().expect("the merged summary.json");
    let locals: Vec<Run> = fleet.agents.iter().map(|a| lab.local_log(a)).collect();
    let total = &summary.total;
    println!(
        "merged: {} transactions, {} bytes, {} hits, {} errors {:?}, plan {}",
        total.xacts,
        total.bytes,
        total.counts.unwrap().basic_hits,
        total.errors.total,
        total.errors.by_kind,
        summary.plan_digest.as_deref().unwrap_or("-")
    );

    // Every agent ran its share, and ended.
    let servers = merged.manifest.workload.servers.count;
    let agents = summary.agents.as_deref().expect("summary.json's agents");
    let shares = [
        ("clients", "1/2", [0, 1], [0, 0]),
        ("clients", "1/2", [1, 2], [0, 0]),
        ("servers", "0", [2, 2], [0, servers]),
    ];
    for ((a, rec), share) in fleet.agents.iter().zip(agents).zip(shares) {
        assert_eq!(rec.addr, a.addr.to_string());
        let got = (
            rec.role.as_str(),
            rec.share.as_str(),
            rec.workers,
            rec.servers,
        );
        assert_eq!(got, share, "agent {}", a.host);
        assert_eq!(rec.state, AgentState::Complete, "agent {}", a.host);
        assert!(!rec.partial);
    }
    assert_eq!(summary.partial, Some(false));
    assert!(!summary.interrupted);

    // Each part ran on its own host: the servers at the server host's
    // address, the robots at the client hosts' (as the proxy saw them).
    let srv = lab.ip("srv");
    assert_eq!(merged.manifest.servers.len(), servers as usize);
    let elsewhere: Vec<_> = merged
        .manifest
        .servers
        .iter()
        .filter(|s| s.ip() != srv)
        .collect();
    assert!(elsewhere.is_empty(), "servers not at {srv}: {elsewhere:?}");
    let (clients, origins) = lab.access_log_hosts();
    assert_eq!(
        clients,
        BTreeSet::from([lab.ip("c1"), lab.ip("c2")]),
        "the proxy's clients"
    );
    assert_eq!(origins, BTreeSet::from([srv]), "the proxy's origin servers");

    // The merged run is the sum of the agents' own logs: interval by
    // interval, and in total (summary.json).
    assert_eq!(
        by_interval(&merged.intervals),
        sum_by_interval(locals.iter().map(|r| r.intervals.as_slice())),
        "merged intervals against the agents' logs"
    );
    let local_totals: Vec<&Entry> = locals
        .iter()
        .map(|r| &r.summary.as_ref().expect("an agent's summary.json").total)
        .collect();
    let sum = Tally::sum(local_totals.iter().map(|t| Tally::of(t)));
    assert_eq!(Tally::of(total), sum, "merged total against the agents'");
    assert!(total.xacts > 0, "no transactions");
    assert!(sum.counts.basic_hits > 0, "no hits");

    // A percentile of a union of samples lies between the parts' own.
    let parts: Vec<Latency> = local_totals
        .iter()
        .map(|t| t.rt_ms.all)
        .filter(|l| l.count > 0)
        .collect();
    assert_eq!(parts.len(), 2, "both client agents have replies");
    let all = &total.rt_ms.all;
    between("p50", all.p50, parts.iter().map(|l| l.p50));
    between("p99", all.p99, parts.iter().map(|l| l.p99));

    // Together the agents issued the plan one host issues on as many
    // workers.
    let direct = RunDir::open(&lab.dir.join("direct")).unwrap();
    let direct = direct.summary.expect("the direct run's summary.json");
    println!(
        "plan digest: fleet {:?}, one host {:?}",
        summary.plan_digest, direct.plan_digest
    );
    assert_eq!(direct.total.issued, total.issued, "planned requests issued");
    assert!(summary.plan_digest.is_some());
    assert_eq!(
        summary.plan_digest,
        direct.plan_digest,
        "the fleet's plan against one host's on {} workers",
        2 * CLIENT_WORKERS
    );
}

#[test]
fn a_client_agent_killed_mid_run_leaves_a_partial_run_with_what_it_sent() {
    let Some(mut lab) = Lab::new("kill") else {
        return;
    };
    let fleet = lab.fleet();
    // The second client agent dies in its second interval (run time ~8 s
    // of 15 s), its first one logged and sent.
    const VICTIM: usize = 1;
    let status = lab.run_fleet(&fleet, "run", Some(VICTIM));
    // Errors above 3% fail a run (exit 1); the files say the rest.
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "the fleet run failed: {status}"
    );
    lab.wait_agents(&fleet, Some(VICTIM));
    lab.stop_proxy(&fleet);

    let merged = RunDir::open(&lab.dir.join("run")).unwrap();
    let summary = merged.summary.as_ref().expect("the merged summary.json");
    let agents = summary.agents.as_deref().expect("summary.json's agents");
    assert_eq!(summary.partial, Some(true), "a run with a lost agent");
    let lost = &agents[VICTIM];
    println!(
        "lost: {} share {} workers {:?} at {:?} s ({:?})",
        lost.addr, lost.share, lost.workers, lost.lost_at_s, lost.lost_why
    );
    assert_eq!(lost.addr, fleet.agents[VICTIM].addr.to_string());
    assert_eq!(lost.state, AgentState::Lost);
    assert!(lost.partial);
    assert_eq!((lost.share.as_str(), lost.workers), ("1/2", [1, 2]));
    let at = lost.lost_at_s.expect("when it was lost");
    assert!(at >= 7.5, "lost at {at} s, before it was killed");
    for (k, (a, rec)) in fleet.agents.iter().zip(agents).enumerate() {
        if k != VICTIM {
            assert_eq!(rec.state, AgentState::Complete, "agent {}", a.host);
            assert!(!rec.partial && rec.lost_at_s.is_none());
        }
    }

    // Interval by interval: the survivors' logs, plus the lost agent's
    // intervals the coordinator got: all it logged, but perhaps the last
    // (logged, then sent).
    let locals: Vec<Run> = fleet.agents.iter().map(|a| lab.local_log(a)).collect();
    assert!(
        locals[VICTIM].summary.is_none(),
        "a killed agent wrote a summary"
    );
    let survivors = sum_by_interval(
        (0..locals.len())
            .filter(|&k| k != VICTIM)
            .map(|k| locals[k].intervals.as_slice()),
    );
    let victim = by_interval(&locals[VICTIM].intervals);
    let merged_iv = by_interval(&merged.intervals);
    assert_eq!(
        merged_iv.keys().collect::<Vec<_>>(),
        survivors.keys().collect::<Vec<_>>(),
        "merged intervals against the survivors'"
    );
    let mut received = 0;
    for (i, m) in &merged_iv {
        let mut with = survivors[i].clone();
        if let Some(v) = victim.get(i) {
            with.add(v);
        }
        if victim.contains_key(i) && *m == with {
            assert_eq!(
                received, *i as usize,
                "the lost agent's intervals, in order"
            );
            received += 1;
        } else {
            assert_eq!(*m, survivors[i], "merged interval {i}");
        }
    }
    println!(
        "the lost agent logged {} intervals, the coordinator merged {received}",
        victim.len()
    );
    assert!(received >= 1, "its first interval was not merged");
    assert!(
        received + 1 >= victim.len(),
        "the coordinator missed more than the last of its intervals"
    );

    // In total: at least the survivors', at most with all of the lost
    // agent's log.
    let total = Tally::of(&summary.total);
    let low = Tally::sum(survivors.into_values());
    let lost_log = Tally::sum(victim.into_values());
    let (m, s, l) = (total.counts.xacts, low.counts.xacts, lost_log.counts.xacts);
    println!("transactions: merged {m}, survivors {s}, lost agent's log {l}");
    assert!(s > 0 && l > 0);
    assert!(s <= m && m <= s + l);
    assert!(total.counts.basic_hits > 0, "no hits");
}

/// What a merged span must add up to: the counts, and the errors by
/// kind.
#[derive(Debug, Clone, Default, PartialEq)]
struct Tally {
    counts: Counts,
    errors: BTreeMap<String, u64>,
}

impl Tally {
    fn of(e: &Entry) -> Tally {
        let t = Tally {
            counts: e.counts.expect("counts in every entry"),
            errors: e.errors.by_kind.clone(),
        };
        assert_eq!(t.errors.values().sum::<u64>(), e.errors.total);
        t
    }

    fn add(&mut self, o: &Tally) {
        self.counts.add(&o.counts);
        for (k, n) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
    }

    fn sum(all: impl Iterator<Item = Tally>) -> Tally {
        let mut t = Tally::default();
        all.for_each(|o| t.add(&o));
        t
    }
}

/// Asserts that the merged run's percentile `name` lies within the
/// agents' own.
fn between(name: &str, merged: f64, parts: impl Iterator<Item = f64>) {
    let (lo, hi) = parts.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    println!("response time {name}: merged {merged} ms, agents {lo} .. {hi} ms");
    assert!(
        lo <= merged && merged <= hi,
        "merged {name} {merged} ms not within the agents' {lo} .. {hi} ms"
    );
}

/// Each interval's tally, by index.
fn by_interval(ivs: &[IntervalRecord]) -> BTreeMap<u32, Tally> {
    sum_by_interval([ivs])
}

/// Each interval's tally, added over runs.
fn sum_by_interval<'a>(
    runs: impl IntoIterator<Item = &'a [IntervalRecord]>,
) -> BTreeMap<u32, Tally> {
    let mut out: BTreeMap<u32, Tally> = BTreeMap::new();
    for ivs in runs {
        for iv in ivs {
            out.entry(iv.interval)
                .or_default()
                .add(&Tally::of(&iv.stats));
        }
    }
    out
}

/// `cacheoff run` with [`RUN_ARGS`], quiet, to `out`.
fn run_args(out: &Path) -> Vec<String> {
    let mut args = vec!["run".to_string()];
    args.extend(RUN_ARGS.iter().map(|s| s.to_string()));
    args.extend(["-q".into(), "-o".into(), out.display().to_string()]);
    args
}

/// The one run directory an agent's `--data` holds, once it exists.
fn wait_for_local_log(data: &Path, limit: Duration) -> PathBuf {
    let mut found = None;
    until(&format!("a run in {}", data.display()), limit, || {
        found = std::fs::read_dir(data).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.is_dir())
        });
        found.is_some()
    });
    found.unwrap()
}

/// An agent of the fleet: its host, address and process.
struct Agent {
    host: &'static str,
    addr: SocketAddr,
    proc: usize,
}

struct Fleet {
    proxy: SocketAddr,
    proxy_proc: usize,
    agents: Vec<Agent>,
}

/// A process started by the test, killed when the lab goes.
struct Proc {
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: PathBuf,
}

/// The namespaces of one test and everything running in them.
struct Lab {
    prefix: String,
    net: [u8; 3],
    namespaces: Vec<String>,
    procs: Vec<Proc>,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Lab {
    /// Builds the hosts and the bridge, or says why it cannot (`None`).
    fn new(test: &str) -> Option<Lab> {
        if !is_root() {
            println!("SKIPPED: netns tests need root (network namespaces)");
            return None;
        }
        if !ip(&["netns", "list"]).is_ok_and(|o| o.status.success()) {
            println!("SKIPPED: `ip netns` (iproute2) is not available");
            return None;
        }
        sweep_stale();
        let pid = std::process::id();
        let tmp = tempfile::tempdir().unwrap();
        let mut lab = Lab {
            prefix: format!("cacheoff-{pid}-{test}"),
            net: [10, 213, (pid % 250) as u8],
            namespaces: Vec::new(),
            procs: Vec::new(),
            dir: tmp.path().to_path_buf(),
            _tmp: tmp,
        };
        let bridge = lab.ns("br");
        if let Err(e) = lab.add_ns(&bridge) {
            println!("SKIPPED: cannot create a network namespace: {e}");
            return None;
        }
        run_ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"]);
        run_ip(&["-n", &bridge, "link", "set", "br0", "up"]);
        for (host, last) in HOSTS {
            let ns = lab.ns(host);
            lab.add_ns(&ns).unwrap();
            let port = format!("v-{host}");
            run_ip(&[
                "-n", &bridge, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ]);
            run_ip(&["-n", &bridge, "link", "set", &port, "master", "br0"]);
            run_ip(&["-n", &bridge, "link", "set", &port, "up"]);
            let [a, b, c] = lab.net;
            let addr = format!("{a}.{b}.{c}.{last}/24");
            run_ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"]);
            run_ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        }
        println!(
            "{}: namespaces {:?}, bridge in {bridge}, hosts on {}.{}.{}.0/24, files in {}",
            lab.prefix,
            lab.namespaces,
            lab.net[0],
            lab.net[1],
            lab.net[2],
            lab.dir.display()
        );
        Some(lab)
    }

    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    fn add_ns(&mut self, ns: &str) -> Result<(), String> {
        let o = ip(&["netns", "add", ns]).map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
        }
        self.namespaces.push(ns.to_string());
        run_ip(&["-n", ns, "link", "set", "lo", "up"]);
        Ok(())
    }

    fn ip(&self, host: &str) -> IpAddr {
        let last = HOSTS.iter().find(|(h, _)| *h == host).unwrap().1;
        let [a, b, c] = self.net;
        IpAddr::V4(Ipv4Addr::new(a, b, c, last))
    }

    fn data(&self, a: &Agent) -> PathBuf {
        self.dir.join("agents").join(a.host)
    }

    /// The agent's own run directory of the run.
    fn local_log(&self, a: &Agent) -> Run {
        let dir = wait_for_local_log(&self.data(a), Duration::ZERO);
        RunDir::open(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
    }

    /// Starts `cacheoff ARGS` in `host`'s namespace (`None`: this one).
    fn spawn(&mut self, host: Option<&str>, name: &str, args: &[String]) -> usize {
        let stderr = self.dir.join(format!("{name}.err"));
        let bin = env!("CARGO_BIN_EXE_cacheoff");
        let mut cmd = match host {
            Some(h) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &self.ns(h), bin]);
                c
            }
            None => Command::new(bin),
        };
        let mut child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&stderr).unwrap()))
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        // Reads to the end, so that no process blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        self.procs.push(Proc {
            name: name.into(),
            child,
            lines: rx,
            stderr,
        });
        self.procs.len() - 1
    }

    /// The first line of process `p`'s output that contains `what`.
    fn line(&self, p: usize, what: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.procs[p].lines.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(_) => {}
                Err(_) => panic!(
                    "{}: no line with {what:?} within {limit:?}",
                    self.procs[p].name
                ),
            }
        }
    }

    /// Waits up to `limit` for process `p` to exit.
    fn wait(&mut self, p: usize, limit: Duration) -> ExitStatus {
        let mut status = None;
        let child = &mut self.procs[p].child;
        let ended = within(limit, || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        assert!(
            ended,
            "{} still running after {limit:?}",
            self.procs[p].name
        );
        status.unwrap()
    }

    /// The proxy and the three agents, each in its namespace and ready.
    fn fleet(&mut self) -> Fleet {
        let net = format!("{}.{}.{}.0/24", self.net[0], self.net[1], self.net[2]);
        let px = self.ip("px");
        let log = self.dir.join("access.log");
        // A fixed port is free in a namespace of our own; 4000 client
        // connections (500 robots, 4 each) fit the descriptor limit where
        // the default 10000 does not.
        let args = [
            "proxy".into(),
            "--listen".into(),
            format!("{px}:3128"),
            "--allow".into(),
            net.clone(),
            "--allow-dest".into(),
            format!("{net}:*"),
            "--max-client-connections".into(),
            "4000".into(),
            "--access-log".into(),
            log.display().to_string(),
        ];
        let proxy_proc = self.spawn(Some("px"), "proxy", &args);
        let line = self.line(proxy_proc, "forward proxy on", Duration::from_secs(15));
        println!("px: {line}");
        // The fleet's credentials, as `cacheoff tls` makes them.
        let creds = self.dir.join("creds");
        cacheoff_tls::FleetKeys::create_dir(&creds).unwrap();
        let mut agents = Vec::new();
        for host in ["c1", "c2", "srv"] {
            let ip = self.ip(host);
            let data = self.dir.join("agents").join(host);
            let workers = if host == "srv" { 1 } else { CLIENT_WORKERS };
            let args = [
                "agent".into(),
                "--listen".into(),
                format!("{ip}:0"),
                "--host-ip".into(),
                ip.to_string(),
                "--runs".into(),
                "1".into(),
                "--workers".into(),
                workers.to_string(),
                "--data".into(),
                data.display().to_string(),
                "--fleet-dir".into(),
                creds.display().to_string(),
                // Its robots reach the proxy and the fleet's hosts only.
                "--allow-target".into(),
                net.clone(),
            ];
            let proc = self.spawn(Some(host), &format!("agent-{host}"), &args);
            let line = self.line(proc, "listening on", Duration::from_secs(15));
            println!("{host}: {line}");
            let addr = line
                .split("listening on ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no address in {line:?}"));
            agents.push(Agent { host, addr, proc });
        }
        Fleet {
            proxy: SocketAddr::new(px, 3128),
            proxy_proc,
            agents,
        }
    }

    /// The run of [`RUN_ARGS`] on this host alone, to `DIR/out`, on as
    /// many workers as the fleet's client agents have.
    fn direct_run(&mut self, out: &str) -> usize {
        let mut args = run_args(&self.dir.join(out));
        args.extend(["--direct".into(), "--workers".into()]);
        args.push((2 * CLIENT_WORKERS).to_string());
        self.spawn(None, "direct", &args)
    }

    /// Runs [`RUN_ARGS`] on the fleet from the coordinator's namespace, to
    /// `DIR/out`; with `kill`, that agent is killed (SIGKILL) 3 s after
    /// it logged its first interval.
    fn run_fleet(&mut self, fleet: &Fleet, out: &str, kill: Option<usize>) -> ExitStatus {
        let addrs: Vec<String> = fleet.agents.iter().map(|a| a.addr.to_string()).collect();
        let mut args = run_args(&self.dir.join(out));
        args.extend([
            "--agents".into(),
            addrs.join(","),
            "--roles".into(),
            format!("clients={},{}", addrs[0], addrs[1]),
            format!("servers={}", addrs[2]),
            "--proxy".into(),
            fleet.proxy.to_string(),
            "--fleet-dir".into(),
            self.dir.join("creds").display().to_string(),
        ]);
        println!("co: cacheoff {}", args.join(" "));
        let t = Instant::now();
        let coord = self.spawn(Some("co"), "coordinator", &args);
        if let Some(k) = kill {
            let a = &fleet.agents[k];
            let log = wait_for_local_log(&self.data(a), Duration::from_secs(30));
            support::run::wait_for_intervals(&log, 1);
            std::thread::sleep(Duration::from_secs(3));
            support::process::signal(self.procs[a.proc].child.id(), "-KILL");
            let s = t.elapsed().as_secs_f64();
            println!(
                "killed agent {} ({}) {s:.1} s after the coordinator started",
                a.host, a.addr
            );
        }
        let status = self.wait(coord, RUN_LIMIT);
        let s = t.elapsed().as_secs_f64();
        println!("the fleet run ended after {s:.1} s: {status}");
        status
    }

    /// Waits for the agents (but `killed`) to exit, as `--runs 1` asks.
    fn wait_agents(&mut self, fleet: &Fleet, killed: Option<usize>) {
        for (k, a) in fleet.agents.iter().enumerate() {
            if Some(k) != killed {
                let status = self.wait(a.proc, Duration::from_secs(15));
                assert!(status.success(), "agent {} exited {status}", a.host);
            }
        }
    }

    /// Stops the proxy (SIGTERM: it flushes its access log).
    fn stop_proxy(&mut self, fleet: &Fleet) {
        support::process::terminate(
            &mut self.procs[fleet.proxy_proc].child,
            Duration::from_secs(10),
        );
    }

    /// The client and origin server addresses of the proxy's access log.
    fn access_log_hosts(&self) -> (BTreeSet<IpAddr>, BTreeSet<IpAddr>) {
        let text = std::fs::read_to_string(self.dir.join("access.log")).unwrap();
        let (mut clients, mut origins) = (BTreeSet::new(), BTreeSet::new());
        for line in text.lines() {
            // time elapsed client code/status bytes method URL ...
            let f: Vec<&str> = line.split_whitespace().collect();
            if f[6].ends_with("/cacheoff-preflight") {
                // The coordinator's check that a proxy is there.
                continue;
            }
            clients.insert(f[2].parse().unwrap());
            let host = f[6]
                .strip_prefix("http://")
                .and_then(|u| u.split(['/', ':']).next())
                .unwrap_or_else(|| panic!("URL in {line:?}"));
            origins.insert(host.parse().unwrap());
        }
        println!("proxy access log: {} lines", text.lines().count());
        (clients, origins)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        for p in &mut self.procs {
            let _ = p.child.kill();
            let _ = p.child.wait();
            if failed {
                let err = std::fs::read_to_string(&p.stderr).unwrap_or_default();
                let tail: Vec<&str> = err.lines().rev().take(20).collect();
                eprintln!("--- {} stderr (last lines)", p.name);
                for l in tail.iter().rev() {
                    eprintln!("{l}");
                }
            }
        }
        for ns in self.namespaces.iter().rev() {
            let _ = ip(&["netns", "del", ns]);
        }
        println!("{}: namespaces deleted", self.prefix);
    }
}

fn is_root() -> bool {
    // /proc/self/status: "Uid: real effective saved fs".
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn ip(args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("ip").args(args).output()
}

fn run_ip(args: &[&str]) {
    let o = ip(args).unwrap();
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr).trim()
    );
}

/// Deletes namespaces of test processes that are gone (killed before
/// their `Drop`), with what still runs in them.
fn sweep_stale() {
    let Ok(o) = ip(&["netns", "list"]) else {
        return;
    };
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix("cacheoff-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(pids) = ip(&["netns", "pids", name]) {
            for p in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
                if let Ok(p) = p.parse::<u32>() {
                    support::process::signal(p, "-KILL");
                }
            }
        }
        println!("deleting stale namespace {name}");
        let _ = ip(&["netns", "del", name]);
    }
}
