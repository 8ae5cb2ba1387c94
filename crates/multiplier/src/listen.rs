//! The client workers' listeners and accept loops: who may connect
//! (loopback, or `allow`), and what a connection over the cap does: it
//! closes the accepting worker's connection that has waited longest for
//! a request (an idle keep-alive one, or one whose head is still
//! arriving), and only if none waits is it answered 503 and closed. A
//! served connection is never closed for a newcomer, so slow clients
//! cannot lock out everyone else: at worst they evict each other.

use crate::client;
use crate::limits::Waiting;
use crate::request::refusal;
use crate::wire::Pool;
use crate::Shared;
use cacheoff_access::client_allowed;
use cacheoff_rundir::spe::Refusal;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// One socket per worker on the shared port (`lib.rs` binds them).
pub(crate) use cacheoff_access::listener;

/// One client worker: its runtime, listener, Collector pool and waiting
/// connections, until `stop`.
pub(crate) fn worker(
    id: usize,
    listener: std::net::TcpListener,
    sh: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Name lookups for --allow-dest (tokio's resolver runs on these).
        .max_blocking_threads(8)
        .build()
        .expect("multiplier runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("register listener");
        let pool = Rc::new(Pool::new(256));
        let waiting = Rc::new(Waiting::default());
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((s, peer)) => admit(s, peer, &sh, &pool, &waiting, id),
                    // Out of descriptors: back off instead of spinning.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                },
                _ = stop.changed() => break,
            }
        }
    });
}

/// Serves a new connection, or refuses it without reading a byte.
fn admit(
    s: tokio::net::TcpStream,
    peer: SocketAddr,
    sh: &Arc<Shared>,
    pool: &Rc<Pool>,
    waiting: &Rc<Waiting>,
    worker: usize,
) {
    let accepted = Instant::now();
    if !client_allowed(&sh.cfg.allow, peer.ip()) {
        sh.refuse(Refusal::ClientDenied);
        let _ = s.try_write(&refusal(403, "client not allowed (--allow)"));
        return;
    }
    let slot = match sh.slots.take() {
        Some(slot) => slot,
        None if waiting.evict_oldest() => {
            sh.refuse(Refusal::Evicted);
            sh.slots.replace()
        }
        None => {
            sh.refuse(Refusal::OverCapacity);
            // Only what the socket takes at once: no task, no wait.
            let _ = s.try_write(&refusal(503, "too many client connections"));
            return;
        }
    };
    // Among the waiting at once, not when its task first runs: a burst of
    // connections accepted before any task ran can still evict it.
    let entry = waiting.enter(accepted);
    let (sh, pool, waiting) = (sh.clone(), pool.clone(), waiting.clone());
    tokio::task::spawn_local(async move {
        client::serve(s, sh, pool, worker, waiting, entry, accepted).await;
        drop(slot);
    });
}
