//! One exchange on the wire: write the request, read the reply head and
//! body within the workload's timeouts, and have the [`verdict`] judge
//! each part as it arrives.

use super::claim::Claims;
use super::conns::{Conn, HEAD_CHUNK};
use super::verdict::{self, Ask};
use crate::local::{Clients, IO_BUF};
use crate::shared::Via;
use cacheoff_base::RequestType;
use cacheoff_http::body::BodyCheck;
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::date;
use cacheoff_http::request::{write_request, RequestSpec};
use cacheoff_http::response::parse_response_within;
use cacheoff_http::{Framing, HttpError, ResponseHead};
use cacheoff_stats::{ErrorKind, Outcome};
use cacheoff_workload::Planned;
use std::io;
use std::time::{Duration, Instant};

/// A planned request, due at `intended`.
pub struct Due {
    pub plan: Planned,
    pub intended: Instant,
}

/// Microseconds from `from` to `to` (0 if `to` is earlier).
pub fn us_since(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

/// A successful transaction.
pub struct Reply {
    pub outcome: Outcome,
    /// The type actually sent.
    pub rtype: RequestType,
    pub status: u16,
    /// Body bytes received.
    pub bytes: u64,
    pub keep_alive: bool,
    pub done: Instant,
    /// What the reply's headers say of how it was served.
    pub claims: Claims,
}

/// Why a transaction did not succeed.
pub enum Unsuccessful {
    Error(ErrorKind),
    /// Aborted on purpose, by the robot or by the server.
    Aborted {
        by_server: bool,
    },
    /// The connection was closed before any response byte arrived.
    StaleConn,
}

impl From<ErrorKind> for Unsuccessful {
    fn from(k: ErrorKind) -> Self {
        Unsuccessful::Error(k)
    }
}

fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => ErrorKind::PrematureClose,
        _ => ErrorKind::ConnReset,
    }
}

/// A request built and (as far as the socket took it at once) written:
/// what the rest of its exchange needs.
pub struct Begun {
    ask: Ask,
    sent: Instant,
    /// Request bytes already written.
    written: usize,
}

/// Sends the request and reads and judges the reply, within the
/// transaction timeout.
pub async fn exchange(
    clients: &Clients,
    conn: &mut Conn,
    due: &Due,
) -> Result<Reply, Unsuccessful> {
    let begun = begin(clients, conn, due);
    complete(clients, conn, due, begun).await
}

/// Builds the request and writes what the socket takes without waiting:
/// called by the pacer itself for a request that has an idle connection,
/// so its send time does not depend on how many other tasks are queued.
pub fn begin(clients: &Clients, conn: &mut Conn, due: &Due) -> Begun {
    let shared = clients.shared();
    let w = &shared.workload;
    let p = &due.plan;
    let xact = clients.next_xact();
    // IMS dates come from the object's Last-Modified at send time; a
    // reply with an older one is stale.
    let now = shared.run_unix_now();
    let lm_at_send = shared.times_at(&p.info, now).last_modified;
    // Hosts of many date objects by clocks that may differ by the slack:
    // the oldest version the origin may rightly send.
    let lm_floor = if shared.clock_slack_s > 0.0 {
        shared
            .times_at(&p.info, now - shared.clock_slack_s)
            .last_modified
    } else {
        lm_at_send
    };
    let (rtype, ims_lmt) = match p.rtype {
        RequestType::Ims200 | RequestType::Ims304 => match lm_at_send {
            Some(lm) => (p.rtype, Some(lm)),
            None => (RequestType::Basic, None),
        },
        t => (t, None),
    };
    let ims_date = ims_lmt.map(|lm| {
        date::format(if rtype == RequestType::Ims200 {
            lm - 1
        } else {
            lm + 1
        })
    });
    conn.buf.clear();
    let mut path = std::mem::take(&mut conn.path);
    path.clear();
    shared.objects.write_path(&mut path, &p.info);
    let method = match rtype {
        RequestType::Post => "POST",
        RequestType::Head => "HEAD",
        _ => "GET",
    };
    write_request(
        &mut conn.buf,
        &RequestSpec {
            method,
            host: &shared.server_hosts[p.info.server as usize],
            path: &path,
            // Inside a tunnel the request is the origin server's.
            absolute: matches!(shared.via, Via::Proxy(_)) && !w.robots.tls,
            xact,
            keep_alive: true,
            ims: ims_date.as_deref(),
            reload: rtype == RequestType::Reload,
            body_len: p.post_len,
            http10: w.robots.http10,
            ttfb_us: p.ttfb_us,
        },
    );
    conn.path = path;
    cacheoff_http::body::append(&mut conn.buf, xact.get(), 0, p.post_len);
    let sent = Instant::now();
    if rtype == RequestType::Post {
        clients
            .ledger
            .borrow_mut()
            .post_sent(p.info.oid, xact, sent);
    }
    clients
        .local
        .stats
        .borrow_mut()
        .record_send(us_since(due.intended, sent));
    let written = conn.wire.try_send(&conn.buf);
    Begun {
        ask: Ask {
            xact,
            object: p.info,
            rtype,
            ims_lmt,
            lm_at_send: lm_floor,
            sent_unix: now,
        },
        sent,
        written,
    }
}

