//! Origin servers over HTTP/2: each stream's request is written as an
//! HTTP/1.1 head and parsed by the same parser, answered by the same
//! [`answer`](crate::reply::answer) as HTTP/1.x, and its head's fields
//! go out as HTTP/2 headers, so both versions serve the same objects,
//! dates and echo. The handshake, each stream's request body and each
//! response are bounded by the run's [`Deadlines`] (a stream cut at one is
//! reset and counts as `origin_timeout`), and a client has at most
//! [`h2_streams`] streams open at once.

use crate::local::Local;
use crate::reply::{answer, Answer};
use crate::server_limits::{h2_streams, Deadlines};
use bytes::Bytes;
use cacheoff_base::rng::SimRng;
use cacheoff_http::body;
use cacheoff_http::request::parse_request;
use cacheoff_stats::ErrorKind;
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use std::cell::RefCell;
use std::rc::Rc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Body bytes per DATA frame we queue (the peer's default frame size).
const FRAME: usize = 16 * 1024;

pub async fn serve<S>(ctx: Rc<Local>, idx: u32, io: S, rng: Rc<RefCell<SimRng>>)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let w = &ctx.shared.workload;
    let d = Deadlines::of(w);
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(h2_streams(w))
        .handshake(io);
    let mut conn = match tokio::time::timeout(d.request, handshake).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(_)) => return ctx.error(ErrorKind::OriginBadRequest),
        Err(_) => return ctx.error(ErrorKind::OriginTimeout),
    };
    let idle = d.idle;
    loop {
        // Accepting also drives the connection, so it runs until the peer
        // goes away or the connection sits idle past the servers' limit.
        let next = match tokio::time::timeout(idle, conn.accept()).await {
            Ok(Some(Ok(next))) => next,
            Ok(None) | Ok(Some(Err(_))) => return,
            Err(_) => {
                conn.graceful_shutdown();
                // Let the GOAWAY go out.
                let _ = tokio::time::timeout(idle, std::future::poll_fn(|cx| conn.poll_closed(cx)))
                    .await;
                return;
            }
        };
        let (request, respond) = next;
        tokio::task::spawn_local(stream(ctx.clone(), idx, request, respond, rng.clone()));
    }
}

async fn stream(
    ctx: Rc<Local>,
    idx: u32,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    rng: Rc<RefCell<SimRng>>,
) {
    let d = Deadlines::of(&ctx.shared.workload);
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(d.request, drain(body)).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(_) => {
            ctx.error(ErrorKind::OriginTimeout);
            return respond.send_reset(h2::Reason::CANCEL);
        }
    }
    let head = match parse_request(&crate::h1text::request_head(&parts), false) {
        Ok(Some(h)) => h,
        _ => {
            ctx.error(ErrorKind::OriginBadRequest);
            return send_empty(&mut respond, 400);
        }
    };
    let Some(Answer {
        head: out,
        seed,
        body_len,
        abort,
    }) = answer(&ctx, idx, &head, &rng, true).await
    else {
        ctx.error(ErrorKind::OriginBadRequest);
        return send_empty(&mut respond, 404);
    };
    let response = h2_head(&out);
    ctx.bufs.give(out);
    let Some(response) = response else {
        return send_empty(&mut respond, 500);
    };
    let Ok(mut send) = respond.send_response(response, body_len == 0) else {
        return;
    };
    // An abort on purpose sends half the body, then resets the stream.
    let until = if abort { body_len / 2 } else { body_len };
    match tokio::time::timeout(d.response, send_body(&mut send, seed, until, body_len)).await {
        Ok(true) if abort => send.send_reset(h2::Reason::CANCEL),
        Ok(_) => {}
        Err(_) => {
            ctx.error(ErrorKind::OriginTimeout);
            send.send_reset(h2::Reason::CANCEL);
        }
    }
}

/// Reads a request body (POST) to its end and lets it go: we do not look
/// at it. False if the stream failed.
async fn drain(mut body: RecvStream) -> bool {
    while let Some(chunk) = body.data().await {
        match chunk {
            Ok(c) => {
                let _ = body.flow_control().release_capacity(c.len());
            }
            Err(_) => return false,
        }
    }
    true
}

/// Sends body bytes `0..until` of `body_len` as the peer's flow control
/// lets them go; false if the stream failed.
async fn send_body(send: &mut SendStream<Bytes>, seed: u64, until: u64, body_len: u64) -> bool {
    let mut at = 0;
    while at < until {
        send.reserve_capacity(((until - at) as usize).min(FRAME));
        let room = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(n)) if n > 0 => n,
            Some(Ok(_)) => continue,
            _ => return false,
        };
        let piece = body::slice(seed, at, ((until - at) as usize).min(room).min(FRAME));
        at += piece.len() as u64;
        let last = at == body_len;
        if send.send_data(Bytes::copy_from_slice(piece), last).is_err() {
            return false;
        }
    }
    true
}

fn send_empty(respond: &mut SendResponse<Bytes>, status: u16) {
    if let Ok(r) = http::Response::builder().status(status).body(()) {
        let _ = respond.send_response(r, true);
    }
}

/// The reply's HTTP/1.1 head as an HTTP/2 response: its status and
/// fields, without those HTTP/2 forbids.
fn h2_head(head: &[u8]) -> Option<http::Response<()>> {
    let mut fields = [httparse::EMPTY_HEADER; 32];
    let mut r = httparse::Response::new(&mut fields);
    r.parse(head).ok()?;
    let mut b = http::Response::builder().status(r.code?);
    for h in r.headers.iter() {
        if !cacheoff_http::fields::h2_forbidden(h.name, h.value) {
            b = b.header(h.name, h.value);
        }
    }
    b.body(()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_head_keeps_every_field_but_the_connection_ones() {
        let head = b"HTTP/1.1 200 OK\r\nDate: x\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\
            Upgrade: h2c\r\nProxy-Connection: close\r\nTE: gzip\r\nX-Xact: 7\r\nContent-Length: 3\r\n\r\n";
        let r = h2_head(head).unwrap();
        assert_eq!(r.status(), 200);
        let names: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["date", "x-xact", "content-length"]);
    }

    #[test]
    fn a_request_becomes_the_head_the_origin_parses() {
        let (parts, ()) = http::Request::get("https://s1.bench.tst/x/1?y")
            .header("if-modified-since", "Thu, 01 Jan 1970 00:00:00 GMT")
            .body(())
            .unwrap()
            .into_parts();
        let text = crate::h1text::request_head(&parts);
        let head = parse_request(&text, false).unwrap().unwrap();
        assert_eq!(head.path(), "/x/1?y");
        assert_eq!(head.ims, Some(0));
        assert!(head.keep_alive);
    }
}
