//! The coordinator of a run over many hosts: it reaches every agent,
//! refuses a fleet whose versions, workloads or clocks disagree before
//! anything starts, splits the run (`split`), announces the origin
//! servers' addresses and a common start, then merges the agents'
//! intervals exactly (`cacheoff_agent::Gather`: histograms added) into
//! the caller's [`Sink`], deciding goal phases for all.

use crate::handshake::{handshake, link, Conn, Fleet, Welcome};
use crate::split::{fraction, split, Part, Role};
use crate::wire::{self, workload_digest, FromAgent, Prepare, ToAgent, ViaSpec, Writer};
use crate::{unix_now, FleetError};
use cacheoff_agent::{Gather, Jump, Sink, StopHandle, Timeline};
use cacheoff_rundir::{AgentRecord, AgentState};
use cacheoff_stats::{RunStats, Snapshot};
use cacheoff_workload::{PlanDigest, Workload};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A finished run over many hosts.
#[derive(Debug)]
pub struct FleetRun {
    pub run: RunStats,
    pub agents: Vec<AgentRecord>,
}

/// Receives the merged run, and the agents' records when they change
/// (the manifest lists them from the start).
pub trait AgentsSink: Sink {
    fn agents(&mut self, agents: &[AgentRecord]);
}

struct Member {
    record: AgentRecord,
    part: Part,
    writer: Writer,
    reader: Option<wire::Reader>,
    offset_s: f64,
    rtt_s: f64,
    ended: bool,
}

enum Event {
    Msg(usize, FromAgent),
    Lost(usize, String),
}

/// A fleet that agreed to run: every agent checked, its share given, its
/// origin servers listening. Dropping it releases the agents.
pub struct Ready {
    members: Vec<Member>,
    servers: Vec<SocketAddr>,
    total: u32,
    workload: Workload,
    lost_after: Duration,
}

/// Runs `wl` on the fleet; every merged interval goes to `sink`.
pub fn coordinate(
    wl: &Workload,
    via: ViaSpec,
    fleet: &Fleet,
    run_id: &str,
    nonce: u32,
    sink: &mut dyn AgentsSink,
    stop: &StopHandle,
) -> Result<FleetRun, FleetError> {
    prepare(wl, via, fleet, run_id, nonce)?.run(sink, stop)
}

/// Reaches every agent and gives each its share: nothing has started
/// yet if this fails (a refusal names the agent and why).
pub fn prepare(
    wl: &Workload,
    via: ViaSpec,
    fleet: &Fleet,
    run_id: &str,
    nonce: u32,
) -> Result<Ready, FleetError> {
    // Every agent at once: a thousand agents' round trips are not added
    // up, and one that comes up late holds up no other.
    let members: Vec<Result<(Conn, Welcome, u32), FleetError>> = std::thread::scope(|scope| {
        let tries: Vec<_> = fleet
            .agents
            .iter()
            .map(|a| scope.spawn(move || handshake(a, fleet)))
            .collect();
        tries
            .into_iter()
            .map(|t| t.join().expect("a handshake does not panic"))
            .collect()
    });
    let members = members.into_iter().collect::<Result<Vec<_>, _>>()?;
    let roles: Vec<(Role, u32)> = fleet
        .agents
        .iter()
        .zip(&members)
        .map(|(a, (_, _, threads))| (a.role, *threads))
        .collect();
    let (parts, total) = split(&roles, wl.servers.count)?;
    let digest = workload_digest(wl);
    // Every share is sent before any reply is read: agents bind their
    // servers at the same time.
    for ((a, ((_, writer), _, _)), part) in fleet.agents.iter().zip(&members).zip(&parts) {
        writer
            .send(&ToAgent::Prepare(Box::new(Prepare {
                run_id: run_id.into(),
                workload: wl.clone(),
                workload_digest: digest.clone(),
                via,
                workers: [part.workers.start, part.workers.end],
                total_workers: total,
                servers: [part.servers.start, part.servers.end],
                nonce,
            })))
            .map_err(|e| link(a, e))?;
    }
    let mut fleet_members: Vec<Member> = Vec::new();
    let mut servers: Vec<Option<SocketAddr>> = vec![None; wl.servers.count as usize];
    for ((a, (conn, welcome, _)), part) in fleet.agents.iter().zip(members).zip(parts) {
        let (mut reader, writer) = conn;
        match reader
            .recv::<FromAgent>(Some(Duration::from_secs(60)))
            .map_err(|e| link(a, e))?
        {
            FromAgent::Prepared { servers: got } if got.len() == part.servers.len() => {
                for (i, addr) in part.servers.clone().zip(got) {
                    servers[i as usize] = Some(addr);
                }
            }
            FromAgent::Refused { reason } => {
                return Err(FleetError::Refused {
                    agent: a.addr.clone(),
                    reason,
                })
            }
            other => {
                return Err(FleetError::Protocol {
                    agent: a.addr.clone(),
                    what: format!("expected its servers, got {other:?}"),
                })
            }
        }
        fleet_members.push(Member {
            record: AgentRecord {
                addr: a.addr.clone(),
                role: a.role.name().into(),
                share: fraction(part.workers.len() as u32, total),
                workers: [part.workers.start, part.workers.end],
                servers: [part.servers.start, part.servers.end],
                version: welcome.version,
                clock_offset_ms: welcome.offset_s * 1e3,
                state: AgentState::Running,
                partial: false,
                lost_at_s: None,
                lost_why: None,
            },
            part,
            writer,
            reader: Some(reader),
            offset_s: welcome.offset_s,
            rtt_s: welcome.rtt_s,
            ended: false,
        });
    }
    let servers: Vec<SocketAddr> = servers
        .into_iter()
        .map(|s| s.expect("every server placed"))
        .collect();
    // Every agent checks the servers against what it allows before
    // anything starts.
    for m in &fleet_members {
        m.writer
            .send(&ToAgent::Servers {
                servers: servers.clone(),
            })
            .map_err(|e| link_of(m, e))?;
    }
    for m in &mut fleet_members {
        let reader = m.reader.as_mut().expect("reader until the run");
        match reader
            .recv::<FromAgent>(Some(Duration::from_secs(60)))
            .map_err(|e| FleetError::Link {
                agent: m.record.addr.clone(),
                why: e.to_string(),
            })? {
            FromAgent::Accepted => {}
            FromAgent::Refused { reason } => {
                return Err(FleetError::Refused {
                    agent: m.record.addr.clone(),
                    reason,
                })
            }
            other => {
                return Err(FleetError::Protocol {
                    agent: m.record.addr.clone(),
                    what: format!("expected it to accept the servers, got {other:?}"),
                })
            }
        }
    }

    Ok(Ready {
        members: fleet_members,
        servers,
        total,
        workload: wl.clone(),
        lost_after: fleet.lost_after,
    })
}

