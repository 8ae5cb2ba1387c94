//! The fleet as the user named it ([`Fleet`], [`AgentAddr`]), and reaching
//! one agent: connecting (retrying while it comes up), proving to each
//! other that both are the fleet's (`trust`), the version check, and its
//! clock against ours.

use crate::split::Role;
use crate::trust::CoordinatorTrust;
use crate::wire::{self, FromAgent, ToAgent, Writer};
use crate::{unix_now, FleetError};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// An agent as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAddr {
    /// `HOST:PORT` (a name is resolved at each attempt).
    pub addr: String,
    pub role: Role,
}

/// The fleet of a run.
#[derive(Debug, Clone)]
pub struct Fleet {
    pub agents: Vec<AgentAddr>,
    /// How long to keep trying to reach agents that are not up yet.
    pub wait: Duration,
    /// The largest clock difference between coordinator and agent.
    pub max_skew: Duration,
    /// This build's version; agents must run the same.
    pub version: String,
    /// Silence after which an agent counts as lost.
    pub lost_after: Duration,
    /// Which agents it drives: the fleet's, or anyone (`--insecure`).
    pub trust: CoordinatorTrust,
}

/// Clock exchanges per agent at the handshake.
const CLOCK_SAMPLES: usize = 8;

/// How long an agent may take to prove itself and say hello.
const HANDSHAKE: Duration = Duration::from_secs(30);

pub(crate) struct Welcome {
    pub version: String,
    pub offset_s: f64,
    pub rtt_s: f64,
}

pub(crate) type Conn = (wire::Reader, Writer);

/// A link that failed, naming the agent.
pub(crate) fn link(a: &AgentAddr, e: wire::WireError) -> FleetError {
    FleetError::Link {
        agent: a.addr.clone(),
        why: e.to_string(),
    }
}

/// Reaches an agent (retrying until `fleet.wait`) and checks it: the same
/// version, and a clock within the skew limit.
pub(crate) fn handshake(a: &AgentAddr, fleet: &Fleet) -> Result<(Conn, Welcome, u32), FleetError> {
    let until = Instant::now() + fleet.wait;
    let hint = match fleet.trust {
        CoordinatorTrust::Insecure => "does the agent want --fleet-dir or --secret-file?",
        CoordinatorTrust::Tls(_) => {
            "do the agent and this coordinator use the same fleet (--fleet-dir, --secret-file)?"
        }
    };
    // An agent at its link limit closes new links unheard: that is
    // retried for the wait, as an agent not up yet is; a proof refused
    // is not.
    let (mut reader, writer) = loop {
        let stream = connect(&a.addr, until.saturating_duration_since(Instant::now()))?;
        match fleet.trust.connect(stream, Instant::now() + HANDSHAKE) {
            Ok(link) => break link,
            Err(e) if dropped(&e) && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(250))
            }
            Err(e) => {
                return Err(FleetError::Refused {
                    agent: a.addr.clone(),
                    reason: format!("the fleet's TLS handshake failed: {e} ({hint})"),
                })
            }
        }
    };
    let t0 = unix_now();
    writer
        .send(&ToAgent::Hello {
            version: fleet.version.clone(),
            protocol: wire::PROTOCOL,
            // Others may take up to the wait to come up meanwhile.
            wait_s: fleet.wait.as_secs_f64(),
        })
        .map_err(|e| link(a, e))?;
    let reply = reader
        .recv::<FromAgent>(Some(HANDSHAKE))
        .map_err(|e| match e {
            wire::WireError::Closed => FleetError::Refused {
                agent: a.addr.clone(),
                reason: format!("it closed the link before saying hello ({hint})"),
            },
            // TLS 1.3: the agent judges our certificate after we think
            // the handshake is over, and says no with an alert.
            wire::WireError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                FleetError::Refused {
                    agent: a.addr.clone(),
                    reason: format!("the agent refused this coordinator: {e} ({hint})"),
                }
            }
            e => link(a, e),
        })?;
    let t1 = unix_now();
    match reply {
        FromAgent::Welcome {
            version,
            protocol,
            now_unix,
            threads,
            ..
        } => {
            let mut best = (t1 - t0, now_unix - (t0 + t1) / 2.0);
            if version != fleet.version || protocol != wire::PROTOCOL {
                return Err(FleetError::Refused {
                    agent: a.addr.clone(),
                    reason: format!(
                        "version mismatch: agent {version} (protocol {protocol}), coordinator {} (protocol {})",
                        fleet.version,
                        wire::PROTOCOL
                    ),
                });
            }
            // Its clock at the midpoint of an exchange, against ours; the
            // quickest exchange bounds the error best (half its round trip).
            for _ in 0..CLOCK_SAMPLES {
                let t0 = unix_now();
                writer.send(&ToAgent::Clock)?;
                let FromAgent::Clock { now_unix } = reader.recv(Some(HANDSHAKE))? else {
                    return Err(FleetError::Protocol {
                        agent: a.addr.clone(),
                        what: "expected its clock".into(),
                    });
                };
                let t1 = unix_now();
                if t1 - t0 < best.0 {
                    best = (t1 - t0, now_unix - (t0 + t1) / 2.0);
                }
            }
            let (rtt_s, offset_s) = best;
            if offset_s.abs() > fleet.max_skew.as_secs_f64() {
                return Err(FleetError::ClockSkew {
                    agent: a.addr.clone(),
                    offset_ms: offset_s * 1e3,
                    limit_ms: fleet.max_skew.as_secs_f64() * 1e3,
                });
            }
            Ok((
                (reader, writer),
                Welcome {
                    version,
                    offset_s,
                    rtt_s,
                },
                threads,
            ))
        }
        FromAgent::Refused { reason } => Err(FleetError::Refused {
            agent: a.addr.clone(),
            reason,
        }),
        other => Err(FleetError::Protocol {
            agent: a.addr.clone(),
            what: format!("expected welcome, got {other:?}"),
        }),
    }
}

/// Whether a link was closed before a word was said (not a refusal).
fn dropped(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

fn connect(addr: &str, wait: Duration) -> Result<TcpStream, FleetError> {
    let deadline = Instant::now() + wait;
    loop {
        let tried = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut addrs| {
                let a = addrs.next().ok_or_else(|| "no address".to_string())?;
                TcpStream::connect_timeout(&a, Duration::from_secs(2)).map_err(|e| e.to_string())
            });
        match tried {
            Ok(s) => return Ok(s),
            Err(why) if Instant::now() >= deadline => {
                return Err(FleetError::Unreachable {
                    agent: addr.into(),
                    why,
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}
