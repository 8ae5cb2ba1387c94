//! A replayed trace instead of the plan: its requests, read ahead on a
//! thread of their own, are paced like the plan's arrivals and handed to
//! the robots (chosen by the traced client), then go the robots' usual way
//! (connections, exchange, verdict, stats).

use super::exchange::{us_since, Due};
use super::pacer::{self, Arrivals};
use super::{dispatch, Robot};
use crate::local::Clients;
use crate::TraceFeed;
use cacheoff_workload::{Factors, TraceBook, TracedRequest};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Requests sent from the reader thread at a time.
const BATCH: usize = 256;
/// Batches read ahead.
const AHEAD: usize = 64;

/// The trace's requests for this worker, as the pacer takes them.
struct TraceArrivals {
    rx: mpsc::Receiver<Vec<TracedRequest>>,
    buf: VecDeque<TracedRequest>,
    done: bool,
}

impl Arrivals for TraceArrivals {
    type Item = TracedRequest;

    async fn ready(&mut self) {
        if self.buf.is_empty() && !self.done {
            match self.rx.recv().await {
                Some(batch) => self.buf.extend(batch),
                None => self.done = true,
            }
        }
    }

    fn peek_ns(&self) -> Option<u64> {
        self.buf.front().map(|r| r.at_us.saturating_mul(1000))
    }

    fn pop(&mut self, _factors: Option<Factors>) -> Option<TracedRequest> {
        // A trace is replayed as it was: no load factors thin it.
        self.buf.pop_front()
    }
}

/// Starts the reader thread for this worker's share of the trace.
fn read_ahead(feed: &TraceFeed, worker: u32, workers: u32) -> TraceArrivals {
    let (tx, rx) = mpsc::channel(AHEAD);
    let feed = feed.0.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("trace-{worker}"))
        .spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            for r in feed(worker, workers) {
                batch.push(r);
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    // The run ended or was stopped: read no further.
                    if tx.blocking_send(full).is_err() {
                        return;
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.blocking_send(batch);
            }
        });
    TraceArrivals {
        rx,
        buf: VecDeque::new(),
        // Without its reader the share is empty (the run shows no requests).
        done: spawned.is_err(),
    }
}

/// Replays this worker's share of the trace through its robots.
pub async fn replay(clients: Rc<Clients>, robots: Vec<Rc<Robot>>, feed: &TraceFeed) {
    let shared = clients.local.shared.clone();
    if robots.is_empty() {
        return;
    }
    let mut arrivals = read_ahead(feed, clients.local.id, shared.workers as u32);
    let mut book = TraceBook::default();
    let stopping = || clients.stopping.get();
    pacer::pace(
        &mut arrivals,
        shared.start,
        &shared.timeline,
        &stopping,
        |r: TracedRequest, intended: Instant| {
            clients
                .local
                .stats
                .borrow_mut()
                .record_issue(us_since(intended, Instant::now()));
            let plan = book.plan(&r, &shared.objects);
            let robot = &robots[(r.client % robots.len() as u64) as usize];
            let due = Due { plan, intended };
            super::record_in_digest(&clients, robot, &due);
            dispatch(&clients, robot, due);
        },
    )
    .await;
}
