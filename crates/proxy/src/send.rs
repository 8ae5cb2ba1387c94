//! Writing to clients with a progress deadline: a client that takes no
//! bytes for the write timeout is given up on, so slow or stalled readers
//! cannot hold a connection (and its reply) for ever. Stored bodies are
//! written from the store's shared bytes, never copied per connection
//! (chunked framing aside, a window at a time).

use crate::framing::{BodyFraming, CHUNK, LAST_CHUNK};
use cacheoff_http::chunked::write_chunk;
use std::io::{self, IoSlice};
use std::time::Duration;
use tokio::net::TcpStream;

/// Chunked bodies up to this size are framed in the head's buffer.
const INLINE: usize = 16 * 1024;
/// Larger chunked bodies are framed this much at a time.
const WINDOW: usize = 64 * 1024;

/// Writes all of `bytes`; fails when the client takes nothing for `idle`.
/// A write the socket takes at once (most replies) arms no timer.
pub(crate) async fn send(s: &mut TcpStream, bytes: &[u8], idle: Duration) -> io::Result<()> {
    send_pair(s, bytes, &[], idle).await
}

/// Writes `head` then `body` framed as `framing`; the bytes written, or
/// the failure. A body sent by its length goes out from `body` itself, in
/// the same `writev` as the head (no copy; one system call for a reply the
/// socket takes at once). Small chunked bodies are framed into `head`.
pub(crate) async fn send_reply(
    s: &mut TcpStream,
    head: &mut Vec<u8>,
    body: &[u8],
    framing: BodyFraming,
    idle: Duration,
) -> (u64, io::Result<()>) {
    if framing != BodyFraming::Chunked {
        let written = (head.len() + body.len()) as u64;
        return (written, send_pair(s, head, body, idle).await);
    }
    if body.len() <= INLINE {
        framing.encode(head, body);
        return (head.len() as u64, send(s, head, idle).await);
    }
    let written = head.len() as u64;
    if let Err(e) = send(s, head, idle).await {
        return (written, Err(e));
    }
    let (more, sent) = send_chunked(s, body, idle).await;
    (written + more, sent)
}

/// Writes `body` as chunks, a window at a time, and the last chunk; the
/// bytes written, or the failure.
pub(crate) async fn send_chunked(
    s: &mut TcpStream,
    body: &[u8],
    idle: Duration,
) -> (u64, io::Result<()>) {
    let mut written = 0;
    let mut framed = Vec::with_capacity(WINDOW + WINDOW / CHUNK * 16 + LAST_CHUNK.len());
    let mut windows = body.chunks(WINDOW).peekable();
    loop {
        framed.clear();
        for piece in windows.next().unwrap_or_default().chunks(CHUNK) {
            write_chunk(&mut framed, piece);
        }
        let last = windows.peek().is_none();
        if last {
            framed.extend_from_slice(LAST_CHUNK);
        }
        written += framed.len() as u64;
        if let Err(e) = send(s, &framed, idle).await {
            return (written, Err(e));
        }
        if last {
            return (written, Ok(()));
        }
    }
}

/// Writes `a` then `b` with vectored writes; fails when the client takes
/// nothing for `idle`. A write the socket takes at once arms no timer.
pub(crate) async fn send_pair(
    s: &mut TcpStream,
    a: &[u8],
    b: &[u8],
    idle: Duration,
) -> io::Result<()> {
    let total = a.len() + b.len();
    let mut at = 0;
    while at < total {
        let parts = if at < a.len() {
            [IoSlice::new(&a[at..]), IoSlice::new(b)]
        } else {
            [IoSlice::new(&b[at - a.len()..]), IoSlice::new(&[])]
        };
        match s.try_write_vectored(&parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                at += n;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        // The socket is full: wait for room, as long as the client reads.
        match tokio::time::timeout(idle, s.writable()).await {
            Ok(ready) => ready?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
    }
    Ok(())
}
