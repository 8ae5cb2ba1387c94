//! Origin servers: answer each request from the object id in its URL.
//!
//! A response is fully determined by the object: size, cachability, dates
//! and body bytes; only the transaction echo and `Date` vary. Every wait
//! on the client is bounded by the run's [`Deadlines`]; a connection cut
//! at one counts as `origin_timeout`, and the run's end drops whatever is
//! left (the worker's task set goes with its thread).

use crate::link::{End, Link};
use crate::local::Local;
use crate::server_limits::Deadlines;
use cacheoff_base::rng::{seeded, stream, Rng, SimRng, Stream};
use cacheoff_http::body;
use cacheoff_http::request::{parse_request, RequestHead};
use cacheoff_http::status;
use cacheoff_http::HeadScanner;
use cacheoff_stats::ErrorKind;
use cacheoff_tls::Stream as Io;
use cacheoff_workload::HttpVersion;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// Bodies up to this size are copied behind the head and go out in one
/// write; larger ones are written straight from the body pattern, so a
/// connection's buffer stays small.
const ONE_WRITE: u64 = 16 * 1024;

pub async fn serve(ctx: Rc<Local>, idx: u32, own: bool, listener: TcpListener) {
    // A server shared by every worker draws from one stream per worker.
    let id = if own {
        Stream::Server(idx)
    } else {
        Stream::ServerShare {
            server: idx,
            worker: ctx.id,
        }
    };
    let rng = Rc::new(RefCell::new(stream(ctx.shared.workload.seed, id)));
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                tokio::task::spawn_local(accepted(ctx.clone(), idx, s, rng.clone()));
            }
            // Out of descriptors or similar: back off instead of spinning.
            Err(e) => {
                crate::fds::note_io_error(&e);
                tokio::time::sleep(Duration::from_millis(10)).await
            }
        }
    }
}

/// What a new connection speaks: TLS (a handshake record first), HTTP/2
/// with prior knowledge (its preface), or HTTP/1.x. Only looked at when
/// the run has TLS or HTTP/2 at all.
async fn accepted(ctx: Rc<Local>, idx: u32, s: TcpStream, rng: Rc<RefCell<SimRng>>) {
    let shared = &ctx.shared;
    let sniff = shared.tls.is_some() || shared.workload.robots.http == HttpVersion::Http2;
    if !sniff {
        return connection(ctx, idx, Io::Plain(s), rng).await;
    }
    let d = Deadlines::of(&shared.workload);
    let mut first = [0u8; 4];
    let n = match tokio::time::timeout(d.idle, peek(&s, &mut first)).await {
        Ok(Ok(n)) => n,
        _ => return,
    };
    let stream = match (&shared.tls, first[0]) {
        // A TLS handshake record.
        (Some(tls), 0x16) if n > 0 => {
            match tokio::time::timeout(d.request, cacheoff_tls::accept(&tls.server, s)).await {
                Ok(Ok(t)) => t,
                Ok(Err(_)) => return ctx.error(ErrorKind::OriginTlsFailed),
                Err(_) => return ctx.error(ErrorKind::OriginTimeout),
            }
        }
        _ => Io::Plain(s),
    };
    let h2 = match &stream {
        Io::Plain(_) => n == 4 && &first == b"PRI ",
        _ => stream.alpn() == Some(cacheoff_tls::ALPN_H2),
    };
    if h2 {
        crate::server_h2::serve(ctx, idx, stream, rng).await
    } else {
        connection(ctx, idx, stream, rng).await
    }
}

