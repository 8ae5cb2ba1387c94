//! `cacheoff agent`: waits for a coordinator, runs its share of one run
//! at a time, streams each merged interval back, and keeps its own log of
//! the run (a run directory per run id under its data directory), so
//! nothing is lost if the coordinator's link drops.

use crate::wire::{self, workload_digest, FromAgent, Prepare, Reader, ToAgent, ViaSpec, Writer};
use crate::{unix_now, FleetError};
use cacheoff_agent::{BoundServers, Jump, RunConfig, Share, Sink, StopHandle, Via};
use cacheoff_rundir::{Build, Manifest, Mode, RunDir};
use cacheoff_stats::IntervalStats;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub build: Build,
    /// One address for this host's robots and servers (a pod's IP); else
    /// the workload's ranges at each one's index in the run.
    pub host_ip: Option<Ipv4Addr>,
    /// Where each run's local log goes (`DATA/<run id>/`).
    pub data: PathBuf,
    /// Worker threads.
    pub workers: usize,
    /// Exit after this many runs (`None`: serve forever).
    pub runs: Option<u32>,
}

/// What the agent says as it goes (the caller prints it).
pub type Log = dyn Fn(&str) + Send + Sync;

/// How long a coordinator may take to answer during the handshake.
const HANDSHAKE: Duration = Duration::from_secs(60);

/// Serves coordinators on `listener` until `cfg.runs` runs are done.
pub fn serve(listener: TcpListener, cfg: AgentConfig, log: Arc<Log>) -> Result<(), FleetError> {
    listener.set_nonblocking(true)?;
    let busy: Arc<Mutex<Option<String>>> = Arc::default();
    let done = Arc::new(AtomicU32::new(0));
    let failed = Arc::new(AtomicU32::new(0));
    loop {
        if cfg
            .runs
            .is_some_and(|n| done.load(Ordering::SeqCst) >= n && busy.lock().unwrap().is_none())
        {
            return match failed.load(Ordering::SeqCst) {
                0 => Ok(()),
                n => Err(FleetError::Run(format!("{n} of its runs failed"))),
            };
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => {
                cacheoff_agent::note_io_error(&e);
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        let current = busy.lock().unwrap().clone();
        if let Some(run) = current {
            // One run at a time: say so and hang up.
            std::thread::spawn(move || refuse_busy(stream, &run));
            continue;
        }
        *busy.lock().unwrap() = Some("(starting)".into());
        let (cfg, log, busy) = (cfg.clone(), log.clone(), busy.clone());
        let (done, failed) = (done.clone(), failed.clone());
        std::thread::spawn(move || {
            let ran = session(stream, &cfg, &*log, &busy);
            if let Err(e) = &ran {
                log(&format!("session ended: {e}"));
            }
            match ran {
                Ok(true) => {
                    done.fetch_add(1, Ordering::SeqCst);
                }
                // A run that started and failed counts, as a failure.
                Err(FleetError::Run(_) | FleetError::RunDir(_)) => {
                    done.fetch_add(1, Ordering::SeqCst);
                    failed.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
            *busy.lock().unwrap() = None;
        });
    }
}

fn refuse_busy(stream: TcpStream, run: &str) {
    let Ok((mut r, w)) = wire::split(stream) else {
        return;
    };
    let _ = r.recv::<ToAgent>(Some(Duration::from_secs(5)));
    let _ = w.send(&FromAgent::Refused {
        reason: format!("already in run {run}"),
    });
    w.shutdown();
}

/// One coordinator's session; `Ok(true)` when a run started.
fn session(
    stream: TcpStream,
    cfg: &AgentConfig,
    log: &Log,
    busy: &Mutex<Option<String>>,
) -> Result<bool, FleetError> {
    let peer = stream.peer_addr().map_or("?".into(), |a| a.to_string());
    let (mut r, w) = wire::split(stream)?;
    let refuse = |reason: String| {
        let _ = w.send(&FromAgent::Refused {
            reason: reason.clone(),
        });
        w.shutdown();
        FleetError::Refused {
            agent: "this agent".into(),
            reason,
        }
    };
    let mut wait = HANDSHAKE;
    match r.recv::<ToAgent>(Some(HANDSHAKE))? {
        ToAgent::Hello {
            version,
            protocol,
            wait_s,
        } => {
            wait += Duration::from_secs_f64(wait_s.clamp(0.0, 86_400.0));
            if protocol != wire::PROTOCOL || version != crate::version_of(&cfg.build) {
                return Err(refuse(format!(
                    "version mismatch: this agent is cacheoff {} (protocol {}), the coordinator {version} (protocol {protocol})",
                    crate::version_of(&cfg.build),
                    wire::PROTOCOL
                )));
            }
        }
        other => return Err(refuse(format!("expected hello, got {other:?}"))),
    }
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
        Ok(other) => return Err(refuse(format!("expected prepare, got {other:?}"))),
        Err(e) => return Err(e.into()),
    };
    if workload_digest(&prep.workload) != prep.workload_digest {
        return Err(refuse(format!(
            "workload mismatch: the workload received digests to {}, the coordinator's to {} (another version's workload model?)",
            workload_digest(&prep.workload),
            prep.workload_digest
        )));
    }
    *busy.lock().unwrap() = Some(prep.run_id.clone());
    let bound = match BoundServers::bind_range(
        &prep.workload,
        prep.servers[0]..prep.servers[1],
        cfg.host_ip,
    ) {
        Ok(b) => b,
        Err(e) => return Err(refuse(format!("cannot start its origin servers: {e}"))),
    };
    w.send(&FromAgent::Prepared {
        servers: bound.addrs(),
    })?;
    let (clock, servers) = match r.recv::<ToAgent>(Some(wait)) {
        Ok(ToAgent::Start {
            start_unix,
            clock_offset_s,
            clock_slack_s,
            servers,
        }) => ((start_unix, clock_offset_s, clock_slack_s), servers),
        Err(wire::WireError::Closed) => return Ok(false),
        Ok(other) => return Err(refuse(format!("expected start, got {other:?}"))),
        Err(e) => return Err(e.into()),
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
