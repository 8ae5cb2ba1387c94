//! `cacheoff agent`: waits for a coordinator, runs its share of one run
//! at a time, streams each merged interval back, and keeps its own log of
//! the run (a run directory per run id under its data directory), so
//! nothing is lost if the coordinator's link drops.
//!
//! Links come through `listen`; here is a coordinator's session once it
//! proved it is the fleet's, and even then it gets only what `guard`
//! allows.

use crate::guard::{self, Limits, Targets};
use crate::trust::AgentTrust;
use crate::wire::{self, workload_digest, FromAgent, Prepare, Reader, ToAgent, ViaSpec, Writer};
use crate::{unix_now, FleetError};
use cacheoff_agent::{BoundServers, Jump, RunConfig, Share, Sink, StopHandle, Via};
use cacheoff_rundir::{Build, Manifest, Mode, RunDir};
use cacheoff_stats::IntervalStats;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub build: Build,
    /// One address for this host's robots and servers (a pod's IP); else
    /// the workload's ranges at each one's index in the run.
    pub host_ip: Option<Ipv4Addr>,
    /// Where each run's local log goes (`DATA/<run id>/`); one agent at a
    /// time may use it.
    pub data: PathBuf,
    /// Worker threads.
    pub workers: usize,
    /// Exit after this many runs (`None`: serve forever).
    pub runs: Option<u32>,
    /// Whom it lets drive it.
    pub trust: AgentTrust,
    /// What it holds at most.
    pub limits: Limits,
    /// Where its robots may send traffic.
    pub targets: Targets,
}

/// The data directory an agent listening on `port` uses unless told:
/// one per port, so agents on one host never share one.
pub fn default_data(port: u16) -> PathBuf {
    PathBuf::from(format!("cacheoff-agent-{port}"))
}

/// What the agent says as it goes (the caller prints it).
pub type Log = dyn Fn(&str) + Send + Sync;

/// A message's kind, never its content (which may be anything).
pub(crate) fn kind(m: &ToAgent) -> &'static str {
    match m {
        ToAgent::Hello { .. } => "hello",
        ToAgent::Prepare(_) => "prepare",
        ToAgent::Clock => "clock",
        ToAgent::Servers { .. } => "servers",
        ToAgent::Start { .. } => "start",
        ToAgent::Jump(_) => "jump",
        ToAgent::Ping => "ping",
        ToAgent::Stop => "stop",
    }
}

pub(crate) fn refuse(w: &Writer, reason: String) {
    let _ = w.send(&FromAgent::Refused { reason });
    w.shutdown();
}

