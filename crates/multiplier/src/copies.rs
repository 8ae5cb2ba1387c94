//! Copies to one proxy under test, on a thread of its own.
//!
//! Client workers `try_send` a [`Job`] into the proxy's bounded queue
//! (a full queue, by count or by the proxy's share of the queued-bytes
//! budget, drops the copy, counted there), so no proxy can slow the
//! client path. A job holds its request's bytes, charged to that budget,
//! until its exchange ends, and a [`Ticket`] that counts it `unfinished`
//! if it is dropped before it is recorded (cut off at stop): every copy
//! queued is counted once, as completed, an error or unfinished. The proxy's thread runs one single-threaded runtime: a
//! dispatcher takes jobs and runs each as a task holding one of
//! `conns_per_proxy` permits, which bounds the connections open to the
//! proxy; idle keep-alive connections wait in the thread's [`Pool`].
//! A task times the exchange, reads the reply whole within the copy's
//! deadline (`copy_timeout`: an endless body or `100 Continue`s end
//! there), gives its permit back, then waits for the Collector's facts of the same request (a
//! `watch` the client path fills) and records the comparison into the
//! proxy's accumulator.

use crate::claim::{claim, stamp, verdict, Verdict};
use crate::compare::compare;
use crate::facts::{BodyTracker, Facts};
use crate::stats::{ClientSideCounts, CopyRecord, ProxyAcc};
use crate::wire::{connect, read_head, read_some, Pool, ReplyTimeouts, WireError};
use cacheoff_access::{Budget, Charge};
use cacheoff_rundir::spe::Mismatch;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch, Semaphore};

/// The Collector's reply to a request, once relayed whole.
#[derive(Debug)]
pub(crate) struct CollectorReply {
    pub facts: Facts,
    /// Request read to last byte written to the client.
    pub rt_us: u64,
}

/// What the client path hands to a copy's waiter: `None` until the
/// Collector's reply ended; a dropped sender means it failed.
pub(crate) type FactsRx = watch::Receiver<Option<Arc<CollectorReply>>>;

/// One copy of a request for one proxy.
pub(crate) struct Job {
    pub id: u64,
    pub request: Arc<[u8]>,
    /// The request's bytes against the proxy's share of the budget.
    pub charge: Charge,
    pub url: Arc<str>,
    pub head_request: bool,
    pub queued: Instant,
    pub facts: FactsRx,
    pub ticket: Ticket,
}

/// A queued copy's promise to be counted: dropped before [`Ticket::punch`]
/// (a copy cut off at stop, in the queue or in flight), it counts the copy
/// `unfinished`.
pub(crate) struct Ticket(Option<Arc<ClientSideCounts>>);

impl Ticket {
    pub(crate) fn new(counts: Arc<ClientSideCounts>) -> Ticket {
        Ticket(Some(counts))
    }

    /// The copy is counted elsewhere (recorded, or never queued).
    pub(crate) fn punch(mut self) {
        self.0 = None;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.unfinished.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One proxy under test, shared by the client workers, its copy thread
/// and the interval thread.
pub(crate) struct ProxyShared {
    pub name: String,
    pub addr: SocketAddr,
    pub tx: mpsc::Sender<Job>,
    /// Bytes its queued copies hold: an equal share of `max_queued_bytes`.
    pub budget: Arc<Budget>,
    pub client: Arc<ClientSideCounts>,
    pub acc: Mutex<ProxyAcc>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CopySettings {
    pub conns: usize,
    pub connect_timeout: Duration,
    pub reply: ReplyTimeouts,
    pub facts_wait: Duration,
    pub copy_timeout: Duration,
}

struct Ctx {
    shared: Arc<ProxyShared>,
    settings: CopySettings,
    pool: Pool,
    /// Examples kept per mismatch kind over the run.
    kept: RefCell<[usize; Mismatch::COUNT]>,
}

/// Starts the proxy's copy thread. `stop` turns `Some(deadline)` when the
/// Multiplier stops: the thread then finishes what is queued and in
/// flight, or gives up at the deadline.
pub(crate) fn spawn(
    shared: Arc<ProxyShared>,
    rx: mpsc::Receiver<Job>,
    settings: CopySettings,
    stop: watch::Receiver<Option<Instant>>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("copies-{}", shared.name))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("copy runtime");
            let local = tokio::task::LocalSet::new();
            let ctx = Rc::new(Ctx {
                shared,
                settings,
                pool: Pool::new(settings.conns),
                kept: RefCell::new([0; Mismatch::COUNT]),
            });
            local.block_on(&rt, dispatch(ctx, rx, stop));
        })
        .expect("spawn copy thread")
}

async fn dispatch(
    ctx: Rc<Ctx>,
    mut rx: mpsc::Receiver<Job>,
    mut stop: watch::Receiver<Option<Instant>>,
) {
    let conns = ctx.settings.conns.max(1);
    let permits = Arc::new(Semaphore::new(conns));
    let tasks = Rc::new(Tasks::default());
    let start = |job: Job, permit| {
        let (ctx, tasks) = (ctx.clone(), tasks.clone());
        tasks.open.set(tasks.open.get() + 1);
        tokio::task::spawn_local(async move {
            copy(ctx, job, permit).await;
            tasks.open.set(tasks.open.get() - 1);
            tasks.ended.notify_one();
        });
    };
    let run = async {
        while let Some(job) = rx.recv().await {
            start(job, permits.clone().acquire_owned().await.expect("open"));
        }
    };
    let deadline = tokio::select! {
        _ = run => return,
        d = stop.wait_for(Option::is_some) => match d {
            Ok(d) => d.expect("some"),
            Err(_) => return,
        },
    };
    let drain = async {
        while let Ok(job) = rx.try_recv() {
            start(job, permits.clone().acquire_owned().await.expect("open"));
        }
        // Tasks outlive their permits while they wait for the Collector's
        // facts: wait for the tasks themselves.
        while tasks.open.get() > 0 {
            tasks.ended.notified().await;
        }
    };
    let _ = tokio::time::timeout_at(deadline.into(), drain).await;
}