/// Writes the rest of a begun request, then reads and judges the reply
/// within the transaction timeout (counted from the send).
pub async fn complete(
    clients: &Clients,
    conn: &mut Conn,
    due: &Due,
    begun: Begun,
) -> Result<Reply, Unsuccessful> {
    let shared = clients.shared();
    let w = &shared.workload;
    let p = &due.plan;
    let Begun { ask, sent, written } = begun;
    let (xact, rtype) = (ask.xact, ask.rtype);
    let deadline = tokio::time::Instant::from_std(sent + w.timeouts.xact.0);
    let robot_abort = w.aborts.robot_aborts(shared.abort_key, xact.get());
    let result = tokio::time::timeout_at(
        deadline,
        read_reply(clients, conn, &ask, sent, written, robot_abort, due),
    )
    .await;
    // A transaction the server was to abort fails one way or another (a
    // proxy may turn it into an error page): that is the abort.
    let server_abort = w.aborts.server_aborts(shared.abort_key, xact.get());
    let post_ok = (rtype == RequestType::Post).then_some(matches!(result, Ok(Ok(_))));
    clients
        .ledger
        .borrow_mut()
        .finished(p.info.oid, xact, Instant::now(), post_ok);
    match result {
        Ok(Err(Unsuccessful::StaleConn | Unsuccessful::Error(_))) | Err(_) if server_abort => {
            Err(Unsuccessful::Aborted { by_server: true })
        }
        Ok(Ok((outcome, status, bytes, keep_alive, claims))) => Ok(Reply {
            outcome,
            rtype,
            status,
            bytes,
            keep_alive,
            done: Instant::now(),
            claims,
        }),
        Ok(Err(f)) => Err(f),
        Err(_) => Err(Unsuccessful::Error(ErrorKind::XactTimeout)),
    }
}

/// Writes the request, then reads and judges the reply: how it was
/// served, its status, body bytes, whether the connection may be reused,
/// and what its headers claim.
async fn read_reply(
    clients: &Clients,
    conn: &mut Conn,
    ask: &Ask,
    sent: Instant,
    written: usize,
    robot_abort: bool,
    due: &Due,
) -> Result<(Outcome, u16, u64, bool, Claims), Unsuccessful> {
    if written < conn.buf.len() {
        conn.wire
            .send(&conn.buf[written..])
            .await
            .map_err(|e| Unsuccessful::Error(io_kind(&e)))?;
    }
    conn.buf.clear();
    let shared = clients.shared();
    let head = read_head(conn, clients, ask).await?;
    if robot_abort {
        return Err(Unsuccessful::Aborted { by_server: false });
    }
    // Read now: a chunked body's bytes replace the head in the buffer.
    let claims = Claims::read(&conn.buf[..head.head_len]);
    let info = &due.plan.info;
    let lm_now = || shared.times_now(info).last_modified;
    let false_hit = |filler| {
        clients
            .ledger
            .borrow()
            .is_false_hit(info.oid, filler, sent, clients.last_xact())
    };
    let mut facts = verdict::Facts {
        head: &head,
        extra: conn.buf.len() > head.head_len,
        body: None,
        lm_now: &lm_now,
        false_hit: &false_hit,
    };
    // A reply that already failed is not read further.
    verdict::judge(ask, &facts)?;
    let (check, keep_alive) = read_body(conn, clients, &head, ask).await?;
    facts.body = Some(&check);
    let outcome = verdict::judge(ask, &facts)?;
    Ok((outcome, head.status, check.received(), keep_alive, claims))
}

