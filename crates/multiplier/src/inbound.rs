//! Reading a client's request within its deadlines, and refusing one.
//!
//! The head has one deadline for all of it, not one per read: a new
//! connection's first head must be whole `client_header_timeout` after the
//! connection started, a later one that long after its first byte (the wait
//! for that byte is the keep-alive idle wait). A body keeps a pace: the
//! header timeout as grace plus a second per `client_body_min_rate` bytes,
//! no single wait over `idle_timeout`. Its bytes are charged to the
//! uploads budget before they are read (503 if they do not fit), so what
//! clients send can never hold more than `max_buffered_uploads`.

use crate::admit::Refused;
use crate::request::refusal;
use crate::Shared;
use cacheoff_access::{BodyClock, Charge};
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request_strict;
use cacheoff_http::{HeadScanner, RequestHead};
use cacheoff_rundir::spe::Refusal;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEADER_TIMEOUT: Refused = Refused::new(
    408,
    Refusal::HeaderTimeout,
    "the request head did not arrive in time",
);
const BODY_TIMEOUT: Refused = Refused::new(
    408,
    Refusal::BodyTimeout,
    "the request body did not arrive in time",
);
const MALFORMED: Refused = Refused::new(400, Refusal::Malformed, "malformed request");
const HEAD_TOO_LARGE: Refused =
    Refused::new(431, Refusal::Malformed, "request header block too large");
const TOO_LARGE: Refused = Refused::new(413, Refusal::BodyTooLarge, "request body too large");
const UPLOADS_FULL: Refused = Refused::new(
    503,
    Refusal::UploadsFull,
    "too many request body bytes buffered at once; try again",
);

fn malformed(status: u16) -> Refused {
    if status == 431 {
        HEAD_TOO_LARGE
    } else {
        MALFORMED
    }
}

/// The next request head, once whole; `Ok(None)` when the client closed
/// or went quiet before sending a byte of it. `since`: when the wait for
/// it began; `fresh`: the connection's first request.
pub(crate) async fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    scanner: &mut HeadScanner,
    sh: &Shared,
    since: Instant,
    fresh: bool,
) -> Result<Option<RequestHead>, Refused> {
    let max = sh.cfg.max_header;
    let limit = sh.cfg.client_header_timeout;
    let mut deadline = match (fresh, buf.is_empty()) {
        (true, _) => Some(since + limit),
        // Pipelined bytes: the next head has begun.
        (false, false) => Some(Instant::now() + limit),
        (false, true) => None,
    };
    loop {
        if let Some(n) = scanner
            .scan_within(buf, max)
            .map_err(|e| malformed(e.status()))?
        {
            return match parse_request_strict(&buf[..n], true, max) {
                Ok(Some(h)) => Ok(Some(h)),
                Ok(None) => Err(MALFORMED),
                Err(e) => Err(malformed(e.status())),
            };
        }
        let quiet = buf.is_empty();
        buf.reserve(8 * 1024);
        let read = match deadline {
            Some(d) => tokio::time::timeout_at(d.into(), s.read_buf(buf)).await,
            None => tokio::time::timeout(sh.cfg.client_idle_timeout, s.read_buf(buf)).await,
        };
        match read {
            Ok(Ok(0)) | Ok(Err(_)) if quiet => return Ok(None),
            Ok(Ok(0)) | Ok(Err(_)) => return Err(MALFORMED),
            Ok(Ok(_)) => {
                deadline.get_or_insert_with(|| Instant::now() + limit);
            }
            // A keep-alive connection idled out, or a new one never spoke
            // (a browser's spare connection): closed quietly, uncounted,
            // as neither asked for anything.
            Err(_) if quiet => return Ok(None),
            Err(_) => return Err(HEADER_TIMEOUT),
        }
    }
}

/// Reads the request's body whole (it is copied) and drops the request
/// from `buf`, leaving any pipelined bytes after it. The charge holds the
/// body's bytes against the uploads budget; keep it while they are held.
pub(crate) async fn read_body(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    sh: &Shared,
) -> Result<(Vec<u8>, Option<Charge>), Refused> {
    let cfg = &sh.cfg;
    let max = cfg.max_request_body;
    let sized = head.content_length.unwrap_or(0);
    if sized > max {
        return Err(TOO_LARGE);
    }
    if !head.chunked && sized == 0 {
        buf.drain(..head.head_len);
        return Ok((Vec::new(), None));
    }
    // Before a byte of it is read, or `100 Continue` asks for it.
    let mut charge = sh.uploads.take(sized).ok_or(UPLOADS_FULL)?;
    let wants_continue = head
        .headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("expect") && v.eq_ignore_ascii_case(b"100-continue"));
    if wants_continue && head.minor >= 1 {
        let go = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        let _ = tokio::time::timeout(cfg.idle_timeout, go).await;
    }
    buf.drain(..head.head_len);
    let start = Instant::now();
    let wait_until = |received: usize| {
        let idle = Instant::now() + cfg.idle_timeout;
        let pace = BodyClock {
            start,
            grace: cfg.client_header_timeout,
            min_rate: cfg.client_body_min_rate,
        }
        .deadline(received as u64);
        pace.map_or(idle, |p| p.min(idle))
    };
    if head.chunked {
        let mut dec = ChunkedDecoder::default();
        let mut body = Vec::new();
        loop {
            let used = dec
                .decode(buf, |d| body.extend_from_slice(d))
                .map_err(|_| MALFORMED)?;
            buf.drain(..used);
            if body.len() as u64 > max {
                return Err(TOO_LARGE);
            }
            if !charge.grow_to(body.len() as u64) {
                return Err(UPLOADS_FULL);
            }
            if dec.is_done() {
                return Ok((body, Some(charge)));
            }
            more(s, buf, wait_until(body.len())).await?;
        }
    }
    let n = sized as usize;
    while buf.len() < n {
        more(s, buf, wait_until(buf.len())).await?;
    }
    Ok((buf.drain(..n).collect(), Some(charge)))
}

/// More request body bytes by `deadline`.
async fn more(s: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> Result<(), Refused> {
    buf.reserve(16 * 1024);
    match tokio::time::timeout_at(deadline.into(), s.read_buf(buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => Err(MALFORMED),
        Ok(Ok(_)) => Ok(()),
        Err(_) => Err(BODY_TIMEOUT),
    }
}

/// Answers a refused request, counted by kind, and closes: the side is
/// shut first and what the client still sends read for a moment (up to
/// half a second, 1 MB), as closing on unread bytes would reset the
/// connection and could destroy the answer before the client read it.
pub(crate) async fn refuse(s: &mut TcpStream, sh: &Shared, r: Refused) {
    sh.refuse(r.kind);
    let bytes = refusal(r.status, r.text);
    let answer = s.write_all(&bytes);
    if !matches!(
        tokio::time::timeout(sh.cfg.idle_timeout, answer).await,
        Ok(Ok(()))
    ) {
        return;
    }
    let _ = s.shutdown().await;
    let linger = async {
        let mut sink = vec![0u8; 16 * 1024];
        let mut left = 1usize << 20;
        while left > 0 {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(500), linger).await;
}
