//! Collapsed forwarding: while one request fetches an object, others for
//! the same URL wait for that fetch instead of asking the origin again.
//!
//! Locking: one mutex over the map, held only to join or leave. Waiters
//! get the stored object; or word that the reply was not stored, and then
//! go to the origin themselves; or the fetch's failure, which they answer
//! at once rather than each trying (and timing out) again.

use cacheoff_cache::Object;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// How a fetch others waited for ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    Stored(Arc<Object>),
    /// The reply was not stored (uncachable, or the leader gave up).
    NotStored,
    /// The origin failed; the status the leader's client got.
    Failed(u16),
}

#[derive(Default)]
pub struct Inflight {
    fetches: Mutex<HashMap<u64, watch::Receiver<Option<Outcome>>>>,
}

/// The request that fetches; dropping it unfinished releases the waiters.
pub struct Leader {
    key: u64,
    inflight: Arc<Inflight>,
    tx: Option<watch::Sender<Option<Outcome>>>,
}

pub enum Join {
    Lead(Leader),
    Wait(watch::Receiver<Option<Outcome>>),
}

impl Inflight {
    /// Leads the fetch of `key`, or waits for the one under way.
    pub fn join(self: &Arc<Self>, key: u64) -> Join {
        let mut map = self.fetches.lock().expect("inflight lock");
        if let Some(rx) = map.get(&key) {
            return Join::Wait(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        map.insert(key, rx);
        Join::Lead(Leader {
            key,
            inflight: self.clone(),
            tx: Some(tx),
        })
    }

    /// Leads a fetch only if none is under way (reloads never wait).
    pub fn lead(self: &Arc<Self>, key: u64) -> Option<Leader> {
        match self.join(key) {
            Join::Lead(l) => Some(l),
            Join::Wait(_) => None,
        }
    }
}

/// Waits for a fetch led by another request.
pub async fn wait(mut rx: watch::Receiver<Option<Outcome>>) -> Outcome {
    match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone().unwrap_or(Outcome::NotStored),
        Err(_) => Outcome::NotStored,
    }
}

impl Leader {
    /// The fetch ended: `stored` is what it left in the store, if anything.
    pub fn finish(self, stored: Option<Arc<Object>>) {
        self.end(stored.map_or(Outcome::NotStored, Outcome::Stored));
    }

    /// The fetch failed; waiters answer `status` too.
    pub fn fail(self, status: u16) {
        self.end(Outcome::Failed(status));
    }

    fn end(mut self, outcome: Outcome) {
        self.leave();
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Some(outcome));
        }
    }

    fn leave(&self) {
        let mut map = self.inflight.fetches.lock().expect("inflight lock");
        map.remove(&self.key);
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if self.tx.is_some() {
            self.leave();
        }
    }
}
