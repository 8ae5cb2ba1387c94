//! A relayed reply's body, moved from the origin at the origin's pace and
//! to the client at the client's own.
//!
//! [`fetch`] runs both sides in one `select!` loop until the origin's
//! body is complete. While the store may take the reply, every byte is
//! kept (up to `max_object`, the store's own limit) whatever the client
//! does, so a client that reads slowly, stops reading or leaves neither
//! slows the fetch nor holds the requests waiting for it (`inflight`):
//! the caller files the object the moment its last byte is in, then
//! [`ClientSide::finish`] writes the client what it has not taken yet,
//! from the stored bytes. A reply nobody will store is read no more than
//! [`WINDOW`] bytes ahead of its client, as before: nobody else needs it.
//!
//! Ownership: one connection's task runs both sides; nothing is shared.

use crate::framing::BodyFraming;
use crate::inflight::Leader;
use crate::send::{send, send_chunked, send_pair};
use crate::upstream::OriginReply;
use bytes::Bytes;
use cacheoff_http::chunked::write_chunk;
use std::io;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// How far a reply only its client wants is read ahead of that client.
const WINDOW: u64 = 64 * 1024;
/// Most body bytes staged for the client at once.
const STAGE: usize = 64 * 1024;

/// Why a body did not arrive whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The origin failed or timed out midway.
    Origin,
    /// The client is gone and the store does not want the reply.
    Unwanted,
}

/// The body as far as it arrived.
pub(crate) struct Body {
    /// The body from offset `base` on: all of it while `kept`, else what
    /// the client has not been given yet.
    held: Vec<u8>,
    base: u64,
    /// Kept whole for the store (no more than `max` bytes).
    kept: bool,
    max: u64,
}

impl Body {
    /// `length`: what the origin announced, to hold a kept body in one
    /// allocation.
    pub(crate) fn new(kept: bool, max: u64, length: Option<u64>) -> Body {
        let room = length.filter(|n| kept && *n <= max).unwrap_or(0);
        Body {
            held: Vec::with_capacity(usize::try_from(room).unwrap_or(0)),
            base: 0,
            kept,
            max,
        }
    }

    fn end(&self) -> u64 {
        self.base + self.held.len() as u64
    }

    /// No longer kept: only what the client has not been given stays.
    fn unkeep(&mut self, framed: u64) {
        self.kept = false;
        self.forget(framed);
    }

    fn forget(&mut self, framed: u64) {
        let given = usize::try_from(framed - self.base).expect("held in memory");
        self.held.drain(..given);
        self.base = framed;
    }

    /// The whole body if it was kept for the store, and the bytes the
    /// client has yet to get (from `framed` on), sharing its memory.
    pub(crate) fn finish(self, framed: u64) -> (Option<Bytes>, Bytes) {
        let from = usize::try_from(framed - self.base).expect("held in memory");
        let held = Bytes::from(self.held);
        let rest = held.slice(from..);
        (self.kept.then_some(held), rest)
    }
}

/// The client side of a relay: the framed bytes on their way to it, and
/// how far into the body they go.
pub(crate) struct ClientSide {
    out: Vec<u8>,
    /// How much of `out` the client took.
    at: usize,
    /// The body offset staged into `out` so far.
    framed: u64,
    /// Bytes the client was given (the access log's count).
    pub(crate) written: u64,
    /// A write failed or stalled: nothing more is written.
    pub(crate) failed: bool,
    /// The body goes to the client (not when the proxy answers a
    /// condition with a 304 once the fetch is done).
    streaming: bool,
    chunked: bool,
    idle: Duration,
    /// When the client must have taken more of `out`.
    due: Option<Instant>,
}

impl ClientSide {
    /// `idle`: how long the client may take nothing.
    pub(crate) fn new(idle: Duration, streaming: bool, framing: BodyFraming) -> ClientSide {
        ClientSide {
            out: Vec::new(),
            at: 0,
            framed: 0,
            written: 0,
            failed: false,
            streaming,
            chunked: streaming && framing == BodyFraming::Chunked,
            idle,
            due: None,
        }
    }

