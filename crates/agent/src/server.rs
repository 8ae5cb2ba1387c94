//! Origin servers: answer each request from the object id in its URL.
//!
//! A response is fully determined by the object: size, cachability, dates
//! and body bytes; only the transaction echo and `Date` vary.

use crate::link::{End, Link};
use crate::local::Local;
use cacheoff_base::rng::{seeded, stream, Rng, SimRng, Stream};
use cacheoff_http::body;
use cacheoff_http::date;
use cacheoff_http::echo::echo_of;
use cacheoff_http::request::{parse_request, RequestHead};
use cacheoff_http::response::{write_response_head, ResponseSpec};
use cacheoff_http::status;
use cacheoff_http::Method;
use cacheoff_stats::ErrorKind;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    let rng = Rc::new(std::cell::RefCell::new(stream(
        ctx.shared.workload.seed,
        id,
    )));
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                tokio::task::spawn_local(connection(ctx.clone(), idx, s, rng.clone()));
            }
            // Out of descriptors or similar: back off instead of spinning.
            Err(e) => {
                crate::fds::note_io_error(&e);
                tokio::time::sleep(Duration::from_millis(10)).await
            }
        }
    }
}

async fn connection(
    ctx: Rc<Local>,
    idx: u32,
    mut s: TcpStream,
    rng: Rc<std::cell::RefCell<SimRng>>,
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
        if !cfg.think_time.is_zero() {
            let secs = cfg.think_time.sample(&mut *rng.borrow_mut());
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        }
        if let Some(us) = head.ttfb_us.filter(|&us| us > 0) {
            // A replayed trace's origin took this long to answer.
            tokio::time::sleep(Duration::from_micros(u64::from(us))).await;
        }
        let Some(info) = object_of(&ctx, &head, idx) else {
            ctx.error(ErrorKind::OriginBadRequest);
            let _ = s.write_all(&status::empty_reply(404)).await;
            return;
        };
        served += 1;
        let keep_alive = head.keep_alive && served < limit;
        let times = ctx.shared.times_now(&info);
        let last_modified = times.last_modified.map(date::DateText::new);
        let expires = date::DateText::new(times.expires);
        // 304 only when the object has not changed since the IMS date; an
        // object without Last-Modified is always sent whole.
        let not_modified =
            matches!((times.last_modified, head.ims), (Some(lm), Some(ims)) if lm <= ims as i64);
        let status = if not_modified { 304 } else { 200 };
        let md5 = (info.md5 && status == 200).then(|| body::content_md5(info.body_seed, info.size));
        let mut out = ctx.bufs.take();
        out.clear();
        ctx.with_date(|date| {
            write_response_head(
                &mut out,
                &ResponseSpec {
                    status,
                    content_length: info.size,
                    cachable: info.cachable,
                    date,
                    last_modified: last_modified.as_ref().map(date::DateText::as_str),
                    expires: Some(expires.as_str()),
                    echo: head.xact.map(echo_of),
                    keep_alive,
                    content_type: ctx.shared.objects.mime(&info),
                    content_md5: md5.as_deref(),
                    http10: cfg.http10,
                },
            )
        });
        let send_body = head.method != Method::Head && !not_modified;
        let body_len = if send_body { info.size } else { 0 };
        let shared = &ctx.shared;
        if head.xact.is_some_and(|x| {
            shared
                .workload
                .aborts
                .server_aborts(shared.abort_key, x.get())
        }) {
            // Abort on purpose: half the reply, then close.
            let half = (out.len() as u64 + body_len) / 2;
            let _ = write_range(&mut s, &out, info.body_seed, body_len, 0, half).await;
            ctx.bufs.give(out);
            return;
        }
        let ok = match &mut link {
            Some(end) => {
                let rounds = end.response(out.len() as u64 + body_len);
                write_paced(&mut s, &out, info.body_seed, body_len, &rounds).await
            }
            None if body_len <= ONE_WRITE => {
                body::append(&mut out, info.body_seed, 0, body_len);
                s.write_all(&out).await.is_ok()
            }
            None => {
                write_range(
                    &mut s,
                    &out,
                    info.body_seed,
                    body_len,
                    0,
                    out.len() as u64 + body_len,
                )
                .await
            }
        };
        ctx.bufs.give(out);
        if !ok || !keep_alive {
            return;
        }
    }
}

/// Writes bytes `from..to` of `head` followed by `body_len` body bytes.
async fn write_range(
    s: &mut TcpStream,
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
async fn write_paced(
    s: &mut TcpStream,
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

/// Maps the URL path to its object, which must live on this server.
fn object_of(ctx: &Local, head: &RequestHead, idx: u32) -> Option<cacheoff_workload::ObjectInfo> {
    let info = ctx.shared.objects.parse_path(head.path())?;
    (info.server == idx).then_some(info)
}

/// Reads one request head; `Ok(None)` on a clean close or idle timeout.
async fn read_head(
    s: &mut TcpStream,
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

async fn skip_body(s: &mut TcpStream, buf: &mut Vec<u8>, mut len: usize) -> Result<(), ()> {
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
