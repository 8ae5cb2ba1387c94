//! Origin servers: answer each request from the object id in its URL.
//!
//! A response is fully determined by the object: size, cachability, dates
//! and body bytes; only the transaction echo and `Date` vary.

use crate::link::{End, Link};
use crate::local::Local;
use cacheoff_base::rng::{seeded, stream, Rng, SimRng, Stream};
use cacheoff_http::body;
use cacheoff_http::request::{parse_request, RequestHead};
use cacheoff_http::status;
use cacheoff_stats::ErrorKind;
use cacheoff_tls::Stream as Io;
use cacheoff_workload::HttpVersion;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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
    let mut first = [0u8; 4];
    let n = match tokio::time::timeout(shared.workload.servers.idle_timeout.0, peek(&s, &mut first))
        .await
    {
        Ok(Ok(n)) => n,
        _ => return,
    };
    let stream = match (&shared.tls, first[0]) {
        // A TLS handshake record.
        (Some(tls), 0x16) if n > 0 => match cacheoff_tls::accept(&tls.server, s).await {
            Ok(t) => t,
            Err(_) => return ctx.error(ErrorKind::OriginTlsFailed),
        },
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
    loop {
        let n = s.peek(buf).await?;
        if n == 0 || n == buf.len() {
            return Ok(n);
        }
        // Fewer bytes than asked for: wait for more (a TLS record or a
        // request head never stops this short).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: Rc<Local>,
    idx: u32,
    mut s: S,
    rng: Rc<RefCell<SimRng>>,
) {
    let cfg = &ctx.shared.workload.servers;
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
        let head = match read_head(&mut s, &mut inbuf, cfg.idle_timeout.0).await {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(()) => {
                ctx.error(ErrorKind::OriginBadRequest);
                let _ = s.write_all(&status::empty_reply(400)).await;
                return;
            }
        };
        // Skip a request body (POST), which we do not look at.
        let body_len = head.content_length.unwrap_or(0) as usize;
        inbuf.drain(..head.head_len);
        if skip_body(&mut s, &mut inbuf, body_len).await.is_err() {
            return;
        }
        if let Some(end) = &mut link {
            let travel = end.request((head.head_len + body_len) as u64);
            tokio::time::sleep(travel).await;
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
            let _ = s.write_all(&status::empty_reply(404)).await;
            return;
        };
        served += 1;
        if abort {
            let half = (out.len() as u64 + body_len) / 2;
            let _ = write_range(&mut s, &out, seed, body_len, 0, half).await;
            ctx.bufs.give(out);
            return;
        }
        let ok = match &mut link {
            Some(end) => {
                let rounds = end.response(out.len() as u64 + body_len);
                write_paced(&mut s, &out, seed, body_len, &rounds).await
            }
            None if body_len <= ONE_WRITE => {
                body::append(&mut out, seed, 0, body_len);
                s.write_all(&out).await.is_ok()
            }
            None => write_range(&mut s, &out, seed, body_len, 0, out.len() as u64 + body_len).await,
        };
        ctx.bufs.give(out);
        if !ok || !keep_alive {
            return;
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
    s: &mut S,
    head: &[u8],
    seed: u64,
    body_len: u64,
    rounds: &[(Duration, u64)],
) -> bool {
    let mut at = 0;
    for &(wait, n) in rounds {
        tokio::time::sleep(wait).await;
        if !write_range(s, head, seed, body_len, at, at + n).await {
            return false;
        }
        at += n;
    }
    true
}

/// Reads one request head; `Ok(None)` on a clean close or idle timeout.
async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    idle: Duration,
) -> Result<Option<RequestHead>, ()> {
    loop {
        if !buf.is_empty() {
            match parse_request(buf, false) {
                Ok(Some(h)) => return Ok(Some(h)),
                Ok(None) => {}
                Err(_) => return Err(()),
            }
        }
        if buf.capacity() - buf.len() < 512 {
            buf.reserve(1024);
        }
        match tokio::time::timeout(idle, s.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Ok(None),
            Ok(Ok(_)) => {}
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