    /// Queues bytes that precede the body (interim replies, the head).
    pub(crate) fn stage(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    pub(crate) fn framed(&self) -> u64 {
        self.framed
    }

    fn pending(&self) -> bool {
        !self.failed && self.at < self.out.len()
    }

    /// Stages the next body bytes once the last are written; a body the
    /// client will not get is passed over (and, unkept, dropped).
    fn refill(&mut self, body: &mut Body) {
        if self.pending() {
            return;
        }
        self.out.clear();
        self.at = 0;
        if !self.streaming || self.failed {
            self.framed = body.end();
        } else {
            let from = usize::try_from(self.framed - body.base).expect("held in memory");
            let piece = &body.held[from..body.held.len().min(from + STAGE)];
            if self.chunked && !piece.is_empty() {
                write_chunk(&mut self.out, piece);
            } else {
                self.out.extend_from_slice(piece);
            }
            self.framed += piece.len() as u64;
        }
        if !body.kept {
            body.forget(self.framed);
        }
    }

    /// Writes what the socket takes now, or waits until it takes more;
    /// gives up once the client took nothing for the idle time.
    async fn write_some(&mut self, s: &TcpStream) {
        let due = *self.due.get_or_insert_with(|| Instant::now() + self.idle);
        match s.try_write(&self.out[self.at..]) {
            Ok(0) => self.failed = true,
            Ok(n) => {
                self.at += n;
                self.written += n as u64;
                self.due = None;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let ready = tokio::time::timeout_at(due.into(), s.writable()).await;
                self.failed = !matches!(ready, Ok(Ok(())));
            }
            Err(_) => self.failed = true,
        }
    }

    /// Writes the rest once the fetch is over: what is staged, then
    /// `rest`, the body from [`ClientSide::framed`] on (with the last
    /// chunk when chunked).
    pub(crate) async fn finish(&mut self, s: &mut TcpStream, rest: &[u8]) {
        if self.failed {
            return;
        }
        let staged = &self.out[self.at..];
        let sent = if !self.streaming {
            send(s, staged, self.idle).await
        } else if self.chunked {
            let mut sent = send(s, staged, self.idle).await;
            if sent.is_ok() {
                let (n, body) = send_chunked(s, rest, self.idle).await;
                self.written += n;
                sent = body;
            }
            sent
        } else {
            self.written += rest.len() as u64;
            send_pair(s, staged, rest, self.idle).await
        };
        self.written += staged.len() as u64;
        self.at = self.out.len();
        self.failed = sent.is_err();
    }
}

/// Reads the origin's body into `body` while writing the client what it
/// takes, until the body is complete. Tells `leader`'s waiters of every
/// byte, and that the reply will not be stored once it outgrows the
/// store. Stops early when the origin fails, or when neither the client
/// nor the store wants more.
pub(crate) async fn fetch(
    s: &TcpStream,
    reply: &mut OriginReply,
    body: &mut Body,
    client: &mut ClientSide,
    leader: &mut Option<Leader>,
) -> Result<(), Cut> {
    loop {
        if reply.is_complete() {
            return Ok(());
        }
        client.refill(body);
        let awaited = !client.failed && (!client.streaming || body.end() - client.framed < WINDOW);
        let origin = body.kept || awaited;
        let to_client = client.pending();
        if !origin && !to_client {
            return Err(Cut::Unwanted);
        }
        if !origin {
            reply.pause();
        }
        let before = body.held.len();
        tokio::select! {
            got = reply.next(&mut body.held), if origin => {
                got.map_err(|_| Cut::Origin)?;
                if let Some(l) = leader.as_ref() {
                    l.progress((body.held.len() - before) as u64);
                }
                if body.kept && body.end() > body.max {
                    // Waiters go to the origin themselves, now.
                    body.unkeep(client.framed);
                    if let Some(l) = leader.take() {
                        l.finish(None);
                    }
                }
            }
            () = client.write_some(s), if to_client => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(streaming: bool, framing: BodyFraming) -> ClientSide {
        ClientSide::new(Duration::from_secs(1), streaming, framing)
    }

    fn arrive(b: &mut Body, bytes: &[u8]) {
        b.held.extend_from_slice(bytes);
    }

    #[test]
    fn a_kept_body_stays_whole_whatever_the_client_took() {
        let mut b = Body::new(true, 100, Some(6));
        let mut c = side(true, BodyFraming::Length(6));
        arrive(&mut b, b"abc");
        c.refill(&mut b);
        assert_eq!((c.out.as_slice(), c.framed), (&b"abc"[..], 3));
        arrive(&mut b, b"def");
        // Not taken yet: nothing more is staged.
        c.refill(&mut b);
        assert_eq!(c.framed, 3);
        let (whole, rest) = b.finish(c.framed());
        assert_eq!(whole.as_deref(), Some(&b"abcdef"[..]));
        assert_eq!(&rest[..], b"def");
    }

    #[test]
    fn an_unkept_body_holds_only_what_the_client_has_not_had() {
        let mut b = Body::new(false, 100, None);
        let mut c = side(true, BodyFraming::Chunked);
        arrive(&mut b, b"abc");
        c.refill(&mut b);
        assert_eq!(c.out, b"3\r\nabc\r\n");
        assert!(b.held.is_empty() && b.base == 3);
        arrive(&mut b, b"de");
        c.at = c.out.len();
        c.refill(&mut b);
        assert_eq!((c.out.as_slice(), b.base), (&b"2\r\nde\r\n"[..], 5));
        let (whole, rest) = b.finish(c.framed());
        assert!(whole.is_none() && rest.is_empty());
    }

    #[test]
    fn a_body_outgrowing_the_store_keeps_only_the_clients_part() {
        let mut b = Body::new(true, 6, None);
        let mut c = side(true, BodyFraming::Close);
        arrive(&mut b, b"abcdefg");
        c.refill(&mut b);
        c.at = 2;
        assert!(b.end() > b.max);
        b.unkeep(c.framed);
        assert_eq!((b.held.len(), b.base), (0, 7));
        let (whole, rest) = b.finish(c.framed());
        assert!(whole.is_none() && rest.is_empty());
        // What was staged still goes out.
        assert!(c.pending());
    }

    #[test]
    fn a_client_that_waits_for_a_304_passes_the_body_over() {
        let mut b = Body::new(false, 100, None);
        let mut c = side(false, BodyFraming::Length(3));
        arrive(&mut b, b"abc");
        c.refill(&mut b);
        assert!(!c.pending() && c.framed == 3 && b.held.is_empty());
    }
}