impl Ready {
    /// The origin servers' addresses, by index.
    pub fn servers(&self) -> &[SocketAddr] {
        &self.servers
    }

    /// Starts the run on every agent and merges it into `sink`.
    pub fn run(self, sink: &mut dyn AgentsSink, stop: &StopHandle) -> Result<FleetRun, FleetError> {
        let Ready {
            members: fleet_members,
            servers,
            total,
            workload,
            lost_after,
        } = self;
        run_fleet(
            fleet_members,
            servers,
            total,
            &workload,
            lost_after,
            sink,
            stop,
        )
    }
}

fn run_fleet(
    mut fleet_members: Vec<Member>,
    servers: Vec<SocketAddr>,
    total: u32,
    wl: &Workload,
    lost_after: Duration,
    sink: &mut dyn AgentsSink,
    stop: &StopHandle,
) -> Result<FleetRun, FleetError> {
    // The common start: far enough ahead for every agent to hear of it.
    let max_rtt = fleet_members.iter().map(|m| m.rtt_s).fold(0.0, f64::max);
    let lead = 1.0 + 4.0 * max_rtt;
    let start_unix = unix_now() + lead;
    // Each offset is known to half its round trip; two hosts' object
    // clocks may differ by both halves, plus the clocks' drift during the
    // run.
    let slack_s = max_rtt + 0.002;
    for m in &fleet_members {
        m.writer.send(&ToAgent::Start {
            start_unix,
            clock_offset_s: m.offset_s,
            clock_slack_s: slack_s,
        })?;
    }
    let start = Instant::now() + Duration::from_secs_f64((start_unix - unix_now()).max(0.0));
    sink.started(&servers, start);
    sink.agents(&records(&fleet_members));

    let (tx, rx) = mpsc::channel();
    let mut readers = Vec::new();
    for (k, m) in fleet_members.iter_mut().enumerate() {
        let mut reader = m.reader.take().expect("reader once");
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || loop {
            match reader.recv::<FromAgent>(Some(lost_after)) {
                Ok(msg) => {
                    let done = matches!(msg, FromAgent::Done { .. });
                    if tx.send(Event::Msg(k, msg)).is_err() || done {
                        return;
                    }
                }
                Err(e) => {
                    let why = if e.is_timeout() {
                        format!("silent for {:.0} s", lost_after.as_secs_f64())
                    } else {
                        e.to_string()
                    };
                    let _ = tx.send(Event::Lost(k, why));
                    return;
                }
            }
        }));
    }
    drop(tx);
    let pinging = Arc::new(AtomicBool::new(true));
    let pinger = {
        let writers: Vec<Writer> = fleet_members.iter().map(|m| m.writer.clone()).collect();
        let pinging = pinging.clone();
        let every = Duration::from_secs_f64((wl.interval.as_secs_f64() / 4.0).clamp(0.1, 1.0));
        std::thread::spawn(move || {
            while pinging.load(Ordering::SeqCst) {
                for w in &writers {
                    let _ = w.send(&ToAgent::Ping);
                }
                std::thread::sleep(every);
            }
        })
    };

    let timeline = Timeline::new(wl);
    let mut gather = Gather::new(
        &timeline,
        fleet_members.len(),
        wl.robots.count,
        Some(total as usize),
    );
    let mut stopping = false;
    let result = loop {
        if gather.is_done() || fleet_members.iter().all(|m| m.ended) {
            let mut out = Broadcast {
                inner: sink,
                members: &fleet_members,
            };
            gather.drain(&mut out);
            break Ok(());
        }
        if stop.is_stopped() && !stopping {
            stopping = true;
            for m in &fleet_members {
                let _ = m.writer.send(&ToAgent::Stop);
            }
        }
        let event = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(e) => e,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(FleetError::Run("every agent link closed".into()))
            }
        };
        let at_s = start.elapsed().as_secs_f64();
        match event {
            Event::Msg(
                k,
                FromAgent::Interval {
                    index,
                    duration_s,
                    snap,
                },
            ) => {
                let valid = (index as usize) < timeline.intervals().len();
                match Snapshot::from_wire(&snap) {
                    Ok(snap) if valid => {
                        let end_s = timeline.interval(index).start_s + duration_s.max(0.0);
                        gather.push_part(k, index, end_s, snap);
                    }
                    Ok(_) => lose(
                        &mut fleet_members,
                        &mut gather,
                        k,
                        at_s,
                        format!("interval {index} is not in the schedule"),
                        sink,
                    ),
                    Err(e) => lose(
                        &mut fleet_members,
                        &mut gather,
                        k,
                        at_s,
                        format!("unreadable interval: {e}"),
                        sink,
                    ),
                }
            }
            Event::Msg(k, FromAgent::Done { digests, error, .. }) => match error {
                Some(e) if digests.is_empty() => lose(
                    &mut fleet_members,
                    &mut gather,
                    k,
                    at_s,
                    format!("its run failed: {e}"),
                    sink,
                ),
                _ => {
                    // Only the run's workers it ran plan requests (a server
                    // agent's threads come past the last and plan none).
                    let ran = fleet_members[k].part.workers.clone();
                    let digests: Vec<(u32, PlanDigest)> = digests
                        .into_iter()
                        .filter(|(w, _)| ran.contains(w))
                        .map(|(w, d)| (w, PlanDigest::from_raw(d)))
                        .collect();
                    gather.end_part(k, &digests);
                    let m = &mut fleet_members[k];
                    m.ended = true;
                    m.record.state = AgentState::Complete;
                    if let Some(e) = error {
                        sink.warn(&format!("agent {}: {e}", m.record.addr));
                    }
                }
            },
            Event::Msg(k, FromAgent::Warn { message }) => sink.warn(&format!(
                "agent {}: {message}",
                fleet_members[k].record.addr
            )),
            Event::Msg(_, FromAgent::Pong) => {}
            Event::Msg(k, other) => lose(
                &mut fleet_members,
                &mut gather,
                k,
                at_s,
                format!("unexpected message {other:?}"),
                sink,
            ),
            Event::Lost(k, why) => {
                if !fleet_members[k].ended {
                    lose(&mut fleet_members, &mut gather, k, at_s, why, sink);
                }
            }
        }
        let mut out = Broadcast {
            inner: sink,
            members: &fleet_members,
        };
        gather.drain(&mut out);
    };
    pinging.store(false, Ordering::SeqCst);
    for m in &fleet_members {
        if !m.ended {
            m.writer.shutdown();
        }
    }
    let _ = pinger.join();
    for r in readers {
        let _ = r.join();
    }
    result?;
    let agents = records(&fleet_members);
    sink.agents(&agents);
    Ok(FleetRun {
        run: gather.finish(stop.is_stopped()),
        agents,
    })
}

