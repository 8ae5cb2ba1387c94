//! How the coordinator of a run over many hosts copes with N agents
//! (bench/fleet-merge.sh; issue 16): every agent's interval snapshot,
//! serialized exactly as `cacheoff agent` sends it (a `FromAgent::Interval`
//! JSON line with `Snapshot::to_wire`), is parsed, rebuilt
//! (`Snapshot::from_wire`) and merged (`Gather::push_part` and `drain`
//! after each, as `coordinate` does) by one thread, timed per interval.
//!
//! Then the same lines go through the coordinator's real fan-in: one
//! thread per agent blocked in `wire::Reader::recv` on a loopback socket,
//! an mpsc channel to the merging thread. That part measures what the
//! reader threads cost (start-up, memory) and the time from the first
//! agent's line written to the merged interval.
//!
//! Last, the real coordinator (`cacheoff_fleet::coordinate`) runs a whole
//! run with N fake agents on loopback, each a thread that answers the
//! handshake (after `--rtt-ms`, a network's round trip) and then sends
//! its pre-serialized intervals at once: how long the serial handshake
//! takes, how long the first agents wait for the next message (an agent
//! gives up after 60 s), and how fast whole intervals are merged.
//!
//! Usage: merge_sim [--agents 10,100,1000] [--xacts 20000] [--intervals 3]
//!                  [--rtt-ms 0] [--only A|B|C]

use cacheoff_agent::{Gather, Sink, StopHandle, Timeline};
use cacheoff_fleet::wire::{self, FromAgent, ToAgent, ViaSpec};
use cacheoff_fleet::{coordinate, unix_now, AgentAddr, AgentsSink, Fleet, Role};
use cacheoff_rundir::AgentRecord;
use cacheoff_stats::{ErrorKind, IntervalStats, Outcome, Snapshot, XactRecord};
use cacheoff_workload::{load, Overrides, RequestType, Workload};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

struct Args {
    agents: Vec<usize>,
    xacts: u64,
    intervals: u32,
    rtt: Duration,
    only: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        agents: vec![10, 100, 1000],
        xacts: 20_000,
        intervals: 3,
        rtt: Duration::ZERO,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--agents" => {
                a.agents = value()
                    .split(',')
                    .map(|n| n.parse().unwrap_or_else(|_| usage("--agents N,N,...")))
                    .collect()
            }
            "--xacts" => a.xacts = value().parse().unwrap_or_else(|_| usage("--xacts N")),
            "--intervals" => {
                a.intervals = value().parse().unwrap_or_else(|_| usage("--intervals N"))
            }
            "--rtt-ms" => {
                let ms: f64 = value().parse().unwrap_or_else(|_| usage("--rtt-ms MS"));
                a.rtt = Duration::from_secs_f64(ms.max(0.0) / 1e3);
            }
            "--only" => a.only = Some(value()),
            _ => usage(&format!("unknown argument {flag}")),
        }
    }
    if a.intervals == 0 || a.agents.contains(&0) {
        usage("at least one interval and one agent");
    }
    a
}

fn usage(why: &str) -> ! {
    eprintln!("merge_sim: {why}\nusage: merge_sim [--agents 10,100,1000] [--xacts 20000] [--intervals 3] [--rtt-ms 0] [--only A|B|C]");
    std::process::exit(2);
}

/// splitmix64: a different, repeatable stream per agent and interval.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Log-normal with this median and log-spread.
    fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        median * (sigma * z).exp()
    }
}