/// Copy tasks still running, for the drain at stop.
#[derive(Default)]
struct Tasks {
    open: std::cell::Cell<usize>,
    ended: tokio::sync::Notify,
}

/// A usable reply of a proxy under test.
struct Got {
    facts: Facts,
    verdict: Verdict,
    claimed_hit: bool,
    connect_us: u64,
    first_byte_us: u64,
    rt_us: u64,
}

async fn copy(ctx: Rc<Ctx>, job: Job, permit: tokio::sync::OwnedSemaphorePermit) {
    let Job {
        id,
        request,
        charge,
        url,
        head_request,
        queued,
        facts,
        ticket,
    } = job;
    let dequeued = Instant::now();
    let deadline = ctx.settings.copy_timeout;
    let exchanged = exchange(&ctx, &request, id, head_request, dequeued);
    let got = tokio::time::timeout(deadline, exchanged)
        .await
        .unwrap_or(Err(WireError::Deadline(deadline)));
    drop((permit, request, charge));
    let queue_us = micros(dequeued - queued);
    let url = url.to_string();
    let record = match got {
        Err(e) => CopyRecord {
            url,
            queue_us,
            connect_us: None,
            first_byte_us: None,
            rt_us: None,
            verdict: Verdict::Unverified,
            claimed_hit: false,
            mismatch: Some((
                if e.is_timeout() {
                    Mismatch::Timeout
                } else {
                    Mismatch::Error
                },
                format!("expected a reply; got {e}"),
            )),
            collector_rt_us: None,
        },
        Ok(got) => {
            let collector = collector_reply(facts, ctx.settings.facts_wait).await;
            CopyRecord {
                url,
                queue_us,
                connect_us: Some(got.connect_us),
                first_byte_us: Some(got.first_byte_us),
                rt_us: Some(got.rt_us),
                verdict: got.verdict,
                claimed_hit: got.claimed_hit,
                mismatch: collector
                    .as_ref()
                    .and_then(|c| compare(&c.facts, &got.facts)),
                collector_rt_us: collector.map(|c| c.rt_us),
            }
        }
    };
    let mut kept = ctx.kept.borrow_mut();
    let mut acc = ctx.shared.acc.lock().unwrap_or_else(|e| e.into_inner());
    ticket.punch();
    acc.record(record, &mut kept);
}

/// The Collector's whole reply to the same request, within `wait`;
/// `None` if it failed, ended early or took longer.
async fn collector_reply(mut rx: FactsRx, wait: Duration) -> Option<Arc<CollectorReply>> {
    let r = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
    let reply = r.ok()?.ok()?.clone()?;
    reply.facts.complete.then_some(reply)
}

fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

/// Sends the copy and reads the reply whole (retrying once on a fresh
/// connection if a pooled one turns out closed before any reply byte).
async fn exchange(
    ctx: &Ctx,
    request: &[u8],
    id: u64,
    head_request: bool,
    dequeued: Instant,
) -> Result<Got, WireError> {
    let s = &ctx.settings;
    for attempt in 0..2 {
        let pooled = if attempt == 0 { ctx.pool.take() } else { None };
        let reused = pooled.is_some();
        let mut conn = match pooled {
            Some(c) => c,
            None => connect(ctx.shared.addr, s.connect_timeout).await?,
        };
        let connected = Instant::now();
        if let Err(e) = conn.write_all(request).await {
            if reused {
                continue;
            }
            return Err(e.into());
        }
        let mut buf = Vec::new();
        let mut first = None;
        let head = match read_head(&mut conn, &mut buf, head_request, s.reply, &mut first).await {
            Ok(h) => h,
            Err(WireError::Closed | WireError::Io(_)) if reused && buf.is_empty() => continue,
            Err(e) => return Err(e),
        };
        let mut body = BodyTracker::new(head.framing);
        let rest = buf.split_off(head.head_len);
        let mut extra = body.feed(&rest).map_or(true, |used| used < rest.len());
        while !body.done() {
            buf.clear();
            let idle = WireError::IdleTimeout(s.reply.idle);
            match read_some(&mut conn, &mut buf, s.reply.idle, idle).await {
                Ok(0) => {
                    body.at_eof();
                    break;
                }
                Ok(_) => match body.feed(&buf) {
                    Ok(used) => extra |= used < buf.len(),
                    Err(_) => break,
                },
                // A timeout or reset mid-body: what came is compared
                // (and found truncated).
                Err(_) => break,
            }
        }
        let done = Instant::now();
        if body.done() && head.keep_alive && !extra {
            ctx.pool.put(conn);
        }
        let claimed_hit = claim(&head.headers) == Some(true);
        return Ok(Got {
            verdict: verdict(stamp(&head.headers), id),
            claimed_hit,
            facts: Facts::of_head(&head).with_body(&body),
            connect_us: if reused {
                0
            } else {
                micros(connected - dequeued)
            },
            first_byte_us: micros(first.unwrap_or(done) - dequeued),
            rt_us: micros(done - dequeued),
        });
    }
    Err(WireError::Closed)
}