/// Reads a response head (keeping the body bytes that came with it).
async fn read_head(
    conn: &mut Conn,
    clients: &Clients,
    ask: &Ask,
) -> Result<ResponseHead, Unsuccessful> {
    let w = &clients.shared().workload;
    let max_head = usize::try_from(w.robots.max_head.0).unwrap_or(usize::MAX);
    loop {
        if conn.buf.capacity() - conn.buf.len() < 1024 {
            conn.buf.reserve(HEAD_CHUNK);
        }
        let (limit, kind) = if conn.buf.is_empty() {
            (w.timeouts.first_byte.0, ErrorKind::FirstByteTimeout)
        } else {
            (w.timeouts.idle.0, ErrorKind::IdleTimeout)
        };
        let n = match read_timed(limit, kind, conn.wire.read_buf(&mut conn.buf)).await {
            // TLS reports a close without close_notify as an unexpected
            // end: before any response byte, the connection was stale.
            Err(Unsuccessful::Error(ErrorKind::PrematureClose)) if conn.buf.is_empty() => {
                return Err(Unsuccessful::StaleConn)
            }
            r => r?,
        };
        if n == 0 {
            return Err(if conn.buf.is_empty() {
                Unsuccessful::StaleConn
            } else {
                Unsuccessful::Error(ErrorKind::PrematureClose)
            });
        }
        match parse_response_within(&conn.buf, ask.rtype == RequestType::Head, false, max_head) {
            Ok(Some(h)) => return Ok(h),
            Ok(None) => continue,
            Err(HttpError::HeadTooLarge(_)) => return Err(ErrorKind::HeadTooLarge.into()),
            Err(_) => return Err(ErrorKind::BadResponse.into()),
        }
    }
}

/// Reads the body of `head` through a check of its bytes; returns the
/// check and whether the connection may be reused.
async fn read_body(
    conn: &mut Conn,
    clients: &Clients,
    head: &ResponseHead,
    ask: &Ask,
) -> Result<(BodyCheck, bool), Unsuccessful> {
    let size = ask.body_len(head);
    let idle = clients.shared().workload.timeouts.idle.0;
    let mut check = BodyCheck::new(ask.object.body_seed, size);
    let start = head.head_len;
    match head.framing {
        Framing::Length(n) => {
            let have = conn.buf.len() - start;
            if have as u64 > n {
                // Bytes after the body: the connection is not trustworthy.
                check.feed(&conn.buf[start..start + n as usize]);
                return Ok((check, false));
            }
            check.feed(&conn.buf[start..]);
            read_body_len(conn, clients, &mut check, n).await?;
        }
        Framing::Chunked => {
            let mut dec = ChunkedDecoder::default();
            let rest = conn.buf.split_off(start);
            dec.decode(&rest, |d| check.feed(d))
                .map_err(|_| Unsuccessful::Error(ErrorKind::BadResponse))?;
            while !dec.is_done() {
                if check.received() > size {
                    return Err(ErrorKind::LengthMismatch.into());
                }
                if refill(conn, idle).await? == 0 {
                    return Err(ErrorKind::PrematureClose.into());
                }
                dec.decode(&conn.buf, |d| check.feed(d))
                    .map_err(|_| Unsuccessful::Error(ErrorKind::BadResponse))?;
            }
        }
        Framing::UntilClose => {
            check.feed(&conn.buf[start..]);
            while refill(conn, idle).await? > 0 {
                check.feed(&conn.buf);
                if check.received() > size {
                    return Err(ErrorKind::LengthMismatch.into());
                }
            }
        }
        Framing::Empty => {}
    }
    let reusable = head.keep_alive && head.framing != Framing::UntilClose;
    Ok((check, reusable))
}

/// Replaces the buffer's contents with the next bytes read; 0 at the end.
async fn refill(conn: &mut Conn, idle: Duration) -> Result<usize, Unsuccessful> {
    conn.buf.clear();
    conn.buf.reserve(HEAD_CHUNK);
    read_timed(
        idle,
        ErrorKind::IdleTimeout,
        conn.wire.read_buf(&mut conn.buf),
    )
    .await
}

/// A read that fails as `kind` if nothing arrives within `limit`.
async fn read_timed<T>(
    limit: Duration,
    kind: ErrorKind,
    read: impl std::future::Future<Output = io::Result<T>>,
) -> Result<T, Unsuccessful> {
    match tokio::time::timeout(limit, read).await {
        Ok(r) => r.map_err(|e| Unsuccessful::Error(io_kind(&e))),
        Err(_) => Err(kind.into()),
    }
}

/// Reads the rest of a body of `n` bytes into `check`, through a lent
/// buffer.
async fn read_body_len(
    conn: &mut Conn,
    clients: &Clients,
    check: &mut BodyCheck,
    n: u64,
) -> Result<(), Unsuccessful> {
    let bufs = &clients.local.bufs;
    let mut scratch = bufs.take();
    // Zero only what no earlier user initialised.
    scratch.resize(IO_BUF, 0);
    let idle = clients.shared().workload.timeouts.idle.0;
    let r = async {
        while check.received() < n {
            // Never read past the body: the next bytes belong to no one.
            let want = ((n - check.received()) as usize).min(scratch.len());
            let got = read_timed(
                idle,
                ErrorKind::IdleTimeout,
                conn.wire.read(&mut scratch[..want]),
            )
            .await?;
            if got == 0 {
                return Err(ErrorKind::PrematureClose.into());
            }
            check.feed(&scratch[..got]);
        }
        Ok(())
    }
    .await;
    bufs.give(scratch);
    r
}