/// Peeks until `buf` is full or the peer stopped sending.
async fn peek(s: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut wait = Duration::from_millis(1);
    loop {
        let n = s.peek(buf).await?;
        if n == 0 || n == buf.len() {
            return Ok(n);
        }
        // Fewer bytes than asked for: wait for more (a TLS record or a
        // request head never stops this short), less often the longer
        // they take, so a client that stops here costs few wake-ups.
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_millis(64));
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: Rc<Local>,
    idx: u32,
    mut s: S,
    rng: Rc<RefCell<SimRng>>,
) {
    let cfg = &ctx.shared.workload.servers;
    let d = Deadlines::of(&ctx.shared.workload);
    let limit = cfg
        .conn_reuse
        .as_ref()
        .map(|d| (d.sample(&mut *rng.borrow_mut()) as u64).max(1))
        .unwrap_or(u64::MAX);
    // The servers' side of the link, if emulated: a new connection's
    // handshake delays its first request.
    let mut link = cfg
        .link
        .as_ref()
        .map(|l| End::new(Link::new(l), seeded(rng.borrow_mut().gen())));
    // Requests are small; the response buffer is lent per response.
    let mut inbuf: Vec<u8> = Vec::with_capacity(1024);
    let mut served = 0u64;
    loop {
        let (head, due) = match read_head(&mut s, &mut inbuf, &d).await {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(Unread::Bad) => {
                ctx.error(ErrorKind::OriginBadRequest);
                let _ =
                    tokio::time::timeout(d.response, s.write_all(&status::empty_reply(400))).await;
                return;
            }
            Err(Unread::Late) => return ctx.error(ErrorKind::OriginTimeout),
        };
        // Skip a request body (POST), which we do not look at, by the
        // request's deadline.
        let body_len = head.content_length.unwrap_or(0) as usize;
        inbuf.drain(..head.head_len);
        if body_len > 0 {
            match tokio::time::timeout_at(due, skip_body(&mut s, &mut inbuf, body_len)).await {
                Ok(Ok(())) => {}
                Ok(Err(())) => return,
                Err(_) => return ctx.error(ErrorKind::OriginTimeout),
            }
        }
        if let Some(end) = &mut link {
            ctx.link_wait(end.request((head.head_len + body_len) as u64))
                .await;
        }
        let keep_alive = head.keep_alive && served + 1 < limit;
        let Some(crate::reply::Answer {
            head: mut out,
            seed,
            body_len,
            abort,
        }) = crate::reply::answer(&ctx, idx, &head, &rng, keep_alive).await
        else {
            ctx.error(ErrorKind::OriginBadRequest);
            let _ = tokio::time::timeout(d.response, s.write_all(&status::empty_reply(404))).await;
            return;
        };
        served += 1;
        let whole = out.len() as u64 + body_len;
        let rounds = match &mut link {
            Some(end) if !abort => end.response(whole),
            _ => Vec::new(),
        };
        // The client's time to take the response, and the link's own
        // waits between its rounds.
        let due = Instant::now() + d.response + rounds.iter().map(|r| r.0).sum::<Duration>();
        let sent = if abort {
            tokio::time::timeout_at(due, write_range(&mut s, &out, seed, body_len, 0, whole / 2))
                .await
                .map(|_| false)
        } else if !rounds.is_empty() {
            tokio::time::timeout_at(
                due,
                write_paced(&ctx, &mut s, &out, seed, body_len, &rounds),
            )
            .await
        } else if body_len <= ONE_WRITE {
            body::append(&mut out, seed, 0, body_len);
            tokio::time::timeout_at(due, s.write_all(&out))
                .await
                .map(|r| r.is_ok())
        } else {
            tokio::time::timeout_at(due, write_range(&mut s, &out, seed, body_len, 0, whole)).await
        };
        ctx.bufs.give(out);
        match sent {
            Ok(true) if keep_alive => {}
            Ok(_) => return,
            Err(_) => return ctx.error(ErrorKind::OriginTimeout),
        }
    }
}

/// Writes bytes `from..to` of `head` followed by `body_len` body bytes.
async fn write_range<S: AsyncWrite + Unpin>(
    s: &mut S,
    head: &[u8],
    seed: u64,
    body_len: u64,
    from: u64,
    to: u64,
) -> bool {
    let head_len = head.len() as u64;
    let mut at = from;
    if at < head_len {
        let end = to.min(head_len);
        if s.write_all(&head[at as usize..end as usize]).await.is_err() {
            return false;
        }
        at = end;
    }
    let to = to.min(head_len + body_len);
    while at < to {
        let piece = body::slice(seed, at - head_len, (to - at).min(64 * 1024) as usize);
        if s.write_all(piece).await.is_err() {
            return false;
        }
        at += piece.len() as u64;
    }
    true
}

/// Writes the response in the link's rounds, waiting before each.
async fn write_paced<S: AsyncWrite + Unpin>(
    ctx: &Local,
    s: &mut S,
    head: &[u8],
    seed: u64,
    body_len: u64,
    rounds: &[(Duration, u64)],
) -> bool {
    let mut at = 0;
    for &(wait, n) in rounds {
        ctx.link_wait(wait).await;
        if !write_range(s, head, seed, body_len, at, at + n).await {
            return false;
        }
        at += n;
    }
    true
}

/// Why no request head came.
#[derive(Debug, PartialEq, Eq)]
enum Unread {
    /// One that cannot be parsed, or too large.
    Bad,
    /// Its first byte came, but not the rest by the request deadline.
    Late,
}

/// Reads one request head and the deadline of its request (counted from
/// its first byte); `Ok(None)` on a close before one, or when no byte of
/// one came within the idle deadline.
async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    d: &Deadlines,
) -> Result<Option<(RequestHead, Instant)>, Unread> {
    let mut due = (!buf.is_empty()).then(|| Instant::now() + d.request);
    let mut scan = HeadScanner::new();
    loop {
        if let Some(due) = due {
            match scan.scan_within(buf, cacheoff_http::MAX_HEAD_LEN) {
                Ok(Some(_)) => match parse_request(buf, false) {
                    Ok(Some(h)) => return Ok(Some((h, due))),
                    Ok(None) => {}
                    Err(_) => return Err(Unread::Bad),
                },
                Ok(None) => {}
                Err(_) => return Err(Unread::Bad),
            }
        }
        if buf.capacity() - buf.len() < 512 {
            buf.reserve(1024);
        }
        let read = match due {
            Some(t) => tokio::time::timeout_at(t, s.read_buf(buf)).await,
            None => tokio::time::timeout(d.idle, s.read_buf(buf)).await,
        };
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(None),
            Ok(Ok(_)) => {
                due.get_or_insert_with(|| Instant::now() + d.request);
            }
            Err(_) if due.is_none() => return Ok(None),
            Err(_) => return Err(Unread::Late),
        }
    }
}

async fn skip_body<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    mut len: usize,
) -> Result<(), ()> {
    let have = buf.len().min(len);
    buf.drain(..have);
    len -= have;
    let mut scratch = [0u8; 4096];
    while len > 0 {
        let n = s
            .read(&mut scratch[..len.min(4096)])
            .await
            .map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        len -= n;
    }
    Ok(())
}