/// One agent's interval as a busy agent in front of a cache sees it:
/// about half hits (~1 ms), misses with a long tail (~30 ms, a few
/// seconds), PolyMix-like body sizes, send lags mostly in the tens of
/// microseconds, a few errors: the histograms' buckets populated across
/// their range as a real run populates them.
fn agent_snapshot(agent: usize, index: u32, xacts: u64) -> Snapshot {
    let mut r = Rng((agent as u64) << 32 | u64::from(index));
    let mut s = Snapshot::default();
    for _ in 0..xacts {
        let hit = r.unit() < 0.55;
        let rt_us = if hit {
            r.lognormal(900.0, 0.7)
        } else if r.unit() < 0.002 {
            r.lognormal(2.0e6, 0.8)
        } else {
            r.lognormal(30_000.0, 1.0)
        };
        let bytes = r.lognormal(8_000.0, 1.2) as u64;
        let rtype = match r.next() % 100 {
            0..=89 => RequestType::Basic,
            90..=94 => RequestType::Ims200,
            95..=97 => RequestType::Reload,
            _ => RequestType::Head,
        };
        let offered = r.unit() < 0.6;
        s.record_xact(&XactRecord {
            outcome: if hit { Outcome::Hit } else { Outcome::Miss },
            fills_cache: !hit && rtype.fills_cache(),
            bytes,
            full_body: rtype != RequestType::Head,
            rtype,
            ctype: (r.next() % 6) as u16,
            offered_hit: offered,
            ideal_hit: offered && r.unit() < 0.95,
            rt_corrected_us: rt_us as u64,
            rt_polygraph_us: (rt_us * (0.7 + 0.3 * r.unit())) as u64,
        });
        let lag = r.lognormal(40.0, 1.1) as u64;
        s.record_issue(lag);
        s.record_send(lag);
    }
    for _ in 0..xacts / 2000 {
        s.record_error(ErrorKind::ALL[(r.next() % ErrorKind::COUNT as u64) as usize]);
    }
    s.counters.conns_open = xacts / 50;
    s.firsts.record(Outcome::Hit, 0.01 * agent as f64);
    s.firsts.record(Outcome::Miss, 0.002 * agent as f64);
    s
}

/// The line agent `agent` sends for interval `index`, newline included.
fn agent_line(agent: usize, index: u32, xacts: u64, duration_s: f64) -> Vec<u8> {
    let msg = FromAgent::Interval {
        index,
        duration_s,
        snap: Box::new(agent_snapshot(agent, index, xacts).to_wire()),
    };
    let mut line = serde_json::to_vec(&msg).expect("a message serializes");
    line.push(b'\n');
    line
}

/// Counts what the coordinator would write, and checks it is the sum.
#[derive(Default)]
struct Count {
    intervals: Vec<(u32, u64)>,
}

impl Sink for Count {
    fn interval(&mut self, iv: &IntervalStats) {
        self.intervals.push((iv.index, iv.snap.counters.xacts));
    }
}

