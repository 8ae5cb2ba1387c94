//! A client connection: read a request (and its body, buffered) within
//! its deadlines (`inbound`), refuse what may not or cannot be copied
//! (`admit`), hand one copy per proxy to the proxies' queues within their
//! byte budgets, relay the Collector's reply to the client unchanged
//! while measuring it, and only then read the next request (pipelined
//! bytes stay in the buffer). Nothing here waits for a copy. While it
//! waits for a request the connection is among its worker's `Waiting`,
//! which a new connection at the cap may close.

use crate::admit::{admit, admit_resolved};
use crate::claim::collector_claim;
use crate::copies::{CollectorReply, Job, Ticket};
use crate::facts::{BodyTracker, Facts};
use crate::inbound::{read_body, read_request, refuse};
use crate::limits::{WaitEntry, Waiting};
use crate::request::{forward, is_safe, refusal};
use crate::wire::{connect, read_head, read_some, Pool, WireError};
use crate::Shared;
use cacheoff_http::{HeadScanner, ResponseHead};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Serves one client connection until it closes, errs, idles out or is
/// evicted.
pub(crate) async fn serve(
    mut s: TcpStream,
    sh: Arc<Shared>,
    pool: Rc<Pool>,
    worker: usize,
    waiting: Rc<Waiting>,
    first: WaitEntry,
    accepted: Instant,
) {
    let _ = s.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut scanner = HeadScanner::new();
    let (mut since, mut fresh) = (accepted, true);
    let mut first = Some(first);
    loop {
        let entry = first.take().unwrap_or_else(|| waiting.enter(since));
        let read = tokio::select! {
            r = read_request(&mut s, &mut buf, &mut scanner, &sh, since, fresh) => r,
            // Counted by the worker that evicted it.
            _ = entry.evicted() => return,
        };
        drop(entry);
        let head = match read {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(r) => {
                sh.requests.fetch_add(1, Ordering::Relaxed);
                return refuse(&mut s, &sh, r).await;
            }
        };
        sh.requests.fetch_add(1, Ordering::Relaxed);
        let admitted = match admit(&head, sh.addr, &sh.via, sh.dest_rules.as_deref()) {
            Ok(a) => a,
            Err(r) => return refuse(&mut s, &sh, r).await,
        };
        if let Some(rules) = &sh.dest_rules {
            let resolved = admit_resolved(&admitted.dest, rules, sh.cfg.connect_timeout);
            if let Err(r) = resolved.await {
                return refuse(&mut s, &sh, r).await;
            }
        }
        let (body, upload) = match read_body(&mut s, &mut buf, &head, &sh).await {
            Ok(b) => b,
            Err(r) => return refuse(&mut s, &sh, r).await,
        };
        scanner.reset();
        let keep_alive = head.keep_alive;
        let head_request = head.method.as_str() == "HEAD";
        let t0 = Instant::now();
        let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
        let request: Arc<[u8]> = forward(&head, &admitted.target, &body, id, &sh.via).into();
        drop(body);
        let (tx, rx) = watch::channel(None);
        let copy = is_safe(&head.method) || sh.cfg.copy_unsafe;
        let url: Arc<str> = admitted.target.into();
        for p in &sh.proxies {
            if !copy {
                p.client.not_copied_unsafe.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let Some(charge) = p.budget.take(request.len() as u64) else {
                p.client.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let job = Job {
                id,
                request: request.clone(),
                charge,
                url: url.clone(),
                head_request,
                queued: t0,
                facts: rx.clone(),
                ticket: Ticket::new(p.client.clone()),
            };
            match p.tx.try_send(job) {
                Ok(()) => p.client.copied.fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    // Never queued: counted as dropped, not unfinished.
                    e.into_inner().ticket.punch();
                    p.client.dropped.fetch_add(1, Ordering::Relaxed)
                }
            };
        }
        drop(rx);
        let again = relay(&mut s, &request, head_request, t0, tx, &sh, &pool, worker).await;
        drop(upload);
        if !(again && keep_alive) {
            return;
        }
        (since, fresh) = (Instant::now(), false);
    }
}

async fn write_client(s: &mut TcpStream, bytes: &[u8], idle: Duration) -> bool {
    matches!(
        tokio::time::timeout(idle, s.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// Sends the request to the Collector and streams its reply to the client
/// unchanged, recording its facts for the copies; true if the client
/// connection may serve another request.
#[allow(clippy::too_many_arguments)]
async fn relay(
    client: &mut TcpStream,
    request: &[u8],
    head_request: bool,
    t0: Instant,
    facts: watch::Sender<Option<Arc<CollectorReply>>>,
    sh: &Shared,
    pool: &Pool,
    worker: usize,
) -> bool {
    let cfg = &sh.cfg;
    let t = sh.reply_timeouts();
    let mut failure = None;
    let mut got = None;
    for attempt in 0..2 {
        let pooled = if attempt == 0 { pool.take() } else { None };
        let reused = pooled.is_some();
        let mut c = match pooled {
            Some(c) => c,
            None => match connect(cfg.collector, cfg.connect_timeout).await {
                Ok(c) => c,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            },
        };
        if let Err(e) = c.write_all(request).await {
            failure = Some(e.into());
            if reused {
                continue;
            }
            break;
        }
        let mut buf = Vec::with_capacity(16 * 1024);
        let mut first = None;
        match read_head(&mut c, &mut buf, head_request, t, &mut first).await {
            Ok(h) => {
                got = Some((c, h, buf));
                break;
            }
            Err(WireError::Closed | WireError::Io(_)) if reused && buf.is_empty() => continue,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let collector_acc = &sh.collector[worker];
    let Some((mut c, head, mut buf)) = got else {
        collector_acc
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .error();
        let status = match &failure {
            Some(e) if e.is_timeout() => 504,
            _ => 502,
        };
        let why = failure.map_or_else(|| "no reply".to_string(), |e| e.to_string());
        let text = format!("the Collector failed: {why}");
        let _ = write_client(client, &refusal(status, &text), cfg.idle_timeout).await;
        return false;
    };
    let mut body = BodyTracker::new(head.framing);
    // The facts go out as soon as the body is whole, before its last bytes
    // are written to the client: the copies need not wait for a slow
    // client, nor lose their facts if the Multiplier stops just then.
    let mut published = None;
    let rest = buf.len() - head.head_len;
    let (used, mut extra) = match body.feed(&buf[head.head_len..]) {
        Ok(used) => (used, used < rest),
        Err(_) => (0, true),
    };
    if body.done() {
        published = Some(publish(&facts, collector_acc, &head, &body, t0));
    }
    // The head and the body bytes that came with it, in one write.
    let end = head.head_len + used;
    let mut client_ok = write_client(client, &buf[..end], cfg.idle_timeout).await;
    while !body.done() && !extra {
        buf.clear();
        match read_some(&mut c, &mut buf, t.idle, WireError::IdleTimeout(t.idle)).await {
            Ok(0) => {
                body.at_eof();
                published = Some(publish(&facts, collector_acc, &head, &body, t0));
                if client_ok {
                    let _ = client.shutdown().await;
                }
                break;
            }
            Ok(_) => match body.feed(&buf) {
                Ok(used) => {
                    extra = used < buf.len();
                    if body.done() {
                        published = Some(publish(&facts, collector_acc, &head, &body, t0));
                    }
                    if client_ok && used > 0 {
                        client_ok = write_client(client, &buf[..used], cfg.idle_timeout).await;
                    }
                }
                Err(_) => break,
            },
            Err(_) => break,
        }
    }
    let complete = published.unwrap_or_else(|| publish(&facts, collector_acc, &head, &body, t0));
    if complete && head.keep_alive && !extra {
        pool.put(c);
    }
    client_ok && complete && head.keep_alive && !extra
}

/// Records the Collector's reply and, if it is whole, hands its facts to
/// the copies; returns whether it was whole.
fn publish(
    tx: &watch::Sender<Option<Arc<CollectorReply>>>,
    acc: &std::sync::Mutex<crate::stats::CollectorAcc>,
    head: &ResponseHead,
    body: &BodyTracker,
    t0: Instant,
) -> bool {
    let rt_us = t0.elapsed().as_micros().try_into().unwrap_or(u64::MAX);
    let facts = Facts::of_head(head).with_body(body);
    let complete = facts.complete;
    let mut acc = acc.lock().unwrap_or_else(|e| e.into_inner());
    if complete {
        acc.reply(rt_us, collector_claim(&head.headers));
        let _ = tx.send(Some(Arc::new(CollectorReply { facts, rt_us })));
    } else {
        acc.error();
    }
    complete
}