fn link_of(m: &Member, e: wire::WireError) -> FleetError {
    FleetError::Link {
        agent: m.record.addr.clone(),
        why: e.to_string(),
    }
}

fn records(members: &[Member]) -> Vec<AgentRecord> {
    members.iter().map(|m| m.record.clone()).collect()
}

fn lose(
    members: &mut [Member],
    gather: &mut Gather,
    k: usize,
    at_s: f64,
    why: String,
    sink: &mut dyn Sink,
) {
    let m = &mut members[k];
    if m.ended {
        return;
    }
    m.ended = true;
    m.record.state = AgentState::Lost;
    m.record.partial = true;
    m.record.lost_at_s = Some(at_s);
    sink.warn(&format!(
        "agent {} lost at {at_s:.1} s ({why}): its share ({} of the robots, servers {}..{}) is missing from here on; the run is partial",
        m.record.addr, m.record.share, m.part.servers.start, m.part.servers.end
    ));
    m.record.lost_why = Some(why);
    m.writer.shutdown();
    gather.end_part(k, &[]);
}

/// Passes intervals on and tells every agent of a goal jump.
struct Broadcast<'a> {
    inner: &'a mut dyn Sink,
    members: &'a [Member],
}

impl Sink for Broadcast<'_> {
    fn warn(&mut self, message: &str) {
        self.inner.warn(message);
    }
    fn interval(&mut self, iv: &cacheoff_stats::IntervalStats) {
        self.inner.interval(iv);
    }
    fn jumped(&mut self, jump: &Jump) {
        for m in self.members.iter().filter(|m| !m.ended) {
            let _ = m.writer.send(&ToAgent::Jump(*jump));
        }
        self.inner.jumped(jump);
    }
}