fn proc_status_kb(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// `simple`, long enough, with a server for each agent (the split gives
/// every agent at least one).
fn workload(agents: usize) -> Workload {
    let mut o = Overrides::default();
    o.set("duration", "1h").expect("a duration");
    o.set("servers", &agents.to_string())
        .expect("a server count");
    load("simple", &o).expect("the built-in workload")
}

/// The intervals to merge: 0 warms the allocator up and is not counted.
fn lines_for(n: usize, index: u32, a: &Args, timeline: &Timeline) -> Vec<Vec<u8>> {
    let d = timeline.interval(index).end_s - timeline.interval(index).start_s;
    (0..n).map(|k| agent_line(k, index, a.xacts, d)).collect()
}

struct Timing {
    parse: Duration,
    from_wire: Duration,
    merge: Duration,
}

/// One thread does everything: parse, rebuild, merge.
fn merge_inline(
    lines: &[Vec<u8>],
    gather: &mut Gather,
    sink: &mut Count,
    timeline: &Timeline,
) -> Timing {
    let mut t = Timing {
        parse: Duration::ZERO,
        from_wire: Duration::ZERO,
        merge: Duration::ZERO,
    };
    for (k, line) in lines.iter().enumerate() {
        let t0 = Instant::now();
        let msg: FromAgent = serde_json::from_slice(line).expect("the line parses");
        let t1 = Instant::now();
        let FromAgent::Interval {
            index,
            duration_s,
            snap,
        } = msg
        else {
            unreachable!("an interval line")
        };
        let snap = Snapshot::from_wire(&snap).expect("the snapshot rebuilds");
        let t2 = Instant::now();
        gather.push_part(
            k,
            index,
            timeline.interval(index).start_s + duration_s,
            snap,
        );
        gather.drain(sink);
        let t3 = Instant::now();
        t.parse += t1 - t0;
        t.from_wire += t2 - t1;
        t.merge += t3 - t2;
    }
    t
}

fn check(sink: &Count, index: u32, n: usize, xacts: u64) {
    let got = sink.intervals.last().copied();
    assert_eq!(
        got,
        Some((index, n as u64 * xacts)),
        "interval {index} merged from every agent"
    );
}

fn inline_table(a: &Args, wl: &Workload) {
    let timeline = Timeline::new(wl);
    let interval_s = wl.interval.as_secs_f64();
    println!("A. one thread parses, rebuilds and merges every agent's line (ms per interval, median of {}):", a.intervals);
    println!(
        "{:>6} {:>10} {:>9} {:>10} {:>8} {:>9} {:>12} {:>9} {:>10} {:>9}",
        "agents",
        "msg bytes",
        "parse",
        "from_wire",
        "merge",
        "total",
        "per agent",
        "RSS MB",
        "lines MB",
        "peak MB"
    );
    // The largest N's cost per agent: everything, and the merging thread's
    // share (the coordinator parses in its reader threads).
    let mut last = None;
    for &n in &a.agents {
        let mut gather = Gather::new(&timeline, n, wl.robots.count, Some(2 * n));
        let mut sink = Count::default();
        let mut totals = Vec::new();
        let mut row = None;
        for index in 0..=a.intervals {
            let lines = lines_for(n, index, a, &timeline);
            let bytes: usize = lines.iter().map(Vec::len).sum();
            let t = merge_inline(&lines, &mut gather, &mut sink, &timeline);
            check(&sink, index, n, a.xacts);
            if index == 0 {
                continue;
            }
            let total = t.parse + t.from_wire + t.merge;
            totals.push((total, t));
            row = Some((bytes, proc_status_kb("VmRSS:")));
        }
        totals.sort_by_key(|(total, _)| *total);
        let (total, t) = &totals[totals.len() / 2];
        let (bytes, rss) = row.expect("an interval measured");
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        println!(
            "{:>6} {:>10} {:>9.1} {:>10.1} {:>8.1} {:>9.1} {:>9.0} µs {:>9.1} {:>10.1} {:>9.1}",
            n,
            bytes / n,
            ms(&t.parse),
            ms(&t.from_wire),
            ms(&t.merge),
            ms(total),
            total.as_secs_f64() * 1e6 / n as f64,
            mb(rss),
            bytes as f64 / (1 << 20) as f64,
            mb(proc_status_kb("VmHWM:")),
        );
        let main = (t.from_wire + t.merge).as_secs_f64();
        last = Some((n, total.as_secs_f64() / n as f64, main / n as f64));
    }
    if let Some((n, all, main)) = last {
        let within = |cost: f64| (interval_s / cost) as u64;
        println!(
            "   interval {interval_s} s: at the cost per agent measured with {n} agents, one thread merges within one interval up to about {} agents (parse included), {} (rebuild and merge only, as the coordinator's merging thread)",
            within(all),
            within(main)
        );
    }
}

/// The coordinator's fan-in: a reader thread per agent, one channel.
fn threaded(a: &Args, wl: &Workload, n: usize) {
    let timeline = Timeline::new(wl);
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    // Both ends here, and each reader's clone of its socket.
    cacheoff_agent::raise_fd_limit(4 * n as u64 + 64).expect("enough descriptors");
    let rss0 = proc_status_kb("VmRSS:");
    let mut agents: Vec<TcpStream> = Vec::with_capacity(n);
    let mut readers = Vec::with_capacity(n);
    for _ in 0..n {
        let out = TcpStream::connect(addr).expect("connects");
        let (inn, _) = listener.accept().expect("accepts");
        agents.push(out);
        readers.push(wire::split(inn).expect("splits").0);
    }
    let rss_socks = proc_status_kb("VmRSS:");
    enum Event {
        Msg(usize, FromAgent),
        Lost,
    }
    let (tx, rx) = mpsc::channel();
    let t0 = Instant::now();
    let lost_after = Duration::from_secs(60);
    let handles: Vec<_> = readers
        .into_iter()
        .enumerate()
        .map(|(k, mut reader)| {
            let tx = tx.clone();
            std::thread::spawn(move || loop {
                match reader.recv::<FromAgent>(Some(lost_after)) {
                    Ok(msg) => {
                        if tx.send(Event::Msg(k, msg)).is_err() {
                            return;
                        }
                    }
                    Err(_) => {
                        let _ = tx.send(Event::Lost);
                        return;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let spawn = t0.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let rss_threads = proc_status_kb("VmRSS:");
    let threads_now = proc_status_kb("Threads:");

    let mut gather = Gather::new(&timeline, n, wl.robots.count, Some(2 * n));
    let mut sink = Count::default();
    let mut fan_in = Vec::new();
    let mut bytes = 0;
    for index in 0..=a.intervals {
        let lines = lines_for(n, index, a, &timeline);
        bytes = lines.iter().map(Vec::len).sum::<usize>();
        let start = Instant::now();
        // All agents at once, as at an interval boundary: a writer thread
        // sends (a full socket buffer waits for its reader).
        let writer = {
            let mut socks: Vec<TcpStream> = agents
                .iter()
                .map(|s| s.try_clone().expect("clones"))
                .collect();
            std::thread::spawn(move || {
                for (s, line) in socks.iter_mut().zip(&lines) {
                    s.write_all(line).expect("writes");
                }
            })
        };
        let mut got = 0;
        while got < n {
            match rx.recv().expect("readers alive") {
                Event::Msg(
                    k,
                    FromAgent::Interval {
                        index,
                        duration_s,
                        snap,
                    },
                ) => {
                    let snap = Snapshot::from_wire(&snap).expect("the snapshot rebuilds");
                    let end_s = timeline.interval(index).start_s + duration_s;
                    gather.push_part(k, index, end_s, snap);
                    gather.drain(&mut sink);
                    got += 1;
                }
                Event::Msg(..) => unreachable!("only intervals are sent"),
                Event::Lost => panic!("a reader lost its link"),
            }
        }
        check(&sink, index, n, a.xacts);
        let took = start.elapsed();
        writer.join().expect("the writer finishes");
        if index > 0 {
            fan_in.push(took);
        }
    }
    fan_in.sort();
    let rss_end = proc_status_kb("VmRSS:");
    drop(agents);
    for h in handles {
        h.join().expect("a reader ends at the close");
    }
    println!(
        "{:>6} {:>10} {:>10.1} {:>12.1} {:>12.1} {:>11} {:>13.1} {:>12.1}",
        n,
        bytes / n,
        spawn.as_secs_f64() * 1e3,
        mb(rss_socks.saturating_sub(rss0)),
        (rss_threads.saturating_sub(rss_socks)) as f64 / n as f64,
        threads_now,
        fan_in[fan_in.len() / 2].as_secs_f64() * 1e3,
        mb(rss_end),
    );
}

/// When a fake agent heard what, to see how long real ones would wait.
#[derive(Default, Clone, Copy)]
struct Heard {
    last_clock: Option<Instant>,
    prepare: Option<Instant>,
    prepared: Option<Instant>,
    start: Option<Instant>,
}

/// A fake agent: answers the handshake as `cacheoff agent` does (each
/// answer after `rtt`, the network's round trip), then sends its lines
/// at once and its end, and answers pings until the link closes.
fn fake_agent(listener: TcpListener, lines: Vec<Vec<u8>>, rtt: Duration) -> Heard {
    let (stream, _) = listener.accept().expect("the coordinator connects");
    let mut raw = stream.try_clone().expect("clones");
    let (mut r, w) = wire::split(stream).expect("splits");
    let mut heard = Heard::default();
    let mut worker = 0;
    loop {
        let msg = match r.recv::<ToAgent>(None) {
            Ok(m) => m,
            Err(_) => return heard,
        };
        let reply = match msg {
            ToAgent::Hello {
                version, protocol, ..
            } => Some(FromAgent::Welcome {
                version,
                protocol,
                now_unix: unix_now(),
                threads: 1,
                host_ip: None,
            }),
            ToAgent::Clock => Some(FromAgent::Clock {
                now_unix: unix_now(),
            }),
            ToAgent::Prepare(p) => {
                heard.prepare = Some(Instant::now());
                worker = p.workers[0];
                let servers = (p.servers[0]..p.servers[1])
                    .map(|i| SocketAddr::from(([127, 0, 0, 1], 20_000 + i as u16)))
                    .collect();
                Some(FromAgent::Prepared { servers })
            }
            ToAgent::Servers { .. } => Some(FromAgent::Accepted),
            ToAgent::Start { .. } => {
                heard.start = Some(Instant::now());
                for line in &lines {
                    raw.write_all(line).expect("writes");
                }
                Some(FromAgent::Done {
                    digests: vec![(worker, 1)],
                    interrupted: false,
                    error: None,
                })
            }
            ToAgent::Ping => Some(FromAgent::Pong),
            ToAgent::Jump(_) | ToAgent::Stop => None,
        };
        if let Some(reply) = reply {
            if !matches!(reply, FromAgent::Pong | FromAgent::Done { .. }) {
                std::thread::sleep(rtt);
            }
            if w.send(&reply).is_err() {
                return heard;
            }
            match reply {
                FromAgent::Clock { .. } => heard.last_clock = Some(Instant::now()),
                FromAgent::Prepared { .. } => heard.prepared = Some(Instant::now()),
                _ => {}
            }
        }
    }
}

/// Times the phases of a real coordinator's run.
struct Watch {
    began: Instant,
    started: Option<Instant>,
    intervals: Vec<(u32, u64, Instant)>,
}

impl Sink for Watch {
    fn started(&mut self, _servers: &[SocketAddr], _start: Instant) {
        self.started = Some(Instant::now());
    }
    fn interval(&mut self, iv: &IntervalStats) {
        self.intervals
            .push((iv.index, iv.snap.counters.xacts, Instant::now()));
    }
}

impl AgentsSink for Watch {
    fn agents(&mut self, _agents: &[AgentRecord]) {}
}

/// The real coordinator with `n` fake agents.
fn whole_run(a: &Args, n: usize) {
    let wl = workload(n);
    let timeline = Timeline::new(&wl);
    cacheoff_agent::raise_fd_limit(6 * n as u64 + 64).expect("enough descriptors");
    let mut listeners = Vec::with_capacity(n);
    let mut agents = Vec::with_capacity(n);
    for _ in 0..n {
        let l = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        agents.push(AgentAddr {
            addr: l.local_addr().expect("its address").to_string(),
            role: Role::Both,
        });
        listeners.push(l);
    }
    let fakes: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(k, l)| {
            let lines: Vec<Vec<u8>> = (0..a.intervals)
                .map(|i| {
                    let d = timeline.interval(i).end_s - timeline.interval(i).start_s;
                    agent_line(k, i, a.xacts, d)
                })
                .collect();
            let rtt = a.rtt;
            std::thread::spawn(move || fake_agent(l, lines, rtt))
        })
        .collect();
    let fleet = Fleet {
        agents,
        wait: Duration::from_secs(10),
        max_skew: Duration::from_secs(3600),
        version: "merge_sim".into(),
        lost_after: Duration::from_secs(10),
        // The fakes speak plaintext: this measures the merge, not TLS.
        trust: cacheoff_fleet::CoordinatorTrust::Insecure,
    };
    let rss0 = proc_status_kb("VmRSS:");
    // Peak memory from here on (5: reset VmHWM to the current RSS).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let mut watch = Watch {
        began: Instant::now(),
        started: None,
        intervals: Vec::new(),
    };
    let run = coordinate(
        &wl,
        ViaSpec::Direct,
        &fleet,
        "merge-sim",
        1,
        &mut watch,
        &StopHandle::new(),
    )
    .expect("the run completes");
    let end = Instant::now();
    let peak = proc_status_kb("VmHWM:");
    let heard: Vec<Heard> = fakes
        .into_iter()
        .map(|h| h.join().expect("a fake agent ends"))
        .collect();
    assert_eq!(
        watch
            .intervals
            .iter()
            .map(|(i, x, _)| (*i, *x))
            .collect::<Vec<_>>(),
        (0..a.intervals)
            .map(|i| (i, n as u64 * a.xacts))
            .collect::<Vec<_>>(),
        "every interval merged from every agent"
    );
    assert!(run.agents.iter().all(|r| !r.partial));
    let started = watch.started.expect("the run started");
    // The longest an agent waited for the coordinator's next message:
    // for its Prepare after its handshake, for the start after Prepared.
    let wait = |from: fn(&Heard) -> Option<Instant>, to: fn(&Heard) -> Option<Instant>| {
        heard
            .iter()
            .filter_map(|h| Some(to(h)?.saturating_duration_since(from(h)?)))
            .max()
            .unwrap_or_default()
            .as_secs_f64()
    };
    let to_prepare = wait(|h| h.last_clock, |h| h.prepare);
    let to_start = wait(|h| h.prepared, |h| h.start);
    let merged = watch.intervals.last().map_or(end, |(_, _, at)| *at);
    let merging = merged.duration_since(started).as_secs_f64();
    println!(
        "{:>6} {:>7.1} {:>13.2} {:>13.2} {:>11.2} {:>12.2} {:>13.0} {:>10.1} {:>9.1}",
        n,
        a.rtt.as_secs_f64() * 1e3,
        started.duration_since(watch.began).as_secs_f64(),
        to_prepare,
        to_start,
        merging,
        merging * 1e3 / f64::from(a.intervals),
        mb(rss0),
        mb(peak),
    );
}

fn main() {
    let a = args();
    let wl = workload(1);
    let needed = a.intervals as usize + 1;
    let timeline = Timeline::new(&wl);
    assert!(
        timeline.intervals().len() >= needed,
        "the workload has {} intervals, {needed} needed",
        timeline.intervals().len()
    );
    println!(
        "merge_sim: {} transactions per agent per interval, {} measured intervals of {} s, {} cores",
        a.xacts,
        a.intervals,
        wl.interval.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let part = |p: &str| a.only.as_deref().is_none_or(|o| o.eq_ignore_ascii_case(p));
    if part("A") {
        inline_table(&a, &wl);
        println!();
    }
    if part("B") {
        println!("B. the coordinator's fan-in: a reader thread per agent (wire::Reader on loopback), one channel, one merging thread:");
        println!(
            "{:>6} {:>10} {:>10} {:>12} {:>12} {:>11} {:>13} {:>12}",
            "agents",
            "msg bytes",
            "spawn ms",
            "sockets MB",
            "KB/thread",
            "threads",
            "interval ms",
            "RSS MB"
        );
        for &n in &a.agents {
            threaded(&a, &wl, n);
        }
        println!("   interval ms: from the first agent's line written to the interval merged (median); KB/thread: resident memory each blocked reader thread adds");
        println!();
    }
    if part("C") {
        println!("C. the real coordinator (cacheoff_fleet::coordinate) with fake agents on loopback; seconds unless said:");
        println!(
            "{:>6} {:>7} {:>13} {:>13} {:>11} {:>12} {:>13} {:>10} {:>9}",
            "agents",
            "rtt ms",
            "to started",
            "max wait:",
            "to start",
            "merging",
            "ms/interval",
            "RSS0 MB",
            "peak MB"
        );
        println!(
            "{:>6} {:>7} {:>13} {:>13} {:>11}",
            "", "", "(handshakes)", "to prepare", ""
        );
        for &n in &a.agents {
            whole_run(&a, n);
        }
        println!("   to started: coordinate() called to every agent told the start (serial handshakes: hello, 8 clock exchanges, prepare); max wait: the longest a fake agent waited for its Prepare after its handshake, and for the start after its Prepared (a real agent gives up after 60 s); merging: every agent told the start to the last interval merged (agents send all their intervals at once); RSS0: before coordinate(), holding every agent's lines; peak: the highest RSS during the run");
    }
}
