//! An agent's door: links accepted, few and bounded per address, each a
//! stranger's until it proves within one handshake deadline that it is
//! the fleet's coordinator (`trust`); only then does the agent say its
//! version or become busy. The data directory is held by one agent.
//! Ownership: `serve`'s loop owns the listener; each link runs on a thread
//! of its own, and `State` (under its locks) is all they share.

use crate::agent::{kind, refuse, session, AgentConfig, Log};
use crate::wire::{self, ToAgent};
use crate::FleetError;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The file in a data directory whose lock says an agent uses it.
const LOCK_FILE: &str = ".cacheoff-agent.lock";

/// Holds `dir` for this agent for as long as it lives.
fn lock_data(dir: &Path) -> Result<std::fs::File, FleetError> {
    std::fs::create_dir_all(dir).map_err(|e| FleetError::Data {
        dir: dir.into(),
        why: e.to_string(),
    })?;
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| FleetError::Data {
            dir: dir.into(),
            why: e.to_string(),
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(FleetError::Data {
            dir: dir.into(),
            why: "another cacheoff agent is using it (give each agent its own --data)".into(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(FleetError::Data {
            dir: dir.into(),
            why: e.to_string(),
        }),
    }
}

/// What the links of one agent share.
#[derive(Default)]
struct State {
    /// The run it is in, if any.
    busy: Mutex<Option<String>>,
    done: AtomicU32,
    failed: AtomicU32,
    /// Links open now.
    links: AtomicUsize,
    /// Links not yet authenticated, by peer address.
    pending: Mutex<HashMap<IpAddr, usize>>,
    refusals: Mutex<Refusals>,
}

/// Strangers turned away, said at most once per [`Refusals::EVERY`].
#[derive(Default)]
struct Refusals {
    since: u64,
    said: Option<Instant>,
}

impl Refusals {
    const EVERY: Duration = Duration::from_secs(10);

    fn note(&mut self, why: &str, log: &Log) {
        self.since += 1;
        if self.said.is_none_or(|t| t.elapsed() >= Self::EVERY) {
            log(&format!(
                "refused {} link(s) in the last {}s; latest: {why}",
                self.since,
                Self::EVERY.as_secs()
            ));
            self.since = 0;
            self.said = Some(Instant::now());
        }
    }
}

/// Counts a link open for as long as it lives.
struct LinkSlot(Arc<State>);

impl Drop for LinkSlot {
    fn drop(&mut self) {
        self.0.links.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a link from `ip` as a stranger's until dropped.
struct Pending(Arc<State>, IpAddr);

impl Drop for Pending {
    fn drop(&mut self) {
        let mut p = self.0.pending.lock().unwrap();
        if let Some(n) = p.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.1);
            }
        }
    }
}

/// Serves coordinators on `listener` until `cfg.runs` runs are done.
pub fn serve(listener: TcpListener, cfg: AgentConfig, log: Arc<Log>) -> Result<(), FleetError> {
    let _data = lock_data(&cfg.data)?;
    listener.set_nonblocking(true)?;
    let state: Arc<State> = Arc::default();
    loop {
        if cfg.runs.is_some_and(|n| {
            state.done.load(Ordering::SeqCst) >= n && state.busy.lock().unwrap().is_none()
        }) {
            return match state.failed.load(Ordering::SeqCst) {
                0 => Ok(()),
                n => Err(FleetError::Run(format!("{n} of its runs failed"))),
            };
        }
        let (stream, peer) = match listener.accept() {
            Ok(s) => s,
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
        let ip = cacheoff_access::unmap(peer.ip());
        if state.links.load(Ordering::SeqCst) >= cfg.limits.max_connections {
            state.refusals.lock().unwrap().note(
                &format!("{peer}: {} links open already", cfg.limits.max_connections),
                &*log,
            );
            continue;
        }
        {
            let mut pending = state.pending.lock().unwrap();
            let n = pending.entry(ip).or_default();
            if *n >= cfg.limits.max_pending_per_peer {
                drop(pending);
                state.refusals.lock().unwrap().note(
                    &format!(
                        "{peer}: {} unauthenticated links from it already",
                        cfg.limits.max_pending_per_peer
                    ),
                    &*log,
                );
                continue;
            }
            *n += 1;
        }
        state.links.fetch_add(1, Ordering::SeqCst);
        let slot = LinkSlot(state.clone());
        let pending = Pending(state.clone(), ip);
        let _ = stream.set_nonblocking(false);
        let (cfg2, log2, state2) = (cfg.clone(), log.clone(), state.clone());
        let spawned = std::thread::Builder::new()
            .name("agent-link".into())
            .spawn(move || {
                let _slot = slot;
                link(stream, peer, pending, &cfg2, &*log2, &state2);
            });
        if let Err(e) = spawned {
            log(&format!("cannot serve {peer}: {e}"));
        }
    }
}

/// One link, from its first byte: the peer's proof, its hello, then a
/// session if the agent is free.
fn link(
    stream: TcpStream,
    peer: SocketAddr,
    pending: Pending,
    cfg: &AgentConfig,
    log: &Log,
    state: &State,
) {
    let deadline = Instant::now() + cfg.limits.handshake;
    let (mut r, w) = match cfg.trust.accept(stream, deadline) {
        Ok(l) => l,
        Err(e) => {
            state
                .refusals
                .lock()
                .unwrap()
                .note(&format!("{peer}: {e}"), log);
            return;
        }
    };
    let hello = r.recv::<ToAgent>(Some(deadline.saturating_duration_since(Instant::now())));
    let wait_s = match hello {
        Ok(ToAgent::Hello {
            version,
            protocol,
            wait_s,
        }) => {
            if protocol != wire::PROTOCOL || version != crate::version_of(&cfg.build) {
                refuse(&w, format!(
                    "version mismatch: this agent is cacheoff {} (protocol {}), the coordinator {version} (protocol {protocol})",
                    crate::version_of(&cfg.build),
                    wire::PROTOCOL
                ));
                return;
            }
            wait_s
        }
        Ok(other) => {
            refuse(&w, format!("expected hello, got {}", kind(&other)));
            return;
        }
        Err(e) => {
            state
                .refusals
                .lock()
                .unwrap()
                .note(&format!("{peer}: no hello: {e}"), log);
            w.shutdown();
            return;
        }
    };
    // The peer is the fleet's (or anyone's, with --insecure).
    drop(pending);
    {
        let mut busy = state.busy.lock().unwrap();
        if let Some(run) = busy.as_ref() {
            let reason = format!("already in run {run}");
            drop(busy);
            refuse(&w, reason);
            return;
        }
        *busy = Some("(starting)".into());
    }
    let ran = session(r, w, wait_s, peer, cfg, log, &state.busy);
    if let Err(e) = &ran {
        log(&format!("session with {peer} ended: {e}"));
    }
    match ran {
        Ok(true) => {
            state.done.fetch_add(1, Ordering::SeqCst);
        }
        // A run that started and failed counts, as a failure.
        Err(FleetError::Run(_) | FleetError::RunDir(_)) => {
            state.done.fetch_add(1, Ordering::SeqCst);
            state.failed.fetch_add(1, Ordering::SeqCst);
        }
        _ => {}
    }
    *state.busy.lock().unwrap() = None;
}