/// One coordinator's session after its hello; `Ok(true)` when a run
/// started.
#[allow(clippy::too_many_arguments)]
pub(crate) fn session(
    mut r: Reader,
    w: Writer,
    wait_s: f64,
    peer: SocketAddr,
    cfg: &AgentConfig,
    log: &Log,
    busy: &Mutex<Option<String>>,
) -> Result<bool, FleetError> {
    let refused = |reason: String| {
        refuse(&w, reason.clone());
        FleetError::Refused {
            agent: "this agent".into(),
            reason,
        }
    };
    // The coordinator may take its own wait for other agents, within
    // this agent's bound.
    let wait = cfg.limits.handshake
        + Duration::from_secs_f64(wait_s.clamp(0.0, cfg.limits.max_wait.as_secs_f64()));
    w.send(&FromAgent::Welcome {
        version: crate::version_of(&cfg.build),
        protocol: wire::PROTOCOL,
        now_unix: unix_now(),
        threads: cfg.workers as u32,
        host_ip: cfg.host_ip,
    })?;
    let prep = loop {
        match r.recv::<ToAgent>(Some(wait)) {
            Ok(ToAgent::Clock) => w.send(&FromAgent::Clock {
                now_unix: unix_now(),
            })?,
            other => break other,
        }
    };
    let prep = match prep {
        Ok(ToAgent::Prepare(p)) => p,
        // The coordinator refused this fleet after the handshake.
        Err(wire::WireError::Closed) => return Ok(false),
        Ok(other) => return Err(refused(format!("expected prepare, got {}", kind(&other)))),
        Err(e) => return Err(e.into()),
    };
    if workload_digest(&prep.workload) != prep.workload_digest {
        return Err(refused(format!(
            "workload mismatch: the workload received digests to {}, the coordinator's to {} (another version's workload model?)",
            workload_digest(&prep.workload),
            prep.workload_digest
        )));
    }
    guard::check_prepare(&prep, &cfg.limits, cfg.workers as u32).map_err(&refused)?;
    prep.workload
        .validate()
        .map_err(|e| refused(format!("workload: {e}")))?;
    guard::check_via(&prep.via, &cfg.targets).map_err(&refused)?;
    // Its log's directory, made now: a name another agent took is a
    // refusal before anything starts.
    let dir = cfg.data.join(&prep.run_id);
    if let Err(e) = std::fs::create_dir(&dir) {
        return Err(refused(format!(
            "cannot make its log {}: {e} (two agents with one --data?)",
            dir.display()
        )));
    }
    let forget = |e: FleetError| {
        let _ = std::fs::remove_dir(&dir);
        e
    };
    *busy.lock().unwrap() = Some(prep.run_id.clone());
    let bound = BoundServers::bind_range(
        &prep.workload,
        prep.servers[0]..prep.servers[1],
        cfg.host_ip,
    )
    .map_err(|e| forget(refused(format!("cannot start its origin servers: {e}"))))?;
    let mine = bound.addrs();
    w.send(&FromAgent::Prepared {
        servers: mine.clone(),
    })
    .map_err(|e| forget(e.into()))?;
    let servers = match r.recv::<ToAgent>(Some(wait)) {
        Ok(ToAgent::Servers { servers }) => servers,
        Err(wire::WireError::Closed) => {
            let _ = std::fs::remove_dir(&dir);
            return Ok(false);
        }
        Ok(other) => {
            return Err(forget(refused(format!(
                "expected servers, got {}",
                kind(&other)
            ))))
        }
        Err(e) => return Err(forget(e.into())),
    };
    guard::check_servers(
        &servers,
        prep.workload.servers.count,
        (prep.servers[0], &mine),
        &cfg.targets,
    )
    .map_err(|e| forget(refused(e)))?;
    w.send(&FromAgent::Accepted).map_err(|e| forget(e.into()))?;
    let clock = match r.recv::<ToAgent>(Some(wait)) {
        Ok(ToAgent::Start {
            start_unix,
            clock_offset_s,
            clock_slack_s,
        }) => (start_unix, clock_offset_s, clock_slack_s),
        Err(wire::WireError::Closed) => {
            let _ = std::fs::remove_dir(&dir);
            return Ok(false);
        }
        Ok(other) => {
            return Err(forget(refused(format!(
                "expected start, got {}",
                kind(&other)
            ))))
        }
        Err(e) => return Err(forget(e.into())),
    };
    log(&format!(
        "run {} from {peer}: workers {}..{} of {}, servers {}..{}",
        prep.run_id,
        prep.workers[0],
        prep.workers[1],
        prep.total_workers,
        prep.servers[0],
        prep.servers[1]
    ));
    run_share(*prep, bound, clock, servers, cfg, r, w, log)?;
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn run_share(
    prep: Prepare,
    bound: BoundServers,
    (start_unix, clock_offset_s, clock_slack_s): (f64, f64, f64),
    servers: Vec<SocketAddr>,
    cfg: &AgentConfig,
    r: Reader,
    w: Writer,
    log: &Log,
) -> Result<(), FleetError> {
    let via = match prep.via {
        ViaSpec::Direct => Via::Direct,
        ViaSpec::Proxy(a) => Via::Proxy(a),
        ViaSpec::Surrogate(a) => Via::Surrogate(a),
    };
    let mode = match via {
        Via::Direct => Mode::Direct,
        Via::Proxy(_) => Mode::Forward,
        Via::Surrogate(_) => Mode::Reverse,
    };
    let dir = cfg.data.join(&prep.run_id);
    let mut manifest = Manifest::new(
        prep.workload.clone(),
        mode,
        via.addr(),
        None,
        cfg.workers,
        &[format!(
            "cacheoff agent: workers {}..{} of {}, servers {}..{}",
            prep.workers[0], prep.workers[1], prep.total_workers, prep.servers[0], prep.servers[1]
        )],
        &cfg.build,
    );
    manifest.servers = servers.clone();
    let mut local = RunDir::create(&dir, manifest)?;
    let jump: Arc<OnceLock<Jump>> = Arc::default();
    let stop = StopHandle::new();
    let over = Arc::new(AtomicBool::new(false));
    let interval = prep.workload.interval.as_secs_f64().max(0.5);
    let control = {
        let (jump, stop, over, w) = (jump.clone(), stop.clone(), over.clone(), w.clone());
        std::thread::spawn(move || follow(r, &w, &jump, &stop, &over, interval))
    };
    let share = Share {
        workers: prep.workers[0]..prep.workers[1],
        total_workers: prep.total_workers,
        servers,
        own_servers: (prep.servers[0]..prep.servers[1]).collect(),
        robot_ip: cfg.host_ip,
        nonce: prep.nonce,
        start_unix,
        clock_offset_s,
        clock_slack_s,
        jump,
    };
    let run_cfg = RunConfig {
        workload: prep.workload,
        via,
        bound: Some(Arc::new(bound)),
        workers: cfg.workers,
        trace: None,
        share: Some(share),
        tls: None,
    };
    let mut sink = Forward {
        local: &mut local,
        to: &w,
        stop: &stop,
        error: None,
    };
    let ran = cacheoff_agent::run(run_cfg, &mut sink, &stop);
    let local_error = sink.error.take();
    over.store(true, Ordering::SeqCst);
    let done = match &ran {
        Ok(stats) => FromAgent::Done {
            digests: stats.plan_parts.clone(),
            interrupted: stats.interrupted,
            error: local_error.clone(),
        },
        Err(e) => FromAgent::Done {
            digests: Vec::new(),
            interrupted: true,
            error: Some(e.to_string()),
        },
    };
    let _ = w.send(&done);
    w.shutdown();
    let _ = control.join();
    if let Ok(stats) = &ran {
        local.finish(stats)?;
    }
    match ran {
        Ok(_) => {
            log(&format!(
                "run {} done; log in {}",
                prep.run_id,
                dir.display()
            ));
            Ok(())
        }
        Err(e) => Err(FleetError::Run(e.to_string())),
    }
}

/// Follows the coordinator during a run: goal jumps, pings, a stop; its
/// silence for an interval (or a closed link) stops the run.
fn follow(
    mut r: Reader,
    w: &Writer,
    jump: &OnceLock<Jump>,
    stop: &StopHandle,
    over: &AtomicBool,
    interval_s: f64,
) {
    let silence = Duration::from_secs_f64(interval_s);
    while !over.load(Ordering::SeqCst) {
        match r.recv::<ToAgent>(Some(silence)) {
            Ok(ToAgent::Jump(j)) => {
                let _ = jump.set(j);
            }
            Ok(ToAgent::Ping) => {
                let _ = w.send(&FromAgent::Pong);
            }
            Ok(ToAgent::Stop) => stop.stop(),
            Ok(_) => {}
            Err(_) => {
                // The coordinator is gone (or silent for an interval):
                // stop; the local log keeps what was measured.
                stop.stop();
                return;
            }
        }
    }
}

/// Writes each merged interval to the local log and sends it on.
struct Forward<'a> {
    local: &'a mut RunDir,
    to: &'a Writer,
    stop: &'a StopHandle,
    error: Option<String>,
}

impl Sink for Forward<'_> {
    fn warn(&mut self, message: &str) {
        let _ = self.to.send(&FromAgent::Warn {
            message: message.into(),
        });
    }

    fn interval(&mut self, iv: &IntervalStats) {
        if let Err(e) = self.local.interval(iv, None) {
            self.error.get_or_insert(e.to_string());
        }
        let msg = FromAgent::Interval {
            index: iv.index,
            duration_s: iv.end_s - iv.start_s,
            snap: Box::new(iv.snap.to_wire()),
        };
        if self.to.send(&msg).is_err() {
            // The link is down: the run stops, the log has it all.
            self.stop.stop();
        }
    }
}
